/**
 * The model: the four namespaces over one engine. This is what the HTTP
 * layer talks to; it knows nothing of requests or statuses.
 */
import { Engine, type EngineOptions } from '../engine/index.js';
import { Locks } from './locks.js';
import { Records } from './records.js';
import { Tables } from './tables.js';
import { Variants } from './variants.js';

export interface StoreStats {
  /** Tables + records + variants + held locks. */
  keyCount: number;
  gcState: 0 | 1 | 2;
  /** Logical bytes of live stored data. */
  liveBytes: number;
}

export class Database {
  readonly tables: Tables;
  readonly records: Records;
  readonly variants: Variants;
  readonly locks: Locks;

  private constructor(readonly engine: Engine, readonly now: () => number) {
    this.tables = new Tables(engine, now);
    this.records = new Records(engine, now);
    this.variants = new Variants(engine, now);
    this.locks = new Locks(engine, now);
  }

  static async open(opts: EngineOptions & { now: () => number }): Promise<Database> {
    return new Database(await Engine.open(opts), opts.now);
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
