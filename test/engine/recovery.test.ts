import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CorruptionError, Engine, Op } from '../../src/engine/index.js';
import { decodeBatch } from '../../src/engine/format.js';
import {
  assertState,
  type Batch,
  countingFileOps,
  del,
  flipByte,
  hintFiles,
  LogSink,
  logFiles,
  newestLog,
  open,
  put,
  replay,
  rmDir,
  seqsIn,
  str,
  waitForHints,
  writeHistory,
  scratchDirs,
} from './helpers.js';

const dir = scratchDirs();

const SEG = 4096;

/** A data directory with many small segments and their hints; returns its history. */
async function fixture(tag: string, n = 80, seed = 1): Promise<{ d: string; batches: Batch[] }> {
  const d = dir(tag);
  const e = await open(d, { segmentBytes: SEG });
  const batches = await writeHistory(e, n, seed);
  await e.close();
  await waitForHints(d);
  return { d, batches };
}

test('batches survive close and reopen, across many segments', async () => {
  const { d, batches } = await fixture('reopen', 120, 7);
  assert.ok(logFiles(d).length >= 5, `only ${logFiles(d).length} segments`);
  const e = await open(d, { segmentBytes: SEG });
  await assertState(e, replay(batches));
  // ...and again after writing more on top.
  const more = await writeHistory(e, 40, 8, 'w');
  await e.close();
  const e2 = await open(d, { segmentBytes: SEG });
  await assertState(e2, replay([...batches, ...more]));
  await e2.close();
});

test('a torn tail at every byte offset of the last batch is cut off', async () => {
  const { d, batches } = await fixture('torn', 60, 3);
  const file = newestLog(d);
  const original = fs.readFileSync(file);
  const stored = seqsIn(file);
  const last = stored[stored.length - 1];
  assert.equal(last.seq, batches[batches.length - 1].seq, 'the newest segment ends with the last batch');
  const without = replay(batches, new Set([last.seq]));
  const withAll = replay(batches);
  const prevSeq = batches[batches.length - 2].seq;
  let checked = 0;
  for (let cut = last.pos; cut < last.pos + last.len; cut++) {
    fs.writeFileSync(file, original.subarray(0, cut));
    const log = new LogSink();
    const e = await open(d, { segmentBytes: SEG, log: log.fn });
    await assertState(e, without, undefined, `cut at ${cut}:`);
    assert.ok(e.upcomingSeq > prevSeq);
    await e.close();
    assert.equal(fs.statSync(file).size, last.pos, `file not truncated (cut at ${cut})`);
    if (cut > last.pos) {
      assert.ok(
        log.has(new RegExp(`torn tail at offset ${last.pos}, dropped ${cut - last.pos} byte`)),
        `no torn-tail log line for cut at ${cut}: ${log.lines.join(' | ')}`,
      );
    } else {
      assert.ok(!log.has(/torn tail/), 'a clean end was reported as torn');
    }
    checked++;
  }
  assert.equal(checked, last.len);
  // The untouched file still has everything.
  fs.writeFileSync(file, original);
  const e = await open(d, { segmentBytes: SEG });
  await assertState(e, withAll);
  await e.close();
});

test('garbage after the last batch (a torn write of zeros or noise) is cut off', async () => {
  const { d, batches } = await fixture('garbage', 30, 4);
  const file = newestLog(d);
  const size = fs.statSync(file).size;
  for (const tail of [Buffer.alloc(4096), Buffer.from('\u0000\u0001garbage'.repeat(50)), Buffer.from([0xff])]) {
    fs.appendFileSync(file, tail);
    const log = new LogSink();
    const e = await open(d, { segmentBytes: SEG, log: log.fn });
    await assertState(e, replay(batches));
    await e.close();
    assert.equal(fs.statSync(file).size, size);
    assert.ok(log.has(new RegExp(`dropped ${tail.length} byte`)), log.lines.join(' | '));
  }
});

async function expectCorruption(d: string, file: string, offset: number): Promise<void> {
  await assert.rejects(open(d, { segmentBytes: SEG }), (err: unknown) => {
    assert.ok(err instanceof CorruptionError, `not a CorruptionError: ${String(err)}`);
    assert.equal(err.file, path.basename(file));
    assert.equal(err.offset, offset);
    assert.match(err.message, new RegExp(`${path.basename(file)} at offset ${offset}`));
    assert.match(err.message, /repair/);
    return true;
  });
}

/** Damage inside one batch, at several kinds of position within it. */
const damageSpots = (len: number): Array<[string, number]> => [
  ['crc', 1],
  ['length', 5],
  ['seq', 9],
  ['count', 16],
  ['entry op', 20],
  ['middle', Math.floor(len / 2)],
  ['last byte', len - 1],
];

for (const where of ['older', 'newest'] as const) {
  test(`damage in the middle of the ${where} segment refuses to open; repair keeps every intact batch`, async () => {
    for (const [what, at] of damageSpots(40)) {
      const { d, batches } = await fixture(`corrupt-${where}`, 70, 11);
      const logs = logFiles(d);
      const file = path.join(d, where === 'older' ? logs[1] : logs[logs.length - 1]);
      // Hints let recovery skip reading an older segment; take them away so
      // the damage is in the path of the scan (see docs/engine.md on hints).
      for (const h of hintFiles(d)) fs.unlinkSync(path.join(d, h));
      const stored = seqsIn(file);
      assert.ok(stored.length >= 3, `${path.basename(file)} has only ${stored.length} batches`);
      const victim = stored[Math.floor(stored.length / 2)];
      const spot = Math.min(at, victim.len - 1);
      flipByte(file, victim.pos + spot, 0x24);
      await expectCorruption(d, file, victim.pos);
      // Still refuses the second time (nothing was changed by the failed open).
      await expectCorruption(d, file, victim.pos);

      const log = new LogSink();
      const e = await open(d, { segmentBytes: SEG, repair: true, log: log.fn });
      await assertState(e, replay(batches, new Set([victim.seq])), undefined, `${where}/${what}:`);
      assert.ok(log.has(new RegExp(`repair dropped ${victim.len} damaged byte\\(s\\) at offset ${victim.pos}`)), log.lines.join(' | '));
      await e.close();
      // The repaired directory opens normally and keeps its state.
      const e2 = await open(d, { segmentBytes: SEG });
      await assertState(e2, replay(batches, new Set([victim.seq])));
      await e2.close();
      rmDir(d);
    }
  });
}

test('damage inside a segment that has a hint is detected when the value is read', async () => {
  const d = dir('hinted-damage');
  const w = await open(d, { segmentBytes: SEG });
  const model = new Map<string, Buffer>();
  for (let i = 0; i < 100; i++) {
    model.set(`u${i}`, Buffer.from(`value ${i} `.padEnd(200, '*')));
    await w.write([put(`u${i}`, model.get(`u${i}`) as Buffer)]);
  }
  await w.close();
  const file = path.join(d, logFiles(d)[1]);
  assert.ok(fs.existsSync(file.replace(/\.log$/, '.hint')));
  // Damage a value that is still current, so a read has to touch it.
  const bytes = fs.readFileSync(file);
  let spot = -1;
  for (const { pos, len } of seqsIn(file)) {
    for (const en of decodeBatch(bytes, pos, len).entries) {
      const v = bytes.subarray(en.valueOffset, en.valueOffset + en.valueLength);
      if (en.op === Op.Put && en.valueLength > 10 && model.get(en.key)?.equals(v)) spot = en.valueOffset + (en.valueLength >> 1);
    }
  }
  assert.ok(spot > 0, 'no current value in the segment');
  flipByte(file, spot, 0x01);
  // The hint lets open skip the segment, so open succeeds...
  const log = new LogSink();
  const e = await open(d, { segmentBytes: SEG, log: log.fn });
  try {
    let failures = 0;
    for (const [k, v] of model) {
      try {
        assert.equal(await e.read(k, str), v.toString(), `${k} served wrong bytes`);
      } catch (err) {
        // ...but the damaged value is refused with the file and the offset.
        assert.ok(err instanceof CorruptionError, String(err));
        assert.equal(err.file, path.basename(file));
        assert.ok(err.offset <= spot && spot < err.offset + v.length);
        failures++;
      }
    }
    assert.equal(failures, 1, 'the damaged value was served without an error');
    assert.ok(log.has(/value checksum mismatch/));
  } finally {
    await e.close();
  }
});

test('a damaged segment header refuses to open', async () => {
  const { d } = await fixture('header', 40, 5);
  const file = path.join(d, logFiles(d)[0]);
  flipByte(file, 0, 0x01);
  await expectCorruption(d, file, 0);
});

test('a refused open leaks no file descriptors', async () => {
  const { d } = await fixture('fds', 60, 6);
  for (const h of hintFiles(d)) fs.unlinkSync(path.join(d, h));
  const file = path.join(d, logFiles(d)[2]);
  const [, victim] = seqsIn(file);
  flipByte(file, victim.pos + 25);
  const fds = (): number => fs.readdirSync('/proc/self/fd').length;
  await expectCorruption(d, file, victim.pos);
  const before = fds();
  for (let i = 0; i < 5; i++) await expectCorruption(d, file, victim.pos);
  assert.equal(fds(), before, 'descriptors leaked by refused opens');
});

test('sequence numbers keep increasing across reopen, rotation and compaction', async () => {
  const d = dir('seq');
  let e = await open(d, { segmentBytes: SEG });
  let last = 0;
  for (let round = 0; round < 4; round++) {
    const b = await writeHistory(e, 30, 100 + round);
    for (const x of b) {
      assert.ok(x.seq > last, `seq ${x.seq} after ${last}`);
      last = x.seq;
    }
    if (round === 2) await e.compact(true);
    await e.close();
    e = await open(d, { segmentBytes: SEG });
    assert.equal(e.upcomingSeq, last + 1, `round ${round}`);
  }
  // A fresh segment that holds no batch yet still carries the sequence forward.
  await e.close();
  e = await open(d, { segmentBytes: SEG });
  await e.write([put('x', 'y')]);
  await e.compact(true);
  await e.close();
  e = await open(d, { segmentBytes: SEG });
  assert.ok(e.upcomingSeq > last + 1);
  await e.close();
});

test('hint files are used, and a missing or damaged hint only costs a scan', async () => {
  const { d, batches } = await fixture('hints', 100, 21);
  const model = replay(batches);
  const logs = logFiles(d);
  const hints = hintFiles(d);
  assert.equal(hints.length, logs.length - 1, 'every immutable segment has a hint');

  // With hints, recovery reads only the header of each immutable segment.
  let c = countingFileOps();
  let e = await open(d, { segmentBytes: SEG, fileOps: c.ops });
  for (const l of logs.slice(0, -1)) {
    assert.equal(c.readBytes.get(path.join(d, l)), 16, `${l} was scanned despite its hint`);
    assert.ok((c.readBytes.get(path.join(d, `${l.slice(0, 16)}.hint`)) ?? 0) > 8);
  }
  await assertState(e, model);
  await e.close();

  // A deleted hint: the segment is scanned and the hint written again.
  const victim = logs[2];
  const victimHint = path.join(d, `${victim.slice(0, 16)}.hint`);
  fs.unlinkSync(victimHint);
  c = countingFileOps();
  e = await open(d, { segmentBytes: SEG, fileOps: c.ops });
  assert.equal(c.readBytes.get(path.join(d, victim)), fs.statSync(path.join(d, victim)).size);
  await assertState(e, model);
  await e.close();
  assert.ok(fs.existsSync(victimHint), 'the missing hint was not rebuilt');

  // A damaged hint is ignored (checksum), and so is a truncated one.
  const good = fs.readFileSync(victimHint);
  for (const damage of ['flip', 'truncate'] as const) {
    if (damage === 'flip') flipByte(victimHint, Math.floor(good.length / 2));
    else fs.writeFileSync(victimHint, good.subarray(0, good.length - 7));
    const log = new LogSink();
    e = await open(d, { segmentBytes: SEG, log: log.fn });
    assert.ok(log.has(/hint ignored/), log.lines.join(' | '));
    await assertState(e, model);
    await e.close();
    fs.writeFileSync(victimHint, good);
  }

  // A hint that belongs to another segment (different size) is ignored too.
  const other = path.join(d, `${logs[3].slice(0, 16)}.hint`);
  if (fs.statSync(path.join(d, logs[3])).size !== fs.statSync(path.join(d, victim)).size) {
    fs.copyFileSync(other, victimHint);
    const log = new LogSink();
    e = await open(d, { segmentBytes: SEG, log: log.fn });
    assert.ok(log.has(/hint ignored \(size mismatch\)/), log.lines.join(' | '));
    await assertState(e, model);
    await e.close();
  }
});

test('an interrupted compaction or hint (left as *.tmp) is discarded at open', async () => {
  const { d, batches } = await fixture('tmp', 40, 9);
  fs.writeFileSync(path.join(d, '0000000000000001.log.tmp'), 'half a compaction');
  fs.writeFileSync(path.join(d, '0000000000000000.hint.tmp'), 'half a hint');
  const e = await open(d, { segmentBytes: SEG });
  await assertState(e, replay(batches));
  await e.close();
  assert.deepEqual(
    fs.readdirSync(d).filter((n) => n.endsWith('.tmp')),
    [],
  );
});

test('a segment that died before its header was written is removed', async () => {
  const { d, batches } = await fixture('headerless', 30, 12);
  const logs = logFiles(d);
  const next = Number(logs[logs.length - 1].slice(0, 16)) + 1024;
  const empty = path.join(d, `${String(next).padStart(16, '0')}.log`);
  fs.writeFileSync(empty, Buffer.alloc(5));
  const log = new LogSink();
  const e = await open(d, { segmentBytes: SEG, log: log.fn });
  assert.ok(log.has(/without a header/));
  await assertState(e, replay(batches));
  await e.write([put('after', 'it')]);
  await e.close();
  const e2 = await open(d, { segmentBytes: SEG });
  assert.equal(await e2.read('after', str), 'it');
  await e2.close();
});

test('keys survive the log byte for byte (or are refused up front)', async () => {
  const d = dir('keys');
  const e = await open(d);
  const keys = [
    'plain',
    'with space',
    'nul\u0000inside',
    '\u0000',
    'emoji 🔑',
    'ελληνικά',
    'a'.repeat(65535),
    'lone \ud800 high',
    'lone \udc00 low',
    'reversed \udc00\ud800',
    'é'.repeat(32767),
    '€'.repeat(21846),
  ];
  const accepted: string[] = [];
  for (const k of keys) {
    try {
      await e.write([put(k, `v:${k.length}`)]);
      accepted.push(k);
    } catch (err) {
      assert.ok(err instanceof RangeError, `${JSON.stringify(k.slice(0, 20))}: ${String(err)}`);
    }
  }
  assert.ok(accepted.includes('nul\u0000inside') && accepted.includes('a'.repeat(65535)));
  assert.ok(!accepted.includes('€'.repeat(21846)), 'a key over 65535 UTF-8 bytes was accepted');
  await e.close();
  const e2 = await open(d);
  for (const k of accepted) assert.equal(await e2.read(k, str), `v:${k.length}`, `key ${JSON.stringify(k.slice(0, 20))} lost`);
  assert.equal(e2.stats().keys, accepted.length, 'distinct keys collapsed into one on disk');
  await e2.close();
});

test('writes with an unknown op are refused and never reach the log', async () => {
  const d = dir('badop');
  const e = await open(d);
  await e.write([put('a', '1')]);
  await assert.rejects(e.write([{ op: 9 as Op, key: 'a', value: undefined, expiresAt: 0 }]));
  assert.equal(await e.read('a', str), '1');
  await e.write([put('b', '2'), del('a')]);
  await e.close();
  const e2 = await open(d);
  assert.equal(await e2.read('a', str), undefined);
  assert.equal(await e2.read('b', str), '2');
  await e2.close();
});

test('decodeBatch of the stored log matches what was written', async () => {
  // A direct look at the bytes: the batch the engine wrote for a write() call.
  const d = dir('bytes');
  const e: Engine = await open(d);
  const seq = e.upcomingSeq;
  await e.write([put('k1', 'value-1', 1_900_000_000_000), del('k2')]);
  await e.close();
  const file = newestLog(d);
  const [only] = seqsIn(file);
  const b = decodeBatch(fs.readFileSync(file), only.pos, only.len);
  assert.equal(b.seq, seq);
  assert.deepEqual(
    b.entries.map((x) => [x.op, x.key, x.expiresAt]),
    [
      [Op.Put, 'k1', 1_900_000_000_000],
      [Op.Del, 'k2', 0],
    ],
  );
});
