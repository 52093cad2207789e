/**
 * Black-box tests of listing, shaped row queries and secondary indexes
 * (docs/api.md "Listing, paging and indexes"): every field and parameter, and its errors.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, uniq, type Res } from '../helpers/server.js';
import { byteOrder } from '../helpers/order.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

const enc = encodeURIComponent;

async function list(kind: string, params: Record<string, string | number> = {}): Promise<Res> {
  const qs = Object.entries(params)
    .map(([k, v]) => `${enc(k)}=${enc(String(v))}`)
    .join('&');
  return srv.req('GET', `/${kind}${qs ? '?' + qs : ''}`);
}
/** Every item under `prefix`, page by page, with `between` run after each page. */
async function listAll(kind: string, prefix: string, limit: number, between?: (page: number) => Promise<void>): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let afterName: string | null = null;
  for (let page = 0; page < 10_000; page++) {
    const r = await list(kind, { prefix, limit, ...(afterName === null ? {} : { after: afterName }) });
    expectSuccess(r, 200, `${kind} listed successfully`, r.body?.data);
    items.push(...r.body.data.items);
    assert.ok(r.body.data.items.length <= limit);
    afterName = r.body.data.next;
    if (afterName === null) return items;
    await between?.(page);
  }
  throw new Error('listing did not end');
}
async function rows(table: string, body: unknown): Promise<Res> {
  return srv.req('GET', `/tables/${enc(table)}/rows`, body);
}
async function ok(r: Res): Promise<unknown> {
  expectSuccess(r, 200, 'table queried rows successfully', r.body?.data);
  return r.body.data;
}
async function mkTable(rowsIn: unknown[]): Promise<string> {
  const t = uniq('qt');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  for (const r of rowsIn) assert.equal((await srv.req('POST', `/tables/${t}/rows`, { rows: r })).status, 201);
  return t;
}

// ---- listing --------------------------------------------------------------------

test('listing: every namespace, byte order, items with ttl_ms / rows / held+holder', async () => {
  const p = uniq('L') + '-';
  const names = ['b', 'a', 'é', '\uff5e', '\u{1F600}', 'a b', 'a+b', 'q"t', 'b\\s', '~'].map((n) => p + n);
  for (const n of names) {
    expectSuccess(await srv.req('PUT', `/records/${enc(n)}`, { record: { n } }), 201, 'record created successfully');
    assert.equal((await srv.req('PUT', `/variants/${enc(n)}`, { variant: 1, ttl: 100 })).status, 201);
  }
  const want = [...names].sort(byteOrder);
  // JavaScript's own order would put the emoji (a surrogate pair) before U+FF5E.
  assert.notDeepEqual(want, [...names].sort());
  const recs = await listAll('records', p, 100);
  assert.deepEqual(
    recs,
    want.map((name) => ({ name, ttl_ms: null })),
  );
  const vars = await listAll('variants', p, 2);
  assert.deepEqual(
    vars.map((x) => x.name),
    want,
  );
  for (const v of vars) assert.ok(typeof v.ttl_ms === 'number' && v.ttl_ms > 90_000 && v.ttl_ms <= 100_000, JSON.stringify(v));

  const t = p + 'tbl';
  expectSuccess(await srv.req('PUT', `/tables/${enc(t)}`, { ttl: 50 }), 201, 'table created successfully');
  for (let i = 0; i < 3; i++) await srv.req('POST', `/tables/${enc(t)}/rows`, { rows: { i } });
  const tl = await list('tables', { prefix: p });
  expectSuccess(tl, 200, 'tables listed successfully', tl.body?.data);
  assert.equal(tl.body.data.items.length, 1);
  assert.equal(tl.body.data.items[0].name, t);
  assert.equal(tl.body.data.items[0].rows, 3);
  assert.ok(tl.body.data.items[0].ttl_ms > 40_000 && tl.body.data.items[0].ttl_ms <= 50_000);
  assert.equal(tl.body.data.next, null);

  assert.equal((await srv.req('PUT', `/locks/${enc(p + 'k1')}`, { ttl: 30, holder: 'w1' })).status, 201);
  assert.equal((await srv.req('PUT', `/locks/${enc(p + 'k2')}`, { ttl: 30 })).status, 201);
  const ll = await listAll('locks', p, 1);
  assert.deepEqual(
    ll.map((x) => [x.name, x.held, x.holder]),
    [
      [p + 'k1', true, 'w1'],
      [p + 'k2', true, null],
    ],
  );
  assert.ok((ll[0].ttl_ms as number) > 20_000);
});

test('listing: prefix, limit, after and next', async () => {
  const p = uniq('P') + '-';
  for (const n of ['a1', 'a2', 'a3', 'b1']) await srv.req('PUT', `/records/${p}${n}`, { record: {} });
  let r = await list('records', { prefix: p + 'a', limit: 2 });
  assert.deepEqual(r.body.data, {
    items: [
      { name: p + 'a1', ttl_ms: null },
      { name: p + 'a2', ttl_ms: null },
    ],
    next: p + 'a2',
  });
  r = await list('records', { prefix: p + 'a', limit: 2, after: p + 'a2' });
  assert.deepEqual(r.body.data, { items: [{ name: p + 'a3', ttl_ms: null }], next: null });
  // a page that ends exactly at the last name has no next
  r = await list('records', { prefix: p + 'a', limit: 3 });
  assert.equal(r.body.data.items.length, 3);
  assert.equal(r.body.data.next, null);
  r = await list('records', { prefix: p, after: p + 'a25' });
  assert.deepEqual(
    r.body.data.items.map((x: { name: string }) => x.name),
    [p + 'a3', p + 'b1'],
  );
  r = await list('records', { prefix: p + 'zz' });
  assert.deepEqual(r.body.data, { items: [], next: null });
  // default limit is 100
  assert.ok((await list('records')).body.data.items.length <= 100);
});

test('listing: % _ and \\ in a prefix are plain characters; prefixes ending in high code points', async () => {
  const p = uniq('G') + '-';
  const names = ['a%b', 'a_c', 'axb', 'a\\d', 'ab', '\u{10FFFF}x', '\u{10FFFF}', '\ud7ffz', '\ue000'].map((n) => p + n);
  for (const n of names) expectSuccess(await srv.req('PUT', `/records/${enc(n)}`, { record: {} }), 201, 'record created successfully');
  const names1 = async (prefix: string) => (await listAll('records', prefix, 100)).map((x) => x.name);
  assert.deepEqual(await names1(p + 'a%'), [p + 'a%b']);
  assert.deepEqual(await names1(p + 'a_'), [p + 'a_c']);
  assert.deepEqual(await names1(p + 'a\\'), [p + 'a\\d']);
  assert.deepEqual(await names1(p + '\u{10FFFF}'), [p + '\u{10FFFF}', p + '\u{10FFFF}x']);
  assert.deepEqual(await names1(p + '\ud7ff'), [p + '\ud7ffz']);
  assert.deepEqual(await names1(p), [...names].sort(byteOrder));
});

test("listing: a table's rows follow inserts, row deletes, transactions and a new incarnation", async () => {
  const p = uniq('C') + '-';
  const t = p + 't';
  const count = async () => {
    const r = await list('tables', { prefix: t });
    expectSuccess(r, 200, 'tables listed successfully', r.body?.data);
    return r.body.data.items[0]?.rows as number | undefined;
  };
  expectSuccess(await srv.req('PUT', `/tables/${enc(t)}`), 201, 'table created successfully');
  assert.equal(await count(), 0);
  for (let i = 0; i < 6; i++) await srv.req('POST', `/tables/${enc(t)}/rows`, { rows: { i } });
  assert.equal(await count(), 6);
  await srv.req('DELETE', `/tables/${enc(t)}/rows`, { wheres: { i: { $lt: 2 } } });
  assert.equal(await count(), 4);
  await srv.req('PATCH', `/tables/${enc(t)}`, { wheres: { i: 2 }, sets: { j: 1 } });
  assert.equal(await count(), 4);
  const r = await srv.req('POST', '/txns', {
    mutations: [
      { name: t, operation: 'INSERT', values: { i: 9 } },
      { name: t, operation: 'REMOVE', where: { i: { $in: [3, 4] } } },
    ],
  });
  assert.equal(r.status, 200, r.raw);
  assert.equal(await count(), 3);
  // a failed transaction moves nothing
  const bad = await srv.req('POST', '/txns', {
    mutations: [
      { name: t, operation: 'REMOVE', where: {} },
      { name: p + 'missing', operation: 'INSERT', values: {} },
    ],
  });
  assert.equal(bad.status, 404, bad.raw);
  assert.equal(await count(), 3);
  await srv.req('DELETE', `/tables/${enc(t)}`);
  assert.equal(await count(), undefined);
  expectSuccess(await srv.req('PUT', `/tables/${enc(t)}`), 201, 'table created successfully');
  assert.equal(await count(), 0);
});

test('listing: expired and deleted names are not listed', async () => {
  const p = uniq('E') + '-';
  await srv.req('PUT', `/records/${p}short`, { record: {}, ttl: 5 });
  await srv.req('PUT', `/records/${p}long`, { record: {} });
  await srv.req('PUT', `/records/${p}gone`, { record: {} });
  expectSuccess(await srv.req('DELETE', `/records/${p}gone`), 200, 'record deleted successfully');
  expectSuccess(await srv.req('POST', '/_test/clock', { advance_ms: 6000 }), 200, 'clock advanced');
  assert.deepEqual(
    (await listAll('records', p, 10)).map((x) => x.name),
    [p + 'long'],
  );
});

test('every strict endpoint refuses an unknown query parameter, naming it, and changes nothing', async () => {
  const v = uniq('qp');
  const txn = { mutations: [{ kind: 'variant', name: v, operation: 'SET', variant: 1 }] };
  expectError(await srv.req('POST', '/txns?dry_run=1', txn), 400, "unknown query parameter 'dry_run': this endpoint takes none");
  expectError(await srv.req('GET', `/variants/${v}`), 404, /does not exist/);
  assert.equal((await srv.req('POST', '/txns', txn)).status, 200, 'the same body without the parameter is accepted');
  for (const path of ['/metrics', '/openapi.json', '/backup']) {
    expectError(await srv.req('GET', `${path}?format=json`), 400, "unknown query parameter 'format': this endpoint takes none");
  }
});

test('listing: bad parameters are 400s naming them', async () => {
  for (const kind of ['tables', 'records', 'variants', 'locks']) {
    for (const limit of ['0', '1001', 'x', '-1', '1.5', '']) {
      const r = await srv.req('GET', `/${kind}?limit=${limit}`);
      expectError(r, 400, /limit/);
    }
    expectError(await srv.req('GET', `/${kind}?prefx=a`), 400, /unknown query parameter 'prefx'/);
    expectError(await srv.req('GET', `/${kind}?limit=1&limit=2`), 400, /limit/);
    expectError(await srv.req('GET', `/${kind}?prefix=%E0%A4`), 400, /percent-encoded/);
    expectError(await srv.req('GET', `/${kind}`, { limit: 3 }), 400, /unknown field 'limit'/);
    const r = await srv.req('GET', `/${kind}?limit=1000`);
    expectSuccess(r, 200, `${kind} listed successfully`, r.body?.data);
  }
});

test('listing while creating and deleting: no repeats, no skips of names that existed throughout', async () => {
  const p = uniq('W') + '-';
  const stable = new Set<string>();
  const deletable: string[] = [];
  for (let i = 0; i < 120; i++) {
    const n = `${p}${String(i * 10).padStart(5, '0')}`;
    await srv.req('PUT', `/records/${n}`, { record: {} });
    if (i % 3 === 0) deletable.push(n);
    else stable.add(n);
  }
  let k = 0;
  const seen = await listAll('records', p, 7, async (page) => {
    // Between pages: new names before, at and after the cursor, and deletions anywhere.
    for (let j = 0; j < 4; j++) await srv.req('PUT', `/records/${p}${String(((page * 37 + j * 301) % 1200) + 1).padStart(5, '0')}x`, { record: {} });
    const d = deletable[k++];
    if (d !== undefined) await srv.req('DELETE', `/records/${d}`);
  });
  const names = seen.map((x) => x.name as string);
  assert.equal(new Set(names).size, names.length, 'a name was listed twice');
  for (const n of stable) assert.ok(names.includes(n), `skipped ${n}`);
  assert.deepEqual(names, [...names].sort(byteOrder));
});

// ---- shaped row queries -----------------------------------------------------------

const PEOPLE = [
  { name: 'ann', age: 31, address: { city: 'oslo' }, 'a.b': 1 },
  { name: 'bob', age: 25, address: { city: 'rome' } },
  { name: 'cy', age: 31, tags: ['x'] },
  { name: 'dee', address: { city: 'oslo', zip: '0150' }, 'a.b': 2 },
  { name: 'eve', age: 19, address: { city: 'rome' } },
];

test('limit, after, order (several keys, missing last), fields, count, with_ids', async () => {
  const t = await mkTable(PEOPLE);
  assert.deepEqual(await ok(await rows(t, { wheres: {}, limit: 2 })), PEOPLE.slice(0, 2));
  assert.deepEqual(await ok(await rows(t, { wheres: {}, after: 3 })), PEOPLE.slice(3));
  assert.deepEqual(await ok(await rows(t, { wheres: {}, after: 1, limit: 2, fields: ['name'] })), [{ name: 'bob' }, { name: 'cy' }]);
  assert.deepEqual(
    await ok(
      await rows(t, {
        wheres: {},
        order: [
          { field: 'age', dir: 'desc' },
          { field: 'name', dir: 'desc' },
        ],
        fields: ['name'],
      }),
    ),
    [{ name: 'cy' }, { name: 'ann' }, { name: 'bob' }, { name: 'eve' }, { name: 'dee' }],
  );
  assert.deepEqual(await ok(await rows(t, { wheres: {}, order: [{ field: 'age' }], fields: ['name', 'age', 'nope'] })), [
    { name: 'eve', age: 19 },
    { name: 'bob', age: 25 },
    { name: 'ann', age: 31 },
    { name: 'cy', age: 31 },
    { name: 'dee' },
  ]);
  assert.deepEqual(await ok(await rows(t, { wheres: {}, order: [{ field: 'address.city' }, { field: 'age', dir: 'desc' }], limit: 3, fields: ['name'] })), [
    { name: 'ann' },
    { name: 'dee' },
    { name: 'bob' },
  ]);
  assert.deepEqual(await ok(await rows(t, { wheres: { age: 31 }, count: true })), { count: 2 });
  assert.deepEqual(await ok(await rows(t, { wheres: {}, count: true, limit: 3 })), { count: 3 });
  assert.deepEqual(await ok(await rows(t, { wheres: { name: 'cy' }, with_ids: true })), [{ t_id: 3, row: PEOPLE[2] }]);
  assert.deepEqual(await ok(await rows(t, { wheres: { name: 'cy' }, with_ids: true, fields: ['tags'] })), [{ t_id: 3, row: { tags: ['x'] } }]);
  // the POST alias takes the same fields
  const q = await srv.req('POST', `/tables/${t}/query`, { wheres: { age: { $gt: 20 } }, order: [{ field: 'age' }], fields: ['name'] });
  expectSuccess(q, 200, 'table queried rows successfully', [{ name: 'bob' }, { name: 'ann' }, { name: 'cy' }]);
});

test('wheres: $and, $or, $not, dotted paths and $field', async () => {
  const t = await mkTable(PEOPLE);
  const names = async (wheres: unknown) => ((await ok(await rows(t, { wheres, fields: ['name'] }))) as Array<{ name: string }>).map((r) => r.name);
  assert.deepEqual(await names({ 'address.city': 'oslo' }), ['ann', 'dee']);
  assert.deepEqual(await names({ 'address.zip': { $exists: true } }), ['dee']);
  assert.deepEqual(await names({ $or: [{ age: 19 }, { 'address.city': 'oslo' }] }), ['ann', 'dee', 'eve']);
  assert.deepEqual(await names({ $and: [{ age: { $gte: 20 } }, { age: { $lt: 31 } }] }), ['bob']);
  assert.deepEqual(await names({ $not: { age: 31 } }), ['bob', 'dee', 'eve']);
  assert.deepEqual(await names({ age: { $not: { $gt: 20 } } }), ['dee', 'eve']);
  assert.deepEqual(await names({ $field: ['a.b'], $gte: 2 }), ['dee']);
  assert.deepEqual(await names({ 'a.b': 1 }), [], 'a dotted name is a path, not a field');
  assert.deepEqual(await names({ $or: [{ $field: ['a.b'], $eq: 1 }, { name: 'eve' }] }), ['ann', 'eve']);
  assert.deepEqual(await names({ $or: [] }), []);
  assert.deepEqual(await names({ $and: [] }), ['ann', 'bob', 'cy', 'dee', 'eve']);
});

test('row queries: unknown fields, bad shapes and unknown operators are 400s naming them', async () => {
  const t = await mkTable([{ a: 1 }]);
  const cases: Array<[unknown, RegExp]> = [
    [{ wheres: {}, limt: 1 }, /unknown field 'limt'/],
    [{ wheres: {}, limit: 0 }, /'limit'/],
    [{ wheres: {}, limit: 1.5 }, /'limit'/],
    [{ wheres: {}, limit: '3' }, /'limit'/],
    [{ wheres: {}, after: -1 }, /'after'/],
    [{ wheres: {}, order: 'a' }, /'order'/],
    [{ wheres: {}, order: [{ field: 'a', dir: 'up' }] }, /order\[0\]\.dir/],
    [{ wheres: {}, order: [{ field: 'a', how: 1 }] }, /unknown field 'how' in order\[0\]/],
    [{ wheres: {}, order: [{}] }, /order\[0\]\.field/],
    [{ wheres: {}, fields: 'a' }, /'fields'/],
    [{ wheres: {}, fields: [1] }, /'fields'/],
    [{ wheres: {}, count: 1 }, /'count'/],
    [{ wheres: {}, with_ids: 'yes' }, /'with_ids'/],
    [{ wheres: {}, count: true, fields: ['a'] }, /'count'/],
    [{ wheres: { a: { $regex: 'x' } } }, /unknown operator '\$regex'/],
    [{ wheres: { $or: { a: 1 } } }, /\$or/],
    [{ wheres: { $and: [1] } }, /\$and/],
    [{ wheres: { $not: [] } }, /\$not/],
    [{ wheres: { $field: 'a', $eq: 1 } }, /\$field/],
    [{ wheres: { $field: ['a'] } }, /\$field/],
    [{ wheres: { $field: ['a'], b: 1 } }, /'b'/],
    [{ wheres: { $or: [{ a: { $nope: 1 } }] } }, /unknown operator '\$nope'/],
  ];
  for (const [body, re] of cases) {
    expectError(await rows(t, body), 400, re);
    expectError(await srv.req('POST', `/tables/${t}/query`, body), 400, re);
  }
  expectError(await rows(uniq('missing'), { wheres: {}, limit: 1 }), 404);
});

test('GET /tables/<name> pages with limit and after; without them it is unchanged', async () => {
  const t = await mkTable([{ i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }]);
  await srv.req('DELETE', `/tables/${t}/rows`, { wheres: { i: 2 } });
  const all = await srv.req('GET', `/tables/${t}`);
  expectSuccess(all, 200, 'table queried successfully', { 1: { i: 1 }, 3: { i: 3 }, 4: { i: 4 } });
  expectSuccess(await srv.req('GET', `/tables/${t}?limit=2`), 200, 'table queried successfully', { 1: { i: 1 }, 3: { i: 3 } });
  expectSuccess(await srv.req('GET', `/tables/${t}?after=1&limit=1`), 200, 'table queried successfully', { 3: { i: 3 } });
  expectSuccess(await srv.req('GET', `/tables/${t}?after=4`), 200, 'table queried successfully', {});
  for (const bad of ['limit=0', 'limit=x', 'after=-1', 'after=1e3', 'offset=2']) {
    expectError(await srv.req('GET', `/tables/${t}?${bad}`), 400, new RegExp(bad.split('=')[0]));
  }
});

test('paging rows while inserting and deleting: no repeats, no skips of rows that existed throughout', async () => {
  const t = await mkTable(Array.from({ length: 60 }, (_, i) => ({ i })));
  const seen: number[] = [];
  let afterId = 0;
  let step = 0;
  for (;;) {
    const r = await srv.req('GET', `/tables/${t}?limit=7&after=${afterId}`);
    const ids = Object.keys(r.body.data).map(Number);
    if (ids.length === 0) break;
    seen.push(...ids);
    afterId = ids[ids.length - 1];
    // rows 3, 6, 9, … may go; new rows arrive at the end
    await srv.req('DELETE', `/tables/${t}/rows`, { wheres: { i: (step % 20) * 3 } });
    if (step < 5) await srv.req('POST', `/tables/${t}/rows`, { rows: { i: 1000 + step } });
    step++;
  }
  assert.equal(new Set(seen).size, seen.length);
  for (let id = 1; id <= 60; id++) if ((id - 1) % 3 !== 0) assert.ok(seen.includes(id), `skipped ${id}`);
  // the same through the body form
  const got: number[] = [];
  let cursor = 0;
  for (;;) {
    const page = (await ok(await rows(t, { wheres: {}, after: cursor, limit: 9, with_ids: true }))) as Array<{ t_id: number }>;
    if (page.length === 0) break;
    got.push(...page.map((x) => x.t_id));
    cursor = page[page.length - 1].t_id;
  }
  assert.deepEqual(got, Object.keys((await srv.req('GET', `/tables/${t}`)).body.data).map(Number));
});

// ---- indexes ------------------------------------------------------------------------

async function waitReady(t: string, on: PithosServer = srv): Promise<Array<{ field: string; ready: boolean }>> {
  for (let i = 0; i < 500; i++) {
    const r = await on.req('GET', `/tables/${t}/indexes`);
    expectSuccess(r, 200, 'indexes listed successfully', r.body?.data);
    if (r.body.data.every((x: { ready: boolean }) => x.ready)) return r.body.data;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error('index never became ready');
}

test('indexes: create, list, use, drop; errors', async () => {
  const t = await mkTable(PEOPLE);
  const queries = [
    { wheres: { age: 31 } },
    { wheres: { age: { $in: [19, 25] } } },
    { wheres: { age: { $gt: 20, $lte: 31 } } },
    { wheres: { 'address.city': 'rome' }, with_ids: true },
    { wheres: {}, order: [{ field: 'age', dir: 'desc' }], limit: 3 },
    { wheres: {}, order: [{ field: 'address.city' }], limit: 2, fields: ['name'] },
  ];
  const before = [];
  for (const q of queries) before.push(await ok(await rows(t, q)));
  expectSuccess(await srv.req('PUT', `/tables/${t}/indexes/age`), 201, 'index created successfully');
  expectSuccess(await srv.req('PUT', `/tables/${t}/indexes/address.city`), 201, 'index created successfully');
  expectError(await srv.req('PUT', `/tables/${t}/indexes/age`), 409, /already exists/);
  expectError(await srv.req('PUT', `/tables/${t}/indexes/a..b`), 400, /a\.\.b/);
  expectError(await srv.req('PUT', `/tables/${t}/indexes/x`, { unique: true }), 400, /unknown field 'unique'/);
  expectError(await srv.req('PUT', `/tables/${uniq('nope')}/indexes/age`), 404, /does not exist/);
  expectError(await srv.req('GET', `/tables/${t}/indexes?x=1`), 400, /unknown query parameter 'x'/);
  // A row query takes its shape in the body: `?limit=` is refused (not ignored), naming where it goes.
  expectError(
    await srv.req('GET', `/tables/${t}/rows?limit=1`, { wheres: {} }),
    400,
    /unknown query parameter 'limit': this endpoint takes 'limit' as a field of the JSON body/,
  );
  expectError(await srv.req('POST', `/tables/${t}/query?x=1`, { wheres: {} }), 400, /unknown query parameter 'x': this endpoint takes none/);
  assert.deepEqual(await waitReady(t), [
    { field: 'address.city', ready: true },
    { field: 'age', ready: true },
  ]);
  for (let i = 0; i < queries.length; i++) assert.deepEqual(await ok(await rows(t, queries[i])), before[i], JSON.stringify(queries[i]));
  // maintained on insert, patch and delete
  await srv.req('POST', `/tables/${t}/rows`, { rows: { name: 'fay', age: 31 } });
  await srv.req('PATCH', `/tables/${t}`, { wheres: { name: 'ann' }, sets: { age: 32 } });
  await srv.req('DELETE', `/tables/${t}/rows`, { wheres: { name: 'cy' } });
  assert.deepEqual(await ok(await rows(t, { wheres: { age: 31 }, fields: ['name'] })), [{ name: 'fay' }]);
  assert.deepEqual(await ok(await rows(t, { wheres: { age: 32 }, fields: ['name'] })), [{ name: 'ann' }]);
  expectSuccess(await srv.req('DELETE', `/tables/${t}/indexes/age`), 200, 'index deleted successfully');
  expectError(await srv.req('DELETE', `/tables/${t}/indexes/age`), 404, /index on 'age'/);
  assert.deepEqual((await srv.req('GET', `/tables/${t}/indexes`)).body.data, [{ field: 'address.city', ready: true }]);
  // dropping the table drops its indexes: a new table of that name has none
  await srv.req('DELETE', `/tables/${t}`);
  expectError(await srv.req('GET', `/tables/${t}/indexes`), 404);
  await srv.req('PUT', `/tables/${t}`);
  expectSuccess(await srv.req('GET', `/tables/${t}/indexes`), 200, 'indexes listed successfully', []);
});

test('a table ttl changed after its index was made: the index answers as a scan past the old ttl, before and after a restart', async () => {
  // Its own server on the real clock: a restart resets the test clock, and the old ttl must have passed in real time.
  const s = await PithosServer.start({ testClock: false });
  try {
    const t = uniq('ttlix');
    expectSuccess(await s.req('PUT', `/tables/${t}`, { ttl: 1 }), 201, 'table created successfully');
    // Written after the table with the same ttl: once it is gone, so is the table's old expiry.
    const marker = uniq('ttlix-marker');
    expectSuccess(await s.req('PUT', `/records/${marker}`, { record: {}, ttl: 1 }), 201, 'record created successfully');
    // `k` is indexed, `c` holds the same values and is not: the same question asked through both.
    for (let i = 0; i < 24; i++) assert.equal((await s.req('POST', `/tables/${t}/rows`, { rows: { k: i % 4, c: i % 4, n: i } })).status, 201);
    expectSuccess(await s.req('PUT', `/tables/${t}/indexes/k`), 201, 'index created successfully');
    assert.deepEqual(await waitReady(t, s), [{ field: 'k', ready: true }]);
    expectSuccess(await s.req('PATCH', `/tables/${t}`, { ttl: 3600 }), 200, 'table patched successfully');
    const same = async (when: string): Promise<void> => {
      const ask = async (body: unknown): Promise<unknown> => {
        const r = await s.req('GET', `/tables/${enc(t)}/rows`, body);
        expectSuccess(r, 200, 'table queried rows successfully', r.body?.data);
        return r.body.data;
      };
      const pairs: Array<[unknown, unknown]> = [
        [
          { wheres: { k: 2 }, fields: ['n'] },
          { wheres: { c: 2 }, fields: ['n'] },
        ],
        [
          { wheres: { k: { $gte: 2 } }, count: true },
          { wheres: { c: { $gte: 2 } }, count: true },
        ],
        [
          { wheres: { k: { $in: [0, 3] } }, fields: ['n'] },
          { wheres: { c: { $in: [0, 3] } }, fields: ['n'] },
        ],
      ];
      for (const [indexed, scanned] of pairs) {
        const want = await ask(scanned);
        assert.deepEqual(await ask(indexed), want, `${when}: ${JSON.stringify(indexed)}`);
        assert.notDeepEqual(want, [], `${when}: the table lost rows: ${JSON.stringify(scanned)}`);
      }
    };
    await same('before the old ttl');
    for (let i = 0; ; i++) {
      const r = await s.req('GET', `/records/${marker}`);
      if (r.status === 404) break;
      assert.ok(i < 300, 'the 1 s marker record never expired');
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.deepEqual(await waitReady(t, s), [{ field: 'k', ready: true }], 'past the old ttl');
    await same('past the old ttl');
    await s.restart();
    assert.deepEqual(await waitReady(t, s), [{ field: 'k', ready: true }], 'after a restart past the old ttl');
    await same('after a restart past the old ttl');
    // The definition is there to drop, as it is listed.
    expectSuccess(await s.req('DELETE', `/tables/${t}/indexes/k`), 200, 'index deleted successfully');
  } finally {
    await s.close();
  }
});

test('indexes survive a restart', async () => {
  const t = await mkTable(Array.from({ length: 50 }, (_, i) => ({ k: i % 5, s: `v${i}` })));
  await srv.req('PUT', `/tables/${t}/indexes/k`);
  await waitReady(t);
  await srv.restart();
  assert.deepEqual(await waitReady(t), [{ field: 'k', ready: true }]);
  assert.deepEqual(await ok(await rows(t, { wheres: { k: 3 }, count: true })), { count: 10 });
});
