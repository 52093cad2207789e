/**
 * Key-directory pause benchmark (numbers only, no assertions).
 *
 *   npm run bench:pauses          # builds, then: node --expose-gc dist/bench/pauses.js
 *
 * Inserts PITHOS_PAUSE_KEYS (default 2,000,000) keys into a fresh KeyDir, timing
 * every insert (Entry allocation + set, as a write does), and reports the longest
 * single insert and how many took over 10 ms / 1 ms; then the heap the directory
 * holds per key (two forced GCs before and after) and point-lookup throughput.
 * Two shapes: plain keys (records) and one group of rows (one table growing past
 * a million rows). Each runs in its own child process so one's heap does not
 * disturb the other's pauses. What it measures is the directory alone: no log,
 * no HTTP, so the figures are deterministic enough to compare builds.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Entry, KeyDir } from '../src/engine/keydir.js';

const KEYS = Number(process.env.PITHOS_PAUSE_KEYS ?? 2_000_000);
const gc = (globalThis as { gc?: () => void }).gc;

const plainKey = (i: number): string => `R/user:${String(i).padStart(8, '0')}`;
// Same shape as the model's row keys (src/model/keys.ts): group + 16-digit id.
const GROUP = 't\u0000bench_ins\u00001\u0000';
const rowKey = (i: number): string => GROUP + String(i).padStart(16, '0');

interface Result {
  shape: string;
  keys: number;
  totalMs: number;
  maxMs: number;
  maxAt: number;
  over10: number;
  over1: number;
  bytesPerKey: number;
  keyStringBytes: number;
  getsPerSec: number;
}

function measure(shape: string): Result {
  if (gc === undefined) throw new Error('run with --expose-gc');
  const key = shape === 'rows' ? rowKey : plainKey;
  // Keys are built before the clock starts, so their allocation is not timed
  // and they are not counted as directory memory.
  const built = new Array<string>(KEYS);
  for (let i = 0; i < KEYS; i++) built[i] = key(i);
  // Concatenations are cons strings, which V8 flattens when a Map first hashes
  // them: that would charge the flat copy to the directory. split/join makes
  // every key a flat string up front. (A JSON round trip does not do: the first
  // Map insertion shrank those strings, and the directory measured 40 B less.)
  const keys = built.map((s) => s.split('').join(''));
  built.length = 0;
  for (let i = 0; i < 4; i++) gc();
  const h0 = process.memoryUsage().heapUsed;
  const kd = new KeyDir(0);
  let maxMs = 0;
  let maxAt = -1;
  let over10 = 0;
  let over1 = 0;
  const t0 = performance.now();
  for (let i = 0; i < KEYS; i++) {
    const s = performance.now();
    kd.set(keys[i], new Entry(undefined, i, 100, 130, 0, 0));
    const d = performance.now() - s;
    if (d > maxMs) {
      maxMs = d;
      maxAt = i;
    }
    if (d > 10) over10++;
    if (d > 1) over1++;
  }
  const totalMs = performance.now() - t0;
  gc();
  gc();
  const h1 = process.memoryUsage().heapUsed;
  if (kd.size !== KEYS) throw new Error(`size ${kd.size} != ${KEYS}`);
  if (shape === 'rows' && kd.groupMembers(GROUP)?.size !== KEYS) throw new Error('group size');
  // Point lookups in a pseudo-random order (an LCG), as the server's GETs.
  let x = 1;
  let found = 0;
  const lookups = 4_000_000;
  const g0 = performance.now();
  for (let i = 0; i < lookups; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    if (kd.get(keys[x % KEYS]) !== undefined) found++;
  }
  const getsPerSec = (lookups * 1000) / (performance.now() - g0);
  if (found !== lookups) throw new Error('lookup missed');
  return {
    shape, keys: KEYS, totalMs, maxMs, maxAt, over10, over1,
    bytesPerKey: (h1 - h0) / KEYS,
    // Entry objects are part of the directory; the key strings were allocated before h0.
    keyStringBytes: 8 * Math.ceil((16 + keys[0].length) / 8),
    getsPerSec,
  };
}

function main(): void {
  console.log(`key-directory pauses — Node ${process.version}, ${KEYS.toLocaleString('en-US')} keys per shape`);
  for (const shape of ['plain', 'rows']) {
    const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--shape', shape], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
    const m = JSON.parse(r.stdout) as Result;
    console.log(`  ${m.shape.padEnd(6)} inserts: total ${(m.totalMs / 1000).toFixed(2)} s, longest ${m.maxMs.toFixed(1)} ms ` +
      `(insert #${m.maxAt.toLocaleString('en-US')}), ${m.over10} over 10 ms, ${m.over1} over 1 ms; ` +
      `directory ${m.bytesPerKey.toFixed(0)} B/key (Entry + maps; key strings not counted); ` +
      `get ${(m.getsPerSec / 1e6).toFixed(2)} M/s`);
  }
}

if (process.argv[2] === '--shape') process.stdout.write(JSON.stringify(measure(process.argv[3])));
else main();
