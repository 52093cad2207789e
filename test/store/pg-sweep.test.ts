/**
 * The shared store's sweeper (src/store/postgres/index.ts, `sweep`): a round
 * that fails for a reason other than the database going away (a SQL error
 * here) is logged with its cause, and the next round is left to try again.
 * Needs PostgreSQL: runs in the PostgreSQL pass of `npm test`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgStore } from '../../src/store/postgres/index.js';
import type { Db } from '../../src/store/postgres/sql.js';
import { freshSchema } from '../helpers/postgres.js';

const PG_URL = process.env.PITHOS_TEST_STORE;
const skip = PG_URL === undefined ? 'needs PostgreSQL (runs in the PostgreSQL pass of npm test)' : false;
let store: PgStore | undefined;
let db: Db;
const logged: Array<{ level: string; msg: string }> = [];

before(async () => {
  if (PG_URL === undefined) return;
  const url = await freshSchema(PG_URL, `pgsweep_${process.pid}`);
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
