/**
 * The sorted sets' order-statistic structure (src/store/ranked.ts) against a
 * plain sorted array: thousands of random inserts and deletes, so chunks
 * split, empty and the Fenwick tree is rebuilt, with rank, countBelow and
 * slices checked at every step of the way.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RankedPairs, scoreOrder } from '../../src/store/ranked.js';
import { rng } from '../helpers/rng.js';

type Pair = [number, string];
// Ties order by UTF-16 units (ranked.ts: the log store hands in keys whose order that is).
const cmp = (a: Pair, b: Pair): number => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);

function check(r: RankedPairs, model: Pair[], rand: () => number): void {
  assert.equal(r.size, model.length);
  for (let k = 0; k < 20 && model.length > 0; k++) {
    const i = Math.floor(rand() * model.length);
    assert.equal(r.rank(model[i][0], model[i][1]), i);
  }
  assert.equal(r.rank(-1, 'absent'), -1);
  const got: Pair[] = [];
  r.slice(0, model.length - 1, false, (s, m) => got.push([s, m]));
  assert.deepEqual(got, model);
  const a = Math.floor(rand() * (model.length + 2)) - 1;
  const b = Math.floor(rand() * (model.length + 2)) - 1;
  const desc: Pair[] = [];
  r.slice(a, b, true, (s, m) => desc.push([s, m]));
  assert.deepEqual(desc, model.slice(Math.max(0, a), Math.max(0, Math.min(model.length - 1, b) + 1)).reverse());
  const score = Math.floor(rand() * 60) - 5;
  assert.equal(r.countBelow(score, false), model.filter(([s]) => s < score).length);
  assert.equal(r.countBelow(score, true), model.filter(([s]) => s <= score).length);
}

test('random inserts and deletes keep ranks, slices and score counts equal to a sorted array', () => {
  const rand = rng(20);
  const r = new RankedPairs();
  let model: Pair[] = [];
  const live = new Map<string, number>();
  for (let step = 0; step < 6000; step++) {
    const m = `m${Math.floor(rand() * 3000)}`;
    const cur = live.get(m);
    if (cur !== undefined && rand() < 0.45) {
      assert.equal(r.delete(cur, m), true);
      live.delete(m);
      model = model.filter((p) => p[1] !== m);
    } else if (cur === undefined) {
      const s = Math.floor(rand() * 50);
      r.add(s, m);
      live.set(m, s);
      model.push([s, m]);
      model.sort(cmp);
    } else {
      assert.equal(r.delete(cur + 1000, m), false, 'a pair that is not there is not deleted');
    }
    if (step % 250 === 0) check(r, model, rand);
  }
  check(r, model, rand);
  for (const [m, s] of live) r.delete(s, m);
  assert.equal(r.size, 0);
  r.slice(0, 10, false, () => assert.fail('empty'));
});

test('fromSorted builds what the same pairs added one by one build', () => {
  const rand = rng(7);
  const pairs: Pair[] = Array.from({ length: 5000 }, (_, i) => [Math.floor(rand() * 100), `k${i}`] as Pair).sort(cmp);
  const r = RankedPairs.fromSorted(
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  );
  check(r, pairs, rand);
  r.add(50.5, 'new');
  const withNew = [...pairs, [50.5, 'new'] as Pair].sort(cmp);
  check(r, withNew, rand);
});

test('a snapshot keeps the pairs of its instant while the structure goes on changing (copy on write), through splits and emptied chunks', () => {
  const rand = rng(31);
  const r = new RankedPairs();
  let model: Pair[] = [];
  const live = new Map<string, number>();
  const snaps: Array<[RankedPairs, Pair[]]> = [];
  for (let step = 0; step < 8000; step++) {
    const m = `m${Math.floor(rand() * 2500)}`;
    const cur = live.get(m);
    if (cur !== undefined) {
      r.delete(cur, m);
      live.delete(m);
      model = model.filter((p) => p[1] !== m);
    } else {
      const s = Math.floor(rand() * 40);
      r.add(s, m);
      live.set(m, s);
      model.push([s, m]);
      model.sort(cmp);
    }
    if (step % 900 === 0) snaps.push([r.snapshot(), model.slice()]);
  }
  check(r, model, rand);
  // Every snapshot still answers as the model of its instant did, whatever changed after it.
  for (const [snap, then] of snaps) check(snap, then, rand);
});

test('scoreOrder is a stable ascending sort by score: negatives, -0, ties, extremes, and every radix digit', () => {
  const rand = rng(17);
  const special = [0, -0, 1, -1, 0.5, -0.5, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 2 ** 52, -(2 ** 53), 1e-300, -1e300];
  for (const n of [0, 1, 2, 50, 5000]) {
    const scores: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = rand();
      // A third from a small set (ties), a third anywhere in magnitude, a third special values.
      scores.push(
        r < 0.33 ? Math.floor(rand() * 7) - 3 : r < 0.66 ? (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20) : special[Math.floor(rand() * special.length)],
      );
    }
    const expected = scores.map((_, i) => i).sort((a, b) => scores[a] - scores[b] || a - b);
    assert.deepEqual([...scoreOrder(scores)], expected);
  }
  // Keys equal in every digit but one: each of the four passes decides the order alone.
  const digits = [1 + 2 ** -52, 1 + 2 ** -36, 1 + 2 ** -20, 1 + 2 ** -4, 1];
  assert.deepEqual([...scoreOrder(digits)], [4, 0, 1, 2, 3]);
});
