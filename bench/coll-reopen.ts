/**
 * Reopen time of a data directory holding a list, a set and a sorted set of
 * N elements each (docs/benchmarks-history.md, "Collections: heap per element and reopen").
 *
 *   node dist/bench/coll-reopen.js fill <dir> [N]   # writes the directory (hints built at each rotation)
 *   node dist/bench/coll-reopen.js open <dir>       # opens it: wall and CPU time of LogStore.open
 *
 * `open` prints the time to an open store, then the first sorted-set read
 * (which builds its rank order) and a set lookup. Run it with --cpu-prof to
 * see where the time goes. Nothing is written by `open` beyond what an open
 * writes (hints of segments that had none).
 */
import { LogStore } from '../src/store/log/log-store.js';

const [cmd, dir, n] = process.argv.slice(2);
const N = Number(n ?? '1000000');
const member = (i: number): string => 'member-' + String(i).padStart(9, '0');
const scoreOf = (i: number): number => (i * 2654435761) % 1_000_003;
const opts = { dir, durability: 'never' as const, now: Date.now, compactIntervalMs: 0, sweepIntervalMs: 0, hintDelayMs: 0 };

if (cmd === 'fill') {
  const s = await LogStore.open(opts);
  for (let b = 0; b < N; b += 1000) {
    const ms = Array.from({ length: Math.min(1000, N - b) }, (_, i) => member(b + i));
    await s.lists.push(
      'biglist',
      ms.map((m) => JSON.stringify(m)),
      'right',
      true,
    );
    await s.sets.add('bigset', ms, true);
    await s.zsets.add(
      'bigzset',
      ms.map((m, i) => [m, scoreOf(b + i)] as [string, number]),
      'upsert',
      true,
    );
  }
  await s.close();
} else if (cmd === 'open') {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const s = await LogStore.open(opts);
  const open = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const t1 = performance.now();
  const c1 = process.cpuUsage();
  await s.zsets.range('bigzset', { by: 'rank', start: 0, stop: 0, rev: false });
  const first = performance.now() - t1;
  const fc = process.cpuUsage(c1);
  const has = await s.sets.contains('bigset', [member(1)]);
  const st = s.engine.stats();
  console.log(
    `open ${open.toFixed(0)} ms (CPU ${((c.user + c.system) / 1000).toFixed(0)} ms), ${st.keys} keys in ${st.segments} segments; ` +
      `first zset read ${first.toFixed(0)} ms (CPU ${((fc.user + fc.system) / 1000).toFixed(0)} ms); ${has}`,
  );
  await s.close();
} else {
  throw new Error('usage: coll-reopen.js fill|open <dir> [N]');
}
