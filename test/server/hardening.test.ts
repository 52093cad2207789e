/**
 * Black-box tests of hostile HTTP (docs/fuzzing.md): raw bytes over
 * TCP against the real server, every answer checked to be the JSON envelope.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { rssMiB, serverSockets } from '../helpers/proc.js';
import { JSON_CT, PithosServer, expectError, expectSuccess, sleep, uniq } from '../helpers/server.js';
import { exchange, reqBytes, type RawAnswer } from '../helpers/raw.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

function isEnvelope(a: RawAnswer, status: number, message?: RegExp): void {
  const label = `${a.status} ${JSON.stringify(a.headers)} ${a.body.slice(0, 300)}`;
  assert.equal(a.status, status, label);
  assert.equal(a.headers['content-type'], JSON_CT, label);
  assert.ok(a.headers['content-length'] !== undefined, `no Content-Length: ${label}`);
  const j = a.json as { status?: string; message?: string } | undefined;
  assert.ok(j !== undefined && typeof j === 'object', `not JSON: ${label}`);
  assert.equal(j.status, status < 400 ? 'success' : 'error', label);
  assert.equal(typeof j.message, 'string', label);
  assert.ok(j.message!.length > 0, label);
  if (message) assert.match(j.message!, message, label);
}

// ---------------------------------------------------------------- early 413 on a large body

test('a client still sending a 17 MiB body reads the early 413 (lingering close)', async () => {
  const body = Buffer.alloc(17 * 1024 * 1024, 0x20);
  for (let i = 0; i < 5; i++) {
    const r = await new Promise<{ status: number; raw: string } | { error: string }>((resolve) => {
      const rq = http.request(
        {
          host: '127.0.0.1',
          port: srv.port,
          method: 'PUT',
          path: `/records/big${i}`,
          agent: false,
          headers: { 'Auth-Token': srv.token, 'Content-Length': body.length },
        },
        (res) => {
          let raw = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (raw += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, raw }));
          res.on('error', (e) => resolve({ error: String(e) }));
        },
      );
      rq.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? String(e) }));
      rq.end(body);
    });
    assert.ok('status' in r, `attempt ${i}: ${JSON.stringify(r)}`);
    assert.equal(r.status, 413, r.raw);
    assert.match(JSON.parse(r.raw).message, /exceeds the limit of 16777216 bytes/);
  }
  expectError(await srv.req('GET', '/records/big0'), 404);
});

// ---------------------------------------------------------------- UTF-8 bodies

test('invalid UTF-8 in a body → 400 naming the offset, nothing stored; a leading BOM is skipped', async () => {
  const id = uniq('utf');
  const bad = Buffer.concat([Buffer.from('{"record":{"s":"a'), Buffer.from([0xff]), Buffer.from('"}}')]);
  const r = await srv.req('PUT', `/records/${id}`, bad);
  expectError(r, 400, /not valid UTF-8 \(bad byte at offset 17\)/);
  expectError(await srv.req('GET', `/records/${id}`), 404);
  // overlong encoding and a lone surrogate are invalid too
  for (const bytes of [
    [0xc0, 0xaf],
    [0xed, 0xa0, 0x80],
    [0xe2, 0x82],
  ]) {
    const b = Buffer.concat([Buffer.from('{"record":{"s":"'), Buffer.from(bytes), Buffer.from('"}}')]);
    expectError(await srv.req('PUT', `/records/${id}`, b), 400, /not valid UTF-8/);
  }
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"record":{"s":"é"}}')]);
  expectSuccess(await srv.req('PUT', `/records/${id}`, bom), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', `/records/${id}`), 200, 'record queried successfully', { s: 'é' });
});

// ---------------------------------------------------------------- the request method

test('a lowercase method is named in the 400', async () => {
  const x = await exchange(srv.port, reqBytes('get', '/health', srv.token));
  assert.equal(x.answers.length, 1, x.data);
  isEnvelope(x.answers[0], 400, /unknown HTTP method 'get': methods are case-sensitive, use GET/);
  const y = await exchange(srv.port, reqBytes('FETCH', '/health', srv.token));
  isEnvelope(y.answers[0], 400, /unknown HTTP method 'FETCH'/);
});

// ---------------------------------------------------------------- Expect: 100-continue

test('Expect: 100-continue on pipelined requests keeps the answers in order', async () => {
  const id = uniq('cont');
  // Pipelined: an async write first, then a request with Expect whose answer is a Buffer body.
  const put = reqBytes('PUT', `/records/${id}`, srv.token, JSON.stringify({ record: { a: 1 } }));
  const cont = reqBytes('PUT', `/records/${id}x`, srv.token, JSON.stringify({ record: { b: 2 } }), { Expect: '100-continue' });
  const get = reqBytes('GET', `/records/${id}`, srv.token);
  const x = await exchange(srv.port, put + cont + get, { answers: 3 });
  const finals = x.answers.filter((a) => a.status !== 100);
  assert.equal(finals.length, 3, x.data);
  isEnvelope(finals[0], 201);
  isEnvelope(finals[1], 201);
  isEnvelope(finals[2], 200);
  assert.deepEqual((finals[2].json as { data: unknown }).data, { a: 1 });
  // A 100 Continue, if sent, comes right before the answer it belongs to.
  const i100 = x.answers.findIndex((a) => a.status === 100);
  if (i100 >= 0) assert.equal(i100, 1, x.data);
  // Alone, the 100 comes before the body is sent, and the body is then read.
  const alone = await exchange(srv.port, reqBytes('PUT', `/records/${id}y`, srv.token, undefined, { Expect: '100-continue', 'Content-Length': '18' }), {
    answers: 1,
    later: { afterMs: 300, bytes: '{"record":{"c":3}}' },
  });
  assert.equal(alone.answers[0]?.status, 100, alone.data);
  isEnvelope(alone.answers[1], 201);
  // Refused on its headers: no 100, the final answer at once.
  const refused = await exchange(srv.port, reqBytes('PUT', `/records/${id}z`, 'wrong', undefined, { Expect: '100-continue', 'Content-Length': '18' }), {
    answers: 1,
  });
  assert.equal(refused.answers.length, 1, refused.data);
  isEnvelope(refused.answers[0], 401);
});

test('CONNECT gets a 405 envelope after the pipelined answers before it', async () => {
  const id = uniq('conn');
  const bytes =
    reqBytes('PUT', `/records/${id}`, srv.token, '{"record":{"a":1}}') +
    reqBytes('GET', '/health', srv.token) +
    `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nAuth-Token: ${srv.token}\r\n\r\n` +
    reqBytes('GET', '/health', srv.token);
  const x = await exchange(srv.port, bytes, { waitMs: 3000 });
  assert.equal(x.answers.length, 3, x.data);
  isEnvelope(x.answers[0], 201);
  isEnvelope(x.answers[1], 200);
  isEnvelope(x.answers[2], 405, /CONNECT is not supported/);
  assert.ok(x.answers[2].headers['allow'], 'Allow header');
  assert.ok(x.closed, 'the connection is closed after CONNECT');
});

test('an Upgrade header gets a 400 envelope; earlier pipelined answers are kept', async () => {
  const bytes =
    reqBytes('GET', '/health', srv.token) +
    reqBytes('GET', '/health', srv.token, undefined, { Connection: 'Upgrade', Upgrade: 'websocket' }) +
    reqBytes('GET', '/health', srv.token);
  const x = await exchange(srv.port, bytes, { waitMs: 3000 });
  assert.equal(x.answers.length, 2, x.data);
  isEnvelope(x.answers[0], 200);
  isEnvelope(x.answers[1], 400, /Upgrade header is not supported/);
  assert.ok(x.closed);
});

// ---------------------------------------------------------------- odd headers

test('no Host and Expect: foo are answered with the envelope', async () => {
  const noHost = await exchange(srv.port, `GET /health HTTP/1.1\r\nAuth-Token: ${srv.token}\r\n\r\n`, { answers: 1 });
  isEnvelope(noHost.answers[0], 400, /Host header/);
  // HTTP/1.0 needs none
  const old = await exchange(srv.port, `GET /health HTTP/1.0\r\nAuth-Token: ${srv.token}\r\n\r\n`, { answers: 1 });
  isEnvelope(old.answers[0], 200);
  const foo = await exchange(srv.port, reqBytes('GET', '/health', srv.token, undefined, { Expect: 'foo' }), { answers: 1 });
  isEnvelope(foo.answers[0], 417, /unsupported Expect header 'foo'/);
  // the connection stays usable after a 417 without a body
  const two = await exchange(srv.port, reqBytes('GET', '/health', srv.token, undefined, { Expect: 'foo' }) + reqBytes('GET', '/health', srv.token), {
    answers: 2,
  });
  isEnvelope(two.answers[0], 417);
  isEnvelope(two.answers[1], 200);
});

// ---------------------------------------------------------------- early refusals close the connection

test('an early refusal with a huge declared body closes the connection within seconds', async () => {
  const cl = { 'Content-Length': '16777217' };
  const cases: [string, string, string | null, number][] = [
    ['PUT', '/records/x', 'wrong', 401],
    ['PUT', '/nope', srv.token, 404],
    ['PATCH', '/health', srv.token, 405],
    ['PUT', '/records/%00', srv.token, 400],
    ['PUT', '/records/x', srv.token, 413],
  ];
  await Promise.all(
    cases.map(async ([m, p, t, st]) => {
      const x = await exchange(srv.port, reqBytes(m, p, t, undefined, cl), { waitMs: 8000 });
      assert.equal(x.answers.length, 1, `${m} ${p}: ${x.data}`);
      isEnvelope(x.answers[0], st);
      assert.ok(x.closed && x.ms < 4000, `${m} ${p}: closed ${x.closed} after ${x.ms} ms`);
    }),
  );
  // a small declared body is drained and the connection kept
  const small = await exchange(srv.port, reqBytes('PUT', '/records/x', 'wrong', '{"record":{}}') + reqBytes('GET', '/health', srv.token), { answers: 2 });
  isEnvelope(small.answers[0], 401);
  isEnvelope(small.answers[1], 200);
});

test('a request pipelined behind an answer that closes the connection is not run: what it would write is not written', async () => {
  const t = uniq('behind');
  const chunked = (head: string) => `${head}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`;
  // Each first request is refused with a chunked body still unread, so the answer closes the
  // connection; node:http has already parsed the write behind it from the same packet.
  const cases: Array<[string, string, string, string]> = [
    ['a 401 (wrong token)', chunked(`PUT /records/${t}-a HTTP/1.1\r\nHost: x\r\nAuth-Token: wrong\r\n`), 'PUT', `/records/${t}-1`],
    ['a 404 (no such route)', chunked(`POST /nope/${t} HTTP/1.1\r\nHost: x\r\nAuth-Token: ${srv.token}\r\n`), 'POST', `/lists/${t}-2/push`],
    ['a 405 (wrong method)', chunked(`PATCH /tables HTTP/1.1\r\nHost: x\r\nAuth-Token: ${srv.token}\r\n`), 'PUT', `/variants/${t}-3`],
  ];
  const bodies: Record<string, string> = { PUT: '{"record":{"a":1},"variant":1}', POST: '{"values":[1]}' };
  for (const [label, first, method, p] of cases) {
    const body = p.startsWith('/variants') ? '{"variant":1}' : bodies[method]!;
    const x = await exchange(srv.port, first + reqBytes(method, p, srv.token, body), { waitMs: 2000 });
    assert.equal(x.answers.length, 1, `${label}: ${x.data.slice(0, 400)}`);
    assert.ok(x.answers[0]!.status >= 400 && x.answers[0]!.status < 500, `${label}: ${x.data.slice(0, 300)}`);
    assert.equal(x.answers[0]!.headers.connection, 'close', label);
    assert.ok(x.closed, `${label}: the connection was not closed`);
  }
  // A success that closes: an HTTP/1.0 client asking to keep the connection, whose answer is long
  // enough to go out in pieces without a length, so node:http can only end it by closing the
  // connection.
  const big = `${t}-big`;
  expectSuccess(await srv.req('PUT', `/tables/${big}`), 201, 'table created successfully');
  // More rows than a store answers in one piece (STREAM_ROWS), about 110 KB of them.
  for (let i = 0; i < 1100; i += 50) {
    await Promise.all(Array.from({ length: 50 }, () => srv.req('POST', `/tables/${big}/rows`, { rows: { s: 'x'.repeat(90) } })));
  }
  const old = (method: string, p: string, body?: string): string =>
    `${method} ${p} HTTP/1.0\r\nAuth-Token: ${srv.token}\r\nConnection: keep-alive\r\n` +
    (body === undefined ? '\r\n' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  const x = await exchange(srv.port, old('GET', `/tables/${big}/rows`, '{"wheres":{}}') + old('PUT', `/records/${t}-4`, '{"record":{"a":1}}'), {
    waitMs: 2000,
  });
  assert.equal(x.answers.length, 1, `HTTP/1.0: ${x.data.slice(0, 300)} ... ${x.data.slice(-400)}`);
  assert.equal(x.answers[0]!.status, 200, x.data.slice(0, 300));
  assert.equal(x.answers[0]!.headers['content-length'], undefined, 'the rows went out without a length');
  assert.ok(x.closed, 'HTTP/1.0: the connection was not closed');
  // A write that was run would be visible by now, on either store.
  await sleep(300);
  expectError(await srv.req('GET', `/records/${t}-1`), 404);
  expectError(await srv.req('GET', `/lists/${t}-2`), 404);
  expectError(await srv.req('GET', `/variants/${t}-3`), 404);
  expectError(await srv.req('GET', `/records/${t}-4`), 404);
});

test('after a 400 for a malformed request, a client that neither reads nor closes is let go', async () => {
  // A server of its own, so that no other test's connections are counted.
  const srv = await PithosServer.start({ testClock: false });
  const before = serverSockets(srv.child!.pid!);
  const socks: net.Socket[] = [];
  for (let i = 0; i < 20; i++) {
    const sock = net.connect(srv.port, '127.0.0.1');
    sock.pause(); // never reads, never closes
    sock.on('error', () => {});
    sock.write('GARBAGE\r\n\r\n');
    socks.push(sock);
  }
  try {
    // First the server holds all 20: on a busy machine accepting them may take longer than any
    // fixed pause (300 ms was). The lingering close after the 400 lets an idle one go only a
    // second after its answer, so all 20 are held together for a while.
    let most = 0;
    for (const end = Date.now() + 10_000; most < before + 20 && Date.now() < end;) {
      most = Math.max(most, serverSockets(srv.child!.pid!));
      if (most < before + 20) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(most >= before + 20, `server held at most ${most} sockets, ${before} before`);
    const t0 = Date.now();
    while (serverSockets(srv.child!.pid!) > before && Date.now() - t0 < 8000) await new Promise((r) => setTimeout(r, 100));
    assert.ok(serverSockets(srv.child!.pid!) <= before, `server still holds ${serverSockets(srv.child!.pid!) - before} of the 20 after ${Date.now() - t0} ms`);
  } finally {
    for (const s of socks) s.destroy();
    await srv.close();
  }
});

// ---------------------------------------------------------------- SIGTERM closes the engine

test('PUT, PUT, CONNECT pipelined then SIGTERM: the engine is closed ("stopped cleanly", LOCK gone)', async () => {
  const s = await PithosServer.start({ testClock: false, fsync: 'everysec' });
  try {
    const bytes =
      reqBytes('PUT', '/records/a', s.token, '{"record":{"a":1}}') +
      reqBytes('PUT', '/records/b', s.token, '{"record":{"b":1}}') +
      `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`;
    const sock = net.connect(s.port, '127.0.0.1');
    sock.on('error', () => {});
    let answers = '';
    sock.on('data', (d: Buffer) => {
      answers += d.toString('latin1');
    });
    await new Promise<void>((r) => sock.on('connect', () => r()));
    sock.write(bytes);
    await new Promise((r) => setTimeout(r, 50));
    s.signal('SIGTERM');
    const info = await s.waitExit(15000);
    sock.destroy();
    assert.equal(info.code, 0, s.history.at(-1)?.stderr);
    const out = s.history.at(-1)!.stdout + s.history.at(-1)!.stderr;
    assert.match(out, /stopped cleanly/, out);
    assert.ok(!existsSync(path.join(s.dataDir, 'LOCK')), 'LOCK must be removed');
    // Every PUT the drain answered is there after the restart. The second may or may not
    // have been read before the SIGTERM landed, so only what was acknowledged is required.
    const acked = (answers.match(/^HTTP\/1\.1 201 /gm) ?? []).length;
    await s.spawn();
    for (const id of ['a', 'b'].slice(0, acked)) {
      expectSuccess(await s.req('GET', `/records/${id}`), 200, 'record queried successfully', { [id]: 1 });
    }
  } finally {
    await s.close();
  }
});

// ---------------------------------------------------------------- bodies before authentication

test('what is served without a token refuses a request body before reading it: 400 naming the route, connection closed', async () => {
  const cases: Array<[string, string, string]> = [
    ['GET', '/openapi.json', 'GET /openapi.json takes no request body'],
    ['GET', '/openapi.json?x=1', 'GET /openapi.json takes no request body'],
    ['GET', '/livez', 'GET /livez takes no request body'],
    ['POST', '/readyz', 'POST /readyz takes no request body'],
    ['GET', '/console/', 'GET /console/ takes no request body'],
    ['GET', '/console/app.js', 'GET /console/app.js takes no request body'],
  ];
  for (const [method, p, message] of cases) {
    for (const bytes of [reqBytes(method, p, null, '{'), `${method} ${p} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n0\r\n\r\n`]) {
      const x = await exchange(srv.port, bytes, { waitMs: 3000 });
      assert.equal(x.answers.length, 1, x.data);
      isEnvelope(x.answers[0], 400);
      assert.equal((x.answers[0].json as { message: string }).message, message);
      assert.equal(x.answers[0].headers.connection, 'close', x.data);
      assert.ok(x.closed, `${method} ${p}: connection left open`);
    }
  }
  // Without a body, or with an empty one, they are served as before.
  for (const extra of [{}, { 'Content-Length': '0' }] as Array<Record<string, string>>) {
    const x = await exchange(srv.port, reqBytes('GET', '/openapi.json', null, undefined, extra), { answers: 1 });
    assert.equal(x.answers[0]?.status, 200, x.data.slice(0, 300));
    const l = await exchange(srv.port, reqBytes('GET', '/livez', null, undefined, extra), { answers: 1 });
    assert.equal(l.answers[0]?.body, 'ok\n');
  }
  // A route that needs a token checks it before any body is read.
  const x = await exchange(srv.port, reqBytes('PUT', '/records/x', null, '{"record":{'), { answers: 1 });
  isEnvelope(x.answers[0], 401);
});

/** Sends headers then `size` bytes of body in 256 KiB writes, until done or the server closes; resolves on close. */
function flood(port: number, head: string, size: number, chunked: boolean): Promise<number> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const piece = Buffer.alloc(256 * 1024, 0x7b);
    const framed = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
    let sent = 0;
    let gone = false;
    sock.on('error', () => {});
    sock.on('data', () => {});
    sock.once('close', () => {
      gone = true;
      resolve(sent);
    });
    const pump = (): void => {
      while (!gone && sent < size) {
        sent += piece.length;
        if (!sock.write(framed)) return void sock.once('drain', pump);
      }
      if (!gone) sock.end(chunked ? '0\r\n\r\n' : '');
    };
    sock.once('connect', () => {
      sock.write(head);
      pump();
    });
    // Bounded in time whatever the server does.
    setTimeout(() => sock.destroy(), 20_000).unref();
  });
}

test("50 clients without a token sending 12 MiB bodies to public routes and to /health: the server's memory stays bounded", async (t) => {
  const s = await PithosServer.start({ testClock: false });
  try {
    const size = 12 * 1024 * 1024;
    const heads = [
      ['GET', '/openapi.json'],
      ['GET', '/openapi.json'],
      ['POST', '/livez'],
      ['GET', '/readyz'],
      ['GET', '/console/index.html'],
      ['GET', '/health'],
      ['PUT', '/records/x'],
    ];
    // Settle: the first answers of a fresh process allocate their caches.
    for (const [m, p] of heads) await exchange(s.port, reqBytes(m, p, null), { answers: 1 });
    await sleep(200);
    const before = rssMiB(s.child!.pid!);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(s.child!.pid!))), 50);
    const t0 = Date.now();
    const sent = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const [m, p] = heads[i % heads.length];
        const chunked = i % 2 === 1;
        const head = `${m} ${p} HTTP/1.1\r\nHost: x\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`}\r\n\r\n`;
        return flood(s.port, head, size, chunked);
      }),
    );
    const ms = Date.now() - t0;
    await sleep(500);
    clearInterval(sampler);
    const after = rssMiB(s.child!.pid!);
    peak = Math.max(peak, after);
    t.diagnostic(
      `RSS ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB, ${after.toFixed(0)} MiB after; ` +
        `${(sent.reduce((a, b) => a + b, 0) / 2 ** 20).toFixed(0)} MiB sent by the clients in ${ms} ms`,
    );
    // Each /openapi.json body alone was 12 MiB held (and as much again decoded) before it was refused.
    assert.ok(peak - before < 100, `RSS went from ${before.toFixed(0)} to a peak of ${peak.toFixed(0)} MiB`);
    assert.equal((await s.req('GET', '/health')).status, 200);
  } finally {
    await s.close();
  }
});

// ---------------------------------------------------------------- messages a new user meets

test("a body that is not JSON at all is told to be JSON; one that starts like JSON keeps the parser's account", async () => {
  const form = await srv.req('PUT', '/records/formy', 'name=alice&age=3', { 'Content-Type': 'application/x-www-form-urlencoded' });
  expectError(form, 400, `request body must be JSON (a JSON object), not form-encoded: it starts with 'name=alice&age=3'; send e.g. {"field": "value"}`);
  expectError(await srv.req('PUT', '/records/formy', 'hello there'), 400, "request body must be JSON (a JSON object): it starts with 'hello there'");
  expectError(
    await srv.req('PUT', '/records/formy', '{"record":{'),
    400,
    "request body is not valid JSON: Expected property name or '}' in JSON at position 11",
  );
  expectError(await srv.req('GET', '/records/formy'), 404);
});

test("a path that matches a route once some segments are one name: the 404 says to percent-encode the '/'", async () => {
  const hint = (m: string, p: string) => ` (a '/' inside a name must be percent-encoded as %2F: ${m} ${p})`;
  expectError(await srv.req('PUT', '/records/a/b', '{"record":{}}'), 404, `no endpoint at PUT /records/a/b${hint('PUT', '/records/a%2Fb')}`);
  expectError(await srv.req('GET', '/variants/x/y/z'), 404, `no endpoint at GET /variants/x/y/z${hint('GET', '/variants/x%2Fy%2Fz')}`);
  expectError(await srv.req('POST', '/tables/a/b/rows', '{"rows":{}}'), 404, `no endpoint at POST /tables/a/b/rows${hint('POST', '/tables/a%2Fb/rows')}`);
  // Route words are not taken for part of a name; paths that match nothing either way get no hint.
  expectError(await srv.req('GET', '/tables/users/query/7'), 404, 'no endpoint at GET /tables/users/query/7');
  expectError(await srv.req('GET', '/no/such/path'), 404, 'no endpoint at GET /no/such/path');
  expectError(await srv.req('GET', '/records/a/'), 404, 'no endpoint at GET /records/a/');
  // Nothing was written under either spelling.
  expectError(await srv.req('GET', '/records/a%2Fb'), 404, "record 'a/b' does not exist");
});

test('an operation asked of a kind that lacks it, or of a quick-start spelling: the 404 says where the operation is', async () => {
  const nf = (m: string, p: string, hint: string) => `no endpoint at ${m} ${p} (${hint})`;
  const q = uniq('q');
  expectError(
    await srv.req('POST', '/sets/post1/pop', '{}'),
    404,
    nf('POST', '/sets/post1/pop', "sets have no 'pop', only add, remove, contains, combine; 'pop' is under /lists/<name>/pop: POST /lists/post1/pop"),
  );
  expectError(
    await srv.req('POST', `/list/${q}/push`, '{"values":[1]}'),
    404,
    nf('POST', `/list/${q}/push`, `/list/<name> is the quick-start spelling of /lists/<name>; 'push' is under /lists/<name>: POST /lists/${q}/push`),
  );
  expectError(
    await srv.req('POST', '/zset/lb/add', '{}'),
    404,
    nf('POST', '/zset/lb/add', "/zset/<name> is the quick-start spelling of /zsets/<name>; 'add' is under /zsets/<name>: POST /zsets/lb/add"),
  );
  // An operation two kinds have is pointed at both; one no kind has is no operation, so a split name is the likelier mistake.
  expectError(
    await srv.req('POST', '/lists/l/remove', '{}'),
    404,
    nf(
      'POST',
      '/lists/l/remove',
      "lists have no 'remove', only push, pop; 'remove' is under /sets/<name>/remove and /zsets/<name>/remove: POST /sets/l/remove",
    ),
  );
  expectError(await srv.req('GET', '/sets/a/b'), 404, nf('GET', '/sets/a/b', "a '/' inside a name must be percent-encoded as %2F: GET /sets/a%2Fb"));
  // The push under the quick-start spelling wrote nothing.
  expectError(await srv.req('GET', `/lists/${q}`), 404);
});
