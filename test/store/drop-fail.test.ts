/**
 * A drop whose write fails changes nothing (docs/query.md, "Secondary
 * indexes"): the engine undoes the batch, so the table and its index
 * definitions and entries are back, and the in-memory indexes, forgotten
 * when the batch entered the engine, are served again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { type FileOps, nodeFileOps } from '../../src/engine/index.js';
import { LogStore } from '../../src/store/log/index.js';
import { textOf } from '../../src/store/stream.js';

test('a failed DROP TABLE or DROP INDEX keeps the table, its indexes, and their use', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-dropfail-'));
  const state = { fail: false };
  const fileOps: FileOps = {
    ...nodeFileOps,
    fdatasync: async (fd) => {
      if (state.fail) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
      return nodeFileOps.fdatasync(fd);
    },
  };
  const store = await LogStore.open({ dir, now: () => Date.now(), fileOps, log: () => undefined, sweepIntervalMs: 0, compactIntervalMs: 0 });
  try {
    await store.tables.create('t', 0);
    for (let i = 0; i < 50; i++) await store.tables.insert('t', { a: i % 5, b: i });
    await store.tables.createIndex('t', 'a');
    await store.tables.createIndex('t', 'b');
    await store.indexes.settled();
    const want = '[{"field":"a","ready":true},{"field":"b","ready":true}]';
    assert.equal(await store.tables.listIndexes('t'), want);

    state.fail = true;
    await assert.rejects(store.tables.drop('t'));
    await assert.rejects(store.tables.dropIndex('t', 'b'));
    state.fail = false;
    await store.indexes.settled();
    assert.equal(await store.tables.listIndexes('t'), want);
    const rows = JSON.parse(await textOf(await store.tables.query('t', { a: 3 }))) as Array<{ b: number }>;
    assert.deepEqual(
      rows.map((r) => r.b),
      [3, 8, 13, 18, 23, 28, 33, 38, 43, 48],
    );
    // Creating an index that exists is still a conflict, and a drop that succeeds still drops.
    await assert.rejects(store.tables.createIndex('t', 'a'), /already exists/);
    await store.tables.dropIndex('t', 'b');
    assert.equal(await store.tables.listIndexes('t'), '[{"field":"a","ready":true}]');
    // The revived index is maintained: a new row is found through it.
    await store.tables.insert('t', { a: 3, b: 99 });
    const after = JSON.parse(await textOf(await store.tables.query('t', { a: 3 }))) as Array<{ b: number }>;
    assert.equal(after[after.length - 1].b, 99);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
