/**
 * Property test of shaped row queries (docs/api.md "Paging, order,
 * projection", "Secondary indexes"): on random rows, after random deletes
 * and patches, a random query (every operator and combinator, dotted paths,
 * `$field`, order/limit/after/fields/count/with_ids) gets the same answer
 *   - from a table without indexes,
 *   - from a table whose indexes existed before its rows (maintained on write),
 *   - from a table indexed after its rows (built in the background),
 *   - and from a plain in-memory model written here, independent of wheres.ts.
 *
 * It runs on the log store, and on the shared store when PITHOS_TEST_STORE
 * names a PostgreSQL (the PostgreSQL pass of `npm test`), where the indexed
 * tables' queries go through the database's expression indexes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { LogStore } from '../../src/store/log/log-store.js';
import { PgStore } from '../../src/store/postgres/index.js';
import type { OrderKey, RowQuery, Store } from '../../src/store/store.js';
import { textOf } from '../../src/store/stream.js';
import { freshSchema } from '../helpers/postgres.js';

type Row = Record<string, unknown>;
const own = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const isObj = (v: unknown): v is Row => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---- the model --------------------------------------------------------------------

const NONE = Symbol('none');
function at(row: Row, segs: readonly string[]): unknown {
  let v: unknown = row;
  for (const s of segs) {
    if (!isObj(v) || !own(v, s)) return NONE;
    v = v[s];
  }
  return v;
}
function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  }
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => own(b, k) && same(a[k], b[k]));
  }
  return a === b;
}
function cmpScalar(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  return undefined;
}
const isOps = (v: unknown): v is Row => isObj(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));

function opHolds(v: unknown, op: string, arg: unknown): boolean {
  if (op === '$exists') return (v !== NONE) === arg;
  if (op === '$not') return !(isOps(arg) ? Object.entries(arg).every(([o, a]) => opHolds(v, o, a)) : opHolds(v, '$eq', arg));
  if (v === NONE) return false;
  switch (op) {
    case '$eq':
      return same(v, arg);
    case '$ne':
      return !same(v, arg);
    case '$in':
      return (arg as unknown[]).some((x) => same(v, x));
    case '$nin':
      return !(arg as unknown[]).some((x) => same(v, x));
  }
  const c = cmpScalar(v, arg);
  if (c === undefined) return false;
  return op === '$gt' ? c > 0 : op === '$gte' ? c >= 0 : op === '$lt' ? c < 0 : c <= 0;
}
function modelMatch(row: Row, w: Row): boolean {
  if (own(w, '$field')) {
    const v = at(row, w.$field as string[]);
    return Object.entries(w).every(([k, a]) => k === '$field' || opHolds(v, k, a));
  }
  return Object.entries(w).every(([k, c]) => {
    if (k === '$and') return (c as Row[]).every((x) => modelMatch(row, x));
    if (k === '$or') return (c as Row[]).some((x) => modelMatch(row, x));
    if (k === '$not') return !modelMatch(row, c as Row);
    const v = at(row, k.split('.'));
    if (isOps(c)) return Object.entries(c).every(([o, a]) => opHolds(v, o, a));
    return opHolds(v, '$eq', c);
  });
}
function rankOf(v: unknown): number {
  return typeof v === 'number' ? 0 : typeof v === 'string' ? 1 : typeof v === 'boolean' ? 2 : v === null ? 3 : 4;
}
function cmpAny(a: unknown, b: unknown): number {
  const r = rankOf(a) - rankOf(b);
  if (r !== 0) return r;
  if (rankOf(a) === 4) return Buffer.compare(Buffer.from(JSON.stringify(a)), Buffer.from(JSON.stringify(b)));
  if (typeof a === 'boolean') return Number(a) - Number(b);
  return Math.sign(cmpScalar(a, b) ?? 0);
}
function modelQuery(rows: Map<number, Row>, q: RowQuery): unknown {
  let out = [...rows].filter(([id, r]) => id > (q.after ?? 0) && modelMatch(r, q.wheres));
  if (q.order !== undefined) {
    const keys = q.order;
    out.sort(([ia, a], [ib, b]) => {
      for (const k of keys) {
        const x = at(a, k.field.split('.'));
        const y = at(b, k.field.split('.'));
        if (x === NONE && y === NONE) continue;
        if (x === NONE || y === NONE) return x === NONE ? 1 : -1;
        const c = cmpAny(x, y);
        if (c !== 0) return k.dir === 'desc' ? -c : c;
      }
      return ia - ib;
    });
  }
  if (q.limit !== undefined) out = out.slice(0, q.limit);
  if (q.count === true) return { count: out.length };
  return out.map(([id, r]) => {
    let row = r;
    if (q.fields !== undefined) {
      row = {};
      for (const f of q.fields) if (own(r, f)) row[f] = r[f];
    }
    return q.withIds === true ? { t_id: id, row } : row;
  });
}

// ---- generators ---------------------------------------------------------------------

const scalar = fc.oneof(
  fc.integer({ min: -2, max: 4 }),
  fc.constantFrom('x', 'y', 'z', '', 'é', '\u{1F600}', '\uff5e', 'x\u0000', '\\u'),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.oneof(fc.record({ x: fc.integer({ min: 0, max: 2 }) }), fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 2 })) },
);
const rowArb: fc.Arbitrary<Row> = fc.record(
  {
    a: value,
    b: fc.constantFrom('x', 'y', 'z', 'xy', 'é'),
    c: value,
    n: fc.oneof(fc.record({ x: value, y: scalar }, { requiredKeys: [] }), scalar),
    'd.e': fc.integer({ min: 0, max: 2 }),
    d: fc.record({ e: fc.integer({ min: 0, max: 2 }) }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);

const PATHS = ['a', 'b', 'c', 'n', 'n.x', 'n.y', 'd.e', 'zz'];
const opArb: fc.Arbitrary<[string, unknown]> = fc.oneof(
  fc.tuple(fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte'), value),
  fc.tuple(fc.constantFrom('$in', '$nin'), fc.array(value, { maxLength: 3 })),
  fc.tuple(fc.constant('$exists'), fc.boolean()),
  fc.tuple(fc.constant('$not'), fc.oneof(scalar, fc.record({ $gt: scalar }), fc.record({ $in: fc.array(scalar, { maxLength: 2 }) }))),
);
const condArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 2, arbitrary: scalar },
  { weight: 3, arbitrary: fc.array(opArb, { minLength: 1, maxLength: 2 }).map((ops) => Object.fromEntries(ops)) },
);
const whereArb: fc.Arbitrary<Row> = fc.letrec((tie) => ({
  where: fc.oneof(
    { maxDepth: 2, depthSize: 'small' },
    fc.array(fc.tuple(fc.constantFrom(...PATHS), condArb), { maxLength: 3 }).map((es) => Object.fromEntries(es)),
    fc.record({ $and: fc.array(tie('where'), { maxLength: 3 }) }),
    fc.record({ $or: fc.array(tie('where'), { maxLength: 3 }) }),
    fc.record({ $not: tie('where') }),
    fc
      .tuple(fc.constantFrom(['d.e'], ['n', 'x'], ['a']), fc.array(opArb, { minLength: 1, maxLength: 2 }))
      .map(([p, ops]) => ({ $field: p, ...Object.fromEntries(ops) })),
    // Two conditions on one indexed field: ranges with both ends.
    fc
      .tuple(fc.constantFrom('a', 'n.x', 'c'), fc.integer({ min: -2, max: 4 }), fc.integer({ min: -2, max: 4 }))
      .map(([p, lo, hi]) => ({ [p]: { $gte: lo, $lt: hi } })),
  ) as fc.Arbitrary<Row>,
})).where;

const orderArb: fc.Arbitrary<OrderKey[] | undefined> = fc.option(
  fc.array(fc.record({ field: fc.constantFrom('a', 'b', 'c', 'n.x', 'd.e', 'zz'), dir: fc.constantFrom('asc' as const, 'desc' as const) }), {
    minLength: 1,
    maxLength: 2,
  }),
  { nil: undefined },
);
const queryArb: fc.Arbitrary<RowQuery> = fc
  .record({
    wheres: whereArb,
    order: orderArb,
    limit: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    after: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
    shape: fc.constantFrom('rows', 'count', 'fields', 'ids'),
    fields: fc.subarray(['a', 'b', 'n', 'd.e', 'zz']),
  })
  .map((r) => {
    const q: RowQuery = { wheres: r.wheres };
    if (r.order !== undefined) q.order = r.order;
    if (r.limit !== undefined) q.limit = r.limit;
    if (r.after !== undefined) q.after = r.after;
    if (r.shape === 'count') q.count = true;
    if (r.shape === 'fields') q.fields = r.fields;
    if (r.shape === 'ids') q.withIds = true;
    return q;
  });

type Change = { t: 'insert'; row: Row } | { t: 'delete'; b: string } | { t: 'patch'; b: string; sets: Row };
const changeArb: fc.Arbitrary<Change> = fc.oneof(
  { weight: 6, arbitrary: rowArb.map((row) => ({ t: 'insert' as const, row })) },
  { weight: 1, arbitrary: fc.constantFrom('x', 'y', 'z', 'xy').map((b) => ({ t: 'delete' as const, b })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('x', 'y', 'z', 'é'), fc.record({ a: value, c: value, n: fc.record({ x: value }) }, { requiredKeys: [] }))
      .map(([b, sets]) => ({ t: 'patch' as const, b, sets })),
  },
);

// ---- the test -----------------------------------------------------------------------

const PG_URL = process.env.PITHOS_TEST_STORE;
let dir: string;
let store: Store & { indexes: { settled(): Promise<void> } };
before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-query-'));
  if (PG_URL === undefined) {
    store = await LogStore.open({ dir, now: Date.now, durability: 'never', sweepIntervalMs: 0, compactIntervalMs: 0 });
  } else {
    const url = await freshSchema(PG_URL, `qprop_${process.pid}`);
    store = await PgStore.open({ url, poolSize: 4, statementTimeoutMs: 30_000, offsetMs: () => 0, log: () => undefined });
  }
});
after(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const INDEXED = ['a', 'c', 'n.x', 'b'];
let seq = 0;

test('shaped queries: indexed = unindexed = model on random data', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(changeArb, { maxLength: 60 }), fc.array(queryArb, { minLength: 1, maxLength: 6 }), async (changes, queries) => {
      const n = ++seq;
      const plain = `plain${n}`;
      const early = `early${n}`;
      const late = `late${n}`;
      for (const t of [plain, early, late]) await store.tables.create(t, 0);
      for (const f of INDEXED) await store.tables.createIndex(early, f);
      const model = new Map<number, Row>();
      let next = 1;
      const apply = async (part: typeof changes): Promise<void> => {
        for (const c of part) {
          for (const t of [plain, early, late]) {
            if (c.t === 'insert') await store.tables.insert(t, c.row);
            else if (c.t === 'delete') await store.tables.deleteRows(t, { b: c.b });
            else await store.tables.patch(t, { b: c.b }, c.sets);
          }
          if (c.t === 'insert') model.set(next++, structuredClone(c.row));
          else for (const [id, r] of model) if (r.b === c.b) c.t === 'delete' ? model.delete(id) : model.set(id, { ...r, ...structuredClone(c.sets) });
        }
      };
      // Half the changes, the queries, then the rest and the queries again: the second
      // round reads rows that changed or went away after the first read them through
      // the indexes (whose entries keep references to the versions they read).
      const half = changes.length >> 1;
      await apply(changes.slice(0, half));
      for (const f of INDEXED) await store.tables.createIndex(late, f);
      await store.indexes.settled();
      const ready = JSON.parse(await store.tables.listIndexes(late)) as Array<{ ready: boolean }>;
      assert.ok(
        ready.every((x) => x.ready),
        'indexes built',
      );
      // Beside the random queries, every index plan on every indexed field, so each run exercises them all.
      const probes: RowQuery[] = [];
      for (const f of INDEXED) {
        for (const v of [0, 1, 'x', true, null]) {
          probes.push({ wheres: { [f]: v } }, { wheres: { [f]: { $gte: v } }, limit: 3, after: 2 }, { wheres: { [f]: { $in: [v, 2] } }, withIds: true });
        }
        probes.push(
          { wheres: {}, order: [{ field: f, dir: 'asc' }], limit: 4 },
          {
            wheres: { b: 'x' },
            order: [
              { field: f, dir: 'desc' },
              { field: 'a', dir: 'asc' },
            ],
            limit: 3,
          },
        );
      }
      for (let round = 0; round < 2; round++) {
        if (round === 1) await apply(changes.slice(half));
        for (const q of [...queries, ...probes]) {
          const want = modelQuery(model, q);
          for (const t of [plain, early, late]) {
            const got = JSON.parse(await textOf(await store.tables.find(t, q))) as unknown;
            assert.deepStrictEqual(got, want, `${t} (round ${round}): ${JSON.stringify(q)}`);
          }
          if (
            q.order === undefined &&
            q.limit === undefined &&
            q.after === undefined &&
            q.fields === undefined &&
            q.count === undefined &&
            q.withIds === undefined
          ) {
            assert.deepStrictEqual(JSON.parse(await textOf(await store.tables.query(early, q.wheres))), want, 'plain query');
          }
        }
      }
      for (const t of [plain, early, late]) await store.tables.drop(t);
    }),
    { numRuns: PG_URL === undefined ? 120 : 40 },
  );
});
