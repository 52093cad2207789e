/**
 * The shared store's paged reads of a large table (src/store/postgres/cursor.ts,
 * docs/query.md "Large answers"): a batch holds at most BATCH_BYTES of rows
 * (and one row more), also when rows are large or their sizes change, and a
 * read that runs out of rows ends there instead of reading empty batches. Needs PostgreSQL: runs in the PostgreSQL pass of `npm test`.
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

test('a batch of large rows holds about BATCH_BYTES, not BATCH_ROWS rows', { skip }, async () => {
  const pad = 40_000; // 1,024 such rows would be 40 MB in one FETCH
  const n = 1_100;
  await fill('big', n, pad);
  const reads: Array<{ rows: number; bytes: number }> = [];
  const src = recording(await CursorSource.open(db, 'big', 0), reads);
  const text = await textOf(findText(src, compileWheres({}), { wheres: {} }, undefined));
  const got = JSON.parse(text) as Array<{ i: number }>;
  assert.deepEqual(
    got.map((r) => r.i),
    [...Array(n).keys()],
    'every row, in order',
  );
  const rowBytes = reads[0].bytes / reads[0].rows;
  assert.ok(rowBytes > pad, `rows of about ${pad} bytes (${rowBytes})`);
  assert.ok(reads[0].rows < BATCH_ROWS, `the first batch is small (${reads[0].rows} rows)`);
  // A batch stops before the row that would take it past BATCH_BYTES (always one row at least).
  for (const r of reads) assert.ok(r.bytes <= BATCH_BYTES + rowBytes, `a FETCH of ${r.rows} rows held ${r.bytes} bytes (limit about ${BATCH_BYTES})`);
  // About n × rowBytes / BATCH_BYTES reads, not n / BATCH_ROWS.
  assert.ok(reads.length >= Math.floor((n * rowBytes) / (BATCH_BYTES + rowBytes)), `${reads.length} reads`);
});

test('small rows then large ones: no batch holds more than BATCH_BYTES and one row (found in review)', { skip }, async () => {
  await store!.tables.create('mixed', 0);
  const big = 'y'.repeat(40_000);
  for (let from = 0; from < 1_100; from += 100) {
    const mutations = [];
    for (let i = from; i < from + 100; i++)
      mutations.push({ kind: 'table' as const, name: 'mixed', op: 'INSERT' as const, values: { i, filler: i < 64 ? '' : big } });
    await store!.transact({ checks: [], mutations, serializable: false });
  }
  const reads: Array<{ rows: number; bytes: number }> = [];
  const src = recording(await CursorSource.open(db, 'mixed', 0), reads);
  const got = JSON.parse(await textOf(findText(src, compileWheres({}), { wheres: {} }, undefined))) as Array<{ i: number }>;
  assert.deepEqual(
    got.map((r) => r.i),
    [...Array(1_100).keys()],
  );
  for (const r of reads)
    assert.ok(r.bytes <= BATCH_BYTES + 41_000, `a batch of ${r.rows} rows held ${r.bytes} bytes (${JSON.stringify(reads.map((x) => x.rows))})`);
});

test('a read that runs out of rows stops there (no empty pages up to a row count)', { skip }, async () => {
  const n = 3_000;
  await fill('tail', n, 10);
  const reads: Array<{ rows: number; bytes: number }> = [];
  // Only the last 10 rows lie above `after`; the table has 3,000.
  const src = recording(await CursorSource.open(db, 'tail', n - 10), reads);
  assert.equal(src.length, Infinity, 'unknown until the rows run out');
  const got = JSON.parse(await textOf(findText(src, compileWheres({}), { wheres: {} }, undefined))) as Array<{ i: number }>;
  assert.deepEqual(
    got.map((r) => r.i),
    [...Array(10).keys()].map((k) => n - 10 + k),
  );
  assert.deepEqual(
    reads.map((r) => r.rows),
    [10],
    'one page, short, and nothing after it',
  );
  assert.equal(src.length, 10, 'the length is cut to the rows there were');
  // The same through the store's own answer for a query with `after`.
  const viaStore = JSON.parse(await textOf(await store!.tables.find('tail', { wheres: { i: { $gte: n - 5 } }, after: n - 10 }))) as Array<{ i: number }>;
  assert.deepEqual(
    viaStore.map((r) => r.i),
    [n - 5, n - 4, n - 3, n - 2, n - 1],
  );
});
