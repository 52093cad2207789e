/**
 * Large answers and cold tables (docs/benchmarks-history.md, "Large answers"; numbers
 * only, no assertions).
 *
 *   npm run bench:stream -- [--server path/to/bin/pithos] [--rows 100000]
 *
 * Loads a table of `--rows` rows (~74 bytes of JSON each: 100k rows are
 * ~7.4 MB) into a fresh server, then reports:
 *
 * - for GET /tables/<t> on the warm table (3 runs): its time, the server's
 *   longest event-loop stall meanwhile and the worst latency of small GETs
 *   sent one after another meanwhile. The stall is measured inside the
 *   server by a preloaded watcher (`--import`, written by this script): a
 *   1 ms interval timer that keeps the longest gap between two of its runs
 *   beyond its 1 ms period (a synchronous step, or a GC pause), reported and
 *   reset on SIGUSR2;
 * - after a restart (default cache, then --cache-mb 4): RSS before the first
 *   query, the peak RSS (VmHWM, reset just before) over a query matching 1%
 *   of the rows, and over a full GET that follows.
 *
 * `--server` measures another build (e.g. the previous commit's), so before
 * and after are measured on the same machine the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const arg = (name: string, def: string): string => {
  const i = process.argv.indexOf(name);
  return i < 0 ? def : process.argv[i + 1];
};
const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(arg('--server', path.join(here, '..', '..', 'bin', 'pithos')));
const ROWS = Number(arg('--rows', '100000'));
const TOKEN = 'bench-stream-token';
const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-stream-'));
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

let child: ChildProcess | undefined;
let port = 0;

async function start(extra: string[]): Promise<void> {
  const c = spawn(process.execPath, [BIN, '--host', '127.0.0.1', '--port', '0', '--data-dir', dir, '--fsync', 'never', '--auth-token', TOKEN, ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: `--import ${WATCHER}` },
  });
  child = c;
  let out = '';
  await new Promise<void>((resolve, reject) => {
    c.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /listening on https?:\/\/[^\s:]+:(\d+)/.exec(out);
      if (m !== null && port === 0) {
        port = Number(m[1]);
        resolve();
      }
    });
    c.on('exit', (code) => reject(new Error(`server exited (${code}): ${out}`)));
  });
}

async function stop(): Promise<void> {
  const c = child as ChildProcess;
  const gone = new Promise((r) => c.once('exit', r));
  c.kill('SIGTERM');
  await gone;
  port = 0;
}

function req(method: string, p: string, body?: unknown, a: http.Agent | false = agent): Promise<{ status: number; body: Buffer; ms: number }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        agent: a,
        headers: { 'Auth-Token': TOKEN, ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), ms: performance.now() - t }));
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}

const WATCHER = path.join(dir, 'loopwatch.mjs');
const WATCH_OUT = path.join(dir, 'loopwatch.out');
writeFileSync(
  WATCHER,
  `import { writeFileSync } from 'node:fs';
let last = performance.now();
let max = 0;
setInterval(() => {
  const now = performance.now();
  if (now - last - 1 > max) max = now - last - 1;
  last = now;
}, 1).unref();
process.on('SIGUSR2', () => {
  writeFileSync(${JSON.stringify(WATCH_OUT)}, String(max));
  max = 0;
  last = performance.now();
});
`,
);

/** The server's longest stall since the previous call, in ms. */
async function stallMs(): Promise<number> {
  rmSync(WATCH_OUT, { force: true });
  child?.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 10));
    try {
      return Number(readFileSync(WATCH_OUT, 'utf8'));
    } catch {
      /* not written yet */
    }
  }
  return NaN;
}

function mem(): { rss: number; hwm: number } {
  const s = readFileSync(`/proc/${child?.pid}/status`, 'utf8');
  const mb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1]) / 1024;
  return { rss: mb('VmRSS'), hwm: mb('VmHWM') };
}
const resetPeak = (): void => writeFileSync(`/proc/${child?.pid}/clear_refs`, '5');

async function probed<T>(work: () => Promise<T>): Promise<[T, number, number]> {
  const pa = new http.Agent({ keepAlive: true, maxSockets: 1 });
  await req('GET', '/variants/probe', undefined, pa);
  let done = false;
  let max = 0;
  let n = 0;
  const loop = (async () => {
    while (!done) {
      const r = await req('GET', '/variants/probe', undefined, pa);
      max = Math.max(max, r.ms);
      n++;
    }
  })();
  const out = await work();
  done = true;
  await loop;
  pa.destroy();
  return [out, max, n];
}

const f = (x: number): string => x.toFixed(0);

try {
  await start([]);
  await req('PUT', '/tables/big');
  await req('PUT', '/variants/probe', { variant: 1 });
  for (let from = 0; from < ROWS; from += 1000) {
    const mutations = [];
    for (let i = from; i < Math.min(ROWS, from + 1000); i++) {
      mutations.push({ name: 'big', operation: 'INSERT', values: { i, name: `row-${String(i).padStart(6, '0')}`, grp: i % 100, pad: 'x'.repeat(16) } });
    }
    await req('POST', '/txns', { mutations });
  }
  console.log(`server ${BIN}; ${ROWS} rows`);
  for (let run = 0; run < 3; run++) {
    await stallMs();
    const [r, probeMax, probes] = await probed(() => req('GET', '/tables/big', undefined, false));
    const lag = await stallMs();
    console.log(`warm GET: ${(r.body.length / 1e6).toFixed(2)} MB in ${f(r.ms)} ms; longest stall ${f(lag)} ms; ${probes} probes, worst ${f(probeMax)} ms`);
  }
  for (const cache of [[], ['--cache-mb', '4']]) {
    await stop();
    await start(cache);
    await new Promise((r) => setTimeout(r, 500));
    const before = mem();
    resetPeak();
    await stallMs();
    const [q, probeMax] = await probed(() => req('POST', '/tables/big/query', { wheres: { grp: 42 } }, false));
    const lag = await stallMs();
    const afterQ = mem();
    const g = await req('GET', '/tables/big', undefined, false);
    const afterG = mem();
    console.log(
      `restart ${cache.join(' ') || '(default cache)'}: RSS ${f(before.rss)} MiB; first query ${f(q.ms)} ms ` +
        `(${q.body.length} bytes), peak ${f(afterQ.hwm)} MiB (+${f(afterQ.hwm - before.rss)}), longest stall ${f(lag)} ms, worst probe ${f(probeMax)} ms; ` +
        `then full GET ${f(g.ms)} ms, peak ${f(afterG.hwm)} MiB (+${f(afterG.hwm - before.rss)})`,
    );
  }
} finally {
  child?.kill('SIGKILL');
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
