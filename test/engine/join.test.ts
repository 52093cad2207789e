/**
 * Writes that join the open batch (GroupWriter.write with an owner): the
 * small writes one owner makes in a turn share one batch, its sequence
 * number and its promise,
 * and the log holds them as one batch that a restart reads back whole. Two
 * writes of one key never share a batch (nor a version); a write that needs
 * its batch's number (nextBatchSeq), a write of anyone else and a group
 * drop each close the open batch. A failed log write undoes every write that
 * joined, newest first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type FileOps, nodeFileOps, StorageIOError } from '../../src/engine/index.js';
import { DataKey, Keyring } from '../../src/engine/keyring.js';
import { del, drop, newestLog, open, put, seqsIn, str, scratchDirs } from './helpers.js';

const dir = scratchDirs();
/** The owner of the writes that may join (one client's pipeline, in the server). */
const me = {};

test('the joining writes of one turn are one batch: one number, one promise, read back whole after a restart', async () => {
  const d = dir('join-one');
  const e = await open(d);
  const first = e.upcomingSeq;
  const ps: Array<Promise<void>> = [];
  for (let i = 0; i < 20; i++) ps.push(e.write([put(`k${i}`, `v${i}`), put(`g\u0000${i}`, `row${i}`)], me));
  // The directory shows each write as soon as it returns.
  assert.equal(str(e.peek('k19', (b) => b) as Buffer), 'v19');
  assert.ok(
    ps.every((p) => p === ps[0]),
    'every joining write is given the batch promise',
  );
  assert.equal(e.upcomingSeq, first + 1, 'the batch took one number');
  await Promise.all(ps);
  for (let i = 0; i < 20; i++) assert.equal(e.versionOf(`k${i}`), first);
  await e.close();
  assert.deepEqual(
    seqsIn(newestLog(d)).map((b) => b.seq),
    [first],
  );
  const again = await open(d);
  try {
    for (let i = 0; i < 20; i++) {
      assert.equal(str((await again.read(`k${i}`, (b) => b)) as Buffer), `v${i}`);
      assert.equal(str((await again.read(`g\u0000${i}`, (b) => b)) as Buffer), `row${i}`);
      assert.equal(again.versionOf(`k${i}`), first);
    }
    assert.equal(again.upcomingSeq, first + 1);
  } finally {
    await again.close();
  }
});

test('a key already in the open batch starts a new one: two writes of a key never share a version', async () => {
  const e = await open(dir('join-same-key'));
  try {
    const a = e.write([put('a', '1')], me);
    const b = e.write([put('b', '1')], me);
    const seqAB = e.versionOf('a');
    assert.equal(e.versionOf('b'), seqAB);
    assert.equal(a, b);
    const a2 = e.write([put('a', '2')], me);
    assert.notEqual(a2, a);
    assert.equal(e.versionOf('a'), (seqAB as number) + 1, 'the second write of a takes the next number');
    // A delete then a put of one key across decisions: also apart.
    const c = e.write([del('b')], me);
    assert.equal(c, a2, 'b is not in the open batch: its delete joins');
    void e.write([put('b', '3')], me);
    assert.equal(e.versionOf('b'), (seqAB as number) + 2);
    await e.settled();
    assert.equal(str(e.peek('a', (x) => x) as Buffer), '2');
    assert.equal(str(e.peek('b', (x) => x) as Buffer), '3');
  } finally {
    await e.close();
  }
});

test('nextBatchSeq, a write of another owner or of none, and a group drop each close the open batch', async () => {
  const e = await open(dir('join-close'));
  try {
    void e.write([put('x', '1')], me);
    const open1 = e.versionOf('x') as number;
    // Asked for its number, the next decision starts its own batch, which then takes joins.
    const n = e.nextBatchSeq();
    assert.equal(n, open1 + 1);
    void e.write([put('y', '1')], me);
    void e.write([put('z', '1')], me);
    assert.equal(e.versionOf('y'), n);
    assert.equal(e.versionOf('z'), n);
    // A write that does not join closes it, and is closed itself.
    void e.write([put('w', '1')]);
    assert.equal(e.versionOf('w'), n + 1);
    void e.write([put('v', '1')], me);
    assert.equal(e.versionOf('v'), n + 2);
    // Another owner's write never joins this one's batch, nor this one's the other's.
    void e.write([put('o1', '1')], {});
    assert.equal(e.versionOf('o1'), n + 3);
    void e.write([put('v2', '1')], me);
    assert.equal(e.versionOf('v2'), n + 4);
    // A group drop neither joins nor is joined.
    void e.write([put('t\u00001', 'r')], me);
    assert.equal(e.versionOf('t\u00001'), n + 4);
    void e.write([drop('t\u0000')], me);
    assert.equal(
      e.peek('t\u00001', (x) => x),
      undefined,
    );
    void e.write([put('u', '1')], me);
    assert.equal(e.versionOf('u'), n + 6, 'the drop took n + 5 alone');
    await e.settled();
  } finally {
    await e.close();
  }
});

test('joined writes in an encrypted log are one sealed batch, read back after a restart', async () => {
  const d = dir('join-sealed');
  const keyring = (): Keyring => new Keyring(new DataKey(Buffer.alloc(32, 7)));
  const e = await open(d, { keyring: keyring() });
  const first = e.upcomingSeq;
  const ps: Array<Promise<void>> = [];
  for (let i = 0; i < 50; i++) ps.push(e.write([put(`s${i}`, 'x'.repeat(i))], me));
  await Promise.all(ps);
  await e.close();
  const again = await open(d, { keyring: keyring() });
  try {
    for (let i = 0; i < 50; i++) {
      assert.equal(str((await again.read(`s${i}`, (b) => b)) as Buffer), 'x'.repeat(i));
      assert.equal(again.versionOf(`s${i}`), first);
    }
  } finally {
    await again.close();
  }
});

test('a failed log write rejects every write that joined and undoes them all', async () => {
  let failing = false;
  const ops: FileOps = {
    ...nodeFileOps,
    writeAll: async (fd, buf, off, len, pos) => {
      if (failing) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
  };
  const e = await open(dir('join-fail'), { fileOps: ops });
  try {
    await e.write([put('a', 'old'), put('b', 'old')]);
    failing = true;
    const rollbacks = e.rollbacks;
    const writes = e.writes;
    const p1 = e.write([put('a', 'new')], me);
    const p2 = e.write([del('b'), put('c', 'new')], me);
    assert.equal(p1, p2);
    assert.equal(e.writes, writes + 2, 'each joining write counts as a change');
    assert.equal(
      e.peek('b', (x) => x),
      undefined,
    );
    await assert.rejects(p1, StorageIOError);
    assert.equal(e.rollbacks, rollbacks + 1);
    assert.equal(str((await e.read('a', (x) => x)) as Buffer), 'old');
    assert.equal(str((await e.read('b', (x) => x)) as Buffer), 'old');
    assert.equal(await e.read('c', (x) => x), undefined);
    failing = false;
    // The engine goes on after the failure: the next write lands.
    await e.write([put('c', 'later')], me);
    assert.equal(str((await e.read('c', (x) => x)) as Buffer), 'later');
  } finally {
    await e.close();
  }
});

test('the open batch closes when the synchronous run ends: a later write of the owner, even while a group is being written, takes a new number', async () => {
  let gate: Promise<void> | undefined;
  let release = (): void => undefined;
  const ops: FileOps = {
    ...nodeFileOps,
    writeAll: async (fd, buf, off, len, pos) => {
      if (gate !== undefined) await gate;
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
  };
  const e = await open(dir('join-runs'), { fileOps: ops, durability: 'always' });
  try {
    gate = new Promise<void>((r) => {
      release = r;
    });
    // A group in flight: the flush loop will not run again until it is written.
    const g = e.write([put('z', '0')]);
    await new Promise((r) => setImmediate(r));
    const pa = e.write([put('a', '1')], me);
    // Other code runs (a reader could see a's version now): b must not join a's batch.
    await Promise.resolve();
    const pb = e.write([put('b', '1')], me);
    assert.notEqual(pb, pa);
    assert.equal(e.versionOf('b'), (e.versionOf('a') as number) + 1);
    await new Promise((r) => setTimeout(r, 10));
    const pc = e.write([put('c', '1')], me);
    assert.equal(e.versionOf('c'), (e.versionOf('b') as number) + 1);
    release();
    gate = undefined;
    await Promise.all([g, pa, pb, pc]);
  } finally {
    await e.close();
  }
});

test('a log write that fails while the owner has a batch open undoes that batch too, and a later write of the owner starts a new one', async () => {
  let fail: (err: Error) => void = () => undefined;
  let failNext = false;
  let started = (): void => undefined;
  const writing = new Promise<void>((r) => {
    started = r;
  });
  const ops: FileOps = {
    ...nodeFileOps,
    writeAll: (fd, buf, off, len, pos) => {
      if (!failNext) return nodeFileOps.writeAll(fd, buf, off, len, pos);
      failNext = false;
      started();
      // Settled by the test, so the writer's failure handling runs at a step the test chooses.
      return new Promise<void>((_, reject) => {
        fail = reject;
      });
    },
  };
  const e = await open(dir('join-fail-open'), { fileOps: ops });
  try {
    await e.write([put('a', 'old')]);
    failNext = true;
    const g = e.write([put('z', 'in flight')]);
    g.catch(() => undefined);
    // The flush loop has taken the group and started its (failing) write.
    await writing;
    const rollbacks = e.rollbacks;
    let second: Promise<void> | undefined;
    // Queued in this order: the writer's failure handling, the owner's next write, then the close of the open batch.
    fail(Object.assign(new Error('EIO: injected'), { code: 'EIO' }));
    queueMicrotask(() => {
      second = e.write([put('b', 'after the failure')], me);
    });
    const first = e.write([put('a', 'joined the failed group')], me);
    await assert.rejects(first, StorageIOError);
    await assert.rejects(g, StorageIOError);
    assert.equal(e.rollbacks, rollbacks + 1);
    // The open batch was undone with the group: its write is gone, and nothing could join it afterwards.
    assert.equal(str((await e.read('a', (x) => x)) as Buffer), 'old');
    assert.ok(second !== undefined);
    assert.notEqual(second, first, 'a write after the failure never joins the batch the failure undid');
    await second;
    assert.equal(str((await e.read('b', (x) => x)) as Buffer), 'after the failure');
  } finally {
    await e.close();
  }
});
