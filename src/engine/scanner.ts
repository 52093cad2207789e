/**
 * Sequential reader of a segment file, batch by batch, in bounded chunks.
 * Used by recovery, hint building and compaction; none of them ever holds a
 * whole segment in memory or parses more than one chunk per event-loop turn.
 */
import { BATCH_HEADER_SIZE, decodeBatch, type DecodedBatch, type DecodedEntry, entriesTile, Probe, probeBatch, readSeq, valueCrc } from './format.js';
import { performance } from 'node:perf_hooks';
import type { FileOps } from './fileops.js';
import type { Segment } from './segment.js';
import { authFailure, TAG_BYTES } from './seal.js';

const CHUNK = 1 << 20;
const BACKGROUND_SLICE_MS = 1;
/**
 * The share of the event loop low-priority work (recode.ts) takes while
 * other work keeps the loop busy: a slice, then a pause nine times as long.
 */
const LOW_PRIORITY_SHARE = 0.1;
/** Other work's active time during a pause, as a fraction of the slice before it, above which the loop counts as busy. */
const BUSY_FRACTION = 0.2;

/**
 * Yields to the event loop once `budgetMs` of synchronous work has passed.
 * Awaiting a scanner step is only a microtask unless it had to read, so
 * loops over batches call this between them to keep every stall short
 * (docs/engine.md, "Guarantees": no blocking of the event loop).
 */
export class Yielder {
  private last = performance.now();
  /** Whether other work kept the loop busy during the last pause (low priority only). */
  private othersBusy = true;
  constructor(
    private readonly budgetMs = 4,
    private readonly share = 1,
    private readonly hurry: () => boolean = () => false,
  ) {}

  /**
   * For work done while requests are being served (hint building, compaction):
   * every request in flight waits out a whole slice, so slices are kept short.
   * Recovery runs before the server listens and uses the default.
   */
  static background(): Yielder {
    return new Yielder(BACKGROUND_SLICE_MS);
  }

  /**
   * For work whose only gain is disk space (rewriting segments compressed):
   * while requests keep the loop busy it takes LOW_PRIORITY_SHARE of it, so
   * a server saturated by writes pays at most that for it and the work waits
   * for quieter times; on an idle loop, or while `hurry()` says other work
   * waits for it, it runs as `background` does.
   */
  static lowPriority(hurry?: () => boolean): Yielder {
    return new Yielder(BACKGROUND_SLICE_MS, LOW_PRIORITY_SHARE, hurry);
  }

  async maybe(): Promise<void> {
    const spent = performance.now() - this.last;
    if (spent < this.budgetMs) return;
    if (this.share >= 1 || this.hurry()) {
      await new Promise<void>((r) => setImmediate(r));
    } else {
      // Event-loop activity during the pause is other work's: this work is not running.
      const before = performance.eventLoopUtilization();
      const pause = this.othersBusy ? spent * (1 / this.share - 1) : 0;
      await new Promise<void>((r) => (pause > 0 ? setTimeout(r, pause) : setImmediate(r)));
      this.othersBusy = performance.eventLoopUtilization(before).active > spent * BUSY_FRACTION;
    }
    this.last = performance.now();
  }
}

/**
 * What a directory entry keeps to verify a value read back from disk
 * (Entry.crc): its CRC-32, or in a sealed segment the value's offset from
 * the start of its batch, since there the whole batch is read and its tag
 * checked (reader.ts, readSealedValue). `buf` and `bufPos` as a scan step gives them.
 */
export function valueCheck(seg: Segment, buf: Buffer, bufPos: number, en: DecodedEntry): number {
  // A sealed step's buf is its whole opened unit (a batch, or a group's batches), read whole on a miss.
  if (seg.seal !== undefined) return en.valueOffset;
  return valueCrc(buf, en.valueOffset, en.valueOffset + en.valueLength);
}

/**
 * A step's `buf` holds the batch at `bufPos` with its entries in clear: in a
 * sealed segment it is the opened sealed unit, which starts at `pos - bufPos`
 * in the file (a batch: bufPos 0; a batch of a group unit: its offset in the
 * unit), whose entries lie at the same offsets as their ciphertext, so
 * `pos + (valueOffset - bufPos)` is a value's file position either way.
 */
export type ScanStep =
  { kind: 'batch'; batch: DecodedBatch; pos: number; buf: Buffer; bufPos: number } | { kind: 'bad'; pos: number; reason: string } | { kind: 'end' };

export class SegmentScanner {
  private buf: Buffer = Buffer.alloc(0);
  /** File position of buf[0]. */
  private bufStart: number;
  private bufEnd = 0;
  private cur: number;
  private readonly probeOut = [0];
  private readonly tagBytes: number;
  /** An opened group unit (seal.ts, sealGroup) whose batches are still being handed out: its file position, bytes, next batch. */
  private unitPos = 0;
  private unit: Buffer | undefined = undefined;
  private unitAt = 0;

  constructor(
    private readonly fs: FileOps,
    private readonly seg: Segment,
    /** Bytes of the file to consider. */
    private readonly fileSize: number,
    start = seg.headerSize,
  ) {
    this.tagBytes = seg.seal === undefined ? 0 : TAG_BYTES;
    this.bufStart = start;
    this.cur = start;
  }

  /** File position of the next batch. */
  get position(): number {
    return this.cur;
  }

  private async fill(need: number): Promise<void> {
    const keep = this.bufStart + this.bufEnd - this.cur;
    const want = Math.max(CHUNK, need);
    const avail = this.fileSize - this.cur;
    const size = Math.min(want, avail);
    const next = Buffer.allocUnsafe(size);
    if (keep > 0) this.buf.copy(next, 0, this.cur - this.bufStart, this.cur - this.bufStart + keep);
    const got = size > keep ? await this.seg.read(this.fs, next, keep, size - keep, this.cur + keep) : 0;
    this.buf = next;
    this.bufStart = this.cur;
    this.bufEnd = keep + got;
  }

  async next(): Promise<ScanStep> {
    if (this.unit !== undefined) return this.nextOfUnit(this.unit);
    if (this.cur >= this.fileSize) return { kind: 'end' };
    for (let attempt = 0; attempt < 3; attempt++) {
      const off = this.cur - this.bufStart;
      const r = probeBatch(this.buf, off, this.bufEnd, this.probeOut, this.tagBytes);
      if (r === Probe.Ok) {
        const len = this.probeOut[0];
        const pos = this.cur;
        const seal = this.seg.seal;
        if (seal !== undefined) {
          const plain = seal.openBatch(this.buf, off, len);
          if (plain === undefined) return { kind: 'bad', pos, reason: authFailure(seal) };
          if (this.seg.groups) return this.openUnit(plain, pos, len);
          if (!entriesTile(plain, 0, plain.length, plain.readUInt32LE(16)))
            return { kind: 'bad', pos, reason: 'structure mismatch inside an authenticated batch' };
          const batch = decodeBatch(plain, 0, plain.length);
          batch.length = len;
          this.cur += len;
          return { kind: 'batch', batch, pos, buf: plain, bufPos: 0 };
        }
        const batch = decodeBatch(this.buf, off, len);
        this.cur += len;
        return { kind: 'batch', batch, pos, buf: this.buf, bufPos: off };
      }
      if (r === Probe.Bad) return { kind: 'bad', pos: this.cur, reason: 'checksum or structure mismatch' };
      // Short: read more, unless the file itself ends here.
      const have = this.bufEnd - off;
      if (this.cur + have >= this.fileSize) {
        return { kind: 'bad', pos: this.cur, reason: `batch runs past the end of the file (${this.fileSize - this.cur} bytes left)` };
      }
      let need = 20;
      if (have >= 8) need = Math.max(need, this.buf.readUInt32LE(off + 4));
      await this.fill(need);
    }
    return { kind: 'bad', pos: this.cur, reason: 'could not read a whole batch' };
  }

  /** An authenticated group unit: checked whole (its batches tile it), then handed out batch by batch. */
  private openUnit(plain: Buffer, pos: number, len: number): ScanStep {
    let at = BATCH_HEADER_SIZE;
    const n = plain.readUInt32LE(16);
    let seq = 0;
    for (let i = 0; i < n; i++) {
      const blen = at + BATCH_HEADER_SIZE <= plain.length ? plain.readUInt32LE(at + 4) : 0;
      const s = blen > 0 ? readSeq(plain, at + 8) : 0;
      if (
        blen < BATCH_HEADER_SIZE ||
        at + blen > plain.length ||
        s <= seq ||
        (i === 0 && s !== readSeq(plain, 8)) ||
        !entriesTile(plain, at, blen, plain.readUInt32LE(at + 16))
      )
        return { kind: 'bad', pos, reason: 'structure mismatch inside an authenticated unit' };
      seq = s;
      at += blen;
    }
    if (at !== plain.length) return { kind: 'bad', pos, reason: 'structure mismatch inside an authenticated unit' };
    this.cur = pos + len;
    this.unit = plain;
    this.unitPos = pos;
    this.unitAt = BATCH_HEADER_SIZE;
    return this.nextOfUnit(plain);
  }

  private nextOfUnit(plain: Buffer): ScanStep {
    const at = this.unitAt;
    const blen = plain.readUInt32LE(at + 4);
    const batch = decodeBatch(plain, at, blen);
    this.unitAt = at + blen;
    if (this.unitAt >= plain.length) this.unit = undefined;
    return { kind: 'batch', batch, pos: this.unitPos + at, buf: plain, bufPos: at };
  }

  /**
   * Looks for the next offset after `from` where a valid batch starts.
   * Returns -1 when none exists before the end of the file. Used to tell a
   * torn tail (nothing valid follows) from damage in the middle of a log.
   * On success the scanner continues from that batch.
   */
  async resync(from: number): Promise<number> {
    const out = this.probeOut;
    const win = 4 * CHUNK;
    this.unit = undefined;
    let pos = from + 1;
    while (pos < this.fileSize) {
      const size = Math.min(this.fileSize - pos, win + 64);
      const b = Buffer.allocUnsafe(size);
      const got = await this.seg.read(this.fs, b, 0, size, pos);
      if (got === 0) break;
      const stop = Math.min(got, win);
      for (let o = 0; o < stop; o++) {
        let r = probeBatch(b, o, got, out, this.tagBytes);
        let whole: Buffer | undefined;
        if (r === Probe.Short) {
          if (got - o < BATCH_HEADER_SIZE) continue;
          // The header is plausible but the batch runs past this window:
          // read exactly the bytes it claims, if the file has them.
          const len = b.readUInt32LE(o + 4);
          if (pos + o + len > this.fileSize) continue;
          whole = Buffer.allocUnsafe(len);
          if ((await this.seg.read(this.fs, whole, 0, len, pos + o)) !== len) continue;
          r = probeBatch(whole, 0, len, out, this.tagBytes);
        }
        // In a sealed segment only a batch that authenticates counts as valid.
        if (
          r === Probe.Ok &&
          this.seg.seal !== undefined &&
          (whole === undefined ? this.seg.seal.openBatch(b, o, out[0]) : this.seg.seal.openBatch(whole, 0, out[0])) === undefined
        )
          continue;
        if (r === Probe.Ok) {
          this.cur = pos + o;
          this.buf = Buffer.alloc(0);
          this.bufStart = this.cur;
          this.bufEnd = 0;
          return this.cur;
        }
      }
      pos += stop;
    }
    return -1;
  }
}
