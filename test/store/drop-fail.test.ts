/**
 * A drop whose write fails changes nothing (docs/query.md, "Secondary
 * indexes"): the engine undoes the batch, so the table and its index
 * definitions and entries are back, and the in-memory indexes, forgotten
 * when the batch entered the engine, are served again at once: a row written
 * or an index dropped right after the failure finds them there.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { type FileOps, nodeFileOps } from '../../src/engine/index.js';
import { LogStore } from '../../src/store/log/log-store.js';
import { textOf } from '../../src/store/stream.js';

interface Faults {
  fail: boolean;
  /** Hold the reads started in the same turn as a failure (where reading the indexes back in would start some). */
  holdReads: boolean;
  /** How many reads were held. */
  held: number;
  /** Lets the held reads go on; resolves once they have finished. */
  release(): Promise<void>;
}

/**
 * A store whose fdatasync fails while `fail` is set. With `holdReads`, a
 * failing fdatasync first lets the reads held since the previous failure
 * finish (so they end while this failing batch is in the engine: the instant
 * two drops interleave in), then holds those of its own turn. A test yields
 * that turn (setImmediate) before it reads anything itself.
 */
async function faultyStore(dir: string): Promise<{ store: LogStore; state: Faults }> {
  let holding = false;
  let open: () => void = () => undefined;
  let gate = Promise.resolve();
  const waiting: Array<Promise<unknown>> = [];
  const state: Faults = {
    fail: false,
    holdReads: false,
    held: 0,
    async release() {
      open();
      await Promise.allSettled(waiting.splice(0));
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    },
  };
  const fileOps: FileOps = {
    ...nodeFileOps,
    read: (fd, buf, off, len, pos) => {
      if (!holding) return nodeFileOps.read(fd, buf, off, len, pos);
      state.held++;
      const r = gate.then(() => nodeFileOps.read(fd, buf, off, len, pos));
      waiting.push(r);
      return r;
    },
    fdatasync: async (fd) => {
      if (!state.fail) return nodeFileOps.fdatasync(fd);
      if (state.holdReads) {
        await state.release();
        gate = new Promise((r) => (open = r));
        holding = true;
        setImmediate(() => (holding = false));
      }
      throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
    },
  };
  const store = await LogStore.open({ dir, now: () => Date.now(), fileOps, log: () => undefined, sweepIntervalMs: 0, compactIntervalMs: 0 });
  return { store, state };
}

/** Table t: 50 rows, a = i % 5 and b = i, indexed on a and b. */
async function seed(store: LogStore): Promise<void> {
  await store.tables.create('t', 0);
  for (let i = 0; i < 50; i++) await store.tables.insert('t', { a: i % 5, b: i });
  await store.tables.createIndex('t', 'a');
  await store.tables.createIndex('t', 'b');
  await store.indexes.settled();
}

const byA = async (store: LogStore, a: number): Promise<number[]> =>
  (JSON.parse(await textOf(await store.tables.query('t', { a }))) as Array<{ b: number }>).map((r) => r.b);

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

test('a drop that fails while the indexes of an earlier failed drop come back leaves them all in place', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-dropfail-'));
  const { store, state } = await faultyStore(dir);
  try {
    await seed(store);
    const want = '[{"field":"a","ready":true},{"field":"b","ready":true}]';
    state.fail = true;
    state.holdReads = true;
    await assert.rejects(store.tables.drop('t'));
    // The reads started with the failure (if any) finish while this drop's batch is in the engine.
    await new Promise((r) => setImmediate(r));
    await assert.rejects(store.tables.dropIndex('t', 'b'));
    state.fail = false;
    await state.release();
    await store.indexes.settled();
    assert.equal(await store.tables.listIndexes('t'), want, `held reads: ${state.held}`);
    assert.deepEqual(await byA(store, 3), [3, 8, 13, 18, 23, 28, 33, 38, 43, 48]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a row written right after a failed DROP TABLE is found through the indexes that came back', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-dropfail-'));
  const { store, state } = await faultyStore(dir);
  try {
    await seed(store);
    state.fail = true;
    state.holdReads = true;
    await assert.rejects(store.tables.drop('t'));
    state.fail = false;
    await new Promise((r) => setImmediate(r));
    await store.tables.insert('t', { a: 3, b: 100 });
    await store.tables.patch('t', { b: 8 }, { a: 4 });
    // Whatever was held (a read of the indexes back in, if any started) goes on now.
    await state.release();
    await store.indexes.settled();
    assert.equal(await store.tables.listIndexes('t'), '[{"field":"a","ready":true},{"field":"b","ready":true}]');
    assert.deepEqual(await byA(store, 3), [3, 13, 18, 23, 28, 33, 38, 43, 48, 100]);
    assert.deepEqual(await byA(store, 4), [4, 8, 9, 14, 19, 24, 29, 34, 39, 44, 49]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
