/**
 * Value compression in the engine: values stored with a codec byte read back
 * the same from cache, disk, scans, snapshots and the change feed's replay;
 * a directory reads the same with compression on or off, across reopen and
 * compaction; repetitive JSON takes less than half the space.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Op } from '../../src/engine/index.js';
import { jsonDocument } from '../../bench/compression.js';
import { assertState, logFiles, open, put, replay, rng, scratchDirs, str, totalLogBytes, writeHistory } from './helpers.js';

const dir = scratchDirs();
const SEG = 64 * 1024;

test('compressed values read back the same from memory, disk, scans and replay, with compression on or off', async () => {
  const d = dir('codec');
  const e = await open(d, { segmentBytes: SEG, compression: true });
  const b1 = await writeHistory(e, 80, 31);
  await e.close();
  // Off: the same directory reads the same; new writes are stored plain, in a new segment.
  const e2 = await open(d, { segmentBytes: SEG, cacheBytes: 0 });
  await assertState(e2, replay(b1));
  const b2 = await writeHistory(e2, 40, 32, 'off');
  await e2.close();
  // On again, then compaction rewrites everything into segments with codec bytes.
  const e3 = await open(d, { segmentBytes: SEG, compression: true, cacheBytes: 0 });
  await assertState(e3, replay([...b1, ...b2]));
  const b3 = await writeHistory(e3, 40, 33, 'on');
  // The change feed's replay sees values, not their stored form.
  const seen = new Map<string, string>();
  assert.equal(
    await e3.replay(0, e3.upcomingSeq, (_seq, entries, buf) => {
      for (const en of entries) if (en.op === Op.Put) seen.set(en.key, buf.toString('utf8', en.valueOffset, en.valueOffset + en.valueLength));
    }),
    true,
  );
  assert.ok(seen.size > 10);
  for (const [k, v] of seen)
    assert.ok(/^(v|off|on)\d+\.\d+:/.test(v) && v.endsWith(`:${k}:${'#'.repeat(v.length - v.lastIndexOf(':') - 1)}`), `replayed ${JSON.stringify(k)}: ${v}`);
  await e3.compact(true);
  await assertState(e3, replay([...b1, ...b2, ...b3]));
  await e3.close();
  const e4 = await open(d, { segmentBytes: SEG, cacheBytes: 0 });
  await assertState(e4, replay([...b1, ...b2, ...b3]));
  await e4.close();
});

test('repetitive JSON documents take less than half the disk space compressed', async () => {
  const sizes: number[] = [];
  for (const compression of [false, true]) {
    const d = dir('ratio');
    const e = await open(d, { compression });
    const r = rng(5);
    const docs = Array.from({ length: 2000 }, (_, i) => jsonDocument(r, i));
    for (let i = 0; i < docs.length; i += 20) await e.write(docs.slice(i, i + 20).map((doc, j) => put(`R/doc-${i + j}`, doc)));
    await e.close();
    const e2 = await open(d, { cacheBytes: 0 });
    for (let i = 0; i < docs.length; i += 97) assert.equal(await e2.read(`R/doc-${i}`, str), docs[i].toString());
    const group = await e2.scan('nogroup\u0000', str);
    assert.deepEqual(group, []);
    await e2.close();
    sizes.push(totalLogBytes(d));
    assert.ok(logFiles(d).length >= 1);
  }
  console.log(`# 2000 JSON documents: ${sizes[0]} bytes plain, ${sizes[1]} compressed (${(sizes[0] / sizes[1]).toFixed(2)}x)`);
  assert.ok(sizes[0] / sizes[1] >= 2, `only ${(sizes[0] / sizes[1]).toFixed(2)}x`);
});

test('a group of compressed rows scans and snapshots the same from disk', async () => {
  const d = dir('rows');
  const e = await open(d, { compression: true });
  const row = (i: number): string => JSON.stringify({ i, name: `row ${i}`, text: 'lorem ipsum '.repeat(40) });
  for (let i = 0; i < 300; i += 10) await e.write(Array.from({ length: 10 }, (_, j) => put(`t\u0000tbl\u0000${String(i + j).padStart(6, '0')}`, row(i + j))));
  await e.close();
  const e2 = await open(d, { cacheBytes: 0 });
  const want = Array.from({ length: 300 }, (_, i) => row(i));
  assert.deepEqual(await e2.scan('t\u0000tbl\u0000', str), want);
  await e2.close();
  const e3 = await open(d, { cacheBytes: 0 });
  const snap = e3.snapshot('t\u0000tbl\u0000', str);
  const got: string[] = [];
  for (let at = 0; at < snap.length; at += 64) got.push(...(await snap.read(at, Math.min(at + 64, snap.length))));
  snap.release();
  assert.deepEqual(got, want);
  await e3.close();
});
