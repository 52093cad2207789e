/**
 * The storage engine: an append-only log of checksummed batches, an
 * in-memory key directory pointing into it, group commit, expiry and
 * compaction. Bytes and string keys only; no knowledge of HTTP or JSON.
 *
 * This class opens and closes the engine and composes its parts, each in a
 * file of its own: group commit and its rollback (writer.ts, batch.ts), the
 * active segment (rotation.ts) and hint building (hint-scheduler.ts), reads
 * and the value cache (reader.ts, keydir.ts), expiry (sweeper.ts),
 * compaction (compaction.ts), replay for the change feed (feed.ts) and the
 * files of an online backup (backup-files.ts).
 */
import type { Logger } from '../log.js';
import { EngineClosedError } from './errors.js';
import { type DecodedEntry, SegmentKind } from './format.js';
import { type FileOps, nodeFileOps } from './fileops.js';
import type { Decoder } from './entry.js';
import { EngineCore, type ExpireHook } from './core.js';
import { recover } from './recovery.js';
import type { GroupSnapshot } from './snapshot.js';
import { Compactor } from './compaction.js';
import { lockDirectory, unlockDirectory } from './lockfile.js';
import { GroupWriter } from './writer.js';
import { Reader } from './reader.js';
import { Rotation } from './rotation.js';
import { HintScheduler } from './hint-scheduler.js';
import { Sweeper, SweptKeyDir } from './sweeper.js';
import { type BatchVisitor, replay, replayFloor } from './feed.js';
import { type BackupFile, snapshotFiles } from './backup-files.js';
import type { Segment } from './segment.js';
import type { EngineObserver, EngineOptions, EngineStats, MISS, Seen, VersionRef, WriteOp } from './types.js';
import * as path from 'node:path';

export { Op } from './format.js';
export type { Decoder } from './entry.js';
export type { Logger } from '../log.js';
export { MISS } from './types.js';
export type { Durability, EngineObserver, EngineOptions, EngineStats, VersionRef, WriteOp } from './types.js';

export class Engine {
  /** What recovery, hint building and compaction may touch (they never see the Engine). */
  private readonly core: EngineCore;
  private readonly keydir: SweptKeyDir;
  private readonly writer: GroupWriter;
  private readonly reader: Reader;
  private readonly rotation: Rotation;
  private readonly hints: HintScheduler;
  private readonly sweeper: Sweeper;
  private readonly compactor: Compactor;
  private readonly fs: FileOps;
  private timers: NodeJS.Timeout[] = [];
  private readonly groupNoun: ((letter: string) => string) | undefined;

  private constructor(opts: EngineOptions) {
    const dir = path.resolve(opts.dir);
    this.fs = opts.fileOps ?? nodeFileOps;
    const log: Logger = opts.log ?? unlogged;
    this.groupNoun = opts.groupNoun;
    const now = opts.now ?? Date.now;
    this.keydir = new SweptKeyDir(opts.cacheBytes ?? 256 * 1024 * 1024);
    this.keydir.evictable = (e) => e.seg !== undefined;
    this.core = new EngineCore(dir, this.fs, this.keydir, now, log, opts.keyring, opts.compression === true);
    this.compactor = new Compactor(
      this.core,
      {
        minDeadRatio: opts.compactMinDeadRatio ?? 0.5,
        minDeadBytes: opts.compactMinDeadBytes ?? 16 * 1024 * 1024,
      },
      () => this.writer.settled(),
    );
    // With a key, passes also convert segments not sealed under it (plain ones, old keys).
    this.compactor.rekey = opts.keyring !== undefined;
    this.hints = new HintScheduler(this.fs, log, opts.hintDelayMs ?? 30_000);
    this.rotation = new Rotation(this.core, opts.segmentBytes ?? 64 * 1024 * 1024, this.hints);
    // Under compression a segment that stops being appended to is rewritten with its values compressed (recode.ts).
    // After the hint delay, as a hint would be: a segment compacted meanwhile needs neither.
    if (this.core.compression) this.rotation.onRetire = (s) => this.hints.later(s, () => this.compactor.recode(s, () => this.hints.now(s)));
    this.writer = new GroupWriter(this.core, opts.durability ?? 'always', this.rotation, this.compactor);
    this.reader = new Reader(this.core);
    this.sweeper = new Sweeper(this.keydir, now);
  }

  static async open(opts: EngineOptions): Promise<Engine> {
    const e = new Engine(opts);
    await e.recoverAndLock(opts.repair === true);
    const sweepMs = opts.sweepIntervalMs ?? 1000;
    if (sweepMs > 0) e.timers.push(setInterval(() => void e.sweep(), sweepMs).unref());
    const compactMs = opts.compactIntervalMs ?? 10_000;
    if (compactMs > 0) e.timers.push(setInterval(() => void e.compactor.maybeRun(), compactMs).unref());
    if ((opts.durability ?? 'always') === 'everysec') e.timers.push(setInterval(() => void e.writer.syncQuietly(), 1000).unref());
    return e;
  }

  /** Locks the directory, rebuilds the key directory from the log and opens the segment to append to. */
  private async recoverAndLock(repair: boolean): Promise<void> {
    const { dir, log } = this.core;
    await this.fs.mkdir(dir);
    await lockDirectory(dir);
    try {
      const started = Date.now();
      const r = await recover(this.core, repair);
      this.core.segments = r.segments;
      this.writer.nextSeq = r.nextSeq;
      this.writer.committed = r.nextSeq - 1;
      await this.rotation.openActive(r.appendTo, r.nextSeq);
      this.writer.syncedSize = this.core.active.size;
      log('info', `recovered ${plural(this.core.segments.length, 'segment')} in ${Date.now() - started} ms, holding ${this.describeKeys()}`);
      for (const s of this.core.segments) {
        if (s === this.core.active) continue;
        // Under compression every log segment whose values are still plain is compressed now (the
        // rewrite writes its hint): a tail not continued (always so under encryption), and those
        // rotated out within the hint delay before a stop, whose waiting rewrites the stop dropped.
        if (this.core.compression && s.kind === SegmentKind.Log && !s.codecs) this.compactor.recode(s, () => this.hintUnlessHinted(s));
        else this.hintUnlessHinted(s);
      }
    } catch (err) {
      await this.closeFiles();
      unlockDirectory(dir);
      throw err;
    }
  }

  private hintUnlessHinted(s: Segment): void {
    if (!s.hasHint) this.hints.now(s);
  }

  /** Sends figures to `o` from now on (metrics). */
  observe(o: EngineObserver): void {
    this.writer.observer = o;
    this.reader.observer = o;
    this.compactor.observer = o;
  }

  // ---- writes (writer.ts) --------------------------------------------------

  /** The sequence number the next batch will take (a write that joins the open batch takes that one's: writer.ts). */
  get upcomingSeq(): number {
    return this.writer.nextSeq;
  }

  /**
   * Appends one batch. The directory reflects it when this returns; the
   * promise settles when the log has it (durably, under `always`). With an
   * `owner`, the writes may share the batch that the owner's previous write
   * of the same synchronous run opened (GroupWriter.write says when).
   */
  write(ops: readonly WriteOp[], owner?: object): Promise<void> {
    return this.writer.write(ops, owner);
  }

  /** The sequence number of the batch the next write will start, closing the open batch to joins (GroupWriter.nextBatchSeq). */
  nextBatchSeq(): number {
    return this.writer.nextBatchSeq();
  }

  /** Bumped by every write that changed the directory: with `rollbacks`, tells a reader that nothing changed in between. */
  get writes(): number {
    return this.writer.writes;
  }

  /** Resolves once every batch queued or in flight at the time of the call has settled. */
  settled(): Promise<void> {
    return this.writer.settled();
  }

  /** Resolves when the flush loop has nothing left to do. */
  drain(): Promise<void> {
    return this.writer.drain();
  }

  /** Bumped whenever a failed write is rolled back: state can change without a new sequence number. */
  get rollbacks(): number {
    return this.writer.rolledBack;
  }

  /** The highest sequence number whose batch the log holds under the configured durability. */
  get committedSeq(): number {
    return this.writer.committed;
  }

  /**
   * Called once per batch, in sequence order, when the batch is in the log
   * under the configured durability and before its writer hears so: the
   * change feed (docs/api.md, "Change feed") publishes only what a crash
   * cannot take back. Must not throw or write.
   */
  get onCommit(): ((seq: number, ops: readonly WriteOp[]) => void) | undefined {
    return this.writer.onCommit;
  }

  set onCommit(fn: ((seq: number, ops: readonly WriteOp[]) => void) | undefined) {
    this.writer.onCommit = fn;
  }

  // ---- reads (reader.ts) ---------------------------------------------------

  has(key: string, now?: number): boolean {
    return this.reader.live(key, now) !== undefined;
  }

  /**
   * The version of a live key: the sequence number of the batch that wrote
   * it (docs/format.md, "Sequence numbers"); undefined when absent.
   */
  versionOf(key: string, now?: number): number | undefined {
    return this.reader.live(key, now)?.seq;
  }

  /** Absolute expiry of a live key (0 = never), or undefined when absent. */
  expiresAt(key: string, now?: number): number | undefined {
    return this.reader.live(key, now)?.exp;
  }

  /** The decoded value when it is in memory, undefined when absent, MISS when it must be read: Reader.peek. */
  peek<T>(key: string, dec: Decoder<T>, now?: number, seen?: Seen): T | undefined | typeof MISS {
    return this.reader.peek(key, dec, now, seen);
  }

  /** The live version of `key` as a reference to read through later with peekRef: Reader.ref. */
  ref(key: string, now?: number): VersionRef | undefined {
    return this.reader.ref(key, now);
  }

  /** The cached value behind a reference while it is still its key's live version: Reader.peekRef. */
  peekRef<T>(ref: VersionRef, dec: Decoder<T>, now: number): T | typeof MISS {
    return this.reader.peekRef(ref, dec, now);
  }

  /** The decoded value, reading it from its segment when it is not cached. */
  read<T>(key: string, dec: Decoder<T>): Promise<T | undefined> {
    return this.reader.read(key, dec);
  }

  /** Decoded values of a group's live keys, in key order: Reader.scan. */
  scan<T>(group: string, dec: Decoder<T>, at?: number): T[] | Promise<T[]> {
    return this.reader.scan(group, dec, at);
  }

  /** The group's members at this instant, to be read later in batches: Reader.snapshot. */
  snapshot<T>(group: string, dec: Decoder<T>, at?: number): GroupSnapshot<T> {
    return this.reader.snapshot(group, dec, at);
  }

  /** An empty snapshot of a group, filled in steps: Reader.openSnapshot. */
  openSnapshot<T>(group: string, dec: Decoder<T>, after: string, at?: number): GroupSnapshot<T> {
    return this.reader.openSnapshot(group, dec, after, at);
  }

  /** Every key that starts with `prefix`, expired-but-unswept ones included, in no order: Reader.keys. */
  keys(prefix = ''): Generator<string, void, undefined> {
    return this.reader.keys(prefix);
  }

  /** Every key outside any group (the top-level objects), expired-but-unswept ones included, in no order. */
  topKeys(): Generator<string, void, undefined> {
    return this.reader.keys('', false);
  }

  /** Up to `limit` live keys of a group above `after`, in key order (`bare`: without the group's prefix): Reader.groupKeys. */
  groupKeys(group: string, after: string, limit: number, at?: number, bare = false): string[] {
    return this.reader.groupKeys(group, after, limit, at, bare);
  }

  /** Number of live keys in a group (expired-but-unswept ones included). */
  groupSize(group: string): number {
    return this.keydir.groupMembers(group)?.size ?? 0;
  }

  /** How many current keys carry an expiry (0: nothing in the directory can expire). */
  get expiringKeys(): number {
    return this.keydir.expiringCount;
  }

  // ---- expiry (sweeper.ts), compaction, feed, backup ----------------------

  /** Removes expired keys from the directory in slices that yield between them. */
  sweep(): Promise<void> {
    return this.sweeper.sweep();
  }

  /**
   * Called for each key the expiry sweep (or compaction) removes because its
   * ttl ended, with the version that expired and its value on demand. Keys
   * replaced or deleted after their expiry but before a sweep are not reported.
   */
  set onExpire(fn: ExpireHook | undefined) {
    this.keydir.onExpire = fn;
    this.core.onExpire = fn;
  }

  /**
   * Rewrites, by compaction passes, every segment not sealed under the
   * current key (plain ones, and those under old keys), except the active
   * one, which at open is always a new segment under the current key.
   * Resolves to the number of segments still needing another key (0 unless a
   * pass failed, which is logged).
   */
  async rekey(): Promise<number> {
    if (this.core.keyring === undefined) return 0;
    const left = (): number => this.core.segments.filter((s) => s !== this.core.active && this.compactor.needsRewrite(s)).length;
    while (left() > 0) {
      if (!(await this.compactor.maybeRun(true))) break;
    }
    return left();
  }

  /**
   * Starts now the compression (recode.ts) of every segment still waiting out
   * the hint delay, and resolves once every segment waiting to be compressed
   * has been, or has failed (tests, benchmarks).
   */
  recodesDone(): Promise<void> {
    this.hints.hurry();
    return this.compactor.recodesDone();
  }

  /** Runs one compaction pass now if there is a run worth compacting (or any, with force). */
  compact(force = false): Promise<boolean> {
    return this.compactor.maybeRun(force);
  }

  /** Replays the committed batches in (after, upto] from the log: feed.ts. */
  replay(after: number, upto: number, visit: BatchVisitor): Promise<boolean> {
    return replay(this.fs, this.core.segments, after, upto, visit);
  }

  /** Batches up to this sequence number may have lost entries to compaction (see replay). */
  replayFloor(): number {
    return replayFloor(this.core.segments);
  }

  /** Every segment file opened now and cut at its current length, for an online backup: backup-files.ts. */
  snapshotFiles(): BackupFile[] {
    if (this.writer.closed) throw new EngineClosedError();
    return snapshotFiles(this.core.segments);
  }

  stats(): EngineStats {
    let live = 0;
    let dead = 0;
    for (const s of this.core.segments) {
      live += s.live;
      dead += s.dead(s.headerSize);
    }
    return {
      keys: this.keydir.size,
      topLevelKeys: this.keydir.ungroupedSize,
      liveBytes: live,
      deadBytes: dead,
      segments: this.core.segments.length,
      gcState: this.compactor.state,
      cacheBytes: this.keydir.cacheBytes,
      nextSeq: this.writer.nextSeq,
    };
  }

  /**
   * What the directory holds, counted and named: "102 keys: 26 top-level
   * keys, one per object (what /health reports as key_count), and 76 inside
   * groups (40 list items, 30 set members, 6 table rows)". The open logs it;
   * a restore reports it.
   */
  describeKeys(): string {
    const k = this.keydir;
    const groups = k.groupedSizes();
    const noun = this.groupNoun;
    const parts = groups.map(([letter, n]) => (noun === undefined ? `${n} in groups '${letter}'` : `${n} ${noun(letter)}`));
    const inside = `${k.size - k.ungroupedSize} inside groups${parts.length === 0 ? '' : ` (${parts.join(', ')})`}`;
    return `${plural(k.size, 'key')}: ${plural(k.ungroupedSize, 'top-level key')}, one per object (what /health reports as key_count), and ${inside}`;
  }

  // ---- shutdown ------------------------------------------------------------

  /** Flushes, syncs and closes every file. Writes after this reject. */
  async close(): Promise<void> {
    if (this.writer.closed) return;
    this.writer.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.hints.stop();
    await this.writer.drain();
    await this.compactor.stop();
    await this.hints.wait();
    try {
      const active = this.core.active as typeof this.core.active | undefined;
      if (active !== undefined && active.fd >= 0) {
        await this.writer.cutDirtyTail();
        await this.fs.fdatasync(active.fd);
      }
    } finally {
      await this.closeFiles();
      unlockDirectory(this.core.dir);
    }
  }

  private async closeFiles(): Promise<void> {
    for (const s of this.core.segments) {
      s.retired = true;
      await s.closeQuietly(this.fs);
    }
  }
}

function unlogged(): void {
  // No logger given: the caller (a test, a tool that reports on its own) asked for none.
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
