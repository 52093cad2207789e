/**
 * Connections that never send, trickle, or never read must not lock other
 * clients out or hold memory (docs/operations.md, the connection limits).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { rssMiB, serverSockets } from '../helpers/proc.js';
import { PithosServer, STORE, expectSuccess, rawRequest, sleep } from '../helpers/server.js';
import { reqBytes } from '../helpers/raw.js';

function silent(port: number): Promise<net.Socket> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.once('connect', () => resolve(s));
    s.once('close', () => resolve(s));
  });
}

test('under a 1,024 open-file limit, GET /health works while 1,100 silent clients are connected', async (t) => {
  const s = await PithosServer.start({ testClock: false, wrap: ['prlimit', '--nofile=1024:1024', '--'] });
  const socks: net.Socket[] = [];
  try {
    for (let i = 0; i < 1100; i += 100) {
      socks.push(...(await Promise.all(Array.from({ length: 100 }, () => silent(s.port)))));
    }
    await sleep(300);
    const held = serverSockets(s.child!.pid!);
    t.diagnostic(`server holds ${held} sockets with 1,100 silent clients (cap 768, plus the listener and two stdio pipes)`);
    // On the shared store the database pool's connections are sockets too (at most 10 by default).
    assert.ok(held <= 768 + 3 + (STORE === 'postgres' ? 10 : 0), `server holds ${held} sockets`);
    for (let i = 0; i < 5; i++) {
      const r = await rawRequest({ port: s.port, method: 'GET', path: '/health', headers: { 'Auth-Token': s.token }, agent: false });
      assert.equal(r.status, 200, r.raw);
    }
    assert.match(s.stdout + s.stderr, /open-file limit is 1024: at most 768 connections/);
  } finally {
    for (const x of socks) x.destroy();
    await s.close();
  }
});

test(
  'clients pipelining GETs of a 10 MiB record and never reading are bounded and cut off',
  {
    skip:
      STORE === 'postgres'
        ? "HTTP output bounds do not depend on the store; 60 reads of a 10 MiB record through the pool outlast this test's window, so it runs on the log pass"
        : false,
  },
  async (t) => {
    const s = await PithosServer.start({ testClock: false });
    const socks: net.Socket[] = [];
    try {
      const big = JSON.stringify({ record: { s: 'x'.repeat(10 * 1024 * 1024) } });
      expectSuccess(await s.req('PUT', '/records/big', big), 201, 'record created successfully');
      assert.equal((await s.req('GET', '/records/big')).status, 200);
      const before = rssMiB(s.child!.pid!);
      const sockets0 = serverSockets(s.child!.pid!);
      const get = reqBytes('GET', '/records/big', s.token);
      for (let i = 0; i < 20; i++) {
        const sock = net.connect(s.port, '127.0.0.1');
        sock.on('error', () => {});
        sock.pause(); // never reads
        sock.write(get + get + get);
        socks.push(sock);
      }
      let peak = before;
      const t0 = Date.now();
      let released = -1;
      while (Date.now() - t0 < 16_000) {
        await sleep(250);
        // a new client keeps getting answers meanwhile
        const r = await rawRequest({ port: s.port, method: 'GET', path: '/health', headers: { 'Auth-Token': s.token }, agent: false });
        assert.equal(r.status, 200, r.raw);
        peak = Math.max(peak, rssMiB(s.child!.pid!));
        if (serverSockets(s.child!.pid!) <= sockets0) {
          released = Date.now() - t0;
          break;
        }
      }
      t.diagnostic(`RSS before ${before} MiB, peak ${peak} MiB, after ${rssMiB(s.child!.pid!)} MiB; stalled connections released after ${released} ms`);
      assert.ok(released >= 0, 'the stalled connections must be closed within 16 s');
      // An answer of 10 MiB costs about 20 MiB while queued (the text and its bytes): one per
      // connection is about 400 MiB, all three (unbounded, 1 GB was measured without the caps) about 1.2 GB.
      assert.ok(peak - before < 700, `RSS grew by ${peak - before} MiB`);
    } finally {
      for (const x of socks) x.destroy();
      await s.close();
    }
  },
);

test('slow clients: 1,000 connections trickling headers or bodies a byte a second, and readers that never read; others keep their latency', async (t) => {
  const s = await PithosServer.start({ testClock: false });
  const socks: net.Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  try {
    const mib = JSON.stringify({ record: { s: 'y'.repeat(1024 * 1024) } });
    expectSuccess(await s.req('PUT', '/records/mib', mib), 201, 'record created successfully');
    const probe = async (): Promise<number> => {
      const t1 = performance.now();
      const r = await s.req('GET', '/health');
      assert.equal(r.status, 200, r.raw);
      const w = await s.req('PUT', '/records/probe', { record: { at: Date.now() } });
      assert.ok(w.status === 200 || w.status === 201, w.raw);
      return performance.now() - t1;
    };
    const baseline: number[] = [];
    for (let i = 0; i < 20; i++) baseline.push(await probe());
    const rss0 = rssMiB(s.child!.pid!);
    const headers = reqBytes('PUT', '/records/slow', s.token, '{"record":{"a":1}}');
    const bodyHead = `PUT /records/slow HTTP/1.1\r\nHost: x\r\nAuth-Token: ${s.token}\r\nContent-Length: 100\r\n\r\n`;
    const open = async (n: number, first: string, rest: string): Promise<void> => {
      const batch = await Promise.all(Array.from({ length: n }, () => silent(s.port)));
      for (const sock of batch) {
        sock.write(first);
        let i = 0;
        timers.push(
          setInterval(() => {
            if (!sock.destroyed && i < rest.length) sock.write(rest[i++]!);
          }, 1000),
        );
        socks.push(sock);
      }
    };
    await open(490, headers.slice(0, 1), headers.slice(1)); // headers, a byte a second
    await open(490, bodyHead, '{"record":{"a":1}}'.padEnd(100)); // body, a byte a second
    for (let i = 0; i < 20; i++) {
      const sock = net.connect(s.port, '127.0.0.1');
      sock.on('error', () => {});
      sock.pause();
      const get = reqBytes('GET', '/records/mib', s.token);
      sock.write(get.repeat(5));
      socks.push(sock);
    }
    const during: number[] = [];
    let peak = rss0;
    const t0 = Date.now();
    while (Date.now() - t0 < 12_000) {
      during.push(await probe());
      peak = Math.max(peak, rssMiB(s.child!.pid!));
      await sleep(50);
    }
    const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
    t.diagnostic(
      `probe (GET /health + PUT record) ms: before p50 ${q(baseline, 0.5).toFixed(1)} max ${Math.max(...baseline).toFixed(1)}; ` +
        `during p50 ${q(during, 0.5).toFixed(1)} p99 ${q(during, 0.99).toFixed(1)} max ${Math.max(...during).toFixed(1)} (${during.length} probes); ` +
        `RSS ${rss0} MiB before, peak ${peak} MiB; server sockets ${serverSockets(s.child!.pid!)}`,
    );
    assert.ok(during.length >= 20, `only ${during.length} probes in 12 s`);
    assert.ok(q(during, 0.5) < 200, `median probe ${q(during, 0.5)} ms`);
    assert.ok(peak - rss0 < 300, `RSS grew by ${peak - rss0} MiB`);
  } finally {
    for (const x of timers) clearInterval(x);
    for (const x of socks) x.destroy();
    await s.close();
  }
});
