/**
 * The log store's one way to change anything: `atomically(load, decide)`.
 *
 * The engine is one writer on one thread (docs/engine.md): a batch computed
 * from state read in the same synchronous run cannot interleave with another
 * request. So atomicity is a matter of structure: `load` names what must be in
 * memory and may be awaited; `decide` is synchronous (its type forbids a
 * promise), reads through a Tx and returns its result after queueing writes
 * on the Tx; the Tx's batch goes to the engine in the same turn, as one
 * batch. If `decide` meets a value that is not in memory after all (evicted,
 * or a row group larger than the cache), the read it needs is started, the
 * decision is thrown away (nothing was written) and run again once the value
 * is there. Nothing else in the log store calls engine.write.
 */
import { type Decoder, type Engine, groupOf, type GroupSnapshot, MISS, Op, type Seen, type VersionRef, type WriteOp } from '../../engine/index.js';
import { markDecided, refusedNow } from '../decided.js';
import { StoreError } from '../errors.js';
import { fromEngine } from './errors.js';
import { type RowMemo, RowWrites } from './row-writes.js';

export type { RowMemo };

/**
 * Thrown inside `decide` when a value must be read from disk first.
 * `progress` is false when the same value had been read for this decision
 * already and went stale (a write or a rollback since): only such restarts
 * count against the limit, so a transaction touching many cold keys is not
 * refused for being cold.
 */
class NeedsRead {
  constructor(
    readonly promise: Promise<void>,
    readonly progress: boolean,
  ) {}
}

/**
 * Values read from disk for a decision that had to restart. One stays valid
 * while nothing has changed the store since its read began: no write (the
 * engine's count of writes: a write that joins a batch takes no new
 * sequence number) and no rolled-back write.
 */
class Fetched {
  /**
   * Allocated by the first value read from disk: a decision served from
   * memory needs none. `writes` and `rollbacks`: the engine's counts when the
   * read began.
   */
  private values: Map<string, { writes: number; rollbacks: number; v: unknown }> | undefined;
  constructor(private readonly engine: Engine) {}

  lookup(key: string): { v: unknown } | undefined {
    if (this.values === undefined) return undefined;
    const f = this.values.get(key);
    return f !== undefined && f.writes === this.engine.writes && f.rollbacks === this.engine.rollbacks ? f : undefined;
  }

  need(key: string, read: Promise<unknown>): NeedsRead {
    const writes = this.engine.writes;
    const rollbacks = this.engine.rollbacks;
    const progress = this.values?.has(key) !== true;
    return new NeedsRead(
      read.then((v) => {
        (this.values ??= new Map()).set(key, { writes, rollbacks, v });
      }),
      progress,
    );
  }

  /** One restart for many values (an index lookup whose rows are on disk), not one per value. */
  needAll(keys: readonly string[], reads: ReadonlyArray<Promise<unknown>>): NeedsRead {
    const writes = this.engine.writes;
    const rollbacks = this.engine.rollbacks;
    const progress = keys.some((k) => this.values?.has(k) !== true);
    return new NeedsRead(
      Promise.all(reads).then((vs) => {
        const values = (this.values ??= new Map());
        for (let i = 0; i < keys.length; i++) values.set(keys[i], { writes, rollbacks, v: vs[i] });
      }),
      progress,
    );
  }
}

/** A version of a key written earlier in the same decision; null = deleted. */
interface Slot {
  memo: unknown;
  exp: number;
}

/**
 * A decision's view of the store: the engine's state plus the writes queued
 * so far in this decision, so a later step sees the effect of an earlier one
 * (a transaction's INSERT then UPDATE of the same row).
 */
export class Tx {
  readonly ops: WriteOp[] = [];
  private keys: Map<string, Slot | null> | undefined;
  /** The table rows this decision wrote (row-writes.ts); allocated by its first row write or group drop. */
  private rowWrites: RowWrites | undefined;
  /** The groups this decision's ops write into, and how many ops were looked at for them (groupKeys). */
  private written: { groups: Set<string>; upTo: number } | undefined;

  /** Run right after this decision's batch enters the engine (see CommitObserver). */
  commitHooks: Array<(written: Promise<void>) => void> | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly fetched: Fetched,
    readonly now: number,
  ) {}

  /** Runs `fn` once this decision's batch is in the engine; never for a decision that is thrown away. */
  onCommit(fn: (written: Promise<void>) => void): void {
    (this.commitHooks ??= []).push(fn);
  }

  /** Writes the engine has undone so far: with versions, tells a reader across several decisions that nothing changed. */
  get rollbacks(): number {
    return this.engine.rollbacks;
  }

  /**
   * The sequence number the batch of this decision will get (fences, table
   * incarnations). Asking closes the batch that writes of this run were
   * joining: this decision's batch then starts a new one, whose number this is.
   */
  get seq(): number {
    return this.engine.nextBatchSeq();
  }

  /**
   * The stored key `get` looked at last, and what it saw (live or not, its
   * version and expiry): a decision that reads a key and then asks its
   * version or expiry, or whether the batch creates it (names.ts), gets the
   * answer without searching the directory again. Nothing changes the
   * directory while a decision runs.
   */
  private seenKey: string | undefined;
  private seenLive = false;
  private readonly seen: Seen = { version: 0, exp: 0 };

  get<T>(key: string, dec: Decoder<T>): T | undefined {
    const o = this.keys?.get(key);
    if (o !== undefined) return o === null ? undefined : (o.memo as T);
    // Forgotten first: a decoder that throws leaves no memo that pairs another key with this one's version.
    this.seenKey = undefined;
    const v = this.engine.peek(key, dec, this.now, this.seen);
    this.seenKey = key;
    this.seenLive = v !== undefined;
    if (v !== MISS) return v;
    const f = this.fetched.lookup(key);
    if (f !== undefined && this.engine.has(key, this.now)) return f.v as T | undefined;
    throw this.fetched.need(key, this.engine.read(key, dec));
  }

  /**
   * Values of several keys (absent ones undefined): when some are on disk,
   * they are all read before the decision restarts, not one per restart.
   */
  getMany<T>(keys: readonly string[], dec: Decoder<T>): Array<T | undefined> {
    const out: Array<T | undefined> = new Array(keys.length);
    let missing: string[] | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const o = this.keys?.get(key);
      if (o !== undefined) {
        out[i] = o === null ? undefined : (o.memo as T);
        continue;
      }
      const v = this.engine.peek(key, dec, this.now);
      if (v !== MISS) {
        out[i] = v;
        continue;
      }
      const f = this.fetched.lookup(key);
      if (f !== undefined && this.engine.has(key, this.now)) out[i] = f.v as T | undefined;
      else (missing ??= []).push(key);
    }
    if (missing !== undefined)
      throw this.fetched.needAll(
        missing,
        missing.map((k) => this.engine.read(k, dec)),
      );
    return out;
  }

  /** Whether this decision has queued a write (a key, a row, a group drop): its view is then not only the stored one. */
  get wrote(): boolean {
    return this.ops.length > 0;
  }

  /**
   * The cached value behind a kept reference (Engine.peekRef), or MISS when
   * it must be read by key: the reference is stale, the value is not cached,
   * or this decision has written (its own writes must come first, and they
   * are found by key).
   */
  peekRef<T>(ref: VersionRef, dec: Decoder<T>): T | typeof MISS {
    return this.wrote ? MISS : this.engine.peekRef(ref, dec, this.now);
  }

  /**
   * A reference to the live stored version of `key` (Engine.ref), for a
   * caller that keeps it; undefined when no stored version is live. Only
   * what is stored: this decision's own writes are not behind it, and
   * peekRef does not read through it in a decision that has written.
   */
  ref(key: string): VersionRef | undefined {
    return this.engine.ref(key, this.now);
  }

  /**
   * The version of a key as this decision sees it (docs/format.md, "Sequence
   * numbers"): this batch's seq for a key written earlier in the decision,
   * undefined when absent.
   */
  version(key: string): number | undefined {
    const o = this.keys?.get(key);
    if (o !== undefined) return o === null ? undefined : this.seq;
    if (key === this.seenKey) return this.seenLive ? this.seen.version : undefined;
    return this.engine.versionOf(key, this.now);
  }

  has(key: string): boolean {
    const o = this.keys?.get(key);
    if (o !== undefined) return o !== null;
    return this.stored(key);
  }

  /** Whether a live version of `key` is stored, whatever this decision wrote. */
  stored(key: string): boolean {
    if (key === this.seenKey) return this.seenLive;
    return this.engine.has(key, this.now);
  }

  /** Absolute expiry of a live key (0 = never); 0 when absent. */
  expiry(key: string): number {
    const o = this.keys?.get(key);
    if (o !== undefined) return o === null ? 0 : o.exp;
    if (key === this.seenKey) return this.seenLive ? (this.seen.exp ?? 0) : 0;
    return this.engine.expiresAt(key, this.now) ?? 0;
  }

  put<T>(key: string, value: Buffer, memo: T, decoder: Decoder<T>, exp: number): void {
    this.ops.push({ op: Op.Put, key, value, expiresAt: exp, memo, decoder: decoder as Decoder<unknown> });
    // An already expired value is invisible at once (the engine does the same).
    (this.keys ??= new Map()).set(key, exp !== 0 && exp <= this.now ? null : { memo, exp });
  }

  del(key: string): void {
    this.ops.push({ op: Op.Del, key, value: undefined, expiresAt: 0 });
    (this.keys ??= new Map()).set(key, null);
  }

  /** Deletes every key of a group (a table incarnation's rows) in one entry. */
  dropGroup(group: string): void {
    this.ops.push({ op: Op.DropGroup, key: group, value: undefined, expiresAt: 0 });
    (this.rowWrites ??= new RowWrites()).dropGroup(group);
  }

  // ---- table rows: queued here, remembered by RowWrites so later steps see them

  /** `old` is the row as stored before this decision (absent for an insert). */
  putRow(group: string, key: string, memo: RowMemo, decoder: Decoder<RowMemo>, exp: number, old?: Record<string, unknown>): void {
    this.ops.push({ op: Op.Put, key, value: Buffer.from(memo.json), expiresAt: exp, memo, decoder: decoder as Decoder<unknown> });
    (this.rowWrites ??= new RowWrites()).put(group, memo, old);
  }

  delRow(group: string, key: string, id: number, old: Record<string, unknown>): void {
    this.ops.push({ op: Op.Del, key, value: undefined, expiresAt: 0 });
    (this.rowWrites ??= new RowWrites()).del(group, id, old);
  }

  /**
   * One row of a group by its t_id (`key` is its key in the group), as this
   * decision sees it: a row it wrote or removed first, else the stored one.
   */
  row(group: string, key: string, id: number, dec: Decoder<RowMemo>): RowMemo | undefined {
    const o = this.rowWrites?.slot(group, id);
    if (o !== undefined) return o === null ? undefined : o;
    return this.get(key, dec);
  }

  /** The version of one row as this decision sees it (as `version` does for a key); undefined when absent. */
  rowVersion(group: string, key: string, id: number): number | undefined {
    const o = this.rowWrites?.slot(group, id);
    if (o !== undefined) return o === null ? undefined : this.seq;
    return this.engine.versionOf(key, this.now);
  }

  /** Rows this decision changed, by group: t_id → new version (null = removed). Undefined when none. */
  get rowChanges(): ReadonlyMap<string, ReadonlyMap<number, RowMemo | null>> | undefined {
    return this.rowWrites?.changes;
  }

  /** The stored version of a row this decision changed; undefined when it inserted the row. */
  oldRow(group: string, id: number): Record<string, unknown> | undefined {
    return this.rowWrites?.oldRow(group, id);
  }

  /**
   * Live stored keys of a group above `after` ('' = from the first), at most
   * `limit`, in key order: a collection's members (collections.ts). Only
   * what is stored, so it refuses (throws) once this decision has written
   * into the group: a listing that silently left out the decision's own
   * writes would be wrong. A decision lists a group before it writes to it;
   * writes to other keys first are fine. `bare`: the keys without the
   * group's prefix (the member keys the engine holds).
   */
  groupKeys(group: string, after: string, limit: number, bare = false): string[] {
    if (this.ops.length > 0 && this.wroteInto(group)) throw new Error(`a decision listed group ${JSON.stringify(group)} after writing into it`);
    return this.engine.groupKeys(group, after, limit, this.now, bare);
  }

  /**
   * Whether an op of this decision writes into `group` (a key of it, or a
   * drop of it). The ops are looked at once each, however many listings
   * ask, and only by a decision that lists after writing.
   */
  private wroteInto(group: string): boolean {
    const w = (this.written ??= { groups: new Set(), upTo: 0 });
    for (; w.upTo < this.ops.length; w.upTo++) {
      const op = this.ops[w.upTo];
      const g = op.op === Op.DropGroup ? op.key : groupOf(op.key);
      if (g !== undefined) w.groups.add(g);
    }
    return w.groups.has(group);
  }

  /** Keys in a group (expired-but-unswept ones included): decides whether an answer is large. */
  groupSize(group: string): number {
    return this.engine.groupSize(group);
  }

  /**
   * The group's live rows at this instant, to be read after the decision in
   * batches (src/engine/snapshot.ts); the caller releases it. Only for
   * read-only decisions, taken as their last step: it does not see this
   * decision's own writes, and a decision that restarted after taking it
   * would leave it pinned.
   */
  snapshot<T>(group: string, dec: Decoder<T>): GroupSnapshot<T> {
    if (this.ops.length > 0) throw new Error('snapshot in a decision that writes');
    return this.engine.snapshot(group, dec, this.now);
  }

  /** An empty snapshot of a group at this decision's instant, filled in later decisions (GroupSnapshot.copyMore). */
  openSnapshot<T>(group: string, dec: Decoder<T>, after: string): GroupSnapshot<T> {
    if (this.ops.length > 0) throw new Error('snapshot in a decision that writes');
    return this.engine.openSnapshot(group, dec, after, this.now);
  }

  /** Live rows of a group in t_id order, as this decision sees them. */
  rows(group: string, dec: Decoder<RowMemo>): RowMemo[] {
    // A group read for an earlier attempt is used before scanning again: a
    // group larger than the cache would otherwise start a new full read (and
    // drop its promise) on every attempt.
    const f = this.fetched.lookup(group);
    let base: RowMemo[];
    if (f !== undefined) {
      base = f.v as RowMemo[];
    } else {
      const scanned = this.engine.scan(group, dec, this.now);
      if (scanned instanceof Promise) throw this.fetched.need(group, scanned);
      base = scanned;
    }
    return this.rowWrites === undefined ? base : this.rowWrites.over(group, base);
  }
}

const rejectFromEngine = (err: unknown): never => {
  throw fromEngine(err);
};

/** A synchronous decision: a promise here would let another request interleave. */
export type Decide<T> = (tx: Tx) => T extends PromiseLike<unknown> ? never : T;

/**
 * How many times a decision may restart to read again a value that went
 * stale while it was read, before giving up; and, as a backstop, how many
 * restarts in all.
 */
const MAX_STALE_RESTARTS = 32;
const MAX_RESTARTS = 100_000;

/**
 * Told of every batch as it enters the engine (the directory already shows
 * it), with the promise of its write: views kept beside the directory (the
 * listing order, secondary indexes) change in the same turn as the data.
 */
export type CommitObserver = (tx: Tx, written: Promise<void>) => void;

/**
 * Run on a finished decision before its batch goes to the engine: may add
 * writes that follow from the decision's own (index entries of changed rows),
 * so they are part of the same atomic batch.
 */
export type BatchExtender = (tx: Tx) => void;

export class Atomic {
  private readonly observers: CommitObserver[] = [];
  private readonly extenders: BatchExtender[] = [];
  /** Whose writes the decisions being run may join in one batch (together); undefined outside it. */
  private owner: object | undefined = undefined;

  constructor(
    private readonly engine: Engine,
    private readonly now: () => number,
  ) {}

  observe(o: CommitObserver): void {
    this.observers.push(o);
  }

  extend(e: BatchExtender): void {
    this.extenders.push(e);
  }

  /**
   * Runs `run` with the decisions it takes at once committed as `owner`'s:
   * the engine may put them in the batch of `owner`'s previous write in the
   * same synchronous run (Store.together, GroupWriter.write). A decision that must read from
   * disk first commits later, on its own.
   */
  together<O extends object, A, T>(owner: O, run: (owner: O, arg: A) => T, arg: A): T {
    const outer = this.owner;
    this.owner = owner;
    try {
      return run(owner, arg);
    } finally {
      this.owner = outer;
    }
  }

  /**
   * Makes what `load` reads resident (awaiting reads as needed), then runs
   * `decide` synchronously and writes its batch. `load` is an optimisation: a
   * decision that meets a missing value restarts after reading it.
   */
  atomically<T>(load: ((tx: Tx) => void) | undefined, decide: Decide<T>): Promise<T> {
    // The first attempt, which nearly every decision needs alone (what it
    // reads is in memory), runs here without run()'s async machinery; its
    // promise says so (decided.ts).
    const fetched = new Fetched(this.engine);
    const tx = new Tx(this.engine, fetched, this.now());
    let result: T;
    try {
      result = this.decideIn(tx, load, decide);
    } catch (err) {
      if (!(err instanceof NeedsRead)) return refusedNow(fromEngine(err));
      return this.run(fetched, err.progress ? 0 : 1, load, decide, err);
    }
    if (tx.ops.length === 0) return markDecided(Promise.resolve(result));
    let written: Promise<void>;
    try {
      written = this.commit(tx, this.owner);
    } catch (err) {
      return Promise.reject(fromEngine(err));
    }
    return markDecided(written.then(() => result, rejectFromEngine));
  }

  /** One attempt of a decision: what it loads, the decision, then the extenders' additions to its batch. */
  private decideIn<T>(tx: Tx, load: ((tx: Tx) => void) | undefined, decide: Decide<T>): T {
    if (load !== undefined) load(tx);
    const result = decide(tx) as T;
    for (let i = 0; i < this.extenders.length; i++) this.extenders[i](tx);
    return result;
  }

  /** The decision's batch into the engine, its observers and hooks told, in the same turn; settles when the log has it. */
  private commit(tx: Tx, owner?: object): Promise<void> {
    const written = this.engine.write(tx.ops, owner);
    for (let i = 0; i < this.observers.length; i++) this.observers[i](tx, written);
    if (tx.commitHooks !== undefined) for (const f of tx.commitHooks) f(written);
    return written;
  }

  /** The attempts after the first, which met a value on disk (`first`): read it, decide again. */
  private async run<T>(fetched: Fetched, stale: number, load: ((tx: Tx) => void) | undefined, decide: Decide<T>, first: NeedsRead): Promise<T> {
    try {
      await first.promise;
    } catch (readErr) {
      throw fromEngine(readErr);
    }
    for (let attempt = 1; attempt < MAX_RESTARTS; attempt++) {
      const tx = new Tx(this.engine, fetched, this.now());
      let result: T;
      try {
        result = this.decideIn(tx, load, decide);
      } catch (err) {
        if (!(err instanceof NeedsRead)) throw fromEngine(err);
        if (!err.progress && ++stale >= MAX_STALE_RESTARTS) break;
        try {
          await err.promise;
        } catch (readErr) {
          throw fromEngine(readErr);
        }
        continue;
      }
      if (tx.ops.length > 0) {
        try {
          await this.commit(tx);
        } catch (err) {
          throw fromEngine(err);
        }
      }
      return result;
    }
    throw new StoreError('unavailable', 'data this request reads from disk kept changing while it was read; try again');
  }

  /** A read of several values that must come from one point in time (no write). */
  read<T>(decide: Decide<T>): Promise<T> {
    return this.atomically(undefined, decide);
  }

  /**
   * `read`, answered synchronously when everything the decision reads is in
   * memory (the common case): no promise, so the HTTP layer can answer in the
   * same call, as GET of a cached value does. When a value must come from
   * disk, or the decision fails, the answer is a promise as from `read`
   * (a failure is a rejection, never a throw). A read decision writes nothing.
   */
  readNow<T>(decide: Decide<T>): T | Promise<T> {
    const fetched = new Fetched(this.engine);
    const tx = new Tx(this.engine, fetched, this.now());
    let result: T;
    try {
      result = decide(tx) as T;
    } catch (err) {
      if (!(err instanceof NeedsRead)) return Promise.reject(err);
      // Continue the ordinary way once the read this attempt started is done.
      return this.run(fetched, 0, undefined, decide, err);
    }
    if (tx.ops.length > 0) return Promise.reject(new Error('a read decision queued writes'));
    return result;
  }
}
