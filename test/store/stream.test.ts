/**
 * Large answers on the log store (docs/query.md, "Large answers"): the pieces
 * join into the one-string answer for every shape, ordered answers are sorted
 * in slices, and an answer stopped early releases the segments its snapshot
 * pinned.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LogStore } from '../../src/store/log/log-store.js';
import type { RowQuery, Text } from '../../src/store/store.js';
import { sortInSlices, STREAM_ROWS, textOf } from '../../src/store/stream.js';

const quiet = { sweepIntervalMs: 0, compactIntervalMs: 0, log: () => {} };

/** Segments' reader counts (what a snapshot pins), read from the engine's core. */
function readers(s: LogStore): number {
  const segs = (s.engine as unknown as { core: { segments: Array<{ readers: number }> } }).core.segments;
  return segs.reduce((n, x) => n + x.readers, 0);
}

test('pieces of a large answer join into exactly what the rows give, for every shape', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-stream-'));
  // A small cache: most rows are read back from the log, in batches.
  const s = await LogStore.open({ dir, now: Date.now, cacheBytes: 64 * 1024, durability: 'never', ...quiet });
  try {
    const n = 3 * STREAM_ROWS + 17;
    await s.tables.create('t', 0);
    const rows: Array<Record<string, unknown>> = [];
    for (let from = 0; from < n; from += 1000) {
      const mutations = [];
      for (let i = from; i < Math.min(n, from + 1000); i++) {
        const row = { i, g: i % 7, s: `r${(i * 7919) % 1000}`, ...(i % 5 === 0 ? {} : { o: i % 3 }) };
        rows.push(row);
        mutations.push({ kind: 'table' as const, name: 't', op: 'INSERT' as const, values: row });
      }
      await s.transact({ checks: [], mutations, serializable: false });
    }
    const all = await s.tables.all('t');
    assert.notEqual(typeof all, 'string', 'a large table answers in pieces');
    assert.equal(await textOf(all), `{${rows.map((r, k) => `"${k + 1}":${JSON.stringify(r)}`).join(',')}}`);
    assert.equal(
      await textOf(await s.tables.page('t', 5, 2000)),
      `{${rows
        .slice(2000, 2005)
        .map((r, k) => `"${2001 + k}":${JSON.stringify(r)}`)
        .join(',')}}`,
    );
    const ids = rows.map((r, k) => ({ id: k + 1, r }));
    const cases: Array<[RowQuery, (x: typeof ids) => unknown]> = [
      [{ wheres: { g: 3 } }, (x) => x.filter((e) => e.r.g === 3).map((e) => e.r)],
      [
        { wheres: { g: 3 }, limit: 10, after: 100 },
        (x) =>
          x
            .filter((e) => e.r.g === 3 && e.id > 100)
            .slice(0, 10)
            .map((e) => e.r),
      ],
      [{ wheres: {}, count: true }, (x) => ({ count: x.length })],
      [
        { wheres: { g: { $lt: 2 } }, fields: ['i'], withIds: true },
        (x) => x.filter((e) => (e.r.g as number) < 2).map((e) => ({ t_id: e.id, row: { i: e.r.i } })),
      ],
      [
        {
          wheres: {},
          order: [
            { field: 'o', dir: 'desc' },
            { field: 's', dir: 'asc' },
          ],
        },
        (x) =>
          [...x]
            .sort((a, b) => {
              const ao = a.r.o as number | undefined;
              const bo = b.r.o as number | undefined;
              if (ao === undefined || bo === undefined) return ao === bo ? cmpS(a, b) : ao === undefined ? 1 : -1;
              return bo - ao || cmpS(a, b);
            })
            .map((e) => e.r),
      ],
      [
        { wheres: {}, order: [{ field: 's', dir: 'asc' }], limit: 30 },
        (x) =>
          [...x]
            .sort(cmpS)
            .slice(0, 30)
            .map((e) => e.r),
      ],
    ];
    for (const [q, want] of cases) {
      const got = JSON.parse(await textOf(await s.tables.find('t', q))) as unknown;
      assert.deepEqual(got, want(ids), JSON.stringify(q));
    }
    assert.deepEqual(
      JSON.parse(await textOf(await s.tables.query('t', { g: 6 }))),
      rows.filter((r) => r.g === 6),
    );
    assert.equal(readers(s), 0, 'every snapshot was released');
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

function cmpS(a: { id: number; r: Record<string, unknown> }, b: { id: number; r: Record<string, unknown> }): number {
  const x = a.r.s as string;
  const y = b.r.s as string;
  return x < y ? -1 : x > y ? 1 : a.id - b.id;
}

test('an answer stopped early (the client went away) releases its snapshot', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-stream-'));
  const s = await LogStore.open({ dir, now: Date.now, cacheBytes: 64 * 1024, durability: 'never', ...quiet });
  try {
    await s.tables.create('t', 0);
    const mutations = Array.from({ length: 1000 }, (_, i) => ({
      kind: 'table' as const,
      name: 't',
      op: 'INSERT' as const,
      values: { i, pad: 'x'.repeat(200) },
    }));
    for (let k = 0; k < 2; k++) await s.transact({ checks: [], mutations, serializable: false });
    const before = readers(s);
    for (const stopAfter of [0, 1]) {
      const text: Text = await s.tables.all('t');
      assert.notEqual(typeof text, 'string');
      assert.ok(readers(s) > before, 'the snapshot pins the segments');
      const it = (text as AsyncIterable<string>)[Symbol.asyncIterator]();
      for (let k = 0; k < stopAfter; k++) await it.next();
      await it.return?.();
      assert.equal(readers(s), before, `released after ${stopAfter} pieces`);
    }
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sortInSlices sorts stably, as Array.prototype.sort does', async () => {
  for (const n of [0, 1, 1023, 1024, 1025, 5000, 33_333]) {
    const a = Array.from({ length: n }, (_, i) => ({ k: (i * 7919) % 97, i }));
    const want = [...a].sort((x, y) => x.k - y.k);
    const got = await sortInSlices([...a], (x, y) => x.k - y.k);
    assert.deepEqual(got, want, `n = ${n}`);
  }
});
