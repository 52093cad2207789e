/**
 * Which rows a shaped query returns, and how they are found (docs/query.md,
 * "Query plans"). Three plans, all inside one read decision:
 *
 * 1. an index condition: a top-level equality, `$in` or range on a path
 *    with a ready index gives the candidate t_ids; every candidate is then
 *    checked against the whole `wheres`, so the index only narrows;
 * 2. index order: no index condition, `order` starts with an indexed path and
 *    a `limit` is set: walk the index in order, one run of equal values at a
 *    time, until the page is full (falls back to 3 when the index runs out:
 *    rows whose value is an array, object or missing come after it);
 * 3. a scan of the table's rows in t_id order.
 *
 * Each plan returns the same rows as the scan would, which the property test
 * (test/store/query.property.test.ts) checks on random data.
 */
import { compareRows, compareValues, type Order } from '../query.js';
import type { RowQuery } from '../store.js';
import { MISS } from '../../engine/index.js';
import { type Matcher, matches, T, type Test } from '../wheres.js';
import type { RowMemo, Tx } from './atomic.js';
import { isPrim, type IxEntry, type Prim, type SecondaryIndex, type TableIndexes } from './secondary.js';
import { rowKey } from './keys.js';
import { firstAbove, rowDecoder } from './tables.js';

export function select(tx: Tx, group: string, t: TableIndexes | undefined, matcher: Matcher, q: RowQuery, order: Order | undefined): RowMemo[] {
  if (t !== undefined) {
    const r = selectByIndex(tx, group, t, matcher, q, order);
    if (r !== undefined) return r;
  }
  return scan(tx, group, matcher, q, order);
}

/** Plans 1 and 2; undefined when neither applies (the caller scans). */
export function selectByIndex(tx: Tx, group: string, t: TableIndexes, matcher: Matcher, q: RowQuery, order: Order | undefined): RowMemo[] | undefined {
  const after = q.after ?? 0;
  const limit = q.limit ?? Infinity;
  const ents = candidates(t, matcher, after);
  if (ents !== undefined) return fromEntries(tx, group, ents, matcher, order, limit);
  if (order !== undefined && limit !== Infinity) return byIndexOrder(tx, group, t, matcher, order, after, limit);
  return undefined;
}

/** Plan 3 in one step, for tables small enough to answer at once (a large one streams, src/store/stream.ts). */
function scan(tx: Tx, group: string, matcher: Matcher, q: RowQuery, order: Order | undefined): RowMemo[] {
  const after = q.after ?? 0;
  const limit = q.limit ?? Infinity;
  const rows = tx.rows(group, rowDecoder);
  const out: RowMemo[] = [];
  for (let i = firstAbove(rows, after); i < rows.length; i++) {
    if (!matches(rows[i].obj, matcher)) continue;
    out.push(rows[i]);
    if (order === undefined && out.length === limit) break;
  }
  if (order === undefined) return out;
  out.sort((a, b) => compareRows(order, a, b));
  return out.length > limit ? out.slice(0, limit) : out;
}

interface Bounds {
  ix: SecondaryIndex;
  kind: 'number' | 'string' | 'mixed';
  lo?: Prim;
  loIncl: boolean;
  hi?: Prim;
  hiIncl: boolean;
}

const byId = (a: IxEntry, b: IxEntry): number => a.id - b.id;

/**
 * Index entries of the candidate rows (in t_id order, all above `after`)
 * from the most selective usable index condition, or undefined when no
 * condition can use an index.
 * Preference: equality, then `$in`, then a two-sided range, then a one-sided one.
 */
function candidates(t: TableIndexes, matcher: Matcher, after: number): IxEntry[] | undefined {
  let inTest: { ix: SecondaryIndex; test: Test } | undefined;
  let bounds: Map<string, Bounds> | undefined;
  for (const n of matcher) {
    if (n.kind !== 0) continue;
    const ix = t.byKey.get(n.key);
    if (ix === undefined || !ix.usable) continue;
    switch (n.op) {
      case T.EqPrimitive:
      case T.Eq:
        if (!isPrim(n.arg)) break;
        {
          const out: IxEntry[] = [];
          ix.eq(n.arg, after, out);
          return out;
        }
      case T.In:
        if (inTest === undefined && (n.arg as unknown[]).every(isPrim)) inTest = { ix, test: n };
        break;
      case T.Gt:
      case T.Gte:
      case T.Lt:
      case T.Lte: {
        const kind = typeof n.arg;
        if (kind !== 'number' && kind !== 'string') break;
        let b = (bounds ??= new Map()).get(n.key);
        if (b === undefined) bounds.set(n.key, (b = { ix, kind, loIncl: true, hiIncl: true }));
        else if (b.kind !== kind) b.kind = 'mixed'; // a number bound and a string bound: nothing matches both
        const v = n.arg as Prim;
        if (n.op === T.Gt || n.op === T.Gte) {
          const c = b.lo === undefined ? 1 : compareValues(v, b.lo);
          if (c > 0 || (c === 0 && n.op === T.Gt)) {
            b.lo = v;
            b.loIncl = n.op === T.Gte;
          }
        } else {
          const c = b.hi === undefined ? -1 : compareValues(v, b.hi);
          if (c < 0 || (c === 0 && n.op === T.Lt)) {
            b.hi = v;
            b.hiIncl = n.op === T.Lte;
          }
        }
        break;
      }
      default:
        break;
    }
  }
  if (inTest !== undefined) {
    const out: IxEntry[] = [];
    const seen = new Set<Prim>();
    for (const v of inTest.test.arg as Prim[]) {
      // -0 and 0 are one value to the index, as to ===.
      const k = v === 0 ? 0 : v;
      if (seen.has(k)) continue;
      seen.add(k);
      inTest.ix.eq(v, after, out);
    }
    return out.sort(byId);
  }
  if (bounds === undefined) return undefined;
  let best: Bounds | undefined;
  for (const b of bounds.values()) {
    if (b.kind === 'mixed') return [];
    if (best === undefined || (b.lo !== undefined && b.hi !== undefined && (best.lo === undefined || best.hi === undefined))) best = b;
  }
  const b = best as Bounds;
  const out: IxEntry[] = [];
  b.ix.range(b.lo, b.loIncl, b.hi, b.hiIncl, b.kind as 'number' | 'string', out);
  const above = after > 0 ? out.filter((e) => e.id > after) : out;
  return above.sort(byId);
}

/**
 * The rows of index entries [from, to): each through the entry's kept
 * reference while that is the row's live version, otherwise by key (one
 * directory search, docs/query.md "Row references"), keeping the reference
 * found for the next query. In a decision that has written, Tx.peekRef
 * always misses, so every row is read by key (its own writes come first).
 */
function rowsOf(tx: Tx, group: string, ents: readonly IxEntry[], from: number, to: number): Array<RowMemo | undefined> {
  const out: Array<RowMemo | undefined> = new Array(to - from);
  let keys: string[] | undefined;
  let at: number[] | undefined;
  for (let i = from; i < to; i++) {
    const e = ents[i];
    let r = e.ref === undefined ? MISS : tx.peekRef(e.ref, rowDecoder);
    if (r === MISS) {
      const key = rowKey(group, e.id);
      const ref = tx.ref(key);
      if (ref !== undefined) {
        e.ref = ref;
        r = tx.peekRef(ref, rowDecoder);
      } else if (!tx.wrote) continue; // absent or expired: out[i] stays undefined
      if (r === MISS) {
        // Not cached (or not as a row), or this decision has written: the ordinary read by key.
        (keys ??= []).push(key);
        (at ??= []).push(i);
        continue;
      }
    }
    out[i - from] = r;
  }
  if (keys !== undefined && at !== undefined) {
    const rows = tx.getMany(keys, rowDecoder);
    for (let j = 0; j < keys.length; j++) out[at[j] - from] = rows[j];
  }
  return out;
}

/** Rows of the candidate entries that match, in t_id order (or `order`), at most `limit`. */
function fromEntries(tx: Tx, group: string, ents: readonly IxEntry[], matcher: Matcher, order: Order | undefined, limit: number): RowMemo[] {
  const out: RowMemo[] = [];
  // Without an order the first `limit` matches are the answer: read candidates in growing slices.
  let slice = order === undefined && limit !== Infinity ? Math.max(64, limit * 2) : ents.length;
  for (let from = 0; from < ents.length; from += slice, slice *= 4) {
    const to = Math.min(ents.length, from + slice);
    const rows = rowsOf(tx, group, ents, from, to);
    for (const r of rows) {
      if (r === undefined || !matches(r.obj, matcher)) continue;
      out.push(r);
      if (order === undefined && out.length === limit) return out;
    }
  }
  if (order === undefined) return out;
  out.sort((a, b) => compareRows(order, a, b));
  return out.length > limit ? out.slice(0, limit) : out;
}

/**
 * Plan 2: the first `limit` rows under `order` by walking the index on the
 * first sort key. Undefined when the index cannot answer (not ready, or it
 * ran out before the page was full, or a descending walk would miss array
 * and object values, which sort above every scalar).
 */
function byIndexOrder(tx: Tx, group: string, t: TableIndexes, matcher: Matcher, order: Order, after: number, limit: number): RowMemo[] | undefined {
  const first = order[0];
  const ix = t.byKey.get(JSON.stringify(first.path));
  if (ix === undefined || !ix.usable) return undefined;
  if (first.desc && ix.other.size > 0) return undefined;
  const it = first.desc ? ix.list.descending() : ix.list.ascending();
  const out: RowMemo[] = [];
  let pending: IxEntry | undefined;
  let want = Math.max(64, limit * 2);
  for (;;) {
    // Take about `want` entries, ending at a change of value so a run is never split.
    const batch: IxEntry[] = [];
    if (pending !== undefined) batch.push(pending);
    pending = undefined;
    for (;;) {
      const n = it.next();
      if (n.done === true) break;
      if (batch.length >= want && compareValues(n.value.v, batch[batch.length - 1].v) !== 0) {
        pending = n.value;
        break;
      }
      batch.push(n.value);
    }
    if (batch.length === 0) return undefined;
    const keep = batch.filter((e) => e.id > after);
    const rows = rowsOf(tx, group, keep, 0, keep.length);
    let run: RowMemo[] = [];
    for (let i = 0; i < keep.length; i++) {
      const r = rows[i];
      if (r !== undefined && matches(r.obj, matcher)) run.push(r);
      const last = i === keep.length - 1 || compareValues(keep[i + 1].v, keep[i].v) !== 0;
      if (!last) continue;
      // Within one value of the first key, the other keys (and t_id) decide.
      run.sort((a, b) => compareRows(order, a, b));
      for (const x of run) out.push(x);
      run = [];
      if (out.length >= limit) return out.slice(0, limit);
    }
    want *= 4;
  }
}
