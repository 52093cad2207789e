/**
 * Black-box TLS test (docs/operations.md, "TLS"): a self-signed certificate made with openssl at
 * test time, an HTTPS round trip, then a new certificate put in place and SIGHUP: a new
 * connection sees the new certificate; a bad pair on reload keeps the one in force.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { PithosServer, rawRequest, runCli, sleep } from '../helpers/server.js';

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-tls-'));
});
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/** A self-signed P-256 certificate for 127.0.0.1, written to cert/key; returns the PEM certificate. */
function makeCert(cert: string, key: string, cn: string): string {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${cn}`, '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return readFileSync(cert, 'utf8');
}

interface TlsRes { status: number; body: string; fingerprint: string }

/** One request on a new TLS connection that trusts only `ca`. */
function httpsReq(port: number, ca: string, method: string, p: string, token: string, body?: unknown): Promise<TlsRes> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const r = https.request({ host: '127.0.0.1', port, method, path: p, ca, agent: false,
      headers: { 'Auth-Token': token, ...(payload ? { 'Content-Length': payload.length } : {}) } }, (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body: text, fingerprint }));
    });
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
    // plain HTTP on the TLS port gets no answer of ours
    const plain = await rawRequest({ port: s.port, method: 'GET', path: '/health', headers: { 'Auth-Token': s.token }, agent: false }).catch((e: Error) => e);
    assert.ok(plain instanceof Error || plain.status === 400, `plain HTTP was served: ${JSON.stringify(plain)}`);

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
