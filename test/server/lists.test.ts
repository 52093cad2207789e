/**
 * Lists (docs/api.md, "Lists"), black-box: every route and message, Redis
 * index and push order, pop with count and `to`, PATCH set/trim/remove/ttl,
 * versions and conditions, listing, health, the change feed, the `/list/<k>`
 * spelling, bad input that changes nothing, blocking pops (timeout, order,
 * a departed client, ten waiters), concurrency, and a random-operation
 * property test against a plain array.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { tcpQueues } from '../helpers/proc.js';
import { PithosServer, etag, expectError, expectSuccess, pool, sleep, uniq, untilTrue, type Res } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

const get = (n: string, q = ''): Promise<Res> => srv.req('GET', `/lists/${n}${q}`);
const items = async (n: string): Promise<unknown[]> => {
  const r = await get(n);
  assert.equal(r.status, 200, r.raw);
  return r.body.data.items;
};
const push = (n: string, body: Record<string, unknown>): Promise<Res> => srv.req('POST', `/lists/${n}/push`, body);
const pop = (n: string, body: Record<string, unknown> = {}): Promise<Res> => srv.req('POST', `/lists/${n}/pop`, body);

/** Whether the server has read all that was sent on the connection from `port` (nothing waits in the kernel on either end). */
const readByServer = (port: number): boolean => {
  const [client, server] = [tcpQueues(port, srv.port), tcpQueues(srv.port, port)];
  return client !== undefined && server !== undefined && client.tx === 0 && server.rx === 0;
};

/**
 * A pop on a connection of its own. `read` resolves once the server has read the whole
 * request, so what is sent after that arrives after it, however busy the machine (a fixed
 * pause between two requests does not order them on a loaded one). `port` is the client
 * end's port, for `gone()` after `destroy()`.
 */
function ownPop(n: string, body: Record<string, unknown>): { answer: Promise<Res>; read: Promise<void>; port: Promise<number>; destroy(): void } {
  const payload = Buffer.from(JSON.stringify(body));
  const req = http.request({
    host: '127.0.0.1',
    port: srv.port,
    method: 'POST',
    path: `/lists/${n}/pop`,
    agent: false,
    headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Content-Length': payload.length },
  });
  let answered = false;
  const answer = new Promise<Res>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(raw);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, raw });
      });
    });
  });
  const port = new Promise<number>((resolve) => req.once('socket', (sock) => sock.once('connect', () => resolve(sock.localPort as number))));
  // Once written to the kernel (the end callback), empty queues mean the server has read it.
  const sent = new Promise<void>((resolve) => req.end(payload, () => resolve()));
  const read = Promise.all([port, sent]).then(([p]) => untilTrue(`the server reading a pop of ${n}`, () => answered || readByServer(p), { timeoutMs: 30_000 }));
  return { answer, read, port, destroy: () => req.destroy() };
}

/**
 * Resolves once the server has closed its end of the connection from `port` (it has seen the
 * client go); fails after 20 s, before a waiter on it lapses (30 s, the longest wait_ms), so
 * a server that kept the departed waiter until its time was up cannot pass.
 */
const gone = async (port: number): Promise<void> =>
  untilTrue('the server closing a connection its client left', () => tcpQueues(srv.port, port) === undefined, { timeoutMs: 20_000 });

test('PUT creates (201) and replaces (200); GET answers items and length with an ETag', async () => {
  const n = uniq('l');
  expectSuccess(await srv.req('PUT', `/lists/${n}`, { list: [1, 'two', { three: 3 }, [4], null, true] }), 201, 'list created successfully');
  const r = await get(n);
  expectSuccess(r, 200, 'list queried successfully', { items: [1, 'two', { three: 3 }, [4], null, true], length: 6 });
  assert.match(String(r.headers.etag), /^"\d+"$/);
  expectSuccess(await srv.req('PUT', `/lists/${n}`, { list: [] }), 200, 'list created successfully');
  expectSuccess(await get(n), 200, 'list queried successfully', { items: [], length: 0 });
  assert.ok(etag(await get(n)) > etag(r), 'a replace is a new version');
});

test('GET ranges: inclusive, negative indexes from the end, out-of-range bounds clamp as LRANGE', async () => {
  const n = uniq('l');
  await srv.req('PUT', `/lists/${n}`, { list: ['a', 'b', 'c', 'd', 'e'] });
  const cases: Array<[string, unknown[]]> = [
    ['?start=0&stop=-1', ['a', 'b', 'c', 'd', 'e']],
    ['?start=1&stop=2', ['b', 'c']],
    ['?start=-2', ['d', 'e']],
    ['?stop=0', ['a']],
    ['?start=-100&stop=1', ['a', 'b']],
    ['?start=3&stop=100', ['d', 'e']],
    ['?start=4&stop=2', []],
    ['?start=5', []],
    ['?start=-3&stop=-2', ['c', 'd']],
    ['?stop=-6', []],
  ];
  for (const [q, want] of cases) expectSuccess(await get(n, q), 200, 'list queried successfully', { items: want, length: 5 });
  expectError(await get(n, '?start=x'), 400, `query parameter 'start' must be an integer (negative counts from the end)`);
  expectError(await get(n, '?stop=1.5'), 400, `query parameter 'stop' must be an integer (negative counts from the end)`);
  expectError(await get(n, '?from=1'), 400, `unknown query parameter 'from' (allowed: start, stop)`);
});

test('push: right by default, left pushes one at a time (LPUSH order); a missing list is created, or 404 with create:false', async () => {
  const n = uniq('l');
  expectError(await push(n, { values: [1], create: false }), 404, `list '${n}' does not exist`);
  expectError(await get(n), 404, `list '${n}' does not exist`);
  expectSuccess(await push(n, { values: [1, 2] }), 200, 'list pushed successfully', { length: 2 });
  expectSuccess(await push(n, { values: ['a', 'b'], side: 'left' }), 200, 'list pushed successfully', { length: 4 });
  expectSuccess(await push(n, { values: [3], side: 'right', create: false }), 200, 'list pushed successfully', { length: 5 });
  assert.deepEqual(await items(n), ['b', 'a', 1, 2, 3]);
  // A list created by a push has no expiry.
  const l = await srv.req('GET', `/lists?prefix=${n}`);
  assert.deepEqual(l.body.data.items, [{ name: n, ttl_ms: null, length: 5 }]);
});

test('pop: left by default, right, count; an empty list answers no items and stays; a missing one is 404', async () => {
  const n = uniq('l');
  expectError(await pop(n), 404, `list '${n}' does not exist`);
  await srv.req('PUT', `/lists/${n}`, { list: [1, 2, 3, 4, 5] });
  expectSuccess(await pop(n), 200, 'list popped successfully', { items: [1] });
  expectSuccess(await pop(n, { side: 'right' }), 200, 'list popped successfully', { items: [5] });
  expectSuccess(await pop(n, { side: 'right', count: 2 }), 200, 'list popped successfully', { items: [4, 3] });
  expectSuccess(await pop(n, { count: 1000 }), 200, 'list popped successfully', { items: [2] });
  expectSuccess(await pop(n), 200, 'list popped successfully', { items: [] });
  expectSuccess(await get(n), 200, 'list queried successfully', { items: [], length: 0 });
  // Pushes after pops reuse neither position nor order.
  await push(n, { values: ['x'] });
  await push(n, { values: ['w'], side: 'left' });
  assert.deepEqual(await items(n), ['w', 'x']);
});

test('pop with to moves items atomically (LMOVE): to_side, a created target, rotation onto the same list', async () => {
  const src = uniq('src');
  const dst = uniq('dst');
  await srv.req('PUT', `/lists/${src}`, { list: ['a', 'b', 'c', 'd'] });
  expectSuccess(await pop(src, { to: dst }), 200, 'list popped successfully', { items: ['a'] });
  expectSuccess(await pop(src, { count: 2, to: dst, to_side: 'right' }), 200, 'list popped successfully', { items: ['b', 'c'] });
  assert.deepEqual(await items(src), ['d']);
  assert.deepEqual(await items(dst), ['a', 'b', 'c']);
  expectSuccess(await pop(dst, { side: 'right', to: dst, to_side: 'left' }), 200, 'list popped successfully', { items: ['c'] });
  assert.deepEqual(await items(dst), ['c', 'a', 'b']);
  expectSuccess(await pop(dst, { count: 3, to: dst, to_side: 'right' }), 200, 'list popped successfully', { items: ['c', 'a', 'b'] });
  assert.deepEqual(await items(dst), ['c', 'a', 'b']);
  // Nothing to pop: nothing moves and no target is created.
  const none = uniq('none');
  await srv.req('PUT', `/lists/${none}`, { list: [] });
  expectSuccess(await pop(none, { to: uniq('never') }), 200, 'list popped successfully', { items: [] });
});

test('PATCH set (negative index), trim, remove (count > 0, < 0, 0), ttl; answers the length', async () => {
  const n = uniq('l');
  await srv.req('PUT', `/lists/${n}`, { list: ['a', 'x', 'b', 'x', 'c', 'x', { k: [1, 2] }] });
  const patch = (body: unknown) => srv.req('PATCH', `/lists/${n}`, body);
  expectSuccess(await patch({ set: { index: 0, value: 'A' } }), 200, 'list patched successfully', { length: 7 });
  expectSuccess(await patch({ set: { index: -2, value: 'X' } }), 200, 'list patched successfully', { length: 7 });
  assert.deepEqual(await items(n), ['A', 'x', 'b', 'x', 'c', 'X', { k: [1, 2] }]);
  expectSuccess(await patch({ remove: { value: 'x', count: 1 } }), 200, 'list patched successfully', { length: 6 });
  assert.deepEqual(await items(n), ['A', 'b', 'x', 'c', 'X', { k: [1, 2] }]);
  // Objects compare by content, whatever their key order.
  expectSuccess(await patch({ remove: { value: { k: [1, 2] }, count: -1 } }), 200, 'list patched successfully', { length: 5 });
  await push(n, { values: ['x', 'x'], side: 'left' });
  expectSuccess(await patch({ remove: { value: 'x', count: -2 } }), 200, 'list patched successfully', { length: 5 });
  assert.deepEqual(await items(n), ['x', 'A', 'b', 'c', 'X']);
  await push(n, { values: ['x'] });
  expectSuccess(await patch({ remove: { value: 'x', count: 0 } }), 200, 'list patched successfully', { length: 4 });
  assert.deepEqual(await items(n), ['A', 'b', 'c', 'X']);
  expectSuccess(await patch({ remove: { value: 'nope', count: 0 } }), 200, 'list patched successfully', { length: 4 });
  expectSuccess(await patch({ trim: { start: 1, stop: -2 } }), 200, 'list patched successfully', { length: 2 });
  assert.deepEqual(await items(n), ['b', 'c']);
  // Pushes still work at both ends after removes and trims.
  await push(n, { values: [0], side: 'left' });
  await push(n, { values: [9] });
  assert.deepEqual(await items(n), [0, 'b', 'c', 9]);
  expectSuccess(await patch({ trim: { start: 5, stop: 10 } }), 200, 'list patched successfully', { length: 0 });
  expectSuccess(await get(n), 200, 'list queried successfully', { items: [], length: 0 });
  await push(n, { values: [1, 2, 3] });
  expectSuccess(await patch({ ttl: 100 }), 200, 'list patched successfully', { length: 3 });
  const l = await srv.req('GET', `/lists?prefix=${n}`);
  assert.equal(l.body.data.items[0].length, 3);
  assert.ok(l.body.data.items[0].ttl_ms > 90_000 && l.body.data.items[0].ttl_ms <= 100_000, l.raw);
  expectSuccess(await patch({ set: { index: 1, value: 'two' }, ttl: 0 }), 200, 'list patched successfully', { length: 3 });
  assert.equal((await srv.req('GET', `/lists?prefix=${n}`)).body.data.items[0].ttl_ms, null);
  assert.deepEqual(await items(n), [1, 'two', 3]);
});

test('remove in the middle keeps index access exact from both sides, across many holes', async () => {
  const n = uniq('l');
  const model = Array.from({ length: 40 }, (_, i) => i % 5);
  await srv.req('PUT', `/lists/${n}`, { list: model });
  expectSuccess(await srv.req('PATCH', `/lists/${n}`, { remove: { value: 0, count: 0 } }), 200, 'list patched successfully', { length: 32 });
  const want = model.filter((v) => v !== 0);
  assert.deepEqual(await items(n), want);
  for (const [s, e] of [
    [0, 0],
    [5, 9],
    [-3, -1],
    [31, 31],
  ]) {
    const r = await get(n, `?start=${s}&stop=${e}`);
    assert.deepEqual(r.body.data.items, want.slice(s < 0 ? want.length + s : s, (e < 0 ? want.length + e : e) + 1));
  }
  expectSuccess(await srv.req('PATCH', `/lists/${n}`, { remove: { value: 4, count: 2 } }), 200, 'list patched successfully', { length: 30 });
  expectSuccess(await srv.req('PATCH', `/lists/${n}`, { remove: { value: 1, count: -3 } }), 200, 'list patched successfully', { length: 27 });
  let w = want.slice();
  for (let c = 0, i = 0; i < w.length && c < 2; i++)
    if (w[i] === 4) {
      w.splice(i--, 1);
      c++;
    }
  for (let c = 0, i = w.length - 1; i >= 0 && c < 3; i--)
    if (w[i] === 1) {
      w.splice(i, 1);
      c++;
    }
  assert.deepEqual(await items(n), w);
  expectSuccess(await pop(n, { side: 'right' }), 200, 'list popped successfully', { items: [w[w.length - 1]] });
  w = w.slice(0, -1);
  expectSuccess(await pop(n), 200, 'list popped successfully', { items: [w[0]] });
});

test('DELETE removes the list and its items; a new list of that name starts empty', async () => {
  const n = uniq('l');
  expectError(await srv.req('DELETE', `/lists/${n}`), 404, `list '${n}' does not exist`);
  await srv.req('PUT', `/lists/${n}`, { list: [1, 2, 3] });
  expectSuccess(await srv.req('DELETE', `/lists/${n}`), 200, 'list deleted successfully');
  expectError(await get(n), 404, `list '${n}' does not exist`);
  expectError(await srv.req('PATCH', `/lists/${n}`, { ttl: 5 }), 404, `list '${n}' does not exist`);
  expectSuccess(await push(n, { values: ['new'] }), 200, 'list pushed successfully', { length: 1 });
  assert.deepEqual(await items(n), ['new']);
});

test('versions: every write takes if_version / If-Match; PUT takes if_absent / If-None-Match; a failed condition changes nothing', async () => {
  const n = uniq('l');
  expectError(await srv.req('PUT', `/lists/${n}`, { list: [1], if_version: 3 }), 412, `list '${n}' does not exist (expected version 3)`);
  expectError(await push(n, { values: [1], if_version: 3 }), 412, `list '${n}' does not exist (expected version 3)`);
  expectError(await get(n), 404, `list '${n}' does not exist`);
  expectSuccess(await srv.req('PUT', `/lists/${n}`, { list: [1], if_absent: true }), 201, 'list created successfully');
  const v = etag(await get(n));
  expectError(await srv.req('PUT', `/lists/${n}`, { list: [2] }, { 'If-None-Match': '*' }), 412, `list '${n}' already exists (version ${v})`);
  const stale = { if_version: v - 1 };
  expectError(await push(n, { values: [9], ...stale }), 412, `list '${n}' changed (version ${v})`);
  expectError(await pop(n, stale), 412, `list '${n}' changed (version ${v})`);
  expectError(await srv.req('PATCH', `/lists/${n}`, { ttl: 9, ...stale }), 412, `list '${n}' changed (version ${v})`);
  expectError(await srv.req('DELETE', `/lists/${n}`, stale), 412, `list '${n}' changed (version ${v})`);
  expectError(await srv.req('DELETE', `/lists/${n}`, undefined, { 'If-Match': `"${v - 1}"` }), 412, `list '${n}' changed (version ${v})`);
  assert.deepEqual(await items(n), [1]);
  assert.equal(etag(await get(n)), v);
  expectSuccess(await push(n, { values: [2] }), 200, 'list pushed successfully', { length: 2 });
  const v2 = etag(await get(n));
  assert.ok(v2 > v);
  expectSuccess(await srv.req('POST', `/lists/${n}/push`, { values: [3] }, { 'If-Match': `"${v2}"` }), 200, 'list pushed successfully', { length: 3 });
  const v3 = etag(await get(n));
  expectSuccess(await pop(n, { if_version: v3 }), 200, 'list popped successfully', { items: [1] });
  const v4 = etag(await get(n));
  expectSuccess(await srv.req('PATCH', `/lists/${n}`, { set: { index: 0, value: 'z' }, if_version: v4 }), 200, 'list patched successfully', { length: 2 });
  expectSuccess(await srv.req('DELETE', `/lists/${n}`, undefined, { 'If-Match': `"${etag(await get(n))}"` }), 200, 'list deleted successfully');
});

test('listing: GET /lists pages names in byte order with ttl_ms and length; health counts lists, not items', async () => {
  const p = uniq('ls');
  const h0 = (await srv.req('GET', '/health')).body.data.key_count;
  await srv.req('PUT', `/lists/${p}b`, { list: [1, 2, 3], ttl: 50 });
  await srv.req('PUT', `/lists/${p}a`, { list: [] });
  await push(`${p}c`, { values: Array.from({ length: 20 }, (_, i) => i) });
  const h1 = (await srv.req('GET', '/health')).body.data.key_count;
  assert.equal(h1 - h0, 3, 'three lists, however many items');
  const r = await srv.req('GET', `/lists?prefix=${p}&limit=2`);
  expectSuccess(r, 200, 'lists listed successfully', r.body.data);
  assert.equal(r.body.data.next, `${p}b`);
  assert.deepEqual(
    r.body.data.items.map((i: { name: string }) => i.name),
    [`${p}a`, `${p}b`],
  );
  assert.deepEqual(r.body.data.items[0], { name: `${p}a`, ttl_ms: null, length: 0 });
  assert.equal(r.body.data.items[1].length, 3);
  assert.ok(r.body.data.items[1].ttl_ms > 40_000 && r.body.data.items[1].ttl_ms <= 50_000);
  const r2 = await srv.req('GET', `/lists?prefix=${p}&after=${p}b`);
  assert.deepEqual(r2.body.data, { items: [{ name: `${p}c`, ttl_ms: null, length: 20 }], next: null });
  expectError(await srv.req('GET', `/lists?limit=0`), 400);
});

test('a list shares its name with a table, record, variant and lock without touching them', async () => {
  const n = uniq('shared');
  await srv.req('PUT', `/records/${n}`, { record: { a: 1 } });
  await srv.req('PUT', `/variants/${n}`, { variant: 5 });
  await srv.req('PUT', `/tables/${n}`);
  expectSuccess(await srv.req('PUT', `/lists/${n}`, { list: ['q'] }), 201, 'list created successfully');
  expectSuccess(await srv.req('DELETE', `/lists/${n}`), 200, 'list deleted successfully');
  assert.deepEqual((await srv.req('GET', `/records/${n}`)).body.data, { a: 1 });
  assert.deepEqual((await srv.req('GET', `/variants/${n}`)).body.data, { variant: 5 });
  assert.equal((await srv.req('GET', `/tables/${n}`)).status, 200);
});

test('ttl: a list expires with its items; PATCH ttl alone sets the remaining lifetime', async () => {
  const n = uniq('l');
  await srv.req('PUT', `/lists/${n}`, { list: [1, 2], ttl: 10 });
  await srv.advance(5_000);
  expectSuccess(await srv.req('PATCH', `/lists/${n}`, { ttl: 20 }), 200, 'list patched successfully', { length: 2 });
  await srv.advance(10_000);
  assert.deepEqual(await items(n), [1, 2]);
  await srv.advance(11_000);
  expectError(await get(n), 404, `list '${n}' does not exist`);
  expectError(await pop(n), 404, `list '${n}' does not exist`);
  // A push after expiry starts a new list with no expiry and none of the old items.
  expectSuccess(await push(n, { values: ['fresh'] }), 200, 'list pushed successfully', { length: 1 });
  assert.deepEqual(await items(n), ['fresh']);
  // A PUT over a list that has expired creates one (201), whether or not the expired one was swept yet.
  const m = uniq('l');
  await srv.req('PUT', `/lists/${m}`, { list: [1], ttl: 1 });
  await srv.advance(1_500);
  expectSuccess(await srv.req('PUT', `/lists/${m}`, { list: [2] }), 201, 'list created successfully');
  assert.deepEqual(await items(m), [2]);
});

test('the quick-start spelling /list/<key>: PUT list (+ttl), GET {"list": [...]}, DELETE', async () => {
  const n = uniq('q');
  expectSuccess(await srv.req('PUT', `/list/${n}`, { list: [1, { a: 'b' }], ttl: 60 }), 201, 'list created successfully');
  const r = await srv.req('GET', `/list/${n}`);
  expectSuccess(r, 200, 'list queried successfully', { list: [1, { a: 'b' }] });
  assert.equal(r.headers.etag, (await get(n)).headers.etag);
  expectSuccess(await srv.req('PUT', `/list/${n}`, { list: [] }), 200, 'list created successfully');
  expectSuccess(await srv.req('GET', `/list/${n}`), 200, 'list queried successfully', { list: [] });
  await push(n, { values: ['x', 'y'] });
  expectSuccess(await srv.req('GET', `/list/${n}`), 200, 'list queried successfully', { list: ['x', 'y'] });
  expectSuccess(await srv.req('DELETE', `/list/${n}`), 200, 'list deleted successfully');
  expectError(await srv.req('GET', `/list/${n}`), 404, `list '${n}' does not exist`);
  // A misspelt field is named as unknown, not as the required one it stood for.
  expectError(await srv.req('PUT', `/list/${n}`, { items: [] }), 400, `unknown field 'items' (allowed: list, ttl, if_version, if_absent)`);
  expectError(await srv.req('PUT', `/list/${n}`, { ttl: 1000 }), 400, `field 'list' is required (an array)`);
});

test('bad input: 400 naming the field, and nothing changes', async () => {
  const n = uniq('bad');
  await srv.req('PUT', `/lists/${n}`, { list: ['a', 'b', 'c'] });
  const v = etag(await get(n));
  const cases: Array<[string, string, unknown, string | RegExp]> = [
    ['PUT', '', { list: 'abc' }, `field 'list' must be an array`],
    ['PUT', '', {}, `field 'list' is required (an array)`],
    ['PUT', '', { list: [], ttl: -1 }, /field 'ttl' must be an integer ≥ 0/],
    ['PUT', '', { list: [], extra: 1 }, `unknown field 'extra' (allowed: list, ttl, if_version, if_absent)`],
    ['POST', '/push', { values: [] }, `field 'values' must not be empty`],
    ['POST', '/push', { values: 'x' }, `field 'values' must be an array`],
    ['POST', '/push', {}, `field 'values' is required (an array)`],
    ['POST', '/push', { values: [1], side: 'top' }, `field 'side' must be "left" or "right"`],
    ['POST', '/push', { values: [1], create: 'no' }, `field 'create' must be true or false`],
    ['POST', '/push', { values: [1], value: 2 }, `unknown field 'value' (allowed: values, side, create, if_version)`],
    ['POST', '/pop', { count: 0 }, `field 'count' must be an integer ≥ 1 and ≤ 1000`],
    ['POST', '/pop', { count: 1001 }, `field 'count' asks for 1001 elements; one request takes at most 1000`],
    ['POST', '/pop', { count: 1.5 }, `field 'count' must be an integer ≥ 1 and ≤ 1000`],
    ['POST', '/pop', { count: '2' }, `field 'count' must be a number`],
    ['POST', '/pop', { wait_ms: -1 }, `field 'wait_ms' must be an integer ≥ 0 and ≤ 30000`],
    ['POST', '/pop', { wait_ms: 30001 }, `field 'wait_ms' must be an integer ≥ 0 and ≤ 30000`],
    ['POST', '/pop', { side: 'middle' }, `field 'side' must be "left" or "right"`],
    ['POST', '/pop', { to: '' }, `field 'to': list name must not be empty`],
    ['POST', '/pop', { to: 5 }, `field 'to' must be a string`],
    ['POST', '/pop', { to: 'x', to_side: 'up' }, `field 'to_side' must be "left" or "right"`],
    ['POST', '/pop', { to_side: 'left' }, `field 'to_side' needs 'to' (the list to move the items to)`],
    ['POST', '/pop', { timeout: 5 }, `unknown field 'timeout' (allowed: side, count, wait_ms, to, to_side, if_version)`],
    ['PATCH', '', {}, `PATCH of a list needs one of 'set', 'trim', 'remove' or 'ttl'`],
    [
      'PATCH',
      '',
      { set: { index: 0, value: 1 }, trim: { start: 0, stop: 1 } },
      `fields 'set' and 'trim' cannot be combined: send one of set, trim or remove (ttl may come with it)`,
    ],
    ['PATCH', '', { set: { index: 3, value: 1 } }, `field 'set.index' is out of range: the list has 3 items (indexes -3 to 2)`],
    ['PATCH', '', { set: { index: -4, value: 1 } }, `field 'set.index' is out of range: the list has 3 items (indexes -3 to 2)`],
    ['PATCH', '', { set: { index: '0', value: 1 } }, `field 'set.index' must be an integer`],
    ['PATCH', '', { set: { index: 0 } }, `field 'set.value' is required`],
    ['PATCH', '', { set: { index: 0, value: 1, at: 2 } }, `unknown field 'set.at' (allowed: index, value)`],
    ['PATCH', '', { set: [0, 1] }, `field 'set' must be an object`],
    ['PATCH', '', { trim: { start: 0 } }, `field 'trim.stop' is required`],
    ['PATCH', '', { trim: { start: 0.5, stop: 1 } }, `field 'trim.start' must be an integer`],
    ['PATCH', '', { remove: { value: 'a' } }, `field 'remove.count' is required`],
    ['PATCH', '', { remove: { value: 'a', count: 'all' } }, `field 'remove.count' must be an integer`],
    ['PATCH', '', { ttl: 'soon' }, /field 'ttl' must be an integer ≥ 0/],
    ['PATCH', '', { insert: 1 }, `unknown field 'insert' (allowed: set, trim, remove, ttl, if_version)`],
    ['DELETE', '', { if_version: -1 }, `field 'if_version' must be an integer ≥ 0 (a version)`],
  ];
  for (const [method, sub, body, msg] of cases) {
    expectError(await srv.req(method, `/lists/${n}${sub}`, body), 400, msg);
    assert.equal(etag(await get(n)), v, `${method} ${sub} ${JSON.stringify(body)} changed nothing`);
  }
  assert.deepEqual(await items(n), ['a', 'b', 'c']);
  expectError(await srv.req('GET', `/lists/${'x'.repeat(256)}`), 400, 'list name must be at most 255 bytes of UTF-8');
  expectError(await srv.req('PUT', `/lists/${n}`, '{"list": [1,'), 400);
  // A move to a target with a bad name moves nothing.
  expectError(await pop(n, { to: '..' }), 400, `field 'to': list name must not be '.' or '..'`);
  assert.deepEqual(await items(n), ['a', 'b', 'c']);
});

test('change feed: kind list, one put event per operation with op and, with values=true, its arguments and result', async () => {
  const n = uniq('feed');
  const w = watch({ port: srv.port, token: srv.token, query: `kind=list&prefix=${n}&values=true` });
  await w.opened;
  await srv.req('PUT', `/lists/${n}`, { list: ['a', 'b'] });
  await push(n, { values: ['c', 'd'], side: 'left' });
  await pop(n, { side: 'right', count: 2 });
  await srv.req('PATCH', `/lists/${n}`, { set: { index: 0, value: 'D' } });
  await srv.req('PATCH', `/lists/${n}`, { remove: { value: 'c', count: 0 } });
  await srv.req('PATCH', `/lists/${n}`, { trim: { start: 0, stop: 0 } });
  await pop(n, { to: `${n}-2` });
  await srv.req('DELETE', `/lists/${n}`);
  await w.until(() => w.events.length >= 9, 10_000, 'nine events');
  w.close();
  const evs = w.events.map((e) => ({ event: e.event, ...JSON.parse(e.data) }));
  for (const e of evs) delete e.version;
  assert.deepEqual(evs, [
    { event: 'put', kind: 'list', name: n, value: ['a', 'b'] },
    { event: 'put', kind: 'list', name: n, op: 'push', value: { side: 'left', values: ['c', 'd'], length: 4 } },
    { event: 'put', kind: 'list', name: n, op: 'pop', value: { side: 'right', count: 2, items: ['b', 'a'], length: 2 } },
    { event: 'put', kind: 'list', name: n, op: 'set', value: { index: 0, value: 'D', length: 2 } },
    { event: 'put', kind: 'list', name: n, op: 'remove', value: { value: 'c', count: 0, removed: 1, length: 1 } },
    { event: 'put', kind: 'list', name: n, op: 'trim', value: { start: 0, stop: 0, removed: 0, length: 1 } },
    { event: 'put', kind: 'list', name: n, op: 'pop', value: { side: 'left', count: 1, items: ['D'], length: 0 } },
    { event: 'put', kind: 'list', name: `${n}-2`, op: 'push', value: { side: 'left', values: ['D'], length: 1 } },
    { event: 'delete', kind: 'list', name: n },
  ]);
  // Without values=true the events carry op but no arguments.
  const w2 = watch({ port: srv.port, token: srv.token, query: `kind=list&prefix=${n}` });
  await w2.opened;
  await push(n, { values: [1] });
  // A new lifetime alone is a put with neither op nor value.
  await srv.req('PATCH', `/lists/${n}`, { ttl: 100 });
  await w2.until(() => w2.events.length >= 2, 10_000, 'two events');
  w2.close();
  const e = JSON.parse(w2.events[0].data);
  assert.deepEqual({ ...e, version: 0 }, { kind: 'list', name: n, version: 0, op: 'push' });
  assert.equal(w2.events[1].event, 'put');
  assert.deepEqual({ ...JSON.parse(w2.events[1].data), version: 0 }, { kind: 'list', name: n, version: 0 });
});

// ---- blocking pops -------------------------------------------------------------------------

test('a blocking pop with nothing to pop waits out wait_ms and answers no items', async () => {
  const n = uniq('b');
  const t0 = Date.now();
  expectSuccess(await pop(n, { wait_ms: 300 }), 200, 'list popped successfully', { items: [] });
  const took = Date.now() - t0;
  assert.ok(took >= 290, `waited ${took} ms`);
  await srv.req('PUT', `/lists/${n}`, { list: [] });
  expectSuccess(await pop(n, { wait_ms: 200 }), 200, 'list popped successfully', { items: [] });
  // With items it answers at once.
  await push(n, { values: [7] });
  expectSuccess(await pop(n, { wait_ms: 30_000 }), 200, 'list popped successfully', { items: [7] });
});

test('a blocking pop is woken by a push, on a missing list too, and answers the pushed item', async () => {
  const n = uniq('b');
  const p = pop(n, { wait_ms: 10_000 });
  await sleep(100);
  const t0 = Date.now();
  await push(n, { values: ['hello'] });
  const r = await p;
  expectSuccess(r, 200, 'list popped successfully', { items: ['hello'] });
  assert.ok(Date.now() - t0 < 2_000);
  expectSuccess(await get(n), 200, 'list queried successfully', { items: [], length: 0 });
});

test('waiters are served in arrival order, one item each', async () => {
  const n = uniq('b');
  const waiting: Array<Promise<Res>> = [];
  for (let i = 0; i < 5; i++) {
    const p = ownPop(n, { wait_ms: 10_000 });
    waiting.push(p.answer);
    await p.read;
    await sleep(50); // and the store's own steps to queue it
  }
  for (let i = 0; i < 5; i++) await push(n, { values: [i] });
  const got = (await Promise.all(waiting)).map((r) => r.body.data.items);
  assert.deepEqual(got, [[0], [1], [2], [3], [4]]);
});

test('one push of many values serves several waiters in order, each up to its count', async () => {
  const n = uniq('b');
  const a = ownPop(n, { wait_ms: 10_000, count: 2 });
  await a.read;
  await sleep(50);
  const b = ownPop(n, { wait_ms: 10_000, count: 2 });
  await b.read;
  await sleep(50);
  await push(n, { values: [1, 2, 3] });
  assert.deepEqual((await a.answer).body.data.items, [1, 2]);
  assert.deepEqual((await b.answer).body.data.items, [3]);
});

test('a waiter whose client has gone pops nothing: the next item goes to the next waiter or stays', async () => {
  const n = uniq('b');
  // A request that is abandoned while it waits.
  const left = ownPop(n, { wait_ms: 30_000 });
  left.answer.catch(() => {});
  await left.read;
  await sleep(150);
  const stays = ownPop(n, { wait_ms: 10_000 });
  await stays.read;
  await sleep(100);
  left.destroy();
  await gone(await left.port);
  await sleep(150);
  await push(n, { values: ['one'] });
  assert.deepEqual((await stays.answer).body.data.items, ['one'], 'the live waiter got it');
  // With no live waiter the item stays in the list.
  const g2 = ownPop(n, { wait_ms: 30_000 });
  g2.answer.catch(() => {});
  await g2.read;
  await sleep(150);
  g2.destroy();
  await gone(await g2.port);
  await sleep(150);
  await push(n, { values: ['two'] });
  await sleep(100);
  assert.deepEqual(await items(n), ['two']);
});

test("a blocking pop with to moves the pushed item (BLMOVE) and wakes the target's waiters", async () => {
  const src = uniq('bs');
  const dst = uniq('bd');
  const onDst = pop(dst, { wait_ms: 10_000 });
  await sleep(50);
  const mover = pop(src, { wait_ms: 10_000, to: dst, to_side: 'right' });
  await sleep(50);
  await push(src, { values: ['job'] });
  assert.deepEqual((await mover).body.data.items, ['job']);
  assert.deepEqual((await onDst).body.data.items, ['job'], 'the move woke the waiter on the target');
  assert.deepEqual(await items(dst), []);
  assert.deepEqual(await items(src), []);
});

test('ten blocking waiters and ten pushes: every item to exactly one waiter', async () => {
  const n = uniq('b10');
  const waiters = Array.from({ length: 10 }, () => pop(n, { wait_ms: 20_000 }));
  await sleep(100);
  await Promise.all(Array.from({ length: 10 }, (_, i) => push(n, { values: [`v${i}`] })));
  const got = (await Promise.all(waiters)).map((r) => {
    assert.equal(r.status, 200, r.raw);
    return r.body.data.items;
  });
  assert.ok(
    got.every((g) => g.length === 1),
    JSON.stringify(got),
  );
  assert.deepEqual(got.map((g) => g[0]).sort(), Array.from({ length: 10 }, (_, i) => `v${i}`).sort());
  assert.deepEqual(await items(n), []);
});

test('concurrent pushes and pops (some blocking, some moving): each item exactly once', async () => {
  const n = uniq('cc');
  const side = uniq('cs');
  const N = 400;
  const pushes = pool(
    Array.from({ length: N }, (_, i) => i),
    16,
    (i) => push(n, { values: [i], side: i % 2 === 0 ? 'left' : 'right' }),
  );
  const taken: number[] = [];
  const moved: number[] = [];
  const poppers = pool(Array.from({ length: 150 }), 12, async (_, i) => {
    const r = await pop(n, { count: 1 + (i % 3), side: i % 2 === 0 ? 'left' : 'right', wait_ms: i % 4 === 0 ? 300 : 0, ...(i % 5 === 0 ? { to: side } : {}) });
    if (r.status === 404) return; // before the first push created it
    assert.equal(r.status, 200, r.raw);
    (i % 5 === 0 ? moved : taken).push(...r.body.data.items);
  });
  await Promise.all([pushes, poppers]);
  const rest = await items(n);
  const inSide = (await srv.req('GET', `/lists/${side}`)).body.data?.items ?? [];
  assert.deepEqual(
    [...moved].sort((a, b) => a - b),
    [...inSide].sort((a: number, b: number) => a - b),
    'moved items are in the target',
  );
  const all = [...taken, ...moved, ...(rest as number[])].sort((a, b) => a - b);
  assert.deepEqual(
    all,
    Array.from({ length: N }, (_, i) => i),
  );
});

// ---- property: random operations against a plain array ------------------------------------

type Op =
  | { op: 'push'; side: 'left' | 'right'; values: number[] }
  | { op: 'pop'; side: 'left' | 'right'; count: number }
  | { op: 'range'; start: number; stop: number }
  | { op: 'set'; index: number; value: number }
  | { op: 'trim'; start: number; stop: number }
  | { op: 'remove'; value: number; count: number };

function norm(len: number, start: number, stop: number): [number, number] {
  let s = start < 0 ? len + start : start;
  let e = stop < 0 ? len + stop : stop;
  if (s < 0) s = 0;
  if (e >= len) e = len - 1;
  return [s, e];
}

test('property: random pushes, pops, ranges, sets, trims and removes agree with a plain array', async () => {
  const small = fc.integer({ min: 0, max: 4 });
  const idx = fc.integer({ min: -8, max: 8 });
  const side = fc.constantFrom<'left' | 'right'>('left', 'right');
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant('push' as const), side, values: fc.array(small, { minLength: 1, maxLength: 4 }) }),
    fc.record({ op: fc.constant('pop' as const), side, count: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ op: fc.constant('range' as const), start: idx, stop: idx }),
    fc.record({ op: fc.constant('set' as const), index: idx, value: small }),
    fc.record({ op: fc.constant('trim' as const), start: idx, stop: idx }),
    fc.record({ op: fc.constant('remove' as const), value: small, count: fc.integer({ min: -2, max: 2 }) }),
  );
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const n = uniq(`prop${runs++}-`);
      await srv.req('PUT', `/lists/${n}`, { list: [] });
      let m: number[] = [];
      for (const o of ops) {
        const at = JSON.stringify(o);
        if (o.op === 'push') {
          for (const v of o.values)
            if (o.side === 'left') m.unshift(v);
            else m.push(v);
          assert.deepEqual((await push(n, { values: o.values, side: o.side })).body.data, { length: m.length }, at);
        } else if (o.op === 'pop') {
          const want = o.side === 'left' ? m.splice(0, o.count) : m.splice(Math.max(0, m.length - o.count)).reverse();
          assert.deepEqual((await pop(n, { side: o.side, count: o.count })).body.data, { items: want }, at);
        } else if (o.op === 'range') {
          const [s, e] = norm(m.length, o.start, o.stop);
          assert.deepEqual((await get(n, `?start=${o.start}&stop=${o.stop}`)).body.data, { items: s > e ? [] : m.slice(s, e + 1), length: m.length }, at);
        } else if (o.op === 'set') {
          const i = o.index < 0 ? m.length + o.index : o.index;
          const r = await srv.req('PATCH', `/lists/${n}`, { set: { index: o.index, value: o.value } });
          if (i < 0 || i >= m.length) assert.equal(r.status, 400, at);
          else {
            m[i] = o.value;
            assert.deepEqual(r.body.data, { length: m.length }, at);
          }
        } else if (o.op === 'trim') {
          const [s, e] = norm(m.length, o.start, o.stop);
          m = s > e ? [] : m.slice(s, e + 1);
          assert.deepEqual((await srv.req('PATCH', `/lists/${n}`, { trim: { start: o.start, stop: o.stop } })).body.data, { length: m.length }, at);
        } else {
          const limit = o.count === 0 ? Infinity : Math.abs(o.count);
          let c = 0;
          if (o.count >= 0) m = m.filter((v) => !(v === o.value && c++ < limit));
          else
            m = m
              .reverse()
              .filter((v) => !(v === o.value && c++ < limit))
              .reverse();
          assert.deepEqual((await srv.req('PATCH', `/lists/${n}`, { remove: { value: o.value, count: o.count } })).body.data, { length: m.length }, at);
        }
      }
      assert.deepEqual(await items(n), m);
    }),
    { numRuns: 60, seed: 20261125 },
  );
});

test('lists survive a restart: items, order, ends and expiry', async () => {
  const n = uniq('r');
  await srv.req('PUT', `/lists/${n}`, { list: [1, 2, 3], ttl: 1000 });
  await push(n, { values: ['l'], side: 'left' });
  await pop(n, { side: 'right' });
  await srv.req('PATCH', `/lists/${n}`, { remove: { value: 2, count: 1 } });
  const before = await get(n);
  await srv.restart();
  const after = await get(n);
  assert.deepEqual(after.body.data, { items: ['l', 1], length: 2 });
  assert.equal(after.headers.etag, before.headers.etag);
  await push(n, { values: ['r'] });
  await push(n, { values: ['L'], side: 'left' });
  assert.deepEqual(await items(n), ['L', 'l', 1, 'r']);
  const l = await srv.req('GET', `/lists?prefix=${n}`);
  assert.ok(l.body.data.items[0].ttl_ms > 0);
});

// ---- transactions ---------------------------------------------------------------------------

const txn = (body: unknown): Promise<Res> => srv.req('POST', '/txns', body);

test('transactions: list PUSH and POP with results, the length check, all or nothing', async () => {
  const a = uniq('ta');
  const b = uniq('tb');
  const r = await txn({
    mutations: [
      { kind: 'list', name: a, operation: 'PUSH', values: [1, 2, 3] },
      { kind: 'list', name: a, operation: 'PUSH', values: ['x'], side: 'left' },
      { kind: 'list', name: a, operation: 'POP', side: 'right', count: 2 },
      { kind: 'list', name: b, operation: 'PUSH', values: [3] },
    ],
  });
  expectSuccess(r, 200, 'transaction execute successfully', { results: [{ length: 3 }, { length: 4 }, { items: [3, 2] }, { length: 1 }] });
  assert.deepEqual(await items(a), ['x', 1]);
  // A move written as a transaction, guarded by the length check.
  expectSuccess(
    await txn({
      checks: [
        { kind: 'list', name: a, length: { $gte: 1 } },
        { kind: 'list', name: b, exists: true },
      ],
      mutations: [
        { kind: 'list', name: a, operation: 'POP' },
        { kind: 'list', name: b, operation: 'PUSH', values: ['x'] },
      ],
    }),
    200,
    'transaction execute successfully',
    { results: [{ items: ['x'] }, { length: 2 }] },
  );
  assert.deepEqual(await items(a), [1]);
  assert.deepEqual(await items(b), [3, 'x']);
  const va = etag(await get(a));
  const vb = etag(await get(b));
  expectError(
    await txn({ checks: [{ kind: 'list', name: a, length: 5 }], mutations: [{ kind: 'list', name: a, operation: 'POP' }] }),
    409,
    `transaction check 0 failed: list '${a}' has length 1, which does not match 5`,
  );
  expectError(
    await txn({ checks: [{ kind: 'list', name: uniq('none'), exists: true }], mutations: [{ kind: 'list', name: a, operation: 'POP' }] }),
    409,
    /transaction check 0 failed: list '.*' does not exist/,
  );
  // A failing later mutation undoes the earlier ones.
  const none = uniq('none');
  expectError(
    await txn({
      mutations: [
        { kind: 'list', name: b, operation: 'POP' },
        { kind: 'list', name: none, operation: 'POP' },
      ],
    }),
    404,
    `mutation 1: list '${none}' does not exist`,
  );
  assert.equal(etag(await get(a)), va);
  assert.equal(etag(await get(b)), vb);
  assert.deepEqual(await items(b), [3, 'x']);
  expectError(await txn({ mutations: [{ kind: 'list', name: a, operation: 'PUSH', values: [] }] }), 400, `mutation 0: field 'values' must not be empty`);
  expectError(
    await txn({ mutations: [{ kind: 'list', name: a, operation: 'POP', count: 0 }] }),
    400,
    `mutation 0: field 'count' must be an integer ≥ 1 and ≤ 1000`,
  );
  expectError(await txn({ mutations: [{ kind: 'list', name: a, operation: 'POP', side: 'up' }] }), 400, `mutation 0: field 'side' must be "left" or "right"`);
  expectError(
    await txn({ mutations: [{ kind: 'list', name: a, operation: 'SET' }] }),
    400,
    `mutation 0: field 'operation' must be one of PUSH, POP for a list, not 'SET'`,
  );
  expectError(
    await txn({ checks: [{ kind: 'list', name: a }], mutations: [{ kind: 'list', name: a, operation: 'POP' }] }),
    400,
    `check 0: a list check needs 'length' or 'exists'`,
  );
  assert.equal(etag(await get(a)), va);
});

test('a push in a transaction wakes a blocking pop', async () => {
  const n = uniq('tw');
  const waiting = pop(n, { wait_ms: 10_000 });
  await sleep(100);
  await txn({ mutations: [{ kind: 'list', name: n, operation: 'PUSH', values: ['t'] }] });
  assert.deepEqual((await waiting).body.data.items, ['t']);
});

test('20 concurrent if_absent PUTs of one list: exactly one creates it, the others are 412; plain PUTs: one 201', async () => {
  const n = uniq('race');
  const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => srv.req('PUT', `/lists/${n}`, { list: [i], if_absent: true })));
  assert.equal(rs.filter((r) => r.status === 201).length, 1, rs.map((r) => r.status).join(','));
  assert.equal(rs.filter((r) => r.status === 412).length, 19);
  const winner = rs.findIndex((r) => r.status === 201);
  assert.deepEqual(await items(n), [winner]);
  const m = uniq('race');
  const ps = await Promise.all(Array.from({ length: 20 }, (_, i) => srv.req('PUT', `/lists/${m}`, { list: [i, i] })));
  assert.equal(ps.filter((r) => r.status === 201).length, 1, ps.map((r) => r.status).join(','));
  assert.equal(ps.filter((r) => r.status === 200).length, 19);
  const last = await items(m);
  assert.equal(last.length, 2);
  assert.equal(last[0], last[1], "one PUT's items, never a mix");
});
