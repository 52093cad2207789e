/**
 * Black-box TLS test (docs/operations.md, "TLS"): a self-signed certificate made with openssl at
 * test time, an HTTPS round trip, then a new certificate put in place and SIGHUP: a new
 * connection sees the new certificate; a bad pair on reload keeps the one in force.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { serverSockets } from '../helpers/proc.js';
import { Redis } from 'ioredis';
import { PithosServer, STORE, TOKEN, rawRequest, runCli, sleep } from '../helpers/server.js';
import { rawExchange, startWithResp } from '../helpers/redis.js';
import { makeCert } from '../helpers/tls.js';

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-tls-'));
});
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

interface TlsRes {
  status: number;
  body: string;
  fingerprint: string;
}

/** One request on a new TLS connection that trusts only `ca`. */
function httpsReq(port: number, ca: string, method: string, p: string, token: string, body?: unknown): Promise<TlsRes> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const r = https.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        ca,
        agent: false,
        headers: { 'Auth-Token': token, ...(payload ? { 'Content-Length': payload.length } : {}) },
      },
      (res) => {
        const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (d: string) => (text += d))
          .on('end', () => resolve({ status: res.statusCode ?? 0, body: text, fingerprint }));
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}

const fp = (pem: string): string => new X509Certificate(pem).fingerprint256;

test('TLS: HTTPS round trip, plain HTTP refused, SIGHUP reload to a new certificate seen by a new connection', async () => {
  const cert = path.join(tmp, 'cert.pem');
  const key = path.join(tmp, 'key.pem');
  const pemA = makeCert(cert, key, 'pithos-a');
  const s = await PithosServer.start({ testClock: false, args: ['--tls-cert', cert, '--tls-key', key] });
  try {
    assert.match(s.stdout, /listening on https:\/\/127\.0\.0\.1:\d+/);
    const put = await httpsReq(s.port, pemA, 'PUT', '/records/tls', s.token, { record: { secure: true } });
    assert.equal(put.status, 201, put.body);
    assert.equal(put.fingerprint, fp(pemA));
    const get = await httpsReq(s.port, pemA, 'GET', '/records/tls', s.token);
    assert.deepEqual(JSON.parse(get.body), { status: 'success', message: 'record queried successfully', data: { secure: true } });
    assert.equal((await httpsReq(s.port, pemA, 'GET', '/livez', '')).body, 'ok\n');
    // plain HTTP on the TLS port: a plain-text 400 saying so, as nginx answers it; nothing served
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const plain = await rawRequest({ port: s.port, method, path: '/records/tls', headers: { 'Auth-Token': s.token }, agent: false });
      assert.equal(plain.status, 400, plain.raw);
      assert.equal(plain.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(plain.headers.connection, 'close');
      assert.equal(plain.raw, 'This port speaks HTTPS: the plain HTTP request was sent to an HTTPS port. Use https:// in the address.\n');
    }
    assert.equal((await httpsReq(s.port, pemA, 'GET', '/records/tls', s.token)).status, 200, 'the record is still there');

    // new certificate at the same paths, then SIGHUP
    const pemB = makeCert(cert, key, 'pithos-b');
    assert.notEqual(fp(pemA), fp(pemB));
    s.signal('SIGHUP');
    const end = Date.now() + 5000;
    while (!/SIGHUP: reloaded TLS certificate/.test(s.stdout)) {
      if (Date.now() > end) throw new Error(`no reload line:\n${s.stdout}\n${s.stderr}`);
      await sleep(20);
    }
    const afterB = await httpsReq(s.port, pemB, 'GET', '/records/tls', s.token);
    assert.equal(afterB.status, 200);
    assert.equal(afterB.fingerprint, fp(pemB), 'a new connection gets the new certificate');
    await assert.rejects(httpsReq(s.port, pemA, 'GET', '/records/tls', s.token), /self[- ]signed|certificate/i, 'the old certificate is gone');

    // a broken pair on reload: the certificate in force stays
    writeFileSync(key, 'not a key\n');
    s.signal('SIGHUP');
    const end2 = Date.now() + 5000;
    while (!/SIGHUP: kept the TLS certificate in force/.test(s.stderr)) {
      if (Date.now() > end2) throw new Error(`no refusal line:\n${s.stderr}`);
      await sleep(20);
    }
    assert.equal((await httpsReq(s.port, pemB, 'GET', '/records/tls', s.token)).status, 200);
  } finally {
    await s.close();
  }
});

test('TLS: the Redis protocol port serves TLS with the same certificate (rediss://)', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-resp-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const ca = makeCert(cert, key, 'resp');
  const { srv, port } = await startWithResp({ args: ['--tls-cert', cert, '--tls-key', key] });
  const r = new Redis({ port, host: '127.0.0.1', password: TOKEN, tls: { ca }, lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    assert.match(srv.stdout + srv.stderr, /Redis protocol on rediss:\/\//);
    await r.connect();
    assert.equal(await r.set('tls:k', 'v'), 'OK');
    assert.equal(await r.get('tls:k'), 'v');
    const plain = await rawExchange(port, `AUTH ${TOKEN}\r\nPING\r\n`, 1000);
    assert.doesNotMatch(plain.data, /PONG/, 'plain RESP is not served on a TLS port');
  } finally {
    r.disconnect();
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('TLS: a key that does not match the certificate is refused at start (exit 2)', async () => {
  const c1 = path.join(tmp, 'c1.pem');
  const k1 = path.join(tmp, 'k1.pem');
  const c2 = path.join(tmp, 'c2.pem');
  const k2 = path.join(tmp, 'k2.pem');
  makeCert(c1, k1, 'one');
  makeCert(c2, k2, 'two');
  const r = await runCli(['--port', '0', '--data-dir', path.join(tmp, 'd'), '--auth-token', 'x', '--tls-cert', c1, '--tls-key', k2]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /^pithos: --tls-cert .* \/ --tls-key .*: .*\n$/);
});

/** A TCP connection that sends `first` (or nothing) and then stays silent; `closedAt` is set when the server closes it. */
function stalled(port: number, first?: Buffer): Promise<{ sock: net.Socket; closedAt?: number }> {
  return new Promise((resolve) => {
    const o: { sock: net.Socket; closedAt?: number } = { sock: net.connect(port, '127.0.0.1') };
    o.sock.on('error', () => {});
    o.sock.on('data', () => {});
    o.sock.once('close', () => (o.closedAt = Date.now()));
    o.sock.once('connect', () => {
      if (first !== undefined) o.sock.write(first);
      resolve(o);
    });
  });
}

test('TLS: connections that never finish the handshake count against --max-connections and are closed within 10 s; HTTPS still works', async (t) => {
  const cert = path.join(tmp, 'cert-hs.pem');
  const key = path.join(tmp, 'key-hs.pem');
  const pem = makeCert(cert, key, 'pithos-hs');
  const max = 20;
  const s = await PithosServer.start({ testClock: false, args: ['--tls-cert', cert, '--tls-key', key, '--max-connections', String(max)] });
  const conns: Array<{ sock: net.Socket; closedAt?: number }> = [];
  try {
    const base = serverSockets(s.child!.pid!);
    const t0 = Date.now();
    // 60 that never send a byte, and 20 that start a handshake record and stop.
    for (let i = 0; i < 60; i++) conns.push(await stalled(s.port));
    for (let i = 0; i < 20; i++) conns.push(await stalled(s.port, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])));
    await sleep(500);
    const held = serverSockets(s.child!.pid!);
    t.diagnostic(`server holds ${held} sockets with 80 stalled TLS connections (${base} before, cap ${max})`);
    // The cap, plus the listener and two stdio pipes; on the shared store the pool's connections too (at most 10).
    assert.ok(held <= max + 3 + (STORE === 'postgres' ? 10 : 0), `server holds ${held} sockets`);
    // A real client gets through: it evicts the oldest connection still in its handshake.
    const r = await httpsReq(s.port, pem, 'GET', '/health', s.token);
    assert.equal(r.status, 200, r.body);
    // Every stalled connection is closed by the server: the cap's evictions at once, the rest at the handshake limit.
    const deadline = t0 + 15_000;
    while (conns.some((c) => c.closedAt === undefined) && Date.now() < deadline) await sleep(200);
    const open = conns.filter((c) => c.closedAt === undefined).length;
    const last = Math.max(...conns.map((c) => c.closedAt ?? Infinity)) - t0;
    t.diagnostic(`last stalled connection closed by the server ${last} ms after the first was opened; ${open} still open`);
    assert.equal(open, 0, `${open} stalled TLS connections still open after 15 s`);
    const after = serverSockets(s.child!.pid!);
    assert.ok(after <= base, `server holds ${after} sockets after the stalled ones are gone, ${base} before`);
    assert.equal((await httpsReq(s.port, pem, 'GET', '/livez', '')).body, 'ok\n');
  } finally {
    for (const c of conns) c.sock.destroy();
    await s.close();
  }
});
