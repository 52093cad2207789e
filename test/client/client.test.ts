/**
 * The typed client against a real Pithos process (every part-one endpoint), plus its
 * pieces that need no server: SSE parsing, retries, error mapping. Part-two calls are
 * exercised only where the server answers them.
 */
import assert from 'node:assert/strict';
import { ROUTES } from '../../src/http/routes.js';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { ENDPOINTS, Pithos, PithosError, endpointList, parseEtag, parseSSE, type WatchEvent } from '../../client/index.js';
import { PithosServer } from '../helpers/server.js';

let server: PithosServer;
let db: Pithos;

before(async () => {
  server = await PithosServer.start();
  db = new Pithos({ url: server.base, token: server.token });
});
after(async () => {
  await server?.close();
});

async function rejects(p: Promise<unknown>, status: number, message: RegExp | string): Promise<PithosError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof PithosError, `not a PithosError: ${String(err)}`);
    assert.equal(err.status, status, `status of "${err.message}"`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return err;
  }
  assert.fail(`expected a ${status} rejection`);
}

/** True when the server serves this endpoint (not "no endpoint" 404, not 405). */
async function served(method: string, path: string, body?: unknown): Promise<boolean> {
  const r = await server.req(method, path, body);
  return !(r.status === 405 || (r.status === 404 && /^no endpoint at /.test(r.body?.message ?? '')));
}

test('the package self-reference pithos/client resolves to this client', async () => {
  const spec = 'pithos/client';
  const mod = (await import(spec)) as typeof import('../../client/index.js');
  assert.equal(typeof mod.Pithos, 'function');
  assert.deepEqual(Object.keys(mod.ENDPOINTS), Object.keys(ENDPOINTS));
});

test('tables: create, insert, read, query (POST alias), patch, delete rows, drop', async () => {
  await db.createTable('users');
  await rejects(db.createTable('users'), 409, "table 'users' already exists");
  assert.deepEqual(await db.insertRow('users', { name: 'ann', age: 31 }), { t_id: 1 });
  assert.deepEqual(await db.insertRow('users', { name: 'bob', age: 25, address: { city: 'Oslo' } }), { t_id: 2 });
  assert.deepEqual(await db.insertRow('users', {}), { t_id: 3 });
  assert.deepEqual(await db.getTable('users'), { 1: { name: 'ann', age: 31 }, 2: { name: 'bob', age: 25, address: { city: 'Oslo' } }, 3: {} });
  assert.deepEqual(await db.queryRows('users', { age: { $lt: 30 } }), [{ name: 'bob', age: 25, address: { city: 'Oslo' } }]);
  assert.deepEqual(await db.queryRows('users', { address: { city: 'Oslo' } }), [{ name: 'bob', age: 25, address: { city: 'Oslo' } }]);
  assert.equal((await db.queryRows('users')).length, 3, 'no wheres means {}');
  await rejects(db.queryRows('users', { age: { $near: 1 } } as never), 400, /unknown operator/);
  await db.patchRows('users', { name: 'ann' }, { age: 32, role: 'admin' });
  assert.deepEqual(await db.queryRows('users', { name: 'ann' }), [{ name: 'ann', age: 32, role: 'admin' }]);
  await db.deleteRows('users', { age: { $exists: false } });
  assert.deepEqual(Object.keys(await db.getTable('users')), ['1', '2']);
  await db.dropTable('users');
  await rejects(db.getTable('users'), 404, "table 'users' does not exist");
  await rejects(db.insertRow('users', {}), 404, "table 'users' does not exist");
  // Names are one percent-encoded segment.
  await db.createTable('café/menu');
  assert.deepEqual(await db.insertRow('café/menu', { x: 1 }), { t_id: 1 });
  assert.equal((await server.req('GET', '/tables/caf%C3%A9%2Fmenu')).status, 200);
});

test('records and the /table/<key> spelling', async () => {
  assert.deepEqual(await db.putRecord('doc', { a: 1, nested: { b: [1, 2] } }), { created: true });
  assert.deepEqual(await db.putRecord('doc', { a: 2 }, { ttl: 60 }), { created: false });
  assert.deepEqual(await db.getRecord('doc'), { a: 2 });
  assert.deepEqual(await db.searchRecord('doc', 'a'), [2]);
  assert.deepEqual(await db.searchRecord('doc', 'zzz'), []);
  const v = await db.getRecordVersioned('doc');
  assert.deepEqual(v.value, { a: 2 });
  const etag = (await server.req('GET', '/records/doc')).headers.etag;
  assert.equal(v.version, etag === undefined ? undefined : parseEtag(String(etag)), 'version is the ETag when the server sends one');
  await db.deleteRecord('doc');
  await rejects(db.getRecord('doc'), 404, "record 'doc' does not exist");
  await rejects(db.deleteRecord('doc'), 404, "record 'doc' does not exist");
  await rejects(db.putRecord('x', [] as never), 400, /record/);

  assert.deepEqual(await db.putQuick('q', { v: 1 }), { created: true });
  assert.deepEqual(await db.getRecord('q'), { v: 1 }, 'one namespace, two spellings');
  assert.deepEqual(await db.getQuick('q'), { v: 1 });
  await db.deleteQuick('q');
  await rejects(db.getQuick('q'), 404, "record 'q' does not exist");
});

test('variants: put, get, incr, type errors, delete', async () => {
  assert.deepEqual(await db.putVariant('n', 5), { variant: 5, created: true });
  // incr() is typed as a number: this line does not compile if it is not.
  const six: number = await db.incr('n');
  assert.equal(six, 6);
  assert.equal(await db.incr('n', -10), -4);
  assert.equal(await db.getVariant('n'), -4);
  await rejects(db.incr('n', 0.5), 409, /./);
  await rejects(db.putVariant('n', 'text'), 409, /./);
  assert.deepEqual(await db.putVariant('s', 'hello'), { variant: 'hello', created: true });
  await rejects(db.incr('s', 1), 409, /./);
  assert.equal((await db.getVariantVersioned('s')).value, 'hello');
  await db.deleteVariant('n');
  await rejects(db.getVariant('n'), 404, "variant 'n' does not exist");
  await rejects(db.incr('n'), 404, "variant 'n' does not exist");
});

test('locks: acquire, held (423), query, renew, wrong token (403), release', async () => {
  const g = await db.acquireLock('job', 30, 'worker-1');
  assert.equal(typeof g.token, 'string');
  assert.ok(Number.isInteger(g.fence));
  await rejects(db.acquireLock('job', 30), 423, "lock 'job' is held");
  const s = await db.getLock('job');
  assert.equal(s.held, true);
  assert.equal(s.holder, 'worker-1');
  assert.equal(s.fence, g.fence);
  assert.ok(s.expires_in_ms > 25_000 && s.expires_in_ms <= 30_000);
  const r = await db.renewLock('job', g.token, 60);
  assert.notEqual(r.token, g.token);
  await rejects(db.renewLock('job', g.token), 403, /./);
  await rejects(db.releaseLock('job', 'nope'), 403, /./);
  await db.releaseLock('job', r.token);
  await rejects(db.getLock('job'), 404, /./);
});

test('health, auth and unreachable servers give typed results and errors', async () => {
  const h = await db.health();
  assert.ok(Number.isInteger(h.key_count));
  assert.match(h.disk_total, /^\d+\.\d\dGB$/);
  assert.ok([0, 1, 2].includes(h.gc_state));
  await rejects(new Pithos({ url: server.base, token: 'wrong' }).health(), 401, /./);
  await rejects(new Pithos({ url: server.base }).health(), 401, /./);
  const dead = new Pithos({ url: 'http://127.0.0.1:1', token: 'x' });
  const err = await rejects(dead.health(), 0, /cannot reach http:\/\/127\.0\.0\.1:1/);
  assert.equal(err.method, 'GET');
  assert.equal(err.path, '/health');
});

test('every endpoint the client knows is served by the server (no 404 "no endpoint", no 405)', async () => {
  const list = endpointList();
  assert.ok(list.length >= 30, `only ${list.length} endpoints`);
  // The change feed never ends by itself; the route-table test below covers it.
  for (const e of list.filter((x) => x.path !== '/watch')) {
    const path = e.path.replace(/\{[a-z_]+\}/g, 'x');
    assert.ok(await served(e.method, path, {}), `${e.method} ${e.path} is not served`);
  }
  // The client's own pairs are distinct and well-formed.
  assert.equal(new Set(list.map((e) => `${e.method} ${e.path}`)).size, list.length);
  for (const e of list) assert.match(e.path, /^\/[a-z_.]+(\/(\{[a-z_]+\}|[a-z]+))*$/);
});

test('the client and the server route table (src/http/routes.ts) list the same endpoints', () => {
  const routes: ReadonlyArray<{ method: string; path: string; testOnly?: boolean; upstash?: true }> = ROUTES;
  const key = (e: { method: string; path: string }): string => `${e.method} ${e.path.replace(/\{[a-z_]+\}/g, '{}')}`;
  // Upstash's REST routes are another protocol's, called by @upstash/redis (docs/redis-rest.md), not by this client.
  const server = new Set(routes.filter((r) => !r.testOnly && r.upstash !== true).map(key));
  const client = endpointList();
  const probes = new Set(['GET /livez', 'GET /readyz']); // answered before routing (src/http/probes.ts)
  const missingOnServer = client.filter((e) => !server.has(key(e)) && !probes.has(key(e)));
  assert.deepEqual(missingOnServer, [], 'endpoints the route table lacks');
  const known = new Set(client.map(key));
  const missingInClient = [...server].filter((k) => !known.has(k));
  assert.deepEqual(
    missingInClient,
    [],
    'routes the client has no call for: add them to ENDPOINTS in client/endpoints.ts and a call to the class of their kind',
  );
});

test('part-two calls: listing, transactions, metrics, row-query options', async () => {
  await db.createTable('p2');
  for (let i = 1; i <= 5; i++) await db.insertRow('p2', { i, even: i % 2 === 0 });
  const page = await db.listTables({ prefix: 'p', limit: 1 });
  assert.equal(page.items[0]?.name, 'p2');
  const all: string[] = [];
  for await (const it of db.listAll('table', { limit: 1 })) all.push(it.name);
  assert.ok(all.includes('p2'));
  // The plural, as in the paths, names the same listing.
  const plural: string[] = [];
  for await (const it of db.listAll('tables', { limit: 1 })) plural.push(it.name);
  assert.deepEqual(plural, all);
  await db.putRecord('p2-rec', {});
  assert.deepEqual(
    (await db.list('records', { prefix: 'p2-' })).items.map((i) => i.name),
    ['p2-rec'],
  );
  // Any other kind does not compile; from JavaScript it is a TypeError naming the kinds.
  // @ts-expect-error 'rows' is not a kind
  await assert.rejects(db.listAll('rows').next(), {
    name: 'TypeError',
    message: /^kind must be 'table', 'record', 'variant', 'lock', 'list', 'set' or 'zset' .*got 'rows'$/,
  });
  // @ts-expect-error nor is a missing one
  await assert.rejects(db.list(undefined), { name: 'TypeError', message: /kind must be .*got undefined$/ });
  const r = await db.txn({ mutations: [{ name: 'p2', operation: 'INSERT', values: { i: 6 } }] });
  assert.deepEqual(r.results, [{ t_id: 6 }]);
  assert.match(await db.metrics(), /^# (HELP|TYPE) pithos_/m);
  assert.deepEqual(await db.queryRows('p2', { even: true }, { order: [{ field: 'i', dir: 'desc' }], limit: 1 }), [{ i: 4, even: true }]);
});

test('one row by t_id: getRow, getRowVersioned, replaceRow, patchRow (unset, ifVersion), deleteRow, txn forms', async () => {
  await db.createTable('byid');
  for (let i = 0; i < 3; i++) await db.insertRow('byid', { same: true });
  const { value, version } = await db.getRowVersioned('byid', 2);
  assert.deepEqual(value, { same: true });
  assert.ok(Number.isInteger(version));
  await rejects(db.patchRow('byid', 2, { n: 1 }, { ifVersion: (version as number) + 1 }), 412, /^row 2 of table 'byid' changed \(version \d+\)$/);
  await db.patchRow('byid', 2, { n: 1 }, { unset: ['same'], ifVersion: version as number });
  assert.deepEqual(await db.getRow('byid', 2), { n: 1 });
  await db.replaceRow('byid', 3, { r: 3 });
  await rejects(db.replaceRow('byid', 4, { r: 4 }), 404, "row 4 of table 'byid' does not exist");
  await db.deleteRow('byid', 1);
  await rejects(db.getRow('byid', 1), 404, "row 1 of table 'byid' does not exist");
  await rejects(db.getRow('byid', 0), 400, "t_id must be a positive integer in decimal, not '0'");
  const r = await db.txn({
    mutations: [
      { name: 'byid', operation: 'UPDATE', t_id: 2, values: { n: 2 } },
      { name: 'byid', operation: 'REPLACE', t_id: 3, values: { r: 33 } },
      { name: 'byid', operation: 'REMOVE', t_id: 1 },
    ],
  });
  assert.deepEqual(r.results, [{ matched: 1 }, {}, { matched: 0 }]);
  assert.deepEqual(await db.getTable('byid'), { 2: { n: 2 }, 3: { r: 33 } });
});

test('retries: idempotent calls retry on 503 and network errors, others never', async () => {
  let calls = 0;
  const flaky: typeof fetch = async () => {
    calls++;
    if (calls === 1) throw new TypeError('fetch failed');
    if (calls === 2) return new Response('{"status":"error","message":"server is shutting down"}', { status: 503 });
    return new Response('{"status":"success","message":"variant queried successfully","data":{"variant":7}}', { status: 200, headers: { ETag: '"42"' } });
  };
  const c = new Pithos({ url: 'http://example.invalid', token: 't', fetch: flaky, retries: 2, retryDelayMs: 1 });
  assert.deepEqual(await c.getVariantVersioned('v'), { value: 7, version: 42 });
  assert.equal(calls, 3);

  calls = 0;
  const c2 = new Pithos({ url: 'http://example.invalid', token: 't', fetch: flaky, retries: 5, retryDelayMs: 1 });
  await rejects(c2.incr('v'), 0, /fetch failed/);
  assert.equal(calls, 1, 'an increment is not repeated');

  calls = 0;
  const c3 = new Pithos({ url: 'http://example.invalid', fetch: flaky, retryDelayMs: 1 });
  await rejects(c3.getVariant('v'), 0, /fetch failed/);
  assert.equal(calls, 1, 'no retries unless asked');

  // A non-JSON error answer still becomes a PithosError with the text.
  const proxy: typeof fetch = async () => new Response('bad gateway', { status: 502 });
  await rejects(new Pithos({ url: 'http://x.invalid', fetch: proxy }).health(), 502, 'bad gateway');
});

test('a timeout aborts a call that never answers', async () => {
  const hang: typeof fetch = (_u, init) => new Promise((_r, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
  const c = new Pithos({ url: 'http://x.invalid', fetch: hang, timeoutMs: 50 });
  await rejects(c.health(), 0, /timed out after 50 ms/);
});

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(ctl) {
      for (const c of chunks) ctl.enqueue(enc.encode(c));
      ctl.close();
    },
  });
}
async function collect(chunks: string[]): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  for await (const e of parseSSE(streamOf(chunks))) out.push(e);
  return out;
}

test('SSE parsing: fields, multi-line data, comments, CRLF, split chunks, ids carried over', async () => {
  const text =
    ': hello\n\n' +
    'id: 5\nevent: put\ndata: {"kind":"record","name":"a","version":5}\n\n' +
    'id: 6\r\nevent: delete\r\ndata: {"kind":"table",\r\ndata: "name":"t","version":6}\r\n\r\n' +
    'event: reset\ndata:\n\n' +
    'data: plain text\n\n' +
    'id: 9\ndata: {"unterminated":true}\n';
  const expected: WatchEvent[] = [
    { id: '5', event: 'put', data: { kind: 'record', name: 'a', version: 5 } },
    { id: '6', event: 'delete', data: { kind: 'table', name: 't', version: 6 } },
    { id: '6', event: 'reset', data: '' },
    { id: '6', event: 'message', data: 'plain text' },
  ];
  assert.deepEqual(await collect([text]), expected);
  // The same bytes cut at every position give the same events.
  for (let i = 1; i < text.length; i += 7) assert.deepEqual(await collect([text.slice(0, i), text.slice(i)]), expected, `cut at ${i}`);
  // One byte at a time, including inside a multi-byte character.
  const utf = 'data: {"name":"café ☕"}\n\n';
  const bytes = new TextEncoder().encode(utf);
  const one = new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const b of bytes) ctl.enqueue(new Uint8Array([b]));
      ctl.close();
    },
  });
  const out: WatchEvent[] = [];
  for await (const e of parseSSE(one)) out.push(e);
  assert.deepEqual(out, [{ event: 'message', data: { name: 'café ☕' } }]);
});

/** Status of GET /watch from its headers alone (an event stream never ends). */
function watchStatus(): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = http.get({ host: '127.0.0.1', port: server.port, path: '/watch?kind=record', headers: { 'Auth-Token': server.token } }, (res) => {
      resolve(res.statusCode ?? 0);
      res.destroy();
    });
    r.on('error', reject);
  });
}

test('watch(): live events when the server has /watch, else a typed 404', async () => {
  const status = await watchStatus();
  if (status === 404 || status === 405) {
    const it = db.watch({ kind: 'record' });
    const err = await rejects(it.next(), 404, /no endpoint/);
    assert.equal(err.unsupported, true);
    return;
  }
  // Written first, then replayed with since 0: no race with the subscription.
  await db.putRecord('w-1', { a: 1 });
  const ac = new AbortController();
  const it = db.watch({ kind: 'record', prefix: 'w-', since: 0, signal: ac.signal });
  const ev = await it.next();
  assert.equal(ev.done, false);
  assert.equal(ev.value!.event, 'put');
  assert.equal((ev.value!.data as { name: string }).name, 'w-1');
  ac.abort();
});

test('number and text calls: put, get, increment, append (also on /variants), delete; a wrong type is a 409', async () => {
  assert.deepEqual(await db.putNumber('cn', 5), { created: true });
  assert.equal(await db.incrNumber('cn', 2), 7);
  assert.equal(await db.getNumber('cn'), 7);
  assert.equal(await db.getVariant('cn'), 7);
  assert.deepEqual(await db.putText('ct', 'ab', { ttl: 60 }), { created: true });
  assert.equal(await db.appendText('ct', 'cé'), 5);
  const { version } = await db.getVariantVersioned('ct');
  assert.equal(await db.append('ct', '!', { ifVersion: version }), 6);
  assert.equal(await db.getText('ct'), 'abcé!');
  await assert.rejects(db.getNumber('ct'), (e: PithosError) => e.status === 409);
  await assert.rejects(db.appendText('cn', 'x'), (e: PithosError) => e.status === 409);
  await db.deleteNumber('cn');
  await db.deleteText('ct');
  await assert.rejects(db.getText('ct'), (e: PithosError) => e.status === 404 && e.message === "variant 'ct' does not exist");
});

test('list calls: put, range, push, pop (count, wait, to), patch, listing, the /list spelling, delete', async () => {
  assert.deepEqual(await db.putList('cl', [1, 2, 3]), { created: true });
  assert.equal(await db.pushList('cl', ['a', 'b'], { side: 'left' }), 5);
  const all = await db.getList('cl');
  assert.deepEqual([all.items, all.length], [['b', 'a', 1, 2, 3], 5]);
  assert.equal(typeof all.version, 'number');
  assert.deepEqual((await db.getList('cl', { start: -2 })).items, [2, 3]);
  assert.deepEqual(await db.popList('cl', { side: 'right', count: 2, to: 'cl2' }), [3, 2]);
  assert.deepEqual(await db.getListQuick('cl2'), [2, 3]);
  assert.equal(await db.patchList('cl', { remove: { value: 'a', count: 0 }, ttl: 60 }), 2);
  const waiting = db.popList('cl3', { waitMs: 5000 });
  await new Promise((r) => setTimeout(r, 50));
  await db.pushList('cl3', ['woke']);
  assert.deepEqual(await waiting, ['woke']);
  const page = await db.listLists({ prefix: 'cl' });
  assert.deepEqual(
    page.items.map((i) => [i.name, (i as { length?: number }).length]),
    [
      ['cl', 2],
      ['cl2', 2],
      ['cl3', 0],
    ],
  );
  await db.deleteList('cl', { ifVersion: (await db.getList('cl')).version });
  await assert.rejects(db.getList('cl'), (e: PithosError) => e.status === 404 && e.message === "list 'cl' does not exist");
  assert.deepEqual(await db.putListQuick('cq', []), { created: true });
  await db.deleteListQuick('cq');
});

test('set calls: put, get (all, a page), add, remove, contains, combine (with and without store), ttl, listing, the /set spelling, delete', async () => {
  assert.deepEqual(await db.putSet('cs-a', ['z', 'x', 'y']), { created: true });
  assert.deepEqual(await db.putSet('cs-a', ['z', 'x', 'y', 'x']), { created: false });
  const all = await db.getSet('cs-a');
  assert.deepEqual([all.members, all.count, all.next], [['x', 'y', 'z'], 3, null]);
  assert.equal(typeof all.version, 'number');
  const page = await db.getSet('cs-a', { limit: 2 });
  assert.deepEqual([page.members, page.next], [['x', 'y'], 'y']);
  assert.deepEqual((await db.getSet('cs-a', { limit: 2, after: 'y' })).members, ['z']);
  assert.deepEqual(await db.setAdd('cs-b', ['y', 'w']), { added: 2, count: 2 }, 'add creates a missing set');
  assert.deepEqual(await db.setAdd('cs-b', ['y', 'v']), { added: 1, count: 3 });
  assert.deepEqual(await db.setRemove('cs-b', ['v', 'nope']), { removed: 1, count: 2 });
  assert.deepEqual(await db.setContains('cs-a', ['x', 'w', 'z']), [true, false, true]);
  await rejects(db.setAdd('cs-none', ['a'], { create: false }), 404, "set 'cs-none' does not exist");

  assert.deepEqual(await db.setCombine('cs-a', 'union', ['cs-b']), { members: ['w', 'x', 'y', 'z'], count: 4 });
  assert.deepEqual(await db.setCombine('cs-a', 'inter', ['cs-b']), { members: ['y'], count: 1 });
  assert.deepEqual(await db.setCombine('cs-a', 'diff', ['cs-b']), { members: ['x', 'z'], count: 2 });
  assert.deepEqual(await db.setCombine('cs-a', 'inter', ['cs-missing']), { members: [], count: 0 }, 'a missing set counts as empty');
  assert.deepEqual(await db.setCombine('cs-a', 'diff', ['cs-b'], 'cs-d'), { count: 2 }, 'with store: the count only');
  assert.deepEqual((await db.getSet('cs-d')).members, ['x', 'z']);
  await rejects(db.setCombine('cs-a', 'union', ['cs-b'], 'cs-d', { ifAbsent: true }), 412, /set 'cs-d' already exists/);
  assert.deepEqual((await db.getSet('cs-d')).members, ['x', 'z'], 'a refused store writes nothing');
  await rejects(db.setCombine('cs-a', 'xor' as never, ['cs-b']), 400, /field 'op' must be union, inter or diff/);

  await db.setSetTtl('cs-a', 600);
  const listed = (await db.listSets({ prefix: 'cs-' })).items;
  assert.deepEqual(
    listed.map((i) => [i.name, i.count]),
    [
      ['cs-a', 3],
      ['cs-b', 2],
      ['cs-d', 2],
    ],
  );
  const ttl = listed[0]!.ttl_ms;
  assert.ok(ttl !== null && ttl > 590_000 && ttl <= 600_000, `ttl_ms ${ttl}`);
  assert.equal(listed[1]!.ttl_ms, null);
  await db.setSetTtl('cs-a', 0);
  assert.equal((await db.listSets({ prefix: 'cs-a' })).items[0]!.ttl_ms, null, 'ttl 0: no expiry again');
  await rejects(db.setSetTtl('cs-none', 60), 404, "set 'cs-none' does not exist");

  assert.deepEqual(await db.putSetQuick('cs-q', ['b', 'a', 'b']), { created: true });
  assert.deepEqual(await db.putSetQuick('cs-q', ['c', 'b', 'a'], { ttl: 600 }), { created: false });
  assert.deepEqual(await db.getSetQuick('cs-q'), ['a', 'b', 'c']);
  assert.deepEqual((await db.getSet('cs-q')).members, ['a', 'b', 'c'], 'one namespace, two spellings');
  assert.ok(((await db.listSets({ prefix: 'cs-q' })).items[0]!.ttl_ms ?? 0) > 590_000, 'the quick spelling takes ttl');
  await db.deleteSetQuick('cs-q');
  await rejects(db.getSetQuick('cs-q'), 404, "set 'cs-q' does not exist");
  await db.deleteSet('cs-a');
  await rejects(db.getSet('cs-a'), 404, "set 'cs-a' does not exist");
  await rejects(db.deleteSet('cs-a'), 404, "set 'cs-a' does not exist");
});

test('sorted-set calls: put, zadd (modes), zincr, zremove, zrange by rank and by score, zmember, ttl, listing, the /zset spelling, delete', async () => {
  assert.deepEqual(await db.putZset('cz', { ann: 10, bob: 7.5, cy: 12 }), { created: true });
  assert.deepEqual(await db.zadd('cz', { ann: 5, dee: 1 }, { mode: 'gt' }), { added: 1, updated: 0, count: 4 });
  assert.deepEqual(await db.zadd('cz', { ann: 11, eve: 3 }, { mode: 'xx' }), { added: 0, updated: 1, count: 4 });
  assert.deepEqual(await db.zadd('cz', { ann: 1, eve: 3 }, { mode: 'nx' }), { added: 1, updated: 0, count: 5 });
  assert.equal(await db.zincr('cz', 'bob', 2.5), 10);
  assert.equal(await db.zincr('cz', 'fay', 4), 4, 'a new member starts at 0');
  assert.deepEqual(await db.zremove('cz', ['fay', 'nobody']), { removed: 1, count: 5 });
  const byRank = await db.zrange('cz');
  assert.deepEqual(
    byRank.items.map((i) => [i.member, i.score]),
    [
      ['dee', 1],
      ['eve', 3],
      ['bob', 10],
      ['ann', 11],
      ['cy', 12],
    ],
  );
  assert.equal(byRank.count, 5);
  assert.equal(typeof byRank.version, 'number');
  assert.deepEqual(
    (await db.zrange('cz', { start: 0, stop: 1, rev: true })).items.map((i) => i.member),
    ['cy', 'ann'],
  );
  const byScore = await db.zrange('cz', { by: 'score', min: '(3', max: 11 });
  assert.deepEqual([byScore.items.map((i) => i.member), byScore.count], [['bob', 'ann'], 5]);
  assert.deepEqual(
    (await db.zrange('cz', { by: 'score', min: '-inf', max: '+inf', offset: 1, limit: 2, rev: true })).items.map((i) => i.member),
    ['ann', 'bob'],
  );
  assert.deepEqual(
    (await db.zrange('cz', { by: 'score', min: -Infinity, max: Infinity })).items.map((i) => i.member),
    ['dee', 'eve', 'bob', 'ann', 'cy'],
    'the numbers ±Infinity are the bounds -inf and +inf',
  );
  assert.deepEqual(await db.zmember('cz', 'bob'), { score: 10, rank: 2, rev_rank: 2 });
  await rejects(db.zmember('cz', 'zed'), 404, `"zed" is not a member of zset 'cz'`);
  await db.zincr('cz', 'big', 1e308);
  await rejects(db.zincr('cz', 'big', 1e308), 409, /./);
  assert.equal((await db.zmember('cz', 'big')).score, 1e308, 'a refused incr changes nothing');
  await rejects(db.zadd('cz-none', { a: 1 }, { create: false }), 404, "zset 'cz-none' does not exist");
  await rejects(db.zincr('cz-none', 'a', 1, { create: false }), 404, "zset 'cz-none' does not exist");

  await db.setZsetTtl('cz', 600);
  const listed = (await db.listZsets({ prefix: 'cz' })).items;
  assert.deepEqual(
    listed.map((i) => [i.name, i.count]),
    [['cz', 6]],
  );
  const ttl = listed[0]!.ttl_ms;
  assert.ok(ttl !== null && ttl > 590_000 && ttl <= 600_000, `ttl_ms ${ttl}`);
  await db.setZsetTtl('cz', 0);
  assert.equal((await db.listZsets({ prefix: 'cz' })).items[0]!.ttl_ms, null);

  assert.deepEqual(await db.putZsetQuick('cz-q', { b: 2, a: 2, c: 1 }), { created: true });
  const quick = await db.getZsetQuick('cz-q');
  assert.deepEqual(quick, { c: 1, a: 2, b: 2 });
  assert.deepEqual(Object.keys(quick), ['c', 'a', 'b'], 'score order, ties by member');
  assert.deepEqual(await db.putZsetQuick('cz-q', { a: 1 }, { ttl: 600 }), { created: false });
  assert.deepEqual((await db.zrange('cz-q')).items, [{ member: 'a', score: 1 }], 'one namespace, two spellings');
  await db.deleteZsetQuick('cz-q');
  await rejects(db.getZsetQuick('cz-q'), 404, "zset 'cz-q' does not exist");
  await db.deleteZset('cz');
  await rejects(db.zrange('cz'), 404, "zset 'cz' does not exist");
});

test('conditional set and sorted-set writes: a stale ifVersion is a 412 and changes nothing; the current one writes', async () => {
  await db.putSet('cv-s', ['a']);
  const v1 = (await db.getSet('cv-s')).version as number;
  await rejects(db.setAdd('cv-s', ['b'], { ifVersion: v1 + 1 }), 412, `set 'cv-s' changed (version ${v1})`);
  await rejects(db.setSetTtl('cv-s', 600, { ifVersion: v1 + 1 }), 412, `set 'cv-s' changed (version ${v1})`);
  await rejects(db.deleteSet('cv-s', { ifVersion: v1 + 1 }), 412, `set 'cv-s' changed (version ${v1})`);
  assert.deepEqual((await db.getSet('cv-s')).members, ['a']);
  assert.equal((await db.listSets({ prefix: 'cv-s' })).items[0]!.ttl_ms, null, 'the refused ttl was not set');
  await db.setSetTtl('cv-s', 600, { ifVersion: v1 });
  const v2 = (await db.getSet('cv-s')).version as number;
  assert.ok(v2 > v1, `a ttl change is a write: version ${v1} -> ${v2}`);
  await rejects(db.setRemove('cv-s', ['a'], { ifVersion: v1 }), 412, `set 'cv-s' changed (version ${v2})`);
  await rejects(db.deleteSet('cv-s', { ifVersion: v1 }), 412, `set 'cv-s' changed (version ${v2})`);
  await db.deleteSet('cv-s', { ifVersion: v2 });
  await rejects(db.getSet('cv-s'), 404, "set 'cv-s' does not exist");
  await rejects(db.deleteSet('cv-s', { ifVersion: v2 }), 412, `set 'cv-s' does not exist (expected version ${v2})`);

  await db.putZset('cv-z', { a: 1 });
  const z1 = (await db.zrange('cv-z')).version as number;
  await rejects(db.zadd('cv-z', { b: 2 }, { ifVersion: z1 + 1 }), 412, `zset 'cv-z' changed (version ${z1})`);
  await rejects(db.zincr('cv-z', 'a', 1, { ifVersion: z1 + 1 }), 412, `zset 'cv-z' changed (version ${z1})`);
  await rejects(db.setZsetTtl('cv-z', 600, { ifVersion: z1 + 1 }), 412, `zset 'cv-z' changed (version ${z1})`);
  await rejects(db.deleteZset('cv-z', { ifVersion: z1 + 1 }), 412, `zset 'cv-z' changed (version ${z1})`);
  assert.deepEqual((await db.zrange('cv-z')).items, [{ member: 'a', score: 1 }]);
  assert.equal((await db.listZsets({ prefix: 'cv-z' })).items[0]!.ttl_ms, null, 'the refused ttl was not set');
  await db.setZsetTtl('cv-z', 600, { ifVersion: z1 });
  const z2 = (await db.zrange('cv-z')).version as number;
  assert.ok(z2 > z1, `a ttl change is a write: version ${z1} -> ${z2}`);
  await rejects(db.zremove('cv-z', ['a'], { ifVersion: z1 }), 412, `zset 'cv-z' changed (version ${z2})`);
  await rejects(db.deleteZset('cv-z', { ifVersion: z1 }), 412, `zset 'cv-z' changed (version ${z2})`);
  await db.deleteZset('cv-z', { ifVersion: z2 });
  await rejects(db.zrange('cv-z'), 404, "zset 'cv-z' does not exist");
});
