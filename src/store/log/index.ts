/**
 * The embedded log store: the four namespaces and transactions over one
 * engine, every change through one Atomic (atomic.ts).
 */
import { Engine, type EngineOptions } from '../../engine/index.js';
import type { Store, StoreStats, Transaction } from '../store.js';
import { Atomic } from './atomic.js';
import { backupStream } from './backup.js';
import { LogLocks } from './locks.js';
import { LogRecords } from './records.js';
import { LogTables } from './tables.js';
import { transact } from './txns.js';
import { LogVariants } from './variants.js';
import { LogChanges } from './changes.js';

export class LogStore implements Store {
  readonly tables: LogTables;
  readonly records: LogRecords;
  readonly variants: LogVariants;
  readonly locks: LogLocks;
  readonly changes: LogChanges;
  private readonly atomic: Atomic;

  private constructor(readonly engine: Engine, now: () => number) {
    this.atomic = new Atomic(engine, now);
    this.tables = new LogTables(this.atomic);
    this.records = new LogRecords(engine, this.atomic);
    this.variants = new LogVariants(engine, this.atomic);
    this.locks = new LogLocks(this.atomic);
    this.changes = new LogChanges(engine);
  }

  static async open(opts: EngineOptions & { now: () => number }): Promise<LogStore> {
    return new LogStore(await Engine.open(opts), opts.now);
  }

  transact(txn: Transaction): Promise<string> {
    return transact(this.atomic, txn);
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
    return this.engine.close();
  }
}
