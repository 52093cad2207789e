/**
 * Table namespace on the log. A table is one metadata entry (its incarnation
 * and next t_id) plus one engine entry per row, in the group of that
 * incarnation. A row insert writes the row and the 2-number metadata, never
 * the table; patch and row-delete are one batch each, so they are atomic
 * across a crash; drop is one batch that deletes the metadata and the whole
 * row group. Rows carry the table's expiry, so an expiring table takes its
 * rows with it.
 *
 * The functions taking a Tx are the decisions; transactions (txns.ts) reuse
 * them, so a table mutation has one implementation whether it comes alone or
 * in a transaction.
 */
import type { Decoder } from '../../engine/index.js';
import { conflict, type StoreError } from '../errors.js';
import { missing as missingObject } from '../messages.js';
import { mergeFields } from '../json.js';
import { compileOrder, render } from '../query.js';
import { patchedRow, rowMissing, rowWhat } from '../rows.js';
import type { Precondition, RowQuery, Sync, TableStore, Text, VersionOut, Wheres } from '../store.js';
import { findText, pageText, renderText, STREAM_ROWS } from '../stream.js';
import { expiryOf } from '../validate.js';
import { checkPrecondition } from '../versions.js';
import { compileWheres, type Matcher, matches, type Row, singleEq } from '../wheres.js';
import type { Atomic, RowMemo, Tx } from './atomic.js';
import type { IndexRegistry } from './indexes.js';
import { rowGroup, rowIdOf, rowKey, tableKey } from './keys.js';
import { SnapshotRows } from './scan.js';
import { select, selectByIndex } from './select.js';

interface TableMeta {
  inc: number;
  next: number;
}

export const metaDecoder: Decoder<TableMeta> = (buf) => {
  const s = buf.toString('latin1');
  const sp = s.indexOf(' ');
  return { inc: Number(s.slice(0, sp)), next: Number(s.slice(sp + 1)) };
};
const encodeMeta = (m: TableMeta): Buffer => Buffer.from(`${m.inc} ${m.next}`, 'latin1');

export const rowDecoder: Decoder<RowMemo> = (buf, key) => {
  const json = buf.toString('utf8');
  return { id: rowIdOf(key), obj: JSON.parse(json) as Row, json };
};

const missing = (name: string): StoreError => missingObject('table', name);

/** The table's incarnation and next t_id; undefined when it does not exist. */
export function tableMeta(tx: Tx, name: string): TableMeta | undefined {
  return tx.get(tableKey(name), metaDecoder);
}

/** The table's metadata; throws 404 when it does not exist. */
export function meta(tx: Tx, name: string): TableMeta {
  const m = tx.get(tableKey(name), metaDecoder);
  if (m === undefined) throw missing(name);
  return m;
}

export function tableExists(tx: Tx, name: string): boolean {
  return tx.has(tableKey(name));
}

/** Live rows of an existing table in t_id order. */
export function tableRows(tx: Tx, name: string): RowMemo[] {
  return tx.rows(rowGroup(name, meta(tx, name).inc), rowDecoder);
}

export function insertRow(tx: Tx, name: string, row: Row): number {
  const key = tableKey(name);
  const m = meta(tx, name);
  const exp = tx.expiry(key);
  const id = m.next;
  const next: TableMeta = { inc: m.inc, next: id + 1 };
  tx.put(key, encodeMeta(next), next, metaDecoder, exp);
  const group = rowGroup(name, m.inc);
  tx.putRow(group, rowKey(group, id), { id, obj: row, json: JSON.stringify(row) }, rowDecoder, exp);
  return id;
}

/** Writes `sets` over every matching row; returns how many matched. Empty `sets` writes nothing. */
export function updateRows(tx: Tx, name: string, matcher: Matcher, sets: Row): number {
  const m = meta(tx, name);
  const group = rowGroup(name, m.inc);
  const rows = tx.rows(group, rowDecoder);
  const write = Object.keys(sets).length > 0;
  const exp = write ? tx.expiry(tableKey(name)) : 0;
  let n = 0;
  for (const r of rows) {
    if (!matches(r.obj, matcher)) continue;
    n++;
    if (!write) continue;
    const obj = mergeFields(r.obj, sets);
    tx.putRow(group, rowKey(group, r.id), { id: r.id, obj, json: JSON.stringify(obj) }, rowDecoder, exp, r.obj);
  }
  return n;
}

/** Deletes every matching row; returns how many matched. */
export function removeRows(tx: Tx, name: string, matcher: Matcher): number {
  const m = meta(tx, name);
  const group = rowGroup(name, m.inc);
  let n = 0;
  for (const r of tx.rows(group, rowDecoder)) {
    if (!matches(r.obj, matcher)) continue;
    n++;
    tx.delRow(group, rowKey(group, r.id), r.id, r.obj);
  }
  return n;
}

/** Where one row lives: its table's row group and its key there. */
interface RowAt {
  group: string;
  key: string;
}

function rowAt(tx: Tx, name: string, id: number): RowAt {
  const group = rowGroup(name, meta(tx, name).inc);
  return { group, key: rowKey(group, id) };
}

/**
 * Row `id` of an existing table, after checking `pre` on its version (a
 * row that is absent has none: 412 with a condition, 404 without).
 */
function existingRow(tx: Tx, name: string, id: number, at: RowAt, pre: Precondition | undefined): RowMemo {
  if (pre !== undefined) checkPrecondition(rowWhat(name, id), tx.rowVersion(at.group, at.key, id), pre);
  const r = tx.row(at.group, at.key, id, rowDecoder);
  if (r === undefined) throw rowMissing(name, id);
  return r;
}

function writeRow(tx: Tx, name: string, at: RowAt, old: RowMemo, obj: Row): void {
  tx.putRow(at.group, at.key, { id: old.id, obj, json: JSON.stringify(obj) }, rowDecoder, tx.expiry(tableKey(name)), old.obj);
}

/** Writes `row` in place of row `id`; 404 when there is none (a t_id is only ever assigned by insertRow). */
export function replaceRow(tx: Tx, name: string, id: number, row: Row, pre?: Precondition): void {
  const at = rowAt(tx, name, id);
  writeRow(tx, name, at, existingRow(tx, name, id, at, pre), row);
}

/** `sets` then `unset` on row `id` (src/store/rows.ts); a new version even when nothing changes, as a record PATCH. */
export function patchRowById(tx: Tx, name: string, id: number, sets: Row, unset: readonly string[], pre?: Precondition): void {
  const at = rowAt(tx, name, id);
  const old = existingRow(tx, name, id, at, pre);
  writeRow(tx, name, at, old, patchedRow(old.obj, sets, unset));
}

export function deleteRowById(tx: Tx, name: string, id: number, pre?: Precondition): void {
  const at = rowAt(tx, name, id);
  const old = existingRow(tx, name, id, at, pre);
  tx.delRow(at.group, at.key, id, old.obj);
}

/** A transaction's UPDATE by t_id: as updateRows with a where that matches that row alone. */
export function updateRowById(tx: Tx, name: string, id: number, sets: Row): number {
  const at = rowAt(tx, name, id);
  const old = tx.row(at.group, at.key, id, rowDecoder);
  if (old === undefined) return 0;
  if (Object.keys(sets).length > 0) writeRow(tx, name, at, old, mergeFields(old.obj, sets));
  return 1;
}

/** A transaction's REMOVE by t_id: as removeRows with a where that matches that row alone. */
export function removeRowById(tx: Tx, name: string, id: number): number {
  const at = rowAt(tx, name, id);
  const old = tx.row(at.group, at.key, id, rowDecoder);
  if (old === undefined) return 0;
  tx.delRow(at.group, at.key, id, old.obj);
  return 1;
}

export function countRows(tx: Tx, name: string, matcher: Matcher): number {
  let n = 0;
  for (const r of tableRows(tx, name)) if (matches(r.obj, matcher)) n++;
  return n;
}

export class LogTables implements TableStore {
  constructor(
    private readonly atomic: Atomic,
    private readonly indexes: IndexRegistry,
  ) {}

  create(name: string, ttl: number): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      const key = tableKey(name);
      if (tx.has(key)) throw conflict(`table '${name}' already exists`);
      // The incarnation is the sequence number of this very batch: unique forever.
      const m: TableMeta = { inc: tx.seq, next: 1 };
      tx.put(key, encodeMeta(m), m, metaDecoder, expiryOf(ttl, tx.now));
    });
  }

  insert(name: string, row: Row): Promise<number> {
    return this.atomic.atomically(undefined, (tx) => insertRow(tx, name, row));
  }

  /*
   * Reads (docs/query.md, "Large answers"): a table of at most STREAM_ROWS
   * rows is answered in one string from one read decision, as ever. A larger
   * one is answered from a snapshot of its rows taken in the decision (so
   * the answer is one instant of the table), filtered and rendered a batch at
   * a time afterwards; rows that were not cached are read from the log a
   * batch at a time. Index plans answer from their candidates, rendered in
   * pieces when there are many.
   */

  all(name: string): Promise<Text> {
    return this.atomic.read((tx): Text => {
      const group = rowGroup(name, meta(tx, name).inc);
      if (tx.groupSize(group) > STREAM_ROWS) return pageText(new SnapshotRows(tx.snapshot(group, rowDecoder)), undefined, undefined);
      const rows = tx.rows(group, rowDecoder);
      let out = '{';
      for (let i = 0; i < rows.length; i++) {
        if (i > 0) out += ',';
        out += `"${rows[i].id}":${rows[i].json}`;
      }
      return out + '}';
    });
  }

  query(name: string, wheres: Wheres): Sync<Text> {
    const matcher = compileWheres(wheres);
    return this.atomic.readNow((tx): Text => {
      const m = meta(tx, name);
      const ix = this.indexes.tableIndexes(name, m.inc);
      const group = ix !== undefined ? ix.group : rowGroup(name, m.inc);
      // A table with indexes goes through the planner; without, the scan below is the whole story.
      if (ix !== undefined) {
        const q: RowQuery = { wheres };
        const r = selectByIndex(tx, group, ix, matcher, q, undefined);
        if (r !== undefined) return renderText(r, q);
      }
      if (tx.groupSize(group) > STREAM_ROWS) return findText(new SnapshotRows(tx.snapshot(group, rowDecoder)), matcher, { wheres }, undefined);
      const rows = tx.rows(group, rowDecoder);
      let out = '[';
      let first = true;
      const eq = singleEq(matcher);
      if (eq !== undefined) {
        const f = eq.field;
        const a = eq.arg;
        for (let i = 0; i < rows.length; i++) {
          const r = rows[i];
          if (r.obj[f] !== a) continue;
          out += first ? r.json : ',' + r.json;
          first = false;
        }
        return out + ']';
      }
      for (let i = 0; i < rows.length; i++) {
        if (!matches(rows[i].obj, matcher)) continue;
        if (!first) out += ',';
        out += rows[i].json;
        first = false;
      }
      return out + ']';
    });
  }

  page(name: string, limit: number | undefined, after: number | undefined): Promise<Text> {
    if (limit === undefined && after === undefined) return this.all(name);
    return this.atomic.read((tx): Text => {
      const group = rowGroup(name, meta(tx, name).inc);
      if (tx.groupSize(group) > STREAM_ROWS) return pageText(new SnapshotRows(tx.snapshot(group, rowDecoder)), after, limit);
      const rows = tx.rows(group, rowDecoder);
      const from = after === undefined ? 0 : firstAbove(rows, after);
      const to = limit === undefined ? rows.length : Math.min(rows.length, from + limit);
      let out = '{';
      for (let i = from; i < to; i++) {
        if (i > from) out += ',';
        out += `"${rows[i].id}":${rows[i].json}`;
      }
      return out + '}';
    });
  }

  find(name: string, q: RowQuery): Sync<Text> {
    const matcher = compileWheres(q.wheres);
    const order = q.order === undefined || q.order.length === 0 ? undefined : compileOrder(q.order);
    return this.atomic.readNow((tx): Text => {
      const m = meta(tx, name);
      const ix = this.indexes.tableIndexes(name, m.inc);
      const group = ix !== undefined ? ix.group : rowGroup(name, m.inc);
      if (ix !== undefined) {
        const r = selectByIndex(tx, group, ix, matcher, q, order);
        if (r !== undefined) return renderText(r, q);
      }
      if (tx.groupSize(group) > STREAM_ROWS) return findText(new SnapshotRows(tx.snapshot(group, rowDecoder)), matcher, q, order);
      return render(select(tx, group, undefined, matcher, q, order), q);
    });
  }

  createIndex(name: string, field: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      this.indexes.create(tx, name, meta(tx, name).inc, field);
    });
  }

  listIndexes(name: string): Promise<string> {
    return this.atomic.read((tx) => this.indexes.describe(name, meta(tx, name).inc));
  }

  dropIndex(name: string, field: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      this.indexes.drop(tx, name, meta(tx, name).inc, field);
    });
  }

  getRow(name: string, id: number, out?: VersionOut): Sync<string> {
    return this.atomic.readNow((tx) => {
      const at = rowAt(tx, name, id);
      const r = tx.row(at.group, at.key, id, rowDecoder);
      if (r === undefined) throw rowMissing(name, id);
      if (out !== undefined) out.version = tx.rowVersion(at.group, at.key, id) ?? 0;
      return r.json;
    });
  }

  replaceRow(name: string, id: number, row: Row, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => replaceRow(tx, name, id, row, pre));
  }

  patchRow(name: string, id: number, sets: Row, unset: readonly string[], pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => patchRowById(tx, name, id, sets, unset, pre));
  }

  deleteRow(name: string, id: number, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => deleteRowById(tx, name, id, pre));
  }

  patch(name: string, wheres: Wheres, sets: Row): Promise<void> {
    const matcher = compileWheres(wheres);
    return this.atomic.atomically(undefined, (tx) => {
      updateRows(tx, name, matcher, sets);
    });
  }

  deleteRows(name: string, wheres: Wheres): Promise<void> {
    const matcher = compileWheres(wheres);
    return this.atomic.atomically(undefined, (tx) => {
      removeRows(tx, name, matcher);
    });
  }

  /**
   * Rows carry their table's expiry (so an expiring table takes its rows with
   * it), and so do its index definitions and entries: a new lifetime rewrites
   * the metadata, every row and every index entry with the new expiry in one
   * batch. O(rows × (1 + indexes)), values unchanged (docs/api.md).
   */
  expire(name: string, ttl: number): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      const key = tableKey(name);
      const m = meta(tx, name);
      const exp = expiryOf(ttl, tx.now);
      const group = rowGroup(name, m.inc);
      const rows = tx.rows(group, rowDecoder);
      tx.put(key, encodeMeta(m), m, metaDecoder, exp);
      for (const r of rows) tx.putRow(group, rowKey(group, r.id), r, rowDecoder, exp);
      this.indexes.expireTable(tx, name, m.inc, exp);
    });
  }

  drop(name: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      const m = meta(tx, name);
      tx.del(tableKey(name));
      tx.dropGroup(rowGroup(name, m.inc));
      this.indexes.dropTable(tx, name, m.inc);
    });
  }
}

/** Position of the first row with a t_id above `after` (rows are in t_id order). */
export function firstAbove(rows: readonly RowMemo[], after: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].id <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
