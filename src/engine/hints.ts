/**
 * Hint files for immutable segments: written once a segment stops being
 * appended to, so recovery can rebuild the directory without reading values.
 * A missing or damaged hint only costs time: recovery scans the segment.
 */
import { HintWriter, Op } from './format.js';
import { type FileOps, removeFile, writeFileDurably } from './fileops.js';
import type { Segment } from './segment.js';
import { SegmentScanner, valueCheck, Yielder } from './scanner.js';
import { sealHint } from './seal.js';

/** Scans an immutable segment and writes its hint file. */
export async function buildHint(f: FileOps, seg: Segment): Promise<void> {
  const size = seg.size;
  const scanner = new SegmentScanner(f, seg, size);
  const hint = new HintWriter();
  let maxSeq = 0;
  const yielder = Yielder.background();
  for (;;) {
    await yielder.maybe();
    if (seg.retired) return; // compacted away meanwhile
    const step = await scanner.next();
    if (step.kind === 'end') break;
    if (step.kind === 'bad') throw new Error(`${seg.name} at ${step.pos}: ${step.reason}`);
    const { batch, pos, buf, bufPos } = step;
    if (batch.seq > maxSeq) maxSeq = batch.seq;
    for (const en of batch.entries) {
      const put = en.op === Op.Put;
      const valuePos = put ? pos + (en.valueOffset - bufPos) : 0;
      const crc = put ? valueCheck(seg, buf, bufPos, en) : 0;
      hint.add(en.op, en.key, valuePos, en.valueLength, en.size, en.expiresAt, crc, batch.seq);
    }
  }
  if (seg.retired) return;
  await writeFileDurably(f, seg.hintPath, await hintBytes(seg, hint, size, maxSeq));
  // Compaction may have retired the segment (and unlinked its files) while the
  // hint was being written: do not leave a hint behind without its segment.
  if (seg.retired) await removeFile(f, seg.hintPath);
  else seg.hasHint = true;
}

/** A finished hint's bytes: sealed under its segment's key when the segment is sealed. */
export async function hintBytes(seg: Segment, hint: HintWriter, size: number, maxSeq: number): Promise<Buffer[]> {
  const chunks = hint.finish(size, maxSeq);
  return seg.seal === undefined ? chunks : await sealHint(seg.seal.key, chunks);
}
