/**
 * A secondary index in memory (docs/query.md, "Secondary indexes"): an
 * ordered set of (value, t_id) for rows whose value at the path is a string,
 * number, boolean or null, plus the t_ids whose value is an array or object.
 * indexes.ts keeps these in step with the engine (IndexRegistry); select.ts
 * answers queries from them.
 */
import type { VersionRef } from '../../engine/index.js';
import { compareValues } from '../query.js';
import { SortedList } from '../sorted.js';
import { lookup, MISSING, pathOf, type Row } from '../wheres.js';
import { entryGroup } from './keys.js';

export type Prim = string | number | boolean | null;
export interface IxEntry {
  v: Prim;
  id: number;
  /**
   * The row's version as last read through this entry (Engine.ref), so the
   * next query reads the row without searching the key directory
   * (docs/query.md, "Row references"); renewed when found stale.
   */
  ref: VersionRef | undefined;
}

/** An entry with no reference yet (also the probe the list's searches compare against). */
export const ixEntry = (v: Prim, id: number): IxEntry => ({ v, id, ref: undefined });

export const cmpEntry = (a: IxEntry, b: IxEntry): number => {
  const c = compareValues(a.v, b.v);
  if (c !== 0) return c;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
};

export const isPrim = (v: unknown): v is Prim => v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/**
 * The entries (vals[i], ids[i]) in `cmpEntry` order. When every value is an
 * integer (not -0) small enough that value × 2^bits + t_id stays an exact
 * float64 (bits: enough for the largest t_id), each entry packs into one
 * number whose numeric order is (value, t_id) order, and a typed array
 * sorts those natively: a million entries without a million comparator calls.
 * Anything else is sorted with the comparator.
 */
export function sortedEntries(vals: readonly Prim[], ids: readonly number[]): IxEntry[] {
  const n = vals.length;
  let maxId = 0;
  let maxAbs = 0;
  let packable = true;
  for (let i = 0; i < n; i++) {
    const v = vals[i];
    const id = ids[i];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || Object.is(v, -0) || !Number.isSafeInteger(id) || id < 0) {
      packable = false;
      break;
    }
    if (id > maxId) maxId = id;
    const a = v < 0 ? -v : v;
    if (a > maxAbs) maxAbs = a;
  }
  const out: IxEntry[] = new Array(n);
  if (packable) {
    let scale = 1;
    while (scale <= maxId) scale *= 2;
    // |v| × scale + t_id < 2^53 keeps every packed number exact.
    if ((maxAbs + 1) * scale <= 2 ** 53) {
      const packed = new Float64Array(n);
      for (let i = 0; i < n; i++) packed[i] = (vals[i] as number) * scale + ids[i];
      packed.sort();
      for (let i = 0; i < n; i++) {
        const p = packed[i];
        const v = Math.floor(p / scale);
        out[i] = ixEntry(v, p - v * scale);
      }
      return out;
    }
  }
  for (let i = 0; i < n; i++) out[i] = ixEntry(vals[i], ids[i]);
  return out.sort(cmpEntry);
}

export class SecondaryIndex {
  readonly path: string[];
  /** JSON of the path: what compiled wheres tests carry (wheres.ts Test.key). */
  readonly key: string;
  /** Engine group of this index's entries. */
  readonly group: string;
  list = new SortedList<IxEntry>(cmpEntry);
  /** t_ids whose value is an array or an object. */
  other = new Set<number>();
  /** Rows with a t_id below this are in the index. */
  cursor = 1;
  ready = false;
  dropped = false;
  /** Being refilled from its keys after a failed write: not used by queries meanwhile. */
  loading = false;

  constructor(
    readonly table: string,
    readonly inc: number,
    readonly field: string,
  ) {
    this.path = pathOf(field);
    this.key = JSON.stringify(this.path);
    this.group = entryGroup(table, inc, field);
  }

  covers(id: number): boolean {
    return this.ready || id < this.cursor;
  }

  /** Whether queries may use it. */
  get usable(): boolean {
    return this.ready && !this.loading && !this.dropped;
  }

  add(id: number, obj: Row): void {
    const v = lookup(obj, this.path);
    if (v === MISSING) return;
    if (isPrim(v)) this.list.add(ixEntry(v, id));
    else this.other.add(id);
  }

  remove(id: number, obj: Row): void {
    const v = lookup(obj, this.path);
    if (v === MISSING) return;
    if (isPrim(v)) this.list.delete(ixEntry(v, id));
    else this.other.delete(id);
  }

  /** Entries of rows whose value equals `v`, in t_id order, above `after`. */
  eq(v: Prim, after: number, out: IxEntry[]): void {
    this.list.walk(ixEntry(v, after), true, (e) => {
      if (compareValues(e.v, v) !== 0) return false;
      out.push(e);
      return true;
    });
  }

  /** Entries of rows whose value lies within the bounds (same type as the bounds), in value order. */
  range(lo: Prim | undefined, loIncl: boolean, hi: Prim | undefined, hiIncl: boolean, kind: 'number' | 'string', out: IxEntry[]): void {
    const start = lo !== undefined ? ixEntry(lo, loIncl ? -Infinity : Infinity) : ixEntry(kind === 'number' ? -Infinity : '', -Infinity);
    for (const e of this.list.ascending(start, false)) {
      if (typeof e.v !== kind) break;
      if (hi !== undefined) {
        const c = compareValues(e.v, hi);
        if (c > 0 || (c === 0 && !hiIncl)) break;
      }
      out.push(e);
    }
  }
}

/** The indexes of one table incarnation. */
export class TableIndexes {
  readonly byKey = new Map<string, SecondaryIndex>();
  readonly byField = new Map<string, SecondaryIndex>();
  constructor(
    readonly name: string,
    readonly inc: number,
    readonly group: string,
  ) {}
}
