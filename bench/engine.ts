/**
 * Storage engine micro-benchmark (not a test: no assertions, numbers only).
 *
 *   npm run bench:engine          # builds, then: node --expose-gc dist/bench/engine.js
 *
 * Options (environment): PITHOS_BENCH_DIR (default: the OS temp dir),
 * PITHOS_BENCH_KEYS (keys for the recovery test, default 1,000,000),
 * PITHOS_BENCH_SECONDS (seconds per throughput cell, default 2),
 * PITHOS_BENCH_ONLY (comma-separated subset of: writes,reads,recovery).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, type Durability, type EngineOptions, Op, type WriteOp } from '../src/engine/index.js';

const BASE = process.env.PITHOS_BENCH_DIR ?? os.tmpdir();
const KEYS = Number(process.env.PITHOS_BENCH_KEYS ?? 1_000_000);
const SECONDS = Number(process.env.PITHOS_BENCH_SECONDS ?? 2);
const ONLY = new Set((process.env.PITHOS_BENCH_ONLY ?? 'writes,reads,recovery').split(','));
const gc = (globalThis as { gc?: () => void }).gc;

const VALUE = Buffer.alloc(100, 'v');
const asBuffer = (b: Buffer): Buffer => b;
const rows: Array<[string, string, string]> = [];

function row(what: string, result: string, note = ''): void {
  rows.push([what, result, note]);
  console.log(`  ${what.padEnd(70)} ${result.padStart(16)}  ${note}`);
}

function freshDir(tag: string): string {
  return fs.mkdtempSync(path.join(BASE, `pithos-bench-${tag}-`));
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

async function writeThroughput(durability: Durability, writers: number): Promise<number> {
  const dir = freshDir('w');
  const e = await Engine.open({ dir, durability, compactIntervalMs: 0, sweepIntervalMs: 0 });
  let stop = false;
  let count = 0;
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      await e.write([{ op: Op.Put, key: `w${w}:${i % 1000}`, value: VALUE, expiresAt: 0 }]);
      count++;
    }
  };
  const run = Array.from({ length: writers }, (_, w) => writer(w));
  await new Promise((r) => setTimeout(r, 300)); // warm up
  const c0 = count;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const rate = ((count - c0) * 1000) / (performance.now() - t0);
  stop = true;
  await Promise.all(run);
  await e.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return rate;
}

async function fill(e: Engine, n: number, key: (i: number) => string, valueOf: (i: number) => Buffer = () => VALUE): Promise<void> {
  const inflight: Array<Promise<void>> = [];
  for (let i = 0; i < n; i += 100) {
    const ops: WriteOp[] = [];
    for (let j = i; j < Math.min(n, i + 100); j++) ops.push({ op: Op.Put, key: key(j), value: valueOf(j), expiresAt: 0 });
    inflight.push(e.write(ops));
    if (inflight.length >= 32) await Promise.all(inflight.splice(0));
  }
  await Promise.all(inflight);
}

async function timed(fn: () => Promise<number>): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  const deadline = t0 + SECONDS * 1000;
  while (performance.now() < deadline) n += await fn();
  return (n * 1000) / (performance.now() - t0);
}

async function reads(): Promise<void> {
  const dir = freshDir('r');
  const N = 100_000;
  const key = (i: number): string => `key:${String(i).padStart(8, '0')}`;
  let e = await Engine.open({ dir, durability: 'never', compactIntervalMs: 0, sweepIntervalMs: 0 });
  await fill(e, N, key);
  let x = 1;
  const next = (): number => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % N;
  };
  // Cached: values are in memory since they were written.
  const peekRate = await timed(async () => {
    for (let i = 0; i < 10_000; i++) e.peek(key(next()), asBuffer);
    return 10_000;
  });
  row('point reads, cached, peek() (sync)', `${fmt(peekRate)}/s`, `${fmt(N)} keys`);
  const cachedRate = await timed(async () => {
    for (let i = 0; i < 1000; i++) await e.read(key(next()), asBuffer);
    return 1000;
  });
  row('point reads, cached, await read()', `${fmt(cachedRate)}/s`, '1 reader');
  await e.close();
  // Uncached: reopen with a zero cache budget, so every read goes to the file.
  e = await Engine.open({ dir, cacheBytes: 0, compactIntervalMs: 0, sweepIntervalMs: 0 });
  const uncached1 = await timed(async () => {
    for (let i = 0; i < 200; i++) await e.read(key(next()), asBuffer);
    return 200;
  });
  row('point reads, uncached (pread), await read()', `${fmt(uncached1)}/s`, '1 reader');
  const uncached64 = await timed(async () => {
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let i = 0; i < 20; i++) await e.read(key(next()), asBuffer);
      }),
    );
    return 64 * 20;
  });
  row('point reads, uncached (pread), await read()', `${fmt(uncached64)}/s`, '64 concurrent readers');
  await e.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

async function maxGapDuring<T>(work: () => Promise<T>): Promise<{ result: T; gap: number; ms: number }> {
  let max = 0;
  let last = performance.now();
  let stop = false;
  const tick = (): void => {
    const now = performance.now();
    if (now - last > max) max = now - last;
    last = now;
    if (!stop) setImmediate(tick);
  };
  setImmediate(tick);
  const t0 = performance.now();
  try {
    const result = await work();
    return { result, gap: max, ms: performance.now() - t0 };
  } finally {
    stop = true;
  }
}

/** Writes n keys and closes (which waits for the hints); keeps no reference to the engine. */
async function writeKeys(opts: EngineOptions, n: number, key: (i: number) => string): Promise<void> {
  const w = await Engine.open(opts);
  await fill(w, n, key);
  await w.close();
}

async function recovery(): Promise<void> {
  const dir = freshDir('rec');
  const key = (i: number): string => `user:${String(i).padStart(8, '0')}`; // 13 bytes
  // Hints at once (as close() then waits for them): the cases below are about what hints do for recovery.
  const opts = { dir, durability: 'never' as const, segmentBytes: 64 * 1024 * 1024, compactIntervalMs: 0, sweepIntervalMs: 0, hintDelayMs: 0 };
  const t0 = performance.now();
  await writeKeys(opts, KEYS, key);
  const writeMs = performance.now() - t0;
  const logs = fs.readdirSync(dir).filter((n) => n.endsWith('.log'));
  const hints = fs.readdirSync(dir).filter((n) => n.endsWith('.hint'));
  const bytes = logs.reduce((a, n) => a + fs.statSync(path.join(dir, n)).size, 0);
  row(
    `write ${fmt(KEYS)} keys (100 B values, durability never)`,
    `${(writeMs / 1000).toFixed(2)} s`,
    `${logs.length} segments, ${(bytes / 1048576).toFixed(0)} MiB, ${hints.length} hints`,
  );

  const keyHeap = 8 * Math.ceil((16 + key(0).length) / 8);
  await reportOpen('older segment hinted, newest scanned', dir, keyHeap);
  for (const h of fs.readdirSync(dir).filter((n) => n.endsWith('.hint'))) fs.unlinkSync(path.join(dir, h));
  // The first open without hints scans every segment (and writes the hints again).
  await reportOpen('without hints (full scan)', dir, keyHeap);
  // The newest segment never has a hint; open once with a segment size it
  // exceeds, which starts a new (empty) one and hints the old.
  const roll = await Engine.open({ ...opts, segmentBytes: 1024 * 1024 });
  await roll.close();
  await reportOpen('every segment hinted', dir, keyHeap);
  fs.rmSync(dir, { recursive: true, force: true });

  // Grouped keys (table rows) cost a second map entry each.
  const gdir = freshDir('recg');
  const gkey = (i: number): string => `t${String(i % 1000).padStart(3, '0')}\u0000${String(i).padStart(8, '0')}`; // 13 bytes
  await writeKeys({ ...opts, dir: gdir }, KEYS, gkey);
  const ghints = fs.readdirSync(gdir).filter((n) => n.endsWith('.hint')).length;
  await reportOpen(`grouped keys (1000 groups), ${ghints} hint(s)`, gdir, 8 * Math.ceil((16 + gkey(0).length) / 8));
  fs.rmSync(gdir, { recursive: true, force: true });
}

interface OpenResult {
  ms: number;
  gap: number;
  keys: number;
  heapDelta: number;
  heapUsed: number;
}

/**
 * Opens `dir` in a fresh process (cold JIT, empty heap, as at a server
 * start) and reports time, the longest event-loop stall and the heap the
 * directory takes. The files themselves are in the page cache (just written).
 */
async function reportOpen(label: string, dir: string, keyHeap: number): Promise<void> {
  const r = await new Promise<OpenResult>((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--measure-open', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c: string) => {
      out += c;
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as OpenResult) : reject(new Error(`measure-open exited with ${code}`))));
  });
  row(`recovery of ${fmt(r.keys)} keys, ${label}`, `${(r.ms / 1000).toFixed(2)} s`, `longest event-loop gap ${r.gap.toFixed(1)} ms`);
  const perKey = r.heapDelta / r.keys;
  row(
    `  heap delta per key (${label})`,
    `${perKey.toFixed(0)} B`,
    `= key string ${keyHeap} B + directory ${(perKey - keyHeap).toFixed(0)} B; heap after open ${(r.heapUsed / 1048576).toFixed(0)} MiB`,
  );
}

async function measureOpen(dir: string): Promise<void> {
  if (gc === undefined) throw new Error('run with --expose-gc');
  gc();
  gc();
  const h0 = process.memoryUsage().heapUsed;
  const r = await maxGapDuring(() => Engine.open({ dir, compactIntervalMs: 0, sweepIntervalMs: 0 }));
  gc();
  gc();
  const h1 = process.memoryUsage().heapUsed;
  const res: OpenResult = { ms: r.ms, gap: r.gap, keys: r.result.stats().keys, heapDelta: h1 - h0, heapUsed: h1 };
  await r.result.close();
  process.stdout.write(JSON.stringify(res));
}

async function main(): Promise<void> {
  console.log(
    `Pithos engine benchmark — Node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model ?? '?'}), ` +
      `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, data in ${BASE}`,
  );
  if (gc === undefined) console.log('  (run with --expose-gc for heap numbers)');
  if (ONLY.has('writes')) {
    console.log('\nwrites: one put of a 100-byte value per batch');
    for (const d of ['always', 'everysec', 'never'] as const) {
      for (const w of [1, 64]) {
        const rate = await writeThroughput(d, w);
        row(`batches/s, durability ${d}, ${w} writer${w > 1 ? 's' : ''}`, `${fmt(rate)}/s`);
      }
    }
  }
  if (ONLY.has('reads')) {
    console.log('\nreads: 100-byte values');
    await reads();
  }
  if (ONLY.has('recovery')) {
    console.log('\nrecovery');
    await recovery();
  }
  console.log('\n| measurement | result | note |\n|---|---:|---|');
  for (const [a, b, c] of rows) console.log(`| ${a.trim()} | ${b} | ${c} |`);
}

(process.argv[2] === '--measure-open' ? measureOpen(process.argv[3]) : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
