/**
 * One segment file of the log, open for reads for as long as the directory
 * may point into it. Segment ids order replay: log segments take ids that
 * are multiples of ID_STEP; a compaction of a run of segments ending at id X
 * writes its output under the next free id above X, so the output replays
 * after every segment it replaced and before every segment written later.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SEGMENT_HEADER_SIZE, SegmentKind } from './format.js';
import type { SegmentSeal } from './seal.js';
import { DataDirError } from './errors.js';
import type { FileOps } from './fileops.js';
import type { Entry } from './entry.js';

export const ID_STEP = 1024;

export function segmentFileName(id: number): string {
  return `${String(id).padStart(16, '0')}.log`;
}

export function hintFileName(id: number): string {
  return `${String(id).padStart(16, '0')}.hint`;
}

/** Parses "<16 digits>.log" / ".hint"; anything else is not ours. */
export function parseFileName(name: string): { id: number; ext: 'log' | 'hint' } | undefined {
  const m = /^(\d{16})\.(log|hint)$/.exec(name);
  if (m === null) return undefined;
  return { id: Number(m[1]), ext: m[2] as 'log' | 'hint' };
}

/**
 * Throws unless `dir` exists and holds at least one log segment. Repair uses
 * it so a mistyped path fails instead of being created empty and "repaired".
 */
export async function assertHoldsData(dir: string): Promise<void> {
  const abs = path.resolve(dir);
  let names: string[];
  try {
    names = await fs.promises.readdir(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'ENOTDIR' ? 'is not a directory' : `cannot be read (${code ?? String(err)})`;
    throw new DataDirError(`data directory ${abs} ${why}; nothing to repair (check --data-dir)`);
  }
  if (!names.some((n) => parseFileName(n)?.ext === 'log')) {
    throw new DataDirError(`data directory ${abs} holds no Pithos data (no ${'0'.repeat(16)}.log-style segment files); nothing to repair (check --data-dir)`);
  }
}

export class Segment {
  /** Bytes of the file that are written (for the active segment: acknowledged or in flight). */
  size = 0;
  /** Sum of Entry.size of current directory entries that point here. */
  live = 0;
  /** Highest batch sequence number stored here. */
  maxSeq = 0;
  /**
   * Compacted segment: the highest sequence number of the segments it
   * replaced (its header's base_seq − 1). Batches up to it may have lost
   * deletions and overwritten versions, so the change feed cannot replay them
   * exactly (docs/api.md, "Change feed"). 0 for log segments.
   */
  covers = 0;
  /** Reads in flight; the fd is closed only when this drops to 0 after retirement. */
  readers = 0;
  retired = false;
  compacting = false;
  hasHint = false;
  fd = -1;
  /** Bytes of the header: 16 (version 1) or 52 (version 2, sealed). */
  headerSize = SEGMENT_HEADER_SIZE;
  /** Set when the segment is sealed: its key and salt (docs/format.md, "Encryption"). */
  seal: SegmentSeal | undefined = undefined;
  /** Every Put value here starts with a codec byte (codec.ts). */
  codecs = false;
  /** Sealed, one unit per group commit (seal.ts, sealGroup) rather than one per batch. */
  groups = false;
  /**
   * While a compression rewrite copies this file (recode.ts): the versions a
   * rolled-back write put back pointing here, which the rewrite moves with
   * the ones it copied while current.
   */
  putBack: Entry[] | undefined = undefined;
  /**
   * Once a compression rewrite has replaced this file (recode.ts): points a
   * version that still points here at its copy in the new file. A write
   * rolled back later puts versions back through it (writer.ts, failFrom).
   */
  forward: ((e: Entry) => void) | undefined = undefined;

  constructor(
    readonly dir: string,
    readonly id: number,
    readonly kind: SegmentKind,
  ) {}

  get path(): string {
    return path.join(this.dir, segmentFileName(this.id));
  }

  get hintPath(): string {
    return path.join(this.dir, hintFileName(this.id));
  }

  get name(): string {
    return segmentFileName(this.id);
  }

  /** Bytes that no current entry needs (overwritten, deleted, expired, headers). */
  dead(headerSize: number): number {
    return Math.max(0, this.size - headerSize - this.live);
  }

  /** Reads `len` bytes at `pos`, keeping the fd open while the read is in flight. */
  async read(fs: FileOps, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
    this.readers++;
    try {
      let done = 0;
      while (done < len) {
        const n = await fs.read(this.fd, buf, off + done, len - done, pos + done);
        if (n === 0) break;
        done += n;
      }
      return done;
    } finally {
      this.readers--;
      if (this.retired && this.readers === 0) void this.closeQuietly(fs);
    }
  }

  async closeQuietly(fs: FileOps): Promise<void> {
    if (this.fd < 0 || this.readers > 0) return;
    const fd = this.fd;
    this.fd = -1;
    try {
      await fs.close(fd);
    } catch {
      // A failed close of a read-only descriptor loses nothing.
    }
  }
}
