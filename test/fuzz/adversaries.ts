/**
 * Two adversarial modes of the fuzzer, aimed at what a client can do before
 * it has authenticated (docs/operations.md, "Before authentication"):
 *
 * - `tlsAttack`: against a server on --tls-cert, TCP connections that never
 *   start the handshake, that stop in the middle of it or send garbage as
 *   one, and plain HTTP sent to the TLS port; meanwhile a real HTTPS client
 *   checks `GET /health`. Checked: the server's open sockets never exceed the
 *   connection cap, every stalled connection is closed within the handshake
 *   limit, plain HTTP gets the plain-text 400, every HTTPS check succeeds.
 * - `noTokenBodies`: requests without a valid token carrying bodies from a
 *   byte to 16 MiB (declared or chunked) to every kind of path. Checked: a
 *   public path answers exactly 400 "… takes no request body", any other
 *   401, always as the JSON envelope; the server's resident memory stays
 *   bounded (the caller samples it).
 *
 * Both are seeded, bounded in time, and aimed at 127.0.0.1 only.
 */
import { mkdtempSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseAnswers } from '../helpers/raw.js';
import { rng } from '../helpers/rng.js';
import { makeCert } from '../helpers/tls.js';

/** A connection to the TLS port must have finished its handshake this long after the accept (connections.ts, HANDSHAKE_MS). */
export const HANDSHAKE_LIMIT_MS = 10_000;
/** The sweep that enforces it runs once a second; a loaded machine may add a little. */
const HANDSHAKE_SLACK_MS = 3_000;

export const PLAIN_ON_TLS_ANSWER = 'This port speaks HTTPS: the plain HTTP request was sent to an HTTPS port. Use https:// in the address.\n';

export interface AttackReport {
  seed: number;
  ms: number;
  /** Connections opened, by kind. */
  opened: Record<string, number>;
  httpsChecks: number;
  /** Largest number of sockets the server held at one sample. */
  peakSockets: number;
  violations: string[];
}

export interface TlsAttackOptions {
  port: number;
  token: string;
  /** The server's certificate (the HTTPS client trusts only it). */
  ca: string;
  seed: number;
  durationMs: number;
  /** The server's --max-connections. */
  maxConnections: number;
  /** Sockets the server holds now (/proc/<pid>/fd). */
  sockets: () => number;
  /** Sockets the server may hold beyond the cap: the listener, stdio, a database pool. */
  socketSlack: number;
}

interface Stalled {
  sock: net.Socket;
  kind: string;
  openedAt: number;
  closedAt?: number;
}

function open(port: number, kind: string, first: Buffer | undefined, all: Stalled[]): Stalled {
  const o: Stalled = { sock: net.connect(port, '127.0.0.1'), kind, openedAt: Date.now() };
  o.sock.on('error', () => {});
  o.sock.on('data', () => {});
  o.sock.once('close', () => (o.closedAt = Date.now()));
  if (first !== undefined) o.sock.once('connect', () => o.sock.write(first));
  all.push(o);
  return o;
}

/** One request on a new HTTPS connection; the status, or the error's code. */
function httpsStatus(port: number, ca: string, token: string): Promise<number | string> {
  return new Promise((resolve) => {
    const r = https.request({ host: '127.0.0.1', port, path: '/health', ca, agent: false, headers: { 'Auth-Token': token }, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    r.on('timeout', () => r.destroy(new Error('timeout')));
    r.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    r.end();
  });
}

/** Plain HTTP on the TLS port: the whole answer, or what went wrong. */
function plainExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => {});
    s.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    s.write(bytes);
    setTimeout(() => s.destroy(), 10_000).unref();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function tlsAttack(o: TlsAttackOptions): Promise<AttackReport> {
  const r = rng(o.seed);
  const t0 = Date.now();
  const report: AttackReport = { seed: o.seed, ms: 0, opened: {}, httpsChecks: 0, peakSockets: 0, violations: [] };
  const violation = (s: string) => {
    if (report.violations.length < 50) report.violations.push(`seed ${o.seed}: ${s}`);
  };
  const stalled: Stalled[] = [];
  const count = (k: string) => (report.opened[k] = (report.opened[k] ?? 0) + 1);
  const until = t0 + o.durationMs;
  // At the cap, a new connection is accepted (it has its descriptor) before the
  // idle one it evicts is closed, and a close completes on the next turn of the
  // event loop: a sample may see those two over the cap.
  const cap = o.maxConnections + o.socketSlack + 2;
  const sampler = setInterval(() => {
    const n = o.sockets();
    report.peakSockets = Math.max(report.peakSockets, n);
    if (n > cap) violation(`the server holds ${n} sockets, over the cap of ${o.maxConnections} (+${o.socketSlack}, +2 in passing)`);
  }, 100);
  try {
    await Promise.all([
      // Connections that stall before or inside the handshake, or send garbage as one.
      (async () => {
        while (Date.now() < until) {
          const roll = r();
          if (roll < 0.4) {
            count('silent');
            open(o.port, 'silent', undefined, stalled);
          } else if (roll < 0.7) {
            count('half handshake');
            // A TLS record header announcing a ClientHello, then part of it, then nothing.
            const body = Buffer.from(Array.from({ length: 1 + Math.floor(r() * 40) }, () => Math.floor(r() * 256)));
            open(o.port, 'half handshake', Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x01, 0x00]), body]), stalled);
          } else {
            count('garbage');
            const first = Math.floor(r() * 64); // control bytes and punctuation: neither TLS nor an HTTP method
            const body = Buffer.from(Array.from({ length: Math.floor(r() * 300) }, () => Math.floor(r() * 256)));
            open(o.port, 'garbage', Buffer.concat([Buffer.from([first === 0x16 ? 0x15 : first]), body]), stalled);
          }
          await sleep(5 + Math.floor(r() * 20));
        }
      })(),
      // Plain HTTP on the TLS port.
      (async () => {
        const methods = ['GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'get', 'PRI'];
        while (Date.now() < until) {
          count('plain http');
          const m = methods[Math.floor(r() * methods.length)];
          const answer = await plainExchange(o.port, `${m} /records/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuth-Token: ${o.token}\r\nContent-Length: 2\r\n\r\n{}`);
          const a = parseAnswers(Buffer.from(answer, 'latin1')).answers[0];
          if (a === undefined || a.status !== 400 || a.headers['content-type'] !== 'text/plain; charset=utf-8' || a.body !== PLAIN_ON_TLS_ANSWER) {
            violation(`plain HTTP (${m}) on the TLS port got ${JSON.stringify(answer.slice(0, 200))}`);
          }
          await sleep(20 + Math.floor(r() * 50));
        }
      })(),
      // A real client, all along.
      (async () => {
        while (Date.now() < until) {
          report.httpsChecks++;
          const st = await httpsStatus(o.port, o.ca, o.token);
          if (st !== 200) violation(`an HTTPS client got ${st} during the attack`);
          await sleep(100);
        }
      })(),
    ]);
    // Every stalled connection is closed by the server within the handshake limit of its accept.
    const deadline = Date.now() + HANDSHAKE_LIMIT_MS + HANDSHAKE_SLACK_MS;
    while (stalled.some((s) => s.closedAt === undefined) && Date.now() < deadline) await sleep(200);
    for (const s of stalled) {
      const held = (s.closedAt ?? Date.now()) - s.openedAt;
      if (s.closedAt === undefined || held > HANDSHAKE_LIMIT_MS + HANDSHAKE_SLACK_MS) {
        violation(`a ${s.kind} connection was ${s.closedAt === undefined ? 'still open' : 'closed'} after ${held} ms`);
      }
    }
    const st = await httpsStatus(o.port, o.ca, o.token);
    if (st !== 200) violation(`an HTTPS client got ${st} after the attack`);
  } finally {
    clearInterval(sampler);
    for (const s of stalled) s.sock.destroy();
  }
  report.ms = Date.now() - t0;
  return report;
}

export interface BodiesOptions {
  port: number;
  /** The real token: never sent, except mangled. */
  token: string;
  seed: number;
  durationMs: number;
  workers?: number;
}

export interface BodiesReport {
  seed: number;
  ms: number;
  violations: string[];
  requests: number;
  /** Body bytes the clients wrote (the server refused and dropped them). */
  sentBytes: number;
  byStatus: Record<string, number>;
}

/** Served without a token: a body there is refused with 400. */
const PUBLIC = ['/openapi.json', '/openapi.json?x=1', '/livez', '/readyz', '/console', '/console/', '/console/app.js', '/console/nope.png'];
const PRIVATE = [
  '/health',
  '/metrics',
  '/records/x',
  '/tables/t/rows',
  '/tables/t/query',
  '/txns',
  '/watch',
  '/backup',
  '/variants/v',
  '/locks/l',
  '/favicon.ico',
  '/',
  '/consolex',
  '/no/such/path',
  '/_test/clock',
];
const METHODS = ['GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS'];

/** One request with a body on a new connection; stops writing once an answer has come. */
function bodyRequest(port: number, head: string, size: number, chunked: boolean): Promise<{ data: Buffer; sent: number }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let sent = 0;
    let answered = false;
    let gone = false;
    const piece = Buffer.alloc(Math.min(size, 256 * 1024), 0x7b);
    const finish = () => {
      if (gone) return;
      gone = true;
      s.destroy();
      resolve({ data: Buffer.concat(chunks), sent });
    };
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      if (parseAnswers(Buffer.concat(chunks)).answers.some((a) => a.status !== 100)) {
        answered = true;
        // Give the answer's last bytes a moment, then go.
        setTimeout(finish, 20);
      }
    });
    s.on('error', () => {});
    s.once('close', finish);
    const pump = (): void => {
      while (!gone && !answered && sent < size) {
        const n = Math.min(piece.length, size - sent);
        sent += n;
        const p = n === piece.length ? piece : piece.subarray(0, n);
        const ok = s.write(chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), p, Buffer.from('\r\n')]) : p);
        if (!ok) return void s.once('drain', pump);
      }
      if (!gone && !answered && chunked) s.write('0\r\n\r\n');
    };
    s.once('connect', () => {
      s.write(head);
      pump();
    });
    setTimeout(finish, 10_000).unref();
  });
}

export async function noTokenBodies(o: BodiesOptions): Promise<BodiesReport> {
  const t0 = Date.now();
  const report: BodiesReport = { seed: o.seed, ms: 0, violations: [], requests: 0, sentBytes: 0, byStatus: {} };
  const violation = (s: string) => {
    if (report.violations.length < 50) report.violations.push(`seed ${o.seed}: ${s}`);
  };
  const until = t0 + o.durationMs;
  await Promise.all(
    Array.from({ length: o.workers ?? 6 }, async (_, w) => {
      const r = rng(o.seed + w * 7919);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
      while (Date.now() < until) {
        const isPublic = r() < 0.5;
        const path = isPublic ? pick(PUBLIC) : pick(PRIVATE);
        // GET /openapi.json is the public route; other methods there are not routed, so they need a token.
        const method = path.startsWith('/openapi.json') ? 'GET' : pick(METHODS);
        // Mostly small bodies; one in five from 1 to 16 MiB.
        const size = r() < 0.8 ? 1 + Math.floor(r() * 64 * 1024) : 1024 * 1024 * (1 + Math.floor(r() * 16));
        const chunked = r() < 0.4;
        const headers = ['Host: 127.0.0.1', chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`];
        const t = r();
        if (t < 0.3) headers.push(`Auth-Token: ${pick(['wrong', '', o.token + 'x', o.token.slice(1)])}`);
        if (r() < 0.1) headers.push('Expect: 100-continue');
        if (r() < 0.2) headers.push(`Content-Type: ${pick(['application/json', 'application/x-www-form-urlencoded', 'text/plain'])}`);
        if (method === 'OPTIONS' && r() < 0.5) headers.push('Origin: http://example.com', 'Access-Control-Request-Method: PUT');
        const head = `${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`;
        report.requests++;
        const { data, sent } = await bodyRequest(o.port, head, size, chunked);
        report.sentBytes += sent;
        const a = parseAnswers(data).answers.find((x) => x.status !== 100);
        const what = `${method} ${path} (${chunked ? 'chunked' : 'declared'} ${size} bytes)`;
        if (a === undefined) {
          violation(`${what}: no answer (${JSON.stringify(data.subarray(0, 200).toString('latin1'))})`);
          continue;
        }
        report.byStatus[a.status] = (report.byStatus[a.status] ?? 0) + 1;
        const j = a.json as { status?: string; message?: string } | undefined;
        if (a.headers['content-type'] !== 'application/json; charset=utf-8' || j?.status !== 'error') {
          violation(`${what}: not an error envelope: ${a.status} ${a.body.slice(0, 200)}`);
          continue;
        }
        const bare = path.indexOf('?') < 0 ? path : path.slice(0, path.indexOf('?'));
        if (isPublic) {
          if (a.status !== 400 || j.message !== `${method} ${bare} takes no request body`) violation(`${what}: ${a.status} ${a.body.slice(0, 200)}`);
        } else if (a.status !== 401) {
          violation(`${what}: ${a.status} ${a.body.slice(0, 200)} without a valid token`);
        }
      }
    }),
  );
  report.ms = Date.now() - t0;
  return report;
}

export { rssMiB, serverSockets } from '../helpers/proc.js';

/** A self-signed certificate for 127.0.0.1 in a new directory: [cert path, key path, PEM, directory]. */
export function selfSigned(): [string, string, string, string] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-fuzz-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  return [cert, key, makeCert(cert, key, 'pithos-fuzz'), dir];
}
