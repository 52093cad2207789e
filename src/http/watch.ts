/**
 * GET /watch: the change feed as Server-Sent Events (docs/api.md, "Change
 * feed"). One hub per server fans the store's batches out to watchers.
 *
 * - Live watchers with the same filters share a channel: a batch's events
 *   are formatted once per channel, collected, and the channel's text is
 *   turned into bytes once per flush and written to each member, so a commit
 *   group of many batches costs each watcher one write, not one per batch,
 *   and no per-watcher copy of the text (measured: docs/benchmarks.md).
 *   A watcher that is replaying has text of its own, written before the
 *   channel's.
 * - A slow watcher never slows writers or other watchers: nothing waits for
 *   a socket. What a watcher has not taken yet sits in its response's
 *   buffer; past MAX_BUFFERED bytes (or MAX_PENDING changes held back while
 *   it replays) it gets `event: overflow` and its stream ends, so memory per
 *   watcher stays bounded.
 * - Resuming (`since`, `Last-Event-ID`) replays from the log what the
 *   watcher has not seen, then follows live with no gap or duplicate: the
 *   watcher is registered (live batches held back) before the replay bound
 *   is read, and every held-back batch is newer than that bound.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Change, ChangeFeed, ChangeKind } from '../store/store.js';
import { wordList } from '../store/kinds.js';
import { invalid, StoreError } from '../store/errors.js';

/** Bytes a watcher may leave unread before it is cut off with `overflow`. */
export const MAX_BUFFERED = 1 << 20;
/** How long a resume from a version not yet published here waits for it before `reset`. */
const REACH_MS = 2000;
/** Changes held back for a watcher while its replay runs. */
const MAX_PENDING = 50_000;
/**
 * With many watchers, every flush costs one socket write per watcher (about
 * 2 µs each, measured): flushing at most this often bounds that cost however
 * fast writes come, for at most this much added event latency. With few
 * watchers, text is flushed at the end of the event-loop turn.
 */
const MANY_WATCHERS = 64;
const MANY_FLUSH_MS = 20;
/** A comment line this often keeps idle streams open through proxies. */
const HEARTBEAT_MS = 15_000;
/** How long an overflowed stream may take to drain its last bytes before its socket is destroyed. */
const OVERFLOW_GRACE_MS = 10_000;

const KIND_BITS: Record<ChangeKind, number> = { table: 1, record: 2, variant: 4, lock: 8, list: 16, set: 32, zset: 64 };
const ALL_KINDS = Object.values(KIND_BITS).reduce((all, bit) => all | bit, 0);
const KINDS_TEXT = wordList(Object.keys(KIND_BITS), '');
const PARAMS = new Set(['kind', 'prefix', 'since', 'values']);

/** Stops a replay whose watcher went away or overflowed. */
class Stop extends Error {}

class Watcher {
  /** Changes at or before this position were seen: batch `after`, index `afterIndex` (Infinity = whole batch). */
  after: number;
  afterIndex: number;
  pending: Array<readonly Change[]> | undefined = [];
  pendingCount = 0;
  closed = false;
  /** Text of its own (replay, reset, heartbeat) collected for the next flush, written before the channel's. */
  out = '';
  /** The channel it follows live, once its replay is done. */
  channel: Channel | undefined = undefined;
  /** Characters of the channel's unflushed text that were there before it joined (it has those already). */
  skip = 0;

  constructor(
    readonly res: ServerResponse,
    readonly kinds: number,
    readonly prefix: string,
    readonly values: boolean,
    after: number,
    afterIndex: number,
  ) {
    this.after = after;
    this.afterIndex = afterIndex;
  }

  wants(c: Change): boolean {
    return (this.kinds & KIND_BITS[c.kind]) !== 0 && (this.prefix === '' || c.name.startsWith(this.prefix));
  }
}

/** Live watchers with the same filters: one text per flush for all of them. */
class Channel {
  readonly members = new Set<Watcher>();
  out = '';
  dirty = false;
  constructor(
    readonly key: string,
    readonly kinds: number,
    readonly prefix: string,
    readonly values: boolean,
  ) {}

  wants(c: Change): boolean {
    return (this.kinds & KIND_BITS[c.kind]) !== 0 && (this.prefix === '' || c.name.startsWith(this.prefix));
  }
}

/** One event in SSE form; `id` only for changes that are in the log (expire is not). */
export function formatEvent(c: Change, withValue: boolean): string {
  let data = `{"kind":"${c.kind}","name":${JSON.stringify(c.name)},"version":${c.version}`;
  if (c.tId !== undefined) data += `,"t_id":${c.tId}`;
  if (c.op !== undefined) data += `,"op":"${c.op}"`;
  if (withValue) {
    const v = c.value;
    if (v !== undefined) data += `,"value":${v}`;
  }
  data += '}';
  return (c.id === '' ? '' : `id: ${c.id}\n`) + `event: ${c.type}\ndata: ${data}\n\n`;
}

export class WatchHub {
  private readonly watchers = new Set<Watcher>();
  private unsubscribe: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private closing = false;
  /** Watchers with text of their own to write at the next flush. */
  private dirty: Watcher[] = [];
  private readonly channels = new Map<string, Channel>();
  private dirtyChannels: Channel[] = [];
  /** Watchers whose replay runs: live batches are held back for them. */
  private readonly replaying = new Set<Watcher>();
  private flushScheduled = false;
  private readonly flushNow = (): void => this.flush();

  constructor(private readonly feed: ChangeFeed | undefined) {}

  get size(): number {
    return this.watchers.size;
  }

  /** Serves one GET /watch; returns once the stream is set up (it then lives on its own). */
  open(res: ServerResponse): void {
    const feed = this.feed;
    if (feed === undefined) throw new StoreError('unavailable', 'this store has no change feed');
    if (this.closing) throw new StoreError('unavailable', 'server is shutting down');
    const req = res.req;
    const url = new URL(req.url ?? '/', 'http://x');
    let kinds = 0;
    let prefix = '';
    let since: string | undefined;
    let values = false;
    for (const [k, v] of url.searchParams) {
      if (!PARAMS.has(k)) throw invalid(`unknown query parameter '${k}' (allowed: kind, prefix, since, values)`);
      if (k === 'kind') {
        // Own keys only: an index such as `constructor` or `__proto__` would find Object.prototype's members.
        const bit = Object.hasOwn(KIND_BITS, v) ? (KIND_BITS as Record<string, number>)[v] : undefined;
        if (bit === undefined) throw invalid(`query parameter 'kind' must be ${KINDS_TEXT}, not '${v}'`);
        kinds |= bit;
      } else if (k === 'prefix') {
        prefix = v;
      } else if (k === 'since') {
        since = v;
      } else if (v === 'true' || v === '1' || v === '') {
        values = true;
      } else if (v !== 'false' && v !== '0') {
        throw invalid(`query parameter 'values' must be true or false`);
      }
    }
    // A reconnecting EventSource repeats the original URL (with its since):
    // Last-Event-ID is the newer position and wins.
    const last = req.headers['last-event-id'];
    const resumeFrom = typeof last === 'string' && last.trim() !== '' ? last.trim() : since;
    let after = feed.lastVersion;
    let afterIndex = Infinity;
    let replay = false;
    if (resumeFrom !== undefined) {
      const m = /^(\d{1,16})(?::(\d{1,9}))?$/.exec(resumeFrom);
      if (m === null) {
        throw invalid(
          resumeFrom === since
            ? `query parameter 'since' must be a version (an integer ≥ 0)`
            : `header 'Last-Event-ID' must be an event id of this feed (<version> or <version>:<index>)`,
        );
      }
      after = Number(m[1]);
      afterIndex = m[2] === undefined ? Infinity : Number(m[2]);
      replay = true;
    }
    const head = {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      'X-Accel-Buffering': 'no',
    };
    // HEAD: the stream's headers and nothing else (a body is never sent, so the answer must end here).
    if (req.method === 'HEAD') {
      res.writeHead(200, head);
      res.end();
      return;
    }
    const w = new Watcher(res, kinds === 0 ? ALL_KINDS : kinds, prefix, values, after, afterIndex);
    res.writeHead(200, head);
    // Headers and a first line now, so a client knows it is subscribed before any change.
    res.write(': watching\n\n');
    res.on('close', () => this.remove(w));
    this.add(w);
    if (!replay) {
      w.pending = undefined;
      this.join(w);
      return;
    }
    this.replaying.add(w);
    void this.replay(feed, w);
  }

  /** Makes `w` a live member of the channel of its filters. */
  private join(w: Watcher): void {
    this.replaying.delete(w);
    const key = `${w.kinds}|${w.values ? 1 : 0}|${w.prefix}`;
    let ch = this.channels.get(key);
    if (ch === undefined) this.channels.set(key, (ch = new Channel(key, w.kinds, w.prefix, w.values)));
    ch.members.add(w);
    w.channel = ch;
    w.skip = ch.out.length;
  }

  private add(w: Watcher): void {
    this.watchers.add(w);
    if (this.unsubscribe === undefined && this.feed !== undefined) {
      this.unsubscribe = this.feed.subscribe(
        (batch) => this.publish(batch),
        (version) => this.gap(version),
      );
      this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS).unref();
    }
  }

  private remove(w: Watcher): void {
    w.closed = true;
    w.pending = undefined;
    this.replaying.delete(w);
    const ch = w.channel;
    if (ch !== undefined) {
      w.channel = undefined;
      ch.members.delete(w);
      if (ch.members.size === 0 && this.channels.get(ch.key) === ch) this.channels.delete(ch.key);
    }
    if (!this.watchers.delete(w)) return;
    if (this.watchers.size === 0 && this.unsubscribe !== undefined) {
      // No watcher: the store stops producing changes, so writes pay nothing.
      this.unsubscribe();
      this.unsubscribe = undefined;
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }

  private async replay(feed: ChangeFeed, w: Watcher): Promise<void> {
    // A version this node has not published yet (the shared store publishes
    // after polling; another node may be ahead): wait a little for it.
    if (w.after > feed.lastVersion && feed.reach !== undefined) await feed.reach(w.after, REACH_MS);
    if (w.closed) return;
    // Everything newer than `upto` arrives live into w.pending meanwhile.
    const upto = feed.lastVersion;
    let exact = w.after <= upto;
    // A partly seen batch (`<v>:<i>`) is replayed again from its start; deliver() skips what was seen.
    const from = w.afterIndex === Infinity ? w.after : w.after - 1;
    try {
      if (exact && from < upto)
        exact = await feed.replay(from, upto, (batch) => {
          if (w.closed) throw new Stop();
          this.deliver(w, batch, undefined);
          if (w.closed) throw new Stop();
        });
    } catch (err) {
      if (err instanceof Stop) return;
      exact = false;
    }
    if (w.closed) return;
    if (!exact) {
      // The log cannot replay from there (compacted, or an id from elsewhere):
      // the client re-reads what it needs and follows from here.
      w.after = upto;
      w.afterIndex = Infinity;
      this.emit(w, `id: ${upto}\nevent: reset\ndata: {"version":${upto}}\n\n`);
      if (w.closed) return;
    }
    const held = w.pending ?? [];
    w.pending = undefined;
    for (const b of held) {
      if (w.closed) return;
      this.deliver(w, b, undefined);
    }
    if (!w.closed) this.join(w);
  }

  /**
   * The feed lost changes it had not published (docs/scaling.md, "Known
   * limits"): live watchers get what was published before, then `reset`, and
   * follow on; a watcher still replaying is ended, and resumes with
   * Last-Event-ID into a reset of its own.
   */
  private gap(version: number): void {
    this.flush();
    const text = `id: ${version}\nevent: reset\ndata: {"version":${version}}\n\n`;
    for (const w of [...this.watchers]) {
      if (this.replaying.has(w)) w.res.end();
      else this.emit(w, text);
    }
    this.flush();
  }

  /** A committed batch (or an expiration), to every watcher, formatted once. */
  private publish(batch: readonly Change[]): void {
    const forms: Array<string | undefined> = new Array(batch.length * 2);
    for (const ch of this.channels.values()) {
      let out = '';
      for (let i = 0; i < batch.length; i++) {
        const c = batch[i];
        if (!ch.wants(c)) continue;
        const slot = 2 * i + (ch.values ? 1 : 0);
        let text = forms[slot];
        if (text === undefined) text = forms[slot] = formatEvent(c, ch.values);
        out += text;
      }
      if (out === '') continue;
      ch.out += out;
      if (!ch.dirty) {
        ch.dirty = true;
        this.dirtyChannels.push(ch);
        this.scheduleFlush();
      }
    }
    for (const w of this.replaying) {
      if (w.pending === undefined) continue;
      w.pending.push(batch);
      w.pendingCount += batch.length;
      if (w.pendingCount > MAX_PENDING) this.overflow(w, `more than ${MAX_PENDING} changes arrived while replaying`);
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    if (this.watchers.size > MANY_WATCHERS) setTimeout(this.flushNow, MANY_FLUSH_MS);
    else setImmediate(this.flushNow);
  }

  /** Writes the changes of `batch` that `w` wants and has not seen, in one write. */
  private deliver(w: Watcher, batch: readonly Change[], forms: Array<string | undefined> | undefined): void {
    let out = '';
    for (let i = 0; i < batch.length; i++) {
      const c = batch[i];
      if (c.id !== '') {
        if (c.version < w.after || (c.version === w.after && (w.afterIndex === Infinity || i <= w.afterIndex))) continue;
      }
      if (!w.wants(c)) continue;
      const slot = 2 * i + (w.values ? 1 : 0);
      let text = forms?.[slot];
      if (text === undefined) {
        text = formatEvent(c, w.values);
        if (forms !== undefined) forms[slot] = text;
      }
      out += text;
    }
    // The position only moves forward: batches held back while a resume waited for
    // the feed to reach `since` (the shared store publishes a backlog in pages) may
    // be older than what the replay has delivered since, and must not move it back.
    const lastId = batch[batch.length - 1];
    if (lastId.id !== '' && lastId.version >= w.after) {
      w.after = lastId.version;
      w.afterIndex = Infinity;
    }
    if (out !== '') this.emit(w, out);
  }

  /** Queues text for `w`; it is written at the end of this turn, with whatever else arrives meanwhile. */
  private emit(w: Watcher, text: string): void {
    if (w.closed) return;
    if (w.out === '') {
      this.dirty.push(w);
      this.scheduleFlush();
    }
    w.out += text;
    if (w.out.length + w.res.writableLength > MAX_BUFFERED) this.overflow(w, `more than ${MAX_BUFFERED} bytes unread`);
  }

  private flush(): void {
    this.flushScheduled = false;
    const ws = this.dirty;
    this.dirty = [];
    for (const w of ws) {
      if (w.closed || w.out === '') continue;
      const text = w.out;
      w.out = '';
      w.res.write(text);
      if (w.res.writableLength > MAX_BUFFERED) this.overflow(w, `more than ${MAX_BUFFERED} bytes unread`);
    }
    const chs = this.dirtyChannels;
    this.dirtyChannels = [];
    for (const ch of chs) {
      ch.dirty = false;
      const text = ch.out;
      ch.out = '';
      const bytes = Buffer.from(text, 'utf8');
      // (Deleting the current member of a Set while iterating it is safe.)
      for (const w of ch.members) {
        const skip = w.skip;
        w.skip = 0;
        if (skip >= text.length) continue;
        w.res.write(skip === 0 ? bytes : text.slice(skip));
        if (w.res.writableLength > MAX_BUFFERED) this.overflow(w, `more than ${MAX_BUFFERED} bytes unread`);
      }
    }
  }

  private overflow(w: Watcher, why: string): void {
    if (w.closed) return;
    const res = w.res;
    this.remove(w);
    w.out = '';
    res.end(`event: overflow\ndata: ${JSON.stringify({ reason: why })}\n\n`);
    // A reader that has stopped would pin the buffer until the socket times
    // out: give the last bytes a moment, then let the memory go.
    setTimeout(() => {
      if (!res.writableFinished) res.destroy();
    }, OVERFLOW_GRACE_MS).unref();
  }

  private beat(): void {
    for (const w of this.watchers) if (w.pending === undefined) this.emit(w, ':\n\n');
  }

  /**
   * Ends the streams whose request `allowed` no longer lets through: after a
   * reload of the tokens file, a stream opened with a token since removed, or
   * demoted below the role GET /watch needs, must not go on receiving changes
   * (docs/operations.md, "Roles and the tokens file"). Text not yet written is
   * dropped; the stream ends (a client that reconnects gets 401 or 403), and a
   * reader that has stopped loses its socket after a grace, as on overflow.
   * Returns how many streams were ended.
   */
  endUnless(allowed: (req: IncomingMessage) => boolean): number {
    let n = 0;
    for (const w of [...this.watchers]) {
      if (allowed(w.res.req)) continue;
      const res = w.res;
      this.remove(w);
      w.out = '';
      res.end();
      setTimeout(() => {
        if (!res.writableFinished) res.destroy();
      }, OVERFLOW_GRACE_MS).unref();
      n++;
    }
    return n;
  }

  /** Ends every stream (shutdown), so no watcher holds the server open. */
  close(): void {
    this.closing = true;
    for (const w of [...this.watchers]) {
      const res = w.res;
      const text = w.out;
      this.remove(w);
      res.end(text);
    }
  }
}
