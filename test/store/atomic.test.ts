/**
 * The log store's one atomic primitive (docs/architecture.md): a decision
 * judges time once, restarts for cold data without being refused for it,
 * and never leaves a disk read unobserved.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Atomic } from '../../src/store/log/atomic.js';
import { LogStore } from '../../src/store/log/log-store.js';
import type { Engine } from '../../src/engine/index.js';

const quiet = { sweepIntervalMs: 0, compactIntervalMs: 0, log: () => {} };
const tmp = (): string => mkdtempSync(path.join(os.tmpdir(), 'pithos-atomic-'));
const n = (value: number) => ({ value, text: undefined });

test('a decision judges expiry at one moment: an object expiring mid-decision never comes back without its ttl', async () => {
  // A clock that moves 1 ms on every reading: any decision that asks the
  // clock twice can see an object alive, then gone.
  for (let k = 1; k <= 8; k++) {
    let t = 1_000_000;
    const dir = tmp();
    const s = await LogStore.open({ dir, now: () => t++, ...quiet });
    try {
      await s.variants.put('v', n(1), 1);
      await s.tables.create('t', 1);
      await s.records.put('r', { a: 1 }, 1);
      const exp = s.engine.expiresAt('V/v') as number;
      const outcomes: string[] = [];
      for (const [what, op, key] of [
        ['variant ADD', () => s.variants.increment('v', n(1)), 'V/v'],
        ['table INSERT', () => s.tables.insert('t', { x: 1 }), 'T/t'],
        ['record PATCH', () => s.records.patch('r', { b: 2 }), 'R/r'],
      ] as const) {
        t = exp - k;
        const ok = await op().then(
          () => true,
          (e: Error) => {
            assert.match(e.message, /does not exist/, `${what}: only "expired" may refuse it`);
            return false;
          },
        );
        const left = s.engine.expiresAt(key, t);
        if (left !== undefined) assert.notEqual(left, 0, `${what} at ${k} ms before expiry made the object permanent`);
        outcomes.push(`${what}: ${ok ? 'applied' : 'expired'}`);
      }
      t = exp + 60_000;
      assert.equal(s.engine.has('V/v'), false, 'the variant still expires');
      assert.equal(s.engine.has('T/t'), false, 'the table still expires');
      assert.equal(s.engine.has('R/r'), false, 'the record still expires');
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('a transaction over 300 cold variants succeeds: restarts that fetch new data are not counted as failures', async () => {
  const dir = tmp();
  let s = await LogStore.open({ dir, now: Date.now, ...quiet });
  for (let i = 0; i < 300; i++) await s.variants.put(`v${i}`, n(i), 0);
  await s.close();
  // After a reopen no value is in memory: every variant is read from disk.
  s = await LogStore.open({ dir, now: Date.now, ...quiet });
  try {
    const mutations = Array.from({ length: 300 }, (_, i) => ({ kind: 'variant' as const, name: `v${i}`, op: 'ADD' as const, delta: n(1) }));
    const out = JSON.parse(await s.transact({ checks: [], mutations, serializable: false })) as { results: Array<{ variant: number }> };
    assert.deepEqual(
      out.results.map((r) => r.variant),
      Array.from({ length: 300 }, (_, i) => i + 1),
    );
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a group read for an earlier attempt is reused, not read again and dropped (no unobserved rejection)', async () => {
  let scans = 0;
  let unhandled: unknown;
  const onUnhandled = (e: unknown): void => {
    unhandled = e;
  };
  process.on('unhandledRejection', onUnhandled);
  try {
    // A minimal engine: the first scan of a group reads from "disk", a second would fail.
    const engine = {
      upcomingSeq: 7,
      rollbacks: 0,
      scan() {
        scans++;
        return scans === 1 ? Promise.resolve([]) : Promise.reject(new Error('EIO on a second read'));
      },
      write: () => Promise.resolve(),
    } as unknown as Engine;
    const a = new Atomic(engine, () => 0);
    assert.equal(await a.read((tx) => tx.rows('g\u0000', () => ({ id: 0, obj: {}, json: '{}' })).length), 0);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(scans, 1, 'the group was read once');
    assert.equal(unhandled, undefined);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
