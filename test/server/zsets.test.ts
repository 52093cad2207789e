/**
 * Sorted sets (docs/api.md, "Sorted sets"), black-box: PUT, add with every
 * mode, incr (exact under concurrency, 409 when not finite), remove, range
 * by rank and by score (exclusive bounds, infinities, offset/limit, rev),
 * member score and ranks, bad input, versions, ttl, listing, change feed,
 * the /zset/<key> spelling, survival across SIGKILL, and random operation
 * sequences against a plain in-memory model.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { PithosServer, expectError, expectSuccess, pool, seg, uniq, etag } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';
import { byteOrder } from '../helpers/order.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

/** Redis order: score ascending, ties by member in byte order. */
const zorder = (a: [string, number], b: [string, number]): number => a[1] - b[1] || byteOrder(a[0], b[0]);
const items = (pairs: Array<[string, number]>) => pairs.map(([member, score]) => ({ member, score }));

test('PUT, then GET by rank: score order, ties by member bytes; rev; negative ranks', async () => {
  const z = uniq('z');
  const zset = { b: 2, a: 2, c: 1.5, d: -3, '😀': 2, '\uff01': 2, e: 1e300 };
  expectSuccess(await srv.req('PUT', `/zsets/${z}`, { zset }), 201, 'zset created successfully');
  const sorted = (Object.entries(zset) as Array<[string, number]>).sort(zorder);
  const get = (q: string) => srv.req('GET', `/zsets/${z}${q}`);
  expectSuccess(await get(''), 200, 'zset queried successfully', { items: items(sorted), count: 7 });
  expectSuccess(await get('?by=rank&start=1&stop=2'), 200, 'zset queried successfully', { items: items(sorted.slice(1, 3)), count: 7 });
  expectSuccess(await get('?start=-2'), 200, 'zset queried successfully', { items: items(sorted.slice(-2)), count: 7 });
  expectSuccess(await get('?start=0&stop=-5'), 200, 'zset queried successfully', { items: items(sorted.slice(0, 3)), count: 7 });
  expectSuccess(await get('?start=0&stop=1&rev=true'), 200, 'zset queried successfully', { items: items([...sorted].reverse().slice(0, 2)), count: 7 });
  expectSuccess(await get('?start=5&stop=2'), 200, 'zset queried successfully', { items: [], count: 7 });
  expectSuccess(await get('?start=-100&stop=100'), 200, 'zset queried successfully', { items: items(sorted), count: 7 });
  expectSuccess(await srv.req('PUT', `/zsets/${z}`, { zset: {} }), 200, 'zset created successfully');
  expectSuccess(await get(''), 200, 'zset queried successfully', { items: [], count: 0 });
});

test('GET by score: inclusive and exclusive bounds, infinities, offset and limit, rev', async () => {
  const z = uniq('z');
  const pairs: Array<[string, number]> = [
    ['a', 1],
    ['b', 2],
    ['c', 2],
    ['d', 3],
    ['e', 4.5],
    ['f', -1],
  ];
  await srv.req('PUT', `/zsets/${z}`, { zset: Object.fromEntries(pairs) });
  const sorted = [...pairs].sort(zorder);
  const range = (lo: number, loOpen: boolean, hi: number, hiOpen: boolean) =>
    sorted.filter(([, s]) => (loOpen ? s > lo : s >= lo) && (hiOpen ? s < hi : s <= hi));
  const get = (q: string) => srv.req('GET', `/zsets/${z}?by=score&${q}`);
  const ok = async (q: string, want: Array<[string, number]>) =>
    expectSuccess(await get(q), 200, 'zset queried successfully', { items: items(want), count: 6 });
  await ok('min=2&max=3', range(2, false, 3, false));
  await ok('min=(2&max=3', range(2, true, 3, false));
  await ok('min=2&max=(3', range(2, false, 3, true));
  await ok('min=(2&max=(3', range(2, true, 3, true));
  await ok('min=-inf&max=%2Binf', sorted);
  await ok('min=-inf&max=inf', sorted);
  await ok('', sorted);
  await ok('min=(-inf&max=(1', range(-Infinity, true, 1, true));
  await ok('min=2.5', range(2.5, false, Infinity, false));
  await ok('min=1e0&max=2E0', range(1, false, 2, false));
  await ok('min=5&max=1', []);
  await ok('min=1&max=4.5&offset=1&limit=2', range(1, false, 4.5, false).slice(1, 3));
  await ok('min=1&max=4.5&offset=10', []);
  await ok('min=1&max=4.5&limit=0', []);
  await ok('min=1&max=4.5&rev=true', range(1, false, 4.5, false).reverse());
  await ok('min=1&max=4.5&rev=true&offset=1&limit=2', range(1, false, 4.5, false).reverse().slice(1, 3));
  await ok('max=2&rev=true&limit=1', [['c', 2]]);
  expectError(await get('min=abc'), 400, `query parameter 'min' must be a number, -inf or +inf, optionally after '(' (exclusive), not 'abc'`);
  expectError(await get('max=1e999'), 400, /query parameter 'max' must be a number/);
  expectError(await get('max=NaN'), 400, /query parameter 'max' must be a number/);
  expectError(await get('start=1'), 400, `query parameter 'start' applies only with by=rank`);
  expectError(await srv.req('GET', `/zsets/${z}?min=1`), 400, `query parameter 'min' applies only with by=score`);
  expectError(await srv.req('GET', `/zsets/${z}?by=lex`), 400, `query parameter 'by' must be rank or score, not 'lex'`);
  expectError(await srv.req('GET', `/zsets/${z}?start=x`), 400, /query parameter 'start' must be an integer/);
  expectError(await srv.req('GET', `/zsets/${z}?rev=maybe`), 400, `query parameter 'rev' must be true or false`);
  expectError(await get('offset=-1'), 400, /query parameter 'offset' must be an integer ≥ 0/);
  expectError(await srv.req('GET', `/zsets/${z}?color=red`), 400, /unknown query parameter 'color'/);
});

test('add: upsert, nx, xx, gt, lt, with exact added / updated counts; create false', async () => {
  const z = uniq('z');
  const add = (members: Record<string, number>, mode?: string) => srv.req('POST', `/zsets/${z}/add`, mode === undefined ? { members } : { members, mode });
  const A = 'zset members added successfully';
  expectSuccess(await add({ a: 1, b: 2 }), 200, A, { added: 2, updated: 0, count: 2 });
  expectSuccess(await add({ a: 5, c: 3 }), 200, A, { added: 1, updated: 1, count: 3 });
  expectSuccess(await add({ a: 5 }), 200, A, { added: 0, updated: 0, count: 3 });
  expectSuccess(await add({ a: 0, d: 4 }, 'nx'), 200, A, { added: 1, updated: 0, count: 4 });
  expectSuccess(await add({ a: 7, e: 4 }, 'xx'), 200, A, { added: 0, updated: 1, count: 4 });
  expectSuccess(await add({ a: 6, b: 3, f: 1 }, 'gt'), 200, A, { added: 1, updated: 1, count: 5 });
  expectSuccess(await add({ a: 8, b: 0, g: 9 }, 'lt'), 200, A, { added: 1, updated: 1, count: 6 });
  expectSuccess(await srv.req('GET', `/zset/${z}`), 200, 'zset queried successfully', { zset: { b: 0, f: 1, c: 3, d: 4, a: 7, g: 9 } });
  const m = uniq('missing');
  expectError(await srv.req('POST', `/zsets/${m}/add`, { members: { a: 1 }, create: false }), 404, `zset '${m}' does not exist`);
  expectError(await srv.req('POST', `/zsets/${m}/incr`, { member: 'a', delta: 1, create: false }), 404, `zset '${m}' does not exist`);
  expectError(await srv.req('GET', `/zsets/${m}`), 404, `zset '${m}' does not exist`);
});

test('incr: a missing member starts at 0; a non-finite result is 409 and changes nothing', async () => {
  const z = uniq('z');
  const incr = (member: string, delta: number) => srv.req('POST', `/zsets/${z}/incr`, { member, delta });
  expectSuccess(await incr('a', 2.5), 200, 'zset member incremented successfully', { score: 2.5 });
  expectSuccess(await incr('a', -4), 200, 'zset member incremented successfully', { score: -1.5 });
  expectSuccess(await incr('b', 1e308), 200, 'zset member incremented successfully', { score: 1e308 });
  const v = etag(await srv.req('GET', `/zsets/${z}`));
  expectError(await incr('b', 1e308), 409, /zset '.*' member "b": score 1e\+308 \+ 1e\+308 is not a finite number/);
  const g = await srv.req('GET', `/zsets/${z}`);
  expectSuccess(g, 200, 'zset queried successfully', {
    items: items([
      ['a', -1.5],
      ['b', 1e308],
    ]),
    count: 2,
  });
  assert.equal(etag(g), v);
  expectSuccess(await srv.req('GET', `/zsets/${z}/members/b`), 200, 'zset member queried successfully', { score: 1e308, rank: 1, rev_rank: 0 });
});

test('member: score, rank and rev_rank; 404 for a non-member; members with any characters', async () => {
  const z = uniq('z');
  const pairs: Array<[string, number]> = [
    ['a', 1],
    ['b/c', 2],
    ['', 0],
    ['sp ace', 2],
    ['é', 3],
    ['x\u0001', 3],
  ];
  await srv.req('PUT', `/zsets/${z}`, { zset: Object.fromEntries(pairs) });
  const sorted = [...pairs].sort(zorder);
  for (let i = 0; i < sorted.length; i++) {
    const [m, s] = sorted[i];
    expectSuccess(await srv.req('GET', `/zsets/${z}/members/${encodeURIComponent(m)}`), 200, 'zset member queried successfully', {
      score: s,
      rank: i,
      rev_rank: sorted.length - 1 - i,
    });
  }
  expectError(await srv.req('GET', `/zsets/${z}/members/nope`), 404, `"nope" is not a member of zset '${z}'`);
  expectError(await srv.req('GET', `/zsets/${z}/members/${'x'.repeat(4097)}`), 400, 'member must be at most 4096 bytes of UTF-8');
  expectError(await srv.req('GET', `/zsets/${z}/members/%E0%A4`), 400, 'member is not valid percent-encoded UTF-8');
});

test('remove: exact counts, duplicates once; the sorted set stays when emptied', async () => {
  const z = uniq('z');
  await srv.req('PUT', `/zsets/${z}`, { zset: { a: 1, b: 2, c: 3 } });
  expectSuccess(await srv.req('POST', `/zsets/${z}/remove`, { members: ['a', 'a', 'q'] }), 200, 'zset members removed successfully', { removed: 1, count: 2 });
  expectSuccess(await srv.req('GET', `/zsets/${z}/members/c`), 200, 'zset member queried successfully', { score: 3, rank: 1, rev_rank: 0 });
  expectSuccess(await srv.req('POST', `/zsets/${z}/remove`, { members: ['b', 'c'] }), 200, 'zset members removed successfully', { removed: 2, count: 0 });
  expectSuccess(await srv.req('GET', `/zsets/${z}`), 200, 'zset queried successfully', { items: [], count: 0 });
  const m = uniq('missing');
  expectError(await srv.req('POST', `/zsets/${m}/remove`, { members: ['a'] }), 404, `zset '${m}' does not exist`);
});

test('bad input is 400 naming the field, and changes nothing', async () => {
  const z = uniq('z');
  await srv.req('PUT', `/zsets/${z}`, { zset: { keep: 1 } });
  const v = etag(await srv.req('GET', `/zsets/${z}`));
  const long = 'x'.repeat(4097);
  const cases: Array<[string, string, unknown, string | RegExp]> = [
    ['PUT', '', { zset: [] }, `field 'zset' must be an object`],
    ['PUT', '', { zset: { a: '1' } }, `field 'zset' member "a" must be a finite number`],
    ['PUT', '', { zset: { [long]: 1 } }, /field 'zset' member "x+" must be at most 4096 bytes of UTF-8/],
    ['PUT', '', '{"zset":{"a":1e999}}', `field 'zset' member "a" must be a finite number`],
    ['POST', 'add', { members: {} }, `field 'members' must not be empty`],
    ['POST', 'add', { members: ['a'] }, `field 'members' must be an object`],
    ['POST', 'add', { members: { a: null } }, `field 'members' member "a" must be a finite number`],
    ['POST', 'add', '{"members":{"a":-1e999}}', `field 'members' member "a" must be a finite number`],
    [
      'POST',
      'add',
      { members: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`m${i}`, i])) },
      `field 'members' holds 1001 elements; one request takes at most 1000`,
    ],
    ['POST', 'add', { members: { a: 1 }, mode: 'ch' }, `field 'mode' must be upsert, nx, xx, gt or lt, not "ch"`],
    ['POST', 'add', { members: { a: 1 }, mode: 1 }, `field 'mode' must be a string`],
    ['POST', 'add', { members: { a: 1 }, score: 1 }, /^unknown field 'score'/],
    ['POST', 'incr', { member: 'a' }, /field 'delta' is required/],
    ['POST', 'incr', { member: 'a', delta: '1' }, `field 'delta' must be a number`],
    ['POST', 'incr', '{"member":"a","delta":1e999}', `field 'delta' must be a number`],
    ['POST', 'incr', { member: 3, delta: 1 }, `field 'member' must be a string`],
    ['POST', 'incr', { member: long, delta: 1 }, `field 'member' must be at most 4096 bytes of UTF-8`],
    ['POST', 'remove', { members: [] }, `field 'members' must not be empty`],
    ['POST', 'remove', { members: { a: 1 } }, `field 'members' must be an array`],
    ['PATCH', '', { ttl: -5 }, /field 'ttl' must be an integer/],
  ];
  for (const [method, sub, body, msg] of cases) {
    expectError(await srv.req(method, `/zsets/${z}${sub === '' ? '' : '/' + sub}`, body), 400, msg);
  }
  const g = await srv.req('GET', `/zsets/${z}`);
  expectSuccess(g, 200, 'zset queried successfully', { items: [{ member: 'keep', score: 1 }], count: 1 });
  assert.equal(etag(g), v, 'nothing was written');
});

test('versions and conditional writes on every write', async () => {
  const z = uniq('z');
  expectError(await srv.req('PUT', `/zsets/${z}`, { zset: { a: 1 }, if_version: 1 }), 412, `zset '${z}' does not exist (expected version 1)`);
  expectSuccess(await srv.req('PUT', `/zsets/${z}`, { zset: { a: 1 }, if_absent: true }), 201, 'zset created successfully');
  const v1 = etag(await srv.req('GET', `/zsets/${z}`));
  expectError(await srv.req('PUT', `/zsets/${z}`, { zset: { a: 2 } }, { 'If-None-Match': '*' }), 412, `zset '${z}' already exists (version ${v1})`);
  expectError(await srv.req('POST', `/zsets/${z}/add`, { members: { b: 1 }, if_version: v1 - 1 }), 412, `zset '${z}' changed (version ${v1})`);
  expectError(await srv.req('POST', `/zsets/${z}/incr`, { member: 'a', delta: 1 }, { 'If-Match': '"2"' }), 412, `zset '${z}' changed (version ${v1})`);
  expectError(await srv.req('POST', `/zsets/${z}/remove`, { members: ['a'], if_version: 0 }), 412, `zset '${z}' changed (version ${v1})`);
  expectError(await srv.req('DELETE', `/zsets/${z}`, { if_version: 0 }), 412, `zset '${z}' changed (version ${v1})`);
  assert.equal(etag(await srv.req('GET', `/zsets/${z}`)), v1);
  expectSuccess(await srv.req('POST', `/zsets/${z}/incr`, { member: 'a', delta: 1, if_version: v1 }), 200, 'zset member incremented successfully', {
    score: 2,
  });
  const v2 = etag(await srv.req('GET', `/zset/${z}`));
  assert.ok(v2 > v1);
  expectSuccess(await srv.req('PATCH', `/zsets/${z}`, { ttl: 30 }, { 'If-Match': `"${v2}"` }), 200, 'zset patched successfully');
  assert.ok(etag(await srv.req('GET', `/zsets/${z}`)) > v2);
});

test('ttl, PATCH ttl, listing GET /zsets, health, the /zset/<key> spelling', async () => {
  const p = uniq('ZL');
  const h0 = (await srv.req('GET', '/health')).body.data.key_count as number;
  await srv.req('PUT', `/zsets/${p}a`, { zset: { x: 1, y: 2 }, ttl: 20 });
  await srv.req('POST', `/zsets/${p}b/incr`, { member: 'q', delta: 1 });
  expectSuccess(await srv.req('PUT', `/zset/${p}c`, { zset: { m: 3 } }), 201, 'zset created successfully');
  assert.equal((await srv.req('GET', '/health')).body.data.key_count - h0, 3);
  const l = await srv.req('GET', `/zsets?prefix=${p}`);
  assert.equal(l.status, 200);
  assert.equal(l.body.message, 'zsets listed successfully');
  assert.deepEqual(
    l.body.data.items.map((i: { name: string; count: number }) => [i.name, i.count]),
    [
      [`${p}a`, 2],
      [`${p}b`, 1],
      [`${p}c`, 1],
    ],
  );
  assert.ok(l.body.data.items[0].ttl_ms > 19_000 && l.body.data.items[0].ttl_ms <= 20_000);
  assert.equal(l.body.data.items[1].ttl_ms, null, 'an object created by incr has no expiry');
  expectSuccess(await srv.req('GET', `/zsets?prefix=${p}&limit=1&after=${p}a`), 200, 'zsets listed successfully', {
    items: [{ name: `${p}b`, ttl_ms: null, count: 1 }],
    next: `${p}b`,
  });
  expectSuccess(await srv.req('PATCH', `/zsets/${p}b`, { ttl: 5 }), 200, 'zset patched successfully');
  await srv.advance(6_000);
  expectError(await srv.req('GET', `/zsets/${p}b/members/q`), 404, `zset '${p}b' does not exist`);
  expectSuccess(await srv.req('GET', `/zsets/${p}a/members/y`), 200, 'zset member queried successfully', { score: 2, rank: 1, rev_rank: 0 });
  await srv.advance(15_000);
  expectError(await srv.req('GET', `/zsets/${p}a`), 404);
  expectSuccess(await srv.req('GET', `/zsets?prefix=${p}`), 200, 'zsets listed successfully', {
    items: [{ name: `${p}c`, ttl_ms: null, count: 1 }],
    next: null,
  });
  expectSuccess(await srv.req('GET', `/zset/${p}c`), 200, 'zset queried successfully', { zset: { m: 3 } });
  expectSuccess(await srv.req('DELETE', `/zset/${p}c`), 200, 'zset deleted successfully');
  expectError(await srv.req('GET', `/zset/${p}c`), 404, `zset '${p}c' does not exist`);
});

test('change feed: kind zset, op add / incr / remove with arguments and result', async () => {
  const z = uniq('zfeed');
  const w = watch({ port: srv.port, token: srv.token, query: `kind=zset&prefix=${z}&values=true` });
  await w.opened;
  await srv.req('PUT', `/zsets/${z}`, { zset: { a: 1 } });
  await srv.req('POST', `/zsets/${z}/add`, { members: { b: 2 }, mode: 'nx' });
  await srv.req('POST', `/zsets/${z}/incr`, { member: 'a', delta: 0.5 });
  await srv.req('POST', `/zsets/${z}/remove`, { members: ['b'] });
  await srv.req('PATCH', `/zsets/${z}`, { ttl: 1 });
  await srv.advance(1_500);
  await srv.req('GET', '/health'); // sweeps, so the expiry is noticed
  await w.until(() => w.events.length >= 6, 10_000, 'six events');
  w.close();
  const ev = w.events.map((e) => [e.event, JSON.parse(e.data)] as [string, Record<string, unknown>]);
  assert.deepEqual(
    ev.map(([t, d]) => [t, d.kind, d.op]),
    [
      ['put', 'zset', undefined],
      ['put', 'zset', 'add'],
      ['put', 'zset', 'incr'],
      ['put', 'zset', 'remove'],
      ['put', 'zset', undefined],
      ['expire', 'zset', undefined],
    ],
  );
  assert.deepEqual(ev[1][1].value, { members: { b: 2 }, mode: 'nx', added: 1, updated: 0, count: 2 });
  assert.deepEqual(ev[2][1].value, { member: 'a', delta: 0.5, score: 1.5 });
  assert.deepEqual(ev[3][1].value, { members: ['b'], removed: 1, count: 1 });
});

test('concurrent increments of one member are exact; concurrent adds count each new member once', async () => {
  const z = uniq('zc');
  const n = 200;
  const rs = await pool(
    Array.from({ length: n }, (_, i) => i),
    24,
    (i) => srv.req('POST', `/zsets/${z}/incr`, { member: i % 2 === 0 ? 'even' : 'odd', delta: 0.5 }),
  );
  for (const r of rs) assert.equal(r.status, 200, r.raw);
  // Every intermediate score was handed to exactly one request.
  const evens = rs
    .filter((_, i) => i % 2 === 0)
    .map((r) => r.body.data.score as number)
    .sort((a, b) => a - b);
  assert.deepEqual(
    evens,
    Array.from({ length: n / 2 }, (_, i) => (i + 1) * 0.5),
  );
  expectSuccess(await srv.req('GET', `/zsets/${z}`), 200, 'zset queried successfully', {
    items: items([
      ['even', 50],
      ['odd', 50],
    ]),
    count: 2,
  });
  const adds = await pool(
    Array.from({ length: 30 }, (_, i) => i),
    16,
    (i) => srv.req('POST', `/zsets/${z}/add`, { members: Object.fromEntries(Array.from({ length: 10 }, (_, j) => [`m${(i * 3 + j) % 50}`, j])) }),
  );
  const added = adds.reduce((s, r) => s + (r.body.data.added as number), 0);
  assert.equal(added, 50);
  assert.equal((await srv.req('GET', `/zsets/${z}?start=0&stop=0`)).body.data.count, 52);
});

test('random sequences of zset operations answer as a plain in-memory model does', async () => {
  const member = fc.constantFrom('a', 'b', 'c', 'é', '', '😀', '\uff01', 'a\u0000');
  const score = fc.constantFrom(-2, -0.5, 0, 1, 1, 2, 3.25, 1e10);
  const op = fc.oneof(
    fc.record({
      t: fc.constant('add' as const),
      ms: fc.dictionary(member, score, { minKeys: 1, maxKeys: 4 }),
      mode: fc.constantFrom('upsert', 'nx', 'xx', 'gt', 'lt'),
    }),
    fc.record({ t: fc.constant('incr' as const), m: member, d: score }),
    fc.record({ t: fc.constant('remove' as const), ms: fc.array(member, { minLength: 1, maxLength: 3 }) }),
    fc.record({ t: fc.constant('rank' as const), start: fc.integer({ min: -5, max: 5 }), stop: fc.integer({ min: -5, max: 5 }), rev: fc.boolean() }),
    fc.record({
      t: fc.constant('score' as const),
      min: score,
      max: score,
      minOpen: fc.boolean(),
      maxOpen: fc.boolean(),
      offset: fc.integer({ min: 0, max: 3 }),
      limit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
      rev: fc.boolean(),
    }),
    fc.record({ t: fc.constant('member' as const), m: member }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const z = uniq('zprop');
      let model: Map<string, number> | undefined;
      const sorted = (): Array<[string, number]> => [...(model ?? new Map())].sort(zorder);
      for (const o of ops) {
        const path = `/zsets/${z}`;
        if (o.t === 'add') {
          const r = await srv.req('POST', `${path}/add`, { members: o.ms, mode: o.mode });
          assert.equal(r.status, 200, r.raw);
          let added = 0;
          let updated = 0;
          const m = model ?? new Map<string, number>();
          for (const [k, s] of Object.entries(o.ms)) {
            const c = m.get(k);
            if (c === undefined) {
              if (o.mode === 'xx') continue;
              m.set(k, s);
              added++;
            } else if (o.mode !== 'nx' && s !== c && (o.mode !== 'gt' || s > c) && (o.mode !== 'lt' || s < c)) {
              m.set(k, s);
              updated++;
            }
          }
          if (model !== undefined || added > 0) model = m;
          assert.deepEqual(r.body.data, { added, updated, count: m.size });
        } else if (o.t === 'incr') {
          const r = await srv.req('POST', `${path}/incr`, { member: o.m, delta: o.d });
          model ??= new Map();
          const s = (model.get(o.m) ?? 0) + o.d;
          model.set(o.m, s);
          assert.deepEqual(r.body.data, { score: s });
        } else if (o.t === 'remove') {
          const r = await srv.req('POST', `${path}/remove`, { members: o.ms });
          if (model === undefined) {
            assert.equal(r.status, 404);
            continue;
          }
          const before = model.size;
          for (const m of o.ms) model.delete(m);
          assert.deepEqual(r.body.data, { removed: before - model.size, count: model.size });
        } else if (o.t === 'member') {
          const r = await srv.req('GET', `${path}/members/${encodeURIComponent(o.m)}`);
          const s = model?.get(o.m);
          if (s === undefined) {
            assert.equal(r.status, 404);
            continue;
          }
          const all = sorted();
          const rank = all.findIndex(([m]) => m === o.m);
          assert.deepEqual(r.body.data, { score: s, rank, rev_rank: all.length - 1 - rank });
        } else if (o.t === 'rank') {
          const r = await srv.req('GET', `${path}?start=${o.start}&stop=${o.stop}&rev=${o.rev}`);
          if (model === undefined) {
            assert.equal(r.status, 404);
            continue;
          }
          const all = o.rev ? sorted().reverse() : sorted();
          const n = all.length;
          const a = Math.max(0, o.start < 0 ? o.start + n : o.start);
          const b = Math.min(n - 1, o.stop < 0 ? o.stop + n : o.stop);
          assert.deepEqual(r.body.data, { items: items(a <= b ? all.slice(a, b + 1) : []), count: n });
        } else {
          const q =
            `by=score&min=${o.minOpen ? '(' : ''}${o.min}&max=${o.maxOpen ? '(' : ''}${o.max}&offset=${o.offset}&rev=${o.rev}` +
            (o.limit === undefined ? '' : `&limit=${o.limit}`);
          const r = await srv.req('GET', `${path}?${q}`);
          if (model === undefined) {
            assert.equal(r.status, 404);
            continue;
          }
          let inRange = sorted().filter(([, s]) => (o.minOpen ? s > o.min : s >= o.min) && (o.maxOpen ? s < o.max : s <= o.max));
          if (o.rev) inRange = inRange.reverse();
          inRange = inRange.slice(o.offset, o.limit === undefined ? undefined : o.offset + o.limit);
          assert.deepEqual(r.body.data, { items: items(inRange), count: model.size });
        }
      }
    }),
    { numRuns: 40 },
  );
});

test("writes that land while a large sorted set's order is built after a restart are all in it", async () => {
  const s = await PithosServer.start({ fsync: 'never' });
  try {
    const z = uniq('zbuild');
    const n = 150_000;
    const zset: Record<string, number> = {};
    for (let i = 0; i < n; i++) zset[`k${i}`] = i;
    expectSuccess(await s.req('PUT', `/zsets/${z}`, { zset }), 201, 'zset created successfully');
    await s.restart('SIGTERM');
    // The first read starts the build (scores come from disk); increments of the lowest members race it.
    const first = s.req('GET', `/zsets/${z}?rev=true&start=0&stop=2`);
    const incrs = await Promise.all(Array.from({ length: 30 }, (_, i) => s.req('POST', `/zsets/${z}/incr`, { member: `k${i}`, delta: n + i })));
    for (const r of incrs) assert.equal(r.status, 200, r.raw);
    assert.equal((await first).status, 200);
    expectSuccess(await s.req('GET', `/zsets/${z}?rev=true&start=0&stop=2`), 200, 'zset queried successfully', {
      items: [
        { member: 'k29', score: n + 58 },
        { member: 'k28', score: n + 56 },
        { member: 'k27', score: n + 54 },
      ],
      count: n,
    });
    expectSuccess(await s.req('GET', `/zsets/${z}/members/k0`), 200, 'zset member queried successfully', { score: n, rank: n - 30, rev_rank: 29 });
    expectSuccess(await s.req('GET', `/zsets/${z}?start=0&stop=0`), 200, 'zset queried successfully', { items: [{ member: 'k30', score: 30 }], count: n });
  } finally {
    await s.close();
  }
});

test('sorted sets survive SIGKILL: acknowledged increments are there after a restart, ranks rebuilt', async () => {
  const s = await PithosServer.start({ fsync: 'always' });
  try {
    const z = uniq('zcrash');
    await s.req('PUT', `/zsets/${seg(z)}`, { zset: { base: 0 } });
    let acked = 0;
    await pool(
      Array.from({ length: 80 }, (_, i) => i),
      8,
      async (i) => {
        const r = await s.req('POST', `/zsets/${z}/incr`, { member: `m${i % 8}`, delta: 1 });
        if (r.status === 200) acked++;
      },
    );
    assert.equal(acked, 80);
    const before = await s.req('GET', `/zsets/${z}`);
    await s.restart('SIGKILL');
    const after = await s.req('GET', `/zsets/${z}`);
    assert.deepEqual(after.body.data, before.body.data);
    assert.equal(after.headers.etag, before.headers.etag);
    // The first reads after a restart build the rank order from a snapshot while increments land: none may be lost to it.
    const mixed = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 4 === 0 ? s.req('GET', `/zsets/${z}/members/m${i % 8}`) : s.req('POST', `/zsets/${z}/incr`, { member: `m${i % 8}`, delta: 0.25 }),
      ),
    );
    for (const r of mixed) assert.equal(r.status, 200, r.raw);
    const want = new Map(
      Array.from({ length: 8 }, (_, k) => [`m${k}`, 10 + 0.25 * Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 4 !== 0 && i % 8 === k).length]),
    );
    want.set('base', 0);
    const sortedWant = [...want].sort(zorder);
    expectSuccess(await s.req('GET', `/zsets/${z}`), 200, 'zset queried successfully', { items: items(sortedWant), count: 9 });
    for (let r = 0; r < sortedWant.length; r++) {
      expectSuccess(await s.req('GET', `/zsets/${z}/members/${sortedWant[r][0]}`), 200, 'zset member queried successfully', {
        score: sortedWant[r][1],
        rank: r,
        rev_rank: 8 - r,
      });
    }
    expectSuccess(await s.req('POST', `/zsets/${z}/incr`, { member: 'base', delta: 20 }), 200, 'zset member incremented successfully', { score: 20 });
    expectSuccess(await s.req('GET', `/zsets/${z}?rev=true&start=0&stop=0`), 200, 'zset queried successfully', {
      items: [{ member: 'base', score: 20 }],
      count: 9,
    });
  } finally {
    await s.close();
  }
});
