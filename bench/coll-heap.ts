/**
 * Heap per element of a list, a set and a sorted set on the log store, and
 * where it goes (docs/benchmarks-history.md, "Collections: heap per element and reopen").
 *
 *   node --expose-gc dist/bench/coll-heap.js [N] [cacheMiB]
 *
 * One kind per fresh LogStore: the heap after two forced GCs before and
 * after adding N 16-byte elements (1,000 per operation); for the sorted set
 * also after its first read built the rank order. Then the parts, each
 * measured alone the same way: N element key strings, N member keys (what a
 * group holds), N Entry objects (with and without an expiry), N keys in the
 * directory's ShardedMap, and in a group's chunk Maps.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Entry, ShardedMap } from '../src/engine/keydir.js';
import { LogStore } from '../src/store/log/log-store.js';

const N = Number(process.argv[2] ?? '1000000');
const CACHE_MB = Number(process.argv[3] ?? '256');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
const member = (i: number): string => 'member-' + String(i).padStart(9, '0');
const scoreOf = (i: number): number => (i * 2654435761) % 1_000_003;
const per = (a: number, b: number): string => ((b - a) / N).toFixed(1);

async function kind(k: 'list' | 'set' | 'zset'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-coll-heap-'));
  const s = await LogStore.open({ dir, durability: 'never', cacheBytes: CACHE_MB * 1024 * 1024, now: Date.now, compactIntervalMs: 0, sweepIntervalMs: 0 });
  try {
    const before = heap();
    const t = process.cpuUsage();
    for (let b = 0; b < N; b += 1000) {
      const n = Math.min(1000, N - b);
      const ms = Array.from({ length: n }, (_, i) => member(b + i));
      if (k === 'list')
        await s.lists.push(
          'big',
          ms.map((m) => JSON.stringify(m)),
          'right',
          true,
        );
      else if (k === 'set') await s.sets.add('big', ms, true);
      else
        await s.zsets.add(
          'big',
          ms.map((m, i) => [m, scoreOf(b + i)] as [string, number]),
          'upsert',
          true,
        );
    }
    await s.engine.drain();
    const cpu = process.cpuUsage(t);
    const after = heap();
    let extra = '';
    if (k === 'zset') {
      await s.zsets.range('big', { by: 'rank', start: 0, stop: 9, rev: true });
      extra = `, with rank order ${per(before, heap())}`;
    }
    const us = (cpu.user + cpu.system) / (N / 1000);
    console.log(
      `${k.padEnd(4)} ${N} elements, cache ${CACHE_MB} MiB: ${per(before, after)} B/element${extra}; fill ${us.toFixed(0)} us CPU per 1,000-element op`,
    );
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Keeps what a part built alive until every part is measured. */
const hold: unknown[] = [];

function part(what: string, build: () => unknown): void {
  const b = heap();
  hold.push(build());
  console.log(`part: ${what}: ${per(b, heap())} B`);
}

function parts(): void {
  const group = 's\u0000big\u00001234\u0000';
  // Flat strings, as recovery decodes them from a hint or a segment.
  const keys = Array.from({ length: N }, (_, i) => Buffer.from(group + member(i), 'latin1').toString('latin1'));
  const es = keys.map(() => new Entry(undefined, 100, 16, 60, 0, 1234, 5));
  hold.push(keys, es);
  part(`key string (${keys[0].length} chars, flat) + array slot`, () =>
    Array.from({ length: N }, (_, i) => Buffer.from(group + member(i), 'latin1').toString('latin1')),
  );
  part('key string as a write builds it (group + member), after a Map hashed it, + array slot', () => {
    const cons = Array.from({ length: N }, (_, i) => group + member(i));
    const probe = new Map<string, number>();
    for (const k of cons) {
      probe.set(k, 0);
      probe.delete(k);
    }
    return cons;
  });
  // What a group holds per member since it keeps member keys (the key without its prefix; chunked-group.ts).
  part(`member key (${member(0).length} chars, flat) + array slot`, () =>
    Array.from({ length: N }, (_, i) => Buffer.from(member(i), 'latin1').toString('latin1')),
  );
  part('Entry + array slot', () => keys.map(() => new Entry(undefined, 100, 16, 60, 0, 1234, 5)));
  part('Entry with an expiry + array slot', () => keys.map(() => new Entry(undefined, 100, 16, 60, Date.now() + 3_600_000, 1234, 5)));
  part('ShardedMap slot', () => {
    const m = new ShardedMap<Entry>();
    for (let i = 0; i < N; i++) m.set(keys[i], es[i]);
    return m;
  });
  // A chunk filled by appends holds 4,096 keys; one that grew anywhere in its range, 3,072-4,096.
  for (const per of [4096, 3584]) {
    part(`group chunk Map slot (${per} keys per chunk)`, () => {
      const chunks: Array<Map<string, Entry>> = [];
      for (let i = 0; i < N; i += per) {
        const c = new Map<string, Entry>();
        for (let j = i; j < Math.min(N, i + per); j++) c.set(keys[j], es[j]);
        chunks.push(c);
      }
      return chunks;
    });
  }
}

const only = process.env.PITHOS_BENCH_KINDS?.split(',') ?? ['list', 'set', 'zset', 'parts'];
for (const k of only) {
  if (k === 'parts') parts();
  else await kind(k as 'list' | 'set' | 'zset');
}
