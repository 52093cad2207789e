/**
 * Group snapshots (docs/engine.md, "Group snapshots"): the versions of one
 * instant, read later in batches, whatever happened to the keys meanwhile —
 * overwrites, deletes, a dropped group, compaction of the segments they were
 * in — from the cache or from the log (coalesced reads), with expiry judged
 * at the instant of the snapshot.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { del, drop, open, put, rmDir, str, tmpDir } from './helpers.js';

const G = 'g\u0000';
const key = (i: number): string => G + String(i).padStart(6, '0');
const dec = (b: Buffer, k: string): string => `${k.slice(G.length)}=${str(b)}`;

async function readAll(s: { length: number; read(a: number, b: number): string[] | Promise<string[]> }, step: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += step) out.push(...(await s.read(i, Math.min(s.length, i + step))));
  return out;
}

test('a snapshot reads the versions of its instant, cached or not, after overwrites, deletes, a drop and compaction', async () => {
  const dir = tmpDir('snap');
  // A tiny cache (values leave memory) and small segments (compaction has runs to copy).
  const e = await open(dir, { cacheBytes: 4096, segmentBytes: 16 * 1024, durability: 'never', compactMinDeadBytes: 1, compactMinDeadRatio: 0.1 });
  try {
    const n = 2000;
    for (let i = 0; i < n; i += 100) await e.write(Array.from({ length: 100 }, (_, k) => put(key(i + k), `v${i + k}`)));
    const want = Array.from({ length: n }, (_, i) => `${String(i).padStart(6, '0')}=v${i}`);
    const s = e.snapshot(G, dec);
    assert.equal(s.length, n);
    // Overwrite half, delete a quarter, insert more; then compact everything.
    const ops = [];
    for (let i = 0; i < n; i += 2) ops.push(put(key(i), `new${i}`));
    for (let i = 1; i < n; i += 4) ops.push(del(key(i)));
    for (let i = n; i < n + 50; i++) ops.push(put(key(i), `late${i}`));
    await e.write(ops);
    await e.write([drop(G)]);
    let ran = 0;
    while (await e.compact(true)) if (++ran > 50) break;
    assert.ok(ran > 0, 'compaction ran');
    assert.deepEqual(await readAll(s, 300), want);
    s.release();
    assert.equal(e.snapshot(G, dec).length, 0, 'the group is gone now');
  } finally {
    await e.close();
    rmDir(dir);
  }
});

test('a snapshot copied in steps holds what one copied at once holds, from the first member or after a given key', async () => {
  const dir = tmpDir('snap-steps');
  const e = await open(dir, { durability: 'never' });
  try {
    // More members than two chunks of the key directory hold, so steps start and end inside chunks and take whole ones.
    const n = 10_000;
    for (let i = 0; i < n; i += 1000) await e.write(Array.from({ length: 1000 }, (_, k) => put(key(i + k), `v${i + k}`)));
    const once = e.snapshot(G, dec);
    const whole = await readAll(once, 777);
    once.release();
    const cases: Array<[string, number]> = [
      ['', 1000],
      ['', 4096],
      ['', n],
      [key(4999), 3000],
      [key(n - 1), 10],
    ];
    for (const [after, step] of cases) {
      const s = e.openSnapshot(G, dec, after);
      let steps = 0;
      while (s.copyMore(step) === step) steps++;
      const from = after === '' ? 0 : Number(after.slice(G.length)) + 1;
      assert.equal(s.length, n - from, `after '${after.slice(G.length)}' in steps of ${step} (${steps} full steps)`);
      assert.deepEqual(await readAll(s, 777), whole.slice(from));
      s.release();
      assert.throws(() => s.copyMore(1), /released/);
    }
  } finally {
    await e.close();
    rmDir(dir);
  }
});

test('a shared snapshot stays readable until every holder has released it, and says so once', async () => {
  const dir = tmpDir('snap-share');
  const e = await open(dir, { durability: 'never' });
  try {
    await e.write(Array.from({ length: 10 }, (_, i) => put(key(i), `v${i}`)));
    const s = e.snapshot(G, dec);
    let freed = 0;
    s.onFree(() => freed++);
    assert.ok(s.retain());
    assert.ok(s.retain());
    s.release();
    s.release();
    assert.equal(freed, 0);
    assert.equal((await readAll(s, 4)).length, 10, 'one holder left: still readable');
    s.release();
    assert.equal(freed, 1);
    assert.throws(() => s.read(0, 1), /released/);
    assert.equal(s.retain(), false, 'a released snapshot takes no new holder');
    s.release();
    assert.equal(freed, 1);
  } finally {
    await e.close();
    rmDir(dir);
  }
});

test('members expired at the instant of the snapshot are left out; reads of a range coalesce and stay in order', async () => {
  const dir = tmpDir('snap-exp');
  let now = 1_000_000;
  const e = await open(dir, { cacheBytes: 1024, now: () => now, durability: 'never' });
  try {
    await e.write(Array.from({ length: 10 }, (_, i) => put(key(i), `v${i}`, i % 3 === 0 ? now + 10 : 0)));
    now += 5;
    const s = e.snapshot(G, dec, now);
    now += 100; // the expiring ones are now past their time, but not at the snapshot's instant
    const all = await readAll(s, 3);
    assert.deepEqual(
      all,
      Array.from({ length: 10 }, (_, i) => `${String(i).padStart(6, '0')}=v${i}`),
    );
    s.release();
    const later = e.snapshot(G, dec, now);
    assert.deepEqual(
      await readAll(later, 4),
      Array.from({ length: 10 }, (_, i) => i)
        .filter((i) => i % 3 !== 0)
        .map((i) => `${String(i).padStart(6, '0')}=v${i}`),
    );
    later.release();
  } finally {
    await e.close();
    rmDir(dir);
  }
});

test('a read with cache false answers the same values and leaves the value cache as it was', async () => {
  const dir = tmpDir('snap-nocache');
  try {
    let e = await open(dir, { durability: 'never' });
    await e.write(Array.from({ length: 500 }, (_, i) => put(key(i), `v${i}`)));
    await e.close();
    // Reopened, nothing is cached: every value comes from the log.
    e = await open(dir, { durability: 'never' });
    try {
      const want = Array.from({ length: 500 }, (_, i) => `${String(i).padStart(6, '0')}=v${i}`);
      const before = e.stats().cacheBytes;
      const s = e.snapshot(G, dec);
      const out: string[] = [];
      for (let i = 0; i < s.length; i += 200) out.push(...(await s.read(i, Math.min(s.length, i + 200), false)));
      s.release();
      assert.deepEqual(out, want);
      assert.equal(e.stats().cacheBytes, before, 'nothing was cached');
      // The default read caches what it read, so the check above can fail.
      const t = e.snapshot(G, dec);
      assert.deepEqual(await readAll(t, 200), want);
      t.release();
      assert.ok(e.stats().cacheBytes > before, 'a default read caches');
    } finally {
      await e.close();
    }
  } finally {
    rmDir(dir);
  }
});
