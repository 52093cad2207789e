/**
 * Key-directory pause benchmark (numbers only, no assertions).
 *
 *   npm run bench:pauses          # builds, then: node --expose-gc dist/bench/pauses.js
 *   npm run bench:pauses -- --ab /tmp/old/keydir.js --rounds 3
 *
 * `--ab FILE` also measures another build of keydir.js (e.g. main's, compiled
 * apart), alternating with this one round by round, so both see the same
 * machine load; `--rounds N` repeats everything (default 1).
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
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pathToFileURL } from 'node:url';

type KeyDirModule = typeof import('../src/engine/keydir.js');
// The child measures whichever build it is told to (--ab); default: this one.
const { Entry, KeyDir } = (await import(
  process.env.PITHOS_KEYDIR_MODULE !== undefined ? pathToFileURL(process.env.PITHOS_KEYDIR_MODULE).href : '../src/engine/keydir.js'
)) as KeyDirModule;

const KEYS = Number(process.env.PITHOS_PAUSE_KEYS ?? 2_000_000);
const gc = (globalThis as { gc?: () => void }).gc;

const plainKey = (i: number): string => `R/user:${String(i).padStart(8, '0')}`;
// Same shape as the log store's row keys (src/store/log/keys.ts): group + 16-digit id.
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
  /** Inserts over 10 ms that no GC pause overlapped: rehashes (or the machine preempting us). */
  over10NoGc: number;
  maxNoGcMs: number;
  maxGcMs: number;
  maxGcKind: string;
  /** Inserts over 10 ms of wall time that also used over 10 ms of the process's CPU time. */
  cpu10: number;
  /** Which inserts those were (the first 40): clustered at shard growth, or at a collection? */
  cpuHeavyAt: number[];
  maxCpuMs: number;
  /** Entries in the biggest single Map of the directory (what one rehash copies). */
  largestMap: number;
  bytesPerKey: number;
  keyStringBytes: number;
  getsPerSec: number;
}

async function measure(shape: string): Promise<Result> {
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
  const slow: Array<[number, number]> = [];
  const gcs: PerformanceEntry[] = [];
  const obs = new PerformanceObserver((list) => {
    gcs.push(...list.getEntries());
  });
  obs.observe({ entryTypes: ['gc'] });
  const t0 = performance.now();
  let cpu10 = 0;
  const cpuHeavyAt: number[] = [];
  let maxCpuMs = 0;
  for (let i = 0; i < KEYS; i++) {
    // The process's CPU time too: on a shared machine a wall-clock pause may
    // just be the scheduler running someone else; a pause this process spent
    // computing (rehash, GC, also on GC helper threads) shows as CPU time.
    const c = process.cpuUsage();
    const s = performance.now();
    kd.set(keys[i], new Entry(undefined, i, 100, 130, 0, 0, i + 1));
    const d = performance.now() - s;
    if (d > 10) {
      const u = process.cpuUsage(c);
      const cpuMs = (u.user + u.system) / 1000;
      if (cpuMs > 10) {
        cpu10++;
        if (cpuHeavyAt.length < 40) cpuHeavyAt.push(i);
      }
      if (cpuMs > maxCpuMs) maxCpuMs = cpuMs;
    }
    if (d > maxMs) {
      maxMs = d;
      maxAt = i;
    }
    if (d > 10) {
      over10++;
      slow.push([s, d]);
    }
    if (d > 1) over1++;
  }
  const totalMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 100)); // GC entries are delivered asynchronously
  obs.disconnect();
  let over10NoGc = 0;
  let maxNoGcMs = 0;
  for (const [s, d] of slow) {
    if (gcs.some((g) => g.startTime < s + d && g.startTime + g.duration > s)) continue;
    over10NoGc++;
    if (d > maxNoGcMs) maxNoGcMs = d;
  }
  let maxGcMs = 0;
  let maxGcKind = '';
  const kinds: Record<number, string> = { 1: 'major', 2: 'minor', 4: 'incremental', 8: 'weakcb' };
  for (const g of gcs) {
    if (g.duration > maxGcMs) {
      maxGcMs = g.duration;
      maxGcKind = kinds[(g as unknown as { detail?: { kind: number } }).detail?.kind ?? 0] ?? '?';
    }
  }
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
  // The old build is one Map (plus one per group); the sharded one exposes its parts.
  const shards = (kd.map as unknown as { shards?: Array<Map<string, unknown>> }).shards;
  let largestMap = shards === undefined ? kd.map.size : Math.max(...shards.map((m) => m.size));
  const members = kd.groupMembers(GROUP) as unknown as { size: number; chunks?: Array<{ map: Map<string, unknown> }> } | undefined;
  if (members !== undefined) {
    largestMap = Math.max(largestMap, members.chunks === undefined ? members.size : Math.max(...members.chunks.map((c) => c.map.size)));
  }
  return {
    shape,
    keys: KEYS,
    totalMs,
    maxMs,
    maxAt,
    over10,
    over1,
    over10NoGc,
    maxNoGcMs,
    maxGcMs,
    maxGcKind,
    largestMap,
    cpu10,
    cpuHeavyAt,
    maxCpuMs,
    bytesPerKey: (h1 - h0) / KEYS,
    // Entry objects are part of the directory; the key strings were allocated before h0.
    keyStringBytes: 8 * Math.ceil((16 + keys[0].length) / 8),
    getsPerSec,
  };
}

function run(shape: string, module: string | undefined): Result {
  const env = { ...process.env };
  if (module === undefined) delete env.PITHOS_KEYDIR_MODULE;
  else env.PITHOS_KEYDIR_MODULE = module;
  const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--shape', shape], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Result;
}

function main(): void {
  const args = process.argv.slice(2);
  const ab = args.includes('--ab') ? args[args.indexOf('--ab') + 1] : undefined;
  const rounds = args.includes('--rounds') ? Number(args[args.indexOf('--rounds') + 1]) : 1;
  console.log(`key-directory pauses — Node ${process.version}, ${KEYS.toLocaleString('en-US')} keys per shape`);
  for (let round = 0; round < rounds; round++) {
    const builds: Array<[string, string | undefined]> = [['this', undefined]];
    if (ab !== undefined) builds.push(['other', ab]);
    if (round % 2 === 1) builds.reverse();
    for (const shape of ['plain', 'rows']) {
      for (const [label, module] of builds) {
        const m = run(shape, module);
        console.log(
          `  ${label.padEnd(5)} ${m.shape.padEnd(5)} inserts: total ${(m.totalMs / 1000).toFixed(2)} s, longest ${m.maxMs.toFixed(1)} ms ` +
            `(insert #${m.maxAt.toLocaleString('en-US')}), ${m.over10} over 10 ms, ${m.over1} over 1 ms; ` +
            `over 10 ms with > 10 ms CPU: ${m.cpu10} (most CPU in one insert ${m.maxCpuMs.toFixed(1)} ms); over 10 ms without a GC: ${m.over10NoGc} (longest ${m.maxNoGcMs.toFixed(1)} ms); longest GC ${m.maxGcMs.toFixed(1)} ms (${m.maxGcKind}); ` +
            `largest Map ${m.largestMap.toLocaleString('en-US')}; directory ${m.bytesPerKey.toFixed(0)} B/key (Entry + maps; key strings not counted); ` +
            `get ${(m.getsPerSec / 1e6).toFixed(2)} M/s`,
        );
        if (process.env.PITHOS_PAUSE_VERBOSE !== undefined) console.log(`        inserts with > 10 ms CPU: ${m.cpuHeavyAt.join(', ')}`);
      }
    }
  }
}

if (process.argv[2] === '--shape') process.stdout.write(JSON.stringify(await measure(process.argv[3])));
else main();
