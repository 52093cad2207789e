/**
 * `npm run bench:backup [-- --gb 1]`: does an online backup stall writes?
 * Fills a fresh server (fsync always) with --gb GiB of 1 MiB records, then
 * measures durable 1 KiB PUTs from 8 connections for 10 s without a backup
 * and for the length of one GET /backup read as fast as the client can,
 * printing p50 / p99 / max of each and the backup's size and time.
 * Latency is measured per request here (no coordinated-omission correction:
 * 8 closed-loop clients); the HTTP benchmark (docs/benchmarks.md) is the
 * reference for throughput.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './proc.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const gbArg = process.argv.indexOf('--gb');
const GIB = gbArg > 0 ? Number(process.argv[gbArg + 1]) : 1;
const TOKEN = 'SECRET';

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
let host = '127.0.0.1';
let port = 0;

function call(method: string, path: string, body?: string, sink = false): Promise<{ status: number; bytes: number }> {
  return new Promise((res, rej) => {
    const req = request({ host, port, method, path, agent, headers: { 'Auth-Token': TOKEN } }, (r) => {
      let bytes = 0;
      r.on('data', (c: Buffer) => {
        bytes += c.length;
        if (!sink && bytes > 1 << 20) r.destroy(new Error('unexpectedly large answer'));
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, bytes }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end(body);
  });
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function writes(until: () => boolean): Promise<number[]> {
  const lat: number[] = [];
  const body = JSON.stringify({ record: { pad: 'x'.repeat(1000) } });
  let n = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (!until()) {
        const t = performance.now();
        const r = await call('PUT', `/records/w-${n++ % 5000}`, body);
        if (r.status !== 200 && r.status !== 201) throw new Error(`PUT answered ${r.status}`);
        lat.push(performance.now() - t);
      }
    }),
  );
  return lat;
}

const fmt = (xs: number[]): string =>
  `${xs.length} writes, p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms, max ${Math.max(...xs).toFixed(1)} ms`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-bench-backup-'));
  const srv = await startServer('pithos', process.execPath, [
    join(ROOT, 'bin', 'pithos'),
    '--port',
    '0',
    '--data-dir',
    join(dir, 'data'),
    '--auth-token',
    TOKEN,
    '--fsync',
    'always',
  ]);
  host = srv.host;
  port = srv.port;
  try {
    const mib = 'm'.repeat(1 << 20);
    const total = Math.round(GIB * 1024);
    const t0 = performance.now();
    for (let i = 0; i < total; i += 16) {
      await Promise.all(Array.from({ length: Math.min(16, total - i) }, (_, j) => call('PUT', `/records/big-${i + j}`, `{"record":{"v":"${mib}"}}`)));
    }
    process.stdout.write(
      `filled ${total} MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s; load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}\n`,
    );
    const quietEnd = performance.now() + 10_000;
    const quiet = await writes(() => performance.now() > quietEnd);
    process.stdout.write(`without a backup: ${fmt(quiet)}\n`);
    let done = false;
    const b0 = performance.now();
    const backup = call('GET', '/backup', undefined, true).then((r) => {
      done = true;
      return r;
    });
    const during = await writes(() => done);
    const b = await backup;
    const secs = (performance.now() - b0) / 1000;
    process.stdout.write(
      `during a backup of ${(b.bytes / 2 ** 30).toFixed(2)} GiB (${secs.toFixed(1)} s, ${(b.bytes / 2 ** 20 / secs).toFixed(0)} MiB/s, status ${b.status}): ${fmt(during)}\n`,
    );
    process.stdout.write(
      `load average after: ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}\n`,
    );
  } finally {
    agent.destroy();
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
