/**
 * The ordered list's cheaper compare (src/store/sorted.ts): for a probe with
 * no UTF-16 unit at or above U+D800, JavaScript's `<` must give exactly the
 * code-point (UTF-8 byte) order, and a list searched with it must agree with
 * one searched with codePointCompare alone, on names drawn to straddle the
 * surrogates and U+E000–U+FFFF, where the two orders part.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codePointCompare, codePointCompareFor, SortedList } from '../../src/store/sorted.js';

/** A small deterministic generator (seeded), so a failure names its case. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Units from the ranges that matter: ASCII, just below U+D800, surrogate pairs, U+E000–U+FFFF. */
function name(r: () => number): string {
  const n = 1 + Math.floor(r() * 6);
  let s = '';
  for (let i = 0; i < n; i++) {
    const pick = r();
    if (pick < 0.4) s += String.fromCharCode(0x61 + Math.floor(r() * 3));
    else if (pick < 0.55) s += String.fromCharCode(0xd7ff - Math.floor(r() * 2));
    else if (pick < 0.75) s += String.fromCodePoint(0x1f600 + Math.floor(r() * 2));
    else s += String.fromCharCode(0xe000 + Math.floor(r() * 2) * 0x1fff);
  }
  return s;
}

const sign = (x: number): number => (x < 0 ? -1 : x > 0 ? 1 : 0);

test('the unit compare, where it is offered, orders every pair as code points do', () => {
  const r = rng(41);
  let offered = 0;
  for (let i = 0; i < 50_000; i++) {
    const probe = name(r);
    const other = name(r);
    const fast = codePointCompareFor(probe);
    if (fast === undefined) {
      assert.match(probe, /[\ud800-\uffff]/, 'only a probe with a high unit goes without');
      continue;
    }
    offered++;
    assert.equal(sign(fast(other, probe)), sign(codePointCompare(other, probe)), `${JSON.stringify(other)} vs ${JSON.stringify(probe)}`);
  }
  assert.ok(offered > 5_000, `the fast compare was offered for ${offered} probes`);
});

test('a list searched with the unit compare holds the same elements in the same order', () => {
  const r = rng(7);
  const plain = new SortedList<string>(codePointCompare);
  const fast = new SortedList<string>(codePointCompare, codePointCompareFor);
  for (let i = 0; i < 20_000; i++) {
    const x = name(r);
    if (r() < 0.7) assert.equal(fast.add(x), plain.add(x), `add ${JSON.stringify(x)}`);
    else assert.equal(fast.delete(x), plain.delete(x), `delete ${JSON.stringify(x)}`);
    if (i % 500 === 0) {
      const probe = name(r);
      assert.equal(fast.has(probe), plain.has(probe));
      assert.deepEqual([...fast.ascending(probe)], [...plain.ascending(probe)]);
      assert.deepEqual([...fast.descending(probe)], [...plain.descending(probe)]);
    }
  }
  const all = [...fast.ascending()];
  assert.deepEqual(all, [...plain.ascending()]);
  assert.deepEqual(all, [...all].sort(codePointCompare));
  assert.ok(all.length > 100, `${all.length} elements`);
});
