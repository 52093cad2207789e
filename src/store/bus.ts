/**
 * Messages between the nodes of one shared store (Redis's pub/sub across
 * nodes, docs/redis-rest.md "Pub/sub"): fire and forget, at most once, in
 * no store's data. A store with one node (the embedded log) has none: its
 * publishers and subscribers all live in one process.
 */
export interface MessageBus {
  /**
   * Sends a message to every other node. Throws StoreError `too_large`, before
   * anything is sent, when it cannot carry it (the shared store: 8,000 bytes).
   */
  publish(channel: string, message: string): Promise<void>;
  /** Starts receiving (resolves once messages published from then on will arrive); idempotent. */
  listen(): Promise<void>;
  /** Where messages from other nodes go. */
  onMessage(f: (channel: string, message: string) => void): void;
  close(): void;
}
