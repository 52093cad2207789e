/**
 * The listing view (src/store/log/names.ts) answers a namespace without a
 * directory lookup per name while no name there can be dead. These tests
 * drive each way a name can die (a delete not yet in the log, an expiry, a
 * failed write, an expiring key found at open) and check that the listing
 * never shows a dead name and shows every live one, in the namespace that
 * is affected and in one that is not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { nodeFileOps, type FileOps } from '../../src/engine/index.js';
import { LogStore } from '../../src/store/log/log-store.js';
import type { ListKind } from '../../src/store/store.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'pithos-names-'));
  dirs.push(d);
  return d;
}

interface Item {
  name: string;
  ttl_ms: number | null;
}

/** One page of up to 1,000 names, synchronously (listing a cached namespace never waits). */
function names(s: LogStore, kind: ListKind, prefix = ''): Item[] {
  const text = s.list(kind, { prefix, limit: 1000, after: null });
  assert.equal(typeof text, 'string', 'a listing answers at once');
  return (JSON.parse(text as string) as { items: Item[] }).items;
}
const justNames = (items: Item[]): string[] => items.map((i) => i.name);

/** Counts directory lookups for expiry, so a test can tell which way a page was answered. */
function countLookups(s: LogStore): { n: number } {
  const c = { n: 0 };
  const e = s.engine as unknown as { expiresAt: (k: string, now?: number) => number | undefined };
  const orig = e.expiresAt.bind(e);
  e.expiresAt = (k, now) => {
    c.n++;
    return orig(k, now);
  };
  return c;
}

test('no lookups while no name can be dead; a delete on its way to the log is never listed', async () => {
  let t = 1_700_000_000_000;
  const s = await LogStore.open({ dir: dir(), now: () => t, durability: 'always', sweepIntervalMs: 0, compactIntervalMs: 0 });
  const lookups = countLookups(s);
  for (const n of ['a', 'b', 'c']) await s.records.put(n, { n }, 0);
  await s.variants.put('v', { value: 1, text: '1' }, 0);
  assert.deepEqual(names(s, 'records'), [
    { name: 'a', ttl_ms: null },
    { name: 'b', ttl_ms: null },
    { name: 'c', ttl_ms: null },
  ]);
  assert.equal(lookups.n, 0, 'a namespace with no expiry, delete or failure needs no lookup');

  // The delete is in the directory at once, in the log only after the flush.
  const del = s.records.delete('b');
  assert.deepEqual(justNames(names(s, 'records')), ['a', 'c'], 'a delete not yet in the log is already not listed');
  assert.ok(lookups.n > 0, 'while a delete is in flight, names are checked');
  await del;
  lookups.n = 0;
  assert.deepEqual(justNames(names(s, 'records')), ['a', 'c']);
  assert.equal(lookups.n, 0, 'once the delete is in the log, no lookups again');

  // An expiry makes its namespace check from then on, and only that one.
  await s.records.put('t', { t: 1 }, 2);
  const withTtl = names(s, 'records');
  assert.deepEqual(justNames(withTtl), ['a', 'c', 't']);
  assert.equal(withTtl[2].ttl_ms, 2000);
  t += 2000;
  assert.deepEqual(justNames(names(s, 'records')), ['a', 'c'], 'an expired name is not listed');
  lookups.n = 0;
  assert.deepEqual(justNames(names(s, 'variants')), ['v']);
  assert.equal(lookups.n, 0, 'another namespace is not affected');
  await s.close();
});

test('a failed write does not leave its new name listed', async () => {
  let failing = false;
  const fileOps: FileOps = {
    ...nodeFileOps,
    writeAll: (fd, buf, off, len, pos) =>
      failing ? Promise.reject(Object.assign(new Error('EIO: injected'), { code: 'EIO' })) : nodeFileOps.writeAll(fd, buf, off, len, pos),
  };
  const s = await LogStore.open({ dir: dir(), now: Date.now, durability: 'always', sweepIntervalMs: 0, compactIntervalMs: 0, fileOps });
  await s.records.put('kept', { k: 1 }, 0);
  failing = true;
  await assert.rejects(s.records.put('lost', { k: 2 }, 0));
  failing = false;
  assert.deepEqual(justNames(names(s, 'records')), ['kept'], 'the name of an undone write is not listed');
  await s.records.put('later', { k: 3 }, 0);
  assert.deepEqual(justNames(names(s, 'records')), ['kept', 'later']);

  // A delete that fails: a page listed meanwhile does not show the name (and drops it from
  // the view); once the engine has put the key back, the view has it again.
  failing = true;
  const del = s.records.delete('kept');
  assert.deepEqual(justNames(names(s, 'records')), ['later']);
  await assert.rejects(del);
  failing = false;
  assert.equal(s.engine.has('R/kept'), true, 'the failed delete was undone');
  assert.deepEqual(justNames(names(s, 'records')), ['kept', 'later'], 'the name of a live key is listed again');
  await s.close();
});

test('an expiring key found at open makes every namespace check its names', async () => {
  let t = 1_700_000_000_000;
  const d = dir();
  const opts = { dir: d, now: () => t, durability: 'always' as const, sweepIntervalMs: 0, compactIntervalMs: 0 };
  let s = await LogStore.open(opts);
  await s.records.put('r1', { a: 1 }, 0);
  await s.records.put('r2', { a: 2 }, 5);
  await s.variants.put('v1', { value: 1, text: '1' }, 0);
  await s.close();
  s = await LogStore.open(opts);
  const lookups = countLookups(s);
  assert.deepEqual(
    names(s, 'records').map((i) => [i.name, i.ttl_ms]),
    [
      ['r1', null],
      ['r2', 5000],
    ],
  );
  assert.ok(lookups.n > 0);
  t += 5000;
  assert.deepEqual(justNames(names(s, 'records')), ['r1'], 'expired after the reopen: not listed');
  assert.deepEqual(justNames(names(s, 'variants')), ['v1']);
  await s.close();
});
