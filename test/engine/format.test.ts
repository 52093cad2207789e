import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import {
  BATCH_HEADER_SIZE,
  checkHint,
  decodeBatch,
  decodeSegmentHeader,
  encodeBatch,
  encodeSegmentHeader,
  type EntryIn,
  ENTRY_HEADER_SIZE,
  entrySize,
  HINT_VERSION,
  HintWriter,
  Op,
  Probe,
  probeBatch,
  readSeq,
  SEGMENT_HEADER_SIZE,
  SegmentKind,
  valueCrc,
  visitHint,
  writeSeq,
} from '../../src/engine/format.js';
import { layOut } from '../../src/engine/batch.js';

function encode(seq: number, entries: EntryIn[]): { buf: Buffer; valueOffsets: number[] } {
  const valueOffsets: number[] = [];
  const buf = encodeBatch(seq, entries, [], valueOffsets);
  return { buf, valueOffsets };
}

const sample: EntryIn[] = [
  { op: Op.Put, key: 'alpha', value: Buffer.from('first value'), expiresAt: 0 },
  { op: Op.Put, key: 'tbl\u0000row-1', value: Buffer.from('{"a":1}'), expiresAt: 1_800_000_000_123 },
  { op: Op.Del, key: 'beta', value: undefined, expiresAt: 0 },
  { op: Op.DropGroup, key: 'old\u0000', value: undefined, expiresAt: 0 },
  { op: Op.Put, key: 'κλειδί🔑', value: Buffer.alloc(0), expiresAt: 0 },
];

const entryArb: fc.Arbitrary<EntryIn> = fc.oneof(
  fc.record({
    op: fc.constant(Op.Put),
    key: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
    value: fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
    expiresAt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 52 })),
  }),
  fc.record({
    op: fc.constantFrom(Op.Del, Op.DropGroup),
    key: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
    value: fc.constant(undefined),
    expiresAt: fc.constant(0),
  }),
);

test('a batch laid out first (layOut) encodes to the same bytes without measuring its keys again (property)', () => {
  fc.assert(
    fc.property(fc.array(entryArb, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 2 ** 40 }), (entries, seq) => {
      const keyLens: number[] = [];
      const offsets: number[] = [];
      const size = layOut(entries, BATCH_HEADER_SIZE, keyLens, offsets);
      const laid = encodeBatch(seq, entries, keyLens, [], true, size);
      assert.deepEqual(laid, encode(seq, entries).buf);
      assert.equal(laid.length, size);
    }),
  );
});

test('batch encode/decode round trip (property)', () => {
  fc.assert(
    fc.property(
      fc.array(entryArb, { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 1, max: 2 ** 53 - 1 }),
      fc.uint8Array({ maxLength: 64 }),
      (entries, seq, prefix) => {
        const { buf, valueOffsets } = encode(seq, entries);
        assert.equal(buf.length, BATCH_HEADER_SIZE + entries.reduce((a, e) => a + entrySize(Buffer.byteLength(e.key), e.value?.length ?? 0), 0));
        // Place the batch after some unrelated bytes and before others.
        const host = Buffer.concat([Buffer.from(prefix), buf, Buffer.from('trailing')]);
        const out = [0];
        assert.equal(probeBatch(host, prefix.length, host.length, out), Probe.Ok);
        assert.equal(out[0], buf.length);
        const d = decodeBatch(host, prefix.length, out[0]);
        assert.equal(d.seq, seq);
        assert.equal(d.length, buf.length);
        assert.equal(d.entries.length, entries.length);
        for (let i = 0; i < entries.length; i++) {
          const want = entries[i];
          const got = d.entries[i];
          assert.equal(got.op, want.op);
          assert.equal(got.key, want.key);
          assert.equal(got.expiresAt, want.expiresAt);
          assert.equal(got.valueOffset, prefix.length + valueOffsets[i]);
          const value = host.subarray(got.valueOffset, got.valueOffset + got.valueLength);
          assert.deepEqual(value, want.value ?? Buffer.alloc(0));
          assert.equal(got.size, entrySize(Buffer.byteLength(want.key), want.value?.length ?? 0));
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('sequence numbers use all 53 bits', () => {
  const b = Buffer.alloc(8);
  for (const s of [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 12345, 2 ** 53 - 1]) {
    writeSeq(b, 0, s);
    assert.equal(readSeq(b, 0), s);
  }
  const { buf } = encode(2 ** 45 + 7, sample);
  assert.equal(decodeBatch(buf, 0, buf.length).seq, 2 ** 45 + 7);
});

test('every single-byte corruption of a batch is caught', () => {
  const batches = [
    encode(42, sample).buf,
    encode(7, [{ op: Op.Put, key: 'k', value: Buffer.from('v'), expiresAt: 0 }]).buf,
    encode(99, [{ op: Op.Del, key: 'gone', value: undefined, expiresAt: 0 }]).buf,
  ];
  const follower = encode(43, [{ op: Op.Put, key: 'next', value: Buffer.from('x'.repeat(200)), expiresAt: 0 }]).buf;
  const masks = [0x01, 0x80, 0xff, 0x5a, 0x10];
  const out = [0];
  let checked = 0;
  for (const good of batches) {
    // Alone (the batch ends the buffer) and followed by another valid batch
    // (so a damaged length that grows still finds bytes to cover).
    for (const withFollower of [false, true]) {
      for (let i = 0; i < good.length; i++) {
        for (const m of masks) {
          const bad = Buffer.concat(withFollower ? [good, follower] : [good]);
          bad[i] ^= m;
          const r = probeBatch(bad, 0, bad.length, out);
          assert.notEqual(r, Probe.Ok, `flip ${m} at ${i} accepted`);
          if (r === Probe.Short) {
            // Only a damaged length field may claim more bytes than exist.
            assert.ok(i >= 4 && i < 8, `Short for damage at ${i}`);
            assert.ok(bad.readUInt32LE(4) > bad.length, `Short although the claimed length fits (flip at ${i})`);
          }
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 1000);
});

test('a batch truncated at any offset is never accepted', () => {
  const good = encode(5, sample).buf;
  const out = [0];
  for (let cut = 0; cut < good.length; cut++) {
    const r = probeBatch(good.subarray(0, cut), 0, cut, out);
    assert.notEqual(r, Probe.Ok, `truncated at ${cut} accepted`);
    assert.ok(r === Probe.Short || r === Probe.Bad);
    // The header is intact, so the reader knows it only has to wait for more bytes.
    assert.equal(r, Probe.Short, `truncated at ${cut} reported as ${r}`);
  }
  assert.equal(probeBatch(good, 0, good.length, out), Probe.Ok);
});

test('structural checks reject zeroed and empty batches', () => {
  const out = [0];
  assert.equal(probeBatch(Buffer.alloc(64), 0, 64, out), Probe.Bad); // length 0
  // A well-formed header with count 0 and a correct crc is still refused.
  const { buf } = encode(1, [{ op: Op.Del, key: 'a', value: undefined, expiresAt: 0 }]);
  const empty = Buffer.from(buf.subarray(0, BATCH_HEADER_SIZE));
  empty.writeUInt32LE(BATCH_HEADER_SIZE, 4);
  empty.writeUInt32LE(0, 16);
  assert.equal(probeBatch(empty, 0, empty.length, out), Probe.Bad);
  // An entry with an unknown op is refused even with a matching crc.
  const odd = Buffer.from(buf);
  odd[BATCH_HEADER_SIZE] = 9;
  odd.writeUInt32LE(crc32(odd.subarray(4)) >>> 0, 0);
  assert.equal(probeBatch(odd, 0, odd.length, out), Probe.Bad);
  assert.equal(ENTRY_HEADER_SIZE, 15);
});

test('segment header round trip and rejection', () => {
  const h = encodeSegmentHeader(SegmentKind.Compacted, 2 ** 40);
  assert.equal(h.length, SEGMENT_HEADER_SIZE);
  assert.deepEqual(decodeSegmentHeader(h), { kind: SegmentKind.Compacted, baseSeq: 2 ** 40 });
  assert.equal(typeof decodeSegmentHeader(h.subarray(0, 10)), 'string');
  for (const [pos, val] of [
    [0, 0],
    [4, 2],
    [5, 7],
  ] as const) {
    const b = Buffer.from(h);
    b[pos] = val;
    assert.equal(typeof decodeSegmentHeader(b), 'string', `byte ${pos} = ${val} accepted`);
  }
});

interface H {
  op: Op;
  key: string;
  pos: number;
  len: number;
  size: number;
  exp: number;
  crc: number;
  seq: number;
}

function buildHint(entries: H[], segSize: number, maxSeq: number): Buffer {
  const w = new HintWriter();
  for (const e of entries) w.add(e.op, e.key, e.pos, e.len, e.size, e.exp, e.crc, e.seq);
  return Buffer.concat(w.finish(segSize, maxSeq));
}

function readHint(buf: Buffer, slice: number): H[] {
  const got: H[] = [];
  const v = {
    hint(op: Op, key: string, pos: number, len: number, size: number, exp: number, crc: number, seq: number) {
      assert.ok(op !== Op.Put || !key.includes('\u0000'), `a grouped Put handed over whole: ${JSON.stringify(key)}`);
      got.push({ op, key, pos, len, size, exp, crc, seq });
    },
    hintMember(group: string, member: string, pos: number, len: number, size: number, exp: number, crc: number, seq: number) {
      assert.ok(group.endsWith('\u0000') && !member.includes('\u0000'), `group ${JSON.stringify(group)}, member ${JSON.stringify(member)}`);
      got.push({ op: Op.Put, key: group + member, pos, len, size, exp, crc, seq });
    },
  };
  let p = 0;
  let rounds = 0;
  do {
    p = visitHint(buf, p, slice, v);
    rounds++;
  } while (p !== 0 && rounds < 1e6);
  return got;
}

test('hint writer / checkHint / visitHint round trip', () => {
  // Enough entries to spill over the writer's 64 KiB chunks, plus one key
  // larger than a chunk.
  const entries: H[] = [];
  for (let i = 0; i < 5000; i++) {
    entries.push({
      op: i % 7 === 0 ? Op.Del : Op.Put,
      key: `key-${i}-${'x'.repeat(i % 30)}`,
      pos: 16 + i * 100,
      len: i % 100,
      size: 15 + i,
      exp: i % 3 === 0 ? 1.7e12 + i : 0,
      crc: valueCrc(Buffer.from(`v${i}`), 0, String(i).length + 1),
      seq: i * 7919 + 1,
    });
  }
  // Runs of grouped keys: groups of equal length that differ in one byte, a group inside another's name,
  // members with and without multi-byte characters, an empty member, and a Del of a grouped key.
  const groups = ['s\u0000tags\u0000', 's\u0000tagz\u0000', 'z\u0000s\u0000tags\u0000', 'l\u0000q\u00001\u0000'];
  for (let i = 0; i < 3000; i++) {
    const g = groups[Math.floor(i / 200) % groups.length];
    const member = i % 50 === 0 ? '' : i % 3 === 0 ? `m-${i}-ä€𝄞` : `member-${String(i).padStart(9, '0')}`;
    entries.push({
      op: i % 97 === 0 ? Op.Del : Op.Put,
      key: g + member,
      pos: 16 + i,
      len: i % 40,
      size: 40 + i,
      exp: i % 5 === 0 ? 1.8e12 : 0,
      crc: i,
      seq: i + 1,
    });
  }
  entries.push({ op: Op.Put, key: 'big'.repeat(21845), pos: 123, len: 4, size: 65554, exp: 0, crc: -1, seq: 2 ** 53 - 1 });
  entries.push({ op: Op.DropGroup, key: 'grp\u0000', pos: 0, len: 0, size: 19, exp: 0, crc: 0, seq: 2 ** 32 });
  entries.push({ op: Op.Put, key: 'ünïcødé\u0000ключ', pos: 2 ** 32 - 1, len: 2 ** 31, size: 2 ** 32 - 1, exp: 0, crc: -(2 ** 31), seq: 1 });
  const buf = buildHint(entries, 3_000_000, 2 ** 41 + 3);
  const footer = checkHint(buf);
  assert.deepEqual(footer, { segmentSize: 3_000_000, count: entries.length, maxSeq: 2 ** 41 + 3 });
  for (const slice of [1, 7, 50_000]) assert.deepEqual(readHint(buf, slice), entries);
  // An empty hint is valid too.
  const empty = buildHint([], 16, 0);
  assert.deepEqual(checkHint(empty), { segmentSize: 16, count: 0, maxSeq: 0 });
  assert.deepEqual(readHint(empty, 10), []);
});

test('hint corruption and truncation are detected', () => {
  const entries: H[] = [];
  for (let i = 0; i < 12; i++) entries.push({ op: Op.Put, key: `k${i}`, pos: 16 + i * 40, len: 20, size: 40, exp: 0, crc: i * 1_000_003, seq: i + 1 });
  const good = buildHint(entries, 500, 12);
  assert.equal(typeof checkHint(good), 'object');
  for (let i = 0; i < good.length; i++) {
    for (const m of [0x01, 0x80, 0xff]) {
      const bad = Buffer.from(good);
      bad[i] ^= m;
      assert.equal(typeof checkHint(bad), 'string', `hint flip ${m} at ${i} accepted`);
    }
  }
  for (let cut = 0; cut < good.length; cut++) {
    assert.equal(typeof checkHint(good.subarray(0, cut)), 'string', `hint truncated at ${cut} accepted`);
  }
  // Extra bytes after a valid hint are not a valid hint either.
  assert.equal(typeof checkHint(Buffer.concat([good, Buffer.alloc(4)])), 'string');
  // A hint of another version (with a valid checksum) is refused.
  const old = Buffer.from(good);
  old[4] = HINT_VERSION - 1;
  old.writeUInt32LE(crc32(old.subarray(0, old.length - 4)) >>> 0, old.length - 4);
  assert.match(String(checkHint(old)), /unsupported hint version/);
});

test('valueCrc is zlib.crc32 of the value bytes, both below and above the size where it stops using its own table', () => {
  const buf = Buffer.alloc(300);
  for (let i = 0; i < buf.length; i++) buf[i] = (i * 151 + 7) & 0xff;
  for (let len = 0; len <= 140; len++) {
    for (const start of [0, 1, 13]) assert.equal(valueCrc(buf, start, start + len), crc32(buf.subarray(start, start + len)) | 0, `${len} bytes at ${start}`);
  }
  assert.equal(valueCrc(Buffer.from('123456789'), 0, 9), 0xcbf43926 | 0, 'the CRC-32 check value');
});
