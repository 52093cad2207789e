/**
 * Backend-free parts of row queries (docs/api.md "Paging, order,
 * projection"): the total order `order` sorts by, projection, and how an
 * answer is written. Any store produces the same bytes from the same rows.
 */
import { hasField } from './json.js';
import type { OrderKey, RowQuery } from './store.js';
import { codePointCompare } from './sorted.js';
import { lookup, MISSING, pathOf, type Row } from './wheres.js';

/**
 * Sort rank of a present value: numbers, then strings, then booleans, then
 * null, then arrays and objects. `order` sorts by rank, then within a rank.
 */
export function rank(v: unknown): number {
  switch (typeof v) {
    case 'number':
      return 0;
    case 'string':
      return 1;
    case 'boolean':
      return 2;
    default:
      return v === null ? 3 : 4;
  }
}

/** Total order of present JSON values: rank, then numeric / code-point / false<true / JSON text. */
export function compareValues(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 0:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 1:
      return codePointCompare(a as string, b as string);
    case 2:
      return a === b ? 0 : a ? 1 : -1;
    case 3:
      return 0;
    default:
      return codePointCompare(JSON.stringify(a), JSON.stringify(b));
  }
}

export interface IdRow {
  id: number;
  obj: Row;
  json: string;
}

/** Compiled sort keys. */
export type Order = ReadonlyArray<{ path: readonly string[]; desc: boolean }>;

export const compileOrder = (order: readonly OrderKey[]): Order => order.map((k) => ({ path: pathOf(k.field), desc: k.dir === 'desc' }));

/**
 * Compares two rows under `order`: each key in turn (desc reverses the value
 * order; a row missing the field sorts after every row that has it, in
 * either direction), then t_id ascending.
 */
export function compareRows(order: Order, a: IdRow, b: IdRow): number {
  for (let i = 0; i < order.length; i++) {
    const k = order[i];
    const x = lookup(a.obj, k.path);
    const y = lookup(b.obj, k.path);
    if (x === MISSING || y === MISSING) {
      if (x === y) continue;
      return x === MISSING ? 1 : -1;
    }
    const c = compareValues(x, y);
    if (c !== 0) return k.desc ? -c : c;
  }
  return a.id - b.id;
}

/** The listed top-level fields the row has, in the listed order, as JSON text. */
export function project(obj: Row, fields: readonly string[]): string {
  let out = '{';
  for (const f of fields) {
    if (!hasField(obj, f)) continue;
    if (out.length > 1) out += ',';
    out += JSON.stringify(f) + ':' + JSON.stringify(obj[f]);
  }
  return out + '}';
}

/** One row of a shaped query's answer (projected, with its t_id when asked). */
export function rowText(r: IdRow, q: RowQuery): string {
  const body = q.fields === undefined ? r.json : project(r.obj, q.fields);
  return q.withIds === true ? `{"t_id":${r.id},"row":${body}}` : body;
}

/** The answer to a shaped query from its rows (already filtered, ordered and limited). */
export function render(rows: readonly IdRow[], q: RowQuery): string {
  if (q.count === true) return `{"count":${rows.length}}`;
  let out = '[';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ',';
    out += rowText(rows[i], q);
  }
  return out + ']';
}
