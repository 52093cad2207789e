/**
 * Encryption at rest: AES-256-GCM sealing of segment headers, batches and
 * hint files (docs/format.md, "Encryption" has the layout and the argument
 * for why a nonce can never repeat under one key).
 *
 * A sealed segment carries a random 96-bit salt in its header. The nonce of
 * the batch with sequence number s is the salt with its last 8 bytes XORed
 * with s (little-endian), so within one segment nonces differ whenever
 * sequence numbers do; a SegmentSeal enforces that each batch it seals has a
 * higher number than the last, and only the process that created a segment
 * (and drew its salt) ever seals into it. Across segments, two random salts
 * make overlapping nonces only with probability about (batches)^2 / 2^96.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { DataKey, KEY_ID_BYTES, type Keyring } from './keyring.js';
import { BATCH_HEADER_SIZE, decodeSegmentHeader, HINT_MAGIC, MAX_BATCH_BYTES, readSeq, SEALED_SEGMENT_HEADER_SIZE } from './format.js';
import { CorruptionError } from './errors.js';
import type { FileOps } from './fileops.js';
import type { Segment } from './segment.js';

export const TAG_BYTES = 16;
export const SALT_BYTES = 12;
/** Version byte of a sealed hint file (a sealed wrapper around a plain one). */
export const SEALED_HINT_VERSION = 4;
/** magic u32 | version u8 | pad[3] | key id [8] | nonce [12] */
export const SEALED_HINT_HEADER_SIZE = 28;

const ALGO = 'aes-256-gcm';

/** A key that opens nothing the file claims: the message names the file and both key ids. */
export class KeyMismatchError extends Error {
  readonly code = 'KEY_MISMATCH';
}

export class SegmentSeal {
  private lastSeq = 0;

  /**
   * `writable` only for a segment this process has just created with a fresh
   * salt: a segment found on disk is never sealed into again, because the
   * sequence numbers of batches lost in a crash may be handed out again.
   */
  constructor(
    readonly key: DataKey,
    readonly salt: Buffer,
    private readonly writable: boolean,
  ) {}

  static fresh(key: DataKey): SegmentSeal {
    return new SegmentSeal(key, randomBytes(SALT_BYTES), true);
  }

  nonce(seq: number): Buffer {
    const n = Buffer.from(this.salt);
    n.writeUInt32LE((n.readUInt32LE(4) ^ (seq % 0x100000000)) >>> 0, 4);
    n.writeUInt32LE((n.readUInt32LE(8) ^ Math.floor(seq / 0x100000000)) >>> 0, 8);
    return n;
  }

  /** The tag of a header's first bytes (an empty message under nonce = salt, i.e. sequence number 0). */
  headerTag(head: Buffer): Buffer {
    const c = createCipheriv(ALGO, this.key.key, this.salt);
    c.setAAD(head);
    c.final();
    return c.getAuthTag();
  }

  /**
   * Seals a batch as format.encodeBatch wrote it: the header stays in clear
   * (its length now counting the tag), the entries are encrypted in place of
   * the plain ones and the tag follows them. The header's length, sequence
   * number and count are authenticated; the CRC is recomputed over the result.
   */
  sealBatch(plain: Buffer): Buffer {
    if (!this.writable) throw new Error('a segment found on disk is never appended to under encryption');
    const seq = readSeq(plain, 8);
    // Sequence numbers only grow within one process; this is what keeps
    // every nonce in this segment distinct, so it is checked, not assumed.
    if (seq <= this.lastSeq) throw new Error(`refusing to seal batch ${seq} after batch ${this.lastSeq} in one segment (nonce reuse)`);
    this.lastSeq = seq;
    const len = plain.length + TAG_BYTES;
    const out = Buffer.allocUnsafe(len);
    plain.copy(out, 0, 0, BATCH_HEADER_SIZE);
    out.writeUInt32LE(len, 4);
    const c = createCipheriv(ALGO, this.key.key, this.nonce(seq));
    c.setAAD(out.subarray(4, BATCH_HEADER_SIZE));
    const body = c.update(plain.subarray(BATCH_HEADER_SIZE));
    body.copy(out, BATCH_HEADER_SIZE);
    c.final();
    c.getAuthTag().copy(out, len - TAG_BYTES);
    out.writeUInt32LE(crc32(out.subarray(4)) >>> 0, 0);
    return out;
  }

  /**
   * Seals the batches of one group commit (each as format.encodeBatch wrote
   * it; their crc fields are not read) as one unit, laid out as a sealed
   * batch: a 20-byte header in clear (crc, length with the tag, the first
   * batch's sequence number, the number of batches), the batches encrypted as
   * one message under the nonce of that first number, then the tag. One
   * cipher set-up per group instead of one per batch: the set-up, not the
   * encryption, is most of what sealing a small batch costs (docs/benchmarks.md).
   */
  sealUnit(batches: readonly Buffer[]): Buffer {
    if (!this.writable) throw new Error('a segment found on disk is never appended to under encryption');
    const first = readSeq(batches[0], 8);
    const last = readSeq(batches[batches.length - 1], 8);
    // Units' first numbers must grow past every number sealed before: the nonce's uniqueness.
    if (first <= this.lastSeq || last < first)
      throw new Error(`refusing to seal batches ${first}..${last} after batch ${this.lastSeq} in one segment (nonce reuse)`);
    this.lastSeq = last;
    const body = batches.length === 1 ? batches[0] : Buffer.concat(batches);
    const len = BATCH_HEADER_SIZE + body.length + TAG_BYTES;
    const head = Buffer.allocUnsafe(BATCH_HEADER_SIZE);
    head.writeUInt32LE(len, 4);
    batches[0].copy(head, 8, 8, 16);
    head.writeUInt32LE(batches.length, 16);
    const c = createCipheriv(ALGO, this.key.key, this.nonce(first));
    c.setAAD(head.subarray(4));
    const ct = c.update(body);
    c.final();
    const out = Buffer.concat([head, ct, c.getAuthTag()], len);
    out.writeUInt32LE(crc32(out.subarray(4)) >>> 0, 0);
    return out;
  }

  /**
   * Seals a group commit's batches as units of consecutive batches (sealUnit),
   * each at most UNIT_BYTES of batches unless one batch alone is larger, and
   * hands each batch its slice of them: a unit's header goes with its first
   * batch (whose value offsets move by the header's size) and its tag with
   * its last, so the slices written back to back are the units. `unitAt` is
   * where a batch's unit starts, from the start of the group.
   */
  sealGroup(group: readonly GroupMember[]): void {
    let at = 0;
    for (let from = 0; from < group.length;) {
      const end = unitEnd(group, from);
      const unit = this.sealUnit(group.slice(from, end).map((m) => m.buf));
      const offs = group[from].createdOffsets;
      for (let i = 0; i < offs.length; i++) offs[i] += BATCH_HEADER_SIZE;
      let p = 0;
      for (let k = from; k < end; k++) {
        const q = p + group[k].buf.length + (k === from ? BATCH_HEADER_SIZE : 0) + (k === end - 1 ? TAG_BYTES : 0);
        group[k].buf = unit.subarray(p, q);
        group[k].unitAt = at;
        p = q;
      }
      at += unit.length;
      from = end;
    }
  }

  /**
   * Opens the sealed batch (or unit of batches, sealUnit) at `buf[off, off + len)`:
   * the plain batch (header and entries, `len - TAG_BYTES` bytes, entries at
   * the same offsets as their ciphertext), or undefined when the tag does not
   * match — a wrong key, or bytes changed after sealing.
   */
  openBatch(buf: Buffer, off: number, len: number): Buffer | undefined {
    const d = createDecipheriv(ALGO, this.key.key, this.nonce(readSeq(buf, off + 8)));
    d.setAAD(buf.subarray(off + 4, off + BATCH_HEADER_SIZE));
    d.setAuthTag(buf.subarray(off + len - TAG_BYTES, off + len));
    const out = Buffer.allocUnsafe(len - TAG_BYTES);
    buf.copy(out, 0, off, off + BATCH_HEADER_SIZE);
    d.update(buf.subarray(off + BATCH_HEADER_SIZE, off + len - TAG_BYTES)).copy(out, BATCH_HEADER_SIZE);
    try {
      d.final();
    } catch {
      return undefined;
    }
    return out;
  }
}

/**
 * Most bytes of batches one unit holds (unless one batch alone is larger):
 * a read of a value not in the cache reads and opens its whole unit, and the
 * cipher set-up is already shared by hundreds of small batches at this size.
 */
export const UNIT_BYTES = 256 * 1024;

/** What sealGroup needs of a batch of the group (batch.ts, Pending). */
export interface GroupMember {
  buf: Buffer;
  createdOffsets: number[];
  unitAt: number;
}

/** The end (exclusive) of the unit that starts with batch `from`. */
function unitEnd(group: readonly { buf: Buffer }[], from: number): number {
  let sum = group[from].buf.length;
  let i = from + 1;
  while (i < group.length && sum + group[i].buf.length <= UNIT_BYTES) sum += group[i++].buf.length;
  return i;
}

/** Bytes sealing adds to a group of batches (sealGroup): a header and a tag per unit. */
export function sealingOverhead(group: readonly { buf: Buffer }[]): number {
  let units = 0;
  for (let from = 0; from < group.length; from = unitEnd(group, from)) units++;
  return units * (BATCH_HEADER_SIZE + TAG_BYTES);
}

/** What a reader says when a batch does not authenticate. */
export function authFailure(seal: SegmentSeal): string {
  return `authentication failed under key ${seal.key.idHex} (tampered bytes, or a file sealed by another key with the same id)`;
}

/**
 * Seals a hint file (the plain bytes, as HintWriter chunks) under `key` with
 * a random nonce: a hint is written once per immutable segment, far fewer
 * times than the 2^32 random nonces one key may safely take.
 */
export async function sealHint(key: DataKey, chunks: Buffer[]): Promise<Buffer[]> {
  const head = Buffer.alloc(SEALED_HINT_HEADER_SIZE);
  head.writeUInt32LE(HINT_MAGIC, 0);
  head[4] = SEALED_HINT_VERSION;
  key.id.copy(head, 8);
  randomBytes(SALT_BYTES).copy(head, 8 + KEY_ID_BYTES);
  const c = createCipheriv(ALGO, key.key, head.subarray(8 + KEY_ID_BYTES));
  c.setAAD(head);
  const out = [head];
  let since = 0;
  for (const ch of chunks) {
    out.push(c.update(ch));
    // A full segment's hint is tens of MB: encrypt it in slices, as it was built.
    if ((since += ch.length) >= 1 << 20) {
      since = 0;
      await new Promise<void>((r) => setImmediate(r));
    }
  }
  out.push(c.final(), c.getAuthTag());
  return out;
}

/** The plain hint inside a sealed one, or why it cannot be opened. */
export function openHint(buf: Buffer, keyring: Keyring | undefined, expectKey: DataKey): Buffer | string {
  if (buf.length < SEALED_HINT_HEADER_SIZE + TAG_BYTES) return 'sealed hint is truncated';
  if (buf.readUInt32LE(0) !== HINT_MAGIC || buf[4] !== SEALED_HINT_VERSION) return 'not a sealed hint';
  const id = buf.toString('hex', 8, 8 + KEY_ID_BYTES);
  // A hint follows its segment's key; one under another key is not this segment's.
  if (id !== expectKey.idHex) return `sealed under key ${id}, not the segment's key ${expectKey.idHex}`;
  const key = keyring?.get(id) ?? expectKey;
  const head = buf.subarray(0, SEALED_HINT_HEADER_SIZE);
  const d = createDecipheriv(ALGO, key.key, head.subarray(8 + KEY_ID_BYTES));
  d.setAAD(head);
  d.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
  const plain = d.update(buf.subarray(SEALED_HINT_HEADER_SIZE, buf.length - TAG_BYTES));
  try {
    d.final();
  } catch {
    return `sealed hint does not authenticate under key ${id}`;
  }
  return plain;
}

/**
 * The opened (plain) batch that starts at `start` in a sealed segment;
 * `guess` is how many bytes to read first. Throws CorruptionError when the
 * batch is cut short or does not authenticate, read errors as thrown.
 */
export async function readSealedBatch(f: FileOps, seg: Segment, start: number, guess: number): Promise<Buffer> {
  const seal = seg.seal as SegmentSeal;
  let buf = Buffer.allocUnsafe(Math.max(guess, 20));
  let n = await seg.read(f, buf, 0, buf.length, start);
  const len = n >= 20 ? buf.readUInt32LE(4) : 0;
  if (len < 20 + TAG_BYTES || len > MAX_BATCH_BYTES) throw new CorruptionError(seg.name, start, 'bad batch length');
  if (len > buf.length) {
    const whole = Buffer.allocUnsafe(len);
    buf.copy(whole, 0, 0, n);
    n += await seg.read(f, whole, n, len - n, start + n);
    buf = whole;
  }
  if (n < len) throw new CorruptionError(seg.name, start, `batch runs past the end of the file`);
  const plain = seal.openBatch(buf, 0, len);
  if (plain === undefined) throw new CorruptionError(seg.name, start, authFailure(seal));
  return plain;
}

/**
 * The key id each segment of a directory is sealed under (null for a plain
 * segment), read from the headers alone: needs no key, changes nothing. This
 * is what proves that no segment (and so no hint: a hint is sealed under its
 * segment's key) still needs a key that is to be dropped.
 */
export async function segmentKeys(dir: string): Promise<Array<{ name: string; keyId: string | null }>> {
  const fs = await import('node:fs/promises');
  const out: Array<{ name: string; keyId: string | null }> = [];
  for (const name of (await fs.readdir(dir)).filter((n) => /^\d{16}\.log$/.test(n)).sort()) {
    const fh = await fs.open(`${dir}/${name}`, 'r');
    try {
      const head = Buffer.alloc(SEALED_SEGMENT_HEADER_SIZE);
      const { bytesRead } = await fh.read(head, 0, head.length, 0);
      const h = decodeSegmentHeader(head.subarray(0, bytesRead));
      out.push({ name, keyId: typeof h === 'string' || h.sealed === undefined ? null : h.sealed.keyId });
    } finally {
      await fh.close();
    }
  }
  return out;
}
