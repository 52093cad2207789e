import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { nodeFileOps, type WriteOp } from '../../src/engine/index.js';
import { Clock, del, LogSink, logFiles, open, put, str, totalLogBytes, scratchDirs } from './helpers.js';

const dir = scratchDirs();

const val = (k: string, v: number, len = 300): string => `${k}=${v};`.padEnd(len, '~');

test('compaction reclaims overwritten, deleted and expired data and keeps every live value', async () => {
  const d = dir('gc');
  const clock = new Clock();
  const log = new LogSink();
  const opts = { segmentBytes: 64 * 1024, now: clock.now, log: log.fn, compactMinDeadBytes: 1, compactMinDeadRatio: 0.5 };
  const e = await open(d, opts);
  assert.equal(e.stats().gcState, 0, 'gc state before any compaction');
  const live = new Map<string, string>();
  // 400 keys overwritten 15 times, 600 keys that expire, 300 keys deleted.
  for (let round = 0; round < 15; round++) {
    const ops: WriteOp[] = [];
    for (let i = 0; i < 400; i++) {
      const k = `hot\u0000${i}`;
      live.set(k, val(k, round));
      ops.push(put(k, live.get(k) as string));
      if (ops.length === 50) await e.write(ops.splice(0));
    }
    if (ops.length > 0) await e.write(ops);
  }
  for (let i = 0; i < 600; i++) await e.write([put(`ttl:${i}`, val(`ttl:${i}`, 0), clock.t + 60_000)]);
  for (let i = 0; i < 300; i++) await e.write([put(`gone:${i}`, val(`gone:${i}`, 0))]);
  for (let i = 0; i < 300; i++) await e.write([del(`gone:${i}`)]);
  clock.advance(61_000); // every ttl:* key is now expired (but not swept)
  const before = totalLogBytes(d);
  const segsBefore = logFiles(d).length;

  // Compact while reading (and writing) through the engine.
  const gc = e.compact();
  let done = false;
  void gc.finally(() => {
    done = true;
  });
  let reads = 0;
  let sawRunning = false;
  const keys = [...live.keys()];
  while (!done) {
    if (e.stats().gcState === 1) sawRunning = true;
    const k = keys[reads % keys.length];
    assert.equal(await e.read(k, str), live.get(k), `read of ${k} during compaction`);
    assert.equal(await e.read(`ttl:${reads % 600}`, str), undefined);
    if (reads % 50 === 0) {
      const w = `hot\u0000${reads % 400}`;
      live.set(w, val(w, 1000 + reads));
      await e.write([put(w, live.get(w) as string)]);
    }
    reads++;
  }
  assert.equal(await gc, true, 'a compaction pass ran');
  assert.ok(sawRunning, 'gc state was never 1 while compacting');
  assert.ok(reads > 0);
  assert.equal(e.stats().gcState, 2);
  const afterBytes = totalLogBytes(d);
  console.log(`compaction: ${segsBefore} segments / ${before} bytes -> ${logFiles(d).length} segments / ${afterBytes} bytes; ${reads} reads during it`);
  assert.ok(!log.has(/kept its input segments/), log.lines.join('\n'));
  assert.ok(before / afterBytes >= 5, `log only shrank from ${before} to ${afterBytes} bytes`);

  const checkAll = async (where: string): Promise<void> => {
    for (const [k, v] of live) assert.equal(await e2.read(k, str), v, `${where}: ${k}`);
    for (let i = 0; i < 600; i++) assert.equal(e2.has(`ttl:${i}`), false);
    for (let i = 0; i < 300; i++) assert.equal(e2.has(`gone:${i}`), false);
    assert.deepEqual(
      await e2.scan('hot\u0000', str),
      [...live.keys()].sort().map((k) => live.get(k)),
    );
  };
  let e2 = e;
  await checkAll('after compaction');
  assert.equal(e.stats().keys, live.size);
  await e.close();
  e2 = await open(d, opts);
  await checkAll('after reopen');
  assert.equal(e2.stats().keys, live.size);
  await e2.close();
});

test('compaction and recovery of a multi-MB log never hold the event loop for long', async () => {
  const d = dir('gap');
  const opts = { segmentBytes: 4 * 1024 * 1024, durability: 'never' as const, compactMinDeadBytes: 1 };
  const e = await open(d, opts);
  const N = 60_000;
  const value = (i: number, r: number): Buffer => Buffer.from(`${i}:${r}:`.padEnd(200, 'x'));
  for (let r = 0; r < 2; r++) {
    for (let i = 0; i < N; i += 100) {
      const ops: WriteOp[] = [];
      for (let j = i; j < i + 100; j++) ops.push(put(`key:${j}`, value(j, r)));
      await e.write(ops);
    }
  }
  const size = totalLogBytes(d);
  assert.ok(size > 20 * 1024 * 1024, `log is only ${size} bytes`);

  /** Runs `work` while a setImmediate loop records the longest gap between its turns. */
  const maxGap = async (work: () => Promise<unknown>): Promise<number> => {
    let max = 0;
    let last = performance.now();
    let stop = false;
    const tick = (): void => {
      const now = performance.now();
      if (now - last > max) max = now - last;
      last = now;
      if (!stop) setImmediate(tick);
    };
    setImmediate(tick);
    try {
      await work();
    } finally {
      stop = true;
    }
    return max;
  };
  let compacted = false;
  const gcGap = await maxGap(async () => {
    compacted = await e.compact(true);
  });
  assert.ok(compacted);
  for (let i = 0; i < N; i += 997) assert.equal(await e.read(`key:${i}`, str), value(i, 1).toString());
  await e.close();
  let e2 = e;
  const openGap = await maxGap(async () => {
    e2 = await open(d, opts);
  });
  assert.equal(e2.stats().keys, N);
  await e2.close();
  for (const h of fs.readdirSync(d).filter((n) => n.endsWith('.hint'))) fs.unlinkSync(path.join(d, h));
  const scanGap = await maxGap(async () => {
    e2 = await open(d, opts);
  });
  assert.equal(e2.stats().keys, N);
  await e2.close();
  console.log(
    `longest event-loop gap: compaction of ${(size / 1048576).toFixed(1)} MiB ${gcGap.toFixed(1)} ms, ` +
      `recovery with hints ${openGap.toFixed(1)} ms, recovery by scanning ${scanGap.toFixed(1)} ms`,
  );
  assert.ok(gcGap < 200, `compaction held the event loop for ${gcGap.toFixed(1)} ms`);
  assert.ok(openGap < 200, `recovery held the event loop for ${openGap.toFixed(1)} ms`);
  assert.ok(scanGap < 200, `recovery held the event loop for ${scanGap.toFixed(1)} ms`);
});

test('forced compaction can run many times without a rotation', async () => {
  // Each pass writes its output under the next free id above its last input,
  // and the output must replay before the active segment. Repeated passes
  // over an immutable prefix without a rotation must neither run out of ids
  // nor leave an output that sorts after the active segment.
  const d = dir('many');
  const fast = { ...nodeFileOps, fdatasync: async () => {}, syncDir: async () => {} };
  const log = new LogSink();
  const e = await open(d, { fileOps: fast, segmentBytes: 200, log: log.fn });
  await e.write([put('a', 'old-a'.padEnd(60, '.')), put('b', 'b'.padEnd(60, '.'))]);
  await e.write([put('c', 'c'.padEnd(150, '.'))]); // rotates: segment 0 becomes immutable
  assert.equal(logFiles(d).length, 2);
  const active = logFiles(d)[1];
  let ran = 0;
  for (let i = 0; i < 1100; i++) {
    if (await e.compact(true)) ran++;
    assert.notEqual(e.stats().gcState, 1, `gc state stuck at running after pass ${i}`);
  }
  assert.ok(ran > 1000, `only ${ran} passes ran`);
  for (const f of logFiles(d)) assert.ok(f <= active, `${f} sorts after the active segment ${active}`);
  await e.write([put('a', 'new-a')]);
  assert.equal(await e.read('a', str), 'new-a');
  await e.close();
  const e2 = await open(d);
  assert.equal(await e2.read('a', str), 'new-a', 'a compaction output replayed over a newer write');
  assert.equal(await e2.read('b', str), 'b'.padEnd(60, '.'));
  assert.equal(await e2.read('c', str), 'c'.padEnd(150, '.'));
  await e2.close();
});

test('automatic compaction runs on its timer once enough is dead', async () => {
  const d = dir('auto');
  const e = await open(d, { segmentBytes: 16 * 1024, compactIntervalMs: 20, compactMinDeadBytes: 32 * 1024, compactMinDeadRatio: 0.5 });
  for (let r = 0; r < 30; r++) {
    const ops: WriteOp[] = [];
    for (let i = 0; i < 20; i++) ops.push(put(`k${i}`, val(`k${i}`, r)));
    await e.write(ops);
  }
  const written = 30 * (20 + 20 * (15 + 3 + 300)); // ~190 KB, of which ~6 KB live
  const deadline = Date.now() + 5000;
  while ((e.stats().gcState !== 2 || totalLogBytes(d) > written / 3) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(e.stats().gcState, 2, 'the timer never compacted');
  for (let i = 0; i < 20; i++) assert.equal(await e.read(`k${i}`, str), val(`k${i}`, 29));
  assert.ok(totalLogBytes(d) < written / 3, `${totalLogBytes(d)} bytes of log left of ${written} written`);
  await e.close();
});

test('a rotated segment gets its hint after hintDelayMs, or never if compacted first; close() drops pending ones', async () => {
  const hintOf = (d: string, log: string): string => path.join(d, `${log.slice(0, 16)}.hint`);
  const fill = async (e: Awaited<ReturnType<typeof open>>, round: number): Promise<void> => {
    for (let i = 0; i < 200; i++) await e.write([put(`k${i % 20}`, val(`k${i % 20}`, round))]);
  };

  // Built once the delay has passed. (Durability never: filling must take far less than the delay.)
  const d1 = dir('hint-delay');
  const e1 = await open(d1, { segmentBytes: 16 * 1024, hintDelayMs: 1500, durability: 'never' });
  await fill(e1, 0);
  const logs1 = logFiles(d1);
  assert.ok(logs1.length >= 3, `rotated: ${logs1.join(' ')}`);
  const first = logs1[0];
  assert.equal(fs.existsSync(hintOf(d1, first)), false, 'no hint right after rotation');
  await new Promise((r) => setTimeout(r, 2000));
  await e1.close(); // waits for builds in flight
  assert.equal(fs.existsSync(hintOf(d1, first)), true, 'hint built after the delay');

  // Compacted before the delay: no hint is ever written for the removed segments,
  // while the segments that survive (rotated after the compaction) still get theirs.
  const d2 = dir('hint-delay-compacted');
  const e2 = await open(d2, { segmentBytes: 16 * 1024, hintDelayMs: 1500, durability: 'never', compactMinDeadBytes: 1, compactMinDeadRatio: 0.1 });
  await fill(e2, 0);
  await fill(e2, 1);
  const before = logFiles(d2);
  assert.equal(await e2.compact(true), true, 'a compaction ran');
  const retired = before.filter((l) => !logFiles(d2).includes(l));
  assert.ok(retired.length > 0, 'compaction retired segments');
  await fill(e2, 2); // rotates again: new immutable segments, their timers run after the compaction
  const survivors = logFiles(d2)
    .filter((l) => !before.includes(l))
    .slice(0, -1); // not the active one
  assert.ok(survivors.length > 0, `rotated after compaction: ${logFiles(d2).join(' ')}`);
  await new Promise((r) => setTimeout(r, 2000));
  await e2.close();
  for (const l of retired) assert.equal(fs.existsSync(hintOf(d2, l)), false, `no hint for compacted ${l}`);
  for (const l of survivors) assert.equal(fs.existsSync(hintOf(d2, l)), true, `hint for surviving ${l}`);
  const orphans = fs.readdirSync(d2).filter((f) => f.endsWith('.hint') && !fs.existsSync(path.join(d2, `${f.slice(0, 16)}.log`)));
  assert.deepEqual(orphans, [], 'no hint without its segment');

  // close() before the delay: nothing more is written; the next open scans and builds the hint.
  const d3 = dir('hint-delay-close');
  const e3 = await open(d3, { segmentBytes: 16 * 1024, hintDelayMs: 60_000, durability: 'never' });
  await fill(e3, 0);
  await e3.close();
  const logs3 = logFiles(d3);
  assert.equal(fs.readdirSync(d3).filter((f) => f.endsWith('.hint')).length, 0, 'no hint written by close()');
  const e4 = await open(d3, { segmentBytes: 16 * 1024 });
  for (let i = 0; i < 20; i++) assert.equal(await e4.read(`k${i}`, (b) => b.toString()), val(`k${i}`, 0), `k${i} after reopen`);
  await e4.close(); // waits for the hints open started
  assert.equal(fs.existsSync(hintOf(d3, logs3[0])), true, 'open built the missing hint');
});
