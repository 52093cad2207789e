/**
 * A minimal Server-Sent Events client for black-box tests of GET /watch: it
 * parses events as they arrive and can stop after exactly n events (dropping
 * whatever else arrived in the same chunk), which is how a client that
 * disconnects at an arbitrary point looks to the server.
 */
import http from 'node:http';

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

export interface WatchOptions {
  port: number;
  token: string;
  query?: string;
  headers?: Record<string, string>;
  /** Stop (destroy the connection) once this many events have been taken. */
  stopAfter?: number;
  /** Do not read at all (the socket is paused) until resume() is called. */
  paused?: boolean;
}

export class Watch {
  readonly events: SseEvent[] = [];
  status = 0;
  ended = false;
  bytes = 0;
  /** The id of the last event taken that had one (what EventSource sends as Last-Event-ID). */
  lastId: string | undefined;
  private buf = '';
  private req: http.ClientRequest | undefined;
  private res: http.IncomingMessage | undefined;
  private waiters: Array<() => void> = [];
  readonly opened: Promise<void>;
  readonly done: Promise<void>;

  constructor(private readonly o: WatchOptions) {
    let resolveOpen!: () => void;
    let rejectOpen!: (e: Error) => void;
    this.opened = new Promise((r, j) => {
      resolveOpen = r;
      rejectOpen = j;
    });
    let resolveDone!: () => void;
    this.done = new Promise((r) => (resolveDone = r));
    const finish = (): void => {
      this.ended = true;
      this.wake();
      resolveDone();
    };
    this.req = http.request(
      {
        host: '127.0.0.1',
        port: o.port,
        method: 'GET',
        path: `/watch${o.query ? `?${o.query}` : ''}`,
        headers: { 'Auth-Token': o.token, ...(o.headers ?? {}) },
        agent: false,
      },
      (res) => {
        this.res = res;
        this.status = res.statusCode ?? 0;
        if (o.paused) res.pause();
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => this.onData(chunk));
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
        resolveOpen();
      },
    );
    this.req.on('error', (e) => {
      rejectOpen(e);
      finish();
    });
    this.req.end();
  }

  resume(): void {
    this.res?.resume();
  }

  /** The client end's port of the stream's connection (for its kernel queues, test/helpers/proc.ts). */
  get localPort(): number | undefined {
    return this.req?.socket?.localPort;
  }

  private onData(chunk: string): void {
    if (this.ended) return;
    this.bytes += Buffer.byteLength(chunk);
    this.buf += chunk;
    for (;;) {
      const end = this.buf.indexOf('\n\n');
      if (end < 0) break;
      const block = this.buf.slice(0, end);
      this.buf = this.buf.slice(end + 2);
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
        else if (field === 'data') data += (data === '' ? '' : '\n') + value;
      }
      if (!any) continue; // a comment (heartbeat)
      this.events.push({ id, event, data });
      if (id !== undefined) this.lastId = id;
      if (this.o.stopAfter !== undefined && this.events.length >= this.o.stopAfter) {
        this.close();
        return;
      }
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves once `pred` holds (checked on every event) or the stream ends; rejects after timeoutMs. */
  async until(pred: () => boolean, timeoutMs = 20_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      if (this.ended) throw new Error(`stream ended before ${what} (${this.events.length} events)`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (${this.events.length} events)`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }

  close(): void {
    this.ended = true;
    this.req?.destroy();
    this.wake();
  }
}

export function watch(o: WatchOptions): Watch {
  return new Watch(o);
}
