import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CorruptionError, MISS, type WriteOp } from '../../src/engine/index.js';
import { Clock, flipByte, newestLog, open, put, seqsIn, str, scratchDirs } from './helpers.js';

const dir = scratchDirs();

const value = (k: string): string => `${k}:`.padEnd(1000, k.slice(-1));

test('a tiny value cache evicts, and every value is still read back from disk', async () => {
  const d = dir('cache');
  const budget = 4096;
  const e = await open(d, { cacheBytes: budget, segmentBytes: 256 * 1024 });
  // 3000 values of 1 KB (~3 MB) through a 4 KiB cache; half of them in one
  // group, inserted out of key order.
  const keys: string[] = [];
  for (let i = 0; i < 1500; i++) keys.push(`plain:${i}`);
  for (let i = 0; i < 1500; i++) keys.push(`grp\u0000${String((i * 7919) % 1500).padStart(4, '0')}`);
  for (let i = 0; i < keys.length; i += 30) {
    const ops: WriteOp[] = keys.slice(i, i + 30).map((k) => put(k, value(k)));
    await e.write(ops);
  }
  // Pending entries may exceed the budget; once the log has them they may not.
  await e.write([put('flush', 'x')]);
  assert.ok(e.stats().cacheBytes <= budget + 2000, `cache holds ${e.stats().cacheBytes} bytes`);
  let misses = 0;
  for (const k of keys) if (e.peek(k, str) === MISS) misses++;
  assert.ok(misses > keys.length * 0.9, `only ${misses} of ${keys.length} values left the cache`);
  for (const k of keys) assert.equal(await e.read(k, str), value(k), k);
  assert.ok(e.stats().cacheBytes <= budget + 2000);

  // A scan of a group whose members are (mostly) not cached: key order.
  const group = keys.filter((k) => k.startsWith('grp\u0000')).sort();
  const scanned = e.scan('grp\u0000', str);
  assert.ok(scanned instanceof Promise, 'uncached members should make scan asynchronous');
  assert.deepEqual(await scanned, group.map(value));
  await e.close();

  // After reopen nothing is cached; reads and scans come from disk.
  const e2 = await open(d, { cacheBytes: budget });
  assert.equal(e2.stats().cacheBytes, 0);
  assert.equal(e2.peek('plain:7', str), MISS);
  assert.deepEqual(await e2.scan('grp\u0000', str), group.map(value));
  for (let i = 0; i < keys.length; i += 37) assert.equal(await e2.read(keys[i], str), value(keys[i]));
  await e2.close();
});

test('a large cache keeps values and their decoded forms', async () => {
  const d = dir('cache-big');
  const e = await open(d);
  await e.write([put('a', '{"n":1}')]);
  let decodes = 0;
  const json = (b: Buffer): unknown => {
    decodes++;
    return JSON.parse(b.toString());
  };
  assert.deepEqual(e.peek('a', json), { n: 1 });
  assert.deepEqual(e.peek('a', json), { n: 1 });
  assert.equal(decodes, 1, 'the decoded value was not cached');
  // A write can hand over its decoded form (memo) so no decode happens.
  const memo = { n: 2 };
  await e.write([{ ...put('a', '{"n":2}'), memo, decoder: json as never }]);
  assert.equal(e.peek('a', json), memo);
  assert.equal(decodes, 1);
  await e.close();
});

test('overwriting cached values does not grow memory without bound', async () => {
  // Each write caches its value; the version it replaces leaves the cache.
  // Bookkeeping of replaced versions must not pile up while the cache is
  // under budget.
  const d = dir('cache-churn');
  const e = await open(d, { durability: 'never' });
  const N = 200_000;
  for (let i = 0; i < N; i += 1000) {
    const ps: Array<Promise<void>> = [];
    for (let j = i; j < i + 1000; j++) ps.push(e.write([put(`k${j % 10}`, `v${j}`)]));
    await Promise.all(ps);
  }
  for (let j = 0; j < 10; j++) assert.equal(await e.read(`k${j}`, str), `v${N - 10 + j}`);
  const queue = (e as unknown as { keydir: { cacheQueue: unknown[]; cacheHead: number } }).keydir; // private: a white-box check
  const held = queue.cacheQueue.length - queue.cacheHead;
  assert.ok(held < 10_000, `the cache queue holds ${held} slots for 10 cached values`);
  await e.close();
});

test('expired keys are invisible at once and swept from the directory', async () => {
  const d = dir('expiry');
  const clock = new Clock();
  const e = await open(d, { now: clock.now });
  await e.write([put('short', 's', clock.t + 1000), put('long', 'l', clock.t + 100_000), put('never', 'n')]);
  await e.write([put('past', 'p', clock.t - 1)]);
  assert.equal(e.has('past'), false);
  assert.equal(e.expiresAt('short'), clock.t + 1000);
  clock.advance(1000);
  assert.equal(e.has('short'), false);
  assert.equal(await e.read('short', str), undefined);
  assert.equal(e.stats().keys, 3, 'swept before the sweeper ran');
  await e.sweep();
  assert.equal(e.stats().keys, 2);
  await e.close();
  const e2 = await open(d, { now: clock.now });
  assert.equal(e2.stats().keys, 2);
  assert.equal(await e2.read('long', str), 'l');
  clock.advance(100_000);
  assert.equal(await e2.read('long', str), undefined);
  assert.equal(await e2.read('never', str), 'n');
  await e2.close();
  const e3 = await open(d, { now: clock.now });
  assert.equal(e3.stats().keys, 1, 'an expired entry was loaded at recovery');
  await e3.close();
});

test('rewriting keys with a long ttl does not pile up expiry bookkeeping', async () => {
  const d = dir('ttl-churn');
  const clock = new Clock();
  const e = await open(d, { durability: 'never', now: clock.now });
  const N = 100_000;
  for (let i = 0; i < N; i += 1000) {
    const ps: Array<Promise<void>> = [];
    for (let j = i; j < i + 1000; j++) ps.push(e.write([put(`k${j % 10}`, `v${j}`, clock.t + 86_400_000 + j)]));
    await Promise.all(ps);
    clock.advance(1);
  }
  const heap = (e as unknown as { keydir: { heap: unknown[] } }).keydir.heap; // private: a white-box check
  assert.ok(heap.length < 5000, `the expiry heap holds ${heap.length} items for 10 keys`);
  assert.equal(e.expiresAt('k3'), clock.t - 1 + 86_400_000 + N - 7);
  // Expiry still works after the heap was rebuilt.
  clock.advance(86_400_000 + N);
  await e.sweep();
  assert.equal(e.stats().keys, 0);
  await assert.rejects(e.write([put('nan', 'x', Number.NaN)]), RangeError);
  await e.close();
});

test('a value damaged on disk after open is refused when read, not served', async () => {
  const d = dir('bitrot');
  const e = await open(d, { cacheBytes: 0 });
  for (let i = 0; i < 50; i++) await e.write([put(`k${i}`, value(`k${i}`))]);
  await e.write([put('flush', 'x')]);
  assert.equal(e.peek('k20', str), MISS);
  const file = newestLog(d);
  const batch = seqsIn(file)[20]; // the batch that holds k20
  flipByte(file, batch.pos + batch.len - 10, 0x40);
  await assert.rejects(e.read('k20', str), (err: unknown) => err instanceof CorruptionError && /checksum/.test(err.message));
  assert.equal(await e.read('k21', str), value('k21'));
  await e.close();
});
