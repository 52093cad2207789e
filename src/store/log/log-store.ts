/**
 * The embedded log store: the four namespaces and transactions over one
 * engine, every change through one Atomic (atomic.ts).
 */
import { Engine, type EngineOptions, type Logger } from '../../engine/index.js';
import type { Holding, ListKind, ListOptions, StorageMetrics, Store, StoreStats, Sync, Transaction } from '../store.js';
import { Atomic } from './atomic.js';
import { backupStream } from './backup.js';
import { IndexRegistry } from './indexes.js';
import { holders, list } from './listing.js';
import { NameView } from './names.js';
import { ENTRY_PREFIX, groupNoun, isTopLevel, STAGED_PREFIX } from './keys.js';
import { dropUnfinished } from './staged.js';
import { LogLocks } from './locks.js';
import { LogRecords } from './records.js';
import { LogTables, rowDecoder, tableMeta } from './tables.js';
import { transact } from './txns.js';
import { LogVariants } from './variants.js';
import { LogChanges } from './changes.js';
import { LogLists } from './lists.js';

/** Restores a backup into a new data directory, without a server (`pithos restore`). */
export { restoreBackup } from './backup.js';
/** The keys a restore of an encrypted backup needs, read as the server reads them. */
export { loadKeyring } from '../../engine/index.js';
import { LogSets } from './sets.js';
import { LogZsets } from './zsets.js';

export class LogStore implements Store {
  readonly tables: LogTables;
  readonly records: LogRecords;
  readonly variants: LogVariants;
  readonly locks: LogLocks;
  readonly changes: LogChanges;
  readonly lists: LogLists;
  readonly sets: LogSets;
  readonly zsets: LogZsets;
  readonly answersAtOnce = true;

  private readonly atomic: Atomic;
  /** Every top-level name in byte order (names.ts). */
  readonly names: NameView;
  readonly indexes: IndexRegistry;

  private constructor(
    readonly engine: Engine,
    now: () => number,
    topLevel: string[],
    log: Logger,
  ) {
    this.atomic = new Atomic(engine, now);
    this.names = new NameView(engine, topLevel);
    // The view hears of every write first (no other observer can keep it from hearing)...
    this.atomic.observe(this.names.onCommit);
    this.indexes = new IndexRegistry(engine, this.atomic, tableMeta, rowDecoder, log);
    // ...and extends batches last: once it has added a name, nothing can stop the write
    // (a later extender could ask for a read and restart the decision).
    this.atomic.extend(this.names.beforeWrite);
    this.tables = new LogTables(this.atomic, this.indexes);
    this.records = new LogRecords(engine, this.atomic);
    this.variants = new LogVariants(engine, this.atomic);
    this.locks = new LogLocks(this.atomic);
    this.changes = new LogChanges(engine);
    this.lists = new LogLists(this.atomic);
    this.sets = new LogSets(this.atomic);
    this.zsets = new LogZsets(engine, this.atomic);
  }

  together<O extends object, A, T>(owner: O, run: (owner: O, arg: A) => T, arg: A): T {
    return this.atomic.together(owner, run, arg);
  }

  static async open(opts: EngineOptions & { now: () => number }): Promise<LogStore> {
    const engine = await Engine.open({ groupNoun, ...opts });
    // The views kept beside the directory (docs/query.md) need the top-level keys
    // and the index entries (the groups `i\0…`), not the rows and collection elements.
    const topLevel: string[] = [];
    for (const k of engine.topKeys()) if (isTopLevel(k)) topLevel.push(k);
    const entries = Array.from(engine.keys(ENTRY_PREFIX));
    const s = new LogStore(engine, opts.now, topLevel, opts.log ?? noLog);
    await s.indexes.load(entries);
    // Whole-collection writes the last process did not finish (staged.ts): their partial elements go.
    const dropped = await dropUnfinished(s.atomic, Array.from(engine.keys(STAGED_PREFIX)));
    if (dropped > 0) (opts.log ?? noLog)('info', `dropped the partial elements of ${dropped} whole-collection write(s) not finished before the last stop`);
    return s;
  }

  list(kind: ListKind, opts: ListOptions): Sync<string> {
    return list(this.engine, this.atomic, this.names, kind, opts);
  }

  holders(name: string, kinds: readonly ListKind[]): Sync<Array<Holding | null>> {
    return holders(this.atomic, name, kinds);
  }

  transact(txn: Transaction): Promise<string> {
    return transact(this.atomic, txn, this.zsets.indexes);
  }

  storageMetrics(): StorageMetrics {
    return this.engine;
  }

  backup(): AsyncIterable<Buffer> {
    return backupStream(this.engine);
  }

  async stats(): Promise<StoreStats> {
    // Sweep first so expired objects are not counted.
    await this.engine.sweep();
    const s = this.engine.stats();
    return { keyCount: s.topLevelKeys, gcState: s.gcState, liveBytes: s.liveBytes };
  }

  close(): Promise<void> {
    this.lists.stopWaiting();
    this.indexes.close();
    return this.engine.close();
  }
}

function noLog(): void {
  // Without a logger (engine tests), background failures go unreported, as the engine's own do.
}
