/**
 * Index plans read rows through kept references only in decisions that
 * have queued no write (docs/query.md, "Row references"): a decision that
 * changed rows, which go to the Tx's row groups rather than its keys, must
 * count as having written.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Atomic } from '../../src/store/log/atomic.js';
import { LogStore } from '../../src/store/log/log-store.js';
import { updateRows } from '../../src/store/log/tables.js';
import { compileWheres } from '../../src/store/wheres.js';

test('Tx.wrote is true after an update of rows only', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-wrote-'));
  const store = await LogStore.open({ dir, now: () => Date.now(), log: () => undefined, sweepIntervalMs: 0, compactIntervalMs: 0 });
  try {
    await store.tables.create('t', 0);
    await store.tables.insert('t', { a: 1 });
    const atomic = (store as unknown as { atomic: Atomic }).atomic;
    const seen = await atomic.atomically(undefined, (tx) => {
      const before = tx.wrote;
      updateRows(tx, 't', compileWheres({ a: 1 }), { a: 2 });
      return [before, tx.wrote];
    });
    assert.deepEqual(seen, [false, true]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
