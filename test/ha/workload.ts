/**
 * What the HA harness runs through the Pithos nodes while the database
 * fails over, and what it checks afterwards: record puts (each name written
 * once), +1s on one counter, lock acquire/release with fences, and a change
 * feed watcher on each node. Every request is timed; every answer kept.
 */
import http from 'node:http';
import type { PithosServer } from '../helpers/server.js';
import { sleep } from './cluster.js';

export type OpKind = 'put' | 'inc' | 'acquire' | 'release';

export interface Sample {
  op: OpKind;
  node: number;
  start: number;
  end: number;
  /** 0: no HTTP answer at all. */
  status: number;
  message: string;
  retryAfter: string | undefined;
  /** The record a put wrote. */
  name?: string;
}

/** A 503 whose change may or may not have been made (docs/scaling.md, "Unknown outcome"). */
export const unknownOutcome = (s: Sample): boolean => s.status === 503 && /may or may not have been made/.test(s.message);

/** A request that never answers fails the run instead of hanging it. */
const GIVE_UP_MS = 30_000;

function request(
  n: PithosServer,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> | undefined; retryAfter: string | undefined }> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    n.req(method, p, body).then(
      (r) => ({ status: r.status, body: r.body as Record<string, unknown> | undefined, retryAfter: r.headers['retry-after'] as string | undefined }),
      (e: unknown) => ({ status: 0, body: { message: `no answer: ${(e as Error).message}` }, retryAfter: undefined }),
    ),
    new Promise<{ status: number; body: Record<string, unknown>; retryAfter: undefined }>((resolve) => {
      timer = setTimeout(() => resolve({ status: 0, body: { message: `no answer within ${GIVE_UP_MS} ms` }, retryAfter: undefined }), GIVE_UP_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

export interface Hold {
  locker: number;
  fence: number;
  /** Acquire sent, acquire acknowledged. */
  sent: number;
  acked: number;
  /**
   * When the holder stopped holding for sure: release sent, when the release
   * was answered 200 or may have been made (503, unknown outcome); else
   * acquire sent + ttl (a release refused with "nothing was changed" left the
   * lock held until it expires).
   */
  until: number;
  /** The release's answer (status and message), for the failure message. */
  release?: string;
}

export interface FeedEvent {
  at: number;
  event: string;
  name: string | undefined;
  id: string | undefined;
}

/** A /watch client that keeps when each event arrived and reconnects with Last-Event-ID if the stream ends. */
export class Watcher {
  readonly events: FeedEvent[] = [];
  reconnects = 0;
  private req: http.ClientRequest | undefined;
  private lastId: string | undefined;
  private closed = false;

  constructor(
    readonly node: PithosServer,
    readonly query: string,
  ) {
    this.open();
  }

  private open(): void {
    if (this.closed) return;
    let buf = '';
    const headers: Record<string, string> = { 'Auth-Token': this.node.token };
    if (this.lastId !== undefined) headers['Last-Event-ID'] = this.lastId;
    const again = (): void => {
      if (this.closed) return;
      this.reconnects++;
      setTimeout(() => this.open(), 500);
    };
    this.req = http.request({ host: '127.0.0.1', port: this.node.port, path: `/watch?${this.query}`, headers, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        res.on('end', again);
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          let id: string | undefined;
          let event = 'message';
          let data = '';
          let any = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            any = true;
            const c = line.indexOf(':');
            const field = c < 0 ? line : line.slice(0, c);
            const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (field === 'id') id = value;
            else if (field === 'event') event = value;
            else if (field === 'data') data += value;
          }
          if (!any) continue;
          let name: string | undefined;
          try {
            name = (JSON.parse(data) as { name?: string }).name;
          } catch {
            /* reset/overflow data carry no name */
          }
          this.events.push({ at: Date.now(), event, name, id });
          if (id !== undefined) this.lastId = id;
        }
      });
      res.on('end', again);
      res.on('error', () => undefined);
    });
    this.req.on('error', again);
    this.req.end();
  }

  close(): void {
    this.closed = true;
    this.req?.destroy();
  }
}

export class Workload {
  readonly samples: Sample[] = [];
  /** Record name → its put's sample (names are written once). */
  readonly puts = new Map<string, Sample>();
  readonly holds: Hold[] = [];
  readonly watchers: Watcher[];
  private stopping = false;
  private running: Promise<void>[] = [];

  constructor(
    readonly nodes: PithosServer[],
    readonly tag: string,
    readonly lockTtlS = 3,
  ) {
    this.watchers = nodes.map((n) => new Watcher(n, `kind=record&prefix=${tag}`));
  }

  get counter(): string {
    return `${this.tag}ctr`;
  }

  get lock(): string {
    return `${this.tag}lock`;
  }

  private async call(op: OpKind, node: number, method: string, p: string, body?: unknown): Promise<{ s: Sample; data: Record<string, unknown> | undefined }> {
    const start = Date.now();
    const r = await request(this.nodes[node], method, p, body);
    const s: Sample = { op, node, start, end: Date.now(), status: r.status, message: String(r.body?.message ?? ''), retryAfter: r.retryAfter };
    this.samples.push(s);
    return { s, data: r.body?.data as Record<string, unknown> | undefined };
  }

  async prepare(): Promise<void> {
    const r = await request(this.nodes[0], 'PUT', `/variants/${this.counter}`, { variant: 0 });
    if (r.status !== 201) throw new Error(`counter not created: ${r.status} ${JSON.stringify(r.body)}`);
  }

  /** Writers (records and +1s) and lockers, spread over the nodes. */
  start(writers = 4, lockers = 2): void {
    for (let w = 0; w < writers; w++) {
      const node = w % this.nodes.length;
      this.running.push(
        (async () => {
          for (let k = 0; !this.stopping; k++) {
            const name = `${this.tag}${w}-${k}`;
            const a = await this.call('put', node, 'PUT', `/records/${name}`, { record: { w, k } });
            a.s.name = name;
            this.puts.set(name, a.s);
            await this.call('inc', node, 'POST', `/variants/${this.counter}`, { delta: 1 });
            if (a.s.status !== 201) await sleep(100);
          }
        })(),
      );
    }
    for (let l = 0; l < lockers; l++) {
      const node = l % this.nodes.length;
      this.running.push(
        (async () => {
          while (!this.stopping) {
            const a = await this.call('acquire', node, 'PUT', `/locks/${this.lock}`, { ttl: this.lockTtlS, holder: `locker-${l}` });
            if (a.s.status !== 201) {
              await sleep(a.s.status === 423 ? 20 : 100);
              continue;
            }
            const hold: Hold = { locker: l, fence: Number(a.data?.fence), sent: a.s.start, acked: a.s.end, until: a.s.start + this.lockTtlS * 1000 };
            this.holds.push(hold);
            await sleep(30);
            const releaseSent = Date.now();
            const r = await this.call('release', node, 'DELETE', `/locks/${this.lock}`, { token: a.data?.token });
            hold.release = `${r.s.status} ${r.s.message}`;
            if (r.s.status === 200 || unknownOutcome(r.s)) hold.until = Math.min(hold.until, releaseSent);
          }
        })(),
      );
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
  }

  closeWatchers(): void {
    for (const w of this.watchers) w.close();
  }

  /** Successful writes (records and increments) acknowledged after `t`. */
  ackedSince(t: number): number {
    return this.samples.filter((s) => (s.op === 'put' || s.op === 'inc') && s.end >= t && (s.status === 200 || s.status === 201)).length;
  }
}

export const ok = (s: Sample): boolean => s.status >= 200 && s.status < 300;
/** Lock answers that are the lock's own business, not the database's. */
export const expected = (s: Sample): boolean =>
  ok(s) || (s.op === 'acquire' && s.status === 423) || (s.op === 'release' && (s.status === 403 || s.status === 404));
