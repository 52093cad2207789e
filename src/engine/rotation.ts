/**
 * The active log segment: which one is appended to at open, when a group of
 * batches no longer fits in it, and the new segment that takes its place.
 */
import { encodeSegmentHeader, SegmentKind } from './format.js';
import { removeFile } from './fileops.js';
import { ID_STEP, Segment } from './segment.js';
import { SegmentSeal } from './seal.js';
import type { EngineCore } from './core.js';
import type { HintScheduler } from './hint-scheduler.js';

export class Rotation {
  /** What happens to a segment that stops being appended to, in place of building its hint (compression: recode.ts). */
  onRetire: ((seg: Segment) => void) | undefined = undefined;

  constructor(
    private readonly core: EngineCore,
    readonly segmentBytes: number,
    private readonly hints: HintScheduler,
  ) {}

  /** Continues the newest log segment if it has room, else starts a new one; `nextSeq` goes into a new one's header. */
  async openActive(appendTo: Segment | undefined, nextSeq: number): Promise<void> {
    const core = this.core;
    // Under encryption a segment found on disk is never appended to: the
    // sequence numbers of batches lost in a crash are handed out again, and
    // under that segment's salt they would repeat a nonce (seal.ts).
    // Log segments are written without codec bytes whatever the setting (values
    // are compressed when the segment is rewritten, recode.ts): a tail with them,
    // written by an earlier build, is left as it is and a new segment started.
    if (appendTo !== undefined && appendTo.size < this.segmentBytes && core.keyring === undefined && !appendTo.codecs) {
      await core.fs.close(appendTo.fd);
      appendTo.fd = await core.fs.open(appendTo.path, 'r+');
      core.active = appendTo;
      return;
    }
    const segs = core.segments;
    const maxId = segs.length > 0 ? segs[segs.length - 1].id : 0;
    core.active = await this.create((Math.floor(maxId / ID_STEP) + 1) * ID_STEP, nextSeq);
    segs.push(core.active);
  }

  /** Whether `bytes` more must go to a new segment (an empty segment takes any group). */
  full(seg: Segment, bytes: number): boolean {
    return seg.size + bytes > this.segmentBytes && seg.size > seg.headerSize;
  }

  /** Syncs the active segment, starts the next one and schedules the old one's hint. */
  async rotate(nextSeq: number): Promise<Segment> {
    const core = this.core;
    const old = core.active;
    await core.fs.fdatasync(old.fd);
    const next = await this.create(old.id + ID_STEP, nextSeq);
    core.segments.push(next);
    core.active = next;
    if (this.onRetire !== undefined) this.onRetire(old);
    else this.hints.later(old);
    return next;
  }

  /** A new log segment with its header durably written and its name in the directory. */
  private async create(id: number, nextSeq: number): Promise<Segment> {
    const { dir, fs, keyring, log } = this.core;
    const seg = new Segment(dir, id, SegmentKind.Log);
    if (keyring !== undefined) seg.seal = SegmentSeal.fresh(keyring.current);
    // Sealed, the group writer seals one unit per group commit (seal.ts, sealGroup).
    seg.groups = seg.seal !== undefined;
    const header = encodeSegmentHeader(SegmentKind.Log, nextSeq, seg.seal, false, seg.groups);
    seg.headerSize = header.length;
    seg.fd = await fs.open(seg.path, 'wx+');
    try {
      await fs.writeAll(seg.fd, header, 0, header.length, 0);
      await fs.fdatasync(seg.fd);
      await fs.syncDir(dir);
    } catch (err) {
      await seg.closeQuietly(fs);
      await removeFile(fs, seg.path, log);
      throw err;
    }
    seg.size = header.length;
    return seg;
  }
}
