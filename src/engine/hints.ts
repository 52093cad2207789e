/**
 * Hint files for immutable segments: written once a segment stops being
 * appended to, so recovery can rebuild the directory without reading values.
 * A missing or damaged hint only costs time: recovery scans the segment.
 */
import { HintWriter, Op, valueCrc } from './format.js';
import type { Engine } from './engine.js';
import type { Segment } from './segment.js';
import { SegmentScanner, Yielder } from './scanner.js';

/** Writes `bytes` to `final` through a temporary file, so a crash never leaves half a file under the real name. */
export async function writeFileDurably(engine: Engine, final: string, bytes: Buffer): Promise<void> {
  const f = engine.fs;
  const tmp = `${final}.tmp`;
  const fd = await f.open(tmp, 'w');
  try {
    await f.writeAll(fd, bytes, 0, bytes.length, 0);
    await f.fdatasync(fd);
  } finally {
    await f.close(fd);
  }
  await f.rename(tmp, final);
  await f.syncDir(engine.dir);
}

/** Scans an immutable segment and writes its hint file. */
export async function buildHint(engine: Engine, seg: Segment): Promise<void> {
  const size = seg.size;
  const scanner = new SegmentScanner(engine.fs, seg, size);
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
      const crc = put ? valueCrc(buf, en.valueOffset, en.valueOffset + en.valueLength) : 0;
      hint.add(en.op, en.key, valuePos, en.valueLength, en.size, en.expiresAt, crc);
    }
  }
  if (seg.retired) return;
  await writeFileDurably(engine, seg.hintPath, hint.finish(size, maxSeq));
  // Compaction may have retired the segment (and unlinked its files) while the
  // hint was being written: do not leave a hint behind without its segment.
  if (seg.retired) await engine.fs.unlink(seg.hintPath).catch(() => {});
  else seg.hasHint = true;
}
