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
 */
export class Entry {
  seg: Segment | undefined;
  /** Absolute offset of the value inside the segment file. */
  vpos: number;
  vlen: number;
  /** Bytes of the whole log entry (header + key + value), for dead-space accounting. */
  size: number;
  /** Absolute expiry in ms since the epoch; 0 = never. */
  exp: number;
  /** crc32 of the value (as int32), checked whenever the value is read from its segment. */
  crc: number;
  val: Buffer | undefined;
  /** Decoded form of `val`, produced by `dec`. */
  memo: unknown;
  dec: Decoder<unknown> | undefined;
  flags: number;
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
    this.vlen = vlen;
    this.size = size;
    this.exp = exp;
    this.crc = crc;
    this.val = undefined;
    this.memo = undefined;
    this.dec = undefined;
    this.flags = 0;
    this.seq = seq;
    this.qpos = 0;
  }
}
