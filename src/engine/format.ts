/**
 * On-disk formats: segment header, batch records, hint files.
 * docs/format.md describes the same layout for humans; keep them in step.
 *
 * All integers are little-endian. Sequence numbers are stored as two u32
 * halves and handled as JS numbers (exact up to 2^53).
 */
import { crc32 } from 'node:zlib';

export const SEGMENT_MAGIC = 0x53485450; // "PTHS" read as LE u32
export const HINT_MAGIC = 0x48485450; // "PTHH"
export const FORMAT_VERSION = 1;
export const SEGMENT_HEADER_SIZE = 16;
/** Version of a segment whose header carries flags (docs/format.md, "Encryption"). */
export const SEALED_FORMAT_VERSION = 2;
/** Version 2 header: the version 1 fields, then key id [8], salt [12], tag [16]. */
export const SEALED_SEGMENT_HEADER_SIZE = 52;
/** Header flag: every batch of the segment is sealed (AES-256-GCM). */
export const SEGMENT_FLAG_SEALED = 1;
/** Header flag: every Put value starts with a codec byte (codec.ts). */
export const SEGMENT_FLAG_CODECS = 2;
/** Header flag, with SEGMENT_FLAG_SEALED only: each sealed unit holds the batches of one group commit (seal.ts, sealGroup). */
export const SEGMENT_FLAG_GROUPS = 4;
/** What decodeSegmentHeader says of a file shorter than its header. */
export const HEADER_TRUNCATED = 'segment header is truncated';
export const BATCH_HEADER_SIZE = 20;
export const ENTRY_HEADER_SIZE = 15;
export const HINT_HEADER_SIZE = 8;
export const HINT_ENTRY_HEADER_SIZE = 35;
/**
 * Hint files have their own version: they are derived data, rebuilt from the log when they do not match.
 * 3: each entry carries its batch's sequence number (the object's version).
 */
export const HINT_VERSION = 3;
export const HINT_FOOTER_SIZE = 16;
/** Upper bound on one batch; larger writes are refused before they reach the log. */
export const MAX_BATCH_BYTES = 1 << 30;
export const MAX_KEY_BYTES = 0xffff;

export enum Op {
  Put = 1,
  Del = 2,
  /** Removes every key of a group (the part of a key up to its last U+0000). */
  DropGroup = 3,
}

export const enum SegmentKind {
  Log = 0,
  Compacted = 1,
}

export interface EntryIn {
  op: Op;
  key: string;
  value: Buffer | undefined;
  /** Absolute expiry in ms since the epoch; 0 = never. */
  expiresAt: number;
}

export function writeSeq(buf: Buffer, off: number, seq: number): void {
  buf.writeUInt32LE(seq % 0x100000000, off);
  buf.writeUInt32LE(Math.floor(seq / 0x100000000), off + 4);
}

export function readSeq(buf: Buffer, off: number): number {
  return buf.readUInt32LE(off) + buf.readUInt32LE(off + 4) * 0x100000000;
}

/** What a sealed header needs from its segment's seal (seal.ts). */
export interface HeaderSeal {
  readonly key: { readonly id: Buffer };
  readonly salt: Buffer;
  headerTag(head: Buffer): Buffer;
}

/**
 * A version 1 header, or a version 2 one when the segment is sealed (`seal`:
 * its tag authenticates the first 36 bytes) or stores codec bytes (`codecs`).
 */
export function encodeSegmentHeader(kind: SegmentKind, baseSeq: number, seal?: HeaderSeal, codecs = false, groups = false): Buffer {
  const v2 = seal !== undefined || codecs;
  const b = Buffer.alloc(v2 ? SEALED_SEGMENT_HEADER_SIZE : SEGMENT_HEADER_SIZE);
  b.writeUInt32LE(SEGMENT_MAGIC, 0);
  b[4] = v2 ? SEALED_FORMAT_VERSION : FORMAT_VERSION;
  b[5] = kind;
  writeSeq(b, 8, baseSeq);
  if (v2) b[6] = (seal !== undefined ? SEGMENT_FLAG_SEALED | (groups ? SEGMENT_FLAG_GROUPS : 0) : 0) | (codecs ? SEGMENT_FLAG_CODECS : 0);
  if (seal !== undefined) {
    seal.key.id.copy(b, 16);
    seal.salt.copy(b, 24);
    seal.headerTag(b.subarray(0, 36)).copy(b, 36);
  }
  return b;
}

export interface SegmentHeader {
  kind: SegmentKind;
  baseSeq: number;
  /** Version 2 only: its size; whether values carry a codec byte; whether a sealed unit holds a group of batches; when sealed, the key id (hex), salt and the authenticated bytes with their tag. */
  size?: number;
  codecs?: boolean;
  groups?: boolean;
  sealed?: { keyId: string; salt: Buffer; head: Buffer; tag: Buffer };
}

export function decodeSegmentHeader(b: Buffer): SegmentHeader | string {
  if (b.length < SEGMENT_HEADER_SIZE) return HEADER_TRUNCATED;
  if (b.readUInt32LE(0) !== SEGMENT_MAGIC) return 'bad segment magic';
  if (b[4] !== FORMAT_VERSION && b[4] !== SEALED_FORMAT_VERSION) return `unsupported format version ${b[4]}`;
  if (b[5] !== SegmentKind.Log && b[5] !== SegmentKind.Compacted) return `unknown segment kind ${b[5]}`;
  if (b[4] === FORMAT_VERSION) return { kind: b[5] as SegmentKind, baseSeq: readSeq(b, 8) };
  if (b.length < SEALED_SEGMENT_HEADER_SIZE) return HEADER_TRUNCATED;
  const known = SEGMENT_FLAG_SEALED | SEGMENT_FLAG_CODECS | SEGMENT_FLAG_GROUPS;
  if (b[6] === 0 || (b[6] & ~known) !== 0 || b[7] !== 0) return `unknown segment flags ${b[6]}/${b[7]}`;
  if ((b[6] & SEGMENT_FLAG_GROUPS) !== 0 && (b[6] & SEGMENT_FLAG_SEALED) === 0) return `unknown segment flags ${b[6]}/${b[7]}`;
  const codecs = (b[6] & SEGMENT_FLAG_CODECS) !== 0;
  if ((b[6] & SEGMENT_FLAG_SEALED) === 0) return { kind: b[5] as SegmentKind, baseSeq: readSeq(b, 8), size: SEALED_SEGMENT_HEADER_SIZE, codecs };
  return {
    kind: b[5] as SegmentKind,
    baseSeq: readSeq(b, 8),
    size: SEALED_SEGMENT_HEADER_SIZE,
    codecs,
    groups: (b[6] & SEGMENT_FLAG_GROUPS) !== 0,
    sealed: {
      keyId: b.toString('hex', 16, 24),
      salt: Buffer.from(b.subarray(24, 36)),
      head: Buffer.from(b.subarray(0, 36)),
      tag: Buffer.from(b.subarray(36, 52)),
    },
  };
}

/** Bytes one entry takes inside a batch. */
export function entrySize(keyBytes: number, valueBytes: number): number {
  return ENTRY_HEADER_SIZE + keyBytes + valueBytes;
}

/**
 * Encodes one batch. `valueOffsets[i]` receives the offset of entry i's value
 * relative to the start of the batch, so the caller can place it in a file.
 *
 * Layout: crc32 u32 | length u32 | seq u64 | count u32 | entries...
 * entry:  op u8 | keyLen u16 | valueLen u32 | expiresAt f64 | key | value
 * The crc covers every byte after itself, so a length field torn by a crash
 * is caught like any other damage. Without `checksum` the crc field is 0.
 * `laidOut`, when given, is the batch's size as layOut (batch.ts) computed
 * it, with every key's UTF-8 length already in `keyLens`: not measured again.
 */
export function encodeBatch(seq: number, entries: readonly EntryIn[], keyLens: number[], valueOffsets: number[], checksum = true, laidOut?: number): Buffer {
  let total = laidOut ?? BATCH_HEADER_SIZE;
  if (laidOut === undefined)
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      const kl = Buffer.byteLength(e.key, 'utf8');
      keyLens[i] = kl;
      total += ENTRY_HEADER_SIZE + kl + (e.value === undefined ? 0 : e.value.length);
    }
  const buf = Buffer.allocUnsafe(total);
  buf.writeUInt32LE(total, 4);
  writeSeq(buf, 8, seq);
  buf.writeUInt32LE(entries.length, 16);
  let off = BATCH_HEADER_SIZE;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const kl = keyLens[i];
    const vl = e.value === undefined ? 0 : e.value.length;
    buf[off] = e.op;
    buf.writeUInt16LE(kl, off + 1);
    buf.writeUInt32LE(vl, off + 3);
    buf.writeDoubleLE(e.expiresAt, off + 7);
    off += ENTRY_HEADER_SIZE;
    buf.write(e.key, off, kl, 'utf8');
    off += kl;
    valueOffsets[i] = off;
    if (vl > 0) (e.value as Buffer).copy(buf, off);
    off += vl;
  }
  // A batch sealed in a group unit is covered by the unit's crc and tag (seal.ts, sealGroup).
  buf.writeUInt32LE(checksum ? crc32(buf.subarray(4)) >>> 0 : 0, 0);
  return buf;
}

/**
 * Whether a batch of `entries` would exceed MAX_BATCH_BYTES, decided before
 * encoding it (a Buffer that large may not even be allocatable). A cheap
 * upper bound (3 bytes per UTF-16 unit) settles almost every call; the exact
 * UTF-8 length is computed only when that bound is over the limit.
 */
export function batchTooLarge(entries: readonly EntryIn[]): boolean {
  let bound = BATCH_HEADER_SIZE;
  for (let i = 0; i < entries.length; i++) {
    const v = entries[i].value;
    bound += ENTRY_HEADER_SIZE + 3 * entries[i].key.length + (v === undefined ? 0 : v.length);
  }
  if (bound <= MAX_BATCH_BYTES) return false;
  let exact = BATCH_HEADER_SIZE;
  for (let i = 0; i < entries.length; i++) {
    const v = entries[i].value;
    exact += ENTRY_HEADER_SIZE + Buffer.byteLength(entries[i].key) + (v === undefined ? 0 : v.length);
  }
  return exact > MAX_BATCH_BYTES;
}

/**
 * Builds one batch from entries that are already encoded (compaction copies
 * them verbatim from older batches), so the batch header and checksum are
 * written here and nowhere else. The batch takes the highest seq of the
 * entries added.
 */
export class BatchPacker {
  private parts: Buffer[] = [];
  /** Bytes of the entries added so far (the header not included). */
  entryBytes = 0;
  count = 0;
  seq = 0;

  /** Adds one encoded entry; returns its offset from the start of the batch. */
  add(entry: Buffer, seq: number): number {
    const at = BATCH_HEADER_SIZE + this.entryBytes;
    this.parts.push(entry);
    this.entryBytes += entry.length;
    this.count++;
    if (seq > this.seq) this.seq = seq;
    return at;
  }

  /** The encoded batch; the packer is empty again afterwards. */
  finish(): Buffer {
    const len = BATCH_HEADER_SIZE + this.entryBytes;
    const head = Buffer.allocUnsafe(BATCH_HEADER_SIZE);
    head.writeUInt32LE(len, 4);
    writeSeq(head, 8, this.seq);
    head.writeUInt32LE(this.count, 16);
    const data = Buffer.concat([head, ...this.parts], len);
    data.writeUInt32LE(crc32(data.subarray(4)) >>> 0, 0);
    this.parts = [];
    this.entryBytes = 0;
    this.count = 0;
    this.seq = 0;
    return data;
  }
}

/** One decoded entry; `valueOffset` is relative to the buffer handed to the decoder. */
export interface DecodedEntry {
  op: Op;
  key: string;
  valueOffset: number;
  valueLength: number;
  expiresAt: number;
  size: number;
}

export interface DecodedBatch {
  seq: number;
  length: number;
  entries: DecodedEntry[];
}

/** Result of looking at `buf` at `off` for a batch. */
export const enum Probe {
  Ok,
  /** Fewer bytes remain than the batch claims (or than a header needs). */
  Short,
  /** The bytes are there but do not form a valid batch. */
  Bad,
}

/**
 * Checks whether a valid batch starts at `off`. On success returns its
 * length in `out[0]`. Cheap structural checks run before the crc, so the
 * resynchronising scan in recovery can probe every offset quickly.
 */
export function probeBatch(buf: Buffer, off: number, end: number, out: number[], tagBytes = 0): Probe {
  if (end - off < BATCH_HEADER_SIZE) return Probe.Short;
  const len = buf.readUInt32LE(off + 4);
  if (len < BATCH_HEADER_SIZE + tagBytes || len > MAX_BATCH_BYTES) return Probe.Bad;
  const count = buf.readUInt32LE(off + 16);
  if (count === 0 || count * ENTRY_HEADER_SIZE > len - BATCH_HEADER_SIZE - tagBytes) return Probe.Bad;
  if (off + len > end) return Probe.Short;
  if (crc32(buf.subarray(off + 4, off + len)) >>> 0 !== buf.readUInt32LE(off)) return Probe.Bad;
  // A sealed batch's entries are ciphertext: its tag, checked when it is
  // opened (seal.ts), stands in for the structure check, done on the plain batch.
  if (tagBytes > 0) {
    out[0] = len;
    return Probe.Ok;
  }
  if (!entriesTile(buf, off, len, count)) return Probe.Bad;
  out[0] = len;
  return Probe.Ok;
}

/** Whether `count` entries, each with a known op, fill `buf[off + 20, off + len)` exactly. */
export function entriesTile(buf: Buffer, off: number, len: number, count: number): boolean {
  // Entries must tile the batch exactly; a crc collision on garbage fails here.
  let p = off + BATCH_HEADER_SIZE;
  const stop = off + len;
  for (let i = 0; i < count; i++) {
    if (p + ENTRY_HEADER_SIZE > stop) return false;
    const op = buf[p];
    if (op !== Op.Put && op !== Op.Del && op !== Op.DropGroup) return false;
    p += ENTRY_HEADER_SIZE + buf.readUInt16LE(p + 1) + buf.readUInt32LE(p + 3);
  }
  return p === stop;
}

/** Decodes a batch already accepted by probeBatch. */
export function decodeBatch(buf: Buffer, off: number, len: number): DecodedBatch {
  const seq = readSeq(buf, off + 8);
  const count = buf.readUInt32LE(off + 16);
  const entries: DecodedEntry[] = new Array(count);
  let p = off + BATCH_HEADER_SIZE;
  for (let i = 0; i < count; i++) {
    const op = buf[p] as Op;
    const kl = buf.readUInt16LE(p + 1);
    const vl = buf.readUInt32LE(p + 3);
    const expiresAt = buf.readDoubleLE(p + 7);
    const key = buf.toString('utf8', p + ENTRY_HEADER_SIZE, p + ENTRY_HEADER_SIZE + kl);
    const valueOffset = p + ENTRY_HEADER_SIZE + kl;
    entries[i] = { op, key, valueOffset, valueLength: vl, expiresAt, size: ENTRY_HEADER_SIZE + kl + vl };
    p = valueOffset + vl;
  }
  return { seq, length: len, entries };
}

/** Checksum of one value, as kept in the key directory (a signed int32, so V8 stores it unboxed). */
export function valueCrc(buf: Buffer, start: number, end: number): number {
  if (end - start > SMALL_CRC) return crc32(buf.subarray(start, end)) | 0;
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return ~c;
}

/**
 * Values up to this many bytes are checked by a table-driven CRC-32 here:
 * a score or a counter is a few bytes, and zlib's crc32 costs a view of
 * them and a call across to C++ (argument checks included) per value,
 * which was a fifth of building a million-member sorted set's rank order
 * from the log. Same polynomial, same value.
 */
const SMALL_CRC = 64;
const CRC_TABLE = ((): Int32Array => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/**
 * Hint file: the directory view of one immutable segment, so recovery does
 * not read values. Layout:
 *   magic u32 | version u8 (HINT_VERSION) | pad[3]
 *   entries: op u8 | keyLen u16 | valueLen u32 | valuePos u32 | size u32 | expiresAt f64 | valueCrc u32 | seq u64 | key
 * valueCrc is the crc32 of the value bytes: recovery from a hint never sees
 * the batch checksums, so reads verify each value against it instead. seq is
 * the sequence number of the batch holding the entry (the version it gives).
 *   footer:  segmentSize u32 | count u32 | maxSeq u64 ... crc32 over all before it
 * The footer's segment size ties the hint to the exact segment it describes;
 * a hint that disagrees with its segment is ignored and the segment scanned.
 */
export interface HintEntry {
  op: Op;
  key: string;
  valuePos: number;
  valueLength: number;
  size: number;
  expiresAt: number;
  crc: number;
  seq: number;
}

export class HintWriter {
  /** Full chunks, each checksummed when it filled (crc), so finish() has one chunk left to do. */
  private chunks: Buffer[] = [];
  private crc = 0;
  private cur: Buffer = Buffer.allocUnsafe(1 << 16);
  private pos = 0;
  private count = 0;

  constructor() {
    this.cur.writeUInt32LE(HINT_MAGIC, 0);
    this.cur[4] = HINT_VERSION;
    this.cur[5] = 0;
    this.cur[6] = 0;
    this.cur[7] = 0;
    this.pos = HINT_HEADER_SIZE;
  }

  add(op: Op, key: string, valuePos: number, valueLength: number, size: number, expiresAt: number, crc: number, seq: number): void {
    const kl = Buffer.byteLength(key, 'utf8');
    const need = HINT_ENTRY_HEADER_SIZE + kl;
    if (this.pos + need > this.cur.length) {
      const full = this.cur.subarray(0, this.pos);
      this.crc = crc32(full, this.crc);
      this.chunks.push(full);
      this.cur = Buffer.allocUnsafe(Math.max(1 << 16, need));
      this.pos = 0;
    }
    const b = this.cur;
    let p = this.pos;
    b[p] = op;
    b.writeUInt16LE(kl, p + 1);
    b.writeUInt32LE(valueLength, p + 3);
    b.writeUInt32LE(valuePos, p + 7);
    b.writeUInt32LE(size, p + 11);
    b.writeDoubleLE(expiresAt, p + 15);
    b.writeInt32LE(crc | 0, p + 23);
    writeSeq(b, p + 27, seq);
    p += HINT_ENTRY_HEADER_SIZE;
    b.write(key, p, kl, 'utf8');
    this.pos = p + kl;
    this.count++;
  }

  /**
   * The file's bytes, as the chunks they were built in (the footer last).
   * Not joined into one buffer: a hint of a full segment is tens of MB, and
   * copying it into fresh memory took 40-110 ms in one step on the event
   * loop (docs/benchmarks-history.md, "Latency tail").
   */
  finish(segmentSize: number, maxSeq: number): Buffer[] {
    const last = this.cur.subarray(0, this.pos);
    const footer = Buffer.allocUnsafe(HINT_FOOTER_SIZE + 4);
    footer.writeUInt32LE(segmentSize, 0);
    footer.writeUInt32LE(this.count, 4);
    writeSeq(footer, 8, maxSeq);
    let c = crc32(last, this.crc);
    c = crc32(footer.subarray(0, HINT_FOOTER_SIZE), c);
    footer.writeUInt32LE(c >>> 0, HINT_FOOTER_SIZE);
    return [...this.chunks, last, footer];
  }
}

export interface HintVisitor {
  hint(op: Op, key: string, valuePos: number, valueLength: number, size: number, expiresAt: number, crc: number, seq: number): void;
  /** A Put of the key `group` + `member`, where `group` ends at the key's last U+0000 (a group's member, keydir.ts). */
  hintMember(group: string, member: string, valuePos: number, valueLength: number, size: number, expiresAt: number, crc: number, seq: number): void;
}

export interface HintFooter {
  segmentSize: number;
  maxSeq: number;
  count: number;
}

/**
 * Validates a hint file and returns its footer, or a reason string when it
 * cannot be trusted. Entries are not decoded here; see visitHint.
 */
export function checkHint(buf: Buffer): HintFooter | string {
  const minLen = HINT_HEADER_SIZE + HINT_FOOTER_SIZE + 4;
  if (buf.length < minLen) return 'hint file is truncated';
  if (buf.readUInt32LE(0) !== HINT_MAGIC) return 'bad hint magic';
  if (buf[4] !== HINT_VERSION) return `unsupported hint version ${buf[4]}`;
  const crcPos = buf.length - 4;
  if (crc32(buf.subarray(0, crcPos)) >>> 0 !== buf.readUInt32LE(crcPos)) return 'hint checksum mismatch';
  const footer = crcPos - HINT_FOOTER_SIZE;
  return { segmentSize: buf.readUInt32LE(footer), count: buf.readUInt32LE(footer + 4), maxSeq: readSeq(buf, footer + 8) };
}

/**
 * Feeds the entries of a checked hint to `v`, `limit` at a time starting at
 * byte `pos`; returns the position to continue from (0 when done), so the
 * caller can yield to the event loop between slices. Throws on a structure
 * error, which the checksum makes a bug rather than damage.
 *
 * A Put of a grouped key is handed over as its group and member, decoded
 * apart from the bytes (U+0000 is the byte 0 in UTF-8, and no other
 * character's bytes hold one): a hint lists a collection's elements in long
 * runs of one group, whose name is decoded once per run, and the member key
 * comes out as the flat string of its own that the group keeps.
 */
export function visitHint(buf: Buffer, pos: number, limit: number, v: HintVisitor): number {
  const footer = buf.length - 4 - HINT_FOOTER_SIZE;
  let p = pos === 0 ? HINT_HEADER_SIZE : pos;
  // The group of the previous grouped entry: its bytes (where they are in buf) and its name.
  let groupAt = -1;
  let groupLen = 0;
  let group = '';
  for (let i = 0; i < limit; i++) {
    if (p >= footer) return 0;
    const kl = buf.readUInt16LE(p + 1);
    const keyStart = p + HINT_ENTRY_HEADER_SIZE;
    const keyEnd = keyStart + kl;
    if (keyEnd > footer) throw new Error('hint entries overrun');
    const op = buf[p] as Op;
    let cut = -1;
    if (op === Op.Put) {
      for (let q = keyEnd - 1; q >= keyStart; q--) {
        if (buf[q] === 0) {
          cut = q;
          break;
        }
      }
    }
    const valuePos = buf.readUInt32LE(p + 7);
    const valueLength = buf.readUInt32LE(p + 3);
    const size = buf.readUInt32LE(p + 11);
    const expiresAt = buf.readDoubleLE(p + 15);
    const crc = buf.readInt32LE(p + 23);
    const seq = readSeq(buf, p + 27);
    if (cut < 0) {
      v.hint(op, buf.toString('utf8', keyStart, keyEnd), valuePos, valueLength, size, expiresAt, crc, seq);
    } else {
      const len = cut + 1 - keyStart;
      if (!sameBytes(buf, groupAt, keyStart, len, groupLen)) group = buf.toString('utf8', keyStart, cut + 1);
      groupAt = keyStart;
      groupLen = len;
      v.hintMember(group, buf.toString('utf8', cut + 1, keyEnd), valuePos, valueLength, size, expiresAt, crc, seq);
    }
    p = keyEnd;
  }
  return p >= footer ? 0 : p;
}

/** Whether buf[b, b + len) holds the len bytes at a (a < 0: nothing there to compare). The last bytes differ first between groups' names. */
function sameBytes(buf: Buffer, a: number, b: number, len: number, aLen: number): boolean {
  if (a < 0 || aLen !== len) return false;
  for (let k = len - 1; k >= 0; k--) if (buf[a + k] !== buf[b + k]) return false;
  return true;
}
