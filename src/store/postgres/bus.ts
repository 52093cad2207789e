/**
 * The shared store's message bus (store/bus.ts): PostgreSQL's
 * LISTEN/NOTIFY on one connection per node, opened when the node's first
 * subscriber arrives or its first message leaves. The channel is named after
 * the store's schema, so two Pithos clusters in one database do not hear each
 * other. A payload is `[origin, channel, message]` as JSON; NOTIFY takes at
 * most 8,000 bytes of it, and a larger message is refused before anything is
 * sent. A broken connection is reopened after a second while the node still
 * listens; what was published meanwhile is lost (at most once, as in Redis).
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { StoreError } from '../errors.js';
import type { MessageBus } from '../bus.js';
import type { Db } from './sql.js';

/** NOTIFY's payload limit (PostgreSQL's default build: 8,000 bytes). */
export const MAX_PAYLOAD_BYTES = 8000;
const REOPEN_MS = 1000;

export class PgMessages implements MessageBus {
  /** This node's mark on what it sends, so it can skip its own messages when they come back. */
  private readonly origin = randomUUID().slice(0, 8);
  private opening: Promise<pg.Client> | undefined;
  private channel = '';
  private handler: ((channel: string, message: string) => void) | undefined;
  private listening = false;
  private closed = false;
  private reopen: NodeJS.Timeout | undefined;

  constructor(private readonly db: Db) {}

  onMessage(f: (channel: string, message: string) => void): void {
    this.handler = f;
  }

  async listen(): Promise<void> {
    this.listening = true;
    await this.open();
  }

  async publish(channel: string, message: string): Promise<void> {
    const payload = JSON.stringify([this.origin, channel, message]);
    const bytes = Buffer.byteLength(payload);
    if (bytes > MAX_PAYLOAD_BYTES)
      throw new StoreError(
        'too_large',
        `message too large for the shared store: channel and message take ${bytes} bytes, PostgreSQL's NOTIFY carries at most ${MAX_PAYLOAD_BYTES} (docs/redis-rest.md, "Pub/sub")`,
      );
    const c = await this.open();
    await c.query('SELECT pg_notify($1, $2)', [this.channel, payload]);
  }

  private open(): Promise<pg.Client> {
    if (this.closed) return Promise.reject(new StoreError('unavailable', 'the store is closing'));
    this.opening ??= this.connect().catch((err: unknown) => {
      this.opening = undefined;
      throw err instanceof StoreError
        ? err
        : new StoreError('unreachable', `shared store: the message connection failed: ${(err as Error)?.message ?? String(err)}`);
    });
    return this.opening;
  }

  private async connect(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: this.db.opts.url });
    c.on('error', (err) => this.broken(c, err));
    c.on('notification', (n) => this.receive(n.payload));
    await c.connect();
    const r = await c.query<{ s: string }>('SELECT current_schema() AS s');
    this.channel = `pithos_pubsub_${createHash('sha256').update(String(r.rows[0]?.s)).digest('hex').slice(0, 24)}`;
    await c.query(`LISTEN ${this.channel}`);
    if (this.closed) {
      this.end(c);
      throw new StoreError('unavailable', 'the store is closing');
    }
    return c;
  }

  private receive(payload: string | undefined): void {
    if (payload === undefined || this.handler === undefined) return;
    let m: unknown;
    try {
      m = JSON.parse(payload);
    } catch {
      this.db.opts.log('warn', `pub/sub: a notification that is not ours on ${this.channel}: ${payload.slice(0, 80)}`);
      return;
    }
    if (!Array.isArray(m) || m.length !== 3 || m[0] === this.origin) return;
    this.handler(String(m[1]), String(m[2]));
  }

  private broken(c: pg.Client, err: Error): void {
    this.db.opts.log('warn', `pub/sub: the message connection broke (${err.message}); messages from other nodes are lost until it is back`);
    this.opening = undefined;
    this.end(c);
    if (!this.listening || this.closed || this.reopen !== undefined) return;
    this.reopen = setTimeout(() => {
      this.reopen = undefined;
      this.open().catch((e: unknown) => this.broken(c, e as Error));
    }, REOPEN_MS);
    this.reopen.unref();
  }

  private end(c: pg.Client): void {
    void c.end().catch((err: unknown) => this.db.opts.log('warn', `pub/sub: closing the message connection failed: ${(err as Error)?.message ?? String(err)}`));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reopen);
    const o = this.opening;
    this.opening = undefined;
    if (o !== undefined) void o.then((c) => this.end(c), noConnection);
  }
}

function noConnection(): void {
  /* the connection never opened: there is nothing to close, and its failure was answered to the caller */
}
