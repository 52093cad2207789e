/**
 * Black-box tests of the operations features in docs/operations.md: probes, roles and
 * the tokens file (with SIGHUP reload), CORS, the access log and request ids, the config
 * file and --print-config. TLS is in tls.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { tcpQueues } from '../helpers/proc.js';
import { PithosServer, STORE, TOKEN, expectError, expectSuccess, runCli, sleep, uniq, untilTrue } from '../helpers/server.js';

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-ops-'));
});
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

async function waitFor(get: () => string, re: RegExp, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!re.test(get())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; got:\n${get()}`);
    await sleep(20);
  }
}

/** One raw HTTP/1.1 exchange on an open socket; resolves with the head and body text of one response. */
function exchange(sock: net.Socket, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length: (\d+)/i.exec(buf.slice(0, end));
      if (buf.length >= end + 4 + Number(m?.[1] ?? 0)) {
        sock.off('data', onData);
        resolve(buf);
      }
    };
    sock.on('data', onData);
    sock.once('error', reject);
    sock.write(request);
  });
}

// ---------------------------------------------------------------- probes

test('probes: /livez and /readyz need no token, answer plain "ok" and reveal nothing else', async () => {
  const s = await PithosServer.start({ testClock: false });
  try {
    for (const p of ['/livez', '/readyz', '/readyz?verbose=1']) {
      for (const token of [null, 'wrong', s.token]) {
        const r = await s.req('GET', p, undefined, { 'Auth-Token': token });
        assert.equal(r.status, 200, `${p} ${token}: ${r.status} ${r.raw}`);
        assert.equal(r.raw, 'ok\n');
        assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(r.headers['x-request-id'], undefined, 'no request id without --access-log');
        assert.deepEqual(Object.keys(r.headers).sort(), ['cache-control', 'connection', 'content-length', 'content-type', 'date', 'keep-alive']);
      }
    }
    const head = await s.req('HEAD', '/livez', undefined, { 'Auth-Token': null });
    assert.equal(head.status, 200);
    assert.equal(head.raw, '');
    // near misses are ordinary paths: auth first
    expectError(await s.req('GET', '/livez/x', undefined, { 'Auth-Token': null }), 401, 'missing Auth-Token header');
    expectError(await s.req('GET', '/ready', undefined, { 'Auth-Token': null }), 401, 'missing Auth-Token header');
  } finally {
    await s.close();
  }
});

test('probes: /readyz is 503 while shutting down, /livez still 200', async () => {
  const s = await PithosServer.start({ testClock: false });
  const slow = net.connect(s.port, '127.0.0.1');
  const probe = net.connect(s.port, '127.0.0.1');
  try {
    await Promise.all([new Promise((r) => slow.once('connect', r)), new Promise((r) => probe.once('connect', r))]);
    assert.match(await exchange(probe, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 200 [^]*\r\n\r\nok\n$/);
    // A request whose body is still arriving keeps the server draining.
    slow.write(`PUT /records/slow HTTP/1.1\r\nHost: x\r\nAuth-Token: ${s.token}\r\nContent-Length: 18\r\n\r\n{"record"`);
    // The signal must come once the server has read those headers (its request is in flight),
    // not before: a connection it has read nothing from is idle and is closed by the shutdown.
    // The bytes have been read once none of them waits on either end, however busy the machine.
    const port = slow.localPort as number;
    await untilTrue('the server reading the headers of the slow PUT', () => {
      const [client, server] = [tcpQueues(port, s.port), tcpQueues(s.port, port)];
      return client !== undefined && server !== undefined && client.tx === 0 && server.rx === 0;
    });
    s.signal('SIGTERM');
    await waitFor(() => s.stdout, /SIGTERM: draining/, 'the shutdown to begin');
    assert.match(await exchange(probe, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 503 [^]*\r\n\r\nnot ready\n$/);
    assert.match(await exchange(probe, 'GET /livez HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 200 [^]*\r\n\r\nok\n$/);
    const done = await exchange(slow, ':{"a":1}}');
    assert.match(done, /^HTTP\/1\.1 201 /);
    assert.deepEqual(await s.waitExit(), { code: 0, signal: null });
  } finally {
    slow.destroy();
    probe.destroy();
    await s.close();
  }
});

// ---------------------------------------------------------------- roles

const READER = 'reader-token-0123456789';
const WRITER = 'writer-token-0123456789';
const ADMIN = 'admin-token-01234567890';

test('roles: read, write and admin tokens for every method class; 401 and 403 messages; SIGHUP reload', async () => {
  const file = path.join(tmp, 'tokens');
  writeFileSync(file, `# role tokens\nreader read ${READER}\nwriter write ${WRITER}\nboss admin ${ADMIN}\n`, { mode: 0o600 });
  const s = await PithosServer.start({ args: ['--access-log'], env: { PITHOS_TOKENS_FILE: file } });
  try {
    assert.match(s.stdout, /tokens file .* 3 named token\(s\)/);
    const t = uniq('roles');
    const as = (token: string) => ({ 'Auth-Token': token });
    // writes by the main secret (admin) and by writer and admin tokens
    expectSuccess(await s.req('PUT', `/tables/${t}`), 201, 'table created successfully');
    assert.equal((await s.req('POST', `/tables/${t}/rows`, { rows: { n: 1 } }, as(WRITER))).status, 201);
    expectSuccess(await s.req('PUT', `/records/${t}`, { record: { a: 1 } }, as(ADMIN)), 201, 'record created successfully');
    expectSuccess(await s.req('PUT', `/variants/${t}`, { variant: 1 }, as(WRITER)), 201, 'variant created successfully', { variant: 1 });
    expectSuccess(await s.req('POST', `/variants/${t}`, { delta: 2 }, as(WRITER)), 200, 'variant incremented successfully', { variant: 3 });
    // reads by the reader: GET and the POST query alias
    expectSuccess(await s.req('GET', `/records/${t}`, undefined, as(READER)), 200, 'record queried successfully', { a: 1 });
    expectSuccess(await s.req('GET', `/variants/${t}`, undefined, as(READER)), 200, 'variant queried successfully', { variant: 3 });
    assert.equal((await s.req('GET', `/tables/${t}/rows`, { wheres: {} }, as(READER))).status, 200);
    assert.equal((await s.req('POST', `/tables/${t}/query`, { wheres: {} }, as(READER))).status, 200);
    assert.equal((await s.req('GET', '/health', undefined, as(READER))).status, 200);
    assert.equal(
      (await s.req('POST', `/records/${t}`, { column: 'a' }, as(READER))).status,
      403,
      'record search is a POST other than the query alias: not for readers',
    );
    // a reader is authenticated: an unknown path is then an ordinary 404
    expectError(await s.req('PUT', '/no/such/path', undefined, as(READER)), 404);
    // everything else is refused to the reader, naming token, method and path, and changes nothing
    const refused: [string, string, unknown?][] = [
      ['PUT', `/records/${t}?x=1`, { record: { a: 2 } }],
      ['POST', `/tables/${t}/rows`, { rows: { n: 2 } }],
      ['PATCH', `/tables/${t}`, { wheres: {}, sets: { n: 9 } }],
      ['DELETE', `/tables/${t}/rows`, { wheres: {} }],
      ['DELETE', `/records/${t}`],
      ['POST', `/variants/${t}`, { delta: 1 }],
      ['PUT', `/locks/${t}`, { ttl: 5 }],
      ['POST', '/txns', { ops: [] }],
    ];
    for (const [m, p, b] of refused) {
      const bare = p.split('?')[0];
      expectError(await s.req(m, p, b, as(READER)), 403, `token 'reader' may not ${m} ${bare}`);
    }
    expectSuccess(await s.req('GET', `/records/${t}`, undefined, as(READER)), 200, 'record queried successfully', { a: 1 });
    expectSuccess(await s.req('GET', `/variants/${t}`), 200, 'variant queried successfully', { variant: 3 });
    assert.equal((await s.req('GET', `/tables/${t}/rows`, { wheres: {} })).body.data.length, 1);
    // writer: every data operation
    assert.equal((await s.req('PATCH', `/tables/${t}`, { wheres: {}, sets: { n: 5 } }, as(WRITER))).status, 200);
    assert.equal((await s.req('GET', `/tables/${t}/rows`, { wheres: {} }, as(READER))).body.data[0].n, 5);
    expectSuccess(await s.req('DELETE', `/records/${t}`, undefined, as(WRITER)), 200, 'record deleted successfully');
    // admin-only routes: refused to a writer, served to an admin token and the main secret
    expectError(await s.req('POST', '/_test/clock', { advance_ms: 1 }, as(WRITER)), 403, "token 'writer' may not POST /_test/clock");
    assert.equal((await s.req('POST', '/_test/clock', { advance_ms: 1 }, as(ADMIN))).status, 200);
    assert.equal((await s.req('POST', '/_test/clock', { advance_ms: 1 })).status, 200);
    // 401s
    expectError(await s.req('GET', `/variants/${t}`, undefined, { 'Auth-Token': null }), 401, 'missing Auth-Token header');
    expectError(await s.req('GET', `/variants/${t}`, undefined, as(READER.slice(0, -1) + 'X')), 401, 'wrong Auth-Token');

    // SIGHUP: a new file replaces the tokens without a restart
    writeFileSync(file, `newbie read newbie-token-0123456\nboss admin ${ADMIN}\n`);
    s.signal('SIGHUP');
    await waitFor(() => s.stdout, /SIGHUP: reloaded tokens file .*: 2 named token\(s\)/, 'the reload');
    expectError(await s.req('GET', `/variants/${t}`, undefined, as(READER)), 401, 'wrong Auth-Token');
    expectError(await s.req('GET', `/variants/${t}`, undefined, as(WRITER)), 401, 'wrong Auth-Token');
    expectSuccess(await s.req('GET', `/variants/${t}`, undefined, as('newbie-token-0123456')), 200, 'variant queried successfully', { variant: 3 });
    expectError(await s.req('DELETE', `/variants/${t}`, undefined, as('newbie-token-0123456')), 403, `token 'newbie' may not DELETE /variants/${t}`);
    // a bad file on reload keeps the tokens in force and says why
    writeFileSync(file, `newbie read newbie-token-0123456\noops superuser x\n`);
    s.signal('SIGHUP');
    await waitFor(
      () => s.stderr,
      /SIGHUP: kept the tokens in force: tokens file .*: line 2: role of 'oops' must be read, write or admin/,
      'the refused reload',
    );
    expectSuccess(await s.req('GET', `/variants/${t}`, undefined, as('newbie-token-0123456')), 200, 'variant queried successfully', { variant: 3 });
    expectSuccess(await s.req('GET', `/variants/${t}`, undefined, as(ADMIN)), 200, 'variant queried successfully', { variant: 3 });
    // the process is still the same one, and no token was ever logged
    assert.equal(s.history.length, 0);
    const logs = s.stdout + s.stderr;
    assert.match(logs, /INFO request id=\S+ method=GET path=\/variants\/\S+ status=200 ms=[\d.]+ bytes=\d+/);
    for (const secret of [TOKEN, READER, WRITER, ADMIN, 'newbie-token-0123456']) assert.ok(!logs.includes(secret), `a token appears in the log`);
  } finally {
    await s.close();
  }
});

test('roles: a bad tokens file at start is a configuration error (exit 2, one line)', async () => {
  const file = path.join(tmp, 'bad-tokens');
  writeFileSync(file, 'a read\n');
  for (const args of [
    ['--tokens-file', file],
    ['--tokens-file', path.join(tmp, 'absent')],
  ]) {
    const r = await runCli(['--port', '0', '--data-dir', path.join(tmp, 'bt'), '--auth-token', 'x', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code} ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /^pithos: (tokens file .*: line 1: expected|cannot read tokens file)[^\n]*\n$/);
  }
});

// ---------------------------------------------------------------- CORS

test('CORS: listed origins get preflights answered and Allow-Origin; others get no CORS header', async () => {
  const APP = 'https://app.example.com';
  const s = await PithosServer.start({ testClock: false, args: ['--cors-origin', APP, '--cors-origin', 'http://localhost:3000'] });
  const off = await PithosServer.start({ testClock: false });
  try {
    const preflight = { 'Auth-Token': null, Origin: APP, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'auth-token, content-type' };
    const p = await s.req('OPTIONS', '/records/x', undefined, preflight);
    assert.equal(p.status, 204, p.raw);
    assert.equal(p.headers['access-control-allow-origin'], APP);
    assert.match(String(p.headers['access-control-allow-headers']), /\bAuth-Token\b/);
    assert.match(String(p.headers['access-control-allow-headers']), /\bContent-Type\b/);
    // Conditional writes and resuming the change feed work from a page too.
    for (const h of ['If-Match', 'If-None-Match', 'Last-Event-ID']) assert.match(String(p.headers['access-control-allow-headers']), new RegExp(`\\b${h}\\b`));
    for (const m of ['GET', 'PUT', 'POST', 'PATCH', 'DELETE']) assert.match(String(p.headers['access-control-allow-methods']), new RegExp(`\\b${m}\\b`));
    assert.equal(p.headers.vary, 'Origin');
    assert.equal((await s.req('OPTIONS', '/records/x', undefined, { ...preflight, Origin: 'http://localhost:3000' })).status, 204);
    // an actual request from a listed origin: answered as usual, plus Allow-Origin
    const g = await s.req('GET', '/health', undefined, { Origin: APP });
    assert.equal(g.status, 200);
    assert.equal(g.headers['access-control-allow-origin'], APP);
    assert.match(String(g.headers['access-control-expose-headers']), /\bETag\b/, 'a page may read versions');
    const u = await s.req('GET', '/health', undefined, { Origin: APP, 'Auth-Token': null });
    expectError(u, 401, 'missing Auth-Token header');
    assert.equal(u.headers['access-control-allow-origin'], APP, 'the browser may read the 401');
    // other origins, and servers without --cors-origin: no CORS headers at all
    for (const [srv, origin] of [
      [s, 'https://evil.example'],
      [s, 'https://app.example.com.evil.example'],
      [off, APP],
    ] as const) {
      const q = await srv.req('OPTIONS', '/records/x', undefined, { ...preflight, Origin: origin });
      assert.notEqual(q.status, 204);
      const r = await srv.req('GET', '/health', undefined, { Origin: origin });
      for (const res of [q, r]) {
        assert.equal(Object.keys(res.headers).filter((h) => h.startsWith('access-control-')).length, 0, `${origin}: ${JSON.stringify(res.headers)}`);
      }
    }
  } finally {
    await Promise.all([s.close(), off.close()]);
  }
});

// ---------------------------------------------------------------- logs

test('--log-format json --access-log: one JSON object per line, request ids taken or made, echoed', async () => {
  const s = await PithosServer.start({ testClock: false, args: ['--log-format', 'json', '--access-log'] });
  try {
    const a = await s.req('GET', '/variants/none', undefined, { 'X-Request-Id': 'client-id-42' });
    assert.equal(a.headers['x-request-id'], 'client-id-42');
    const b = await s.req('PUT', '/records/r', { record: { a: 1 } }, { 'X-Request-Id': 'has space' });
    const made = String(b.headers['x-request-id']);
    assert.match(made, /^[0-9a-f-]{36}$/, 'an insane id is replaced by a generated one');
    const c = await s.req('GET', '/records/r', undefined, { 'X-Request-Id': 'x'.repeat(200) });
    assert.match(String(c.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    await s.req('GET', '/livez', undefined, { 'Auth-Token': null });
    await waitFor(() => s.stdout, /"path":"\/livez"/, 'the access lines');
    const lines = s.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const l of lines) {
      assert.equal(typeof l.time, 'string');
      assert.ok(!Number.isNaN(Date.parse(String(l.time))));
      assert.ok(['info', 'warn', 'error'].includes(String(l.level)));
      assert.equal(typeof l.msg, 'string');
    }
    assert.ok(lines.some((l) => /^listening on http:\/\//.test(String(l.msg))));
    const req = lines.filter((l) => l.msg === 'request');
    assert.equal(req.length, 4);
    const first = req.find((l) => l.id === 'client-id-42')!;
    assert.deepEqual(
      { ...first, time: 0, ms: 0 },
      {
        time: 0,
        level: 'info',
        msg: 'request',
        id: 'client-id-42',
        method: 'GET',
        path: '/variants/none',
        status: 404,
        ms: 0,
        bytes: Number(a.headers['content-length']),
      },
    );
    assert.equal(typeof first.ms, 'number');
    assert.ok(req.some((l) => l.id === made && l.method === 'PUT' && l.status === 201));
    assert.ok(!s.stdout.includes(TOKEN) && !s.stderr.includes(TOKEN), 'the token is never logged');
  } finally {
    await s.close();
  }
});

// ---------------------------------------------------------------- config file

test('--config: a JSON file below env and flags; unknown keys exit 2; --print-config masks the secret', async () => {
  const cfg = path.join(tmp, 'pithos.json');
  writeFileSync(cfg, JSON.stringify({ host: '127.0.0.1', port: 0, 'auth-token': 'from-file', 'max-body-bytes': 200, 'cache-mb': 8, fsync: 'never' }));
  const printed = await runCli(['--print-config', '--config', cfg, '--cache-mb', '9'], { PITHOS_FSYNC: 'everysec' });
  assert.equal(printed.code, 0, printed.stderr);
  const eff = JSON.parse(printed.stdout) as Record<string, unknown>;
  assert.equal(eff['auth-token'], '********');
  assert.ok(!printed.stdout.includes('from-file'), 'the secret is masked');
  assert.equal(eff['max-body-bytes'], 200, 'file');
  assert.equal(eff.fsync, 'everysec', 'env beats file');
  assert.equal(eff['cache-mb'], 9, 'flag beats file');
  assert.equal(eff['segment-mb'], 64, 'default');
  assert.equal(eff['log-format'], 'text');

  writeFileSync(path.join(tmp, 'bad.json'), JSON.stringify({ port: 0, data_dir: 'x', colour: 'blue' }));
  const bad = await runCli(['--config', path.join(tmp, 'bad.json')]);
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, `pithos: config file ${path.join(tmp, 'bad.json')}: unknown key(s) 'data_dir', 'colour' (keys are the flags without '--')\n`);

  const s = await PithosServer.start({ bare: true, testClock: false, args: ['--config', cfg], env: { PITHOS_AUTH_TOKEN: 'from-env' } });
  try {
    expectSuccess(await s.req('PUT', '/records/c', { record: { a: 1 } }), 201, 'record created successfully');
    expectError(await s.req('GET', '/records/c', undefined, { 'Auth-Token': 'from-file' }), 401, 'wrong Auth-Token');
    expectError(await s.req('PUT', '/records/big', { record: { s: 'x'.repeat(300) } }, { Connection: 'close' }), 413);
    // The log store names its durability mode at start; the shared store has none.
    if (STORE === 'log') assert.match(s.stdout, /fsync never/);
  } finally {
    await s.close();
  }
});

test('--help lists the new flags and their variables', async () => {
  const r = await runCli(['--help']);
  for (const x of [
    '--config',
    '--tokens-file',
    '--tls-cert',
    '--tls-key',
    '--cors-origin',
    '--log-format',
    '--access-log',
    '--print-config',
    'PITHOS_CONFIG',
    'PITHOS_TOKENS_FILE',
    'PITHOS_TLS_CERT',
    'PITHOS_TLS_KEY',
    'PITHOS_CORS_ORIGIN',
    'PITHOS_LOG_FORMAT',
    'PITHOS_ACCESS_LOG',
  ]) {
    assert.ok(r.stdout.includes(x), `--help lacks ${x}`);
  }
});
