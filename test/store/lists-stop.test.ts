/**
 * The log store's blocking pops at shutdown (ListStore.stopWaiting), where
 * a black-box test cannot reach: a waiter whose pop is being decided after a
 * read from disk when shutdown begins is not refused under the decision; it
 * answers the item it took, so an item is never both taken and refused. The
 * waiters behind it are refused at once, having popped nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LogStore } from '../../src/store/log/log-store.js';
import type { ListPop } from '../../src/store/store.js';

const quiet = { sweepIntervalMs: 0, compactIntervalMs: 0, log: () => {} };

const outcome = (p: Promise<string>): Promise<{ ok: string } | { err: string }> =>
  p.then(
    (ok) => ({ ok }),
    (e: Error) => ({ err: e.message }),
  );

test('stopWaiting while a waiter is moving an item to a list read from disk: it answers the item; the waiter behind it gets 503 and pops nothing', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-lists-stop-'));
  // A one-byte value cache: a list not written lately is read from disk.
  const s = await LogStore.open({ dir, now: Date.now, cacheBytes: 1, ...quiet });
  try {
    const lists = s.lists;
    await lists.push('dst', ['old'], 'right', true);
    // Later writes push the target list's values out of the cache.
    for (let i = 0; i < 5; i++) await lists.push(`filler${i}`, ['y'.repeat(10_000)], 'right', true);
    // A move: its decision, woken by the push below, reads the target list from disk first.
    const mover: ListPop = { side: 'left', count: 1, waitMs: 20_000, to: 'dst', toSide: 'right' };
    const first = outcome(lists.pop('q', mover));
    const second = outcome(lists.pop('q', { side: 'left', count: 1, waitMs: 20_000, toSide: 'left' }));
    const pushed = lists.push('q', ['x', 'z'], 'right', true);
    // Shutdown begins right after the push's commit has woken the waiters (a microtask).
    queueMicrotask(() => lists.stopWaiting());
    await pushed;
    assert.deepEqual(await first, { ok: '{"items":["x"]}' }, 'the waiter being served gets the item it moved');
    assert.deepEqual(await second, { err: 'server is shutting down' }, 'the waiter behind it is refused');
    assert.equal(await lists.range('q', 0, -1), '{"items":["z"],"length":1}', 'the refused waiter popped nothing');
    assert.equal(await lists.range('dst', 0, -1), '{"items":["old","x"],"length":2}');
    // From now on nothing waits.
    assert.deepEqual(await outcome(lists.pop('q2', mover)), { err: 'server is shutting down' });
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
