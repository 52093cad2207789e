/**
 * The console charts' value axis (web/lib/ticks.ts): 3 to 5 round ticks from zero to just
 * above the data, in a binary unit for sizes, and their labels (web/lib/format.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytesIn } from '../../web/lib/format.js';
import { roundTicks } from '../../web/lib/ticks.js';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const labels = (max: number): string[] => {
  const t = roundTicks(max, true);
  return t.values.map((v) => bytesIn(v, t.unit));
};

test('sizes: ticks in the unit of the data, on round steps, up to just above it', () => {
  // 23.3 GiB used of a 252 GiB disk: the axis that read "0 B, 128 GiB".
  assert.deepEqual(labels(23.3 * GiB), ['0', '10 GiB', '20 GiB', '30 GiB']);
  assert.deepEqual(labels(MiB), ['0', '0.25 MiB', '0.5 MiB', '0.75 MiB', '1 MiB']);
  assert.deepEqual(labels(900 * MiB), ['0', '250 MiB', '500 MiB', '750 MiB', '1000 MiB']);
  assert.deepEqual(labels(3000), ['0', '1 KiB', '2 KiB', '3 KiB']);
  assert.deepEqual(labels(1.2 * 2 ** 40), ['0', '0.5 TiB', '1 TiB', '1.5 TiB']);
});

test('plain figures: round steps of 1, 2, 2.5 or 5 times a power of ten', () => {
  assert.deepEqual(roundTicks(1, false).values, [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(roundTicks(57, false).values, [0, 20, 40, 60]);
  assert.deepEqual(roundTicks(0.3, false).values, [0, 0.1, 0.2, 0.3]);
  assert.deepEqual(roundTicks(7, false).values, [0, 2, 4, 6, 8]);
  assert.deepEqual(roundTicks(9, false).values, [0, 2.5, 5, 7.5, 10]);
  // No sample yet (or a zero): a scale of one unit, not an empty one.
  assert.deepEqual(roundTicks(0, false).values, [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(roundTicks(NaN, false).values, [0, 0.25, 0.5, 0.75, 1]);
});

test('any range: 3 to 5 ticks from zero, evenly spaced, the top at or above the data and under twice it', () => {
  for (let i = 0; i < 5000; i++) {
    const max = Math.exp(Math.random() * 60 - 12);
    for (const binary of [true, false]) {
      const t = roundTicks(max, binary);
      const at = `${max} (${binary ? 'bytes' : 'plain'}): ${t.values.join(', ')}`;
      assert.ok(t.values.length >= 3 && t.values.length <= 5, at);
      assert.equal(t.values[0], 0, at);
      assert.equal(t.top, t.values.at(-1), at);
      assert.ok(t.top >= max && t.top < 2 * max, at);
      const step = t.values[1]! - t.values[0]!;
      for (let k = 1; k < t.values.length; k++) assert.ok(Math.abs(t.values[k]! - t.values[k - 1]! - step) <= step * 1e-9, at);
      const inUnit = step / t.unit;
      const mantissa = inUnit / 10 ** Math.floor(Math.log10(inUnit) + 1e-9);
      assert.ok(
        [1, 2, 2.5, 5].some((k) => Math.abs(mantissa - k) < 1e-9),
        `${at}: a step of ${inUnit}`,
      );
    }
  }
});
