/**
 * SUBSCRIBE and friends on the RESP port (docs/redis-rest.md, "Pub/sub"):
 * a connection's subscriptions to the process's hub (pubsub.ts), its
 * messages as RESP3 pushes (arrays in RESP2), and RESP2's subscribed mode,
 * where a connection with a subscription may run only the pub/sub commands,
 * PING, QUIT and RESET. The listener lends each connection one of these.
 */
import type { Call, Command } from './command.js';
import { HUB, type Subscriber } from './pubsub.js';
import { ErrorReply, Push, type Reply } from './resp.js';

/** What a RESP2 connection in subscribed mode may still run (Redis's list). */
const IN_SUBSCRIBED_MODE = new Set(['subscribe', 'unsubscribe', 'psubscribe', 'punsubscribe', 'ssubscribe', 'sunsubscribe', 'ping', 'quit', 'reset']);
/** The table's commands that Redis declares as containers of subcommands. */
const WITH_SUBCOMMANDS = new Set(['client', 'command', 'config', 'pubsub']);

export class ConnSubscriptions implements Subscriber {
  readonly channels = new Set<string>();
  readonly patterns = new Set<string>();

  /**
   * `write` sends a reply on the connection; `tooFull` says its unread
   * replies passed the output limit, and `drop` then closes it: a subscriber
   * that does not read loses its connection, a publisher never waits for it.
   */
  constructor(
    private readonly write: (r: Reply) => void,
    private readonly tooFull: () => boolean,
    private readonly drop: () => void,
  ) {}

  get count(): number {
    return this.channels.size + this.patterns.size;
  }

  deliver(kind: 'message' | 'pmessage', channel: string, message: string, pattern?: string): void {
    if (this.tooFull()) return this.drop();
    this.write(new Push(kind === 'message' ? ['message', channel, message] : ['pmessage', pattern!, channel, message]));
  }

  /** Every subscription ends (the connection closed or was RESET). */
  clear(): void {
    for (const ch of this.channels) HUB.unsubscribe(this, ch);
    for (const p of this.patterns) HUB.punsubscribe(this, p);
    this.channels.clear();
    this.patterns.clear();
  }

  /** Redis's refusal of `name` (with its subcommand `sub`) on a RESP2 connection in subscribed mode; undefined when it may run. */
  refusal(name: string, sub: string | undefined, proto: 2 | 3): ErrorReply | undefined {
    if (proto === 3 || this.count === 0 || IN_SUBSCRIBED_MODE.has(name)) return undefined;
    // Redis names a command with subcommands by both (pubsub|numsub).
    const full = sub !== undefined && WITH_SUBCOMMANDS.has(name) ? `${name}|${sub.toLowerCase()}` : name;
    return new ErrorReply(`ERR Can't execute '${full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context`);
  }

  /** PING on a RESP2 connection in subscribed mode answers as a message does, `["pong", message or ""]` (Redis's own); undefined elsewhere. */
  subscribedPing(words: readonly string[], proto: 2 | 3, raw?: readonly Buffer[]): Reply | undefined {
    if (proto === 3 || this.count === 0 || words.length > 2) return undefined;
    return ['pong', raw?.[1] ?? words[1] ?? ''];
  }

  async subscribe(names: readonly string[], patterns: boolean, kind: string): Promise<undefined> {
    // Confirmed once this node hears every node's messages (the shared store's LISTEN).
    await HUB.ready();
    const set = patterns ? this.patterns : this.channels;
    for (const n of names) {
      if (!set.has(n)) {
        set.add(n);
        if (patterns) HUB.psubscribe(this, n);
        else HUB.subscribe(this, n);
      }
      this.write(new Push([kind, n, this.count]));
    }
    return undefined;
  }

  unsubscribe(names: readonly string[], patterns: boolean, kind: string): undefined {
    const set = patterns ? this.patterns : this.channels;
    const which = names.length > 0 ? names : [...set];
    if (which.length === 0) this.write(new Push([kind, null, this.count]));
    for (const n of which) {
      if (set.delete(n)) {
        if (patterns) HUB.punsubscribe(this, n);
        else HUB.unsubscribe(this, n);
      }
      this.write(new Push([kind, n, this.count]));
    }
    return undefined;
  }
}

/** The declarations, over the connection's subscriptions that `of` finds. */
export function pubsubCommands(of: (c: Call) => ConnSubscriptions): Command[] {
  const flags = ['pubsub', 'noscript', 'loading', 'stale'] as const;
  const sub = (name: string, patterns: boolean, summary: string): Command => ({
    name,
    arity: -2,
    flags,
    keys: [0, 0, 0],
    summary,
    run: (c) => of(c).subscribe(c.args.slice(1), patterns, name),
  });
  const unsub = (name: string, patterns: boolean, summary: string): Command => ({
    name,
    arity: -1,
    flags,
    keys: [0, 0, 0],
    summary,
    run: (c) => of(c).unsubscribe(c.args.slice(1), patterns, name),
  });
  return [
    sub('subscribe', false, 'receive the messages of these channels'),
    sub('psubscribe', true, 'receive the messages of the channels matching these glob patterns'),
    sub('ssubscribe', false, 'SUBSCRIBE (one node, no shards)'),
    unsub('unsubscribe', false, 'stop receiving these channels (all without arguments)'),
    unsub('punsubscribe', true, 'stop receiving these patterns (all without arguments)'),
    unsub('sunsubscribe', false, 'UNSUBSCRIBE'),
  ];
}
