/**
 * A decision's listing of a group's keys (Tx.groupKeys) reads only what is
 * stored, so it refuses to run once the decision has written into that
 * group, rather than answer without the decision's own writes; a write to
 * another key or group first does not stop it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Atomic } from '../../src/store/log/atomic.js';
import { LogStore } from '../../src/store/log/log-store.js';
import { elementGroup } from '../../src/store/log/collections.js';

const quiet = { sweepIntervalMs: 0, compactIntervalMs: 0, log: () => {} };

test('groupKeys lists a group before the decision writes into it, and refuses after', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-txgroup-'));
  const s = await LogStore.open({ dir, now: () => Date.now(), ...quiet });
  try {
    await s.sets.put('s', ['a', 'b'], 0);
    const atomic = new Atomic(s.engine, () => Date.now());
    const keys = await atomic.read((tx) => tx.groupKeys(findGroup(s), '', 10, true));
    assert.equal(keys.length, 2, 'a read lists what is stored');
    const listedAfterOther = await atomic.atomically(undefined, (tx) => {
      tx.put('V/elsewhere', Buffer.from('1'), 1, () => 1, 0);
      return tx.groupKeys(findGroup(s), '', 10, true).length;
    });
    assert.equal(listedAfterOther, 2, 'a write outside the group does not stop the listing');
    await assert.rejects(
      atomic.atomically(undefined, (tx) => {
        tx.put(findGroup(s) + 'c', Buffer.from('0'), 0, () => 0, 0);
        return tx.groupKeys(findGroup(s), '', 10, true).length;
      }),
      /after writing into it/,
    );
    await assert.rejects(
      atomic.atomically(undefined, (tx) => {
        tx.dropGroup(findGroup(s));
        return tx.groupKeys(findGroup(s), '', 10, true).length;
      }),
      /after writing into it/,
    );
    assert.deepEqual(JSON.parse(await s.sets.get('s', undefined, undefined)).members, ['a', 'b'], 'a refused decision wrote nothing');
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The element group of set 's': its incarnation is the version of the one write that created it. */
function findGroup(s: LogStore): string {
  return elementGroup('set', 's', s.engine.versionOf('S/s', Date.now()) as number);
}
