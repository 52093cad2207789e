/** Black-box tests of the table namespace (docs/api.md, "Tables"). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, uniq, type Res } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

const T = (name: string) => `/tables/${encodeURIComponent(name)}`;

async function mkTable(name: string): Promise<void> {
  expectSuccess(await srv.req('PUT', T(name)), 201, 'table created successfully');
}
async function insert(name: string, row: unknown): Promise<number> {
  const r = await srv.req('POST', `${T(name)}/rows`, { rows: row });
  assert.equal(r.status, 201, `insert ${JSON.stringify(row)}: ${r.status} ${r.raw}`);
  assert.equal(typeof r.body?.data?.t_id, 'number', r.raw);
  return r.body.data.t_id as number;
}
/** Insert a raw JSON text as the `rows` field (so `__proto__` keys stay own properties). */
async function insertRaw(name: string, rowJson: string): Promise<number> {
  const r = await srv.req('POST', `${T(name)}/rows`, `{"rows":${rowJson}}`);
  assert.equal(r.status, 201, `insert ${rowJson}: ${r.status} ${r.raw}`);
  return r.body.data.t_id as number;
}
async function all(name: string): Promise<Record<string, unknown>> {
  const r = await srv.req('GET', T(name));
  expectSuccess(r, 200, 'table queried successfully', r.body?.data);
  return r.body.data;
}
async function rows(name: string, wheres: unknown): Promise<Res> {
  return srv.req('GET', `${T(name)}/rows`, { wheres });
}
async function rowsRaw(name: string, bodyJson: string): Promise<Res> {
  return srv.req('GET', `${T(name)}/rows`, bodyJson);
}
/** Matching rows via both GET /rows and POST /query; asserts both agree and returns the array. */
async function find(name: string, wheres: unknown): Promise<unknown[]> {
  const g = await rows(name, wheres);
  expectSuccess(g, 200, 'table queried rows successfully', g.body?.data);
  assert.ok(Array.isArray(g.body.data), `GET rows data must be an array: ${g.raw}`);
  const q = await srv.req('POST', `${T(name)}/query`, { wheres });
  expectSuccess(q, 200, 'table queried rows successfully', g.body.data);
  return g.body.data;
}

test('table lifecycle: exact status, message and data shape of every endpoint', async () => {
  const t = uniq('life');
  expectSuccess(await srv.req('PUT', T(t)), 201, 'table created successfully');

  let r = await srv.req('POST', `${T(t)}/rows`, { rows: { name: 'ann', age: 31 } });
  expectSuccess(r, 201, 'table rows insert successfully', { t_id: 1 });
  r = await srv.req('POST', `${T(t)}/rows`, { rows: { name: 'bob', age: 42, tags: ['x'] } });
  expectSuccess(r, 201, 'table rows insert successfully', { t_id: 2 });
  r = await srv.req('POST', `${T(t)}/rows`, { rows: {} });
  expectSuccess(r, 201, 'table rows insert successfully', { t_id: 3 });

  r = await srv.req('GET', T(t));
  expectSuccess(r, 200, 'table queried successfully', {
    '1': { name: 'ann', age: 31 },
    '2': { name: 'bob', age: 42, tags: ['x'] },
    '3': {},
  });

  r = await srv.req('GET', `${T(t)}/rows`, { wheres: { name: 'bob' } });
  expectSuccess(r, 200, 'table queried rows successfully', [{ name: 'bob', age: 42, tags: ['x'] }]);
  r = await srv.req('POST', `${T(t)}/query`, { wheres: { name: 'bob' } });
  expectSuccess(r, 200, 'table queried rows successfully', [{ name: 'bob', age: 42, tags: ['x'] }]);
  r = await srv.req('GET', `${T(t)}/rows`, { wheres: {} });
  expectSuccess(r, 200, 'table queried rows successfully', [{ name: 'ann', age: 31 }, { name: 'bob', age: 42, tags: ['x'] }, {}]);
  r = await srv.req('GET', `${T(t)}/rows`, { wheres: { name: 'nobody' } });
  expectSuccess(r, 200, 'table queried rows successfully', []);

  r = await srv.req('PATCH', T(t), { wheres: { name: 'ann' }, sets: { age: 32 } });
  expectSuccess(r, 200, 'table rows patched successfully');
  assert.deepEqual(await find(t, { name: 'ann' }), [{ name: 'ann', age: 32 }]);

  r = await srv.req('DELETE', `${T(t)}/rows`, { wheres: { name: 'ann' } });
  expectSuccess(r, 200, 'table rows remove successfully');
  assert.deepEqual(await all(t), { '2': { name: 'bob', age: 42, tags: ['x'] }, '3': {} });

  r = await srv.req('DELETE', T(t));
  expectSuccess(r, 200, 'table deleted successfully');
  expectError(await srv.req('GET', T(t)), 404);
});

test('PUT table with empty body, {} body and ttl 0 all create', async () => {
  const a = uniq('pa');
  const b = uniq('pb');
  const c = uniq('pc');
  expectSuccess(await srv.req('PUT', T(a)), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', T(b), {}), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', T(c), { ttl: 0 }), 201, 'table created successfully');
  for (const n of [a, b, c]) expectSuccess(await srv.req('GET', T(n)), 200, 'table queried successfully', {});
});

test('POST rows: missing or non-object rows → 400 and nothing inserted', async () => {
  const t = uniq('bad');
  await mkTable(t);
  for (const body of [undefined, {}, { rows: null }, { rows: [] }, { rows: [{ a: 1 }] }, { rows: 'x' }, { rows: 5 }, { rows: true }, { row: { a: 1 } }]) {
    expectError(await srv.req('POST', `${T(t)}/rows`, body), 400);
  }
  assert.deepEqual(await all(t), {});
  // the failed inserts consumed no t_id... not required; but the next one must be a valid positive integer
  const id = await insert(t, { ok: true });
  assert.ok(Number.isInteger(id) && id >= 1);
});

test('t_id increases and is never reused after deleting rows', async () => {
  const t = uniq('ids');
  await mkTable(t);
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await insert(t, { i }));
  assert.deepEqual(ids, [1, 2, 3, 4, 5]);
  // delete the newest rows, then the rest
  expectSuccess(await srv.req('DELETE', `${T(t)}/rows`, { wheres: { i: { $gte: 3 } } }), 200, 'table rows remove successfully');
  const six = await insert(t, { i: 5 });
  assert.ok(six > 5, `t_id ${six} reused after deleting rows 3..5`);
  expectSuccess(await srv.req('DELETE', `${T(t)}/rows`, { wheres: {} }), 200, 'table rows remove successfully');
  assert.deepEqual(await all(t), {});
  const seven = await insert(t, { i: 6 });
  assert.ok(seven > six, `t_id ${seven} not greater than ${six} after deleting all rows`);
  assert.deepEqual(Object.keys(await all(t)), [String(seven)]);
});

test('rows are returned in t_id order, also after patching early rows', async () => {
  const t = uniq('order');
  await mkTable(t);
  for (let i = 1; i <= 12; i++) await insert(t, { i, g: i % 2 });
  expectSuccess(await srv.req('PATCH', T(t), { wheres: { i: 1 }, sets: { touched: true } }), 200, 'table rows patched successfully');
  expectSuccess(await srv.req('PATCH', T(t), { wheres: { i: 10 }, sets: { touched: true } }), 200, 'table rows patched successfully');
  const got = (await find(t, {})) as { i: number }[];
  assert.deepEqual(
    got.map((r) => r.i),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
  );
  const evens = (await find(t, { g: 0 })) as { i: number }[];
  assert.deepEqual(
    evens.map((r) => r.i),
    [2, 4, 6, 8, 10, 12],
  );
  const a = await all(t);
  assert.deepEqual(
    Object.keys(a).sort((x, y) => Number(x) - Number(y)),
    ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12'],
  );
  assert.deepEqual(a['10'], { i: 10, g: 0, touched: true });
});

test('wheres: deep equality — nested objects ignore key order, arrays compare by order', async () => {
  const t = uniq('deq');
  await mkTable(t);
  const r1 = { k: 1, n: { a: 1, b: { c: [1, { d: 2, e: 3 }] } }, arr: [1, 2, 3] };
  const r2 = { k: 2, n: { a: 1 }, arr: [3, 2, 1] };
  const r3 = { k: 3, n: null, arr: [], s: '1', num: 1, bool: true };
  const r4 = { k: 4, num: 1.5, s: 'x', bool: false, z: 0 };
  for (const r of [r1, r2, r3, r4]) await insert(t, r);

  assert.deepEqual(await find(t, { n: { b: { c: [1, { e: 3, d: 2 }] }, a: 1 } }), [r1]);
  assert.deepEqual(await find(t, { n: { a: 1 } }), [r2], 'a partial nested object must not match a larger one');
  assert.deepEqual(await find(t, { n: { a: 1, b: { c: [1, { d: 2 }] } } }), []);
  assert.deepEqual(await find(t, { arr: [1, 2, 3] }), [r1]);
  assert.deepEqual(await find(t, { arr: [3, 2, 1] }), [r2]);
  assert.deepEqual(await find(t, { arr: [1, 2] }), []);
  assert.deepEqual(await find(t, { arr: [] }), [r3]);
  assert.deepEqual(await find(t, { arr: 1 }), [], 'a scalar must not match an array containing it');
  assert.deepEqual(await find(t, { n: null }), [r3]);
  // a field the row lacks never matches, not even null
  assert.deepEqual(await find(t, { s: null }), []);
  assert.deepEqual(await find(t, { missing: null }), []);
  // types are strict: "1" ≠ 1, true ≠ 1, 0 ≠ false
  assert.deepEqual(await find(t, { s: 1 }), []);
  assert.deepEqual(await find(t, { num: '1' }), []);
  assert.deepEqual(await find(t, { num: true }), []);
  assert.deepEqual(await find(t, { bool: 1 }), []);
  assert.deepEqual(await find(t, { z: false }), []);
  assert.deepEqual(await find(t, { z: 0 }), [r4]);
  assert.deepEqual(await find(t, { num: 1 }), [r3]);
  assert.deepEqual(await rowsRaw(t, '{"wheres":{"num":1.0}}').then((r) => r.body?.data), [r3], '1.0 and 1 are the same JSON number');
  assert.deepEqual(await find(t, { num: 1.5 }), [r4]);
  // all pairs must hold
  assert.deepEqual(await find(t, { num: 1, s: '1' }), [r3]);
  assert.deepEqual(await find(t, { num: 1, s: 'x' }), []);
  // an object value with a non-$ key is deep equality, not an operator
  assert.deepEqual(await find(t, { n: { a: 1, $gt: 0 } }), []);
});

test('wheres: a mixed $/plain-key object is deep equality against stored data', async () => {
  const t = uniq('mixed');
  await mkTable(t);
  const weird = { k: 1, f: { $gt: 5, b: 2 } };
  await insert(t, weird);
  await insert(t, { k: 2, f: 10 });
  assert.deepEqual(await find(t, { f: { b: 2, $gt: 5 } }), [weird]);
  // stored $-keyed objects can be matched through $eq
  const dollar = { k: 3, g: { $x: 1 } };
  await insert(t, dollar);
  assert.deepEqual(await find(t, { g: { $eq: { $x: 1 } } }), [dollar]);
});

test('wheres: every $ operator', async () => {
  const t = uniq('ops');
  await mkTable(t);
  const rowsIn = [
    { k: 1, v: 1, s: 'apple', o: { a: 1, b: 2 } },
    { k: 2, v: 5, s: 'Banana', o: { a: 1 } },
    { k: 3, v: 10, s: 'cherry', tag: null },
    { k: 4, v: '5', s: 5, tag: 'x' },
    { k: 5, v: true, s: ['apple'] },
    { k: 6, v: 7.5, s: 'banana' },
  ];
  for (const r of rowsIn) await insert(t, r);
  const ks = async (w: unknown) => ((await find(t, w)) as { k: number }[]).map((r) => r.k);

  assert.deepEqual(await ks({ v: { $eq: 5 } }), [2]);
  assert.deepEqual(await ks({ v: { $eq: '5' } }), [4]);
  assert.deepEqual(await ks({ o: { $eq: { b: 2, a: 1 } } }), [1], '$eq is deep equality, key order ignored');
  assert.deepEqual(await ks({ v: { $ne: 5 } }), [1, 3, 4, 5, 6]);
  assert.deepEqual(await ks({ o: { $ne: { a: 1 } }, k: { $lte: 2 } }), [1]);

  // numbers with numbers
  assert.deepEqual(await ks({ v: { $gt: 5 } }), [3, 6]);
  assert.deepEqual(await ks({ v: { $gte: 5 } }), [2, 3, 6]);
  assert.deepEqual(await ks({ v: { $lt: 5 } }), [1]);
  assert.deepEqual(await ks({ v: { $lte: 5 } }), [1, 2]);
  assert.deepEqual(await ks({ v: { $gt: 1, $lt: 10 } }), [2, 6], 'several operators in one object all apply');
  assert.deepEqual(await ks({ v: { $gte: 7.5, $lte: 7.5 } }), [6]);
  // strings with strings, code-point order ('B' < 'a')
  assert.deepEqual(await ks({ s: { $gt: 'apple' } }), [3, 6]);
  assert.deepEqual(await ks({ s: { $lt: 'apple' } }), [2]);
  assert.deepEqual(await ks({ s: { $gte: 'banana' } }), [3, 6]);
  assert.deepEqual(await ks({ s: { $lte: 'Banana' } }), [2]);
  // mixed types never match
  assert.deepEqual(await ks({ v: { $gt: '0' } }), [4], 'a string bound only matches strings');
  assert.deepEqual(await ks({ v: { $lt: '9' } }), [4]);
  assert.deepEqual(await ks({ v: { $gte: 0 } }), [1, 2, 3, 6], 'number bound must not match "5" or true');
  assert.deepEqual(await ks({ s: { $gte: 0 } }), [4], 'number bound must not match strings or arrays');
  assert.deepEqual(await ks({ tag: { $lt: 'z' } }), [4], 'null must never compare');
  assert.deepEqual(await ks({ missing: { $lt: 100 } }), []);

  // $in / $nin with deep equality
  assert.deepEqual(await ks({ v: { $in: [1, 10, '5'] } }), [1, 3, 4]);
  assert.deepEqual(await ks({ o: { $in: [{ a: 1 }, 3] } }), [2]);
  assert.deepEqual(await ks({ v: { $in: [] } }), []);
  assert.deepEqual(await ks({ v: { $nin: [1, 10, '5', true] } }), [2, 6]);
  assert.deepEqual(await ks({ s: { $in: [['apple']] } }), [5]);

  // $exists
  assert.deepEqual(await ks({ tag: { $exists: true } }), [3, 4], 'a null field exists');
  assert.deepEqual(await ks({ tag: { $exists: false } }), [1, 2, 5, 6]);
  assert.deepEqual(await ks({ o: { $exists: true }, v: 5 }), [2]);
});

test('wheres: comparison uses code-point order, not UTF-16 code units', async () => {
  const t = uniq('cp');
  await mkTable(t);
  await insert(t, { k: 1, s: '\uFFFF' });
  await insert(t, { k: 2, s: '😀' }); // U+1F600, encoded as surrogates D83D DE00 in UTF-16
  const ks = async (w: unknown) => ((await find(t, w)) as { k: number }[]).map((r) => r.k);
  assert.deepEqual(await ks({ s: { $gt: '\uFFFF' } }), [2]);
  assert.deepEqual(await ks({ s: { $lt: '😀' } }), [1]);
});

test('wheres: unknown operator → 400 on every wheres endpoint, nothing changes', async () => {
  const t = uniq('unk');
  await mkTable(t);
  await insert(t, { a: 1 });
  await insert(t, { a: 2 });
  const before = await all(t);
  for (const w of [{ a: { $foo: 1 } }, { a: { $gt: 0, $bogus: 1 } }, { a: { $regex: '.*' } }]) {
    expectError(await rows(t, w), 400);
    expectError(await srv.req('POST', `${T(t)}/query`, { wheres: w }), 400);
    expectError(await srv.req('PATCH', T(t), { wheres: w, sets: { a: 99 } }), 400);
    expectError(await srv.req('DELETE', `${T(t)}/rows`, { wheres: w }), 400);
  }
  assert.deepEqual(await all(t), before);
});

test('wheres: $in/$nin with a non-array operand → 400', async () => {
  const t = uniq('inbad');
  await mkTable(t);
  await insert(t, { a: 1 });
  expectError(await rows(t, { a: { $in: 1 } }), 400);
  expectError(await rows(t, { a: { $nin: 'x' } }), 400);
});

test('missing or non-object wheres → 400 for GET rows, POST query, PATCH, DELETE rows; nothing changes', async () => {
  const t = uniq('nowh');
  await mkTable(t);
  await insert(t, { a: 1 });
  await insert(t, { a: 2 });
  const before = await all(t);
  const bodies: unknown[] = [
    undefined,
    {},
    { wheres: null },
    { wheres: [] },
    { wheres: [{ a: 1 }] },
    { wheres: 'a' },
    { wheres: 1 },
    { wheres: true },
    { where: {} },
  ];
  for (const b of bodies) {
    const label = JSON.stringify(b) ?? '(no body)';
    expectError(await srv.req('GET', `${T(t)}/rows`, b), 400);
    expectError(await srv.req('POST', `${T(t)}/query`, b), 400);
    const patchBody = b === undefined ? { sets: { a: 99 } } : { ...(b as object), sets: { a: 99 } };
    const pr = await srv.req('PATCH', T(t), patchBody);
    assert.equal(pr.status, 400, `PATCH ${JSON.stringify(patchBody)}: ${pr.status} ${pr.raw}`);
    expectError(pr, 400);
    const dr = await srv.req('DELETE', `${T(t)}/rows`, b);
    assert.equal(dr.status, 400, `DELETE rows ${label}: ${dr.status} ${dr.raw}`);
    expectError(dr, 400);
    assert.deepEqual(await all(t), before, `table changed after ${label}`);
  }
});

test('sets: writes listed fields, keeps others, nested objects replace whole', async () => {
  const t = uniq('sets');
  await mkTable(t);
  await insert(t, { k: 1, grp: 'a', keep: 'yes', nest: { x: 1, y: { z: 2 } }, arr: [1, 2] });
  await insert(t, { k: 2, grp: 'a', nest: { w: 0 } });
  await insert(t, { k: 3, grp: 'b', nest: { x: 1 } });
  let r = await srv.req('PATCH', T(t), { wheres: { grp: 'a' }, sets: { nest: { y: 5 }, arr: [3], added: null, n: 1.25 } });
  expectSuccess(r, 200, 'table rows patched successfully');
  assert.deepEqual(await all(t), {
    '1': { k: 1, grp: 'a', keep: 'yes', nest: { y: 5 }, arr: [3], added: null, n: 1.25 },
    '2': { k: 2, grp: 'a', nest: { y: 5 }, arr: [3], added: null, n: 1.25 },
    '3': { k: 3, grp: 'b', nest: { x: 1 } },
  });
  // sets can change the very field used in wheres
  r = await srv.req('PATCH', T(t), { wheres: { grp: 'a' }, sets: { grp: 'c' } });
  expectSuccess(r, 200, 'table rows patched successfully');
  assert.deepEqual(
    ((await find(t, { grp: 'c' })) as { k: number }[]).map((x) => x.k),
    [1, 2],
  );
  assert.deepEqual(await find(t, { grp: 'a' }), []);
  // operators in wheres of a PATCH
  r = await srv.req('PATCH', T(t), { wheres: { k: { $gte: 2 } }, sets: { hi: true } });
  expectSuccess(r, 200, 'table rows patched successfully');
  assert.deepEqual(
    ((await find(t, { hi: true })) as { k: number }[]).map((x) => x.k),
    [2, 3],
  );
});

test('sets: {} is a no-op success; missing or non-object sets → 400 with no change', async () => {
  const t = uniq('sets0');
  await mkTable(t);
  await insert(t, { a: 1 });
  const before = await all(t);
  expectSuccess(await srv.req('PATCH', T(t), { wheres: {}, sets: {} }), 200, 'table rows patched successfully');
  assert.deepEqual(await all(t), before);
  for (const b of [
    { wheres: {} },
    { wheres: {}, sets: null },
    { wheres: {}, sets: [] },
    { wheres: {}, sets: 'a' },
    { wheres: {}, sets: 3 },
    { wheres: { a: 1 }, set: { a: 2 } },
  ]) {
    expectError(await srv.req('PATCH', T(t), b), 400);
  }
  assert.deepEqual(await all(t), before);
});

test('sets values are plain data, even objects with $ keys', async () => {
  const t = uniq('setsdollar');
  await mkTable(t);
  await insert(t, { k: 1 });
  expectSuccess(await srv.req('PATCH', T(t), { wheres: { k: 1 }, sets: { f: { $gt: 1 }, $g: { $in: [1] } } }), 200, 'table rows patched successfully');
  assert.deepEqual(await all(t), { '1': { k: 1, f: { $gt: 1 }, $g: { $in: [1] } } });
  assert.deepEqual(await find(t, { f: { $eq: { $gt: 1 } } }), [{ k: 1, f: { $gt: 1 }, $g: { $in: [1] } }]);
});

test('PATCH and DELETE rows matching nothing succeed and change nothing', async () => {
  const t = uniq('none');
  await mkTable(t);
  await insert(t, { a: 1 });
  const before = await all(t);
  expectSuccess(await srv.req('PATCH', T(t), { wheres: { a: 2 }, sets: { b: 1 } }), 200, 'table rows patched successfully');
  expectSuccess(await srv.req('DELETE', `${T(t)}/rows`, { wheres: { a: 2 } }), 200, 'table rows remove successfully');
  assert.deepEqual(await all(t), before);
});

test('PUT existing table → 409 "table \'<name>\' already exists", rows untouched', async () => {
  const t = uniq('dup');
  await mkTable(t);
  await insert(t, { a: 1 });
  await insert(t, { a: 2 });
  const before = await all(t);
  expectError(await srv.req('PUT', T(t)), 409, `table '${t}' already exists`);
  expectError(await srv.req('PUT', T(t), { ttl: 5 }), 409, `table '${t}' already exists`);
  assert.deepEqual(await all(t), before);
  assert.equal(await insert(t, { a: 3 }), 3, 'a rejected PUT must not reset t_id');
});

test('every row operation on a missing table → 404', async () => {
  const t = uniq('missing');
  expectError(await srv.req('GET', T(t)), 404);
  expectError(await srv.req('POST', `${T(t)}/rows`, { rows: { a: 1 } }), 404);
  expectError(await srv.req('GET', `${T(t)}/rows`, { wheres: {} }), 404);
  expectError(await srv.req('POST', `${T(t)}/query`, { wheres: {} }), 404);
  expectError(await srv.req('PATCH', T(t), { wheres: {}, sets: { a: 1 } }), 404);
  expectError(await srv.req('DELETE', `${T(t)}/rows`, { wheres: {} }), 404);
  expectError(await srv.req('DELETE', T(t)), 404);
  // the failed insert created nothing
  expectError(await srv.req('GET', T(t)), 404);
});

test('404 message names the table', async () => {
  const t = uniq('named');
  const r = await srv.req('GET', T(t));
  expectError(r, 404);
  assert.ok(r.body.message.includes(t), `message should name the table: ${r.body.message}`);
});

test('drop then recreate starts empty with t_id from 1', async () => {
  const t = uniq('drop');
  await mkTable(t);
  for (let i = 0; i < 4; i++) await insert(t, { i });
  expectSuccess(await srv.req('DELETE', T(t)), 200, 'table deleted successfully');
  for (const [m, p, b] of [
    ['GET', T(t), undefined],
    ['GET', `${T(t)}/rows`, { wheres: {} }],
    ['POST', `${T(t)}/rows`, { rows: { i: 9 } }],
  ] as const) {
    expectError(await srv.req(m, p, b), 404);
  }
  await mkTable(t);
  expectSuccess(await srv.req('GET', T(t)), 200, 'table queried successfully', {});
  expectSuccess(await srv.req('GET', `${T(t)}/rows`, { wheres: {} }), 200, 'table queried rows successfully', []);
  expectSuccess(await srv.req('POST', `${T(t)}/rows`, { rows: { fresh: 1 } }), 201, 'table rows insert successfully', { t_id: 1 });
  assert.deepEqual(await all(t), { '1': { fresh: 1 } });
});

test('__proto__, constructor, $x are plain data in rows, wheres and sets', async () => {
  const t = uniq('proto');
  await mkTable(t);
  const special = '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"evil":1}},"$x":5,"toString":"s","hasOwnProperty":1}';
  const id1 = await insertRaw(t, special);
  const id2 = await insertRaw(t, '{"plain":1}');
  const id3 = await insertRaw(t, '{"__proto__":{}}');

  // returned as own data, byte-for-byte equal after parsing
  let r = await srv.req('GET', T(t));
  assert.equal(r.status, 200, r.raw);
  const expected = JSON.parse(`{"${id1}":${special},"${id2}":{"plain":1},"${id3}":{"__proto__":{}}}`);
  assert.deepEqual(r.body.data, expected);
  assert.ok(Object.prototype.hasOwnProperty.call(r.body.data[String(id1)], '__proto__'), `__proto__ must come back as a field: ${r.raw}`);

  const ids = async (w: string) => {
    const res = await rowsRaw(t, `{"wheres":${w}}`);
    assert.equal(res.status, 200, `wheres ${w}: ${res.status} ${res.raw}`);
    const q = await srv.req('POST', `${T(t)}/query`, `{"wheres":${w}}`);
    assert.equal(q.status, 200, `query ${w}: ${q.status} ${q.raw}`);
    assert.deepEqual(q.body.data, res.body.data);
    return (res.body.data as Record<string, unknown>[]).map((row) =>
      Object.prototype.hasOwnProperty.call(row, '$x') ? id1 : Object.prototype.hasOwnProperty.call(row, 'plain') ? id2 : id3,
    );
  };
  // matched by own fields only
  assert.deepEqual(await ids('{"__proto__":{"polluted":"yes"}}'), [id1]);
  assert.deepEqual(await ids('{"__proto__":{}}'), [id3], 'rows without a __proto__ field must not match {} via Object.prototype');
  assert.deepEqual(await ids('{"$x":5}'), [id1]);
  assert.deepEqual(await ids('{"constructor":{"prototype":{"evil":1}}}'), [id1]);
  assert.deepEqual(await ids('{"toString":{"$exists":true}}'), [id1], 'inherited toString is not a field');
  assert.deepEqual(await ids('{"constructor":{"$exists":true}}'), [id1]);
  assert.deepEqual(await ids('{"__proto__":{"$exists":false}}'), [id2]);
  assert.deepEqual(await ids('{"hasOwnProperty":1}'), [id1]);
  assert.deepEqual(await ids('{"polluted":"yes"}'), [], 'nothing may have reached a prototype');
  assert.deepEqual(await ids('{"evil":1}'), []);

  // sets with special names write own fields only
  r = await srv.req('PATCH', T(t), `{"wheres":{"plain":1},"sets":{"__proto__":{"viaSets":1},"$y":2,"constructor":"c"}}`);
  expectSuccess(r, 200, 'table rows patched successfully');
  r = await srv.req('GET', T(t));
  assert.deepEqual(r.body.data[String(id2)], JSON.parse('{"plain":1,"__proto__":{"viaSets":1},"$y":2,"constructor":"c"}'));
  assert.deepEqual(await ids('{"viaSets":1}'), []);
  assert.deepEqual(await ids('{"__proto__":{"viaSets":1}}'), [id2]);
  assert.deepEqual(await ids('{"$y":2}'), [id2]);
  // other tables/rows unaffected
  const t2 = uniq('proto2');
  await mkTable(t2);
  await insert(t2, { q: 1 });
  const rr = await rowsRaw(t2, '{"wheres":{"viaSets":1}}');
  assert.deepEqual(rr.body.data, []);
  const rr2 = await rowsRaw(t2, '{"wheres":{"polluted":"yes"}}');
  assert.deepEqual(rr2.body.data, []);
  // DELETE rows via a __proto__ where
  expectSuccess(await srv.req('DELETE', `${T(t)}/rows`, '{"wheres":{"__proto__":{}}}'), 200, 'table rows remove successfully');
  assert.deepEqual(Object.keys((await srv.req('GET', T(t))).body.data).sort(), [String(id1), String(id2)].sort());
  // a body whose top level is {"__proto__": ...} is also plain data: no wheres field → 400
  expectError(await srv.req('GET', `${T(t)}/rows`, '{"__proto__":{"wheres":{}}}'), 400);
});

test('table names "__proto__" and "constructor" are ordinary names', async () => {
  for (const n of ['__proto__', 'constructor', 'hasOwnProperty']) {
    const r0 = await srv.req('GET', T(n));
    expectError(r0, 404);
    await mkTable(n);
    assert.equal(await insert(n, { n }), 1);
    assert.deepEqual(await all(n), { '1': { n } });
    expectSuccess(await srv.req('DELETE', T(n)), 200, 'table deleted successfully');
  }
});

test('t_id is never reused after a restart', async () => {
  const t = uniq('rs');
  await mkTable(t);
  for (let i = 0; i < 3; i++) await insert(t, { i });
  expectSuccess(await srv.req('DELETE', `${T(t)}/rows`, { wheres: { i: 2 } }), 200, 'table rows remove successfully');
  const info = await srv.restart('SIGTERM');
  assert.equal(info.code, 0, `graceful shutdown exit code: ${JSON.stringify(info)}`);
  assert.deepEqual(await all(t), { '1': { i: 0 }, '2': { i: 1 } });
  const id = await insert(t, { i: 3 });
  assert.equal(id, 4, 't_id after restart must continue after the highest ever assigned');
  // and across a SIGKILL too
  await srv.restart('SIGKILL');
  const id2 = await insert(t, { i: 4 });
  assert.equal(id2, 5);
});

test('an insert whose body holds wheres but no rows hints at the query endpoints, naming the table', async () => {
  const t = uniq('hint t');
  expectSuccess(await srv.req('PUT', `/tables/${encodeURIComponent(t)}`), 201, 'table created successfully');
  const e = encodeURIComponent(t);
  expectError(
    await srv.req('POST', `/tables/${e}/rows`, { wheres: { a: 1 } }),
    400,
    `field 'rows' is required (an object) (the body has 'wheres': to query rows use GET /tables/${e}/rows or POST /tables/${e}/query; POST /tables/${e}/rows inserts)`,
  );
  expectError(await srv.req('POST', `/tables/${e}/rows`, {}), 400, "field 'rows' is required (an object)");
});
