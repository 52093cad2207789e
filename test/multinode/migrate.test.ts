/**
 * Upgrading a shared store written before versions existed (schema
 * migration 1 only, with data in it): three nodes started at the same
 * moment apply migration 2 once between them, every existing record,
 * variant and row gets a version of its own, and conditional writes work
 * on the old data. Runs on the PostgreSQL pass of `npm test` only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { MIGRATIONS } from '../../src/store/postgres/schema.js';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, etag, expectError, expectSuccess } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;

test('a schema at migration 1 with data: 3 nodes at once migrate it once; old objects get distinct versions', { skip }, async () => {
  const url = await freshSchema(PG_URL as string, `upgrade${process.pid}`);
  // The schema as a node before versions left it, by hand.
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE pithos_migrations (version INT8 PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
    const m1 = MIGRATIONS.find((m) => m.version === 1)!;
    for (const s of m1.statements) await c.query(s);
    await c.query('INSERT INTO pithos_migrations (version, name) VALUES (1, $1)', [m1.name]);
    await c.query(`INSERT INTO pithos_records (id, body) VALUES ('a', '{"x":1}'), ('b', '{"x":2}')`);
    await c.query(`INSERT INTO pithos_variants (name, t, v) VALUES ('n', 'i', '5')`);
    await c.query(`INSERT INTO pithos_tables (name, inc, next_id) VALUES ('t', nextval('pithos_seq'), 3)`);
    await c.query(`INSERT INTO pithos_rows (tname, inc, t_id, body) SELECT 't', inc, g, '{"i":' || g || '}' FROM pithos_tables, generate_series(1, 2) g`);
  } finally {
    await c.end();
  }
  const nodes = await Promise.all(Array.from({ length: 3 }, () => PithosServer.start({ store: url, testClock: false })));
  try {
    const applied = nodes.filter((n) => /applied schema migration\(s\) 2/.test(n.stdout + n.stderr)).length;
    assert.equal(applied, 1, 'exactly one node applied migration 2');
    const va = etag(await nodes[0].req('GET', '/records/a'));
    const vb = etag(await nodes[1].req('GET', '/records/b'));
    const vn = etag(await nodes[2].req('GET', '/variants/n'));
    assert.equal(new Set([va, vb, vn]).size, 3, 'distinct versions');
    assert.ok(Math.min(va, vb, vn) > 0);
    expectSuccess(await nodes[1].req('GET', '/tables/t/rows', { wheres: {} }), 200, 'table queried rows successfully', [{ i: 1 }, { i: 2 }]);
    // The table's t_id sequence (migration 10) starts where its counter stood; its row count came along.
    expectSuccess(await nodes[2].req('POST', '/tables/t/rows', { rows: { i: 3 } }), 201, 'table rows insert successfully', { t_id: 3 });
    assert.deepEqual((await nodes[0].req('GET', '/tables')).body.data.items, [{ name: 't', ttl_ms: null, rows: 3 }]);
    expectError(await nodes[2].req('PUT', '/records/a', { record: { x: 9 }, if_absent: true }), 412, `record 'a' already exists (version ${va})`);
    expectSuccess(await nodes[2].req('PUT', '/records/a', { record: { x: 9 }, if_version: va }), 200, 'record created successfully');
    assert.ok(etag(await nodes[0].req('GET', '/records/a')) > Math.max(va, vb, vn), 'a new write is above every migrated version');
    const p = new pg.Client({ connectionString: url });
    await p.connect();
    try {
      const r = await p.query('SELECT count(*)::int AS n, count(DISTINCT version)::int AS d FROM pithos_rows WHERE t_id <= 2');
      assert.deepEqual(r.rows[0], { n: 2, d: 2 }, 'migrated rows have versions of their own');
      const m = await p.query('SELECT version FROM pithos_migrations ORDER BY version');
      assert.deepEqual(
        m.rows.map((x) => Number(x.version)),
        MIGRATIONS.map((x) => x.version),
      );
    } finally {
      await p.end();
    }
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
});
