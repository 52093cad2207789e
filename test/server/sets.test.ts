/**
 * Sets (docs/api.md, "Sets"), black-box: both PUT shapes, members in byte
 * order and paged, add/remove with exact counts, contains, union/inter/diff
 * with `store`, bad input (400 naming the field, nothing changed), versions
 * and conditional writes, ttl and PATCH ttl, listing, health, the change
 * feed, the /set/<key> spelling, survival across SIGKILL, concurrent adds,
 * and random operation sequences against a plain in-memory model.
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

test('PUT takes an array or an object of member → true; GET lists every member in byte order', async () => {
  const s = uniq('s');
  // Byte order differs from UTF-16 order for U+FFxx against characters above U+FFFF.
  const members = ['b', 'a', '', 'é', '\uff01', '😀', 'a\u0000b', 'a\u0001', 'A', 'ab'];
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: members }), 201, 'set created successfully');
  const sorted = [...members].sort(byteOrder);
  expectSuccess(await srv.req('GET', `/sets/${s}`), 200, 'set queried successfully', { members: sorted, count: members.length, next: null });
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: { x: true, y: true } }), 200, 'set created successfully');
  expectSuccess(await srv.req('GET', `/sets/${s}`), 200, 'set queried successfully', { members: ['x', 'y'], count: 2, next: null });
  // Duplicates in the array are one member; an empty set is a set.
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: ['q', 'q'] }), 200, 'set created successfully');
  expectSuccess(await srv.req('GET', `/sets/${s}`), 200, 'set queried successfully', { members: ['q'], count: 1, next: null });
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: [] }), 200, 'set created successfully');
  expectSuccess(await srv.req('GET', `/sets/${s}`), 200, 'set queried successfully', { members: [], count: 0, next: null });
});

test('pages: limit and after walk every member once, in order; next is null on the last page', async () => {
  const s = uniq('s');
  const members = Array.from({ length: 257 }, (_, i) => `m${(i * 7919) % 1000}-${i % 3 === 0 ? 'é' : ''}`);
  await srv.req('PUT', `/sets/${s}`, { set: members });
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const q: string = cursor === null ? '?limit=50' : `?limit=50&after=${encodeURIComponent(cursor)}`;
    const r = await srv.req('GET', `/sets/${s}${q}`);
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.body.data.count, 257);
    assert.ok(r.body.data.members.length <= 50);
    seen.push(...r.body.data.members);
    cursor = r.body.data.next;
    if (cursor === null) break;
    assert.equal(cursor, r.body.data.members[r.body.data.members.length - 1]);
  }
  assert.deepEqual(seen, [...new Set(members)].sort(byteOrder));
  expectError(await srv.req('GET', `/sets/${s}?limit=0`), 400, `query parameter 'limit' must be an integer ≥ 1 and ≤ 1000`);
  expectError(await srv.req('GET', `/sets/${s}?limit=1001`), 400, `query parameter 'limit' must be an integer ≥ 1 and ≤ 1000`);
  expectError(await srv.req('GET', `/sets/${s}?lim=3`), 400, /unknown query parameter 'lim'/);
});

test('add and remove answer exact counts; contains answers in the order asked', async () => {
  const s = uniq('s');
  expectSuccess(await srv.req('POST', `/sets/${s}/add`, { members: ['a', 'b', 'a'] }), 200, 'set members added successfully', { added: 2, count: 2 });
  expectSuccess(await srv.req('POST', `/sets/${s}/add`, { members: ['b', 'c'] }), 200, 'set members added successfully', { added: 1, count: 3 });
  expectSuccess(await srv.req('POST', `/sets/${s}/contains`, { members: ['c', 'zz', 'a', 'c'] }), 200, 'set queried successfully', {
    contains: [true, false, true, true],
  });
  expectSuccess(await srv.req('POST', `/sets/${s}/remove`, { members: ['a', 'zz', 'a'] }), 200, 'set members removed successfully', { removed: 1, count: 2 });
  expectSuccess(await srv.req('POST', `/sets/${s}/remove`, { members: ['b', 'c'] }), 200, 'set members removed successfully', { removed: 2, count: 0 });
  // A set emptied by remove stays, empty.
  expectSuccess(await srv.req('GET', `/sets/${s}`), 200, 'set queried successfully', { members: [], count: 0, next: null });
  const m = uniq('missing');
  expectError(await srv.req('POST', `/sets/${m}/add`, { members: ['a'], create: false }), 404, `set '${m}' does not exist`);
  expectError(await srv.req('POST', `/sets/${m}/remove`, { members: ['a'] }), 404, `set '${m}' does not exist`);
  expectError(await srv.req('POST', `/sets/${m}/contains`, { members: ['a'] }), 404, `set '${m}' does not exist`);
  expectError(await srv.req('GET', `/sets/${m}`), 404, `set '${m}' does not exist`);
  expectError(await srv.req('DELETE', `/sets/${m}`), 404, `set '${m}' does not exist`);
  expectError(await srv.req('PATCH', `/sets/${m}`, { ttl: 5 }), 404, `set '${m}' does not exist`);
});

test('combine: union, inter, diff (a missing set is empty); store replaces its target in one step', async () => {
  const [a, b, c, none, out] = [uniq('a'), uniq('b'), uniq('c'), uniq('none'), uniq('out')];
  await srv.req('PUT', `/sets/${a}`, { set: ['1', '2', '3', 'é'] });
  await srv.req('PUT', `/sets/${b}`, { set: ['2', '3', '4'] });
  await srv.req('PUT', `/sets/${c}`, { set: ['3', '9'] });
  const comb = (body: unknown) => srv.req('POST', `/sets/${a}/combine`, body);
  expectSuccess(await comb({ op: 'union', with: [b, c, none] }), 200, 'set combined successfully', { members: ['1', '2', '3', '4', '9', 'é'], count: 6 });
  expectSuccess(await comb({ op: 'inter', with: [b, c] }), 200, 'set combined successfully', { members: ['3'], count: 1 });
  expectSuccess(await comb({ op: 'inter', with: [b, none] }), 200, 'set combined successfully', { members: [], count: 0 });
  expectSuccess(await comb({ op: 'diff', with: [b, none] }), 200, 'set combined successfully', { members: ['1', 'é'], count: 2 });
  expectSuccess(await srv.req('POST', `/sets/${none}/combine`, { op: 'union', with: [c] }), 200, 'set combined successfully', {
    members: ['3', '9'],
    count: 2,
  });
  await srv.req('PUT', `/sets/${out}`, { set: ['old'], ttl: 100 });
  expectSuccess(await comb({ op: 'diff', with: [c], store: out }), 200, 'set combined successfully', { count: 3 });
  expectSuccess(await srv.req('GET', `/sets/${out}`), 200, 'set queried successfully', { members: ['1', '2', 'é'], count: 3, next: null });
  // The stored result is a new set: no expiry.
  const l = await srv.req('GET', `/sets?prefix=${out}`);
  assert.deepEqual(l.body.data.items, [{ name: out, ttl_ms: null, count: 3 }]);
  // A store onto one of its own inputs reads the input first.
  expectSuccess(await comb({ op: 'union', with: [b], store: a }), 200, 'set combined successfully', { count: 5 });
  expectSuccess(await srv.req('GET', `/sets/${a}`), 200, 'set queried successfully', { members: ['1', '2', '3', '4', 'é'], count: 5, next: null });
  expectError(await comb({ op: 'xor', with: [b] }), 400, `field 'op' must be union, inter or diff, not "xor"`);
  expectError(await comb({ op: 'union', with: [] }), 400, `field 'with' must name 1 to 16 sets`);
  expectError(await comb({ op: 'union', with: Array.from({ length: 17 }, (_, i) => `s${i}`) }), 400, `field 'with' must name 1 to 16 sets`);
  expectError(await comb({ op: 'union', with: [3] }), 400, `field 'with' item 0 must be a set name (a string)`);
  expectError(await comb({ op: 'union', with: [''] }), 400, /field 'with' item 0: set name must not be empty/);
  expectError(await comb({ op: 'union' }), 400, /field 'with' is required/);
});

test('combine with store takes the condition of a PUT of its target: a stale version or if_absent over an existing set refuses with 412 and writes nothing', async () => {
  const [a, b, out, fresh] = [uniq('a'), uniq('b'), uniq('out'), uniq('fresh')];
  await srv.req('PUT', `/sets/${a}`, { set: ['1', '2'] });
  await srv.req('PUT', `/sets/${b}`, { set: ['2', '3'] });
  await srv.req('PUT', `/sets/${out}`, { set: ['old'] });
  const v = etag(await srv.req('GET', `/sets/${out}`));
  const comb = (body: unknown, headers?: Record<string, string>) => srv.req('POST', `/sets/${a}/combine`, body, headers);
  expectError(await comb({ op: 'union', with: [b], store: out, if_version: v + 1 }), 412, `set '${out}' changed (version ${v})`);
  expectError(await comb({ op: 'union', with: [b], store: out }, { 'If-Match': `"${v - 1}"` }), 412, `set '${out}' changed (version ${v})`);
  expectError(await comb({ op: 'union', with: [b], store: out, if_absent: true }), 412, `set '${out}' already exists (version ${v})`);
  expectSuccess(await srv.req('GET', `/sets/${out}`), 200, 'set queried successfully', { members: ['old'], count: 1, next: null });
  expectError(await comb({ op: 'union', with: [b], if_version: v }), 400, /applies to the set that 'store' replaces/);
  expectSuccess(await comb({ op: 'union', with: [b], store: out, if_version: v }), 200, 'set combined successfully', { count: 3 });
  expectSuccess(await srv.req('GET', `/sets/${out}`), 200, 'set queried successfully', { members: ['1', '2', '3'], count: 3, next: null });
  expectSuccess(await comb({ op: 'inter', with: [b], store: fresh }, { 'If-None-Match': '*' }), 200, 'set combined successfully', { count: 1 });
  expectSuccess(await srv.req('GET', `/sets/${fresh}`), 200, 'set queried successfully', { members: ['2'], count: 1, next: null });
});

test('bad input is 400 naming the field, and changes nothing', async () => {
  const s = uniq('s');
  await srv.req('PUT', `/sets/${s}`, { set: ['keep'] });
  const v = etag(await srv.req('GET', `/sets/${s}`));
  const long = 'x'.repeat(4097);
  const longUtf8 = 'é'.repeat(2049); // 4098 bytes in 2049 characters
  const cases: Array<[string, string, unknown, string | RegExp]> = [
    ['POST', 'add', { members: 'a' }, `field 'members' must be an array`],
    ['POST', 'add', { members: [] }, `field 'members' must not be empty`],
    ['POST', 'add', { members: ['a', 7] }, `field 'members' item 1 must be a string`],
    ['POST', 'add', { members: [long] }, `field 'members' item 0 must be at most 4096 bytes of UTF-8`],
    ['POST', 'add', { members: ['ok', longUtf8] }, `field 'members' item 1 must be at most 4096 bytes of UTF-8`],
    ['POST', 'add', { members: Array.from({ length: 1001 }, (_, i) => `m${i}`) }, `field 'members' holds 1001 elements; one request takes at most 1000`],
    ['POST', 'add', { members: ['a'], create: 'yes' }, `field 'create' must be true or false`],
    ['POST', 'add', { members: ['a'], extra: 1 }, /^unknown field 'extra' \(allowed: members, create, if_version\)$/],
    ['POST', 'remove', { members: [null] }, `field 'members' item 0 must be a string`],
    ['POST', 'remove', {}, /field 'members' is required/],
    ['PUT', '', { set: 'abc' }, `field 'set' must be an array of strings or an object whose keys are the members`],
    ['PUT', '', { set: { a: 1 } }, `field 'set' member "a" must map to true`],
    ['PUT', '', { set: [1] }, `field 'set' item 0 must be a string`],
    ['PUT', '', { set: [long] }, `field 'set' item 0 must be at most 4096 bytes of UTF-8`],
    ['PUT', '', { set: ['a'], ttl: -1 }, /field 'ttl' must be an integer/],
    ['PUT', '', { set: ['a'], ttl: 1.5 }, /field 'ttl' must be an integer/],
    ['PUT', '', { sets: ['a'] }, /field 'set' is required|unknown field 'sets'/],
    ['PATCH', '', { ttl: 'x' }, /field 'ttl' must be an integer/],
    ['PATCH', '', {}, /field 'ttl' is required/],
    ['PATCH', '', { ttl: 5, sets: {} }, /unknown field 'sets'/],
  ];
  for (const [method, sub, body, msg] of cases) {
    expectError(await srv.req(method, `/sets/${s}${sub === '' ? '' : '/' + sub}`, body), 400, msg);
  }
  // 4096 bytes exactly is a member.
  expectSuccess(
    await srv.req('POST', `/sets/${seg(uniq('s'))}/add`, { members: ['x'.repeat(4096), 'é'.repeat(2048)] }),
    200,
    'set members added successfully',
    { added: 2, count: 2 },
  );
  const g = await srv.req('GET', `/sets/${s}`);
  expectSuccess(g, 200, 'set queried successfully', { members: ['keep'], count: 1, next: null });
  assert.equal(etag(g), v, 'nothing was written');
  expectError(await srv.req('GET', `/sets/${'x'.repeat(256)}`), 400, /set name must be at most 255 bytes/);
});

test('versions: ETag moves on every write; if_version / If-Match / if_absent / If-None-Match refuse with 412 and write nothing', async () => {
  const s = uniq('s');
  expectError(await srv.req('PUT', `/sets/${s}`, { set: ['a'], if_version: 3 }), 412, `set '${s}' does not exist (expected version 3)`);
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: ['a'] }, { 'If-None-Match': '*' }), 201, 'set created successfully');
  const v1 = etag(await srv.req('GET', `/sets/${s}`));
  expectError(await srv.req('PUT', `/sets/${s}`, { set: ['b'], if_absent: true }), 412, `set '${s}' already exists (version ${v1})`);
  expectError(await srv.req('POST', `/sets/${s}/add`, { members: ['b'], if_version: v1 + 1 }), 412, `set '${s}' changed (version ${v1})`);
  expectError(await srv.req('POST', `/sets/${s}/remove`, { members: ['a'] }, { 'If-Match': `"${v1 - 1}"` }), 412, `set '${s}' changed (version ${v1})`);
  expectError(await srv.req('PATCH', `/sets/${s}`, { ttl: 9, if_version: 1 }), 412, `set '${s}' changed (version ${v1})`);
  expectError(await srv.req('DELETE', `/sets/${s}`, undefined, { 'If-Match': '"1"' }), 412, `set '${s}' changed (version ${v1})`);
  expectError(await srv.req('POST', `/sets/${s}/add`, { members: ['b'], if_version: v1 }, { 'If-Match': `"${v1}"` }), 400, /at most one condition/);
  const g = await srv.req('GET', `/sets/${s}`);
  expectSuccess(g, 200, 'set queried successfully', { members: ['a'], count: 1, next: null });
  assert.equal(etag(g), v1);
  expectSuccess(await srv.req('POST', `/sets/${s}/add`, { members: ['b'], if_version: v1 }), 200, 'set members added successfully', { added: 1, count: 2 });
  const v2 = etag(await srv.req('GET', `/sets/${s}`));
  assert.ok(v2 > v1);
  expectSuccess(await srv.req('POST', `/sets/${s}/remove`, { members: ['a'] }, { 'If-Match': `"${v2}"` }), 200, 'set members removed successfully', {
    removed: 1,
    count: 1,
  });
  const v3 = etag(await srv.req('GET', `/sets/${s}?limit=1`));
  assert.ok(v3 > v2);
  expectSuccess(await srv.req('DELETE', `/sets/${s}`, { if_version: v3 }), 200, 'set deleted successfully');
  expectError(await srv.req('GET', `/sets/${s}`), 404);
});

test('ttl on PUT and PATCH ttl: the set and its members expire together; add creates without expiry', async () => {
  const s = uniq('s');
  await srv.req('PUT', `/sets/${s}`, { set: ['a', 'b'], ttl: 10 });
  let l = await srv.req('GET', `/sets?prefix=${s}`);
  assert.equal(l.body.data.items[0].count, 2);
  assert.ok(l.body.data.items[0].ttl_ms > 9000 && l.body.data.items[0].ttl_ms <= 10000);
  expectSuccess(await srv.req('PATCH', `/sets/${s}`, { ttl: 100 }), 200, 'set patched successfully');
  await srv.advance(50_000);
  expectSuccess(await srv.req('POST', `/sets/${s}/contains`, { members: ['a', 'c'] }), 200, 'set queried successfully', { contains: [true, false] });
  // A member added later carries the set's lifetime too.
  await srv.req('POST', `/sets/${s}/add`, { members: ['c'] });
  await srv.advance(51_000);
  expectError(await srv.req('GET', `/sets/${s}`), 404, `set '${s}' does not exist`);
  l = await srv.req('GET', `/sets?prefix=${s}`);
  assert.deepEqual(l.body.data.items, []);
  // A set made again under the name starts empty, with no expiry.
  expectSuccess(await srv.req('POST', `/sets/${s}/add`, { members: ['z'] }), 200, 'set members added successfully', { added: 1, count: 1 });
  l = await srv.req('GET', `/sets?prefix=${s}`);
  assert.deepEqual(l.body.data.items, [{ name: s, ttl_ms: null, count: 1 }]);
  await srv.req('PATCH', `/sets/${s}`, { ttl: 1 });
  await srv.advance(1_001);
  expectError(await srv.req('POST', `/sets/${s}/contains`, { members: ['z'] }), 404);
  await srv.req('PUT', `/sets/${s}`, { set: ['p'], ttl: 5 });
  await srv.req('PATCH', `/sets/${s}`, { ttl: 0 });
  await srv.advance(10_000);
  expectSuccess(await srv.req('GET', `/sets/${s}`), 200, 'set queried successfully', { members: ['p'], count: 1, next: null });
});

test('listing GET /sets: byte order, prefix, limit, after; each kind is its own namespace; health counts sets', async () => {
  const p = uniq('L');
  const h0 = (await srv.req('GET', '/health')).body.data.key_count as number;
  for (const n of ['b', 'a', 'c']) await srv.req('PUT', `/sets/${p}${n}`, { set: Array.from({ length: n.charCodeAt(0) - 96 }, (_, i) => `${i}`) });
  // Same name in other namespaces.
  await srv.req('PUT', `/records/${p}a`, { record: {} });
  await srv.req('PUT', `/zsets/${p}a`, { zset: { q: 1 } });
  const h1 = (await srv.req('GET', '/health')).body.data.key_count as number;
  assert.equal(h1 - h0, 5);
  expectSuccess(await srv.req('GET', `/sets?prefix=${p}&limit=2`), 200, 'sets listed successfully', {
    items: [
      { name: `${p}a`, ttl_ms: null, count: 1 },
      { name: `${p}b`, ttl_ms: null, count: 2 },
    ],
    next: `${p}b`,
  });
  expectSuccess(await srv.req('GET', `/sets?prefix=${p}&limit=2&after=${p}b`), 200, 'sets listed successfully', {
    items: [{ name: `${p}c`, ttl_ms: null, count: 3 }],
    next: null,
  });
  expectSuccess(await srv.req('GET', `/sets/${p}a`), 200, 'set queried successfully', { members: ['0'], count: 1, next: null });
  await srv.req('DELETE', `/sets/${p}a`);
  expectSuccess(await srv.req('GET', `/records/${p}a`), 200, 'record queried successfully', {});
  assert.equal((await srv.req('GET', `/zsets/${p}a`)).status, 200);
  expectError(await srv.req('GET', `/sets?bogus=1`), 400, /unknown query parameter 'bogus'/);
});

test('the /set/<key> spelling: PUT either shape, GET {"set": [...]}, DELETE', async () => {
  const s = uniq('s');
  expectSuccess(await srv.req('PUT', `/set/${s}`, { set: { b: true, a: true }, ttl: 0 }), 201, 'set created successfully');
  const g = await srv.req('GET', `/set/${s}`);
  expectSuccess(g, 200, 'set queried successfully', { set: ['a', 'b'] });
  assert.equal(etag(g), etag(await srv.req('GET', `/sets/${s}`)));
  expectSuccess(await srv.req('PUT', `/set/${s}`, { set: ['"quoted"', ']', ''] }), 200, 'set created successfully');
  expectSuccess(await srv.req('GET', `/set/${s}`), 200, 'set queried successfully', { set: ['', '"quoted"', ']'] });
  expectError(await srv.req('PUT', `/set/${s}`, { set: ['a'], list: [] }), 400, /unknown field 'list'/);
  expectSuccess(await srv.req('DELETE', `/set/${s}`), 200, 'set deleted successfully');
  expectError(await srv.req('GET', `/set/${s}`), 404, `set '${s}' does not exist`);
});

test('change feed: kind set; a whole write is put, an element operation is put with op, never the whole set', async () => {
  const s = uniq('feed');
  const w = watch({ port: srv.port, token: srv.token, query: `kind=set&prefix=${s}&values=true` });
  await w.opened;
  await srv.req('PUT', `/sets/${s}`, { set: ['a', 'b', 'c'] });
  await srv.req('POST', `/sets/${s}/add`, { members: ['d', 'a'] });
  await srv.req('POST', `/sets/${s}/remove`, { members: ['b'] });
  await srv.req('DELETE', `/sets/${s}`);
  await w.until(() => w.events.length >= 4, 10_000, 'four events');
  w.close();
  const ev = w.events.map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> }));
  assert.deepEqual(
    ev.map((e) => e.event),
    ['put', 'put', 'put', 'delete'],
  );
  assert.deepEqual(
    ev.map((e) => [e.data.kind, e.data.name, e.data.op]),
    [
      ['set', s, undefined],
      ['set', s, 'add'],
      ['set', s, 'remove'],
      ['set', s, undefined],
    ],
  );
  assert.equal(ev[0].data.value, undefined, 'a whole-object write does not carry the whole set');
  assert.deepEqual(ev[1].data.value, { members: ['d', 'a'], added: 1, count: 4 });
  assert.deepEqual(ev[2].data.value, { members: ['b'], removed: 1, count: 3 });
  const versions = ev.map((e) => e.data.version as number);
  assert.deepEqual(
    [...versions].sort((a, b) => a - b),
    versions,
  );
  // Watching only variants hears nothing of sets.
  const w2 = watch({ port: srv.port, token: srv.token, query: `kind=variant&prefix=${s}` });
  await w2.opened;
  await srv.req('POST', `/sets/${s}/add`, { members: ['x'] });
  await srv.req('PUT', `/variants/${s}`, { variant: 1 });
  await w2.until(() => w2.events.length >= 1, 10_000, 'the variant event');
  w2.close();
  assert.deepEqual(
    w2.events.map((e) => JSON.parse(e.data).kind),
    ['variant'],
  );
});

test('an add of members a set or sorted set holds, and a remove of members it lacks, write nothing: same version, no event', async () => {
  const s = uniq('noop');
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: ['a', 'b'] }), 201, 'set created successfully');
  expectSuccess(await srv.req('PUT', `/zsets/${s}`, { zset: { a: 1 } }), 201, 'zset created successfully');
  const setTag = etag(await srv.req('GET', `/sets/${s}`));
  const zsetTag = etag(await srv.req('GET', `/zsets/${s}`));
  const w = watch({ port: srv.port, token: srv.token, query: `prefix=${s}&values=true` });
  await w.opened;
  expectSuccess(await srv.req('POST', `/sets/${s}/add`, { members: ['a', 'b', 'a'] }), 200, 'set members added successfully', { added: 0, count: 2 });
  expectSuccess(await srv.req('POST', `/sets/${s}/remove`, { members: ['x'] }), 200, 'set members removed successfully', { removed: 0, count: 2 });
  expectSuccess(await srv.req('POST', `/zsets/${s}/remove`, { members: ['x', 'y'] }), 200, 'zset members removed successfully', { removed: 0, count: 1 });
  // The same answers inside a transaction, which writes nothing either.
  const t = await srv.req('POST', '/txns', {
    mutations: [
      { kind: 'set', name: s, operation: 'ADD', members: ['b'] },
      { kind: 'zset', name: s, operation: 'REMOVE', members: ['q'] },
    ],
  });
  assert.equal(t.status, 200, t.raw);
  assert.equal(etag(await srv.req('GET', `/sets/${s}`)), setTag, 'the set keeps its version');
  assert.equal(etag(await srv.req('GET', `/zsets/${s}`)), zsetTag, 'the sorted set keeps its version');
  // A real change after them is the first event the feed sends.
  await srv.req('POST', `/sets/${s}/add`, { members: ['c'] });
  await w.until(() => w.events.length >= 1, 10_000, 'the event of the add that changed the set');
  await new Promise((r) => setTimeout(r, 200));
  w.close();
  // Element operations only: on the shared store a watch opened just after the PUTs may still get
  // them (its start is the node's published position, 50-100 ms behind; docs/scaling.md).
  const ops = w.events.map((e) => JSON.parse(e.data) as { op?: string; value?: unknown }).filter((d) => d.op !== undefined);
  assert.deepEqual(
    ops.map((d) => [d.op, d.value]),
    [['add', { members: ['c'], added: 1, count: 3 }]],
  );
  assert.notEqual(etag(await srv.req('GET', `/sets/${s}`)), setTag);
});

test('concurrent adds of overlapping members: the added counts sum to the final count', async () => {
  const s = uniq('conc');
  const batches = Array.from({ length: 40 }, (_, i) => Array.from({ length: 20 }, (_, j) => `m${(i * 7 + j * 3) % 200}`));
  const results = await pool(batches, 16, (members) => srv.req('POST', `/sets/${s}/add`, { members }));
  let sum = 0;
  for (const r of results) {
    assert.equal(r.status, 200, r.raw);
    sum += r.body.data.added as number;
  }
  const all = new Set(batches.flat());
  const g = await srv.req('GET', `/sets/${s}`);
  assert.equal(g.body.data.count, all.size);
  assert.equal(sum, all.size, 'each member was added exactly once');
  assert.deepEqual(g.body.data.members, [...all].sort(byteOrder));
});

test('random sequences of set operations answer as a plain in-memory model does', async () => {
  const member = fc.constantFrom('a', 'b', 'c', 'é', '', 'a\u0000', '😀', '\uff01', 'long'.repeat(20));
  const members = fc.array(member, { minLength: 1, maxLength: 5 });
  const op = fc.oneof(
    fc.record({ t: fc.constant('put' as const), ms: fc.array(member, { maxLength: 5 }) }),
    fc.record({ t: fc.constant('add' as const), ms: members }),
    fc.record({ t: fc.constant('remove' as const), ms: members }),
    fc.record({ t: fc.constant('contains' as const), ms: members }),
    fc.record({ t: fc.constant('get' as const), limit: fc.integer({ min: 1, max: 4 }) }),
    fc.record({ t: fc.constant('delete' as const) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const s = uniq('prop');
      let model: Set<string> | undefined;
      for (const o of ops) {
        const path = `/sets/${s}`;
        if (o.t === 'put') {
          const r = await srv.req('PUT', path, { set: o.ms });
          assert.equal(r.status, model === undefined ? 201 : 200);
          model = new Set(o.ms);
        } else if (o.t === 'add') {
          const r = await srv.req('POST', `${path}/add`, { members: o.ms });
          model ??= new Set();
          const before = model.size;
          for (const m of o.ms) model.add(m);
          assert.deepEqual(r.body.data, { added: model.size - before, count: model.size });
        } else if (o.t === 'remove' || o.t === 'contains' || o.t === 'delete') {
          const r = o.t === 'delete' ? await srv.req('DELETE', path) : await srv.req('POST', `${path}/${o.t}`, { members: o.ms });
          if (model === undefined) {
            assert.equal(r.status, 404);
            continue;
          }
          assert.equal(r.status, 200, r.raw);
          if (o.t === 'remove') {
            const before = model.size;
            for (const m of o.ms) model.delete(m);
            assert.deepEqual(r.body.data, { removed: before - model.size, count: model.size });
          } else if (o.t === 'contains') {
            assert.deepEqual(r.body.data, { contains: o.ms.map((m) => model!.has(m)) });
          } else {
            model = undefined;
          }
        } else {
          const r = await srv.req('GET', `${path}?limit=${o.limit}`);
          if (model === undefined) {
            assert.equal(r.status, 404);
            continue;
          }
          const all = [...model].sort(byteOrder);
          assert.deepEqual(r.body.data, { members: all.slice(0, o.limit), count: all.length, next: all.length > o.limit ? all[o.limit - 1] : null });
        }
      }
    }),
    { numRuns: 40 },
  );
});

test('sets survive SIGKILL: every acknowledged add and remove is there after a restart', async () => {
  const s = await PithosServer.start({ fsync: 'always' });
  try {
    const name = uniq('crash');
    await s.req('PUT', `/sets/${name}`, { set: ['keep', 'drop'], ttl: 1000 });
    const acked: string[] = [];
    await pool(
      Array.from({ length: 60 }, (_, i) => `m${i}`),
      8,
      async (m) => {
        const r = await s.req('POST', `/sets/${name}/add`, { members: [m] });
        if (r.status === 200) acked.push(m);
      },
    );
    await s.req('POST', `/sets/${name}/remove`, { members: ['drop'] });
    const before = await s.req('GET', `/sets/${name}`);
    await s.restart('SIGKILL');
    const after = await s.req('GET', `/sets/${name}`);
    assert.deepEqual(after.body.data, before.body.data);
    assert.equal(after.headers.etag, before.headers.etag);
    assert.equal(after.body.data.count, acked.length + 1);
    const l = await s.req('GET', `/sets?prefix=${name}`);
    assert.ok(l.body.data.items[0].ttl_ms > 0, 'the lifetime survives');
    expectSuccess(await s.req('POST', `/sets/${name}/contains`, { members: ['keep', 'drop', 'm59'] }), 200, 'set queried successfully', {
      contains: [true, false, true],
    });
  } finally {
    await s.close();
  }
});
