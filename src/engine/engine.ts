/**
 * The storage engine: an append-only log of checksummed batches, an
 * in-memory key directory pointing into it, group commit, expiry and
 * compaction. Bytes and string keys only; no knowledge of HTTP or JSON.
 *
 * Writes are applied to the directory synchronously when `write` is called
 * (so the caller's next read sees them, and read-modify-write sequences
 * need no locks: the event loop is the one writer) and acknowledged when the
 * log has them under the configured durability. If the log write fails, that
 * batch and every batch queued after it are rolled back in reverse order
 * before anything else runs, then rejected with a typed error.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from '../log.js';
import { BatchTooLargeError, CorruptionError, EngineClosedError, StorageIOError, storageError } from './errors.js';
import {
  batchTooLarge, type DecodedEntry, encodeBatch, encodeSegmentHeader, entrySize, type EntryIn, MAX_BATCH_BYTES, MAX_KEY_BYTES, Op,
  SEGMENT_HEADER_SIZE, SegmentKind, valueCrc,
} from './format.js';
import { type FileOps, nodeFileOps, removeFile } from './fileops.js';
import { type Decoder, Entry, FLAG_CURRENT, FLAG_REF, KeyDir } from './keydir.js';
import { ID_STEP, Segment } from './segment.js';
import { EngineCore, type ExpireHook } from './core.js';
import { recover } from './recovery.js';
import { buildHint } from './hints.js';
import { SegmentScanner, Yielder } from './scanner.js';
import { GroupSnapshot } from './snapshot.js';
import { Compactor } from './compaction.js';
import { lockDirectory, unlockDirectory } from './lockfile.js';
import type { Keyring } from './keyring.js';
import { readSealedBatch, SegmentSeal, TAG_BYTES } from './seal.js';
import { plainValue, storedValue } from './codec.js';

export { Op } from './format.js';
export type { Decoder } from './keydir.js';
export type { Logger } from '../log.js';

export type Durability = 'always' | 'everysec' | 'never';

export interface EngineOptions {
  dir: string;
  /** always (default): ack after fdatasync; everysec: ack after write, sync each second; never: ack after write. */
  durability?: Durability;
  /** Rotate the active segment when it would grow past this (default 64 MiB). */
  segmentBytes?: number;
  /** Budget for cached values and their decoded forms (default 256 MiB). */
  cacheBytes?: number;
  /** Clock in ms since the epoch; injectable so ttl tests need not sleep. */
  now?: () => number;
  /** How often expired keys are swept from the directory (default 1000 ms; 0 = only on demand). */
  sweepIntervalMs?: number;
  /** How often compaction checks for work (default 10 s; 0 = only on demand). */
  compactIntervalMs?: number;
  /**
   * How long after a rotation the old segment's hint is built (default 30 s;
   * 0 = at once). A hint only speeds up the next open, and in an overwrite-heavy
   * log the segment is often compacted away before the delay ends (compaction
   * writes hints for its own output), which saves re-reading it. A segment whose
   * hint is still pending is scanned at the next open, which then builds the hint.
   */
  hintDelayMs?: number;
  /** Compact a run of segments once this share of its bytes is dead (default 0.5). */
  compactMinDeadRatio?: number;
  /** ... and at least this many bytes are dead (default 16 MiB). */
  compactMinDeadBytes?: number;
  /** Drop damaged batches instead of refusing to open (keeps every intact batch). */
  repair?: boolean;
  /**
   * Encryption at rest (docs/format.md, "Encryption"): everything written is
   * sealed under the current key; segments under older keys of the ring stay
   * readable and compaction rewrites them (and plain ones) under the current key.
   */
  keyring?: Keyring;
  /**
   * Compress values written from now on (codec.ts; docs/format.md,
   * "Compression"). Any directory reads the same with it on or off.
   */
  compression?: boolean;
  log?: Logger;
  fileOps?: FileOps;
}

export interface WriteOp extends EntryIn {
  /** Decoded form of `value` to cache beside it, produced as `decoder` would. */
  memo?: unknown;
  decoder?: Decoder<unknown>;
}

export interface EngineStats {
  /** Keys in the directory (expired ones count until swept). */
  keys: number;
  /** Keys outside any group. */
  topLevelKeys: number;
  liveBytes: number;
  deadBytes: number;
  segments: number;
  /** 0: compaction never ran, 1: running, 2: idle. */
  gcState: 0 | 1 | 2;
  cacheBytes: number;
  nextSeq: number;
}

/** Figures for metrics (src/http/metrics.ts), pushed as they happen; each call must be cheap. */
export interface EngineObserver {
  /** A group commit was written: batches in it, bytes, seconds the write took. */
  logWrite(batches: number, bytes: number, seconds: number): void;
  /** The log was fdatasync'd: seconds it took. */
  logSync(seconds: number): void;
  /** A read found its value in memory (hit) or had to go to disk (miss). */
  cacheHit(): void;
  cacheMiss(): void;
  /** A compaction pass finished: bytes read and bytes written. */
  compacted(bytesIn: number, bytesOut: number): void;
}

/** Returned by peek() when the value is not cached and must be read with read(). */
export const MISS: unique symbol = Symbol('miss');

/**
 * A key's version as an opaque reference (Engine.ref). It reads through
 * peekRef only while it is the key's live version; held after its key has
 * moved on, it keeps one small object alive, never a value (a retired
 * version's cached value is dropped: KeyDir.retire).
 */
export type VersionRef = { readonly __versionRef: unique symbol };

interface Pending {
  seq: number;
  buf: Buffer;
  /** The batch as the caller gave it, for the commit hook. */
  ops: readonly WriteOp[];
  /** Entries created by this batch, with their value offsets inside `buf`. */
  created: Entry[];
  createdOffsets: number[];
  /** (key, previous version) pairs in the order they were replaced. */
  undoKeys: string[];
  undoPrev: Array<Entry | undefined>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class Engine {
  /** What recovery, hint building and compaction may touch (they never see the Engine). */
  private readonly core: EngineCore;
  // dir, fs, keydir, now and log are the same objects core holds, kept here so
  // the write path reads them from `this` without a hop through core.
  private readonly dir: string;
  private readonly fs: FileOps;
  private readonly keydir: KeyDir;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly durability: Durability;
  private readonly segmentBytes: number;
  private readonly keyring: Keyring | undefined;
  private readonly compression: boolean;
  private nextSeq = 1;

  private queue: Pending[] = [];
  /** Failed writes rolled back so far (see rollbacks). */
  private rolledBack = 0;
  private flushing = false;
  private flushDone: Array<() => void> = [];
  private groupsDone = 0;
  private barriers: Array<{ target: number; resolve: () => void }> = [];
  /** Set when a failed write could not be cut off the file; retried before the next write. */
  private tailDirty = false;
  private closed = false;
  private syncedSize = 0;
  private timers: NodeJS.Timeout[] = [];
  private sweepRunning = false;
  /** Hint files being built; close() waits for them so no file is written after it returns. */
  private readonly hintBuilds = new Set<Promise<void>>();
  private readonly hintDelayMs: number;
  /** Hint builds waiting out hintDelayMs; close() drops them. */
  private readonly hintTimers = new Set<NodeJS.Timeout>();
  private readonly compactor: Compactor;
  private readonly keyLens: number[] = [];
  /** Highest sequence number whose batch is in the log under the configured durability. */
  private committed = 0;
  /**
   * Called once per batch, in sequence order, when the batch is in the log
   * under the configured durability and before its writer hears so: the
   * change feed (docs/api.md, "Change feed") publishes only what a crash
   * cannot take back. Must not throw or write.
   */
  onCommit: ((seq: number, ops: readonly WriteOp[]) => void) | undefined = undefined;
  private readonly valueOffsets: number[] = [];
  private observer: EngineObserver | undefined;

  private constructor(opts: EngineOptions) {
    this.dir = path.resolve(opts.dir);
    this.fs = opts.fileOps ?? nodeFileOps;
    this.keydir = new SweptKeyDir(opts.cacheBytes ?? 256 * 1024 * 1024);
    this.keydir.evictable = (e) => e.seg !== undefined;
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? (() => {});
    this.durability = opts.durability ?? 'always';
    this.segmentBytes = opts.segmentBytes ?? 64 * 1024 * 1024;
    this.hintDelayMs = opts.hintDelayMs ?? 30_000;
    this.keyring = opts.keyring;
    this.compression = opts.compression === true;
    this.core = new EngineCore(this.dir, this.fs, this.keydir, this.now, this.log, this.keyring, this.compression);
    this.compactor = new Compactor(this.core, {
      minDeadRatio: opts.compactMinDeadRatio ?? 0.5,
      minDeadBytes: opts.compactMinDeadBytes ?? 16 * 1024 * 1024,
    }, () => this.settled());
    // With a key, passes also convert segments not sealed under it (plain ones, old keys).
    this.compactor.rekey = this.keyring !== undefined;
  }

  /** All segments in replay order (ascending id); the last is the active one. */
  private get segments(): Segment[] {
    return this.core.segments;
  }

  private get active(): Segment {
    return this.core.active;
  }

  static async open(opts: EngineOptions): Promise<Engine> {
    const e = new Engine(opts);
    await e.fs.mkdir(e.dir);
    await lockDirectory(e.dir);
    try {
      const started = Date.now();
      const r = await recover(e.core, opts.repair === true);
      e.core.segments = r.segments;
      e.nextSeq = r.nextSeq;
      e.committed = r.nextSeq - 1;
      await e.openActive(r.appendTo);
      e.log('info', recoveredMessage(e.keydir.size, e.keydir.ungroupedSize, e.segments.length, Date.now() - started));
      for (const s of e.segments) {
        if (s !== e.active && !s.hasHint) e.hintLater(s);
      }
    } catch (err) {
      await e.closeFiles();
      unlockDirectory(e.dir);
      throw err;
    }
    const sweepMs = opts.sweepIntervalMs ?? 1000;
    if (sweepMs > 0) e.timers.push(setInterval(() => void e.sweep(), sweepMs).unref());
    const compactMs = opts.compactIntervalMs ?? 10_000;
    if (compactMs > 0) e.timers.push(setInterval(() => void e.compactor.maybeRun(), compactMs).unref());
    if (e.durability === 'everysec') e.timers.push(setInterval(() => void e.syncQuietly(), 1000).unref());
    return e;
  }

  /** Continues the newest log segment if it has room, else starts a new one. */
  private async openActive(appendTo: Segment | undefined): Promise<void> {
    // Under encryption a segment found on disk is never appended to: the
    // sequence numbers of batches lost in a crash are handed out again, and
    // under that segment's salt they would repeat a nonce (seal.ts).
    // Every value of a segment has a codec byte or none has: a tail written
    // with the other setting is left as it is and a new segment started.
    if (appendTo !== undefined && appendTo.size < this.segmentBytes && this.keyring === undefined && appendTo.codecs === this.compression) {
      await this.fs.close(appendTo.fd);
      appendTo.fd = await this.fs.open(appendTo.path, 'r+');
      this.core.active = appendTo;
      this.syncedSize = appendTo.size;
      return;
    }
    const maxId = this.segments.length > 0 ? this.segments[this.segments.length - 1].id : 0;
    this.core.active = await this.createLogSegment((Math.floor(maxId / ID_STEP) + 1) * ID_STEP);
    this.segments.push(this.active);
  }

  private async createLogSegment(id: number): Promise<Segment> {
    const seg = new Segment(this.dir, id, SegmentKind.Log);
    if (this.keyring !== undefined) seg.seal = SegmentSeal.fresh(this.keyring.current);
    seg.codecs = this.compression;
    const header = encodeSegmentHeader(SegmentKind.Log, this.nextSeq, seg.seal, seg.codecs);
    seg.headerSize = header.length;
    seg.fd = await this.fs.open(seg.path, 'wx+');
    try {
      await this.fs.writeAll(seg.fd, header, 0, header.length, 0);
      await this.fs.fdatasync(seg.fd);
      await this.fs.syncDir(this.dir);
    } catch (err) {
      await seg.closeQuietly(this.fs);
      await removeFile(this.fs, seg.path, this.log);
      throw err;
    }
    seg.size = header.length;
    this.syncedSize = header.length;
    return seg;
  }

  /** Sends figures to `o` from now on (metrics). */
  observe(o: EngineObserver): void {
    this.observer = o;
    this.compactor.observer = o;
  }

  // ---- writes --------------------------------------------------------------

  /** The sequence number the next call to write() will take. */
  get upcomingSeq(): number {
    return this.nextSeq;
  }

  /**
   * Appends one batch. The directory reflects it when this returns; the
   * promise settles when the log has it (durably, under `always`).
   */
  write(ops: readonly WriteOp[]): Promise<void> {
    if (this.closed) return Promise.reject(new EngineClosedError());
    if (ops.length === 0) return Promise.resolve();
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (typeof o.key !== 'string' || o.key.length === 0 || o.key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(o.key) > MAX_KEY_BYTES) {
        return Promise.reject(new RangeError(`key must be 1..${MAX_KEY_BYTES} bytes`));
      }
      // A lone surrogate would be stored as U+FFFD: the key read back at the
      // next start would differ from (and could collide with) the one written.
      if (!isWellFormed.call(o.key)) return Promise.reject(new RangeError('key must be well-formed UTF-16 (no lone surrogates)'));
      // Any other op byte would make the batch unreadable at the next start.
      if (o.op !== Op.Put && o.op !== Op.Del && o.op !== Op.DropGroup) return Promise.reject(new RangeError(`unknown op ${String(o.op)}`));
      // NaN would never expire yet sit in the expiry heap, breaking its order.
      if (typeof o.expiresAt !== 'number' || Number.isNaN(o.expiresAt)) return Promise.reject(new RangeError('expiresAt must be a number (0 = never)'));
      if (o.op === Op.Put && !(o.value instanceof Buffer)) return Promise.reject(new TypeError('put needs a Buffer value'));
    }
    if (batchTooLarge(ops)) return Promise.reject(new BatchTooLargeError(MAX_BATCH_BYTES));
    const seq = this.nextSeq;
    // Under compression each Put value is stored with its codec byte (codec.ts);
    // the directory caches the value itself.
    const stored = this.compression ? ops.map((o) => (o.op === Op.Put ? { ...o, value: storedValue(o.value as Buffer, true) } : o)) : ops;
    const buf = encodeBatch(seq, stored, this.keyLens, this.valueOffsets);
    this.nextSeq++;
    const kd = this.keydir;
    const now = this.now();
    const p: Pending = {
      seq, buf, ops, created: [], createdOffsets: [], undoKeys: [], undoPrev: [],
      resolve: noop, reject: noop,
    };
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op === Op.Put) {
        const value = o.value as Buffer;
        if (o.expiresAt !== 0 && o.expiresAt <= now) {
          // Already expired: logged for order's sake, invisible at once.
          if (kd.get(o.key) !== undefined) {
            p.undoKeys.push(o.key);
            p.undoPrev.push(kd.delete(o.key));
          }
          continue;
        }
        const sv = stored[i].value as Buffer;
        const e = new Entry(undefined, 0, sv.length, entrySize(this.keyLens[i], sv.length), o.expiresAt,
          valueCrc(sv, 0, sv.length), seq);
        kd.cache(e, value, o.memo, o.memo === undefined ? undefined : o.decoder);
        p.undoKeys.push(o.key);
        p.undoPrev.push(kd.set(o.key, e));
        p.created.push(e);
        p.createdOffsets.push(this.valueOffsets[i]);
      } else if (o.op === Op.Del) {
        const prev = kd.delete(o.key);
        if (prev !== undefined) {
          p.undoKeys.push(o.key);
          p.undoPrev.push(prev);
        }
      } else {
        for (const [k, e] of kd.dropGroup(o.key)) {
          p.undoKeys.push(k);
          p.undoPrev.push(e);
        }
      }
    }
    const promise = new Promise<void>((resolve, reject) => {
      p.resolve = resolve;
      p.reject = reject;
    });
    this.queue.push(p);
    if (!this.flushing) {
      this.flushing = true;
      // Let every request that arrived in this turn of the loop join the group.
      // eslint-disable-next-line @typescript-eslint/no-misused-promises -- flushLoop catches and logs every failure itself
      setImmediate(this.flushLoop);
    }
    return promise;
  }

  private readonly flushLoop = async (): Promise<void> => {
    while (this.queue.length > 0) {
      const group = this.queue;
      this.queue = [];
      try {
        await this.writeGroup(group);
      } catch (err) {
        // writeGroup has already rolled back and rejected; keep serving.
        this.log('error', `log write failed: ${String((err as Error).message ?? err)}`);
      }
      this.groupsDone++;
      if (this.barriers.length > 0) this.releaseBarriers(false);
    }
    this.releaseBarriers(true);
    this.flushing = false;
    const waiters = this.flushDone;
    this.flushDone = [];
    for (const w of waiters) w();
  };

  private releaseBarriers(all: boolean): void {
    const keep: Array<{ target: number; resolve: () => void }> = [];
    for (const b of this.barriers) {
      if (all || this.groupsDone >= b.target) b.resolve();
      else keep.push(b);
    }
    this.barriers = keep;
  }

  private async writeGroup(group: Pending[]): Promise<void> {
    let total = 0;
    for (const p of group) total += p.buf.length;
    // Sealing adds a tag to each batch (every segment this process appends to is sealed or none is).
    if (this.keyring !== undefined) total += TAG_BYTES * group.length;
    let seg = this.active;
    try {
      if (this.tailDirty) {
        await this.fs.ftruncate(seg.fd, seg.size);
        this.tailDirty = false;
      }
      if (seg.size + total > this.segmentBytes && seg.size > seg.headerSize) seg = await this.rotate();
    } catch (err) {
      this.failFrom(group, storageError('segment rotation', err));
      throw err;
    }
    const seal = seg.seal;
    if (seal !== undefined) {
      // Sealed here, not in write(): the nonce depends on the segment the batch lands in.
      try {
        for (const p of group) p.buf = seal.sealBatch(p.buf);
      } catch (err) {
        this.failFrom(group, new StorageIOError(`sealing a batch failed: ${String((err as Error).message ?? err)}`, err));
        throw err;
      }
    }
    const data = group.length === 1 ? group[0].buf : Buffer.concat(group.map((p) => p.buf), total);
    const pos = seg.size;
    const t0 = performance.now();
    try {
      await this.fs.writeAll(seg.fd, data, 0, total, pos);
      this.observer?.logWrite(group.length, total, (performance.now() - t0) / 1e3);
    } catch (err) {
      const e = storageError('write', err);
      this.failFrom(group, e);
      await this.cutTail(seg, pos);
      throw e;
    }
    // The bytes are in the file: entries may now point there (and leave the cache).
    const kd = this.keydir;
    let off = pos;
    for (const p of group) {
      for (let i = 0; i < p.created.length; i++) {
        const e = p.created[i];
        e.seg = seg;
        e.vpos = off + p.createdOffsets[i];
        // A sealed value is read with its whole batch: keep its offset in the batch (scanner.ts, valueCheck).
        if (seal !== undefined) e.crc = p.createdOffsets[i];
        if ((e.flags & FLAG_CURRENT) !== 0) seg.live += e.size;
        kd.dropBytes(e);
      }
      off += p.buf.length;
    }
    seg.size = pos + total;
    seg.maxSeq = group[group.length - 1].seq;
    if (this.durability === 'always') {
      try {
        const t1 = performance.now();
        await this.fs.fdatasync(seg.fd);
        this.observer?.logSync((performance.now() - t1) / 1e3);
        this.syncedSize = seg.size;
      } catch (err) {
        // After a failed fsync the page cache can no longer be trusted to
        // hold these bytes (PostgreSQL's "fsyncgate"): drop them and say so.
        const e = storageError('fdatasync', err);
        this.failFrom(group, e);
        // The undone versions pointed into the tail cut below: a snapshot still
        // holding one must find it gone (and say so), not read past the end or,
        // once later writes refill that space, another value.
        for (const p of group) for (const c of p.created) c.seg = undefined;
        seg.size = pos;
        await this.cutTail(seg, pos);
        throw e;
      }
    }
    const hook = this.onCommit;
    if (hook !== undefined) {
      for (const p of group) {
        try {
          hook(p.seq, p.ops);
        } catch (err) {
          this.log('error', `commit hook failed: ${String((err as Error)?.stack ?? err)}`);
        }
      }
    }
    this.committed = group[group.length - 1].seq;
    for (const p of group) p.resolve();
  }

  /**
   * Rolls back `group` and everything queued after it, newest first, and
   * rejects them all. Runs synchronously so no other request can observe or
   * build on the state being undone.
   */
  private failFrom(group: Pending[], err: unknown): void {
    this.rolledBack++;
    const all = group.concat(this.queue);
    this.queue = [];
    const kd = this.keydir;
    for (let b = all.length - 1; b >= 0; b--) {
      const p = all[b];
      for (let i = p.undoKeys.length - 1; i >= 0; i--) {
        const prev = p.undoPrev[i];
        if (prev !== undefined && prev.seg !== undefined && prev.seg.compacting) this.compactor.conflict = true;
        kd.restore(p.undoKeys[i], prev);
      }
    }
    for (const p of all) p.reject(err);
  }

  /** Cuts a failed write off the file so no stray batch can follow a later good one. */
  private async cutTail(seg: Segment, len: number): Promise<void> {
    try {
      await this.fs.ftruncate(seg.fd, len);
    } catch (err) {
      this.tailDirty = true;
      this.log('error', `could not truncate ${seg.name} to ${len}: ${String(err)}; will retry before the next write`);
    }
  }

  private async rotate(): Promise<Segment> {
    const old = this.active;
    await this.fs.fdatasync(old.fd);
    const next = await this.createLogSegment(old.id + ID_STEP);
    this.segments.push(next);
    this.core.active = next;
    if (this.hintDelayMs === 0) {
      this.hintLater(old);
    } else {
      const t = setTimeout(() => {
        this.hintTimers.delete(t);
        if (!old.retired && !this.closed) this.hintLater(old);
      }, this.hintDelayMs).unref();
      this.hintTimers.add(t);
    }
    return next;
  }

  /** Builds a segment's hint in the background; close() waits for it. */
  private hintLater(seg: Segment): void {
    const p: Promise<void> = buildHint(this.fs, seg)
      .catch((err) => this.log('warn', `hint for ${seg.name}: ${String(err)}`))
      .finally(() => this.hintBuilds.delete(p));
    this.hintBuilds.add(p);
  }

  private async syncQuietly(): Promise<void> {
    const seg = this.active;
    if (seg.size === this.syncedSize || seg.fd < 0) return;
    const size = seg.size;
    try {
      const t1 = performance.now();
      await this.fs.fdatasync(seg.fd);
      this.observer?.logSync((performance.now() - t1) / 1e3);
      this.syncedSize = size;
    } catch (err) {
      this.log('error', `background fdatasync of ${seg.name} failed: ${String(err)}`);
    }
  }

  /** Resolves once every batch queued or in flight at the time of the call has settled. */
  settled(): Promise<void> {
    if (!this.flushing) return Promise.resolve();
    const target = this.groupsDone + (this.queue.length > 0 ? 2 : 1);
    return new Promise((resolve) => this.barriers.push({ target, resolve }));
  }

  /** Resolves when the flush loop has nothing left to do. */
  drain(): Promise<void> {
    if (!this.flushing) return Promise.resolve();
    return new Promise((resolve) => this.flushDone.push(resolve));
  }

  // ---- reads ---------------------------------------------------------------

  /**
   * The live entry of a key at `now`. Callers that ask several questions
   * about one moment (a decision of the store: is it there, what is its
   * expiry) pass the same `now` to each, so an expiry cannot fall between
   * two of their answers.
   */
  private live(key: string, now?: number): Entry | undefined {
    const e = this.keydir.get(key);
    if (e === undefined) return undefined;
    if (e.exp !== 0 && e.exp <= (now ?? this.now())) return undefined;
    return e;
  }

  has(key: string, now?: number): boolean {
    return this.live(key, now) !== undefined;
  }

  /** Bumped whenever a failed write is rolled back: state can change without a new sequence number. */
  get rollbacks(): number {
    return this.rolledBack;
  }

  /**
   * The version of a live key: the sequence number of the batch that wrote
   * it (docs/format.md, "Sequence numbers"); undefined when absent.
   */
  versionOf(key: string, now?: number): number | undefined {
    return this.live(key, now)?.seq;
  }

  /** The highest sequence number whose batch the log holds under the configured durability. */
  /**
   * The log as it stands now, for an online backup (docs/operations.md,
   * "Backup and restore"): every segment file, opened now and cut at its
   * current length, which is always a batch boundary (a group's length is
   * recorded only once all of it is in the file). Every batch acknowledged
   * before this call is inside; none queued after it is. Runs synchronously,
   * so no write or compaction step can fall between two files; an open
   * descriptor keeps a file readable even if compaction unlinks it later.
   * A compaction output that is already in the list repeats batches of its
   * inputs with their own sequence numbers, which replay to the same state.
   * The caller reads the descriptors and closes them.
   */
  snapshotFiles(): Array<{ name: string; fd: number; size: number }> {
    if (this.closed) throw new EngineClosedError();
    const out: Array<{ name: string; fd: number; size: number }> = [];
    try {
      for (const s of this.segments) {
        if (s.retired) continue;
        out.push({ name: path.basename(s.path), fd: fs.openSync(s.path, 'r'), size: s.size });
      }
    } catch (err) {
      for (const f of out) fs.closeSync(f.fd);
      throw storageError('open for backup', err);
    }
    return out;
  }

  get committedSeq(): number {
    return this.committed;
  }

  /**
   * Called for each key the expiry sweep (or compaction) removes because its
   * ttl ended, with the version that expired and its value on demand. Keys
   * replaced or deleted after their expiry but before a sweep are not reported.
   */
  set onExpire(fn: ExpireHook | undefined) {
    (this.keydir as SweptKeyDir).onExpire = fn;
    this.core.onExpire = fn;
  }

  /**
   * Replays the batches with sequence numbers in (after, upto] from the log,
   * in order, as (seq, entries, buffer) where each entry's value lies in the
   * buffer at valueOffset. Resolves false when the log can no longer replay
   * that range exactly: compaction has dropped deletions and overwritten
   * versions up to replayFloor(), or a segment was compacted away meanwhile.
   */
  async replay(after: number, upto: number,
    visit: (seq: number, entries: readonly DecodedEntry[], buf: Buffer) => void): Promise<boolean> {
    if (after < this.replayFloor()) return false;
    const segs = this.segments.slice();
    try {
      for (const s of segs) {
        if (s.kind !== SegmentKind.Log || s.maxSeq <= after) continue;
        if (s.retired) return false;
        const scanner = new SegmentScanner(this.fs, s, s.size);
        const yielder = Yielder.background();
        for (;;) {
          const step = await scanner.next();
          if (step.kind === 'end') break;
          if (step.kind === 'bad') return false;
          const seq = step.batch.seq;
          if (seq > upto) return true;
          if (seq > after) {
            if (s.codecs) {
              const plain = plainEntries(s, step.batch.entries, step.buf);
              visit(seq, plain.entries, plain.buf);
            } else visit(seq, step.batch.entries, step.buf);
          }
          await yielder.maybe();
        }
      }
    } catch (err) {
      if (segs.some((s) => s.retired)) return false; // compacted away while we read
      throw err;
    }
    return true;
  }

  /** Batches up to this sequence number may have lost entries to compaction (see replay). */
  replayFloor(): number {
    let floor = 0;
    for (const s of this.segments) if (s.covers > floor) floor = s.covers;
    return floor;
  }

  /** Absolute expiry of a live key (0 = never), or undefined when absent. */
  expiresAt(key: string, now?: number): number | undefined {
    return this.live(key, now)?.exp;
  }

  /**
   * The decoded value when it is in memory, undefined when the key is absent,
   * MISS when it must be read from disk with read(). Never waits. `seen`,
   * when given, receives the key's version from the same lookup, so a read's
   * value and ETag come from one instant without a second search.
   */
  peek<T>(key: string, dec: Decoder<T>, now?: number, seen?: { version: number }): T | undefined | typeof MISS {
    const e = this.live(key, now);
    if (e === undefined) return undefined;
    if (seen !== undefined) seen.version = e.seq;
    return this.decoded(key, e, dec);
  }

  /**
   * The live version of `key` as a reference its caller may keep and read
   * through later with peekRef (a secondary index keeps one per row it
   * lists: docs/query.md, "Row references"); undefined when absent.
   */
  ref(key: string, now?: number): VersionRef | undefined {
    return this.live(key, now) as unknown as VersionRef | undefined;
  }

  /**
   * The cached value behind a reference, decoded by `dec`, while the
   * reference is still its key's live version; MISS otherwise (replaced,
   * deleted, expired, or not cached with this decoder): the caller then
   * reads by key. Never waits, never searches the directory.
   */
  peekRef<T>(ref: VersionRef, dec: Decoder<T>, now: number): T | typeof MISS {
    const e = ref as unknown as Entry;
    // FLAG_CURRENT is set exactly while the entry is in the directory (KeyDir.set, KeyDir.retire).
    if ((e.flags & FLAG_CURRENT) === 0 || (e.exp !== 0 && e.exp <= now) || e.memo === undefined || e.dec !== dec) return MISS;
    this.keydir.touch(e);
    this.observer?.cacheHit();
    return e.memo as T;
  }

  private decoded<T>(key: string, e: Entry, dec: Decoder<T>): T | typeof MISS {
    if (e.memo !== undefined && e.dec === dec) {
      this.keydir.touch(e);
      this.observer?.cacheHit();
      return e.memo as T;
    }
    if (e.val !== undefined) {
      this.observer?.cacheHit();
      const memo = dec(e.val, key);
      this.keydir.cache(e, e.val, memo, dec as Decoder<unknown>);
      return memo;
    }
    this.observer?.cacheMiss();
    return MISS;
  }

  /** The decoded value, reading it from its segment when it is not cached. */
  async read<T>(key: string, dec: Decoder<T>): Promise<T | undefined> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const e = this.live(key);
      if (e === undefined) return undefined;
      const v = this.decoded(key, e, dec);
      if (v !== MISS) return v;
      const buf = await this.readValue(e);
      if (this.keydir.get(key) !== e) continue; // changed while we read
      if (buf === undefined) continue;
      const memo = dec(buf, key);
      this.keydir.cache(e, buf, memo, dec as Decoder<unknown>);
      return memo;
    }
    throw new StorageIOError(`could not read a stable value for a key`, undefined);
  }

  private async readValue(e: Entry): Promise<Buffer | undefined> {
    const seg = e.seg;
    if (seg === undefined || seg.fd < 0) return undefined;
    const got = seg.seal !== undefined ? await this.readSealedValue(e, seg, e.vpos, e.vlen, e.crc) : await this.readPlainValue(e, seg);
    if (got === undefined || !seg.codecs) return got;
    const v = plainValue(got);
    if (typeof v === 'string') {
      const err = new CorruptionError(seg.name, e.vpos, v);
      this.log('error', err.message);
      throw err;
    }
    return v;
  }

  private async readPlainValue(e: Entry, seg: Segment): Promise<Buffer | undefined> {
    // Taken with seg: compaction may move the entry (and change what crc means) while we read.
    const crc = e.crc;
    const buf = Buffer.allocUnsafe(e.vlen);
    let n: number;
    try {
      n = await seg.read(this.fs, buf, 0, e.vlen, e.vpos);
    } catch (err) {
      if (seg.retired) return undefined; // compaction moved it; look again
      throw storageError('read', err);
    }
    if (n !== e.vlen) {
      if (seg.retired || e.seg !== seg) return undefined;
      throw new StorageIOError(`short read in ${seg.name} at ${e.vpos}`, undefined);
    }
    if (valueCrc(buf, 0, n) !== crc) {
      // Damage after the segment was last verified (hinted segments are not
      // scanned at open): refuse to serve it rather than return wrong bytes.
      const err = new CorruptionError(seg.name, e.vpos, `value checksum mismatch (${e.vlen} bytes)`);
      this.log('error', err.message);
      throw err;
    }
    return buf;
  }

  /**
   * Reads a value from a sealed segment: its whole batch, whose tag is
   * checked, so a changed byte is refused like a checksum mismatch. `rel` is
   * the value's offset in the batch; a value is usually its batch's last
   * bytes before the tag, so one read of `rel + vlen + 16` bytes gets the
   * whole batch, and a second read the rest when the batch is longer.
   */
  private async readSealedValue(e: Entry, seg: Segment, vpos: number, vlen: number, rel: number): Promise<Buffer | undefined> {
    const start = vpos - rel;
    let buf: Buffer;
    try {
      buf = await readSealedBatch(this.fs, seg, start, rel + vlen + TAG_BYTES);
    } catch (err) {
      if (seg.retired || e.seg !== seg) return undefined;
      if (err instanceof CorruptionError) this.log('error', err.message);
      throw err instanceof CorruptionError ? err : storageError('read', err);
    }
    return buf.subarray(rel, rel + vlen);
  }

  /**
   * Decoded values of a group's live keys, in key order. Synchronous when all
   * of them are cached; otherwise a promise.
   */
  scan<T>(group: string, dec: Decoder<T>, at?: number): T[] | Promise<T[]> {
    const members = this.keydir.groupMembers(group);
    const out: T[] = [];
    if (members === undefined) return out;
    const now = at ?? this.now();
    // Fast path: every member's decoded value is cached, so keys are not needed
    // (iterating values avoids an entry pair per member).
    for (const e of members.values()) {
      if (e.exp !== 0 && e.exp <= now) continue;
      if (e.memo === undefined || e.dec !== dec) {
        out.length = 0;
        return this.scanSlow(members, now, out, dec);
      }
      e.flags |= FLAG_REF;
      out.push(e.memo as T);
    }
    return out;
  }

  private scanSlow<T>(members: Map<string, Entry>, now: number, out: T[], dec: Decoder<T>): T[] | Promise<T[]> {
    let missing: Array<[number, string]> | undefined;
    for (const [key, e] of members) {
      if (e.exp !== 0 && e.exp <= now) continue;
      const v = this.decoded(key, e, dec);
      if (v === MISS) {
        (missing ??= []).push([out.length, key]);
        out.push(undefined as T);
      } else {
        out.push(v);
      }
    }
    if (missing === undefined) return out;
    return this.fillMissing(out, missing, dec);
  }

  private async fillMissing<T>(out: T[], missing: Array<[number, string]>, dec: Decoder<T>): Promise<T[]> {
    await Promise.all(missing.map(async ([i, key]) => {
      out[i] = (await this.read(key, dec)) as T;
    }));
    // A key deleted while we read leaves a hole; drop it.
    return out.filter((v) => v !== undefined);
  }

  /**
   * The group's members at this instant, to be read later in batches
   * (snapshot.ts). Copies two pointers per member (its key and its current
   * version) and touches nothing else, so it stays cheap for large groups;
   * which members are live is decided at `at` when they are read. The
   * caller must release() the snapshot when done with it.
   */
  snapshot<T>(group: string, dec: Decoder<T>, at?: number): GroupSnapshot<T> {
    const [keys, versions] = this.keydir.copyGroup(group);
    return new GroupSnapshot(this.fs, this.keydir, this.log, dec, keys, versions, at ?? this.now(), this.segments);
  }

  /** How many current keys carry an expiry (0: nothing in the directory can expire). */
  get expiringKeys(): number {
    return this.keydir.expiringCount;
  }

  /**
   * Every key that starts with `prefix` (expired-but-unswept ones included),
   * in no particular order: for views kept outside the engine (the store's
   * listing and secondary indexes, docs/query.md). One pass over the directory.
   */
  *keys(prefix = ''): Generator<string, void, undefined> {
    for (const k of this.keydir.map.keys()) if (k.startsWith(prefix)) yield k;
  }

  /**
   * Up to `limit` live keys of a group above `after` ('' = from the first),
   * in key order: a page of a collection's members (src/store/log/collections.ts).
   * Expired-but-unswept keys are skipped, so a page may hold fewer than
   * `limit` keys while more follow; callers ask for one more than they show.
   */
  groupKeys(group: string, after: string, limit: number, at?: number): string[] {
    const now = at ?? this.now();
    const [keys, entries] = this.keydir.groupKeysAfter(group, after, limit);
    let n = 0;
    for (let i = 0; i < keys.length; i++) {
      const e = entries[i];
      if (e.exp !== 0 && e.exp <= now) continue;
      keys[n++] = keys[i];
    }
    keys.length = n;
    return keys;
  }

  /** Number of live keys in a group (expired-but-unswept ones included). */
  groupSize(group: string): number {
    return this.keydir.groupMembers(group)?.size ?? 0;
  }

  // ---- expiry, compaction, stats -----------------------------------------

  /** Removes expired keys from the directory in slices that yield between them. */
  async sweep(): Promise<void> {
    if (this.sweepRunning) return;
    this.sweepRunning = true;
    try {
      const kd = this.keydir as SweptKeyDir;
      for (;;) {
        // Only deletions made by the sweep itself are expirations.
        kd.sweeping = true;
        let n: number;
        try {
          n = kd.sweep(this.now(), 10_000);
        } finally {
          kd.sweeping = false;
        }
        if (n !== 10_000) break;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.sweepRunning = false;
    }
  }

  /**
   * Rewrites, by compaction passes, every segment not sealed under the
   * current key (plain ones, and those under old keys), except the active
   * one, which at open is always a new segment under the current key.
   * Resolves to the number of segments still needing another key (0 unless a
   * pass failed, which is logged).
   */
  async rekey(): Promise<number> {
    if (this.keyring === undefined) return 0;
    const left = (): number => this.segments.filter((s) => s !== this.active && this.compactor.needsRewrite(s)).length;
    while (left() > 0) {
      if (!(await this.compactor.maybeRun(true))) break;
    }
    return left();
  }

  /** Runs one compaction pass now if there is a run worth compacting (or any, with force). */
  compact(force = false): Promise<boolean> {
    return this.compactor.maybeRun(force);
  }

  stats(): EngineStats {
    let live = 0;
    let dead = 0;
    for (const s of this.segments) {
      live += s.live;
      dead += s.dead(s.headerSize);
    }
    return {
      keys: this.keydir.size,
      topLevelKeys: this.keydir.ungroupedSize,
      liveBytes: live,
      deadBytes: dead,
      segments: this.segments.length,
      gcState: this.compactor.state,
      cacheBytes: this.keydir.cacheBytes,
      nextSeq: this.nextSeq,
    };
  }

  // ---- shutdown ------------------------------------------------------------

  /** Flushes, syncs and closes every file. Writes after this reject. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    for (const t of this.hintTimers) clearTimeout(t);
    this.hintTimers.clear();
    await this.drain();
    await this.compactor.stop();
    while (this.hintBuilds.size > 0) await Promise.all(this.hintBuilds);
    try {
      if (this.active !== undefined && this.active.fd >= 0) {
        // A failed write whose bytes could not be cut off must not outlive
        // us: the next open would replay a batch that was rejected.
        if (this.tailDirty) {
          await this.fs.ftruncate(this.active.fd, this.active.size);
          this.tailDirty = false;
        }
        await this.fs.fdatasync(this.active.fd);
      }
    } finally {
      await this.closeFiles();
      unlockDirectory(this.dir);
    }
  }

  private async closeFiles(): Promise<void> {
    for (const s of this.segments) {
      s.retired = true;
      await s.closeQuietly(this.fs);
    }
  }
}

function noop(): void {}

/** A batch's entries with their values decoded (a segment with codec bytes), in a buffer of their own. */
function plainEntries(seg: Segment, entries: readonly DecodedEntry[], buf: Buffer): { entries: DecodedEntry[]; buf: Buffer } {
  const parts: Buffer[] = [];
  const out: DecodedEntry[] = [];
  let off = 0;
  for (const en of entries) {
    if (en.op !== Op.Put) {
      out.push({ ...en, valueOffset: off, valueLength: 0 });
      continue;
    }
    const v = plainValue(buf.subarray(en.valueOffset, en.valueOffset + en.valueLength));
    if (typeof v === 'string') throw new CorruptionError(seg.name, 0, v);
    parts.push(v);
    out.push({ ...en, valueOffset: off, valueLength: v.length });
    off += v.length;
  }
  return { entries: out, buf: Buffer.concat(parts, off) };
}


/**
 * The key directory with an expiry hook: KeyDir.sweep removes a key through
 * delete(), so deletions made while `sweeping` are the keys whose ttl ended.
 */
class SweptKeyDir extends KeyDir {
  sweeping = false;
  onExpire: ExpireHook | undefined = undefined;

  override delete(key: string): Entry | undefined {
    const e = super.delete(key);
    if (this.sweeping && e !== undefined && this.onExpire !== undefined) this.onExpire(key, e.seq, () => valueNow(e));
    return e;
  }
}

/**
 * An entry's value at once: cached, or read synchronously from its segment
 * (the sweep runs inside one turn, and what it reports must not be
 * overtaken by later changes). Undefined when it cannot be read or fails its
 * checksum; the caller then does without it.
 */
function valueNow(e: Entry): Buffer | undefined {
  if (e.val !== undefined) return e.val;
  const seg = e.seg;
  if (seg === undefined || seg.fd < 0) return undefined;
  const buf = Buffer.allocUnsafe(e.vlen);
  try {
    if (fs.readSync(seg.fd, buf, 0, e.vlen, e.vpos) !== e.vlen) return undefined;
  } catch {
    return undefined;
  }
  return valueCrc(buf, 0, e.vlen) === e.crc ? buf : undefined;
}

const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

/** "recovered 1 key from 1 segment in 2 ms: ..."; says what /health's key_count is among them. */
function recoveredMessage(keys: number, topLevel: number, segments: number, ms: number): string {
  const grouped = keys - topLevel;
  return `recovered ${plural(keys, 'key')} from ${plural(segments, 'segment')} in ${ms} ms: ` +
    `${plural(topLevel, 'top-level key')} (what /health reports as key_count) and ` +
    `${plural(grouped, 'key')} inside groups (table rows)`;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
