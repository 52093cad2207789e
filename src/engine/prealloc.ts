/**
 * Zeros written ahead of the active segment's end, so that a group commit
 * overwrites blocks the file already has instead of growing it.
 *
 * An append that grows the file changes its length, and the `fdatasync` that
 * follows must then commit the filesystem's journal as well as the data; an
 * overwrite of blocks that are already allocated and written flushes only the
 * data. On ext4 that halves the sync (docs/benchmarks.md, "Zeros ahead of the
 * log"), and under `--fsync always` a durable write's throughput is set by the
 * length of one sync, not by CPU. PostgreSQL zero-fills its WAL segments for
 * the same reason (`wal_init_zero`).
 *
 * The zeros are never data: recovery reads a log segment that ends in zeros as
 * ending where they start (recovery.ts, zeroTail), a segment that stops being
 * appended to is cut to its written length (retire), and so is the active one
 * at a clean close. Only a crash leaves zeros behind, at the newest segment's
 * end, and the next open cuts them off as it cuts a torn write.
 *
 * The zeroing is written and synced in the thread pool, beside group commits.
 * It never overlaps a group: it starts at the file's end, past anything
 * written, and a group that would reach into the range being zeroed waits for
 * it first (clear). A failed zeroing is logged and tried again a chunk later;
 * it costs only speed.
 */
import type { Logger } from '../log.js';
import type { FileOps } from './fileops.js';
import type { Segment } from './segment.js';

/** Bytes zeroed at a time; the next chunk starts once half of the last is used. */
export const PREALLOC_CHUNK = 4 * 1024 * 1024;

let zeros: Buffer | undefined;

export class Preallocator {
  private seg: Segment | undefined = undefined;
  /** The file's length as this writer knows it: written bytes, then zeros. */
  private end = 0;
  /** The zeroing in flight, and where it starts. */
  private pending: Promise<void> | undefined = undefined;
  private pendingFrom = 0;
  /** Bumped when the file is cut or the segment changes: a zeroing from before leaves `end` alone. */
  private epoch = 0;
  /** After a failed zeroing, the written length at which to try again. */
  private retryAt = 0;

  constructor(
    private readonly fs: FileOps,
    private readonly log: Logger,
    /** 0 turns preallocation off. */
    private readonly chunk: number,
    /** No zeros past this length (the segment size rotation allows). */
    private readonly limit: number,
  ) {}

  /** `seg` is the active segment from now on; `fileSize` is its length on disk. */
  track(seg: Segment, fileSize: number): void {
    this.seg = seg;
    this.end = fileSize;
    this.epoch++;
    this.retryAt = 0;
  }

  /**
   * What a group about to be written at [pos, pos + len) of `seg` must wait
   * for: a zeroing in flight that it would reach into. Usually nothing.
   */
  clear(seg: Segment, pos: number, len: number): Promise<void> | undefined {
    if (seg !== this.seg || this.pending === undefined) return undefined;
    return pos + len > this.pendingFrom ? this.pending : undefined;
  }

  /** The active segment's written length is now `written`: zero the next chunk when half of the last one is used. */
  ahead(seg: Segment, written: number): void {
    if (this.chunk === 0 || seg !== this.seg || this.pending !== undefined || seg.fd < 0) return;
    if (written > this.end) this.end = written;
    if (this.end - written > this.chunk / 2 || written < this.retryAt) return;
    const from = this.end;
    const to = Math.min(from + this.chunk, this.limit);
    if (to <= from) return;
    const epoch = this.epoch;
    const fd = seg.fd;
    this.pendingFrom = from;
    zeros ??= Buffer.alloc(PREALLOC_CHUNK);
    const buf = zeros.length >= to - from ? zeros : Buffer.alloc(to - from);
    this.pending = (async () => {
      try {
        await this.fs.writeAll(fd, buf, 0, to - from, from);
        await this.fs.fdatasync(fd);
        if (this.epoch === epoch) this.end = to;
      } catch (err) {
        if (this.epoch === epoch) this.retryAt = written + this.chunk;
        this.log(
          'warn',
          `${seg.name}: could not write zeros ahead of the log at ${from} (${String((err as Error)?.message ?? err)}); group commits append instead`,
        );
      } finally {
        this.pending = undefined;
      }
    })();
  }

  /** A failed write was cut off at `len`: whatever was zeroed past it is gone. */
  cut(seg: Segment, len: number): void {
    if (seg !== this.seg) return;
    this.end = len;
    this.epoch++;
  }

  /**
   * `seg` stops being appended to (rotation, close): once no zeroing is in
   * flight, its file is cut to its written length, so only the active
   * segment ever ends in zeros. The caller syncs it.
   */
  async retire(seg: Segment): Promise<void> {
    if (seg !== this.seg) return;
    while (this.pending !== undefined) await this.pending;
    this.seg = undefined;
    this.epoch++;
    this.end = 0;
    // The file's own length, not `end`: a zeroing that failed part-way may have grown it.
    if (seg.fd >= 0 && (await this.fs.fstatSize(seg.fd)) > seg.size) await this.fs.ftruncate(seg.fd, seg.size);
  }
}
