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
  const queue = (e as unknown as { keydir: { values: { queue: unknown[]; head: number } } }).keydir.values; // private: a white-box check
  const held = queue.queue.length - queue.head;
  assert.ok(held < 10_000, `the cache queue holds ${held} slots for 10 cached values`);
  await e.close();
});

interface QueueView {
  keydir: { values: { queue: Array<{ qpos: number; flags: number } | undefined>; head: number; queueBase: number; cachedEntries: number } };
}

/** White-box: every queued entry sits at its recorded slot, and nothing else is flagged queued. */
function checkQueue(e: unknown): { held: number; cached: number } {
  const kd = (e as QueueView).keydir.values;
  const q = kd.queue;
  for (let i = kd.head; i < q.length; i++) {
    const x = q[i];
    if (x === undefined) continue;
    assert.equal(x.qpos - kd.queueBase, i, 'a queued entry is not at its recorded slot');
    assert.ok((x.flags & 4) !== 0, 'an entry in the queue is not flagged queued');
  }
  return { held: q.length - kd.head, cached: kd.cachedEntries };
}

test('a key rewritten by every insert (a table meta) holds one cache slot, not one per insert', async () => {
  // The row-insert shape: each batch rewrites one key and adds a new one.
  // The rewritten key's old versions must not stay behind in the cache queue
  // (they kept a dead entry alive per inserted row).
  const d = dir('cache-insert');
  const e = await open(d, { durability: 'never' });
  const meta = (b: Buffer): unknown => JSON.parse(b.toString());
  const N = 30_000;
  for (let i = 0; i < N; i += 1000) {
    const ps: Array<Promise<void>> = [];
    for (let j = i; j < i + 1000; j++) {
      ps.push(
        e.write([
          { ...put('T/t', `{"next":${j + 1}}`), memo: { next: j + 1 }, decoder: meta as never },
          { ...put(`t\u0000t\u0000${String(j).padStart(6, '0')}`, `row ${j}`), memo: `row ${j}`, decoder: str as never },
        ]),
      );
    }
    await Promise.all(ps);
  }
  const { held, cached } = checkQueue(e);
  assert.equal(cached, N + 1);
  assert.ok(held <= cached + 1, `the cache queue holds ${held} slots for ${cached} cached values`);
  assert.deepEqual(e.peek('T/t', meta), { next: N });
  assert.equal(await e.read('t\u0000t\u0000000123', str), 'row 123');
  await e.close();
});

test('once a value is in the log, only its decoded form stays cached; other decoders read the file', async () => {
  const d = dir('cache-drop');
  const e = await open(d, { durability: 'never' });
  const doc = '{"a":1,"pad":"' + 'x'.repeat(500) + '"}';
  const parsed = { a: 1, pad: 'x'.repeat(500) };
  const json = (b: Buffer): unknown => JSON.parse(b.toString());
  const w = e.write([{ ...put('k', doc), memo: parsed, decoder: json as never }]);
  // Before the flush the bytes are held (the entry has no place in a file yet).
  assert.equal(e.peek('k', str), doc, 'another decoder reads the held bytes before the flush');
  await w;
  const before = e.stats().cacheBytes;
  await e.write([{ ...put('k2', doc), memo: parsed, decoder: json as never }]);
  const after = e.stats().cacheBytes;
  assert.ok(after - before < 2 * doc.length + 200, `a flushed value with a memo costs ${after - before} cache bytes`);
  assert.equal(e.peek('k2', json), parsed, 'the memo itself is served');
  // Another decoder: not in memory, so read from the log, and right.
  assert.equal(e.peek('k2', str), MISS);
  assert.equal(await e.read('k2', str), doc);
  checkQueue(e);
  await e.close();
});

test('a decoder that returns undefined leaves nothing counted as cached', async () => {
  const d = dir('cache-undefined');
  const e = await open(d, { durability: 'never' });
  await e.write([put('u', 'x'), put('w', 'y'), put('g\u0000a', 'z')]);
  await e.close();
  const e2 = await open(d, { durability: 'never' });
  const nothing = (): unknown => undefined;
  // A group read from disk caches only decoded forms, and here there are none.
  const snap = e2.snapshot('g\u0000', nothing);
  assert.deepEqual(await snap.read(0, 1), [undefined]);
  snap.release();
  for (let i = 0; i < 3; i++) {
    assert.equal(await e2.read('u', nothing), undefined);
    assert.notEqual(e2.peek('w', nothing), 'y');
    assert.equal(await e2.read('w', nothing), undefined);
  }
  // What the cache counts is what its entries hold: the bytes, with no decoded form to replace them.
  const kd = (e2 as unknown as { keydir: { map: Map<string, { val?: Buffer; memo?: unknown }> } }).keydir;
  const holding = [...kd.map.values()].filter((x) => x.val !== undefined || x.memo !== undefined).length;
  assert.equal(checkQueue(e2).cached, holding);
  assert.equal(holding, 2);
  assert.equal(e2.stats().cacheBytes, 2 * (1 + 96));
  await e2.close();
});

test('an empty value (a set member, an index entry) leaves the cache once the log has it, and still reads back', async () => {
  const d = dir('cache-empty');
  const e = await open(d, { durability: 'never' });
  const member = (): boolean => true;
  const ops: WriteOp[] = [];
  for (let i = 0; i < 500; i++) ops.push({ ...put(`s\u0000big\u0000m${i}`, Buffer.alloc(0)), memo: true, decoder: member });
  for (let i = 0; i < 500; i++) ops.push(put(`i\u0000ix\u0000v${i}`, Buffer.alloc(0)));
  ops.push({ ...put('R/full', 'x'), memo: 'x', decoder: str });
  await e.write(ops);
  // One thousand empty values would otherwise hold a queue slot each and
  // 96-160 bytes of the budget apiece; only the non-empty value stays.
  assert.equal(checkQueue(e).cached, 1);
  assert.equal(e.stats().cacheBytes, 2 * 1 + 64);
  assert.equal(e.peek('s\u0000big\u0000m7', member), MISS);
  assert.equal(await e.read('s\u0000big\u0000m7', member), true);
  assert.equal(await e.read('i\u0000ix\u0000v9', str), '');
  assert.equal(e.peek('R/full', str), 'x');
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
  const heap = (e as unknown as { keydir: { expiry: { heap: unknown[] } } }).keydir.expiry.heap; // private: a white-box check
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

test("a kept reference reads only while it is its key's live version (Engine.ref / peekRef)", async () => {
  const d = dir('cache-ref');
  const clock = new Clock();
  const e = await open(d, { now: clock.now });
  const json = (b: Buffer): unknown => JSON.parse(b.toString());
  await e.write([put('a', '{"n":1}'), put('t', '{"n":1}', clock.t + 1000)]);
  assert.deepEqual(e.peek('a', json), { n: 1 });
  const ref = e.ref('a');
  assert.ok(ref !== undefined);
  assert.deepEqual(e.peekRef(ref, json, clock.t), { n: 1 });
  assert.equal(e.peekRef(ref, str as never, clock.t), MISS, 'cached under another decoder');
  // Replaced: the old version must not answer even if something left a decoded form on it
  // (every caching path checks currency first, so this is forced here by hand).
  await e.write([put('a', '{"n":2}')]);
  const old = ref as unknown as { memo: unknown; dec: unknown };
  old.memo = { n: 1 };
  old.dec = json;
  assert.equal(e.peekRef(ref, json, clock.t), MISS, 'a replaced version does not answer');
  // Expired.
  assert.deepEqual(e.peek('t', json), { n: 1 });
  const tref = e.ref('t');
  assert.ok(tref !== undefined);
  assert.deepEqual(e.peekRef(tref, json, clock.t), { n: 1 });
  assert.equal(e.peekRef(tref, json, clock.t + 1000), MISS, 'an expired version does not answer');
  assert.equal(e.ref('t', clock.t + 1000), undefined);
  await e.close();
});
