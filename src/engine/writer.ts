/**
 * Group commit: the one path by which batches reach the log.
 *
 * write() applies a batch to the key directory synchronously (so the
 * caller's next read sees it, and read-modify-write sequences need no locks:
 * the event loop is the one writer) and queues it. Every batch queued in one
 * turn of the event loop goes out as one group: one write, and under
 * `always` one fdatasync, after which the commit hook hears of each batch and
 * then its writer. If the log write fails, that group and every batch queued
 * after it are rolled back in reverse order before anything else runs, then
 * rejected with a typed error.
 */
import type { Logger } from '../log.js';
import { EngineClosedError, StorageIOError, storageError } from './errors.js';
import { BATCH_HEADER_SIZE, encodeBatch, Op } from './format.js';
import type { FileOps } from './fileops.js';
import { type Entry, FLAG_CURRENT } from './entry.js';
import type { KeyDir } from './keydir.js';
import type { Segment } from './segment.js';
import type { EngineCore } from './core.js';
import type { Compactor } from './compaction.js';
import type { Rotation } from './rotation.js';
import { sealingOverhead } from './seal.js';
import { applyBatch, checkOps, layOut, type Pending } from './batch.js';
import type { Durability, EngineObserver, WriteOp } from './types.js';

export class GroupWriter {
  // The same objects core holds, kept here so write() reads them from `this`.
  private readonly fs: FileOps;
  private readonly keydir: KeyDir;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly sealed: boolean;

  /** The sequence number the next batch takes. */
  nextSeq = 1;
  /** Highest sequence number whose batch is in the log under the configured durability. */
  committed = 0;
  /** Failed writes rolled back so far (Engine.rollbacks). */
  rolledBack = 0;
  closed = false;
  /** Bytes of the active segment known to be on disk (everysec syncs only when it grew). */
  syncedSize = 0;
  /** Called once per batch, in sequence order, when the batch is in the log under the configured durability. */
  onCommit: ((seq: number, ops: readonly WriteOp[]) => void) | undefined = undefined;
  observer: EngineObserver | undefined = undefined;

  private queue: Pending[] = [];
  /** The last batch queued, while later writes of its owner in the same synchronous run may still join it (write); not yet encoded. */
  private open: Pending | undefined = undefined;
  private openOwner: object | undefined = undefined;
  /** The keys the open batch writes. */
  private readonly openKeys = new Set<string>();
  /** Calls of write() that changed the directory: state can change without a new sequence number when a write joins a batch. */
  writes = 0;
  private flushing = false;
  /** A group's write (and sync) is under way; false between groups while the next waits for its turn. */
  private writing = false;
  private flushDone: Array<() => void> = [];
  private groupsDone = 0;
  private barriers: Array<{ target: number; resolve: () => void }> = [];
  /** Set when a failed write could not be cut off the file; retried before the next write. */
  private tailDirty = false;
  private readonly keyLens: number[] = [];
  private readonly valueOffsets: number[] = [];

  constructor(
    private readonly core: EngineCore,
    private readonly durability: Durability,
    private readonly rotation: Rotation,
    private readonly compactor: Compactor,
  ) {
    this.fs = core.fs;
    this.keydir = core.keydir;
    this.now = core.now;
    this.log = core.log;
    this.sealed = core.keyring !== undefined;
  }

  /**
   * Appends one batch. The directory reflects it when this returns; the
   * promise settles when the log has it (durably, under `always`).
   *
   * With an `owner` (one client's pipeline: it is theirs to say), the writes
   * may instead be added to the batch that the previous write of the same
   * owner opened in the same synchronous run (it closes at the next
   * microtask), and share its sequence number and its
   * promise: one encoding, one checksum and one entry in the group for many
   * small writes. They join only when no write of anyone else came between,
   * no key of theirs is already in that batch (two writes of one key never
   * share a version), neither drops a group, and the batch stays under
   * JOIN_LIMIT_BYTES. Otherwise the open batch is closed and the writes
   * start a new one.
   */
  write(ops: readonly WriteOp[], owner?: object): Promise<void> {
    if (this.closed) return Promise.reject(new EngineClosedError());
    if (ops.length === 0) return Promise.resolve();
    const bad = checkOps(ops);
    if (bad !== undefined) return Promise.reject(bad);
    this.writes++;
    const open = this.open;
    if (open !== undefined) {
      if (owner === this.openOwner && owner !== undefined && this.joins(ops)) {
        const size = layOut(ops, open.size, this.keyLens, this.valueOffsets);
        if (size <= JOIN_LIMIT_BYTES) {
          // Applied first, as a new batch is applied before it is queued: the batch holds only what the directory shows.
          applyBatch(this.keydir, open, ops, ops, this.keyLens, this.valueOffsets, this.now());
          open.size = size;
          for (let i = 0; i < ops.length; i++) {
            open.ops.push(ops[i]);
            this.openKeys.add(ops[i].key);
          }
          return open.promise;
        }
      }
      this.closeOpen();
    }
    const join = owner !== undefined && !dropsGroup(ops);
    const p: Pending = {
      seq: this.nextSeq++,
      buf: EMPTY,
      // Copied only when later writes may join it.
      ops: join ? ops.slice() : (ops as WriteOp[]),
      size: 0,
      promise: undefined as unknown as Promise<void>,
      created: [],
      createdOffsets: [],
      unitAt: 0,
      undoKeys: [],
      undoPrev: [],
      resolve: noop,
      reject: noop,
    };
    p.size = layOut(ops, BATCH_HEADER_SIZE, this.keyLens, this.valueOffsets);
    applyBatch(this.keydir, p, ops, ops, this.keyLens, this.valueOffsets, this.now());
    p.promise = new Promise<void>((resolve, reject) => {
      p.resolve = resolve;
      p.reject = reject;
    });
    this.queue.push(p);
    if (join) {
      this.open = p;
      this.openOwner = owner;
      for (let i = 0; i < ops.length; i++) this.openKeys.add(ops[i].key);
      // Open for the rest of this synchronous run only: once anyone else can
      // run, a reader may have seen this batch's number, and a write joining
      // later would appear under a version that reader took as complete. One
      // close queued serves every batch opened before it runs: the owner's
      // next run is a continuation queued after it.
      if (!this.closeQueued) {
        this.closeQueued = true;
        queueMicrotask(this.closeAtEnd);
      }
    } else this.encode(p, true);
    if (!this.flushing) {
      this.flushing = true;
      // Let every request that arrived in this turn of the loop join the group.
      // eslint-disable-next-line @typescript-eslint/no-misused-promises -- flushLoop catches and logs every failure itself
      setImmediate(this.flushLoop);
    }
    return p.promise;
  }

  /**
   * The sequence number of the batch the next write will start: the open
   * batch is closed first, so a decision that needs its batch's number
   * (a fence, an incarnation) starts a batch of its own and gets it.
   */
  nextBatchSeq(): number {
    if (this.open !== undefined) this.closeOpen();
    return this.nextSeq;
  }

  private joins(ops: readonly WriteOp[]): boolean {
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op === Op.DropGroup || this.openKeys.has(o.key)) return false;
    }
    return true;
  }

  private closeQueued = false;
  private readonly closeAtEnd = (): void => {
    this.closeQueued = false;
    if (this.open !== undefined) this.closeOpen();
  };

  /** No write joins the open batch any more: it is encoded as it stands. */
  private closeOpen(): void {
    const p = this.open as Pending;
    this.open = undefined;
    this.openOwner = undefined;
    this.openKeys.clear();
    this.encode(p);
  }

  /**
   * `laidOut`: the batch's ops are exactly those layOut just measured into
   * keyLens (a batch that no write joined), so their lengths are reused.
   */
  private encode(p: Pending, laidOut = false): void {
    // Values go to the log as given, compression or not: a log segment is
    // compressed once it stops being appended to (recode.ts), off this path.
    p.buf = encodeBatch(p.seq, p.ops, this.keyLens, this.valueOffsets, !this.sealed, laidOut ? p.size : undefined);
  }

  private readonly flushLoop = async (): Promise<void> => {
    if (this.open !== undefined) this.closeOpen();
    const group = this.queue;
    this.queue = [];
    this.writing = true;
    try {
      await this.writeGroup(group);
    } catch (err) {
      // writeGroup has already rolled back and rejected; keep serving.
      this.log('error', `log write failed: ${String((err as Error).message ?? err)}`);
    }
    this.writing = false;
    this.groupsDone++;
    if (this.barriers.length > 0) this.releaseBarriers(false);
    if (this.queue.length > 0) {
      // The next group starts in the next turn, never in this one's
      // microtasks: the log write is made in place (fileops.ts), so without
      // `always` a group can complete without the loop turning, and writers
      // that write again on every acknowledgement would starve timers and I/O.
      // eslint-disable-next-line @typescript-eslint/no-misused-promises -- flushLoop catches and logs every failure itself
      setImmediate(this.flushLoop);
      return;
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
    // Sealing puts the group in units, each with a header and a tag (every segment this process appends to is sealed so, or none is).
    if (this.sealed) total += sealingOverhead(group);
    const seg = await this.segmentFor(group, total);
    const data =
      group.length === 1
        ? group[0].buf
        : Buffer.concat(
            group.map((p) => p.buf),
            total,
          );
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
    this.place(group, seg, pos);
    // The segment's length takes the group in only once the group is in the
    // log under the configured durability: an online backup cuts each file
    // at that length (backup-files.ts), and must not hold a batch that a
    // failed fsync then undoes.
    if (this.durability === 'always') await this.syncGroup(group, seg, pos, pos + total);
    seg.size = pos + total;
    seg.maxSeq = group[group.length - 1].seq;
    this.publish(group);
  }

  /**
   * The segment the group goes to, with a failed write's tail cut off first
   * and, when the group does not fit, a new segment; the batches are sealed
   * for it here, not in write(), as the nonce depends on the segment.
   */
  private async segmentFor(group: Pending[], total: number): Promise<Segment> {
    let seg = this.core.active;
    try {
      if (this.tailDirty) {
        await this.fs.ftruncate(seg.fd, seg.size);
        this.tailDirty = false;
      }
      if (this.rotation.full(seg, total)) {
        seg = await this.rotation.rotate(this.nextSeq);
        this.syncedSize = seg.size;
      }
    } catch (err) {
      this.failFrom(group, storageError('segment rotation', err));
      throw err;
    }
    const seal = seg.seal;
    if (seal !== undefined) {
      try {
        seal.sealGroup(group);
      } catch (err) {
        this.failFrom(group, new StorageIOError(`sealing a batch failed: ${String((err as Error).message ?? err)}`, err));
        throw err;
      }
    }
    return seg;
  }

  /** The bytes are in the file at `pos`: the group's entries may now point there (and leave the cache). */
  private place(group: Pending[], seg: Segment, pos: number): void {
    const kd = this.keydir;
    const sealed = seg.seal !== undefined;
    let off = pos;
    for (const p of group) {
      for (let i = 0; i < p.created.length; i++) {
        const e = p.created[i];
        e.seg = seg;
        e.vpos = off + p.createdOffsets[i];
        // A sealed value is read with its whole unit: keep its offset in it (scanner.ts, valueCheck).
        if (sealed) e.crc = e.vpos - pos - p.unitAt;
        if ((e.flags & FLAG_CURRENT) !== 0) seg.live += e.size;
        kd.dropBytes(e);
      }
      off += p.buf.length;
    }
  }

  /** `end`: where the group ends in the file (the segment's length once it is durable). */
  private async syncGroup(group: Pending[], seg: Segment, pos: number, end: number): Promise<void> {
    try {
      const t1 = performance.now();
      await this.fs.fdatasync(seg.fd);
      this.observer?.logSync((performance.now() - t1) / 1e3);
      this.syncedSize = end;
    } catch (err) {
      // After a failed fsync the page cache can no longer be trusted to
      // hold these bytes (PostgreSQL's "fsyncgate"): drop them and say so.
      const e = storageError('fdatasync', err);
      this.failFrom(group, e);
      // The undone versions pointed into the tail cut below: a snapshot still
      // holding one must find it gone (and say so), not read past the end or,
      // once later writes refill that space, another value.
      for (const p of group) for (const c of p.created) c.seg = undefined;
      await this.cutTail(seg, pos);
      throw e;
    }
  }

  /** The group is in the log under the configured durability: the commit hook hears of it, then its writers. */
  private publish(group: Pending[]): void {
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
    // The open batch, if any, is among those undone: nothing may join it now.
    this.open = undefined;
    this.openOwner = undefined;
    this.openKeys.clear();
    const kd = this.keydir;
    for (let b = all.length - 1; b >= 0; b--) {
      const p = all[b];
      for (let i = p.undoKeys.length - 1; i >= 0; i--) {
        const prev = p.undoPrev[i];
        if (prev !== undefined && putBack(prev)) this.compactor.conflict = true;
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

  /** A failed write whose bytes could not be cut off must not outlive a close: the next open would replay it. */
  async cutDirtyTail(): Promise<void> {
    const seg = this.core.active;
    if (!this.tailDirty) return;
    await this.fs.ftruncate(seg.fd, seg.size);
    this.tailDirty = false;
  }

  /** The everysec sync: fdatasync the active segment when it has grown since the last one. */
  async syncQuietly(): Promise<void> {
    const seg = this.core.active;
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
    const target = this.groupsDone + (this.writing ? 1 : 0) + (this.queue.length > 0 ? 1 : 0);
    return new Promise((resolve) => this.barriers.push({ target, resolve }));
  }

  /** Resolves when the flush loop has nothing left to do. */
  drain(): Promise<void> {
    if (!this.flushing) return Promise.resolve();
    return new Promise((resolve) => this.flushDone.push(resolve));
  }
}

/**
 * The most a batch grows by writes joining it: enough for any turn's small
 * writes to share one, small enough that encoding it is a short step.
 */
const JOIN_LIMIT_BYTES = 1 << 20;

const EMPTY = Buffer.alloc(0);

const dropsGroup = (ops: readonly WriteOp[]): boolean => ops.some((o) => o.op === Op.DropGroup);

function noop(): void {
  // A placeholder until the batch's promise is made, in the same synchronous run: nothing calls it.
}

/**
 * Readies a version a rolled-back write is about to put back: one whose file
 * a compression rewrite has replaced is pointed at its copy in the new file
 * (recode.ts), one inside a file being rewritten is handed to that rewrite to
 * move. Returns whether its file is being compacted or rewritten, which a
 * compaction must hear of (compaction.ts, conflict).
 */
function putBack(prev: Entry): boolean {
  prev.seg?.forward?.(prev);
  const seg = prev.seg;
  if (seg === undefined) return false;
  seg.putBack?.push(prev);
  return seg.compacting;
}
