/**
 * Numbers and texts, black-box (docs/api.md, "Numbers and texts"):
 * `/number/<k>` and `/text/<k>` as spellings of integer and string variants,
 * string append (also on POST /variants) with versions, ttl kept, the
 * change feed, concurrency; wrong types, bad fields and stray bodies refused
 * with nothing changed.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, etag, expectError, expectSuccess, pool, uniq } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

const N = (k: string): string => `/number/${encodeURIComponent(k)}`;
const X = (k: string): string => `/text/${encodeURIComponent(k)}`;
const V = (k: string): string => `/variants/${encodeURIComponent(k)}`;

test('/number: put, get with ETag, increment, delete; the same object as /variants', async () => {
  const k = uniq('num');
  expectSuccess(await srv.req('PUT', N(k), { number: 7 }), 201, 'variant created successfully', { number: 7 });
  const g = await srv.req('GET', N(k));
  expectSuccess(g, 200, 'variant queried successfully', { number: 7 });
  const v = etag(g);
  expectSuccess(await srv.req('GET', V(k)), 200, 'variant queried successfully', { variant: 7 });
  expectSuccess(await srv.req('PUT', N(k), { number: -3 }), 200, 'variant created successfully', { number: -3 });
  assert.ok(etag(await srv.req('GET', N(k))) > v);
  expectSuccess(await srv.req('POST', N(k), { delta: 10 }), 200, 'variant incremented successfully', { number: 7 });
  expectSuccess(await srv.req('POST', N(k), { delta: -2 }), 200, 'variant incremented successfully', { number: 5 });
  expectSuccess(await srv.req('POST', V(k), { delta: 1 }), 200, 'variant incremented successfully', { variant: 6 });
  expectSuccess(await srv.req('GET', N(k)), 200, 'variant queried successfully', { number: 6 });
  expectSuccess(await srv.req('DELETE', N(k)), 200, 'variant deleted successfully');
  expectError(await srv.req('GET', N(k)), 404, `variant '${k}' does not exist`);
  expectError(await srv.req('GET', V(k)), 404);
  expectError(await srv.req('POST', N(k), { delta: 1 }), 404, `variant '${k}' does not exist`);
  expectError(await srv.req('DELETE', N(k)), 404, `variant '${k}' does not exist`);
  // A variant written through /variants reads through /number.
  expectSuccess(await srv.req('PUT', V(k), { variant: 42 }), 201, 'variant created successfully', { variant: 42 });
  expectSuccess(await srv.req('GET', N(k)), 200, 'variant queried successfully', { number: 42 });
});

test('/text: put, get with ETag, append (UTF-8 length), delete; the same object as /variants', async () => {
  const k = uniq('txt');
  expectSuccess(await srv.req('PUT', X(k), { content: 'héllo' }), 201, 'variant created successfully', { content: 'héllo' });
  const g = await srv.req('GET', X(k));
  expectSuccess(g, 200, 'variant queried successfully', { content: 'héllo' });
  const v0 = etag(g);
  expectSuccess(await srv.req('POST', X(k), { append: ', wörld' }), 200, 'variant appended successfully', { length: Buffer.byteLength('héllo, wörld') });
  const v1 = etag(await srv.req('GET', X(k)));
  assert.ok(v1 > v0);
  expectSuccess(await srv.req('POST', X(k), { append: '' }), 200, 'variant appended successfully', { length: Buffer.byteLength('héllo, wörld') });
  expectSuccess(await srv.req('POST', V(k), { append: '!' }), 200, 'variant appended successfully', { length: Buffer.byteLength('héllo, wörld!') });
  expectSuccess(await srv.req('GET', X(k)), 200, 'variant queried successfully', { content: 'héllo, wörld!' });
  expectSuccess(await srv.req('GET', V(k)), 200, 'variant queried successfully', { variant: 'héllo, wörld!' });
  expectSuccess(await srv.req('PUT', X(k), { content: 'new' }), 200, 'variant created successfully', { content: 'new' });
  expectSuccess(await srv.req('DELETE', X(k)), 200, 'variant deleted successfully');
  expectError(await srv.req('GET', X(k)), 404, `variant '${k}' does not exist`);
  expectError(await srv.req('POST', X(k), { append: 'x' }), 404, `variant '${k}' does not exist`);
  expectError(await srv.req('POST', V(k), { append: 'x' }), 404, `variant '${k}' does not exist`);
  // A failed append creates nothing.
  expectError(await srv.req('GET', X(k)), 404);
});

test('a variant of another type under the key is a 409, and is left as it was', async () => {
  const s = uniq('wt');
  const i = uniq('wt');
  const d = uniq('wt');
  const b = uniq('wt');
  await srv.req('PUT', V(s), { variant: 'abc' });
  await srv.req('PUT', V(i), { variant: 5 });
  await srv.req('PUT', V(d), { variant: 1.5 });
  await srv.req('PUT', V(b), { variant: true });
  for (const k of [s, d, b]) {
    expectError(await srv.req('GET', N(k)), 409);
    expectError(await srv.req('POST', N(k), { delta: 1 }), 409);
    expectError(await srv.req('PUT', N(k), { number: 1 }), 409);
    expectError(await srv.req('DELETE', N(k)), 409);
  }
  for (const k of [i, d, b]) {
    expectError(await srv.req('GET', X(k)), 409);
    expectError(await srv.req('POST', X(k), { append: 'x' }), 409);
    expectError(await srv.req('POST', V(k), { append: 'x' }), 409);
    expectError(await srv.req('PUT', X(k), { content: 'x' }), 409);
    expectError(await srv.req('DELETE', X(k)), 409);
  }
  expectError(await srv.req('GET', N(d)), 409, `variant '${d}' holds a double, not an integer`);
  expectError(await srv.req('POST', X(i), { append: 'x' }), 409, `variant '${i}' holds an integer; only strings can be appended to`);
  // delta on a string stays the seed's type-mismatch error.
  expectError(await srv.req('POST', V(s), { delta: 1 }), 409, `variant '${s}' holds a string; only numbers can be incremented`);
  expectSuccess(await srv.req('GET', V(s)), 200, 'variant queried successfully', { variant: 'abc' });
  expectSuccess(await srv.req('GET', V(i)), 200, 'variant queried successfully', { variant: 5 });
  expectSuccess(await srv.req('GET', V(d)), 200, 'variant queried successfully', { variant: 1.5 });
  expectSuccess(await srv.req('GET', V(b)), 200, 'variant queried successfully', { variant: true });
});

test('bad fields, unknown fields, query parameters and stray bodies: 400 naming them, nothing changed', async () => {
  const k = uniq('bad');
  const t = uniq('bad');
  await srv.req('PUT', N(k), { number: 1 });
  await srv.req('PUT', X(t), { content: 'a' });
  const cases: Array<[string, string, unknown, RegExp]> = [
    ['PUT', N(k), {}, /field 'number' is required/],
    ['PUT', N(k), { number: 1.5 }, /field 'number' must be an integer/],
    ['PUT', N(k), '{"number": 2.0}', /field 'number' must be an integer/],
    ['POST', N(k), '{"delta": 1e-1}', /field 'delta' must be an integer/],
    ['PUT', N(k), { number: '2' }, /field 'number' must be a number/],
    ['PUT', N(k), { number: 2, extra: 1 }, /unknown field 'extra'/],
    ['PUT', N(k), { number: 2, ttl: -1 }, /field 'ttl'/],
    ['PUT', N(k), { variant: 2 }, /unknown field 'variant'|field 'number' is required/],
    ['POST', N(k), {}, /field 'delta' is required/],
    ['POST', N(k), { delta: 0.5 }, /field 'delta' must be an integer/],
    ['POST', N(k), { delta: 1, append: 'x' }, /unknown field 'append'/],
    ['GET', N(k), { x: 1 }, /unknown field 'x'/],
    ['DELETE', N(k), { x: 1 }, /unknown field 'x'/],
    ['GET', `${N(k)}?x=1`, undefined, /unknown query parameter 'x'/],
    ['PUT', X(t), {}, /field 'content' is required/],
    ['PUT', X(t), { content: 5 }, /field 'content' must be a string/],
    ['PUT', X(t), { content: 'b', number: 1 }, /unknown field 'number'/],
    ['POST', X(t), {}, /field 'append' is required/],
    ['POST', X(t), { append: 5 }, /field 'append' must be a string/],
    ['POST', X(t), { append: 'x', delta: 1 }, /unknown field 'delta'/],
    ['GET', X(t), { x: 1 }, /unknown field 'x'/],
    ['DELETE', X(t), { content: 'a' }, /unknown field 'content'/],
    ['POST', V(t), { append: 'x', delta: 1 }, /either field 'delta' or field 'append'/],
    ['POST', V(t), { append: 5 }, /field 'append' must be a string/],
    ['POST', V(k), { delta: 1, if_version: 1 }, /field 'if_version' is taken only with 'append'/],
    ['POST', V(k), {}, /field 'delta' is required/],
  ];
  for (const [method, path, body, msg] of cases) {
    const r = await srv.req(method, path, body);
    expectError(r, 400);
    assert.match(r.body.message as string, msg, `${method} ${path} ${JSON.stringify(body)}`);
  }
  expectSuccess(await srv.req('GET', N(k)), 200, 'variant queried successfully', { number: 1 });
  expectSuccess(await srv.req('GET', X(t)), 200, 'variant queried successfully', { content: 'a' });
  // A bad name is a 400 as for every variant.
  expectError(await srv.req('GET', '/number/..'), 400);
  expectError(await srv.req('PATCH', N(k), { ttl: 1 }), 405);
});

test('versions: PUT takes if_version / if_absent / If-None-Match; append takes if_version / If-Match', async () => {
  const k = uniq('ver');
  expectSuccess(await srv.req('PUT', X(k), { content: 'a', if_absent: true }), 201, 'variant created successfully', { content: 'a' });
  expectError(await srv.req('PUT', X(k), { content: 'b' }, { 'If-None-Match': '*' }), 412);
  const v = etag(await srv.req('GET', X(k)));
  expectError(await srv.req('POST', X(k), { append: 'x', if_version: v + 1 }), 412, `variant '${k}' changed (version ${v})`);
  expectError(await srv.req('POST', V(k), { append: 'x' }, { 'If-Match': `"${v + 1}"` }), 412);
  expectSuccess(await srv.req('GET', X(k)), 200, 'variant queried successfully', { content: 'a' });
  expectSuccess(await srv.req('POST', X(k), { append: 'b' }, { 'If-Match': `"${v}"` }), 200, 'variant appended successfully', { length: 2 });
  const v2 = etag(await srv.req('GET', X(k)));
  expectSuccess(await srv.req('POST', V(k), { append: 'c', if_version: v2 }), 200, 'variant appended successfully', { length: 3 });
  const n = uniq('ver');
  expectSuccess(await srv.req('PUT', N(n), { number: 1 }), 201, 'variant created successfully', { number: 1 });
  const nv = etag(await srv.req('GET', N(n)));
  expectError(await srv.req('PUT', N(n), { number: 2, if_version: nv + 1 }), 412);
  expectSuccess(await srv.req('PUT', N(n), { number: 2, if_version: nv }), 200, 'variant created successfully', { number: 2 });
});

test('ttl: PUT takes it; append and increment keep it; the object is gone after it', async () => {
  const k = uniq('ttl');
  const n = uniq('ttl');
  expectSuccess(await srv.req('PUT', X(k), { content: 'a', ttl: 10 }), 201, 'variant created successfully', { content: 'a' });
  expectSuccess(await srv.req('PUT', N(n), { number: 1, ttl: 10 }), 201, 'variant created successfully', { number: 1 });
  await srv.advance(5000);
  expectSuccess(await srv.req('POST', X(k), { append: 'b' }), 200, 'variant appended successfully', { length: 2 });
  expectSuccess(await srv.req('POST', N(n), { delta: 1 }), 200, 'variant incremented successfully', { number: 2 });
  await srv.advance(4000);
  expectSuccess(await srv.req('GET', X(k)), 200, 'variant queried successfully', { content: 'ab' });
  expectSuccess(await srv.req('GET', N(n)), 200, 'variant queried successfully', { number: 2 });
  await srv.advance(1500);
  expectError(await srv.req('GET', X(k)), 404);
  expectError(await srv.req('GET', N(n)), 404);
  expectError(await srv.req('POST', X(k), { append: 'c' }), 404);
});

test('N concurrent appends: every piece present exactly once; N concurrent increments add exactly N', async () => {
  const k = uniq('cc');
  const n = uniq('cc');
  await srv.req('PUT', X(k), { content: '' });
  await srv.req('PUT', N(n), { number: 0 });
  // Fresh connections for the burst: a keep-alive socket left idle by an earlier test for about
  // the server's keep-alive timeout may be reset as it is reused (seen on the PostgreSQL pass).
  srv.agent.destroy();
  srv.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const pieces = Array.from({ length: 200 }, (_, i) => `<${i}>`);
  const lengths = await pool(pieces, 16, async (p, i) => {
    const [a, b] = await Promise.all([srv.req('POST', X(k), { append: p }), srv.req('POST', N(n), { delta: 1 })]);
    assert.equal(a.status, 200, a.raw);
    assert.equal(b.status, 200, `${i}: ${b.raw}`);
    return (a.body.data as { length: number }).length;
  });
  const content = (await srv.req('GET', X(k))).body.data as { content: string };
  const found = content.content.match(/<\d+>/g) ?? [];
  assert.equal(found.length, pieces.length);
  assert.deepEqual([...found].sort(), [...pieces].sort());
  assert.equal(content.content, found.join(''), 'nothing but the pieces');
  // Each append saw a different length: they were applied one after another.
  assert.equal(new Set(lengths).size, pieces.length);
  assert.equal(Math.max(...lengths), Buffer.byteLength(content.content));
  expectSuccess(await srv.req('GET', N(n)), 200, 'variant queried successfully', { number: pieces.length });
});

test('the change feed reports puts, appends and deletes of numbers and texts as variant changes', async () => {
  const k = uniq('feed');
  const n = `${k}-n`;
  const t = `${k}-t`;
  const w = watch({ port: srv.port, token: srv.token, query: `kind=variant&prefix=${k}&values=true` });
  await w.opened;
  await srv.req('PUT', N(n), { number: 1 });
  await srv.req('POST', N(n), { delta: 2 });
  await srv.req('PUT', X(t), { content: 'a' });
  await srv.req('POST', X(t), { append: 'bc' });
  const vt = etag(await srv.req('GET', X(t)));
  await srv.req('DELETE', X(t));
  await w.until(() => w.events.length >= 5, 20_000, 'five events');
  w.close();
  const ev = w.events.map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> }));
  assert.deepEqual(
    ev.map((e) => [e.event, e.data.name, e.data.value]),
    [
      ['put', n, 1],
      ['put', n, 3],
      ['put', t, 'a'],
      ['put', t, 'abc'],
      ['delete', t, undefined],
    ],
  );
  assert.equal(ev[3].data.version, vt);
  assert.ok(ev.every((e) => e.data.kind === 'variant'));
});

test('restart: numbers and texts written and appended are there after SIGKILL', async () => {
  const k = uniq('rs');
  await srv.req('PUT', X(k), { content: 'x' });
  for (let i = 0; i < 5; i++) assert.equal((await srv.req('POST', X(k), { append: String(i) })).status, 200);
  const n = uniq('rs');
  assert.equal((await srv.req('PUT', N(n), { number: 9 })).status, 201);
  await srv.restart('SIGKILL');
  expectSuccess(await srv.req('GET', X(k)), 200, 'variant queried successfully', { content: 'x01234' });
  expectSuccess(await srv.req('GET', N(n)), 200, 'variant queried successfully', { number: 9 });
});
