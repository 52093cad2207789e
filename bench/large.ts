/**
 * Large collections (docs/benchmarks-history.md, "Large collections"; docs/query.md,
 * "Large collections"): how other requests fare while a whole-collection
 * request of a million elements runs. One server (log store, or `--store`
 * given), holding a 1,000,000-item list, a 1,000,000-member set and sorted
 * set, and a second 1,000,000-member set (half of it shared with the first).
 * While each large request runs, a probe sends GET of a small variant every
 * 10 ms on its own connection; its p50 / p99 / max are printed with the
 * request's own time and size. Then 20 concurrent GETs of the list (the
 * server's peak RSS above its RSS before them, and the probe), and a combine
 * with `store` of 16 × 1M members (refused up front: docs/api.md, "Sets").
 *
 * Run by bench/collections.ts (PITHOS_BENCH_LARGE=0 skips it); alone:
 *   node dist/bench/large.js
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Agent, request } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, type Server } from './proc.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MEMBERS = Number(process.env.PITHOS_BENCH_LARGE_MEMBERS ?? 1_000_000);
/** PITHOS_BENCH_LARGE_ONLY=writes: only the probed large writes (after the fill); =reads: the reads and the concurrent GETs only. */
const ONLY = process.env.PITHOS_BENCH_LARGE_ONLY;
const SERVER = process.env.PITHOS_BENCH_SERVER ?? join(ROOT, 'bin', 'pithos');
/** Extra options for the server's node (`--cpu-prof`, `--trace-gc`: where a probe's wait comes from), space-separated. */
const NODE_ARGS = (process.env.PITHOS_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const TOKEN = 'SECRET';
const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const member = (i: number): string => 'member-' + String(i).padStart(9, '0');

interface Answer {
  status: number;
  bytes: number;
  body: string;
}

function call(s: Server, method: string, path: string, body?: string, agent: Agent | false = false, keep = false): Promise<Answer> {
  return new Promise((res, rej) => {
    const headers: Record<string, string> = { 'Auth-Token': TOKEN };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const req = request({ host: s.host, port: s.port, method, path, headers, agent }, (r) => {
      const cs: Buffer[] = [];
      let bytes = 0;
      r.on('data', (c: Buffer) => {
        bytes += c.length;
        if (keep) cs.push(c);
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, bytes, body: keep ? Buffer.concat(cs).toString('utf8') : '' }));
      r.on('error', rej);
    });
    req.on('error', rej);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

async function ok(s: Server, method: string, path: string, body?: string): Promise<void> {
  const r = await call(s, method, path, body, false, true);
  if (r.status !== 200 && r.status !== 201) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 200)}`);
}

/** Probes whose connection failed (each also counted with its wait in the latencies). */
let probeErrors = 0;

const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

/** Runs `work` while a GET of a small variant starts every 10 ms on its own connection. */
async function probed<T>(s: Server, work: () => Promise<T>): Promise<{ result: T; lat: number[]; ms: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  await call(s, 'GET', '/variants/probe', undefined, agent);
  let done = false;
  const lat: number[] = [];
  const loop = (async () => {
    while (!done) {
      const t = performance.now();
      // A server held long enough drops the probe's connection (seen before large writes were sliced): counted as its wait.
      await call(s, 'GET', '/variants/probe', undefined, agent).catch(() => {
        probeErrors++;
      });
      const ms = performance.now() - t;
      lat.push(ms);
      if (ms < 10) await new Promise((r) => setTimeout(r, 10 - ms));
    }
  })();
  const t0 = performance.now();
  try {
    const result = await work();
    return { result, lat, ms: performance.now() - t0 };
  } finally {
    done = true;
    await loop;
    agent.destroy();
  }
}

function probeLine(lat: number[]): string {
  const t = [...lat].sort((a, b) => a - b);
  const errors = probeErrors > 0 ? ` (${probeErrors} failed)` : '';
  probeErrors = 0;
  return `probe n ${lat.length}${errors}, p50 ${fmt(pct(t, 50), 1)} / p99 ${fmt(pct(t, 99), 1)} / max ${fmt(t[t.length - 1], 1)} ms`;
}

function rssMb(pid: number | undefined): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) / 1024;
}

async function fill(s: Server): Promise<void> {
  const t = performance.now();
  // Whole PUTs (the server runs with a larger body limit for them), in pieces of JSON text.
  const list: string[] = [];
  const set: string[] = [];
  const set2: string[] = [];
  const zset: string[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const m = JSON.stringify(member(i));
    list.push(m);
    set.push(m);
    set2.push(JSON.stringify(member(i + MEMBERS / 2)));
    zset.push(`${m}:${(i * 2654435761) % 1_000_003}`);
  }
  await ok(s, 'PUT', '/lists/big', `{"list":[${list.join(',')}]}`);
  await ok(s, 'PUT', '/sets/big', `{"set":[${set.join(',')}]}`);
  await ok(s, 'PUT', '/sets/big2', `{"set":[${set2.join(',')}]}`);
  await ok(s, 'PUT', '/zsets/big', `{"zset":{${zset.join(',')}}}`);
  await ok(s, 'PUT', '/variants/probe', '{"variant":1}');
  // The sorted set's first read builds its rank order: not what is measured here.
  await ok(s, 'GET', '/zsets/big?start=0&stop=0');
  console.log(`    filled (PUT of each whole) in ${fmt((performance.now() - t) / 1000, 1)} s`);
}

/**
 * Whole PUTs of a million members, and a combine with `store` at its input
 * limit (2 × 100,000), each probed: other requests while a large write is
 * parsed, checked and applied.
 */
async function largeWrites(s: Server): Promise<void> {
  const set: string[] = [];
  const zset: string[] = [];
  const mid: string[] = [];
  const mid2: string[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const m = JSON.stringify(member(MEMBERS - i));
    set.push(m);
    zset.push(`${m}:${i % 1000}`);
    if (i < MEMBERS / 10) {
      mid.push(JSON.stringify(member(2 * i)));
      mid2.push(JSON.stringify(member(2 * i + 1)));
    }
  }
  await ok(s, 'PUT', '/sets/mid', `{"set":[${mid.join(',')}]}`);
  await ok(s, 'PUT', '/sets/mid2', `{"set":[${mid2.join(',')}]}`);
  const writes: Array<[string, string, string, string]> = [
    ['PUT /sets/w (1M members, replacing)', 'PUT', '/sets/w', `{"set":[${set.join(',')}]}`],
    ['PUT /zsets/w (1M members, replacing)', 'PUT', '/zsets/w', `{"zset":{${zset.join(',')}}}`],
    ['combine union 2 × 100K with store', 'POST', '/sets/mid/combine', '{"op":"union","with":["mid2"],"store":"u"}'],
  ];
  // Each target holds a value first: the PUT replaces it, as the crash tests' PUTs do.
  await ok(s, 'PUT', '/sets/w', '{"set":["old"]}');
  await ok(s, 'PUT', '/zsets/w', '{"zset":{"old":1}}');
  for (const [what, method, path, body] of writes) {
    const { result, lat, ms } = await probed(s, () => call(s, method, path, body, false, true));
    if (result.status !== 200 && result.status !== 201) throw new Error(`${what}: ${result.status} ${result.body.slice(0, 200)}`);
    console.log(
      `    ${what.padEnd(40)} ${fmt(ms).padStart(6)} ms, ${fmt(Buffer.byteLength(body) / 1e6, 1).padStart(5)} MB in; ${probeLine(lat)} (target p99 ≤ 50, max ≤ 200)`,
    );
  }
}

export async function largeCollections(store?: string): Promise<void> {
  console.log(`  large collections, ${fmt(MEMBERS)} elements (${store === undefined ? 'log store' : 'PostgreSQL'}):`);
  const data = mkdtempSync(join(tmpdir(), 'pithos-bench-large-'));
  const dir = store === undefined ? ['--data-dir', data, '--fsync', 'never', '--cache-mb', '1024'] : ['--store', store, '--pg-statement-timeout-ms', '300000'];
  const s = await startServer(
    'pithos',
    process.execPath,
    [...NODE_ARGS, SERVER, '--port', '0', '--auth-token', TOKEN, '--max-body-bytes', String(256 << 20), ...dir],
    {
      timeoutMs: 120_000,
      logFile: process.env.PITHOS_BENCH_SERVER_LOG,
    },
  );
  try {
    if (ONLY === 'writes') {
      await ok(s, 'PUT', '/variants/probe', '{"variant":1}');
      return await largeWrites(s);
    }
    await fill(s);
    const reads: Array<[string, string, string, string | undefined]> = [
      ['GET /lists/big (every item)', 'GET', '/lists/big', undefined],
      ['GET /sets/big (every member)', 'GET', '/sets/big', undefined],
      ['GET /zsets/big (every member)', 'GET', '/zsets/big', undefined],
      ['GET /zset/big (quick spelling)', 'GET', '/zset/big', undefined],
      ['combine union of 2 × 1M without store', 'POST', '/sets/big/combine', '{"op":"union","with":["big2"]}'],
    ];
    for (const [what, method, path, body] of reads) {
      const { result, lat, ms } = await probed(s, () => call(s, method, path, body));
      if (result.status !== 200) throw new Error(`${what}: ${result.status}`);
      console.log(
        `    ${what.padEnd(40)} ${fmt(ms).padStart(6)} ms, ${fmt(result.bytes / 1e6, 1).padStart(5)} MB; ${probeLine(lat)} (target p99 ≤ 50, max ≤ 200)`,
      );
    }
    if (ONLY !== 'reads') await largeWrites(s);
    const before = rssMb(s.child.pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(s.child.pid))), 50);
    const { result, lat, ms } = await probed(s, () => Promise.all(Array.from({ length: 20 }, () => call(s, 'GET', '/lists/big'))));
    clearInterval(sampler);
    const codes = result.map((r) => r.status).join(',');
    console.log(
      `    20 concurrent GET /lists/big: ${fmt(ms)} ms, statuses ${codes}; RSS ${fmt(before)} MB before, peak ${fmt(peak)} MB ` +
        `(+${fmt(peak - before)}; target < +1,024); ${probeLine(lat)} (target p99 ≤ 100)`,
    );
    if (ONLY === 'reads') return;
    const others = JSON.stringify({ op: 'union', with: Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? 'big2' : 'big')), store: 'u' });
    const t = performance.now();
    const refused = await call(s, 'POST', '/sets/big/combine', others, false, true);
    console.log(
      `    combine union of 17 × 1M with store: ${refused.status} in ${fmt(performance.now() - t, 1)} ms: ${(JSON.parse(refused.body) as { message: string }).message}`,
    );
  } finally {
    await s.stop();
    rmSync(data, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await largeCollections(process.env.PITHOS_BENCH_STORE);
