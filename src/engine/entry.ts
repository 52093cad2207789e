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
 * Bits of Entry.meta below its size field: the three flags above, how `held`
 * is to be read (2 bits), and the decoder's number (8 bits, DECODERS).
 */
const META_BITS = 13;
const FLAGS_MASK = 7;
const DEC_SHIFT = 5;
const DEC_MASK = 255 << DEC_SHIFT;
const LOW_MASK = (1 << META_BITS) - 1;
/** `held` is the value's bytes, with no decoded form. */
const HELD_RAW = 8;
/** `held` is a Both: the bytes and their decoded form (a write not yet in the log). */
const HELD_BOTH = 16;

/**
 * Every decoder an entry has held a decoded form for, by number (0: none).
 * A process has a handful (one per kind of value: rows, records, scores…),
 * so an entry keeps 8 bits instead of an 8-byte pointer. Past 255 distinct
 * decoders a new one gets no number and its decoded forms are not cached
 * (ValueCache.cache keeps the bytes instead): slower, never wrong.
 */
const DECODERS: Array<Decoder<unknown> | undefined> = [undefined];
const DECODER_IDS = new Map<Decoder<unknown>, number>();

/** The number of `dec` (registering it), or 0 when there is none or no room. */
export function decoderId(dec: Decoder<unknown> | undefined): number {
  if (dec === undefined) return 0;
  let id = DECODER_IDS.get(dec);
  if (id === undefined) {
    if (DECODERS.length > 255) return 0;
    id = DECODERS.length;
    DECODERS.push(dec);
    DECODER_IDS.set(dec, id);
  }
  return id;
}

/** The bytes and the decoded form of a value held together; only while the bytes are not in the log, as a rule. */
class Both {
  constructor(
    readonly val: Buffer,
    readonly memo: unknown,
  ) {}
}

/** The version and expiry of an entry written with an expiry (Entry.vx). */
class Timed {
  constructor(
    readonly seq: number,
    readonly exp: number,
  ) {}
}

/**
 * One version of one key. `seg` is undefined while the batch that wrote it
 * waits for the log flush; such an entry always holds its value in cache.
 *
 * The directory holds one of these per key (a million-element collection
 * holds a million), so every field costs 8 bytes a key. An entry's size
 * less its value length is its header and key (format.ts, entrySize) and
 * fits in 17 bits, so it shares one small integer with the three flags:
 * `size`, `vlen` and `flags` read and write as independent fields. The
 * cached bytes and decoded form share one field too (`held`): an entry
 * whose write is in the log keeps one or the other (ValueCache.dropBytes),
 * so only a write still waiting for the log holds both, in a small pair.
 * Likewise the version and the expiry: nearly every entry has no expiry,
 * so `vx` is the version alone, and an entry with an expiry holds both in
 * a small pair (`seq` and `exp` read through it; neither ever changes).
 */
export class Entry {
  seg: Segment | undefined;
  /** Absolute offset of the value inside the segment file. */
  vpos: number;
  /** Stored value length (see `vlen`). */
  private len: number;
  /** (size - vlen) << META_BITS | decoder number << DEC_SHIFT | HELD_RAW or HELD_BOTH | flags. */
  private meta: number;
  /** crc32 of the value (as int32), checked whenever the value is read from its segment. */
  crc: number;
  /** The cached bytes (`val`) or decoded form (`memo`), or both in a Both; see `meta`. */
  private held: unknown;
  /** `seq` when there is no expiry, else a Timed holding `seq` and `exp`. */
  private readonly vx: number | Timed;
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
    this.meta = (size - vlen) << META_BITS;
    this.crc = crc;
    this.held = undefined;
    this.vx = exp === 0 ? seq : new Timed(seq, exp);
    this.qpos = 0;
  }

  /** Absolute expiry in ms since the epoch; 0 = never. */
  get exp(): number {
    const v = this.vx;
    return typeof v === 'number' ? 0 : v.exp;
  }

  /**
   * Sequence number of the batch that wrote this version: the object's
   * version (docs/format.md, "Sequence numbers"). Kept through recovery,
   * hints and compaction, so it never changes while the version lives.
   */
  get seq(): number {
    const v = this.vx;
    return typeof v === 'number' ? v : v.seq;
  }

  /** Bytes of the value as stored in its segment. Setting it keeps `size`. */
  get vlen(): number {
    return this.len;
  }

  set vlen(v: number) {
    this.meta = ((this.size - v) << META_BITS) | (this.meta & LOW_MASK);
    this.len = v;
  }

  /** Bytes of the whole log entry (header + key + value), for dead-space accounting. Setting it keeps `vlen`. */
  get size(): number {
    return (this.meta >> META_BITS) + this.len;
  }

  set size(v: number) {
    this.meta = ((v - this.len) << META_BITS) | (this.meta & LOW_MASK);
  }

  /** FLAG_CURRENT, FLAG_REF, FLAG_QUEUED. */
  get flags(): number {
    return this.meta & FLAGS_MASK;
  }

  set flags(f: number) {
    this.meta = (this.meta & ~FLAGS_MASK) | (f & FLAGS_MASK);
  }

  /** The cached stored bytes (ValueCache). */
  get val(): Buffer | undefined {
    const m = this.meta;
    if ((m & HELD_RAW) !== 0) return this.held as Buffer;
    if ((m & HELD_BOTH) !== 0) return (this.held as Both).val;
    return undefined;
  }

  set val(v: Buffer | undefined) {
    this.hold(v, this.memo);
  }

  /** Decoded form of the value, produced by `dec` (ValueCache). */
  get memo(): unknown {
    const m = this.meta;
    if ((m & HELD_RAW) !== 0) return undefined;
    if ((m & HELD_BOTH) !== 0) return (this.held as Both).memo;
    return this.held;
  }

  set memo(x: unknown) {
    this.hold(this.val, x);
  }

  /** The decoder that produced `memo`. Setting one that has no number (decoderId) sets undefined. */
  get dec(): Decoder<unknown> | undefined {
    return DECODERS[(this.meta & DEC_MASK) >> DEC_SHIFT];
  }

  set dec(d: Decoder<unknown> | undefined) {
    this.meta = (this.meta & ~DEC_MASK) | (decoderId(d) << DEC_SHIFT);
  }

  /** Sets `val` and `memo` at once. */
  hold(val: Buffer | undefined, memo: unknown): void {
    let m = this.meta & ~(HELD_RAW | HELD_BOTH);
    if (val === undefined) {
      this.held = memo;
    } else if (memo === undefined) {
      this.held = val;
      m |= HELD_RAW;
    } else {
      this.held = new Both(val, memo);
      m |= HELD_BOTH;
    }
    this.meta = m;
  }
}
