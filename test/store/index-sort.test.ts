/**
 * The open-time sort of index entries (src/store/log/indexes.ts
 * sortedEntries): the packed native sort of integer values must give exactly
 * the comparator's order, and anything it cannot pack falls back to it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareValues } from '../../src/store/query.js';
import { type Prim, sortedEntries } from '../../src/store/log/secondary.js';
import { rng } from '../helpers/rng.js';

/** Seeded, so a failure replays exactly. */
const random = rng(0x5eed);

function reference(vals: readonly Prim[], ids: readonly number[]): Array<{ v: Prim; id: number; ref: undefined }> {
  return vals.map((v, i) => ({ v, id: ids[i], ref: undefined })).sort((a, b) => compareValues(a.v, b.v) || a.id - b.id);
}

function shuffledIds(n: number, max: number): number[] {
  const ids = new Set<number>();
  while (ids.size < n) ids.add(1 + Math.floor(random() * max));
  return [...ids];
}

test('integer values: packed sort equals the comparator order', () => {
  for (const [n, range, maxId] of [
    [0, 10, 10],
    [1, 10, 10],
    [1000, 50, 5000],
    [5000, 2 ** 20, 2 ** 24],
    [300, 1, 300],
  ] as const) {
    const ids = shuffledIds(n, maxId);
    const vals = ids.map(() => Math.floor(random() * 2 * range) - range);
    assert.deepStrictEqual(sortedEntries(vals, ids), reference(vals, ids));
  }
});

test('values too large to pack, -0, fractions, strings and mixed kinds fall back to the comparator', () => {
  const cases: Prim[][] = [
    [2 ** 40, -(2 ** 40), 3, 0, 7],
    [2 ** 50, -(2 ** 50), 3, 0, 7],
    [-0, 0, 1, -1, 0],
    [1.5, 1, 2, 1.25, -0.5],
    ['b', 'a', 'c', 'a', ''],
    [1, 'a', true, null, false, 0],
  ];
  for (const vals of cases) {
    const ids = shuffledIds(vals.length, 100);
    const got = sortedEntries(vals, ids);
    const want = reference(vals, ids);
    assert.deepStrictEqual(
      got.map((e) => e.id),
      want.map((e) => e.id),
    );
    for (let i = 0; i < got.length; i++) assert.ok(Object.is(got[i].v, want[i].v));
  }
});
