/**
 * Secondary indexes on table rows (docs/query.md, "Secondary indexes").
 *
 * - A definition is one engine entry in the group `x\0` (key: table U+0001
 *   field), carrying the table's expiry, written and deleted in the same
 *   batch as whatever makes it true (create, drop index, drop table).
 * - The index itself lives in memory: an ordered set of (value, t_id) for
 *   rows whose value at the path is a string, number, boolean or null, plus
 *   the t_ids whose value is an array or object (they matter only to
 *   `order`). It is rebuilt at open, in the background, from the rows.
 * - Building walks t_ids 1..next in small read decisions (BUILD_STEP rows),
 *   yielding between them; a row below the build cursor is maintained by
 *   every batch, a row above it is left to the builder, so the two never
 *   disagree. Queries use an index only once it is ready.
 * - Maintenance happens when a batch enters the engine (atomic.ts
 *   CommitObserver), from the rows the batch changed and their stored
 *   versions: O(log n) per row and index. A batch the engine fails to write
 *   is undone there; the table's indexes are then rebuilt.
 */
import { type Decoder, type Engine, Op } from '../../engine/index.js';
import { conflict, notFound } from '../errors.js';
import { compareValues } from '../query.js';
import { SortedList } from '../sorted.js';
import { lookup, MISSING, pathOf, type Row } from '../wheres.js';
import type { Atomic, Tx } from './atomic.js';
import { rowGroup, rowKey, tableKey } from './keys.js';

export type Prim = string | number | boolean | null;
export interface IxEntry {
  v: Prim;
  id: number;
}

const cmpEntry = (a: IxEntry, b: IxEntry): number => {
  const c = compareValues(a.v, b.v);
  if (c !== 0) return c;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
};

export const isPrim = (v: unknown): v is Prim =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** Rows a build step reads in one decision: small enough that no request waits behind it for long. */
const BUILD_STEP = 1000;

export class SecondaryIndex {
  readonly path: string[];
  /** JSON of the path: what compiled wheres tests carry (wheres.ts Test.key). */
  readonly key: string;
  list = new SortedList<IxEntry>(cmpEntry);
  /** t_ids whose value is an array or an object. */
  other = new Set<number>();
  /** Rows with a t_id below this are in the index. */
  cursor = 1;
  ready = false;
  dropped = false;

  constructor(readonly field: string) {
    this.path = pathOf(field);
    this.key = JSON.stringify(this.path);
  }

  covers(id: number): boolean {
    return this.ready || id < this.cursor;
  }

  add(id: number, obj: Row): void {
    const v = lookup(obj, this.path);
    if (v === MISSING) return;
    if (isPrim(v)) this.list.add({ v, id });
    else this.other.add(id);
  }

  remove(id: number, obj: Row): void {
    const v = lookup(obj, this.path);
    if (v === MISSING) return;
    if (isPrim(v)) this.list.delete({ v, id });
    else this.other.delete(id);
  }

  reset(): void {
    this.list = new SortedList<IxEntry>(cmpEntry);
    this.other = new Set();
    this.cursor = 1;
    this.ready = false;
  }

  /** t_ids of rows whose value equals `v`, ascending, above `after`. */
  eq(v: Prim, after: number, out: number[]): void {
    for (const e of this.list.ascending({ v, id: after }, true)) {
      if (compareValues(e.v, v) !== 0) break;
      out.push(e.id);
    }
  }

  /** t_ids of rows whose value lies within the bounds (same type as the bounds), in value order. */
  range(lo: Prim | undefined, loIncl: boolean, hi: Prim | undefined, hiIncl: boolean, kind: 'number' | 'string', out: number[]): void {
    const start: IxEntry = lo !== undefined ? { v: lo, id: loIncl ? -Infinity : Infinity } : { v: kind === 'number' ? -Infinity : '', id: -Infinity };
    for (const e of this.list.ascending(start, false)) {
      if (typeof e.v !== kind) break;
      if (hi !== undefined) {
        const c = compareValues(e.v, hi);
        if (c > 0 || (c === 0 && !hiIncl)) break;
      }
      out.push(e.id);
    }
  }
}

/** The indexes of one table incarnation. */
export class TableIndexes {
  readonly byKey = new Map<string, SecondaryIndex>();
  readonly byField = new Map<string, SecondaryIndex>();
  constructor(readonly name: string, readonly inc: number, readonly group: string) {}
}

interface Def {
  table: string;
  inc: number;
  field: string;
}

const DEF_GROUP = 'x\u0000';
export const defKey = (table: string, field: string): string => `${DEF_GROUP}${table}\u0001${field}`;
const defDecoder: Decoder<Def> = (buf) => JSON.parse(buf.toString('utf8')) as Def;

/** Reads a table's incarnation and next t_id in a decision; undefined when it does not exist. */
export type MetaOf = (tx: Tx, name: string) => { inc: number; next: number } | undefined;
export type RowDecoder = Decoder<{ id: number; obj: Row; json: string }>;

export class IndexRegistry {
  private readonly byTable = new Map<string, TableIndexes>();
  private readonly byGroup = new Map<string, TableIndexes>();
  private readonly building = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly engine: Engine, private readonly atomic: Atomic, private readonly metaOf: MetaOf,
    private readonly rowDecoder: RowDecoder) {
    atomic.observe(this.onCommit);
  }

  /** Loads every definition and starts rebuilding its index in the background. */
  async load(): Promise<void> {
    const defs = await this.engine.scan(DEF_GROUP, defDecoder);
    if (defs.length === 0) return;
    await this.atomic.read((tx) => {
      for (const d of defs) {
        const m = this.metaOf(tx, d.table);
        // A definition outlived by its table incarnation is not served (drop deletes it in the same batch anyway).
        if (m === undefined || m.inc !== d.inc) continue;
        this.register(d.table, d.inc, d.field);
      }
    });
  }

  tableIndexes(name: string, inc: number): TableIndexes | undefined {
    const t = this.byTable.get(name);
    return t !== undefined && t.inc === inc ? t : undefined;
  }

  private register(name: string, inc: number, field: string): SecondaryIndex {
    let t = this.byTable.get(name);
    if (t === undefined || t.inc !== inc) {
      if (t !== undefined) this.forget(t);
      t = new TableIndexes(name, inc, rowGroup(name, inc));
      this.byTable.set(name, t);
      this.byGroup.set(t.group, t);
    }
    const ix = new SecondaryIndex(field);
    t.byKey.set(ix.key, ix);
    t.byField.set(field, ix);
    this.startBuild(t, ix);
    return ix;
  }

  private forget(t: TableIndexes): void {
    for (const ix of t.byKey.values()) ix.dropped = true;
    if (this.byTable.get(t.name) === t) this.byTable.delete(t.name);
    this.byGroup.delete(t.group);
  }

  // ---- decisions (called inside atomically) ----------------------------------

  /** Declares an index; the build starts once the batch is in the engine. */
  create(tx: Tx, name: string, inc: number, field: string): void {
    const key = defKey(name, field);
    if (tx.has(key)) throw conflict(`index on '${field}' of table '${name}' already exists`);
    const d: Def = { table: name, inc, field };
    tx.put(key, Buffer.from(JSON.stringify(d)), d, defDecoder, tx.expiry(tableKey(name)));
    tx.onCommit((written) => {
      const ix = this.register(name, inc, field);
      written.catch(() => this.unregister(name, inc, field, ix));
    });
  }

  drop(tx: Tx, name: string, inc: number, field: string): void {
    const key = defKey(name, field);
    if (!tx.has(key)) throw notFound(`index on '${field}' of table '${name}' does not exist`);
    tx.del(key);
    tx.onCommit(() => this.unregister(name, inc, field, undefined));
  }

  /** Deletes the definitions of a table being dropped, in the drop's batch. */
  dropTable(tx: Tx, name: string, inc: number): void {
    const t = this.tableIndexes(name, inc);
    if (t === undefined) return;
    for (const field of t.byField.keys()) tx.del(defKey(name, field));
    tx.onCommit(() => this.forget(t));
  }

  private unregister(name: string, inc: number, field: string, only: SecondaryIndex | undefined): void {
    const t = this.tableIndexes(name, inc);
    const ix = t?.byField.get(field);
    if (t === undefined || ix === undefined || (only !== undefined && ix !== only)) return;
    ix.dropped = true;
    t.byField.delete(field);
    t.byKey.delete(ix.key);
    if (t.byField.size === 0) this.forget(t);
  }

  /** `[{"field","ready"}]` in field order, as JSON text. */
  describe(name: string, inc: number): string {
    const t = this.tableIndexes(name, inc);
    if (t === undefined) return '[]';
    const fields = [...t.byField.keys()].sort();
    return JSON.stringify(fields.map((f) => ({ field: f, ready: (t.byField.get(f) as SecondaryIndex).ready })));
  }

  // ---- maintenance ------------------------------------------------------------

  private readonly onCommit = (tx: Tx, written: Promise<void>): void => {
    if (this.byGroup.size === 0) return;
    const changes = tx.rowChanges;
    if (changes !== undefined) {
      let touched: TableIndexes[] | undefined;
      for (const [group, rows] of changes) {
        const t = this.byGroup.get(group);
        if (t === undefined) continue;
        (touched ??= []).push(t);
        for (const [id, memo] of rows) {
          const old = tx.oldRow(group, id);
          for (const ix of t.byKey.values()) {
            if (!ix.covers(id)) continue;
            if (old !== undefined) ix.remove(id, old);
            if (memo !== null) ix.add(id, memo.obj);
          }
        }
      }
      if (touched !== undefined) {
        const ts = touched;
        written.catch(() => {
          // The engine undid the batch; these indexes reflect it. Rebuild them from the rows.
          for (const t of ts) for (const ix of t.byKey.values()) if (!ix.dropped) this.rebuild(t, ix);
        });
      }
    }
    for (const o of tx.ops) {
      if (o.op !== Op.DropGroup) continue;
      const t = this.byGroup.get(o.key);
      if (t !== undefined) this.forget(t);
    }
  };

  private rebuild(t: TableIndexes, ix: SecondaryIndex): void {
    const fresh = new SecondaryIndex(ix.field);
    ix.dropped = true;
    t.byKey.set(fresh.key, fresh);
    t.byField.set(fresh.field, fresh);
    this.startBuild(t, fresh);
  }

  // ---- building -----------------------------------------------------------------

  private startBuild(t: TableIndexes, ix: SecondaryIndex): void {
    const p = this.build(t, ix).catch(() => undefined).finally(() => this.building.delete(p));
    this.building.add(p);
  }

  private async build(t: TableIndexes, ix: SecondaryIndex): Promise<void> {
    let failures = 0;
    while (!ix.dropped && !this.closed) {
      let done: boolean;
      try {
        done = await this.atomic.read((tx) => this.step(tx, t, ix));
        failures = 0;
      } catch (err) {
        // Busy (the data kept changing under a read) or closing: try again a little later.
        if (++failures > 100 || this.closed) throw err;
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      if (done) return;
      await new Promise((r) => setImmediate(r));
    }
  }

  /** One build step, inside a read decision; true when the index is ready or gone. */
  private step(tx: Tx, t: TableIndexes, ix: SecondaryIndex): boolean {
    if (ix.dropped) return true;
    const m = this.metaOf(tx, t.name);
    if (m === undefined || m.inc !== t.inc) {
      ix.dropped = true;
      return true;
    }
    if (ix.cursor >= m.next) {
      ix.ready = true;
      return true;
    }
    const end = Math.min(ix.cursor + BUILD_STEP, m.next);
    const keys: string[] = [];
    for (let id = ix.cursor; id < end; id++) keys.push(rowKey(t.group, id));
    const rows = tx.getMany(keys, this.rowDecoder);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      if (r !== undefined) ix.add(ix.cursor + i, r.obj);
    }
    ix.cursor = end;
    if (end >= m.next) ix.ready = true;
    return ix.ready;
  }

  /** Resolves when every build in progress has finished (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.building.size > 0) await Promise.all([...this.building]);
  }

  close(): void {
    this.closed = true;
  }
}
