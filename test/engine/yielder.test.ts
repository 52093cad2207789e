/**
 * The yielders that keep background work from stalling requests
 * (src/engine/scanner.ts): low-priority work takes a small share of a busy
 * event loop, background work a fair one, and on an idle loop low-priority
 * work is not held back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Yielder } from '../../src/engine/scanner.js';

function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* busy */
  }
}

/** Busy time of a worker doing 0.1 ms steps behind `y`, while another job takes 1 ms every loop turn, over `ms`. */
async function shareBeside(y: Yielder, ms: number): Promise<number> {
  let stop = false;
  let other = 0;
  const hog = (): void => {
    if (stop) return;
    spin(1);
    other += 1;
    setImmediate(hog);
  };
  setImmediate(hog);
  let mine = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    spin(0.1);
    mine += 0.1;
    await y.maybe();
  }
  stop = true;
  return mine / (mine + other);
}

test('on a busy loop, low-priority work takes a small share and background work a fair one', async () => {
  const low = await shareBeside(Yielder.lowPriority(), 600);
  const background = await shareBeside(Yielder.background(), 600);
  assert.ok(low < 0.25, `low priority took ${(low * 100).toFixed(1)} % of the busy loop`);
  assert.ok(background > 0.3, `background took ${(background * 100).toFixed(1)} % of the busy loop`);
});

test('on an idle loop, low-priority work is not held back', async () => {
  const y = Yielder.lowPriority();
  const t0 = performance.now();
  for (let i = 0; i < 2000; i++) {
    spin(0.1);
    await y.maybe();
  }
  const elapsed = performance.now() - t0;
  // 200 ms of work; held to a tenth of the loop it would take 2 s. The margin is for a
  // loaded machine, where a pause now and then may see activity that is not another job's.
  assert.ok(elapsed < 1400, `200 ms of work took ${elapsed.toFixed(0)} ms`);
});
