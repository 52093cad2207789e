/**
 * CPU time per collection operation on the log store, in process (no HTTP),
 * against collections of N elements (docs/benchmarks-history.md, "Collections: heap per
 * element and reopen"): process.cpuUsage() around K sequential operations of each
 * kind, five rounds, the least round reported: CPU time holds under a loaded
 * machine where wall time does not, and interference only adds to it.
 *
 *   node dist/bench/coll-ops.js [N=200000] [K=4000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogStore } from '../src/store/log/log-store.js';

const N = Number(process.argv[2] ?? '200000');
const K = Number(process.argv[3] ?? '4000');
const ROUNDS = 5;
const member = (i: number): string => 'member-' + String(i).padStart(9, '0');
const scoreOf = (i: number): number => (i * 2654435761) % 1_000_003;
const rnd = (i: number): number => (i * 7919) % N;

const dir = mkdtempSync(join(tmpdir(), 'pithos-coll-ops-'));
const s = await LogStore.open({ dir, durability: 'never', now: Date.now, compactIntervalMs: 0, sweepIntervalMs: 0 });
try {
  for (let b = 0; b < N; b += 1000) {
    const ms = Array.from({ length: Math.min(1000, N - b) }, (_, i) => member(b + i));
    await s.lists.push(
      'l',
      ms.map((m) => JSON.stringify(m)),
      'right',
      true,
    );
    await s.sets.add('s', ms, true);
    await s.zsets.add(
      'z',
      ms.map((m, i) => [m, scoreOf(b + i)] as [string, number]),
      'upsert',
      true,
    );
  }
  await s.records.put('r', { a: 1 }, 0);
  await s.zsets.range('z', { by: 'rank', start: 0, stop: 0, rev: false });
  const ops: Array<[string, (i: number) => unknown]> = [
    ['set add (one new member)', (i) => s.sets.add('s', [`new-${i}`], true)],
    ['set contains (one member)', (i) => s.sets.contains('s', [member(rnd(i))])],
    ['set remove (one member)', (i) => s.sets.remove('s', [`new-${i}`])],
    ['zset add (existing member, new score)', (i) => s.zsets.add('z', [[member(rnd(i)), i]], 'upsert', true)],
    ['zset incr (one member)', (i) => s.zsets.incr('z', member(rnd(i)), 1, true)],
    ['zset member rank', (i) => s.zsets.member('z', member(rnd(i)))],
    ['zset top-10', () => s.zsets.range('z', { by: 'rank', start: 0, stop: 9, rev: true })],
    [
      'list push right + pop left',
      async (i) => {
        await s.lists.push('l', [`"x${i}"`], 'right', true);
        await s.lists.pop('l', { side: 'left', count: 1, waitMs: 0, toSide: 'left' });
      },
    ],
    ['list range (10 items at a random index)', (i) => s.lists.range('l', rnd(i) % (N - 20), (rnd(i) % (N - 20)) + 9)],
    ['GET record (for comparison)', () => Promise.resolve(s.records.get('r'))],
  ];
  for (const [what, op] of ops) {
    for (let i = 0; i < 1000; i++) await op(i + 10_000_000); // warm up
    // The least of ROUNDS rounds: other processes on a loaded machine only ever add to it.
    let best = Infinity;
    for (let r = 0; r < ROUNDS; r++) {
      const c = process.cpuUsage();
      for (let i = r * K; i < (r + 1) * K; i++) await op(i);
      const d = process.cpuUsage(c);
      best = Math.min(best, (d.user + d.system) / K);
    }
    console.log(`${what.padEnd(42)} ${best.toFixed(2).padStart(8)} us CPU/op`);
  }
} finally {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
}
