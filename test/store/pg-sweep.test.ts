/**
 * The shared store's sweeper (src/store/postgres/index.ts, `sweep`): a round
 * that fails for a reason other than the database going away (a SQL error
 * here) is logged with its cause, and the next round is left to try again;
 * a row another transaction holds is skipped, not waited for.
 * Needs PostgreSQL: runs in the PostgreSQL pass of `npm test`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { PgStore } from '../../src/store/postgres/index.js';
import type { Db } from '../../src/store/postgres/sql.js';
import { freshSchema } from '../helpers/postgres.js';

const PG_URL = process.env.PITHOS_TEST_STORE;
const skip = PG_URL === undefined ? 'needs PostgreSQL (runs in the PostgreSQL pass of npm test)' : false;
let store: PgStore | undefined;
let db: Db;
let url: string;
const logged: Array<{ level: string; msg: string }> = [];

before(async () => {
  if (PG_URL === undefined) return;
  url = await freshSchema(PG_URL, `pgsweep_${process.pid}`);
  store = await PgStore.open({ url, poolSize: 2, statementTimeoutMs: 30_000, offsetMs: () => 0, log: (level, msg) => logged.push({ level, msg }) });
  db = (store as unknown as { db: Db }).db;
});
after(async () => {
  await store?.close();
});

test('a sweep that fails on a SQL error logs the error, and the next one runs', { skip }, async () => {
  await store!.records.put('r', { a: 1 }, 1);
  await db.q.query('ALTER TABLE pithos_variants RENAME TO pithos_variants_away');
  try {
    await store!.sweep();
  } finally {
    await db.q.query('ALTER TABLE pithos_variants_away RENAME TO pithos_variants');
  }
  const failed = logged.filter((l) => /sweep of expired objects failed/.test(l.msg));
  assert.ok(failed.length >= 1, `logged: ${JSON.stringify(logged)}`);
  assert.equal(failed[0].level, 'warn');
  assert.match(failed[0].msg, /pithos_variants/, 'the cause is in the line');
  // The record's ttl of 1 s ends; the next round removes it.
  await new Promise((r) => setTimeout(r, 1100));
  await store!.sweep();
  const left = await db.q.query(`SELECT count(*) AS n FROM pithos_records WHERE id = 'r'`);
  assert.equal(Number(left[0].n), 0);
});

test('a sweep skips the expired rows another transaction holds, and the next round takes them', { skip }, async () => {
  await store!.variants.put('held', { value: 1, text: '1' }, 1);
  await store!.variants.put('free', { value: 1, text: '1' }, 1);
  await store!.lists.put('held-list', ['a', 'b'], 1);
  await new Promise((r) => setTimeout(r, 1100));
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  const rows = async (sql: string): Promise<number> => Number((await db.q.query(sql))[0].n);
  try {
    await other.query('BEGIN');
    await other.query(`SELECT 1 FROM pithos_variants WHERE name = 'held' FOR UPDATE`);
    await other.query(`SELECT 1 FROM pithos_lists WHERE name = 'held-list' FOR UPDATE`);
    // A sweep that waited for those locks would still be waiting when this timer fires.
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<string>((r) => (timer = setTimeout(() => r('waited'), 10_000)));
    const outcome = await Promise.race([store!.sweep().then(() => 'done'), waited]);
    clearTimeout(timer);
    assert.equal(outcome, 'done', 'the sweep waited for a row another transaction holds');
    assert.equal(await rows(`SELECT count(*) AS n FROM pithos_variants WHERE name = 'free'`), 0);
    assert.equal(await rows(`SELECT count(*) AS n FROM pithos_variants WHERE name = 'held'`), 1);
    assert.equal(await rows(`SELECT count(*) AS n FROM pithos_lists WHERE name = 'held-list'`), 1);
    // A skipped collection keeps its elements with its header: nothing is left half swept.
    assert.equal(await rows(`SELECT count(*) AS n FROM pithos_list_items WHERE name = 'held-list'`), 2);
  } finally {
    await other.query('ROLLBACK');
    await other.end();
  }
  await store!.sweep();
  assert.equal(await rows(`SELECT count(*) AS n FROM pithos_variants WHERE name = 'held'`), 0);
  assert.equal(await rows(`SELECT count(*) AS n FROM pithos_lists WHERE name = 'held-list'`), 0);
  assert.equal(await rows(`SELECT count(*) AS n FROM pithos_list_items WHERE name = 'held-list'`), 0);
});
