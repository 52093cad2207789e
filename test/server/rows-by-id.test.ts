/**
 * One row by its t_id (docs/api.md, "One row by t_id"), black-box on a real
 * server: GET / PUT / PATCH (sets + unset) / DELETE /tables/<name>/rows/<t_id>
 * with their messages, ETag and conditions (if_version, If-Match), 400 for
 * every malformed t_id, 404 for a missing row or table, PUT never creating;
 * indexes, the change feed, the listing's row count and restarts following
 * each write; and the by-t_id forms of POST /txns (UPDATE, REMOVE with t_id,
 * REPLACE). Every refused request is checked to change nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, STORE, expectError, expectSuccess, pool, sleep, uniq, etag } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

/** A new table holding `rows`, inserted in order (t_ids 1..n). */
async function table(rows: Record<string, unknown>[]): Promise<string> {
  const t = uniq('rt');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  for (const row of rows) assert.equal((await srv.req('POST', `/tables/${t}/rows`, { rows: row })).status, 201);
  return t;
}

/** The whole table as the server holds it (t_id → row). */
async function whole(t: string): Promise<Record<string, unknown>> {
  const r = await srv.req('GET', `/tables/${t}`);
  assert.equal(r.status, 200, r.raw);
  return r.body.data as Record<string, unknown>;
}

/** The `rows` the listing shows for the table. */
async function listedRows(t: string): Promise<number> {
  const r = await srv.req('GET', `/tables?prefix=${t}&limit=1`);
  assert.equal(r.body.data.items[0].name, t);
  return r.body.data.items[0].rows as number;
}

test('GET answers the row with its version as ETag; HEAD the same headers; 404 names the row or the table', async () => {
  const t = await table([
    { name: 'ann', tags: ['a'] },
    { name: 'bob', address: { city: 'Oslo' } },
  ]);
  const g = await srv.req('GET', `/tables/${t}/rows/2`);
  expectSuccess(g, 200, 'table row queried successfully', { name: 'bob', address: { city: 'Oslo' } });
  const v2 = etag(g);
  const v1 = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  assert.ok(v2 > v1, 'the later insert has the later version');
  assert.equal(etag(await srv.req('GET', `/tables/${t}/rows/2`)), v2, 'a read does not change the version');
  const h = await srv.req('HEAD', `/tables/${t}/rows/2`);
  assert.equal(h.status, 200);
  assert.equal(h.raw, '');
  assert.equal(etag(h), v2);
  // The row's text is answered exactly as stored (key order kept).
  assert.equal(g.raw, '{"status":"success","message":"table row queried successfully","data":{"name":"bob","address":{"city":"Oslo"}}}');

  expectError(await srv.req('GET', `/tables/${t}/rows/3`), 404, `row 3 of table '${t}' does not exist`);
  expectError(await srv.req('GET', `/tables/${t}/rows/9007199254740991`), 404, `row 9007199254740991 of table '${t}' does not exist`);
  expectError(await srv.req('GET', `/tables/ghost-${t}/rows/1`), 404, `table 'ghost-${t}' does not exist`);
  // A GET takes no query parameters and no body fields.
  expectError(await srv.req('GET', `/tables/${t}/rows/1?x=1`), 400, "unknown query parameter 'x': this endpoint takes none");
  expectError(await srv.req('GET', `/tables/${t}/rows/1`, { wheres: {} }), 400, "unknown field 'wheres': this endpoint takes no body fields");
});

test('a t_id that is not a positive decimal integer is 400 on every method, and changes nothing', async () => {
  const t = await table([{ a: 1 }, { a: 2 }]);
  const before = await whole(t);
  const bad: Array<[string, string]> = [
    ['0', "t_id must be a positive integer in decimal, not '0'"],
    ['-1', "t_id must be a positive integer in decimal, not '-1'"],
    ['1.5', "t_id must be a positive integer in decimal, not '1.5'"],
    ['1.0', "t_id must be a positive integer in decimal, not '1.0'"],
    ['abc', "t_id must be a positive integer in decimal, not 'abc'"],
    ['1e3', "t_id must be a positive integer in decimal, not '1e3'"],
    ['01', "t_id must be a positive integer in decimal, not '01'"],
    ['+1', "t_id must be a positive integer in decimal, not '+1'"],
    ['0x1', "t_id must be a positive integer in decimal, not '0x1'"],
    ['%201', "t_id must be a positive integer in decimal, not ' 1'"],
    ['', "t_id must be a positive integer in decimal, not ''"],
    ['9007199254740992', "t_id must be at most 9007199254740991, not '9007199254740992'"],
    ['99999999999999999999999', "t_id must be at most 9007199254740991, not '99999999999999999999999'"],
    // 300 digits pass the digit test; the bound refuses them, and the message shows only their start.
    ['1'.repeat(300), `t_id must be at most 9007199254740991, not '${'1'.repeat(32)}…'`],
  ];
  for (const [id, message] of bad) {
    expectError(await srv.req('GET', `/tables/${t}/rows/${id}`), 400, message);
    expectError(await srv.req('PUT', `/tables/${t}/rows/${id}`, { rows: { b: 1 } }), 400, message);
    expectError(await srv.req('PATCH', `/tables/${t}/rows/${id}`, { sets: { b: 1 } }), 400, message);
    expectError(await srv.req('DELETE', `/tables/${t}/rows/${id}`), 400, message);
  }
  // Even on a table that does not exist, a malformed t_id is the client's mistake first.
  expectError(await srv.req('GET', `/tables/ghost-${t}/rows/abc`), 400, "t_id must be a positive integer in decimal, not 'abc'");
  assert.deepEqual(await whole(t), before);
  assert.equal(await listedRows(t), 2);
});

test('PUT replaces the row whole, keeps its t_id, gives it a new version; never creates a row', async () => {
  const t = await table([{ a: 1, b: { c: 2 } }, { a: 2 }]);
  const v0 = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  expectSuccess(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: { z: [1, 2] } }), 200, 'table row replaced successfully');
  const g = await srv.req('GET', `/tables/${t}/rows/1`);
  expectSuccess(g, 200, 'table row queried successfully', { z: [1, 2] });
  assert.ok(etag(g) > v0);
  expectSuccess(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {} }), 200, 'table row replaced successfully');
  assert.deepEqual(await whole(t), { 1: {}, 2: { a: 2 } });

  // Never creates: not a row past the end, not a deleted row.
  expectError(await srv.req('PUT', `/tables/${t}/rows/3`, { rows: { x: 1 } }), 404, `row 3 of table '${t}' does not exist`);
  expectSuccess(await srv.req('DELETE', `/tables/${t}/rows/2`), 200, 'table row removed successfully');
  expectError(await srv.req('PUT', `/tables/${t}/rows/2`, { rows: { x: 1 } }), 404, `row 2 of table '${t}' does not exist`);
  expectError(await srv.req('PUT', `/tables/ghost-${t}/rows/1`, { rows: { x: 1 } }), 404, `table 'ghost-${t}' does not exist`);
  assert.deepEqual(await whole(t), { 1: {} });
  // ... and t_ids stay the server's: the next insert is 3, neither 2 nor a t_id a PUT named.
  expectSuccess(await srv.req('POST', `/tables/${t}/rows`, { rows: { n: 3 } }), 201, 'table rows insert successfully', { t_id: 3 });

  // Bad bodies: 400 naming the field, nothing written.
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`), 400, "field 'rows' is required (an object)");
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: [1] }), 400, "field 'rows' must be an object");
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { row: { x: 1 } }), 400, "unknown field 'row' (allowed: rows, if_version)");
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: { x: 1 }, ttl: 5 }), 400, "unknown field 'ttl' (allowed: rows, if_version)");
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, '{"rows":'), 400);
  assert.deepEqual(await whole(t), { 1: {}, 3: { n: 3 } });
});

test('PATCH merges sets as a table PATCH does, then removes the fields of unset', async () => {
  const t = await table([
    { a: 1, b: { c: 1, d: 2 }, keep: true, gone: 'x' },
    { a: 1, b: { c: 1, d: 2 }, keep: true, gone: 'x' },
  ]);
  const v0 = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  expectSuccess(
    await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { a: 2, b: { c: 9 }, n: null }, unset: ['gone', 'never-there'] }),
    200,
    'table row patched successfully',
  );
  const g = await srv.req('GET', `/tables/${t}/rows/1`);
  // a nested value replaces its field whole; null is a value here (as in a table PATCH), not a removal
  expectSuccess(g, 200, 'table row queried successfully', { a: 2, b: { c: 9 }, keep: true, n: null });
  assert.ok(etag(g) > v0);
  // Only that row: the identical row 2 is untouched.
  assert.deepEqual((await whole(t))[2], { a: 1, b: { c: 1, d: 2 }, keep: true, gone: 'x' });
  // unset alone (with empty sets); field names that mean something to JavaScript are plain names.
  await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: { ['__proto__']: 1, constructor: 2 } });
  expectSuccess(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {}, unset: ['__proto__', 'keep', 'b'] }), 200, 'table row patched successfully');
  expectSuccess(await srv.req('GET', `/tables/${t}/rows/2`), 200, 'table row queried successfully', { a: 1, gone: 'x', constructor: 2 });
  // An empty PATCH is a write: a new version, the same row.
  const v2 = etag(await srv.req('GET', `/tables/${t}/rows/2`));
  expectSuccess(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {} }), 200, 'table row patched successfully');
  assert.ok(etag(await srv.req('GET', `/tables/${t}/rows/2`)) > v2);

  const before = await whole(t);
  const v = etag(await srv.req('GET', `/tables/${t}/rows/2`));
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, {}), 400, "field 'sets' is required (an object)");
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, { unset: ['a'] }), 400, "field 'sets' is required (an object)");
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: [] }), 400, "field 'sets' must be an object");
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {}, unset: 'a' }), 400, "field 'unset' must be an array");
  expectError(
    await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {}, unset: ['a', 1] }),
    400,
    "field 'unset' must hold field names (strings); element 1 is not a string",
  );
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {}, unset: ['a', 'a'] }), 400, "field 'unset' names 'a' twice");
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: { a: 5 }, unset: ['a'] }), 400, "field 'a' is both in 'sets' and in 'unset'");
  expectError(await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {}, wheres: {} }), 400, "unknown field 'wheres' (allowed: sets, unset, if_version)");
  expectError(await srv.req('PATCH', `/tables/${t}/rows/3`, { sets: { a: 1 } }), 404, `row 3 of table '${t}' does not exist`);
  expectError(await srv.req('PATCH', `/tables/ghost-${t}/rows/1`, { sets: { a: 1 } }), 404, `table 'ghost-${t}' does not exist`);
  assert.deepEqual(await whole(t), before);
  assert.equal(etag(await srv.req('GET', `/tables/${t}/rows/2`)), v, 'a refused PATCH writes nothing');
});

test('DELETE removes exactly one of two identical rows; the listing count follows; a second DELETE is 404', async () => {
  const t = await table([{ same: 1 }, { same: 1 }, { other: 1 }]);
  assert.equal(await listedRows(t), 3);
  expectSuccess(await srv.req('DELETE', `/tables/${t}/rows/1`), 200, 'table row removed successfully');
  assert.deepEqual(await whole(t), { 2: { same: 1 }, 3: { other: 1 } });
  assert.equal(await listedRows(t), 2);
  expectError(await srv.req('GET', `/tables/${t}/rows/1`), 404, `row 1 of table '${t}' does not exist`);
  expectError(await srv.req('DELETE', `/tables/${t}/rows/1`), 404, `row 1 of table '${t}' does not exist`);
  expectError(await srv.req('DELETE', `/tables/${t}/rows/1`, { wheres: {} }), 400, "unknown field 'wheres' (allowed: if_version)");
  expectError(await srv.req('DELETE', `/tables/ghost-${t}/rows/2`), 404, `table 'ghost-${t}' does not exist`);
  // PUT and PATCH leave the count alone.
  await srv.req('PUT', `/tables/${t}/rows/2`, { rows: { x: 1 } });
  await srv.req('PATCH', `/tables/${t}/rows/3`, { sets: { y: 1 } });
  assert.equal(await listedRows(t), 2);
  // The query paths agree with the single-row ones.
  const q = await srv.req('POST', `/tables/${t}/query`, { wheres: {}, with_ids: true });
  expectSuccess(q, 200, 'table queried rows successfully', [
    { t_id: 2, row: { x: 1 } },
    { t_id: 3, row: { other: 1, y: 1 } },
  ]);
  // After a drop and a new table of the same name, t_id 1 is the new table's row.
  await srv.req('DELETE', `/tables/${t}`);
  expectError(await srv.req('GET', `/tables/${t}/rows/2`), 404, `table '${t}' does not exist`);
  await srv.req('PUT', `/tables/${t}`);
  await srv.req('POST', `/tables/${t}/rows`, { rows: { fresh: true } });
  expectSuccess(await srv.req('GET', `/tables/${t}/rows/1`), 200, 'table row queried successfully', { fresh: true });
  expectError(await srv.req('GET', `/tables/${t}/rows/2`), 404, `row 2 of table '${t}' does not exist`);
});

test('PUT, PATCH and DELETE take if_version or If-Match: 412 names the row and its version, and writes nothing', async () => {
  const t = await table([{ n: 1 }, { n: 2 }]);
  const v = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  const changed = `row 1 of table '${t}' changed (version ${v})`;
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: { n: 9 }, if_version: v - 1 }), 412, changed);
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: { n: 9 } }, { 'If-Match': `"${v + 1}"` }), 412, changed);
  expectError(await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { n: 9 }, if_version: v + 5 }), 412, changed);
  expectError(await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { n: 9 } }, { 'If-Match': '"1"' }), 412, changed);
  expectError(await srv.req('DELETE', `/tables/${t}/rows/1`, { if_version: 0 }), 412, changed);
  expectError(await srv.req('DELETE', `/tables/${t}/rows/1`, undefined, { 'If-Match': `"${v - 1}"` }), 412, changed);
  assert.deepEqual(await whole(t), { 1: { n: 1 }, 2: { n: 2 } });
  assert.equal(etag(await srv.req('GET', `/tables/${t}/rows/1`)), v);

  // Malformed or doubled conditions are 400; a row is never created, so If-None-Match has no meaning.
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {}, if_version: -1 }), 400, "field 'if_version' must be an integer ≥ 0 (a version)");
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {}, if_version: '1' }), 400, "field 'if_version' must be an integer ≥ 0 (a version)");
  expectError(
    await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {} }, { 'If-Match': '*' }),
    400,
    `header 'If-Match' must be one quoted version, such as "12" (as ETag gives it)`,
  );
  expectError(
    await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {}, if_version: v }, { 'If-Match': `"${v}"` }),
    400,
    'give at most one condition: if_version, if_absent, If-Match or If-None-Match',
  );
  expectError(
    await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {} }, { 'If-None-Match': '*' }),
    400,
    "header 'If-None-Match' does not apply to a row: a row is created by POST /tables/<name>/rows, never by PUT",
  );
  expectError(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: {}, if_absent: true }), 400, "unknown field 'if_absent' (allowed: rows, if_version)");
  assert.equal(etag(await srv.req('GET', `/tables/${t}/rows/1`)), v);

  // A condition on a row that is not there: 412 (no version to match), as for records.
  expectError(await srv.req('PUT', `/tables/${t}/rows/7`, { rows: {}, if_version: v }), 412, `row 7 of table '${t}' does not exist (expected version ${v})`);

  // Matching conditions write, and each write moves the version on.
  expectSuccess(await srv.req('PUT', `/tables/${t}/rows/1`, { rows: { n: 10 }, if_version: v }), 200, 'table row replaced successfully');
  const v1 = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  assert.ok(v1 > v);
  expectSuccess(await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { m: 1 } }, { 'If-Match': `"${v1}"` }), 200, 'table row patched successfully');
  const v2 = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  assert.ok(v2 > v1);
  expectError(await srv.req('DELETE', `/tables/${t}/rows/1`, undefined, { 'If-Match': `"${v1}"` }), 412, `row 1 of table '${t}' changed (version ${v2})`);
  expectSuccess(await srv.req('DELETE', `/tables/${t}/rows/1`, { if_version: v2 }), 200, 'table row removed successfully');
  expectError(await srv.req('DELETE', `/tables/${t}/rows/1`, { if_version: v2 }), 412, `row 1 of table '${t}' does not exist (expected version ${v2})`);
  // A write to another row does not change this row's version.
  const w = etag(await srv.req('GET', `/tables/${t}/rows/2`));
  await srv.req('POST', `/tables/${t}/rows`, { rows: { n: 3 } });
  await srv.req('PATCH', `/tables/${t}/rows/3`, { sets: { n: 4 } });
  assert.equal(etag(await srv.req('GET', `/tables/${t}/rows/2`)), w);
  // A table-wide PATCH that touches the row gives it a new version, visible here.
  await srv.req('PATCH', `/tables/${t}`, { wheres: { n: 2 }, sets: { seen: true } });
  assert.ok(etag(await srv.req('GET', `/tables/${t}/rows/2`)) > w);
});

test('50 concurrent read-modify-write loops on one row with If-Match apply every increment exactly once', async () => {
  const t = await table([{ n: 0 }, { n: 0 }]);
  const loops = 50;
  const perLoop = 2;
  let conflicts = 0;
  await pool(
    Array.from({ length: loops }, (_, i) => i),
    loops,
    async () => {
      for (let k = 0; k < perLoop; k++) {
        for (let attempt = 0; ; attempt++) {
          assert.ok(attempt < 1000, 'a loop made no progress');
          const g = await srv.req('GET', `/tables/${t}/rows/1`);
          const n = (g.body.data as { n: number }).n;
          const w = await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { n: n + 1 } }, { 'If-Match': String(g.headers.etag) });
          if (w.status === 200) break;
          expectError(w, 412, new RegExp(`^row 1 of table '${t}' changed \\(version \\d+\\)$`));
          conflicts++;
        }
      }
    },
  );
  expectSuccess(await srv.req('GET', `/tables/${t}/rows/1`), 200, 'table row queried successfully', { n: loops * perLoop });
  expectSuccess(await srv.req('GET', `/tables/${t}/rows/2`), 200, 'table row queried successfully', { n: 0 });
  assert.ok(conflicts > 0, 'the loops never collided: the test did not test the condition');
});

test('a secondary index follows PUT, PATCH and DELETE by t_id: indexed answers equal a scan', async () => {
  const t = await table(Array.from({ length: 40 }, (_, i) => ({ k: i % 5, i })));
  expectSuccess(await srv.req('PUT', `/tables/${t}/indexes/k`), 201, 'index created successfully');
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await srv.req('GET', `/tables/${t}/indexes`);
    if ((r.body.data as Array<{ ready: boolean }>)[0]?.ready === true) break;
    assert.ok(Date.now() < deadline, `index not ready: ${r.raw}`);
    await sleep(50);
  }
  // Move rows between values, out of the index and back, and delete some.
  await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { k: 4 } });
  await srv.req('PATCH', `/tables/${t}/rows/2`, { sets: {}, unset: ['k'] });
  await srv.req('PUT', `/tables/${t}/rows/3`, { rows: { k: 'three', i: 2 } });
  await srv.req('PUT', `/tables/${t}/rows/4`, { rows: { i: 3 } });
  await srv.req('PUT', `/tables/${t}/rows/4`, { rows: { k: 0, i: 3 } });
  await srv.req('DELETE', `/tables/${t}/rows/5`);
  await srv.req('DELETE', `/tables/${t}/rows/10`);
  await srv.req('POST', '/txns', {
    mutations: [
      { name: t, operation: 'UPDATE', t_id: 6, values: { k: 3 } },
      { name: t, operation: 'REPLACE', t_id: 7, values: { k: 3, i: 6 } },
      { name: t, operation: 'REMOVE', t_id: 8 },
    ],
  });
  const all = await whole(t);
  const scan = (pred: (row: Record<string, unknown>) => boolean): unknown[] =>
    Object.keys(all)
      .map(Number)
      .sort((a, b) => a - b)
      .filter((id) => pred(all[id] as Record<string, unknown>))
      .map((id) => ({ t_id: id, row: all[id] }));
  const ask = async (wheres: unknown): Promise<unknown> => (await srv.req('POST', `/tables/${t}/query`, { wheres, with_ids: true })).body.data;
  for (const k of [0, 1, 2, 3, 4, 'three'])
    assert.deepEqual(
      await ask({ k }),
      scan((r) => r.k === k),
      `k = ${k}`,
    );
  assert.deepEqual(
    await ask({ k: { $gte: 3 } }),
    scan((r) => typeof r.k === 'number' && r.k >= 3),
  );
  assert.deepEqual(
    await ask({ k: { $in: [0, 'three'] } }),
    scan((r) => r.k === 0 || r.k === 'three'),
  );
  const ordered = (await srv.req('POST', `/tables/${t}/query`, { wheres: {}, order: [{ field: 'k', dir: 'desc' }], limit: 5, with_ids: true })).body
    .data as Array<{ t_id: number }>;
  assert.equal(ordered.length, 5);
  assert.ok(!ordered.some((r) => [5, 8, 10].includes(r.t_id)), 'a deleted row came back through the index');
  // The changes are the ones asked for.
  assert.deepEqual(all[1], { k: 4, i: 0 });
  assert.deepEqual(all[2], { i: 1 });
  assert.equal(all[5], undefined);
  assert.equal(all[8], undefined);
});

test('the change feed reports each write by t_id: put with the new row, delete; versions are the ETags', async () => {
  const t = await table([{ a: 1 }, { a: 2 }]);
  // Changes after the table's setup: a feed that publishes a little after commit (the shared
  // store polls) may still be sending the setup when the stream opens.
  const base = etag(await srv.req('GET', `/tables/${t}/rows/2`));
  const w = watch({ port: srv.port, token: srv.token, query: `kind=table&prefix=${t}&values=true&since=${base}` });
  await w.opened;
  await srv.req('PUT', `/tables/${t}/rows/1`, { rows: { b: 1 } });
  const vPut = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  await srv.req('PATCH', `/tables/${t}/rows/1`, { sets: { c: 2 }, unset: ['b'] });
  const vPatch = etag(await srv.req('GET', `/tables/${t}/rows/1`));
  await srv.req('DELETE', `/tables/${t}/rows/2`);
  await w.until(() => w.events.length >= 3, 20_000, 'three events');
  w.close();
  const ev = w.events.slice(0, 3).map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> }));
  assert.deepEqual(ev[0], { event: 'put', data: { kind: 'table', name: t, version: vPut, t_id: 1, value: { b: 1 } } });
  assert.deepEqual(ev[1], { event: 'put', data: { kind: 'table', name: t, version: vPatch, t_id: 1, value: { c: 2 } } });
  assert.equal(ev[2].event, 'delete');
  assert.equal(ev[2].data.t_id, 2);
  assert.equal(ev[2].data.kind, 'table');
  assert.ok((ev[2].data.version as number) > vPatch);
  // A refused write reports nothing: only the three changes arrived.
  assert.equal(w.events.length, 3, JSON.stringify(w.events));
});

test('POST /txns: UPDATE and REMOVE by t_id, REPLACE, seeing earlier mutations; all or nothing', async () => {
  const t = await table([{ a: 1 }, { a: 1 }, { a: 3 }]);
  const r = await srv.req('POST', '/txns', {
    mutations: [
      { name: t, operation: 'INSERT', values: { a: 4 } },
      { name: t, operation: 'UPDATE', t_id: 4, values: { b: 'new row, updated' } },
      { name: t, operation: 'UPDATE', t_id: 1, values: { b: 1 } },
      { name: t, operation: 'REMOVE', t_id: 2, values: {} },
      { name: t, operation: 'REPLACE', t_id: 3, values: { replaced: true } },
      { name: t, operation: 'UPDATE', t_id: 2, values: { b: 2 } },
      { name: t, operation: 'REMOVE', t_id: 99 },
      { kind: 'table', name: t, operation: 'UPDATE', t_id: 1, values: {} },
    ],
  });
  expectSuccess(r, 200, 'transaction execute successfully', {
    results: [{ t_id: 4 }, { matched: 1 }, { matched: 1 }, { matched: 1 }, {}, { matched: 0 }, { matched: 0 }, { matched: 1 }],
  });
  assert.deepEqual(await whole(t), { 1: { a: 1, b: 1 }, 3: { replaced: true }, 4: { a: 4, b: 'new row, updated' } });
  assert.equal(await listedRows(t), 3);

  // REPLACE of a row that is not there fails the whole transaction: the earlier writes are not applied.
  const before = await whole(t);
  expectError(
    await srv.req('POST', '/txns', {
      mutations: [
        { name: t, operation: 'INSERT', values: { lost: true } },
        { name: t, operation: 'REMOVE', t_id: 1 },
        { name: t, operation: 'REPLACE', t_id: 2, values: { x: 1 } },
      ],
    }),
    404,
    `mutation 2: row 2 of table '${t}' does not exist`,
  );
  expectError(
    await srv.req('POST', '/txns', {
      mutations: [
        { name: t, operation: 'REMOVE', t_id: 1 },
        { name: t, operation: 'REPLACE', t_id: 1, values: { x: 1 } },
      ],
    }),
    404,
    `mutation 1: row 1 of table '${t}' does not exist`,
  );
  expectError(
    await srv.req('POST', '/txns', { mutations: [{ name: `ghost-${t}`, operation: 'UPDATE', t_id: 1, values: {} }] }),
    404,
    `mutation 0: table 'ghost-${t}' does not exist`,
  );
  assert.deepEqual(await whole(t), before);
  // The failed INSERT's t_id is never given to another row. On the log store it was not even
  // taken (t_ids stay dense); the shared store's per-table sequence is not rolled back, so there
  // it may be skipped (docs/scaling.md, "Tables").
  const next = await srv.req('POST', `/tables/${t}/rows`, { rows: {} });
  assert.equal(next.status, 201, next.raw);
  if (STORE === 'log') assert.deepEqual(next.body.data, { t_id: 5 });
  else assert.ok(next.body.data.t_id >= 5, next.raw);
});

test('POST /txns: bad by-t_id mutations are 400 naming the mutation and the field, and change nothing', async () => {
  const t = await table([{ a: 1 }]);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: t, operation: 'UPDATE', t_id: 1, where: {}, values: {} }, "mutation 0: give 'where' or 't_id', not both"],
    [{ name: t, operation: 'REMOVE', t_id: 1, where: { a: 1 } }, "mutation 0: give 'where' or 't_id', not both"],
    [{ name: t, operation: 'UPDATE', t_id: 0, values: {} }, "mutation 0: field 't_id' must be a positive integer (at most 9007199254740991)"],
    [{ name: t, operation: 'UPDATE', t_id: -1, values: {} }, "mutation 0: field 't_id' must be a positive integer (at most 9007199254740991)"],
    [{ name: t, operation: 'REMOVE', t_id: 1.5 }, "mutation 0: field 't_id' must be a positive integer (at most 9007199254740991)"],
    [{ name: t, operation: 'REMOVE', t_id: '1' }, "mutation 0: field 't_id' must be a positive integer (at most 9007199254740991)"],
    [{ name: t, operation: 'REMOVE', t_id: null }, "mutation 0: field 't_id' must be a positive integer (at most 9007199254740991)"],
    [{ name: t, operation: 'REPLACE', t_id: 2 ** 53, values: {} }, "mutation 0: field 't_id' must be a positive integer (at most 9007199254740991)"],
    [{ name: t, operation: 'UPDATE', t_id: 1 }, "mutation 0: field 'values' is required (an object)"],
    [{ name: t, operation: 'REMOVE', t_id: 1, values: { a: 1 } }, "mutation 0: field 'values' must be absent or {} (a REMOVE writes no values)"],
    [{ name: t, operation: 'REPLACE', values: { a: 2 } }, "mutation 0: field 't_id' is required (the row to replace)"],
    [{ name: t, operation: 'REPLACE', t_id: 1 }, "mutation 0: field 'values' is required (an object)"],
    [{ name: t, operation: 'REPLACE', t_id: 1, values: [] }, "mutation 0: field 'values' must be an object"],
    [{ name: t, operation: 'REPLACE', t_id: 1, values: {}, where: {} }, "mutation 0: unknown field 'where' (allowed: kind, name, operation, values, t_id)"],
    [{ name: t, operation: 'INSERT', t_id: 1, values: {} }, "mutation 0: unknown field 't_id' (allowed: kind, name, operation, values, where)"],
    [
      { name: t, operation: 'UPDATE', t_id: 1, values: {}, unset: ['a'] },
      "mutation 0: unknown field 'unset' (allowed: kind, name, operation, values, where, t_id)",
    ],
    [{ kind: 'record', name: t, operation: 'REPLACE', values: {} }, "mutation 0: field 'operation' must be one of PUT, DELETE for a record, not 'REPLACE'"],
    [
      { name: t, operation: 'replace', t_id: 1, values: {} },
      "mutation 0: field 'operation' must be one of INSERT, UPDATE, REMOVE, REPLACE for a table, not 'replace'",
    ],
  ];
  for (const [m, message] of cases) {
    expectError(await srv.req('POST', '/txns', { mutations: [m] }), 400, message);
    // Also when an earlier mutation would have written: nothing is.
    expectError(
      await srv.req('POST', '/txns', { mutations: [{ name: t, operation: 'INSERT', values: { no: 1 } }, m] }),
      400,
      message.replace('mutation 0', 'mutation 1'),
    );
  }
  assert.deepEqual(await whole(t), { 1: { a: 1 } });
});

test('writes by t_id survive a restart with their versions', async () => {
  const s = await PithosServer.start();
  try {
    const t = uniq('rr');
    await s.req('PUT', `/tables/${t}`);
    for (let i = 0; i < 4; i++) await s.req('POST', `/tables/${t}/rows`, { rows: { i } });
    await s.req('PUT', `/tables/${t}/rows/1`, { rows: { replaced: 1 } });
    await s.req('PATCH', `/tables/${t}/rows/2`, { sets: { p: 1 }, unset: ['i'] });
    await s.req('DELETE', `/tables/${t}/rows/3`);
    await s.req('POST', '/txns', { mutations: [{ name: t, operation: 'REPLACE', t_id: 4, values: { t: 4 } }] });
    const versions = await Promise.all([1, 2, 4].map(async (id) => etag(await s.req('GET', `/tables/${t}/rows/${id}`))));
    await s.restart();
    const r = await s.req('GET', `/tables/${t}`);
    expectSuccess(r, 200, 'table queried successfully', { 1: { replaced: 1 }, 2: { p: 1 }, 4: { t: 4 } });
    assert.deepEqual(await Promise.all([1, 2, 4].map(async (id) => etag(await s.req('GET', `/tables/${t}/rows/${id}`)))), versions);
    expectError(await s.req('GET', `/tables/${t}/rows/3`), 404, `row 3 of table '${t}' does not exist`);
  } finally {
    await s.close();
  }
});
