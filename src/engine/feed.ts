/**
 * Replay of committed batches from the log, for the store's change feed
 * (docs/api.md, "Change feed"): a watcher that asks for changes since a
 * sequence number older than what it holds in memory gets them from here.
 */
import { CorruptionError } from './errors.js';
import { type DecodedEntry, Op, SegmentKind } from './format.js';
import type { FileOps } from './fileops.js';
import type { Segment } from './segment.js';
import { SegmentScanner, Yielder } from './scanner.js';
import { plainValue } from './codec.js';

export type BatchVisitor = (seq: number, entries: readonly DecodedEntry[], buf: Buffer) => void;

/** Batches up to this sequence number may have lost entries to compaction (see replay). */
export function replayFloor(segments: readonly Segment[]): number {
  let floor = 0;
  for (const s of segments) if (s.covers > floor) floor = s.covers;
  return floor;
}

/**
 * Replays the batches with sequence numbers in (after, upto] from the log,
 * in order, as (seq, entries, buffer) where each entry's value lies in the
 * buffer at valueOffset. Resolves false when the log can no longer replay
 * that range exactly: compaction has dropped deletions and overwritten
 * versions up to replayFloor(), or a segment was compacted away meanwhile.
 *
 * The segments are pinned (Segment.readers) for the whole replay, so a file
 * retired meanwhile stays open and readable. One retired by a compression
 * rewrite (recode.ts; it has a forward) holds exactly the batches its rewrite
 * holds, so the replay reads on from it; only compaction loses batches.
 */
export async function replay(fs: FileOps, segments: readonly Segment[], after: number, upto: number, visit: BatchVisitor): Promise<boolean> {
  if (after < replayFloor(segments)) return false;
  const segs = segments.slice();
  for (const s of segs) s.readers++;
  try {
    for (const s of segs) {
      if (s.kind !== SegmentKind.Log || s.maxSeq <= after) continue;
      if (compactedAway(s)) return false;
      const r = await replaySegment(fs, s, after, upto, visit);
      if (r !== 'more') return r === 'done';
    }
  } catch (err) {
    if (segs.some(compactedAway)) return false;
    throw err;
  } finally {
    for (const s of segs) {
      s.readers--;
      if (s.retired && s.readers === 0) void s.closeQuietly(fs);
    }
  }
  return true;
}

/** Retired by compaction, whose output may have dropped batches, rather than by a compression rewrite, whose output holds them all. */
function compactedAway(s: Segment): boolean {
  return s.retired && s.forward === undefined;
}

/** One segment's part of a replay: 'done' past `upto`, 'bad' on damage, 'more' at its end. */
async function replaySegment(fs: FileOps, s: Segment, after: number, upto: number, visit: BatchVisitor): Promise<'done' | 'bad' | 'more'> {
  const scanner = new SegmentScanner(fs, s, s.size);
  const yielder = Yielder.background();
  for (;;) {
    const step = await scanner.next();
    if (step.kind === 'end') return 'more';
    if (step.kind === 'bad') return 'bad';
    const seq = step.batch.seq;
    if (seq > upto) return 'done';
    if (seq > after) {
      if (s.codecs) {
        const plain = plainEntries(s, step.batch.entries, step.buf);
        visit(seq, plain.entries, plain.buf);
      } else visit(seq, step.batch.entries, step.buf);
    }
    await yielder.maybe();
  }
}

/** A batch's entries with their values decoded (a segment with codec bytes), in a buffer of their own. */
function plainEntries(seg: Segment, entries: readonly DecodedEntry[], buf: Buffer): { entries: DecodedEntry[]; buf: Buffer } {
  const parts: Buffer[] = [];
  const out: DecodedEntry[] = [];
  let off = 0;
  for (const en of entries) {
    if (en.op !== Op.Put) {
      out.push({ ...en, valueOffset: off, valueLength: 0 });
      continue;
    }
    const v = plainValue(buf.subarray(en.valueOffset, en.valueOffset + en.valueLength));
    if (typeof v === 'string') throw new CorruptionError(seg.name, 0, v);
    parts.push(v);
    out.push({ ...en, valueOffset: off, valueLength: v.length });
    off += v.length;
  }
  return { entries: out, buf: Buffer.concat(parts, off) };
}
