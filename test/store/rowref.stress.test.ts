/**
 * Stress test for row references (docs/query.md "Row references"):
 * random writes (some failing on write or fdatasync), drops and re-creations,
 * expiry, table ttl changes, a tiny cache and compaction, with indexed queries
 * interleaved, also while writes are in flight. Every indexed answer must equal
 * the scan of the same table at the same instant.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { type FileOps, nodeFileOps } from '../../src/engine/index.js';
import { LogStore } from '../../src/store/log/log-store.js';
import { textOf } from '../../src/store/stream.js';
import { rng } from '../helpers/rng.js';

type Row = Record<string, unknown>;

function faultyOps(state: { failWrite: boolean; failSync: boolean }): FileOps {
  return {
    ...nodeFileOps,
    writeAll: async (fd, buf, off, len, pos) => {
      if (state.failWrite) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
    fdatasync: async (fd) => {
      if (state.failSync) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
      return nodeFileOps.fdatasync(fd);
    },
  };
}

const settle = (p: unknown): Promise<unknown> =>
  Promise.resolve(p).then(
    () => undefined,
    () => undefined,
  );

for (const seed of [1, 2, 3, 4, 5, 6]) {
  test(`row references: indexed = scan under faults, expiry, drop/recreate, eviction, compaction (seed ${seed})`, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rowref-'));
    const random = rng(seed);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(random() * a.length)];
    let clock = 1_000_000;
    const faults = { failWrite: false, failSync: false };
    const store = await LogStore.open({
      dir,
      now: () => clock,
      fileOps: faultyOps(faults),
      cacheBytes: 20_000,
      segmentBytes: 8_192,
      compactIntervalMs: 0,
      sweepIntervalMs: 0,
      compactMinDeadBytes: 1,
      compactMinDeadRatio: 0.1,
      hintDelayMs: 0,
      log: () => undefined,
    });
    const T = 't';
    let exists = false;
    const stats = { checks: 0, rows: 0 };
    const check = async (label: string): Promise<void> => {
      if (!exists) return;
      let all: Record<string, Row>;
      try {
        all = JSON.parse(await textOf(await store.tables.page(T, undefined, undefined))) as Record<string, Row>;
      } catch {
        return; // table gone (expired)
      }
      for (const q of [
        { wheres: { a: pick([0, 1, 2]) } },
        { wheres: { a: { $in: [0, 2] } } },
        { wheres: { a: { $gte: 1 } } },
        { wheres: { b: pick(['x', 'y']) } },
      ]) {
        const ids = Object.keys(all)
          .map(Number)
          .filter((id) => {
            const r = all[id];
            const [[f, c]] = Object.entries(q.wheres) as Array<[string, unknown]>;
            const v = r[f];
            if (typeof c === 'object' && c !== null && '$in' in c) return (c.$in as unknown[]).includes(v);
            if (typeof c === 'object' && c !== null && '$gte' in c) return typeof v === 'number' && v >= (c.$gte as number);
            return v === c;
          });
        let got: Array<{ t_id: number; row: Row }>;
        try {
          got = JSON.parse(await textOf(await store.tables.find(T, { ...q, withIds: true }))) as Array<{ t_id: number; row: Row }>;
        } catch {
          return;
        }
        const want = ids.sort((x, y) => x - y).map((id) => ({ t_id: id, row: all[id] }));
        assert.deepStrictEqual(got, want, `${label}: ${JSON.stringify(q)}`);
        stats.checks++;
        stats.rows += got.length;
      }
    };
    try {
      for (let step = 0; step < 400; step++) {
        const r = random();
        faults.failWrite = random() < 0.06;
        faults.failSync = !faults.failWrite && random() < 0.06;
        const pending: Array<Promise<unknown>> = [];
        if (!exists || r < 0.02) {
          if (exists) await settle(store.tables.drop(T));
          faults.failWrite = faults.failSync = false;
          await store.tables.create(T, random() < 0.2 ? 50 + Math.floor(random() * 200) : 0).catch(() => undefined);
          exists = true;
          await store.tables.createIndex(T, 'a').catch(() => undefined);
          await store.tables.createIndex(T, 'b').catch(() => undefined);
          await store.indexes.settled();
          continue;
        }
        // A few writes in one turn, with queries in between (reading in-flight versions).
        const n = 1 + Math.floor(random() * 4);
        for (let i = 0; i < n; i++) {
          const w = random();
          if (w < 0.4)
            pending.push(settle(store.tables.insert(T, { a: Math.floor(random() * 3), b: pick(['x', 'y']), pad: 'p'.repeat(Math.floor(random() * 400)) })));
          else if (w < 0.7)
            pending.push(
              settle(store.tables.patch(T, { a: Math.floor(random() * 3) }, random() < 0.5 ? { a: Math.floor(random() * 3) } : { b: pick(['x', 'y']) })),
            );
          else if (w < 0.85) pending.push(settle(store.tables.deleteRows(T, { a: Math.floor(random() * 3) })));
          else if (w < 0.9) pending.push(settle(store.tables.expire(T, random() < 0.5 ? 0 : 100 + Math.floor(random() * 300))));
          else pending.push(settle(store.tables.find(T, { wheres: { a: Math.floor(random() * 3) } })));
          // Query right away, while the write is in flight.
          try {
            await textOf(await store.tables.find(T, { wheres: { a: Math.floor(random() * 3) } }));
          } catch {
            /* gone */
          }
        }
        for (const p of pending) await settle(p);
        faults.failWrite = faults.failSync = false;
        await store.indexes.settled();
        if (random() < 0.3) clock += Math.floor(random() * 150);
        if (random() < 0.2) await store.engine.sweep();
        if (random() < 0.1) await store.engine.compact(true);
        await check(`step ${step}`);
      }
      console.log(`seed ${seed}: ${JSON.stringify(stats)} ${JSON.stringify(store.engine.stats())}`);
    } finally {
      await store.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
