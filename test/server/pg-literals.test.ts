/**
 * The shared store writes table names and index paths into SQL as string
 * literals (src/store/postgres/indexes.ts `lit`). Those literals must mean
 * the same whatever the session's standard_conforming_strings: with it off
 * (a setting a database or role may carry), a backslash in a plain '…'
 * literal escapes the quote after it, so a name like `x\'; …` would end the
 * literal and run the rest as SQL. Runs on the PostgreSQL pass only.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, expectSuccess, type Res } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
const schema = `lit${process.pid}`;
let srv: PithosServer;

before(async () => {
  if (skip) return;
  const u = new URL(await freshSchema(PG_URL as string, schema));
  u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c standard_conforming_strings=off`);
  srv = await PithosServer.start({ store: u.toString() });
});

after(async () => {
  await srv?.close();
});

async function exists(rel: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return (await c.query('SELECT to_regclass($1) IS NOT NULL AS ok', [`${schema}.${rel}`])).rows[0].ok === true;
  } finally {
    await c.end();
  }
}

test("standard_conforming_strings off: a table name or index path with \\' runs no SQL, and indexed queries answer as ever", { skip }, async () => {
  const enc = encodeURIComponent;
  const table = "x\\'; COMMIT; DROP TABLE pithos_locks; --";
  const field = "f\\'; COMMIT; DROP TABLE pithos_records; --";
  expectSuccess(await srv.req('PUT', `/tables/${enc(table)}`), 201, 'table created successfully');
  for (const v of [3, 1, 2]) {
    assert.equal((await srv.req('POST', `/tables/${enc(table)}/rows`, { rows: { a: v, [field]: v } })).status, 201);
  }
  expectSuccess(await srv.req('PUT', `/tables/${enc(table)}/indexes/a`), 201, 'index created successfully');
  expectSuccess(await srv.req('PUT', `/tables/${enc(table)}/indexes/${enc(field)}`), 201, 'index created successfully');
  // Past the node's cache of index definitions, so the queries below go through them (built or not).
  await new Promise((r) => setTimeout(r, 1100));
  const query = (body: unknown) => srv.req('POST', `/tables/${enc(table)}/query`, body);
  const desc = await query({ wheres: {}, order: [{ field: 'a', dir: 'desc' }], limit: 2, fields: ['a'] });
  const byField = await query({ wheres: { $field: [field], $gte: 2 }, fields: ['a'] });
  assert.ok(await exists('pithos_locks'), 'pithos_locks is still there');
  assert.ok(await exists('pithos_records'), 'pithos_records is still there');
  const data = (r: Res): unknown => {
    expectSuccess(r, 200, 'table queried rows successfully', r.body?.data);
    return r.body.data;
  };
  assert.deepEqual(data(desc), [{ a: 3 }, { a: 2 }]);
  assert.deepEqual(data(byField), [{ a: 3 }, { a: 2 }]);
  assert.deepEqual(data(await query({ wheres: {}, order: [{ field: 'a' }], limit: 2, fields: ['a'] })), [{ a: 1 }, { a: 2 }]);
  expectSuccess(await srv.req('PATCH', `/tables/${enc(table)}`, { wheres: { a: 1 }, sets: { b: true } }), 200, 'table rows patched successfully');
  assert.deepEqual(data(await query({ wheres: { a: 1, b: true }, fields: ['a'] })), [{ a: 1 }]);
  let listed = '';
  for (let i = 0; i < 100; i++) {
    listed = (await srv.req('GET', `/tables/${enc(table)}/indexes`)).raw;
    if (!listed.includes('"ready":false')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.doesNotMatch(listed, /"ready":false/, 'both indexes get built');
});

test(
  "standard_conforming_strings off: a /txns sent in one round trip carries names and values with \\' and quotes exactly, and runs no SQL",
  { skip },
  async () => {
    const enc = encodeURIComponent;
    const name = "v\\'; COMMIT; DROP TABLE pithos_locks; --";
    const rec = "r\\'; COMMIT; DROP TABLE pithos_variants; --";
    const table = "t\\'; COMMIT; DROP TABLE pithos_tables; --";
    const values = { s: 'it\'s a \\\' back\\slash "quoted"', n: 1 };
    expectSuccess(await srv.req('PUT', `/variants/${enc(name)}`, { variant: 40 }), 201, 'variant created successfully', { variant: 40 });
    expectSuccess(await srv.req('PUT', `/tables/${enc(table)}`), 201, 'table created successfully');
    const r = await srv.req('POST', '/txns', {
      mutations: [
        { kind: 'variant', name, operation: 'ADD', delta: 2 },
        { kind: 'record', name: rec, operation: 'PUT', values },
        { name: table, operation: 'INSERT', values },
        { kind: 'variant', name: `${name}-set`, operation: 'SET', variant: "a 'string' \\" },
      ],
    });
    expectSuccess(r, 200, 'transaction execute successfully', { results: [{ variant: 42 }, {}, { t_id: 1 }, {}] });
    for (const t of ['pithos_locks', 'pithos_variants', 'pithos_tables', 'pithos_records']) assert.ok(await exists(t), `${t} is still there`);
    assert.deepEqual((await srv.req('GET', `/records/${enc(rec)}`)).body.data, values);
    assert.deepEqual((await srv.req('GET', `/variants/${enc(`${name}-set`)}`)).body.data, { variant: "a 'string' \\" });
    assert.deepEqual((await srv.req('GET', `/tables/${enc(table)}`)).body.data, { '1': values });
  },
);
