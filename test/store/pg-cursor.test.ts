/**
 * The shared store's cursor over a large table (src/store/postgres/cursor.ts,
 * docs/query.md "Large answers"): each FETCH is sized so that a batch holds
 * about BATCH_BYTES of rows, also when rows are large, and a read that runs
 * out of rows before the table's row count ends there instead of looping on
 * empty FETCHes. Needs PostgreSQL: runs in the PostgreSQL pass of `npm test`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgStore } from '../../src/store/postgres/index.js';
import { CursorSource } from '../../src/store/postgres/cursor.js';
import type { Db } from '../../src/store/postgres/sql.js';
import { BATCH_BYTES, BATCH_ROWS, findText, type RowSource, textOf } from '../../src/store/stream.js';
import { compileWheres } from '../../src/store/wheres.js';
import { freshSchema } from '../helpers/postgres.js';

const PG_URL = process.env.PITHOS_TEST_STORE;
const skip = PG_URL === undefined ? 'needs PostgreSQL (runs in the PostgreSQL pass of npm test)' : false;
let store: PgStore | undefined;
let db: Db;

/** Rows of `pad` characters of padding each. */
async function fill(name: string, rows: number, pad: number): Promise<void> {
  await store!.tables.create(name, 0);
  const filler = 'x'.repeat(pad);
  for (let from = 0; from < rows; from += 100) {
    const mutations = [];
    for (let i = from; i < Math.min(rows, from + 100); i++) mutations.push({ kind: 'table' as const, name, op: 'INSERT' as const, values: { i, filler } });
    await store!.transact({ checks: [], mutations, serializable: false });
  }
}

/** Wraps a source to record what each read returned. */
function recording(src: RowSource, reads: Array<{ rows: number; bytes: number }>): RowSource {
  return {
    get length() {
      return src.length;
    },
    firstAbove: (a) => src.firstAbove(a),
    batchEnd: (f, e) => src.batchEnd(f, e),
    read: (f, t, p) => {
      const got = src.read(f, t, p);
      const note = <R extends { json: string }>(rows: R[]): R[] => {
        reads.push({ rows: rows.length, bytes: rows.reduce((n, r) => n + r.json.length, 0) });
        return rows;
      };
      return got instanceof Promise ? got.then(note) : note(got);
    },
    release: () => src.release(),
  };
}

before(async () => {
  if (PG_URL === undefined) return;
  const url = await freshSchema(PG_URL, `pgcur_${process.pid}`);
  store = await PgStore.open({ url, poolSize: 4, statementTimeoutMs: 30_000, offsetMs: () => 0, log: () => undefined });
  db = (store as unknown as { db: Db }).db;
});
after(async () => {
  await store?.close();
});

test('a FETCH of large rows holds about BATCH_BYTES, not BATCH_ROWS rows', { skip }, async () => {
  const pad = 40_000; // 1,024 such rows would be 40 MB in one FETCH
  const n = 1_100;
  await fill('big', n, pad);
  const reads: Array<{ rows: number; bytes: number }> = [];
  const src = recording(await CursorSource.open(db, 'big', 0), reads);
  const text = await textOf(findText(src, compileWheres({}), { wheres: {} }, undefined));
  const got = JSON.parse(text) as Array<{ i: number }>;
  assert.deepEqual(got.map((r) => r.i), [...Array(n).keys()], 'every row, in order');
  const rowBytes = reads[0].bytes / reads[0].rows;
  assert.ok(rowBytes > pad, `rows of about ${pad} bytes (${rowBytes})`);
  assert.ok(reads[0].rows < BATCH_ROWS, `the first FETCH is small (${reads[0].rows} rows)`);
  // The first FETCH knows no row size yet (64 rows); each later one is sized from the one before.
  for (const r of reads.slice(1)) assert.ok(r.bytes <= BATCH_BYTES + rowBytes * 2, `a FETCH of ${r.rows} rows held ${r.bytes} bytes (limit about ${BATCH_BYTES})`);
  // About n × rowBytes / BATCH_BYTES reads (plus the small first one), not n / BATCH_ROWS.
  assert.ok(reads.length >= Math.floor((n * rowBytes) / BATCH_BYTES), `${reads.length} reads`);
});

test('a cursor that runs out before the row count stops there (no empty FETCHes)', { skip }, async () => {
  const n = 3_000;
  await fill('tail', n, 10);
  const reads: Array<{ rows: number; bytes: number }> = [];
  // Only the last 10 rows lie above `after`; the row count says 3,000.
  const src = recording(await CursorSource.open(db, 'tail', n - 10), reads);
  assert.equal(src.length, n);
  const got = JSON.parse(await textOf(findText(src, compileWheres({}), { wheres: {} }, undefined))) as Array<{ i: number }>;
  assert.deepEqual(got.map((r) => r.i), [...Array(10).keys()].map((k) => n - 10 + k));
  assert.deepEqual(reads.map((r) => r.rows), [10], 'one FETCH, short, and nothing after it');
  assert.equal(src.length, 10, 'the length is cut to the rows there were');
  // The same through the store's own answer for a query with `after`.
  const viaStore = JSON.parse(await textOf(await store!.tables.find('tail', { wheres: { i: { $gte: n - 5 } }, after: n - 10 }))) as Array<{ i: number }>;
  assert.deepEqual(viaStore.map((r) => r.i), [n - 5, n - 4, n - 3, n - 2, n - 1]);
});
