/**
 * The storage boundary (docs/architecture.md): everything the HTTP layer may
 * ask of a store, with typed inputs and typed failures (StoreError). The
 * embedded log store (src/store/log/) implements it; a shared database store
 * can implement it too, and the same black-box suite then runs on both.
 *
 * Inputs arrive validated for shape by the caller (names, ttl ranges, field
 * types); a store checks what depends on stored state. Results that clients
 * receive as JSON are handed over as JSON text, so a cached value can be
 * answered without parsing or serialising it again. Reads that a store can
 * serve from memory may return their text synchronously (`Sync<T>`): that is
 * the measured fast path of GET (docs/benchmarks.md), worth one union type.
 */
import type { MessageBus } from './bus.js';
import type { ScalarInput, VType } from './variant.js';
import type { SetOp, ZMode, ZRange } from './collection.js';
import type { Row } from './wheres.js';
import type { ChangeKind, ListKind } from './kinds.js';

export type Sync<T> = T | Promise<T>;
/**
 * JSON text of an answer: one string, or, for an answer too large to build
 * in one synchronous step, its pieces in order (docs/query.md, "Large
 * answers"). Each step of the iteration does a bounded amount of work (one
 * batch of rows) and may give '' when it produced no text; the consumer
 * yields to the event loop between steps, and must call `return()` when it
 * stops early so the store releases what the answer holds.
 */
export type Text = string | AsyncIterable<string>;
export type Wheres = Record<string, unknown>;

export interface StoreStats {
  /** Tables + records + variants + held locks. */
  keyCount: number;
  /** Garbage collector: 0 never ran, 1 running, 2 idle. */
  gcState: 0 | 1 | 2;
  /** Logical bytes of live stored data. */
  liveBytes: number;
}

/**
 * A conditional write (docs/api.md, "Versions and conditional writes"):
 * `ifVersion` writes only when the object's current version equals it;
 * `ifAbsent` only when the object does not exist. At most one is set. A
 * failed condition is a StoreError('precondition') and writes nothing;
 * src/store/versions.ts words it the same way for every store.
 */
export interface Precondition {
  ifVersion?: number;
  ifAbsent?: boolean;
}

/**
 * Filled by reads with the version of the value they return (the sequence
 * number of its last write), so a caller gets both from one lookup without
 * a result object per read; a caller on the hot path passes one it reuses.
 */
export interface VersionOut {
  version: number;
}

export interface TableStore {
  create(name: string, ttl: number): Promise<void>;
  /** Resolves to the new row's t_id. */
  insert(name: string, row: Row): Promise<number>;
  /** Every row as JSON text: an object from t_id to row. */
  all(name: string): Promise<Text>;
  /** Matching rows as JSON text: an array in t_id order (synchronously when served from memory). */
  query(name: string, wheres: Wheres): Sync<Text>;
  patch(name: string, wheres: Wheres, sets: Row): Promise<void>;
  deleteRows(name: string, wheres: Wheres): Promise<void>;
  drop(name: string): Promise<void>;
  /** Sets the remaining lifetime (0 = none) of the table and so of every row (O(rows)). */
  expire(name: string, ttl: number): Promise<void>;

  // ---- Listing and indexes (docs/api.md "Listing, paging and indexes") ----

  /**
   * Rows as GET /tables/<name> returns them (an object from t_id to row, as
   * JSON text), at most `limit` of them with t_id > `after`.
   */
  page(name: string, limit: number | undefined, after: number | undefined): Promise<Text>;
  /**
   * A shaped query (RowQuery): JSON text of an array of rows (or of
   * {"t_id", "row"} pairs with `withIds`), or {"count": n} with `count`.
   * `query(name, wheres)` is the same as `find(name, {wheres})`, kept as the
   * measured fast path of the plain form.
   */
  find(name: string, q: RowQuery): Sync<Text>;
  /**
   * Declares an index on a top-level field or dotted path and starts building
   * it; resolves once the declaration is durable (the build continues in the
   * background; queries scan until it is ready). 409 when it exists.
   */
  createIndex(name: string, field: string): Promise<void>;
  /** The table's indexes, JSON text of [{"field", "ready"}] in field order. */
  listIndexes(name: string): Promise<string>;
  /** 404 when there is no such index. */
  dropIndex(name: string, field: string): Promise<void>;

  // ---- One row (docs/api.md "One row by `t_id`"): 404 for a missing table or row ----

  /** The row as JSON text; `out` receives its version (synchronously when served from memory). */
  getRow(name: string, id: number, out?: VersionOut): Sync<string>;
  /** Writes `row` in place of the existing row `id` (never creates one). */
  replaceRow(name: string, id: number, row: Row, pre?: Precondition): Promise<void>;
  /** Merges `sets` into row `id` as `patch` merges, then removes the fields of `unset` (src/store/rows.ts). */
  patchRow(name: string, id: number, sets: Row, unset: readonly string[], pre?: Precondition): Promise<void>;
  deleteRow(name: string, id: number, pre?: Precondition): Promise<void>;
}

/** One key of `order`; `field` is a dotted path (as in wheres). */
export interface OrderKey {
  field: string;
  dir: 'asc' | 'desc';
}

/**
 * A row query with its paging and shaping options (docs/api.md "Paging,
 * order, projection"). Absent options mean: every row, t_id order, whole rows.
 */
export interface RowQuery {
  wheres: Wheres;
  /** At most this many rows (≥ 1). */
  limit?: number;
  /** Only rows with a greater t_id. */
  after?: number;
  /** Sort keys, first one first; t_id breaks ties; rows missing a field sort after those that have it. */
  order?: OrderKey[];
  /** Projection: only these top-level fields of each row. */
  fields?: string[];
  /** Answer {"count": n} (rows that match, after `after` and `limit`) instead of rows. */
  count?: boolean;
  /** Each row as {"t_id": n, "row": {...}}. */
  withIds?: boolean;
}

/** The kinds and their unions are declared with their table (kinds.ts). */
export type { ChangeKind, ListKind };

/**
 * A live object found by Store.holders: whether it is empty (a list, set or
 * sorted set with no elements, a record with no fields) and its remaining
 * lifetime in milliseconds (null: none).
 */
export interface Holding {
  empty: boolean;
  ttlMs: number | null;
}

/** A listing request (docs/api.md "List names"): names in byte order. */
export interface ListOptions {
  /** Only names that start with this ('' = all). */
  prefix: string;
  /** 1–1000. */
  limit: number;
  /** Only names after this one in byte order (the previous page's `next`); null = from the start. */
  after: string | null;
}

export interface RecordStore {
  /** Resolves to true when the record is new, false when it replaced one. */
  put(id: string, record: Row, ttl: number, pre?: Precondition): Promise<boolean>;
  /**
   * Merges top-level fields (a null deletes the field) and, when `ttl` is
   * given, sets the remaining lifetime (0 = none) in the same write; without
   * it the lifetime is kept. One write: the precondition guards both.
   */
  patch(id: string, sets: Row, pre?: Precondition, ttl?: number): Promise<void>;
  /** Sets the remaining lifetime (0 = none) without changing the value. */
  expire(id: string, ttl: number, pre?: Precondition): Promise<void>;
  /** The record as JSON text; `out` receives its version. */
  get(id: string, out?: VersionOut): Sync<string>;
  /** `[value]` when the record has the field, `[]` otherwise, as JSON text. */
  search(id: string, column: string): Promise<string>;
  delete(id: string): Promise<void>;
}

export interface VariantStore {
  /**
   * Creates or replaces; resolves to [created, data JSON]. A variant of
   * another type is refused (409) unless `retype`, which replaces it whatever
   * its type, as Redis's SET replaces a value (docs/redis.md).
   */
  put(name: string, value: ScalarInput, ttl: number, pre?: Precondition, retype?: boolean): Promise<[boolean, string]>;
  /**
   * `delta.text` is the delta as written; resolves to the data JSON. `type`:
   * only a variant of that type is incremented (409 otherwise).
   */
  increment(name: string, delta: ScalarInput, type?: VType): Promise<string>;
  /** Appends to a string variant, keeping its expiry (Redis APPEND); resolves to its new length in UTF-8 bytes. */
  append(name: string, text: string, pre?: Precondition): Promise<number>;
  /** The data JSON; `out` receives the variant's version. */
  get(name: string, out?: VersionOut): Sync<string>;
  /** Sets the remaining lifetime (0 = none) without changing the value. */
  expire(name: string, ttl: number): Promise<void>;
  /** `type`: only a variant of that type is deleted (409 otherwise). */
  /** `pre`: deletes only while the condition holds (412 otherwise), as a collection's delete. */
  delete(name: string, type?: VType, pre?: Precondition): Promise<void>;
}

export interface LockStore {
  /** Acquires without waiting; resolves to the data JSON ({token, fence}). */
  acquire(name: string, ttl: number, holder: string | null): Promise<string>;
  /** `ttl` 0 renews for the length given at acquire. */
  renew(name: string, token: string, ttl: number): Promise<string>;
  release(name: string, token: string): Promise<void>;
  query(name: string): Promise<string>;
}

// ---- lists (docs/api.md "Lists") -------------------------------------------------

export type ListSide = 'left' | 'right';

/** A pop (docs/api.md "Lists"): up to `count` items from `side`, maybe waiting, maybe moved to list `to`. */
export interface ListPop {
  side: ListSide;
  /** 1–1000. */
  count: number;
  /** 0: answer at once; otherwise wait up to this long for an item when there is none. */
  waitMs: number;
  /** Push each popped item onto this list (created when missing) in the same atomic step. */
  to?: string;
  toSide: ListSide;
  /** Aborted when the client has gone: a waiting pop then pops nothing. */
  gone?: AbortSignal;
}

/** One change of PATCH /lists/<name>: at most one of set, trim, remove, with or without ttl. */
export interface ListPatch {
  set?: { index: number; value: unknown };
  trim?: { start: number; stop: number };
  /** `count` > 0: the first `count` equal items from the left; < 0: from the right; 0: all. */
  remove?: { value: unknown; count: number };
  ttl?: number;
}

/**
 * A whole collection, or a range of it, read at one instant and handed over a
 * batch at a time (docs/query.md, "Large collections"): how every transport
 * answers a read of millions of elements without holding the event loop or
 * building the answer in one piece. `first` is read in the same step as
 * `count` and `version`; when it holds every element asked for, `rest` is
 * undefined (the small, common case: no iteration at all). Otherwise each
 * step of `rest` does a bounded amount of work and gives the next batch, in
 * order, of the same instant; a consumer that stops early calls `return()`
 * so the store lets go of its view (a snapshot, a database transaction).
 */
export interface Batches<B> {
  readonly first: B;
  readonly rest: AsyncIterable<B> | undefined;
}

export interface Elements<B> extends Batches<B> {
  /** The collection's size at that instant: a list's length, a set's or sorted set's count. */
  readonly count: number;
  /** Its version at that instant. */
  readonly version: number;
}

/** A batch of a sorted set's items: parallel arrays, in the order asked for. */
export interface ZBatch {
  members: string[];
  scores: number[];
}

export interface ListStore {
  /** Creates or replaces with these items; resolves to true when the list is new. */
  put(name: string, items: unknown[], ttl: number, pre?: Precondition): Promise<boolean>;
  /** JSON text {"items": [...], "length": n} of the inclusive range (Redis LRANGE indexes); `out` receives the version. */
  range(name: string, start: number, stop: number, out?: VersionOut): Sync<string>;
  /** The items of the same range as JSON texts, in batches (synchronously when served from memory); `count` is the length. */
  items(name: string, start: number, stop: number): Sync<Elements<string[]>>;
  /** Pushes one at a time in the order given; resolves to the JSON text {"length": n}. */
  push(name: string, values: unknown[], side: ListSide, create: boolean, pre?: Precondition): Promise<string>;
  /** Resolves to the JSON text {"items": [...]} once the pop (and move) is durable. */
  pop(name: string, p: ListPop, pre?: Precondition): Promise<string>;
  /** Resolves to the JSON text {"length": n}. */
  patch(name: string, p: ListPatch, pre?: Precondition): Promise<string>;
  delete(name: string, pre?: Precondition): Promise<void>;
  /**
   * Shutdown has begun: every blocking pop still waiting answers 503 at once,
   * having popped nothing, and none waits from now on (a blocking pop waits on
   * purpose, so draining must not wait it out). Idempotent; close() calls it too.
   */
  stopWaiting(): void;
}

// ---- sets and sorted sets (docs/api.md "Sets", "Sorted sets") ---------------------
// Members arrive checked (src/store/collection.ts): strings of at most 4,096
// bytes of UTF-8, scores finite. Answers are the data JSON of the endpoint.

export interface SetStore {
  /** Creates or replaces with exactly these (distinct) members; resolves true when new. */
  put(name: string, members: readonly string[], ttl: number, pre?: Precondition): Promise<boolean>;
  /** {"members", "count", "next"}: members in byte order after `after`, at most `limit` (all when undefined); `out` receives the version. */
  get(name: string, limit: number | undefined, after: string | undefined, out?: VersionOut): Promise<string>;
  /** Every member in byte order, in batches. */
  members(name: string): Promise<Elements<string[]>>;
  /** {"added", "count"}; `create` false: 404 when the set does not exist. */
  add(name: string, members: readonly string[], create: boolean, pre?: Precondition): Promise<string>;
  /** {"removed", "count"}. */
  remove(name: string, members: readonly string[], pre?: Precondition): Promise<string>;
  /** {"contains": [bool, …]} in the order asked. */
  contains(name: string, members: readonly string[]): Promise<string>;
  /** {"members", "count"}, or {"count"} when the result replaced the set `store` in the same atomic step. */
  /** With `store`, `pre` is the condition on that set, which the result replaces (as a PUT's). */
  combine(name: string, op: SetOp, others: readonly string[], store: string | undefined, pre?: Precondition): Promise<string>;
  /** `combine` without `store`: the result's members in byte order, in batches. */
  combineMembers(name: string, op: SetOp, others: readonly string[]): Promise<Batches<string[]>>;
  /** Sets the remaining lifetime (0 = none) of the set and its members. */
  expire(name: string, ttl: number, pre?: Precondition): Promise<void>;
  delete(name: string, pre?: Precondition): Promise<void>;
}

export interface ZsetStore {
  /** Creates or replaces with exactly these members and scores; resolves true when new. */
  put(name: string, pairs: ReadonlyArray<[string, number]>, ttl: number, pre?: Precondition): Promise<boolean>;
  /** {"added", "updated", "count"}. */
  add(name: string, pairs: ReadonlyArray<[string, number]>, mode: ZMode, create: boolean, pre?: Precondition): Promise<string>;
  /** {"score"}: the member's new score; 409 when it would not be finite. */
  incr(name: string, member: string, delta: number, create: boolean, pre?: Precondition): Promise<string>;
  /** {"removed", "count"}. */
  remove(name: string, members: readonly string[], pre?: Precondition): Promise<string>;
  /** {"items": [{"member", "score"}], "count"}; `out` receives the version. */
  range(name: string, q: ZRange, out?: VersionOut): Promise<string>;
  /** The items of the same range, in batches. */
  items(name: string, q: ZRange): Promise<Elements<ZBatch>>;
  /** {"score", "rank", "rev_rank"}; 404 when not a member. */
  member(name: string, member: string): Promise<string>;
  expire(name: string, ttl: number, pre?: Precondition): Promise<void>;
  delete(name: string, pre?: Precondition): Promise<void>;
}

// ---- transactions (docs/api.md "Transactions") ----------------------------------

/** `version`, on every kind but tables: the object's version must be this one (a missing object fails it), as an ETag's If-Match. */
export type Check =
  | { kind: 'variant'; name: string; exists?: boolean; value?: unknown; hasValue: boolean; version?: number }
  | { kind: 'record'; name: string; exists?: boolean; version?: number }
  | { kind: 'table'; name: string; exists?: boolean; where?: Wheres; count?: unknown }
  /** `length`: a where-value the list's length must satisfy (a missing list fails it). */
  | { kind: 'list'; name: string; exists?: boolean; length?: unknown; hasLength: boolean; version?: number }
  // Sets and sorted sets: `count` and `score` are where-values; `contains` a member that must be in the set.
  | { kind: 'set'; name: string; exists?: boolean; contains?: string; count?: unknown; hasCount: boolean; version?: number }
  | { kind: 'zset'; name: string; exists?: boolean; member?: string; score?: unknown; hasScore: boolean; count?: unknown; hasCount: boolean; version?: number };

export type Mutation =
  | { kind: 'table'; name: string; op: 'INSERT'; values: Row }
  | { kind: 'table'; name: string; op: 'UPDATE'; where: Wheres; values: Row }
  | { kind: 'table'; name: string; op: 'REMOVE'; where: Wheres }
  // One row by t_id: UPDATE and REMOVE answer {"matched": 0 or 1}; REPLACE of a missing row is 404.
  | { kind: 'table'; name: string; op: 'UPDATE_ID'; tId: number; values: Row }
  | { kind: 'table'; name: string; op: 'REMOVE_ID'; tId: number }
  | { kind: 'table'; name: string; op: 'REPLACE'; tId: number; values: Row }
  | { kind: 'variant'; name: string; op: 'ADD'; delta: ScalarInput }
  // `retype`: replace a variant of another type too (Redis's SET, inside MULTI/EXEC).
  | { kind: 'variant'; name: string; op: 'SET'; value: ScalarInput; ttl: number; retype?: boolean }
  | { kind: 'record'; name: string; op: 'PUT'; values: Row; ttl: number }
  | { kind: 'record'; name: string; op: 'DELETE' }
  | { kind: 'list'; name: string; op: 'PUSH'; values: unknown[]; side: ListSide }
  | { kind: 'list'; name: string; op: 'POP'; side: ListSide; count: number }
  // Sets and sorted sets: results as the single operations answer ({"added", "count"}, {"score"}, …).
  | { kind: 'set'; name: string; op: 'ADD' | 'REMOVE'; members: string[] }
  | { kind: 'zset'; name: string; op: 'ADD'; members: Array<[string, number]>; mode: ZMode }
  | { kind: 'zset'; name: string; op: 'INCR'; member: string; delta: number }
  | { kind: 'zset'; name: string; op: 'REMOVE'; members: string[] };

export interface Transaction {
  checks: Check[];
  mutations: Mutation[];
  /** SERIALIZABLE isolation on a shared store; every transaction is serializable on one node. */
  serializable: boolean;
}

// ---- change feed (docs/api.md "Change feed") --------------------------------------

/** One change of one object, as the change feed reports it. */
export interface Change {
  readonly type: 'put' | 'delete' | 'expire';
  readonly kind: ChangeKind;
  /** The object's name; for a table row, the table's name (and `tId` is set). */
  readonly name: string;
  /** The version the change wrote (for expire: the version that expired). */
  readonly version: number;
  readonly tId: number | undefined;
  /**
   * Where the change stands in the feed, for resuming after it: `<version>`
   * for the last change of its batch, `<version>:<i>` for the i-th (from 0)
   * before it; '' for expire, which is not in the log and is not replayed.
   */
  readonly id: string;
  /** The new value as JSON text, for puts of records, variants and rows; undefined otherwise. */
  readonly value: string | undefined;
  /** For an element operation on a collection (push, pop, add, remove, incr, …): its name; `value` then holds its arguments and result. */
  readonly op?: string;
}

/**
 * What a store offers the change feed. Batches arrive whole, in commit
 * order, once each is durable under the configured mode; expirations arrive
 * as one-change batches when the store notices them.
 */
export interface ChangeFeed {
  /** The version of the newest change the feed has published (or could replay). */
  readonly lastVersion: number;
  /**
   * `gap`, when the feed finds that changes it had not published yet are
   * gone (pruned while this node could not reach them): whoever follows live
   * must re-read, as after `reset`; `version` is where the feed goes on from.
   */
  subscribe(fn: (batch: readonly Change[]) => void, gap?: (version: number) => void): () => void;
  /**
   * Replays the batches with versions in (after, upto], in order. Resolves
   * false when the store no longer holds that range exactly (the client must
   * re-read: `reset`). `fn` may throw to stop the replay.
   */
  replay(after: number, upto: number, fn: (batch: readonly Change[]) => void): Promise<boolean>;
  /**
   * For a feed that publishes a little after commit (the shared store polls):
   * resolves once it has published up to `version`, or after `ms`, so a
   * client resuming from a version it was just told is not sent `reset`.
   */
  reach?(version: number, ms: number): Promise<void>;
}

export interface Store {
  readonly tables: TableStore;
  readonly records: RecordStore;
  readonly variants: VariantStore;
  readonly locks: LockStore;
  /** Lists (docs/api.md "Lists"). */
  readonly lists: ListStore;
  /** Sets and sorted sets (docs/api.md "Sets", "Sorted sets"). */
  readonly sets: SetStore;
  readonly zsets: ZsetStore;
  /**
   * Runs every check on the state before the first mutation, then every
   * mutation in order on one view; all of it is one atomic write, or nothing.
   * Resolves to the data JSON ({"results": [...]}).
   */
  transact(txn: Transaction): Promise<string>;
  /**
   * One page of names of a namespace: JSON text of {"items": [...], "next":
   * <name or null>}. Items are {"name", "ttl_ms"} plus "rows" for tables and
   * "held", "holder" for locks. A name that exists for the whole listing is
   * returned exactly once across pages. Synchronous when served from memory.
   */
  list(kind: ListKind, opts: ListOptions): Sync<string>;
  /**
   * For each of `kinds`, the live object named `name` in it, or null: the
   * question Redis's one keyspace asks of every key (src/redis/keyspace.ts).
   * One decision (one statement on the shared store), one lookup per kind,
   * no listing; synchronous when served from memory.
   */
  holders(name: string, kinds: readonly ListKind[]): Sync<Array<Holding | null>>;
  /**
   * Whether a read of what is in memory answers synchronously (the log
   * store). Where every read is a round trip (the shared store), a caller
   * must not issue a read only to learn whether it answers at once: the
   * answer would be thrown away, and the database asked twice.
   */
  readonly answersAtOnce: boolean;
  /**
   * Runs `run(owner, arg)` (synchronous) so that the writes it decides at once may share
   * one batch of the log with the writes `owner` decided just before, in the
   * same synchronous run: one client's pipeline of small writes is then encoded,
   * checksummed and committed as one batch, as MSET's keys are. The writes
   * keep their order and their answers; two writes of one key never share a
   * batch (their versions stay distinct). A store without such batches (the
   * shared store) runs `run` as it is. The owner and one argument are passed
   * through, so a caller's loop needs no closure per command.
   */
  together<O extends object, A, T>(owner: O, run: (owner: O, arg: A) => T, arg: A): T;
  /** The change feed; a store without one answers GET /watch with 503. */
  readonly changes?: ChangeFeed;
  /** Messages between nodes (pub/sub); a store of one node has none. */
  readonly messages?: MessageBus;
  stats(): Promise<StoreStats>;
  /**
   * A consistent snapshot of the whole data set as a byte stream (every write
   * acknowledged before the call, none queued after it), for GET /backup. A
   * store whose database has its own backup tooling leaves it out.
   */
  backup?(): AsyncIterable<Buffer>;
  /** A store over another server: whether it can serve writes now (readiness), cached; none for the embedded log. */
  availability?(): StoreAvailability;
  /**
   * The figures of the store's own storage for /metrics (the log store's
   * log, cache and compactor); a store without such storage leaves it out
   * and /metrics reports only what every store has (docs/operations.md, "Metrics").
   */
  storageMetrics?(): StorageMetrics;
  /** A store that batches writes to its database (the shared store's group commit) reports each batch here, for /metrics. */
  observeBatches?(o: BatchObserver): void;
  close(): Promise<void>;
}

/** One batch of writes sent to the database: the writes in it, and the seconds from sending it to its answer. */
export type BatchObserver = (ops: number, seconds: number) => void;

/** What a store over a database server knows of it, without asking it (docs/scaling.md, "Running highly available"). */
export interface StoreAvailability {
  /** A writable primary answered within the last few seconds, and nothing failed since. */
  ready: boolean;
  /** 'starting' until the first writable primary answered. */
  state: 'starting' | 'up' | 'down';
  /** The primary last confirmed (address:port of the server). */
  primary: string | undefined;
  /** Milliseconds since the database became unavailable (0 when up). */
  downForMs: number;
  /** Times the writable primary changed (another server, or the same one restarted). */
  failovers: number;
  /** Requests answered 503 because the database could not serve them. */
  unavailable: number;
}

/** What /metrics reads from a store that keeps its own log. */
export interface StorageMetrics {
  stats(): StorageStats;
  observe(o: StorageObserver): void;
}

/**
 * The figures of a store's own log, read at scrape time. Declared here, in the
 * store's terms, so that src/store/ names nothing of src/engine/: the log
 * store's engine has these fields (and more), and LogStore.storageMetrics
 * hands it over as it is, checked against this shape by the compiler.
 */
export interface StorageStats {
  /** Keys in the key directory (expired ones count until swept). */
  keys: number;
  /** Keys outside any group: tables, records, variants, locks. */
  topLevelKeys: number;
  liveBytes: number;
  deadBytes: number;
  segments: number;
  cacheBytes: number;
}

/** Storage events pushed to /metrics as they happen; each call must be cheap. */
export interface StorageObserver {
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
