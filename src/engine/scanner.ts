/**
 * Sequential reader of a segment file, batch by batch, in bounded chunks.
 * Used by recovery, hint building and compaction; none of them ever holds a
 * whole segment in memory or parses more than one chunk per event-loop turn.
 */
import { BATCH_HEADER_SIZE, decodeBatch, type DecodedBatch, Probe, probeBatch, SEGMENT_HEADER_SIZE } from './format.js';
import type { FileOps } from './fileops.js';
import type { Segment } from './segment.js';

const CHUNK = 1 << 20;
const BACKGROUND_SLICE_MS = 1;

/**
 * Yields to the event loop once `budgetMs` of synchronous work has passed.
 * Awaiting a scanner step is only a microtask unless it had to read, so
 * loops over batches call this between them to keep every stall short
 * (docs/engine.md, "Guarantees": no blocking of the event loop).
 */
export class Yielder {
  private last = performance.now();
  constructor(private readonly budgetMs = 4) {}

  /**
   * For work done while requests are being served (hint building, compaction):
   * every request in flight waits out a whole slice, so slices are kept short.
   * Recovery runs before the server listens and uses the default.
   */
  static background(): Yielder {
    return new Yielder(BACKGROUND_SLICE_MS);
  }

  async maybe(): Promise<void> {
    if (performance.now() - this.last < this.budgetMs) return;
    await new Promise<void>((r) => setImmediate(r));
    this.last = performance.now();
  }
}

export type ScanStep =
  | { kind: 'batch'; batch: DecodedBatch; pos: number; buf: Buffer; bufPos: number }
  | { kind: 'bad'; pos: number; reason: string }
  | { kind: 'end' };

export class SegmentScanner {
  private buf: Buffer = Buffer.alloc(0);
  /** File position of buf[0]. */
  private bufStart: number;
  private bufEnd = 0;
  private cur: number;
  private readonly probeOut = [0];

  constructor(
    private readonly fs: FileOps,
    private readonly seg: Segment,
    /** Bytes of the file to consider. */
    private readonly fileSize: number,
    start = SEGMENT_HEADER_SIZE,
  ) {
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
    if (this.cur >= this.fileSize) return { kind: 'end' };
    for (let attempt = 0; attempt < 3; attempt++) {
      const off = this.cur - this.bufStart;
      const r = probeBatch(this.buf, off, this.bufEnd, this.probeOut);
      if (r === Probe.Ok) {
        const len = this.probeOut[0];
        const batch = decodeBatch(this.buf, off, len);
        const pos = this.cur;
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

  /**
   * Looks for the next offset after `from` where a valid batch starts.
   * Returns -1 when none exists before the end of the file. Used to tell a
   * torn tail (nothing valid follows) from damage in the middle of a log.
   * On success the scanner continues from that batch.
   */
  async resync(from: number): Promise<number> {
    const out = this.probeOut;
    const win = 4 * CHUNK;
    let pos = from + 1;
    while (pos < this.fileSize) {
      const size = Math.min(this.fileSize - pos, win + 64);
      const b = Buffer.allocUnsafe(size);
      const got = await this.seg.read(this.fs, b, 0, size, pos);
      if (got === 0) break;
      const stop = Math.min(got, win);
      for (let o = 0; o < stop; o++) {
        let r = probeBatch(b, o, got, out);
        if (r === Probe.Short) {
          if (got - o < BATCH_HEADER_SIZE) continue;
          // The header is plausible but the batch runs past this window:
          // read exactly the bytes it claims, if the file has them.
          const len = b.readUInt32LE(o + 4);
          if (pos + o + len > this.fileSize) continue;
          const whole = Buffer.allocUnsafe(len);
          if ((await this.seg.read(this.fs, whole, 0, len, pos + o)) !== len) continue;
          r = probeBatch(whole, 0, len, out);
        }
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
