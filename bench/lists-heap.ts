/**
 * Heap per list item on the log store (docs/benchmarks-history.md, "Lists"): the
 * heap after a GC, before and after pushing N 16-byte strings onto one
 * list (1,000 per push), in this process, through LogStore directly.
 *
 *   node --expose-gc dist/bench/lists-heap.js [N]
 *
 * Reported twice: right after the pushes (values still cached) and after
 * the values were evicted by a cache budget of 1 MiB, the steady state of a
 * list larger than the cache.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogStore } from '../src/store/log/log-store.js';

const N = Number(process.argv[2] ?? '200000');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

for (const cacheMb of [256, 1]) {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-heap-'));
  const s = await LogStore.open({ dir, durability: 'never', cacheBytes: cacheMb * 1024 * 1024, now: Date.now, compactIntervalMs: 0, sweepIntervalMs: 0 });
  try {
    await s.lists.push('warm', ['x'], 'right', true);
    const before = heap();
    for (let i = 0; i < N; i += 1000) {
      const values = Array.from({ length: Math.min(1000, N - i) }, (_, j) => (i + j).toString(16).padStart(16, '0'));
      await s.lists.push('big', values, 'right', true);
    }
    const after = heap();
    process.stdout.write(
      `cache ${cacheMb} MiB: ${N} items, heap +${((after - before) / 1e6).toFixed(1)} MB, ${((after - before) / N).toFixed(0)} bytes per item\n`,
    );
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
