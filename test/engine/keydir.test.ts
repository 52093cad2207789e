/**
 * The key directory is sharded (256 hash shards) and each group is a list of
 * key-range chunks (docs/engine.md, "Key directory"). These tests hold it to
 * what it replaced, a plain Map: random set/delete/dropGroup/restore
 * sequences against a Map model, checking after every step the size, every
 * key's current entry (by identity), the directory's contents, and each
 * group's members in key order. Chunks are made tiny (2–16 keys) so that
 * splits, merges, out-of-order inserts and lazy re-sorting all happen within
 * a few dozen keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { CHUNK_MAX, Entry, groupOf, KeyDir, ShardedMap, shardOf } from '../../src/engine/keydir.js';

const PREFIXES = ['', 'R/', 'g\u0000', 'g\u0000s\u0000', 'h\u0000'];
const GROUPS = ['g\u0000', 'g\u0000s\u0000', 'h\u0000', 'none\u0000'];

type Cmd =
  | { t: 'set'; key: string }
  | { t: 'delete'; key: string }
  | { t: 'drop'; group: string }
  | { t: 'restore'; key: string; pick: number }
  | { t: 'iterate'; group: string; stopAt: number }
  | { t: 'thin'; group: string; keep: number };

// Unpadded numbers, so key order ('10' < '9') differs from insertion order often.
// A group's name is a key too (its member key is empty).
const keyArb = fc.oneof(
  { weight: 30, arbitrary: fc.tuple(fc.constantFrom(...PREFIXES), fc.nat({ max: 60 })).map(([p, n]) => p + String(n)) },
  { weight: 1, arbitrary: fc.constantFrom(...GROUPS) },
);
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 6, arbitrary: keyArb.map((key) => ({ t: 'set' as const, key })) },
  { weight: 3, arbitrary: keyArb.map((key) => ({ t: 'delete' as const, key })) },
  { weight: 1, arbitrary: fc.constantFrom(...GROUPS).map((group) => ({ t: 'drop' as const, group })) },
  { weight: 2, arbitrary: fc.tuple(keyArb, fc.nat()).map(([key, pick]) => ({ t: 'restore' as const, key, pick })) },
  // Iterating (and stopping part way) sorts chunks lazily: later steps must still agree.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...GROUPS), fc.nat({ max: 40 })).map(([group, stopAt]) => ({ t: 'iterate' as const, group, stopAt })) },
  // Deleting most of a group, one key at a time, empties chunks and merges small ones.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...GROUPS), fc.integer({ min: 2, max: 9 })).map(([group, keep]) => ({ t: 'thin' as const, group, keep })) },
);

let serial = 0;
const entry = (): Entry => new Entry(undefined, serial++, 1, 20, 0, 0, serial);

function check(kd: KeyDir, model: Map<string, Entry>): void {
  assert.equal(kd.size, model.size);
  assert.equal(kd.map.size, model.size);
  let grouped = 0;
  for (const [k, e] of model) {
    assert.equal(kd.get(k), e, `get(${JSON.stringify(k)})`);
    assert.equal(kd.map.has(k), true);
    if (groupOf(k) !== undefined) grouped++;
  }
  assert.equal(kd.ungroupedSize, model.size - grouped);
  // The directory iterates every entry once (its order is shard order, not insertion order).
  const listed = Array.from(kd.map).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const expected = Array.from(model).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  assert.deepEqual(
    listed.map(([k]) => k),
    expected.map(([k]) => k),
  );
  for (let i = 0; i < listed.length; i++) assert.equal(listed[i][1], expected[i][1]);
  for (const g of GROUPS) {
    const want = expected.filter(([k]) => groupOf(k) === g);
    const m = kd.groupMembers(g);
    if (want.length === 0) {
      assert.equal(m, undefined, `empty group ${JSON.stringify(g)} is gone`);
      continue;
    }
    assert.ok(m !== undefined);
    assert.equal(m.size, want.length);
    // Key order, through every way a caller walks it.
    assert.deepEqual(
      Array.from(m.keys()),
      want.map(([k]) => k),
    );
    const vals = Array.from(m.values());
    const ents = Array.from(m);
    const each: string[] = [];
    m.forEach((_v, k) => each.push(k));
    assert.deepEqual(
      each,
      want.map(([k]) => k),
    );
    for (let i = 0; i < want.length; i++) {
      assert.equal(vals[i], want[i][1]);
      assert.equal(ents[i][0], want[i][0]);
      assert.equal(ents[i][1], want[i][1]);
      assert.equal(m.get(want[i][0]), want[i][1]);
    }
    assert.equal(m.get(g + 'absent'), undefined);
    // The copies and pages callers keep: member keys are the keys without the group's prefix.
    const [members, versions] = kd.copyGroup(g);
    assert.deepEqual(
      members,
      want.map(([k]) => k.slice(g.length)),
    );
    assert.deepEqual(
      versions,
      want.map(([, e]) => e),
    );
    assert.deepEqual(
      kd.groupKeysAfter(g, g, 2)[0],
      want
        .filter(([k]) => k > g)
        .slice(0, 2)
        .map(([k]) => k),
      'after the group name itself',
    );
    const mid = want[want.length >> 1][0];
    const after = want.filter(([k]) => k > mid).slice(0, 3);
    assert.deepEqual(
      kd.groupKeysAfter(g, mid, 3)[0],
      after.map(([k]) => k),
    );
    assert.deepEqual(
      kd.groupKeysAfter(g, mid, 3, true)[0],
      after.map(([k]) => k.slice(g.length)),
    );
    assert.deepEqual(
      kd.groupKeysAfter(g, g.slice(0, -1), 2)[0],
      want.slice(0, 2).map(([k]) => k),
      'a key below the group: from the first',
    );
    assert.deepEqual(kd.groupKeysAfter(g, g.slice(0, -1) + '\u0001', 2)[0], [], 'a key above the group: nothing');
    // A snapshot copied in steps pages through the whole group; a page takes whole chunks natively.
    assert.deepEqual(
      kd.groupKeysAfter(g, mid, 300, true)[0],
      want.filter(([k]) => k > mid).map(([k]) => k.slice(g.length)),
      'a long bare page: chunks copied natively, its start found by binary search',
    );
    for (const step of [1, 3, 7, 50, 256]) {
      const got: string[] = [];
      const es: Entry[] = [];
      let at = '';
      for (;;) {
        const n = kd.appendGroupKeys(g, at, step, got, es);
        if (n < step) break;
        at = g + got[got.length - 1];
      }
      assert.deepEqual(
        got,
        want.map(([k]) => k.slice(g.length)),
        `pages of ${step}`,
      );
      assert.deepEqual(
        es,
        want.map(([, e]) => e),
      );
    }
  }
}

test('KeyDir behaves like a Map under random set/delete/dropGroup/restore (group order = key order)', () => {
  fc.assert(
    fc.property(fc.constantFrom(2, 4, 8, 16), fc.array(cmdArb, { minLength: 1, maxLength: 300, size: 'max' }), (chunkMax, cmds) => {
      const kd = new KeyDir(1 << 20, chunkMax);
      const model = new Map<string, Entry>();
      // Versions each key lost, as the engine keeps them for undo.
      const removed = new Map<string, Entry[]>();
      const lose = (k: string, e: Entry | undefined): void => {
        if (e !== undefined) removed.set(k, [...(removed.get(k) ?? []), e]);
      };
      for (const c of cmds) {
        if (c.t === 'set') {
          const e = entry();
          // A grouped key goes in whole or, as recovery from a hint puts it, as group and member.
          const cut = c.key.lastIndexOf('\u0000');
          const prev = cut >= 0 && c.key.length % 2 === 0 ? kd.setMember(c.key.slice(0, cut + 1), c.key.slice(cut + 1), e) : kd.set(c.key, e);
          assert.equal(prev, model.get(c.key));
          lose(c.key, prev);
          model.set(c.key, e);
        } else if (c.t === 'delete') {
          const prev = kd.delete(c.key);
          assert.equal(prev, model.get(c.key));
          lose(c.key, prev);
          model.delete(c.key);
        } else if (c.t === 'drop') {
          const out = kd.dropGroup(c.group);
          const want = Array.from(model)
            .filter(([k]) => groupOf(k) === c.group)
            .sort((a, b) => (a[0] < b[0] ? -1 : 1));
          assert.deepEqual(
            out.map(([k]) => k),
            want.map(([k]) => k),
            'dropGroup returns the members in key order',
          );
          for (const [k, e] of out) {
            assert.equal(e, model.get(k));
            lose(k, e);
            model.delete(k);
          }
        } else if (c.t === 'restore') {
          // Put back an older version of the key, or its absence.
          const old = removed.get(c.key) ?? [];
          const e = c.pick % (old.length + 1) === old.length ? undefined : old[c.pick % (old.length + 1)];
          lose(c.key, model.get(c.key));
          kd.restore(c.key, e);
          if (e === undefined) model.delete(c.key);
          else model.set(c.key, e);
        } else if (c.t === 'thin') {
          const members = Array.from(model.keys()).filter((k) => groupOf(k) === c.group);
          members.forEach((k, i) => {
            if (i % c.keep === 0) return;
            const prev = kd.delete(k);
            assert.equal(prev, model.get(k));
            lose(k, prev);
            model.delete(k);
          });
        } else {
          const m = kd.groupMembers(c.group);
          if (m !== undefined) {
            let n = 0;
            for (const _ of m) if (n++ >= c.stopAt) break;
          }
        }
        check(kd, model);
      }
    }),
    { numRuns: Number(process.env.PITHOS_PROPERTY_RUNS ?? 1000) },
  );
});

test('ShardedMap agrees with Map on get/has/set/delete/clear/size and lists each entry once', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom('set', 'delete', 'clear'), fc.string({ maxLength: 80 }), fc.nat()), { maxLength: 200 }), (ops) => {
      const s = new ShardedMap<number>();
      const m = new Map<string, number>();
      for (const [op, k, v] of ops) {
        if (op === 'set') {
          assert.equal(s.set(k, v), s);
          m.set(k, v);
        } else if (op === 'delete') {
          assert.equal(s.delete(k), m.delete(k));
        } else if (v % 10 === 0) {
          s.clear();
          m.clear();
        }
        assert.equal(s.size, m.size);
        assert.equal(s.get(k), m.get(k));
        assert.equal(s.has(k), m.has(k));
      }
      const byKey = (a: [string, number], b: [string, number]): number => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
      assert.deepEqual(Array.from(s).sort(byKey), Array.from(m).sort(byKey));
      assert.deepEqual(Array.from(s.keys()).sort(), Array.from(m.keys()).sort());
      assert.deepEqual(Array.from(s.values()).sort(), Array.from(m.values()).sort());
    }),
    { numRuns: 200 },
  );
});

test("shardOf spreads the stores' key shapes evenly over the 256 shards", () => {
  // Record keys and one table's row keys (src/store/log/keys.ts): 100 keys per shard on average.
  for (const key of [
    (i: number) => `R/user:${i}`,
    (i: number) => `t\u0000orders\u00001\u0000${String(i).padStart(16, '0')}`,
    (i: number) => `R/${'x'.repeat(100)}/${i}/${'y'.repeat(30)}`,
  ]) {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 25_600; i++) counts[shardOf(key(i))]++;
    assert.ok(Math.min(...counts) > 50 && Math.max(...counts) < 150, `shards hold ${Math.min(...counts)}..${Math.max(...counts)} keys`);
  }
});

test('a group far bigger than a chunk stays in key order through out-of-order inserts, splits and deletes', () => {
  const kd = new KeyDir(0);
  const g = 't\u0000big\u00001\u0000';
  const n = 3 * CHUNK_MAX + 17;
  const key = (i: number): string => g + String(i).padStart(16, '0');
  // Evens in order (appends that open new chunks), then odds backwards (each lands inside a full chunk).
  for (let i = 0; i < n; i += 2) kd.set(key(i), entry());
  for (let i = n - (n % 2 === 0 ? 1 : 2); i > 0; i -= 2) kd.set(key(i), entry());
  for (let i = 0; i < n; i += 3) kd.delete(key(i));
  const want: string[] = [];
  for (let i = 0; i < n; i++) if (i % 3 !== 0) want.push(key(i));
  const m = kd.groupMembers(g);
  assert.ok(m !== undefined);
  assert.equal(m.size, want.length);
  assert.deepEqual(Array.from(m.keys()), want);
  const chunks = (m as unknown as { chunks: Array<{ map: Map<string, Entry> }> }).chunks;
  assert.ok(chunks.length > 3, `${chunks.length} chunks`);
  for (const c of chunks) assert.ok(c.map.size <= CHUNK_MAX, `chunk of ${c.map.size}`);
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

test("a group holds each member's key without the group's prefix, in a string of its own", () => {
  // 20,000 members of a group whose prefix is 1,000 characters: holding the
  // whole key (or a slice of it, which keeps the whole key alive) costs over
  // 1 KB a member; a member key of its own costs its 20 characters.
  const g = 'p'.repeat(999) + '\u0000';
  const N = 20_000;
  const kd = new KeyDir(1 << 20);
  const entries = Array.from({ length: N }, () => entry());
  const before = heap();
  for (let i = 0; i < N; i++) {
    // As recovery decodes a key (a flat string), and as a write builds one (prefix + member).
    const member = 'member-' + String(i).padStart(13, '0');
    kd.set(i % 2 === 0 ? Buffer.from(g + member, 'latin1').toString('latin1') : g + member, entries[i]);
  }
  const per = (heap() - before) / N;
  assert.equal(kd.size, N);
  assert.ok(per < 200, `${per.toFixed(0)} bytes per member`);
  assert.equal(kd.get(g + 'member-' + String(N - 1).padStart(13, '0')), entries[N - 1]);
});

test('an entry without an expiry holds its version alone (88 bytes); one with an expiry holds both', () => {
  const N = 100_000;
  const before = heap();
  const es = Array.from({ length: N }, (_, i) => new Entry(undefined, i, 16, 60, 0, 1234, i + 1));
  const per = (heap() - before) / N - 8; // less the array's slot
  assert.ok(per < 92, `${per.toFixed(1)} bytes per entry`);
  assert.equal(es[7].seq, 8);
  assert.equal(es[7].exp, 0);
  const exp = Date.now() + 60_000;
  const timed = new Entry(undefined, 0, 16, 60, exp, 1234, 2 ** 40);
  assert.equal(timed.seq, 2 ** 40);
  assert.equal(timed.exp, exp);
});

test('a group member with an expiry is in the expiry heap by its member key, and is swept by its whole key', () => {
  // 20,000 members with an expiry under a 1,000-character prefix: an expiry
  // item holding the whole key (which the group no longer holds) costs over
  // 1 KB a member.
  const g = 'p'.repeat(999) + '\u0000';
  const N = 20_000;
  const kd = new KeyDir(1 << 20);
  const exp = Date.now() + 60_000;
  const before = heap();
  for (let i = 0; i < N; i++) {
    const key = Buffer.from(g + 'member-' + String(i).padStart(13, '0'), 'latin1').toString('latin1');
    kd.set(key, new Entry(undefined, 0, 1, 20, exp, 0, i + 1));
  }
  const per = (heap() - before) / N;
  assert.ok(per < 400, `${per.toFixed(0)} bytes per member`);
  assert.equal(kd.expiringCount, N);
  assert.equal(kd.nextExpiry(), exp);
  // Overwritten and deleted members' items are skipped; the rest are swept.
  kd.set(g + 'member-' + String(0).padStart(13, '0'), new Entry(undefined, 0, 1, 20, 0, 0, N + 1));
  kd.delete(g + 'member-' + String(1).padStart(13, '0'));
  assert.equal(kd.sweep(exp - 1, N), 0);
  assert.equal(kd.sweep(exp, 2 * N), N - 2);
  assert.equal(kd.size, 1);
  assert.equal(kd.expiringCount, 0);
  assert.equal(kd.get(g + 'member-' + String(0).padStart(13, '0'))?.seq, N + 1);
});
