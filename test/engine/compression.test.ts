/**
 * Value compression in the engine: values stored with a codec byte read back
 * the same from cache, disk, scans, snapshots and the change feed's replay;
 * a directory reads the same with compression on or off, across reopen and
 * compaction; repetitive JSON takes less than half the space.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DataKey, type Engine, Keyring, nodeFileOps, Op } from '../../src/engine/index.js';
import type { FileOps } from '../../src/engine/fileops.js';
import { snapshotFiles } from '../../src/engine/backup-files.js';
import { SegmentKind } from '../../src/engine/format.js';
import { Segment } from '../../src/engine/segment.js';
import { jsonDocument } from '../../bench/compression.js';
import { assertState, logFiles, open, put, replay, rng, scratchDirs, str, totalLogBytes, writeHistory } from './helpers.js';

const dir = scratchDirs();
const SEG = 64 * 1024;

test('compressed values read back the same from memory, disk, scans and replay, with compression on or off', async () => {
  const d = dir('codec');
  // Small segments, so the history spans several and all but the newest are compressed.
  const e = await open(d, { segmentBytes: 8 * 1024, compression: true });
  const b1 = await writeHistory(e, 80, 31);
  // Every segment but the newest is rewritten with codec bytes before the reads below.
  await e.recodesDone();
  assert.ok(logFiles(d).length >= 2, `${logFiles(d).length} segments`);
  assert.equal(segmentFlags(d, logFiles(d)[0]) & 2, 2, 'the first segment was not compressed');
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
    // Values are compressed when their segment stops being appended to: with
    // 256 KiB segments all but the newest (at most 256 KiB of ~4 MB) are.
    const e = await open(d, { compression, segmentBytes: 256 * 1024 });
    const r = rng(5);
    const docs = Array.from({ length: 2000 }, (_, i) => jsonDocument(r, i));
    for (let i = 0; i < docs.length; i += 20) await e.write(docs.slice(i, i + 20).map((doc, j) => put(`R/doc-${i + j}`, doc)));
    await e.recodesDone();
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
  // Small segments: all but the newest are rewritten compressed, so the reads below meet codec bytes.
  const e = await open(d, { compression: true, segmentBytes: 16 * 1024 });
  const row = (i: number): string => JSON.stringify({ i, name: `row ${i}`, text: 'lorem ipsum '.repeat(40) });
  for (let i = 0; i < 300; i += 10) await e.write(Array.from({ length: 10 }, (_, j) => put(`t\u0000tbl\u0000${String(i + j).padStart(6, '0')}`, row(i + j))));
  await e.recodesDone();
  const files = logFiles(d);
  assert.ok(files.length >= 4, `${files.length} segments`);
  for (const f of files.slice(0, -1)) assert.equal(segmentFlags(d, f) & 2, 2, `${f} has no codec bytes`);
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

/** The header flags of a segment file: 0 for a version 1 header. */
function segmentFlags(d: string, name: string): number {
  const b = fs.readFileSync(path.join(d, name));
  return b[4] === 1 ? 0 : b[6];
}

/** Every batch the change feed replays from the log, as text. */
async function feed(e: Engine): Promise<string[]> {
  const got: string[] = [];
  const whole = await e.replay(0, e.upcomingSeq, (seq, entries, buf) => {
    for (const en of entries) got.push(`${seq} ${en.op} ${JSON.stringify(en.key)} ${buf.toString('utf8', en.valueOffset, en.valueOffset + en.valueLength)}`);
  });
  assert.equal(whole, true, 'the feed could not replay the whole log');
  return got;
}

for (const sealed of [false, true]) {
  test(`${sealed ? 'sealed: ' : ''}a log segment is written plain and compressed once it stops being appended to; state and change feed are unchanged`, async () => {
    const keyring = sealed ? new Keyring(new DataKey(Buffer.alloc(32, 0x3d))) : undefined;
    // The same history without compression: what the feed must replay.
    const dp = dir('recode-plain');
    const ep = await open(dp, { segmentBytes: 8 * 1024, keyring });
    await writeHistory(ep, 300, 41);
    const want = await feed(ep);
    await ep.close();

    const d = dir('recode');
    const e = await open(d, { segmentBytes: 8 * 1024, keyring, compression: true, cacheBytes: 0 });
    const b = await writeHistory(e, 300, 41);
    await e.recodesDone();
    const files = logFiles(d);
    assert.ok(files.length >= 4, `${files.length} segments`);
    // Every segment but the one appended to has codec bytes; that one has none.
    for (const f of files.slice(0, -1)) assert.equal(segmentFlags(d, f) & 2, 2, `${f} has no codec bytes`);
    assert.equal(segmentFlags(d, files[files.length - 1]) & 2, 0, 'the active segment has codec bytes');
    assert.ok(totalLogBytes(d) < 0.9 * totalLogBytes(dp), `${totalLogBytes(d)} bytes compressed, ${totalLogBytes(dp)} plain`);
    await assertState(e, replay(b));
    assert.deepEqual(await feed(e), want);
    await e.close();
    // Reopened from the rewritten segments' hints: the same again.
    const e2 = await open(d, { segmentBytes: 8 * 1024, keyring, cacheBytes: 0 });
    await assertState(e2, replay(b));
    assert.deepEqual(await feed(e2), want);
    await e2.close();
  });
}

test('segments rotated out within the hint delay before a close are compressed at the next open', async () => {
  const d = dir('recode-at-open');
  const value = (i: number): string => `${i}:${'lorem ipsum '.repeat(40)}`;
  // The rewrites wait out a minute's delay: the close drops them all.
  const e = await open(d, { segmentBytes: 4096, compression: true, hintDelayMs: 60_000 });
  let n = 0;
  for (; logFiles(d).length < 5; n++) await e.write([put(`k${n}`, value(n))]);
  await e.close();
  for (const f of logFiles(d)) assert.equal(segmentFlags(d, f) & 2, 0, `${f} was compressed before the close`);
  const e2 = await open(d, { segmentBytes: 4096, compression: true, hintDelayMs: 60_000, cacheBytes: 0 });
  await e2.recodesDone();
  const files = logFiles(d);
  // Every segment but the one appended to now has codec bytes.
  for (const f of files.slice(0, -1)) assert.equal(segmentFlags(d, f) & 2, 2, `${f} has no codec bytes`);
  for (let i = 0; i < n; i++) assert.equal(await e2.read(`k${i}`, str), value(i));
  await e2.close();
});

test('a version put back by a failed write while its segment is being compressed is read from the rewritten file', async () => {
  const d = dir('recode-conflict');
  let gateRecode: () => void = () => {};
  const recodeMayStart = new Promise<void>((r) => (gateRecode = r));
  let failNext = false;
  let releaseWrite: () => void = () => {};
  const writeMayFail = new Promise<void>((r) => (releaseWrite = r));
  let tmpFd = -1;
  const fileOps: FileOps = {
    ...nodeFileOps,
    async open(p, flags, mode) {
      if (p.endsWith('.log.tmp')) {
        await recodeMayStart;
        tmpFd = await nodeFileOps.open(p, flags, mode);
        return tmpFd;
      }
      return nodeFileOps.open(p, flags, mode);
    },
    async writeAll(fd, buf, off, len, pos) {
      if (failNext && fd !== tmpFd) {
        failNext = false;
        await writeMayFail;
        throw Object.assign(new Error('injected write failure'), { code: 'EIO' });
      }
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
    async rename(from, to) {
      await nodeFileOps.rename(from, to);
      // The rewritten file is in place and swapped in: now let the write fail.
      if (from.endsWith('.log.tmp')) setImmediate(releaseWrite);
    },
  };
  const e = await open(d, { segmentBytes: 4096, compression: true, cacheBytes: 0, fileOps });
  const v1 = `v1:${'x'.repeat(600)}`;
  await e.write([put('k', v1)]);
  // Fill the segment until it rotates: its compression waits at recodeMayStart.
  for (let i = 0; logFiles(d).length < 2; i++) await e.write([put(`f${i}`, 'y'.repeat(500))]);
  failNext = true;
  const failed = e.write([put('k', 'v2')]).then(
    () => assert.fail('the write should fail'),
    (err: Error) => assert.match(err.message, /EIO/),
  );
  // The write is in flight (k's version in the segment is not current) while the segment is copied.
  await new Promise((r) => setImmediate(r));
  gateRecode();
  await failed;
  await e.recodesDone();
  assert.equal(segmentFlags(d, logFiles(d)[0]) & 2, 2, 'the segment was not compressed');
  assert.equal(await e.read('k', str), v1);
  await e.close();
  const e2 = await open(d, { cacheBytes: 0 });
  assert.equal(await e2.read('k', str), v1);
  await e2.close();
});

test('an online backup that opens a segment its compressed rewrite was just renamed over copies the new file whole', () => {
  const d = dir('backup-rename');
  fs.mkdirSync(d, { recursive: true });
  const seg = new Segment(d, 1024, SegmentKind.Log);
  fs.writeFileSync(seg.path, Buffer.alloc(5000, 1));
  seg.fd = fs.openSync(seg.path, 'r');
  seg.size = 4000; // acknowledged so far: a backup cuts the file there
  const cut = snapshotFiles([seg]);
  fs.closeSync(cut[0].fd);
  assert.equal(cut[0].size, 4000);
  // The rewrite is renamed into place before the segment list shows it (recode.ts).
  fs.writeFileSync(`${seg.path}.tmp`, Buffer.alloc(1200, 2));
  fs.renameSync(`${seg.path}.tmp`, seg.path);
  const files = snapshotFiles([seg]);
  try {
    assert.equal(files[0].size, 1200);
  } finally {
    for (const f of files) fs.closeSync(f.fd);
    fs.closeSync(seg.fd);
  }
});

test('a compressed rewrite whose rename fails closes its descriptor and removes its .tmp; the directory reopens whole', async () => {
  const d = dir('recode-rename-fails');
  const tmpFds = new Set<number>();
  const closed = new Set<number>();
  let renames = 0;
  const fileOps: FileOps = {
    ...nodeFileOps,
    async open(p, flags, mode) {
      const fd = await nodeFileOps.open(p, flags, mode);
      if (p.endsWith('.log.tmp')) tmpFds.add(fd);
      return fd;
    },
    async close(fd) {
      if (tmpFds.has(fd)) closed.add(fd);
      return nodeFileOps.close(fd);
    },
    async rename(from, to) {
      if (from.endsWith('.log.tmp')) {
        renames++;
        throw Object.assign(new Error('EIO: injected rename failure'), { code: 'EIO' });
      }
      return nodeFileOps.rename(from, to);
    },
  };
  const value = (i: number): string => `${i}:${'lorem ipsum '.repeat(40)}`;
  const e = await open(d, { segmentBytes: 4096, compression: true, hintDelayMs: 0, fileOps });
  let n = 0;
  for (; logFiles(d).length < 3; n++) await e.write([put(`k${n}`, value(n))]);
  await e.recodesDone();
  assert.ok(renames > 0, 'no rewrite reached its rename');
  assert.deepEqual(
    [...tmpFds].filter((fd) => !closed.has(fd)),
    [],
    'a rewrite left its descriptor open',
  );
  assert.deepEqual(
    fs.readdirSync(d).filter((f) => f.endsWith('.tmp')),
    [],
    'a rewrite left its .tmp file',
  );
  // The old files stay in use, uncompressed.
  for (const f of logFiles(d)) assert.equal(segmentFlags(d, f) & 2, 0, `${f} has codec bytes`);
  for (let i = 0; i < n; i++) assert.equal(await e.read(`k${i}`, str), value(i));
  await e.close();
  const e2 = await open(d, { cacheBytes: 0 });
  for (let i = 0; i < n; i++) assert.equal(await e2.read(`k${i}`, str), value(i));
  await e2.close();
});
