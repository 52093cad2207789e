/**
 * In-process figures for secondary indexes (docs/query.md, docs/benchmarks.md):
 * heap bytes per indexed row, the longest event-loop stall while an index is
 * built in the background, and the time to reopen a 1,000,000-row table with
 * one index until the index is ready again. Run by `npm run bench` (after the
 * HTTP operations) as `node --expose-gc dist/bench/query.js [rows]`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Engine } from '../src/engine/index.js';
import { LogStore } from '../src/store/log/log-store.js';
import type { Mutation } from '../src/store/store.js';
import { textOf } from '../src/store/stream.js';

const ROWS = Number(process.argv[2] === '--reopen' ? 0 : (process.argv[2] ?? 1_000_000));
const GROUPS = ROWS / 10;
const gc = (globalThis as { gc?: () => void }).gc;

function heap(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

const open = (dir: string): Promise<LogStore> =>
  LogStore.open({ dir, now: Date.now, durability: 'never', sweepIntervalMs: 0, compactIntervalMs: 0, cacheBytes: 1 << 30 });

async function main(): Promise<void> {
  if (gc === undefined) throw new Error('run with --expose-gc');
  const dir = mkdtempSync(join(tmpdir(), 'pithos-qbench-'));
  try {
    const store = await open(dir);
    await store.tables.create('big', 0);
    let t = Date.now();
    for (let b = 0; b < ROWS / 1000; b++) {
      const mutations: Mutation[] = [];
      for (let j = 0; j < 1000; j++) {
        const i = b * 1000 + j;
        mutations.push({ kind: 'table', name: 'big', op: 'INSERT', values: { seq: i, grp: i % GROUPS, name: `user-${i}` } });
      }
      await store.transact({ checks: [], mutations, serializable: false });
    }
    const loadS = (Date.now() - t) / 1000;

    const before = heap();
    const lag = monitorEventLoopDelay({ resolution: 1 });
    // Garbage-collection pauses meanwhile, to tell a stall of the build from one of the heap's collector.
    let gcMax = 0;
    const gcs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcMax = Math.max(gcMax, e.duration);
    });
    gcs.observe({ entryTypes: ['gc'] });
    lag.enable();
    t = Date.now();
    await store.tables.createIndex('big', 'grp');
    await store.indexes.settled();
    const buildS = (Date.now() - t) / 1000;
    lag.disable();
    gcs.disconnect();
    const perRow = (heap() - before) / ROWS;

    // The same query with and without the index, in process (no HTTP).
    const q = async (field: string, n: number): Promise<number> => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const s = process.hrtime.bigint();
        const out = JSON.parse(await textOf(await store.tables.query('big', { [field]: (i * 7919) % GROUPS }))) as unknown[];
        times.push(Number(process.hrtime.bigint() - s) / 1e6);
        if (field === 'grp' && out.length !== 10) throw new Error(`expected 10 rows, got ${out.length}`);
      }
      times.sort((a, b) => a - b);
      return times[Math.floor(times.length / 2)];
    };
    const indexedP50 = await q('grp', 2000);
    const scanP50 = await q('seq', 5);

    await store.close();
    // A restart is a new process: each reopen runs in a fresh one (in this process the first
    // store's gigabyte of heap is still being collected, which slowed the reopen by 2-5 s).
    // The engine's own recovery alone first, for comparison (what any store pays at open).
    const engineS = reopen(dir, 'engine').engineS;
    const { openS, readyS } = reopen(dir, 'store');

    const lines = [
      `index bench: ${ROWS.toLocaleString('en-US')} rows ({seq, grp, name}; 10 rows per grp), loaded in ${loadS.toFixed(1)} s through transactions of 1,000 inserts`,
      `  index on grp built in the background in ${buildS.toFixed(2)} s; longest event-loop stall meanwhile ${(lag.max / 1e6).toFixed(1)} ms (p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms), longest garbage-collection pause ${gcMax.toFixed(1)} ms`,
      `  heap per indexed row: ${perRow.toFixed(0)} bytes`,
      `  in-process query p50: indexed ${indexedP50.toFixed(3)} ms, unindexed (scan) ${scanP50.toFixed(1)} ms`,
      `  reopen, each in a fresh process: engine recovery alone ${engineS.toFixed(2)} s; store open (engine recovery + listing view + indexes from their keys) ${openS.toFixed(2)} s, index ready ${readyS.toFixed(2)} s after the start of open (target ≤ 5 s)`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Reopened {
  engineS: number;
  openS: number;
  readyS: number;
}

/** Opens `dir` in a fresh process (this script with --reopen) and returns what it measured. */
function reopen(dir: string, what: 'engine' | 'store'): Reopened {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--reopen', what, dir], { encoding: 'utf8' });
  return JSON.parse(out) as Reopened;
}

async function reopenChild(what: string, dir: string): Promise<void> {
  const t = Date.now();
  if (what === 'engine') {
    const engine = await Engine.open({ dir, durability: 'never', sweepIntervalMs: 0, compactIntervalMs: 0 });
    const engineS = (Date.now() - t) / 1000;
    await engine.close();
    process.stdout.write(JSON.stringify({ engineS, openS: 0, readyS: 0 }));
    return;
  }
  const store = await open(dir);
  const openS = (Date.now() - t) / 1000;
  await store.indexes.settled();
  const readyS = (Date.now() - t) / 1000;
  const ok = JSON.parse(await store.tables.listIndexes('big')) as Array<{ ready: boolean }>;
  const check = JSON.parse(await textOf(await store.tables.query('big', { grp: 3 }))) as unknown[];
  await store.close();
  if (!ok[0]?.ready || check.length !== 10) throw new Error('index not ready or wrong after reopen');
  process.stdout.write(JSON.stringify({ engineS: 0, openS, readyS }));
}

if (process.argv[2] === '--reopen') {
  reopenChild(process.argv[3], process.argv[4]).catch((e: unknown) => {
    process.stderr.write(`reopen failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
} else
  main().catch((e: unknown) => {
    process.stderr.write(`query bench failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
