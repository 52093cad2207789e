/** Black-box tests of the HTTP layer: auth, content types, bodies, limits, paths, names, health. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, statfsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { exchange, reqBytes } from '../helpers/raw.js';
import { JSON_CT, PithosServer, STORE, expectError, expectSuccess, rawRequest, uniq, type Res } from '../helpers/server.js';

const LIMIT = 1024;
let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start({ testClock: false, args: ['--max-body-bytes', String(LIMIT)] });
});
after(async () => {
  await srv?.close();
});

// docs/api.md, "Authentication": the 401 message says whether the header was missing or the token wrong.
const MISSING = 'missing Auth-Token header';
const WRONG = 'wrong Auth-Token';

function expect401(r: Res, label: string, message: string): void {
  const unauth = { status: 'error', message };
  assert.equal(r.status, 401, `${label}: ${r.status} ${r.raw}`);
  assert.equal(r.headers['content-type'], JSON_CT, `${label}: content-type`);
  assert.deepEqual(r.body, unauth, `${label}: body ${r.raw}`);
  assert.equal(r.raw, JSON.stringify(unauth), `${label}: exact bytes`);
}

/** Send a raw path (not normalised by any URL parser). */
function rawPath(method: string, p: string, body?: unknown): Promise<Res> {
  return srv.req(method, p, body);
}

// ---------------------------------------------------------------- auth

test('missing or wrong Auth-Token → 401 exactly {"status":"error","message":"missing Auth-Token header" | "wrong Auth-Token"} on every path', async () => {
  const paths: [string, string, unknown?][] = [
    ['GET', '/health'],
    ['GET', '/'],
    ['GET', '/nope/nothing'],
    ['PUT', '/tables/a'],
    ['GET', '/tables/a'],
    ['POST', '/tables/a/rows', { rows: {} }],
    ['GET', '/tables/a/rows', { wheres: {} }],
    ['POST', '/tables/a/query', { wheres: {} }],
    ['PATCH', '/tables/a', { wheres: {}, sets: {} }],
    ['DELETE', '/tables/a/rows', { wheres: {} }],
    ['DELETE', '/tables/a'],
    ['PUT', '/records/a', { record: {} }],
    ['GET', '/records/a'],
    ['POST', '/records/a', { column: 'x' }],
    ['DELETE', '/records/a'],
    ['PUT', '/table/a', { table: {} }],
    ['GET', '/table/a'],
    ['DELETE', '/table/a'],
    ['PUT', '/variants/a', { variant: 1 }],
    ['POST', '/variants/a', { delta: 1 }],
    ['GET', '/variants/a'],
    ['DELETE', '/variants/a'],
    ['PUT', '/locks/a', { ttl: 5 }],
    ['PATCH', '/locks/a', { token: 'x' }],
    ['GET', '/locks/a'],
    ['DELETE', '/locks/a', { token: 'x' }],
    ['POST', '/_test/clock', { advance_ms: 1 }],
    // wrong method, bad names, bad bodies: auth comes first
    ['POST', '/health'],
    ['PATCH', '/table/a'],
    ['GET', '/tables/%00'],
    ['GET', '/tables/..'],
    ['PUT', '/records/a', '{not json'],
  ];
  // An empty value counts as missing (what an unset shell variable sends).
  const wrongs: [Record<string, string | null>, string][] = [
    [{ 'Auth-Token': null }, MISSING],
    [{ 'Auth-Token': 'wrong' }, WRONG],
    [{ 'Auth-Token': '' }, MISSING],
    [{ 'Auth-Token': `${srv.token}x` }, WRONG],
    [{ 'Auth-Token': srv.token.slice(0, -1) }, WRONG],
    [{ 'Auth-Token': srv.token.toUpperCase() === srv.token ? srv.token.toLowerCase() : srv.token.toUpperCase() }, WRONG],
    [{ 'Auth-Token': null, Authorization: `Bearer ${srv.token}` }, MISSING],
  ];
  for (const [m, p, b] of paths) {
    for (const [h, message] of wrongs) {
      expect401(await srv.req(m, p, b, h), `${m} ${p} ${JSON.stringify(h)}`, message);
    }
  }
});

test('nothing is processed before auth: a rejected PUT creates nothing', async () => {
  const t = uniq('noauth');
  expect401(await srv.req('PUT', `/tables/${t}`, undefined, { 'Auth-Token': 'wrong' }), 'PUT table', WRONG);
  expect401(await srv.req('PUT', `/records/${t}`, { record: { a: 1 } }, { 'Auth-Token': null }), 'PUT record', MISSING);
  expect401(await srv.req('PUT', `/variants/${t}`, { variant: 1 }, { 'Auth-Token': 'nope' }), 'PUT variant', WRONG);
  expect401(await srv.req('PUT', `/locks/${t}`, { ttl: 50 }, { 'Auth-Token': 'nope' }), 'PUT lock', WRONG);
  expectError(await srv.req('GET', `/tables/${t}`), 404);
  expectError(await srv.req('GET', `/records/${t}`), 404);
  expectError(await srv.req('GET', `/variants/${t}`), 404);
  expectError(await srv.req('GET', `/locks/${t}`), 404);
  // with existing objects: wrong-token writes change nothing
  expectSuccess(await srv.req('PUT', `/variants/${t}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expect401(await srv.req('POST', `/variants/${t}`, { delta: 5 }, { 'Auth-Token': 'nope' }), 'POST variant', WRONG);
  expect401(await srv.req('DELETE', `/variants/${t}`, undefined, { 'Auth-Token': 'nope' }), 'DELETE variant', WRONG);
  expectSuccess(await srv.req('GET', `/variants/${t}`), 200, 'variant queried successfully', { variant: 1 });
  // an oversized body without a valid token is still a 401 (auth is checked first)
  const big = JSON.stringify({ record: { s: 'x'.repeat(LIMIT * 2) } });
  const r = await rawRequest({
    port: srv.port,
    method: 'PUT',
    path: `/records/${t}`,
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(big) },
    body: Buffer.from(big),
    agent: false,
  });
  expect401(r, 'oversized PUT without token', MISSING);
  expectError(await srv.req('GET', `/records/${t}`), 404);
});

test('header name is case-insensitive (auth-token / AUTH-TOKEN)', async () => {
  for (const name of ['auth-token', 'AUTH-TOKEN']) {
    const r = await srv.req('GET', '/health', undefined, { 'Auth-Token': null, [name]: srv.token });
    assert.equal(r.status, 200, `${name}: ${r.raw}`);
  }
});

test('a non-ASCII token matches its UTF-8 bytes; a near miss of the same length does not', async () => {
  const token = 'pässwörd-日本';
  const s = await PithosServer.start({ token, testClock: false });
  try {
    // node:http refuses header strings above U+00FF: send the UTF-8 bytes, one per char.
    const wire = (t: string) => Buffer.from(t, 'utf8').toString('latin1');
    assert.equal((await s.req('GET', '/health', undefined, { 'Auth-Token': wire(token) })).status, 200);
    expectError(await s.req('GET', '/health', undefined, { 'Auth-Token': wire('pässwörd-日末') }), 401, 'wrong Auth-Token');
    expectError(await s.req('GET', '/health', undefined, { 'Auth-Token': wire(token).slice(1) }), 401, 'wrong Auth-Token');
  } finally {
    await s.close();
  }
});

// ---------------------------------------------------------------- content type and bodies

test('every response is application/json; charset=utf-8 with a JSON envelope', async () => {
  const samples: Res[] = [
    await srv.req('GET', '/health'),
    await srv.req('GET', '/nope'),
    await srv.req('POST', '/health'),
    await srv.req('GET', '/health', undefined, { 'Auth-Token': null }),
    await srv.req('PUT', '/records/ct', '{bad'),
    await srv.req('PUT', '/records/ct', { record: { a: 1 } }),
    await srv.req('GET', '/records/ct'),
    await srv.req('GET', '/tables/%00'),
    await srv.req('PUT', '/records/ct2', { record: { s: 'x'.repeat(LIMIT + 10) } }, {}),
  ];
  for (const r of samples) {
    assert.equal(r.headers['content-type'], JSON_CT, `${r.status} ${r.raw}`);
    assert.ok(r.body && typeof r.body === 'object' && !Array.isArray(r.body), r.raw);
    assert.ok(r.body.status === 'success' || r.body.status === 'error', r.raw);
    assert.equal(typeof r.body.message, 'string');
    if (r.body.status === 'error') assert.ok(!('data' in r.body), `error carries data: ${r.raw}`);
  }
});

test('bodies are parsed as JSON whatever the Content-Type (curl -d), or without one', async () => {
  const id = uniq('form');
  const body = JSON.stringify({ record: { via: 'form' } });
  let r = await srv.req('PUT', `/records/${id}`, body, { 'Content-Type': 'application/x-www-form-urlencoded' });
  expectSuccess(r, 201, 'record created successfully');
  r = await srv.req('GET', `/records/${id}`);
  expectSuccess(r, 200, 'record queried successfully', { via: 'form' });
  r = await srv.req('PUT', `/records/${id}`, JSON.stringify({ record: { via: 'text' } }), { 'Content-Type': 'text/plain' });
  expectSuccess(r, 200, 'record created successfully');
  r = await srv.req('PUT', `/records/${id}`, JSON.stringify({ record: { via: 'none' } }), { 'Content-Type': null });
  expectSuccess(r, 200, 'record created successfully');
  expectSuccess(await srv.req('GET', `/records/${id}`), 200, 'record queried successfully', { via: 'none' });
  // a GET with a form content type and a body
  const t = uniq('formt');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  expectSuccess(
    await srv.req('POST', `/tables/${t}/rows`, '{"rows":{"a":1}}', { 'Content-Type': 'application/x-www-form-urlencoded' }),
    201,
    'table rows insert successfully',
    { t_id: 1 },
  );
  expectSuccess(
    await srv.req('GET', `/tables/${t}/rows`, '{"wheres":{"a":1}}', { 'Content-Type': 'application/x-www-form-urlencoded' }),
    200,
    'table queried rows successfully',
    [{ a: 1 }],
  );
});

test('GET and DELETE bodies are read, also chunked, and keep-alive connections stay in sync', async () => {
  const t = uniq('chunk');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const send = (method: string, p: string, parts: string[]): Promise<Res> =>
      new Promise((resolve, reject) => {
        const rq = http.request(
          {
            host: '127.0.0.1',
            port: srv.port,
            method,
            path: p,
            agent,
            headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const raw = Buffer.concat(chunks).toString('utf8');
              resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw ? JSON.parse(raw) : undefined, raw });
            });
          },
        );
        rq.on('error', reject);
        for (const p2 of parts) rq.write(p2);
        rq.end();
      });
    expectSuccess(await send('PUT', `/tables/${t}`, []), 201, 'table created successfully');
    expectSuccess(await send('POST', `/tables/${t}/rows`, ['{"rows":', '{"k":1}}']), 201, 'table rows insert successfully', { t_id: 1 });
    expectSuccess(await send('POST', `/tables/${t}/rows`, ['{"rows":{"k":2}', '}']), 201, 'table rows insert successfully', { t_id: 2 });
    expectSuccess(await send('GET', `/tables/${t}/rows`, ['{"wheres"', ':{"k":2}}']), 200, 'table queried rows successfully', [{ k: 2 }]);
    expectSuccess(await send('DELETE', `/tables/${t}/rows`, ['{"wheres":', '{"k":1}}']), 200, 'table rows remove successfully');
    // an unexpected body on a GET that takes none is read and ignored; the connection stays usable
    expectSuccess(await send('GET', `/tables/${t}`, ['{"junk":', '[1,2,3]}']), 200, 'table queried successfully', { '2': { k: 2 } });
    const r = await rawRequest({
      port: srv.port,
      method: 'GET',
      path: `/tables/${t}`,
      headers: { 'Auth-Token': srv.token, 'Content-Length': 13 },
      body: Buffer.from('{"ignored":1}'),
      agent,
    });
    expectSuccess(r, 200, 'table queried successfully', { '2': { k: 2 } });
    expectSuccess(await send('GET', `/tables/${t}`, []), 200, 'table queried successfully', { '2': { k: 2 } });
  } finally {
    agent.destroy();
  }
});

test('empty body equals "no fields"', async () => {
  const t = uniq('empty');
  expectSuccess(await srv.req('PUT', `/tables/${t}`, '', { 'Content-Length': 0 }), 201, 'table created successfully');
  expectSuccess(await srv.req('GET', `/tables/${t}`, '', { 'Content-Length': 0 }), 200, 'table queried successfully', {});
  // no fields means the required ones are missing
  expectError(await srv.req('PUT', `/records/${t}`, '', { 'Content-Length': 0 }), 400);
  expectError(await srv.req('DELETE', `/tables/${t}/rows`, '', { 'Content-Length': 0 }), 400);
  expectError(await srv.req('PUT', `/locks/${t}`, ''), 400);
});

test('malformed JSON → 400 and nothing created', async () => {
  const bad = ['{', '{"a":}', 'nope', '{"ttl": 1,}', "{'a':1}", '{"a":1} trailing', '{"a":1}{"b":2}', '\u0000', '{"a":"\\x"}', 'NaN'];
  for (const text of bad) {
    const t = uniq('malformed');
    const r = await srv.req('PUT', `/tables/${t}`, text);
    assert.equal(r.status, 400, `PUT table with body ${JSON.stringify(text)}: ${r.status} ${r.raw}`);
    expectError(r, 400);
    expectError(await srv.req('GET', `/tables/${t}`), 404);
  }
  expectError(await srv.req('GET', '/tables/x/rows', '{"wheres":'), 400);
});

test('body over --max-body-bytes → 413, nothing stored; exactly at the limit is accepted', async () => {
  const id = uniq('big');
  const pad = (n: number) => {
    const base = JSON.stringify({ record: { s: '' } });
    return JSON.stringify({ record: { s: 'x'.repeat(n - base.length) } });
  };
  const atLimit = pad(LIMIT);
  assert.equal(Buffer.byteLength(atLimit), LIMIT);
  const over = pad(LIMIT + 1);
  let r = await rawRequest({
    port: srv.port,
    method: 'PUT',
    path: `/records/${id}`,
    headers: { 'Auth-Token': srv.token, 'Content-Length': LIMIT + 1 },
    body: Buffer.from(over),
    agent: false,
  });
  expectError(r, 413);
  expectError(await srv.req('GET', `/records/${id}`), 404);
  // chunked, no Content-Length
  r = await new Promise<Res>((resolve, reject) => {
    const rq = http.request(
      { host: '127.0.0.1', port: srv.port, method: 'PUT', path: `/records/${id}`, agent: false, headers: { 'Auth-Token': srv.token } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
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
      },
    );
    rq.on('error', reject);
    const text = pad(LIMIT * 3);
    rq.write(text.slice(0, 1000));
    rq.write(text.slice(1000, 2000));
    rq.end(text.slice(2000));
  });
  expectError(r, 413);
  expectError(await srv.req('GET', `/records/${id}`), 404);
  // exactly LIMIT bytes is not over the limit
  expectSuccess(await srv.req('PUT', `/records/${id}`, atLimit), 201, 'record created successfully');
  // a too-large replace leaves the old value
  expectError(
    await rawRequest({
      port: srv.port,
      method: 'PUT',
      path: `/records/${id}`,
      headers: { 'Auth-Token': srv.token, 'Content-Length': LIMIT + 1 },
      body: Buffer.from(over),
      agent: false,
    }),
    413,
  );
  expectSuccess(await srv.req('GET', `/records/${id}`), 200, 'record queried successfully', JSON.parse(atLimit).record);
  // still serving
  assert.equal((await srv.req('GET', '/health')).status, 200);
});

test('JSON nesting: 64 levels accepted, 65 → 400, very deep → 400, server stays up', async () => {
  const id = uniq('deep');
  // the request body itself is level 1: {"record": {"a": ... 1}} with n − 1 nested objects below it
  const body = (n: number) => `{"record":${'{"a":'.repeat(n - 1)}1${'}'.repeat(n - 1)}}`;
  const body64 = body(64);
  assert.equal(maxDepth(JSON.parse(body64)), 64);
  expectSuccess(await srv.req('PUT', `/records/${id}`, body64), 201, 'record created successfully');
  const body65 = body(65);
  assert.equal(maxDepth(JSON.parse(body65)), 65);
  expectError(await srv.req('PUT', `/records/${id}`, body65), 400);
  const arr65 = `{"record":{"a":${'['.repeat(63)}${']'.repeat(63)}}}`;
  assert.equal(maxDepth(JSON.parse(arr65)), 65);
  expectError(await srv.req('PUT', `/records/${id}`, arr65), 400);
  // stored value unchanged by the rejected replaces
  expectSuccess(await srv.req('GET', `/records/${id}`), 200, 'record queried successfully', JSON.parse(body64).record);
  // deeper still (within the 1 KiB limit), in wheres of a GET
  const t = uniq('deept');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  expectError(await srv.req('GET', `/tables/${t}/rows`, `{"wheres":{"a":${'['.repeat(400)}${']'.repeat(400)}}}`), 400);
  expectError(await srv.req('PUT', `/records/${id}x`, '['.repeat(1000)), 400);
  assert.equal((await srv.req('GET', '/health')).status, 200);
});

function maxDepth(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  const kids = Array.isArray(v) ? v : Object.values(v as object);
  return 1 + kids.reduce<number>((m, k) => Math.max(m, maxDepth(k)), 0);
}

// ---------------------------------------------------------------- paths and methods

test('unknown paths → 404', async () => {
  // '/tables', '/records', '/variants' and '/locks' are known paths (docs/api.md "List names");
  // '/tables/a/rows/1' is one row (docs/api.md "One row by `t_id`").
  for (const p of [
    '/',
    '/nope',
    '/tables/a/b',
    '/tables/a/rows/1/x',
    '/tables/a/indexes/f/g',
    '/records/a/b',
    '/health/x',
    '/table',
    '/_test/clock',
    '/TABLES/a',
    '/api/tables/a',
  ]) {
    for (const m of ['GET', 'POST']) {
      const r = await rawPath(m, p, m === 'POST' ? { advance_ms: 1 } : undefined);
      assert.equal(r.status, 404, `${m} ${p}: ${r.status} ${r.raw}`);
      expectError(r, 404);
    }
  }
});

test('the test clock path is a 404 without PITHOS_TEST_CLOCK', async () => {
  expectError(await srv.req('POST', '/_test/clock', { advance_ms: 1000 }), 404);
});

test('known path, wrong method → 405 with an Allow header listing the right methods', async () => {
  const cases: [string, string[]][] = [
    ['/health', ['GET']],
    ['/tables/x', ['PUT', 'GET', 'PATCH', 'DELETE']],
    ['/tables/x/rows', ['POST', 'GET', 'DELETE']],
    ['/tables/x/query', ['POST']],
    ['/records/x', ['PUT', 'GET', 'POST', 'PATCH', 'DELETE']],
    ['/table/x', ['PUT', 'GET', 'DELETE']],
    ['/variants/x', ['PUT', 'POST', 'GET', 'PATCH', 'DELETE']],
    ['/locks/x', ['PUT', 'PATCH', 'DELETE', 'GET']],
    ['/tables', ['GET']],
    ['/records', ['GET']],
    ['/variants', ['GET']],
    ['/locks', ['GET']],
    ['/tables/x/indexes', ['GET']],
    ['/tables/x/indexes/f', ['PUT', 'DELETE']],
  ];
  const all = ['GET', 'PUT', 'POST', 'PATCH', 'DELETE'];
  for (const [p, allowed] of cases) {
    for (const m of all.filter((x) => !allowed.includes(x))) {
      const r = await srv.req(m, p, {});
      assert.equal(r.status, 405, `${m} ${p}: ${r.status} ${r.raw}`);
      expectError(r, 405);
      const allow = String(r.headers['allow'] ?? '')
        .split(',')
        .map((s) => s.trim().toUpperCase())
        .filter((s) => s && s !== 'HEAD' && s !== 'OPTIONS');
      assert.deepEqual(allow.sort(), [...allowed].sort(), `Allow for ${m} ${p}: ${r.headers['allow']}`);
    }
  }
});

test('HEAD is answered wherever GET is: the same status and headers, no body; Allow lists it', async () => {
  const name = uniq('head');
  expectSuccess(await srv.req('PUT', `/records/${name}`, { record: { a: 1 } }), 201, 'record created successfully');
  const g = await srv.req('GET', `/records/${name}`);
  const h = await srv.req('HEAD', `/records/${name}`);
  assert.equal(h.status, 200);
  assert.equal(h.raw, '');
  assert.equal(h.headers.etag, g.headers.etag);
  assert.equal(h.headers['content-type'], g.headers['content-type']);
  assert.equal((await srv.req('HEAD', `/records/${uniq('none')}`)).status, 404);
  assert.equal((await srv.req('HEAD', '/health')).status, 200);
  assert.equal((await srv.req('HEAD', `/records/${name}`, undefined, { 'Auth-Token': null })).status, 401);
  const r = await srv.req('PATCH', '/tables');
  assert.equal(r.status, 405);
  assert.equal(r.headers.allow, 'GET, HEAD');
  // Where there is no GET, HEAD is a 405 like any other method.
  assert.equal((await srv.req('HEAD', '/txns')).status, 405);
});

test('HEAD /watch: the headers of the stream, then the answer ends (the connection serves the next request)', async () => {
  const x = await exchange(srv.port, reqBytes('HEAD', '/watch', srv.token) + reqBytes('GET', '/health', srv.token), { waitMs: 3000 });
  const heads = x.data.split('HTTP/1.1 ').slice(1);
  assert.ok(heads.length >= 1 && heads[0].startsWith('200'), `HEAD /watch answered: ${JSON.stringify(x.data.slice(0, 200))}`);
  assert.match(heads[0], /text\/event-stream/i);
  assert.equal(heads.length, 2, `the next request on the connection is answered: ${JSON.stringify(x.data.slice(0, 400))}`);
  assert.ok(heads[1].startsWith('200'));
});

// ---------------------------------------------------------------- names

test('unicode and percent-encoded names (%2F, %20) are one segment, decoded', async () => {
  const names = ['ünï☃😀', 'a/b', 'a b', 'a/b c', '%41', 'x?y', 'a#b', 'semi;colon', '../x', '..\\..\\x', '/'];
  for (const n of names) {
    const e = encodeURIComponent(n);
    expectSuccess(await srv.req('PUT', `/tables/${e}`), 201, 'table created successfully');
    expectSuccess(await srv.req('POST', `/tables/${e}/rows`, { rows: { n } }), 201, 'table rows insert successfully', { t_id: 1 });
    expectSuccess(await srv.req('GET', `/tables/${e}`), 200, 'table queried successfully', { '1': { n } });
    expectSuccess(await srv.req('PUT', `/records/${e}`, { record: { n } }), 201, 'record created successfully');
    expectSuccess(await srv.req('GET', `/table/${e}`), 200, 'record queried successfully', { n });
    expectSuccess(await srv.req('PUT', `/variants/${e}`, { variant: n }), 201, 'variant created successfully', { variant: n });
    const lr = await srv.req('PUT', `/locks/${e}`, { ttl: 60 });
    assert.equal(lr.status, 201, `lock ${n}: ${lr.raw}`);
    const held = await srv.req('PUT', `/locks/${e}`, { ttl: 60 });
    expectError(held, 423, `lock '${n}' is held`);
  }
  // 'a/b' (encoded) is not 'a' + '/b'
  expectError(await srv.req('GET', '/records/a'), 404);
  // the unicode name is stored decoded
  expectSuccess(await srv.req('GET', `/records/${encodeURIComponent('ünï☃😀')}`), 200, 'record queried successfully', { n: 'ünï☃😀' });
  // an encoded %41 is the three characters "%41", not "A"
  expectError(await srv.req('GET', '/records/A'), 404);
  // 409 message names the decoded table
  expectError(await srv.req('PUT', `/tables/${encodeURIComponent('a/b c')}`), 409, "table 'a/b c' already exists");
});

test('names: 255 bytes ok, 256 bytes → 400 (bytes of UTF-8, not characters)', async () => {
  const ok = ['a'.repeat(255), 'é'.repeat(127) + 'a', '😀'.repeat(63) + 'abc'];
  const bad = ['a'.repeat(256), 'é'.repeat(128), '😀'.repeat(64)];
  for (const n of ok) assert.equal(Buffer.byteLength(n), 255);
  for (const n of bad) assert.equal(Buffer.byteLength(n), 256);
  for (const n of ok) {
    const e = encodeURIComponent(n);
    expectSuccess(await srv.req('PUT', `/tables/${e}`), 201, 'table created successfully');
    expectSuccess(await srv.req('PUT', `/records/${e}`, { record: {} }), 201, 'record created successfully');
    expectSuccess(await srv.req('PUT', `/variants/${e}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
    assert.equal((await srv.req('PUT', `/locks/${e}`, { ttl: 5 })).status, 201);
  }
  for (const n of bad) {
    const e = encodeURIComponent(n);
    for (const [m, p, b] of [
      ['PUT', `/tables/${e}`, undefined],
      ['GET', `/tables/${e}`, undefined],
      ['POST', `/tables/${e}/rows`, { rows: {} }],
      ['PUT', `/records/${e}`, { record: {} }],
      ['GET', `/records/${e}`, undefined],
      ['PUT', `/table/${e}`, { table: {} }],
      ['PUT', `/variants/${e}`, { variant: 1 }],
      ['GET', `/variants/${e}`, undefined],
      ['PUT', `/locks/${e}`, { ttl: 5 }],
      ['GET', `/locks/${e}`, undefined],
    ] as const) {
      const r = await srv.req(m, p, b);
      assert.equal(r.status, 400, `${m} ${n.length} chars / 256 bytes: ${r.status} ${r.raw.slice(0, 200)}`);
      expectError(r, 400);
    }
  }
});

test('names "." and ".." (raw and encoded) → 400', async () => {
  for (const seg of ['.', '..', '%2E', '%2E%2E', '%2e%2e', '.%2E']) {
    for (const [m, p, b] of [
      ['PUT', `/tables/${seg}`, undefined],
      ['GET', `/tables/${seg}`, undefined],
      ['POST', `/tables/${seg}/rows`, { rows: {} }],
      ['PUT', `/records/${seg}`, { record: {} }],
      ['GET', `/table/${seg}`, undefined],
      ['PUT', `/variants/${seg}`, { variant: 1 }],
      ['PUT', `/locks/${seg}`, { ttl: 5 }],
    ] as const) {
      const r = await rawPath(m, p, b);
      assert.equal(r.status, 400, `${m} ${p}: ${r.status} ${r.raw}`);
      expectError(r, 400);
    }
  }
  // names that merely contain dots are fine
  for (const n of ['...', '.a', 'a..b']) {
    expectSuccess(await srv.req('PUT', `/records/${encodeURIComponent(n)}`, { record: {} }), 201, 'record created successfully');
  }
});

test('control characters in names (%00, %01, %0A, %1F, %7F) → 400', async () => {
  for (const c of ['%00', '%01', '%0A', '%0D', '%1F', '%7F', 'a%00b', 'ab%7F']) {
    for (const [m, p, b] of [
      ['PUT', `/tables/${c}`, undefined],
      ['PUT', `/records/${c}`, { record: {} }],
      ['GET', `/table/${c}`, undefined],
      ['PUT', `/variants/${c}`, { variant: 1 }],
      ['PUT', `/locks/${c}`, { ttl: 5 }],
    ] as const) {
      const r = await rawPath(m, p, b);
      assert.equal(r.status, 400, `${m} ${p}: ${r.status} ${r.raw}`);
      expectError(r, 400);
    }
  }
  // U+0080..U+009F are not in the forbidden set (only U+0000–U+001F and U+007F)
  expectSuccess(await srv.req('PUT', `/records/${encodeURIComponent('a\u0085b')}`, { record: {} }), 201, 'record created successfully');
});

test('malformed percent-encoding in a name → 400 (bad name), never 500', async () => {
  for (const p of ['/records/%ZZ', '/records/a%', '/records/%E2%98', '/records/%FF']) {
    const r = await rawPath('GET', p);
    assert.equal(r.status, 400, `GET ${p}: ${r.status} ${r.raw}`);
    expectError(r, 400);
  }
});

test('the four namespaces are separate (same name in each)', async () => {
  const n = uniq('shared');
  expectSuccess(await srv.req('PUT', `/tables/${n}`), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', `/records/${n}`, { record: { r: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', `/variants/${n}`, { variant: 7 }), 201, 'variant created successfully', { variant: 7 });
  const lk = await srv.req('PUT', `/locks/${n}`, { ttl: 60 });
  assert.equal(lk.status, 201, lk.raw);
  expectSuccess(await srv.req('GET', `/tables/${n}`), 200, 'table queried successfully', {});
  expectSuccess(await srv.req('GET', `/records/${n}`), 200, 'record queried successfully', { r: 1 });
  expectSuccess(await srv.req('GET', `/variants/${n}`), 200, 'variant queried successfully', { variant: 7 });
  assert.equal((await srv.req('GET', `/locks/${n}`)).body.data.held, true);
  // deleting one leaves the others
  expectSuccess(await srv.req('DELETE', `/records/${n}`), 200, 'record deleted successfully');
  expectSuccess(await srv.req('GET', `/tables/${n}`), 200, 'table queried successfully', {});
  expectSuccess(await srv.req('GET', `/variants/${n}`), 200, 'variant queried successfully', { variant: 7 });
  expectSuccess(await srv.req('DELETE', `/tables/${n}`), 200, 'table deleted successfully');
  expectSuccess(await srv.req('GET', `/variants/${n}`), 200, 'variant queried successfully', { variant: 7 });
  assert.equal((await srv.req('GET', `/locks/${n}`)).status, 200);
  // a record created under a table's name does not resurrect the table
  expectSuccess(await srv.req('PUT', `/table/${n}`, { table: { q: 1 } }), 201, 'record created successfully');
  expectError(await srv.req('GET', `/tables/${n}`), 404);
});

test('error messages name the thing and the reason (docs/api.md, Errors)', async () => {
  const n = uniq('msg');
  expectSuccess(await srv.req('PUT', `/tables/${n}`), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', `/records/${n}`, { record: { a: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', `/variants/${n}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  const cases: [string, string, unknown, number, string][] = [
    ['GET', `/tables/${n}x`, undefined, 404, `${n}x`],
    ['GET', `/records/${n}x`, undefined, 404, `${n}x`],
    ['GET', `/variants/${n}x`, undefined, 404, `${n}x`],
    ['GET', `/locks/${n}x`, undefined, 404, `${n}x`],
    ['GET', `/tables/${n}/rows`, {}, 400, 'wheres'],
    ['PATCH', `/tables/${n}`, { wheres: {} }, 400, 'sets'],
    ['POST', `/tables/${n}/rows`, {}, 400, 'rows'],
    ['GET', `/tables/${n}/rows`, { wheres: { a: { $nope: 1 } } }, 400, '$nope'],
    ['PUT', `/tables/${n}y`, { ttl: -1 }, 400, 'ttl'],
    ['PUT', `/records/${n}y`, {}, 400, 'record'],
    ['POST', `/records/${n}`, {}, 400, 'column'],
    ['PUT', `/variants/${n}y`, { variant: null }, 400, 'variant'],
    ['POST', `/variants/${n}`, {}, 400, 'delta'],
    ['PUT', `/locks/${n}`, {}, 400, 'ttl'],
    ['PUT', `/locks/${n}`, { ttl: 5, holder: 'h'.repeat(300) }, 400, 'holder'],
    ['PATCH', `/locks/${n}x`, {}, 400, 'token'],
    ['PUT', `/tables/${n}`, undefined, 409, n],
    ['PUT', `/variants/${n}`, { variant: 'x' }, 409, n],
  ];
  for (const [m, p, b, st, needle] of cases) {
    const r = await srv.req(m, p, b);
    expectError(r, st);
    assert.ok(
      r.body.message.includes(needle),
      `${m} ${p} ${JSON.stringify(b)}: message ${JSON.stringify(r.body.message)} should mention ${JSON.stringify(needle)}`,
    );
  }
});

// ---------------------------------------------------------------- health

const GB = /^\d+\.\d{2}GB$/;
const PCT = /^\d+\.\d{2}%$/;

test('health: 200 "server is healthy" with the nine fields in the exact formats (and the shared store\'s state)', async () => {
  const r = await srv.req('GET', '/health');
  expectSuccess(r, 200, 'server is healthy', r.body?.data);
  const d = r.body.data;
  const nine = ['disk_free', 'disk_percent', 'disk_total', 'disk_used', 'gc_state', 'key_count', 'mem_free', 'mem_total', 'space_total'];
  // Beside the contract's nine, space_total in bytes; the shared store adds what it knows of its
  // database (docs/scaling.md, "Running highly available").
  const fields = [...nine, 'space_bytes', ...(STORE === 'postgres' ? ['store'] : [])].sort();
  assert.deepEqual(Object.keys(d).sort(), fields);
  assert.ok(Number.isInteger(d.key_count) && d.key_count >= 0, `key_count ${d.key_count}`);
  assert.ok([0, 1, 2].includes(d.gc_state), `gc_state ${d.gc_state}`);
  for (const f of ['disk_free', 'disk_used', 'disk_total', 'mem_free', 'mem_total', 'space_total']) {
    assert.match(d[f], GB, `${f} = ${JSON.stringify(d[f])}`);
  }
  assert.match(d.disk_percent, PCT, `disk_percent = ${JSON.stringify(d.disk_percent)}`);
  const num = (s: string) => parseFloat(s);
  const pct = num(d.disk_percent);
  assert.ok(pct >= 0 && pct <= 100, `disk_percent ${d.disk_percent}`);
  // figures match the OS (GB = 2^30 bytes)
  const st = statfsSync(srv.dataDir);
  const totalGB = (st.blocks * st.bsize) / 2 ** 30;
  assert.ok(Math.abs(num(d.disk_total) - totalGB) <= 0.011, `disk_total ${d.disk_total} vs statfs ${totalGB.toFixed(3)}GB`);
  assert.ok(num(d.disk_free) <= num(d.disk_total) && num(d.disk_used) <= num(d.disk_total), JSON.stringify(d));
  const memGB = os.totalmem() / 2 ** 30;
  assert.ok(Math.abs(num(d.mem_total) - memGB) <= 0.011, `mem_total ${d.mem_total} vs os.totalmem ${memGB.toFixed(3)}GB`);
  assert.ok(num(d.mem_free) <= num(d.mem_total), JSON.stringify(d));
  assert.ok(num(d.space_total) < 1, `space_total ${d.space_total} for a tiny test database`);
  assert.ok(Number.isSafeInteger(d.space_bytes) && d.space_bytes >= 0, `space_bytes ${d.space_bytes}`);
  assert.equal((d.space_bytes / 2 ** 30).toFixed(2) + 'GB', d.space_total, 'space_total is space_bytes in GB');
});

test('health key_count counts tables + records + variants + held locks (rows do not count)', async () => {
  const count = async () => (await srv.req('GET', '/health')).body.data.key_count as number;
  const k0 = await count();
  const n = uniq('kc');
  expectSuccess(await srv.req('PUT', `/tables/${n}`), 201, 'table created successfully');
  assert.equal(await count(), k0 + 1);
  for (let i = 0; i < 3; i++) await srv.req('POST', `/tables/${n}/rows`, { rows: { i } });
  assert.equal(await count(), k0 + 1, 'rows must not count');
  expectSuccess(await srv.req('PUT', `/records/${n}`, { record: {} }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', `/records/${n}`, { record: { b: 1 } }), 200, 'record created successfully');
  assert.equal(await count(), k0 + 2, 'a replaced record counts once');
  expectSuccess(await srv.req('PUT', `/variants/${n}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  assert.equal(await count(), k0 + 3);
  const lk = await srv.req('PUT', `/locks/${n}`, { ttl: 60 });
  assert.equal(await count(), k0 + 4);
  await srv.req('DELETE', `/locks/${n}`, { token: lk.body.data.token });
  assert.equal(await count(), k0 + 3, 'a released lock does not count');
  await srv.req('DELETE', `/tables/${n}`);
  await srv.req('DELETE', `/records/${n}`);
  await srv.req('DELETE', `/variants/${n}`);
  assert.equal(await count(), k0);
});

// ---------------------------------------------------------------- generated and configured tokens

test('generated token: printed as default password, stored 0600, reused after restart; configured token wins', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-token-'));
  let s: PithosServer | undefined;
  try {
    s = await PithosServer.start({ token: null, dataDir: dir, testClock: false });
    const line = s.stdout.split('\n').find((l) => l.includes('default password'));
    assert.ok(line, `no "default password" line in stdout:\n${s.stdout}`);
    const token = s.token;
    assert.ok(token.length >= 16, `generated token too short: ${JSON.stringify(token)}`);
    assert.equal((await s.req('GET', '/health')).status, 200);
    expect401(await s.req('GET', '/health', undefined, { 'Auth-Token': 'wrong' }), 'generated: wrong token', WRONG);
    expect401(await s.req('GET', '/health', undefined, { 'Auth-Token': null }), 'generated: no token', MISSING);
    const file = path.join(dir, 'auth-token');
    const st = statSync(file);
    assert.equal((st.mode & 0o777).toString(8), '600', 'auth-token file mode');
    assert.equal(readFileSync(file, 'utf8').trim(), token);
    expectSuccess(await s.req('PUT', '/records/tok', { record: { a: 1 } }), 201, 'record created successfully');

    // restart without a configured token: the same secret works
    await s.restart('SIGTERM');
    // The stored secret is printed at every start (docs/operations.md, "The auth token").
    const again = s.stdout.split('\n').find((l) => l.includes('default password'));
    assert.ok(again, `no "default password" line after the restart:\n${s.stdout}`);
    assert.equal(again.trim().split(/\s+/).pop(), token, 'the reprinted default password must be the stored one');
    s.token = token;
    expectSuccess(await s.req('GET', '/records/tok'), 200, 'record queried successfully', { a: 1 });
    await s.kill('SIGTERM');
    await s.close();
    s = undefined;

    // a configured token (flag) wins over the stored one
    s = await PithosServer.start({ token: 'configured-by-flag', dataDir: dir, testClock: false });
    expectSuccess(await s.req('GET', '/records/tok'), 200, 'record queried successfully', { a: 1 });
    expect401(await s.req('GET', '/records/tok', undefined, { 'Auth-Token': token }), 'stored token while a flag token is configured', WRONG);
    assert.ok(!s.stdout.includes(token), 'the stored token must not be printed when a token is configured');
    await s.kill('SIGTERM');
    await s.close();
    s = undefined;

    // ... and so does PITHOS_AUTH_TOKEN
    s = await PithosServer.start({ token: null, dataDir: dir, testClock: false, env: { PITHOS_AUTH_TOKEN: 'configured-by-env' } });
    s.token = 'configured-by-env';
    expectSuccess(await s.req('GET', '/records/tok'), 200, 'record queried successfully', { a: 1 });
    expect401(await s.req('GET', '/records/tok', undefined, { 'Auth-Token': token }), 'stored token while an env token is configured', WRONG);
    // the flag beats the env variable
    await s.kill('SIGTERM');
    await s.close();
    s = await PithosServer.start({ token: 'flag-beats-env', dataDir: dir, testClock: false, env: { PITHOS_AUTH_TOKEN: 'env-loses' } });
    expectSuccess(await s.req('GET', '/records/tok'), 200, 'record queried successfully', { a: 1 });
    expect401(await s.req('GET', '/records/tok', undefined, { 'Auth-Token': 'env-loses' }), 'env token while a flag token is given', WRONG);
    await s.kill('SIGTERM');
    await s.close();
    s = undefined;

    // without configuration again, the stored secret is back
    s = await PithosServer.start({ token: null, dataDir: dir, testClock: false });
    s.token = token;
    expectSuccess(await s.req('GET', '/records/tok'), 200, 'record queried successfully', { a: 1 });
  } finally {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('default body limit is 16 MiB; a huge deeply nested body does not crash the server', async () => {
  const s = await PithosServer.start({ testClock: false });
  try {
    const oneMiB = JSON.stringify({ record: { s: 'x'.repeat(1 << 20) } });
    expectSuccess(await s.req('PUT', '/records/m1', oneMiB), 201, 'record created successfully');
    const r = await s.req('GET', '/records/m1');
    assert.equal(r.status, 200);
    assert.equal(r.body.data.s.length, 1 << 20);
    // Declare a body of 16 MiB + 1 and read the answer over a raw socket: the server may answer 413
    // from Content-Length alone and close; the body is only sent if no answer came within 1 s.
    const big = await overLimitByContentLength(s.port, s.token, '/records/m2', 16777216 + 1);
    assert.equal(big.status, 413, `16 MiB + 1 body: ${big.status} ${big.raw.slice(0, 300)}`);
    expectError(await s.req('GET', '/records/m2'), 404);
    // 1,000,000 nested arrays (1 MB): 400, not a stack overflow
    const deep = '{"record":{"a":' + '['.repeat(1_000_000) + ']'.repeat(1_000_000) + '}}';
    const d = await s.req('PUT', '/records/m3', deep);
    expectError(d, 400);
    assert.equal((await s.req('GET', '/health')).status, 200);
  } finally {
    await s.close();
  }
});

/**
 * Send a PUT whose Content-Length is `length` over a raw TCP socket and return the parsed
 * answer. Headers go first; the body follows (in chunks, write errors ignored) only if no
 * answer has arrived within a second — so a server rejecting on Content-Length is tested
 * without the client racing its own EPIPE.
 */
function overLimitByContentLength(port: number, token: string, p: string, length: number): Promise<Res> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(bodyTimer);
      clearTimeout(giveUp);
      sock.destroy();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      const sep = data.indexOf('\r\n\r\n');
      const head = sep >= 0 ? data.slice(0, sep) : data;
      const raw = sep >= 0 ? data.slice(sep + 4) : '';
      const headers: Record<string, string> = {};
      for (const line of head.split('\r\n').slice(1)) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      let body: unknown;
      const jsonStart = raw.indexOf('{');
      try {
        body = JSON.parse(raw.slice(jsonStart, raw.lastIndexOf('}') + 1));
      } catch {
        body = undefined;
      }
      resolve({ status: m ? Number(m[1]) : -1, headers, body, raw: data });
    };
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      data += d;
      const sep = data.indexOf('\r\n\r\n');
      if (sep < 0) return;
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(data.slice(0, sep));
      if (cl && Buffer.byteLength(data.slice(sep + 4)) >= Number(cl[1])) finish();
    });
    sock.on('end', finish);
    sock.on('close', finish);
    sock.on('error', () => {
      /* EPIPE/ECONNRESET after the answer: the answer (if any) is already in `data` */
    });
    sock.write(`PUT ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuth-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`);
    const bodyTimer = setTimeout(() => {
      const chunk = Buffer.alloc(1 << 20, 0x20);
      let sent = 0;
      const pump = () => {
        while (!done && sent < length) {
          const n = Math.min(chunk.length, length - sent);
          sent += n;
          if (!sock.write(chunk.subarray(0, n))) {
            sock.once('drain', pump);
            return;
          }
        }
      };
      pump();
    }, 1000);
    const giveUp = setTimeout(finish, 15000);
  });
}
