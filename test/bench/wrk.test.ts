/**
 * The benchmark reads latency from wrk's histogram, which wrk has already
 * "corrected" for coordinated omission by adding synthetic samples. These
 * tests pin down that bench/wrk.ts removes exactly those samples.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { correct, parseWrk, percentile, uncorrect } from '../../bench/wrk.js';

// dist/test/bench → the source tree's fixture
const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'bench', 'fixtures', 'wrk-insert-row.txt');

test('real wrk 4.1 output: undoing the correction leaves exactly one sample per response', () => {
  // Captured from Debian's wrk 4.1.0 driving POST /tables/<t>/rows, 32 connections, 6 s.
  const r = parseWrk(readFileSync(FIXTURE, 'utf8'), 32);
  let corrected = 0;
  for (const c of r.latencyCorrected.values()) corrected += c;
  assert.equal(r.requests, 103087);
  assert.ok(corrected > r.requests, `wrk added synthetic samples (${corrected} for ${r.requests} responses)`);
  assert.equal(r.latencySamples, r.requests);
  assert.ok(percentile(r.latency, 99) < percentile(r.latencyCorrected, 99), 'the synthetic samples sit in the tail');
  assert.equal(percentile(r.latency, 100), percentile(r.latencyCorrected, 100), 'the slowest real response is kept');
});

const histogram = fc.array(fc.tuple(fc.integer({ min: 1, max: 200_000 }), fc.integer({ min: 1, max: 50 })), { minLength: 1, maxLength: 60 }).map((pairs) => {
  const m = new Map<number, number>();
  for (const [v, n] of pairs) m.set(v, (m.get(v) ?? 0) + n);
  return m;
});

test("uncorrect inverts wrk's correction for any histogram and interval", () => {
  fc.assert(
    fc.property(histogram, fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 20_000_000 }), (raw, connections, durationUs) => {
      let responses = 0;
      for (const n of raw.values()) responses += n;
      const corrected = correct(raw, durationUs, responses, connections);
      assert.deepEqual(
        new Map([...uncorrect(corrected, durationUs, responses, connections)].sort((a, b) => a[0] - b[0])),
        new Map([...raw].sort((a, b) => a[0] - b[0])),
      );
    }),
    { numRuns: 300 },
  );
});

test('a histogram the correction cannot produce is refused, not silently mangled', () => {
  // One response over one connection in 1000 µs: e = 1000 µs, so a 5000 µs sample
  // comes with synthetic samples at 4000, 3000 and 2000 µs.
  const whole = new Map([
    [5000, 1],
    [4000, 1],
    [3000, 1],
    [2000, 1],
  ]);
  assert.deepEqual(uncorrect(whole, 1000, 1, 1), new Map([[5000, 1]]));
  assert.throws(() => uncorrect(new Map([[5000, 1]]), 1000, 1, 1), /not one wrk's correction can produce/, 'synthetic samples missing');
  assert.throws(
    () =>
      uncorrect(
        new Map([
          [5000, 1],
          [3000, 1],
          [2000, 1],
        ]),
        1000,
        1,
        1,
      ),
    /not one wrk's correction can produce/,
    'one bucket missing',
  );
});
