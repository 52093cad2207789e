/**
 * Encryption at rest in the engine (on compressed values, see fixture): sealed segments and hints round-trip,
 * nothing is readable in the files, every changed byte is refused like a
 * checksum failure, a missing or wrong key refuses to open and changes
 * nothing, and compaction moves segments to the current key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { CorruptionError, DataKey, Keyring, KeyMismatchError, segmentKeys } from '../../src/engine/index.js';
import { SEALED_SEGMENT_HEADER_SIZE } from '../../src/engine/format.js';
import {
  assertState,
  type Batch,
  flipByte,
  hintFiles,
  LogSink,
  logFiles,
  newestLog,
  open,
  put,
  replay,
  rmDir,
  scratchDirs,
  seqsIn,
  waitForHints,
  writeHistory,
} from './helpers.js';

const dir = scratchDirs();
const SEG = 4096;
const keyA = new DataKey(Buffer.alloc(32, 0xa1));
const keyB = new DataKey(Buffer.alloc(32, 0xb2));
const ringA = new Keyring(keyA);

async function fixture(tag: string, n = 80, seed = 1, keyring = ringA): Promise<{ d: string; batches: Batch[] }> {
  const d = dir(tag);
  // Compressed too: the checks below hold for sealed segments with codec bytes.
  const e = await open(d, { segmentBytes: SEG, keyring, compression: true });
  const batches = await writeHistory(e, n, seed);
  await e.close();
  await waitForHints(d);
  return { d, batches };
}

/** A digest of every file in the directory (names, sizes, bytes). */
function digest(d: string): string {
  const h = createHash('sha256');
  for (const n of fs.readdirSync(d).sort()) {
    if (n === 'LOCK') continue;
    h.update(n).update(fs.readFileSync(path.join(d, n)));
  }
  return h.digest('hex');
}

test('a sealed directory round-trips across segments, hints, reopen and compaction', async () => {
  const { d, batches } = await fixture('roundtrip', 120, 7);
  assert.ok(logFiles(d).length >= 5, `only ${logFiles(d).length} segments`);
  for (const s of await segmentKeys(d)) assert.equal(s.keyId, keyA.idHex, `${s.name} not sealed under key A`);
  assert.ok(hintFiles(d).length >= 4);
  for (const h of hintFiles(d)) assert.equal(fs.readFileSync(path.join(d, h))[4], 4, `${h} is not a sealed hint`);
  const log = new LogSink();
  const e = await open(d, { segmentBytes: SEG, keyring: ringA, log: log.fn });
  assert.ok(!log.has(/hint ignored/), log.lines.join(' | '));
  await assertState(e, replay(batches));
  const more = await writeHistory(e, 40, 8, 'w');
  assert.equal(await e.compact(true), true);
  await assertState(e, replay([...batches, ...more]));
  await e.close();
  const e2 = await open(d, { segmentBytes: SEG, keyring: ringA, cacheBytes: 0 });
  await assertState(e2, replay([...batches, ...more]));
  await e2.close();
});

test('no value, key or marker is readable in the files of a sealed directory', async () => {
  const d = dir('grep');
  const e = await open(d, { segmentBytes: SEG, keyring: ringA });
  const marker = 'SECRET-MARKER-4711';
  for (let i = 0; i < 200; i++) await e.write([put(`customer:${marker}:${i}`, `{"card":"${marker}-${i}","name":"Alice"}`)]);
  await e.compact(true);
  await e.close();
  await waitForHints(d);
  const files = fs.readdirSync(d).filter((n) => n !== 'LOCK');
  assert.ok(files.some((n) => n.endsWith('.hint')) && files.some((n) => n.endsWith('.log')));
  for (const n of files) {
    const b = fs.readFileSync(path.join(d, n));
    for (const needle of [marker, 'customer', 'Alice', '"card"']) assert.equal(b.indexOf(needle), -1, `${needle} found in ${n}`);
  }
});

test('without its key, or with a wrong one, a sealed directory refuses to open and nothing changes', async () => {
  const { d, batches } = await fixture('nokey', 60, 3);
  // A torn tail and a leftover temporary file: what an open would normally clean up.
  fs.appendFileSync(newestLog(d), Buffer.from([1, 2, 3, 4, 5]));
  fs.writeFileSync(path.join(d, `${logFiles(d)[0]}.tmp`), 'x');
  const before = digest(d);
  const names = fs.readdirSync(d).sort();
  await assert.rejects(open(d, { segmentBytes: SEG }), (err: unknown) => {
    assert.ok(err instanceof KeyMismatchError, String(err));
    assert.match(err.message, /is encrypted and no key was given/);
    assert.match(err.message, new RegExp(`key ${keyA.idHex}`));
    return true;
  });
  await assert.rejects(open(d, { segmentBytes: SEG, keyring: new Keyring(keyB) }), (err: unknown) => {
    assert.ok(err instanceof KeyMismatchError, String(err));
    assert.match(err.message, new RegExp(`the key\\(s\\) given \\(${keyB.idHex}\\) are not the one\\(s\\) it needs`));
    assert.match(err.message, new RegExp(keyA.idHex));
    return true;
  });
  assert.equal(digest(d), before, 'a refused open changed the directory');
  assert.deepEqual(
    fs
      .readdirSync(d)
      .filter((n) => n !== 'LOCK')
      .sort(),
    names.filter((n) => n !== 'LOCK'),
  );
  // The right key (here as an old key of a new ring) opens it.
  const e = await open(d, { segmentBytes: SEG, keyring: new Keyring(keyB, [keyA]) });
  await assertState(e, replay(batches));
  await e.close();
});

test('every flipped byte of a sealed batch refuses to open at that batch; repair drops exactly it', async () => {
  const { d, batches } = await fixture('flip', 70, 11);
  const logs = logFiles(d);
  for (const h of hintFiles(d)) fs.unlinkSync(path.join(d, h));
  const file = path.join(d, logs[1]);
  const original = fs.readFileSync(file);
  const stored = seqsIn(file);
  assert.ok(stored.length >= 3);
  const victim = stored[Math.floor(stored.length / 2)];
  for (let at = 0; at < victim.len; at++) {
    flipByte(file, victim.pos + at, 0x01 << (at % 8));
    await assert.rejects(open(d, { segmentBytes: SEG, keyring: ringA }), (err: unknown) => {
      assert.ok(err instanceof CorruptionError, `byte ${at}: ${String(err)}`);
      assert.equal(err.file, logs[1]);
      assert.equal(err.offset, victim.pos, `byte ${at}`);
      return true;
    });
    fs.writeFileSync(file, original);
  }
  // A tampered batch whose CRC was made to match again is caught by its tag, and named so.
  const forged = Buffer.from(original);
  forged[victim.pos + 30] ^= 0x40;
  const { crc32 } = await import('node:zlib');
  forged.writeUInt32LE(crc32(forged.subarray(victim.pos + 4, victim.pos + victim.len)) >>> 0, victim.pos);
  fs.writeFileSync(file, forged);
  await assert.rejects(open(d, { segmentBytes: SEG, keyring: ringA }), (err: unknown) => {
    assert.ok(err instanceof CorruptionError, String(err));
    assert.match(err.message, new RegExp(`authentication failed under key ${keyA.idHex}`));
    return true;
  });
  const log = new LogSink();
  const e = await open(d, { segmentBytes: SEG, keyring: ringA, repair: true, log: log.fn });
  await assertState(e, replay(batches, new Set([victim.seq])));
  assert.ok(
    log.has(new RegExp(`repair dropped ${victim.len} damaged byte\\(s\\) at offset ${victim.pos} \\(authentication failed under key ${keyA.idHex}`)),
    log.lines.join(' | '),
  );
  await e.close();
  const e2 = await open(d, { segmentBytes: SEG, keyring: ringA });
  await assertState(e2, replay(batches, new Set([victim.seq])));
  await e2.close();
});

test('every flipped byte of a sealed segment header refuses to open', async () => {
  const { d } = await fixture('header', 40, 5);
  const file = path.join(d, logFiles(d)[0]);
  const original = fs.readFileSync(file);
  for (let at = 0; at < SEALED_SEGMENT_HEADER_SIZE; at++) {
    flipByte(file, at, 0x10);
    await assert.rejects(
      open(d, { segmentBytes: SEG, keyring: ringA }),
      (err: unknown) => {
        assert.ok(err instanceof CorruptionError || err instanceof KeyMismatchError, `byte ${at}: ${String(err)}`);
        return true;
      },
      `header byte ${at} flipped was accepted`,
    );
    fs.writeFileSync(file, original);
  }
});

test('a torn tail at every byte offset of the last sealed batch is cut off', async () => {
  const { d, batches } = await fixture('torn', 50, 3);
  const file = newestLog(d);
  const original = fs.readFileSync(file);
  const stored = seqsIn(file);
  const last = stored[stored.length - 1];
  assert.equal(last.seq, batches[batches.length - 1].seq);
  const without = replay(batches, new Set([last.seq]));
  for (let cut = last.pos; cut < last.pos + last.len; cut += 3) {
    const copy = dir('torn-copy');
    for (const n of fs.readdirSync(d)) if (n !== 'LOCK') fs.copyFileSync(path.join(d, n), path.join(copy, n));
    fs.writeFileSync(path.join(copy, path.basename(file)), original.subarray(0, cut));
    const e = await open(copy, { segmentBytes: SEG, keyring: ringA });
    await assertState(e, without, undefined, `cut at ${cut}:`);
    await e.close();
    assert.equal(fs.statSync(path.join(copy, path.basename(file))).size, last.pos);
    rmDir(copy);
  }
});

test('a changed byte in a hinted sealed segment is refused when the value is read', async () => {
  const d = dir('hinted');
  const w = await open(d, { segmentBytes: SEG, keyring: ringA });
  for (let i = 0; i < 60; i++) await w.write([put(`k${i}`, `value-${i}-${'x'.repeat(100)}`)]);
  await w.close();
  await waitForHints(d);
  const file = path.join(d, logFiles(d)[0]);
  const [pos, len] = [seqsIn(file)[2].pos, seqsIn(file)[2].len];
  flipByte(file, pos + len - 20, 0x02); // inside the value's ciphertext
  const log = new LogSink();
  const e = await open(d, { segmentBytes: SEG, keyring: ringA, cacheBytes: 0, log: log.fn });
  let refused = 0;
  for (let i = 0; i < 60; i++) {
    try {
      assert.equal(await e.read(`k${i}`, (b) => b.toString()), `value-${i}-${'x'.repeat(100)}`);
    } catch (err) {
      assert.ok(err instanceof CorruptionError, String(err));
      assert.match(err.message, /authentication failed/);
      refused++;
    }
  }
  assert.equal(refused, 1);
  await e.close();
});

test('compaction rewrites plain and old-key segments under the current key; the old key can then go', async () => {
  const plain = dir('rekey');
  const e0 = await open(plain, { segmentBytes: SEG });
  const b0 = await writeHistory(e0, 60, 21);
  await e0.close();
  assert.ok((await segmentKeys(plain)).every((s) => s.keyId === null));
  // Key A: new writes are sealed, and a rekey pass converts the plain segments.
  const e1 = await open(plain, { segmentBytes: SEG, keyring: ringA });
  const b1 = await writeHistory(e1, 40, 22, 'a');
  assert.equal(await e1.rekey(), 0);
  await e1.close();
  const afterA = await segmentKeys(plain);
  assert.ok(
    afterA.every((s) => s.keyId === keyA.idHex),
    JSON.stringify(afterA),
  );
  // Rotate to key B with A kept as an old key; then A is no longer needed.
  const e2 = await open(plain, { segmentBytes: SEG, keyring: new Keyring(keyB, [keyA]) });
  const b2 = await writeHistory(e2, 40, 23, 'b');
  assert.equal(await e2.rekey(), 0);
  await e2.close();
  const afterB = await segmentKeys(plain);
  assert.ok(
    afterB.every((s) => s.keyId === keyB.idHex),
    JSON.stringify(afterB),
  );
  const e3 = await open(plain, { segmentBytes: SEG, keyring: new Keyring(keyB) });
  await assertState(e3, replay([...b0, ...b1, ...b2]));
  await e3.close();
});

/** The sealed units of a segment file: position, length, first sequence number and number of batches (its count field). */
function units(file: string): Array<{ pos: number; len: number; seq: number; count: number }> {
  const b = fs.readFileSync(file);
  const out: Array<{ pos: number; len: number; seq: number; count: number }> = [];
  for (let pos = SEALED_SEGMENT_HEADER_SIZE; pos + 20 <= b.length;) {
    const len = b.readUInt32LE(pos + 4);
    out.push({ pos, len, seq: b.readUInt32LE(pos + 8), count: b.readUInt32LE(pos + 16) });
    pos += len;
  }
  return out;
}

test('the batches of one group commit are sealed as one unit: read back from disk, hints, the feed and compaction; damage drops the unit', async () => {
  const d = dir('units');
  const opts = { segmentBytes: 64 * 1024, keyring: ringA, cacheBytes: 0 };
  const e = await open(d, opts);
  const want = new Map<string, string>();
  const seqOf = new Map<string, number>();
  let batches = 0;
  for (let round = 0; round < 12; round++) {
    // Written in one turn of the event loop: one group, one unit.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const k = `r${round}-${i}`;
        const v = `${k}:${'z'.repeat((round * 37 + i * 11) % 700)}`;
        want.set(k, v);
        seqOf.set(k, e.upcomingSeq);
        batches++;
        return e.write([put(k, v)]);
      }),
    );
  }
  const check = async (x: typeof e, msg: string): Promise<void> => {
    for (const [k, v] of want) assert.equal(await x.read(k, (b) => b.toString()), v, `${msg}: ${k}`);
  };
  const feedSeqs = async (x: typeof e): Promise<number[]> => {
    const seqs: number[] = [];
    assert.equal(await x.replay(0, x.upcomingSeq, (seq) => void seqs.push(seq)), true);
    return seqs;
  };
  const grouped = logFiles(d).flatMap((f) => units(path.join(d, f)).filter((u) => u.count > 1));
  assert.ok(grouped.length >= 10, `${grouped.length} units of several batches`);
  await check(e, 'written');
  assert.deepEqual(
    await feedSeqs(e),
    Array.from({ length: batches }, (_, i) => i + 1),
  );
  // Rows of one group written together: a snapshot reads them out of their units.
  const rows = Array.from({ length: 60 }, (_, i) => `row ${i} ${'q'.repeat(i * 13)}`);
  await Promise.all(rows.map((v, i) => e.write([put(`t\u0000g\u0000${String(i).padStart(4, '0')}`, v)])));
  batches += rows.length;
  const snap = e.snapshot('t\u0000g\u0000', (b) => b.toString());
  assert.deepEqual(await snap.read(0, snap.length), rows);
  snap.release();
  await e.close();
  await waitForHints(d);
  const e2 = await open(d, opts);
  await check(e2, 'reopened');
  assert.deepEqual(
    await feedSeqs(e2),
    Array.from({ length: batches }, (_, i) => i + 1),
  );
  await e2.close();

  // A changed byte inside a unit of several batches, not the last of its segment.
  const file = path.join(d, logFiles(d)[0]);
  const all = units(file);
  const victim = all.slice(0, -1).find((u) => u.count > 1);
  assert.ok(victim !== undefined);
  for (const h of hintFiles(d)) fs.rmSync(path.join(d, h));
  const copy = dir('units-copy');
  fs.cpSync(d, copy, { recursive: true });
  flipByte(path.join(copy, logFiles(d)[0]), victim.pos + 20 + Math.floor((victim.len - 36) / 2));
  await assert.rejects(open(copy, opts), (err: Error) => err instanceof CorruptionError && err.message.includes(String(victim.pos)));
  const e3 = await open(copy, { ...opts, repair: true });
  const gone: string[] = [];
  for (const [k, v] of want) {
    const got = await e3.read(k, (b) => b.toString());
    if (got === undefined) gone.push(k);
    else assert.equal(got, v);
  }
  // Exactly the batches of the damaged unit: its count from its first sequence number on.
  const inUnit = [...want.keys()].filter((k) => (seqOf.get(k) as number) >= victim.seq && (seqOf.get(k) as number) < victim.seq + victim.count);
  assert.deepEqual(gone, inUnit);
  await e3.close();

  // Compaction copies them out of their units, one sealed batch each, and they read the same.
  const e4 = await open(d, { ...opts, compactMinDeadBytes: 0, compactMinDeadRatio: 0 });
  for (const k of [...want.keys()].slice(0, 40)) await e4.write([put(k, want.get(k) as string)]);
  assert.equal(await e4.compact(true), true);
  await check(e4, 'compacted');
  await e4.close();
  const e5 = await open(d, opts);
  await check(e5, 'compacted, reopened');
  await e5.close();
});

test('a large group commit is sealed as several units of at most 256 KiB of batches', async () => {
  const d = dir('unit-cap');
  const opts = { keyring: ringA, cacheBytes: 0 };
  const e = await open(d, opts);
  const value = (i: number): string => `${i}:${String(i % 10).repeat(10_000 + i)}`;
  await Promise.all(Array.from({ length: 60 }, (_, i) => e.write([put(`big${i}`, value(i))])));
  const us = units(newestLog(d));
  assert.ok(us.length >= 3, `${us.length} units`);
  for (const u of us) assert.ok(u.len - 36 <= 256 * 1024, `a unit of ${u.len} bytes`);
  assert.equal(
    us.reduce((a, u) => a + u.count, 0),
    60,
  );
  for (let i = 0; i < 60; i++) assert.equal(await e.read(`big${i}`, (b) => b.toString()), value(i));
  await e.close();
  const e2 = await open(d, opts);
  for (let i = 0; i < 60; i++) assert.equal(await e2.read(`big${i}`, (b) => b.toString()), value(i));
  await e2.close();
});
