/**
 * One version of one key as the key directory holds it (keydir.ts), the
 * flags the directory and its value cache keep on it, and the decoder type
 * that turns its stored bytes into what the cache holds beside them.
 */
import type { Segment } from './segment.js';

/**
 * Turns stored bytes into whatever the caller wants cached next to them. The
 * result must not refer to `value` (it may be a slice of a larger read, and
 * the engine keeps only the result once the bytes are in the log: KeyDir.dropBytes).
 */
export type Decoder<T> = (value: Buffer, key: string) => T;

export const FLAG_CURRENT = 1;
/** Set when the cached value is used; CLOCK eviction gives such entries a second chance. */
export const FLAG_REF = 2;
/** The entry has a slot in the cache queue (so it is never queued twice). */
export const FLAG_QUEUED = 4;

/**
 * One version of one key. `seg` is undefined while the batch that wrote it
 * waits for the log flush; such an entry always holds its value in cache.
 *
 * The directory holds one of these per key (a million-element collection
 * holds a million), so every field costs 8 bytes a key. An entry's size
 * less its value length is its header and key (format.ts, entrySize) and
 * fits in 17 bits, so it shares one small integer with the three flags:
 * `size`, `vlen` and `flags` read and write as independent fields.
 */
export class Entry {
  seg: Segment | undefined;
  /** Absolute offset of the value inside the segment file. */
  vpos: number;
  /** Stored value length (see `vlen`). */
  private len: number;
  /** (size - vlen) << 3 | flags. */
  private meta: number;
  /** Absolute expiry in ms since the epoch; 0 = never. */
  exp: number;
  /** crc32 of the value (as int32), checked whenever the value is read from its segment. */
  crc: number;
  val: Buffer | undefined;
  /** Decoded form of `val`, produced by `dec`. */
  memo: unknown;
  dec: Decoder<unknown> | undefined;
  /**
   * Sequence number of the batch that wrote this version: the object's
   * version (docs/format.md, "Sequence numbers"). Kept through recovery,
   * hints and compaction, so it never changes while the version lives.
   */
  seq: number;
  /**
   * Position in the cache queue (absolute: the queue's array index plus its
   * base), meaningful while FLAG_QUEUED is set; lets a new version take over
   * the slot of the version it replaces (KeyDir.set).
   */
  qpos: number;

  constructor(seg: Segment | undefined, vpos: number, vlen: number, size: number, exp: number, crc: number, seq: number) {
    this.seg = seg;
    this.vpos = vpos;
    this.len = vlen;
    this.meta = (size - vlen) << 3;
    this.exp = exp;
    this.crc = crc;
    this.val = undefined;
    this.memo = undefined;
    this.dec = undefined;
    this.seq = seq;
    this.qpos = 0;
  }

  /** Bytes of the value as stored in its segment. Setting it keeps `size`. */
  get vlen(): number {
    return this.len;
  }

  set vlen(v: number) {
    this.meta = ((this.size - v) << 3) | (this.meta & 7);
    this.len = v;
  }

  /** Bytes of the whole log entry (header + key + value), for dead-space accounting. Setting it keeps `vlen`. */
  get size(): number {
    return (this.meta >> 3) + this.len;
  }

  set size(v: number) {
    this.meta = ((v - this.len) << 3) | (this.meta & 7);
  }

  /** FLAG_CURRENT, FLAG_REF, FLAG_QUEUED. */
  get flags(): number {
    return this.meta & 7;
  }

  set flags(f: number) {
    this.meta = (this.meta & ~7) | (f & 7);
  }
}
