/**
 * Step 1 of a compaction pass (compaction.ts): copy every entry of the run
 * that the directory still points at into the output segment. Live entries
 * are packed into output batches; a batch holds entries of one original
 * batch only and carries its sequence number, because that number is the
 * version of every object in it (docs/format.md, "Compaction"): a version
 * must survive compaction. What was copied where is kept for the swap step.
 */
import { BatchPacker, type DecodedEntry, HintWriter, Op, valueCrc } from './format.js';
import { storedValue } from './codec.js';
import type { EngineCore } from './core.js';
import type { Entry } from './entry.js';
import type { Segment } from './segment.js';
import { SegmentScanner, Yielder } from './scanner.js';
import { TAG_BYTES } from './seal.js';

const OUT_BATCH = 1 << 20;

export class RunCopier {
  /** The copied versions, and for each its new place and its old one (parallel arrays). */
  readonly moved: Entry[] = [];
  readonly newPos: number[] = [];
  readonly newCheck: number[] = [];
  readonly newSize: number[] = [];
  readonly newVlen: number[] = [];
  readonly oldPos: number[] = [];
  readonly oldSeg: Segment[] = [];
  readonly hint = new HintWriter();
  private readonly packer = new BatchPacker();
  /** Entries of the batch being packed: key, value pos in batch, vlen, exp, crc. */
  private pendingHint: Array<[string, number, number, number, number]> = [];
  private pendingSizes: number[] = [];
  private readonly tagBytes: number;

  constructor(
    private readonly core: EngineCore,
    private readonly out: Segment,
    private readonly stopping: () => boolean,
  ) {
    this.tagBytes = out.seal === undefined ? 0 : TAG_BYTES;
  }

  /** Copies the run's live entries into the output, in order; throws when a segment is damaged or the engine closes. */
  async copy(run: readonly Segment[]): Promise<void> {
    const yielder = Yielder.background();
    for (const s of run) await this.copySegment(s, yielder);
    await this.emit();
  }

  private async copySegment(s: Segment, yielder: Yielder): Promise<void> {
    const scanner = new SegmentScanner(this.core.fs, s, s.size);
    for (;;) {
      await yielder.maybe();
      if (this.stopping()) throw new Error('compaction stopped by close');
      const step = await scanner.next();
      if (step.kind === 'end') break;
      if (step.kind === 'bad') throw new Error(`${s.name} at ${step.pos}: ${step.reason}`);
      const { batch, pos, buf, bufPos } = step;
      const now = this.core.now();
      for (const en of batch.entries) {
        if (en.op !== Op.Put) continue; // tombstones die here: nothing older survives the run
        const vpos = pos + (en.valueOffset - bufPos);
        const cur = this.liveVersion(s, en, vpos, buf, now);
        if (cur === undefined) continue;
        if (this.packer.count > 0 && this.packer.seq !== batch.seq) await this.emit();
        this.add(s, en, cur, vpos, buf, batch.seq);
      }
      // Entries of one original batch share its seq, so one batch may only grow
      // past OUT_BATCH when its source batch was that large.
      if (this.packer.entryBytes >= OUT_BATCH) await this.emit();
    }
  }

  /** The directory's version of the entry when it is still this one and not expired; an expired one leaves the directory. */
  private liveVersion(s: Segment, en: DecodedEntry, vpos: number, buf: Buffer, now: number): Entry | undefined {
    const e = this.core;
    const cur = e.keydir.get(en.key);
    if (cur === undefined || cur.seg !== s || cur.vpos !== vpos) return undefined;
    if (cur.exp !== 0 && cur.exp <= now) {
      // Expired: not copied, so take it out of the directory now (as
      // the sweeper would); left there it would keep counting as live
      // in the run and the inputs could never be retired.
      e.keydir.delete(en.key);
      e.onExpire?.(en.key, cur.seq, () => buf.subarray(en.valueOffset, en.valueOffset + en.valueLength));
      return undefined;
    }
    return cur;
  }

  private add(s: Segment, en: DecodedEntry, cur: Entry, vpos: number, buf: Buffer, seq: number): void {
    const start = en.valueOffset - en.size + en.valueLength; // entry header in buf
    let bytes = buf.subarray(start, start + en.size);
    if (this.out.codecs && !s.codecs) bytes = withCodec(bytes, buf.subarray(en.valueOffset, en.valueOffset + en.valueLength), this.core.compression);
    const vlen = en.valueLength + bytes.length - en.size;
    const at = this.packer.add(bytes, seq);
    this.pendingHint.push([en.key, at + bytes.length - vlen, vlen, en.expiresAt, valueCrc(bytes, bytes.length - vlen, bytes.length)]);
    this.pendingSizes.push(bytes.length);
    this.newSize.push(bytes.length);
    this.newVlen.push(vlen);
    this.moved.push(cur);
    this.oldSeg.push(s);
    this.oldPos.push(vpos);
  }

  /** Writes the packed batch to the output and records where its values landed. */
  private async emit(): Promise<void> {
    const { packer, out } = this;
    if (packer.count === 0) return;
    const batchSeq = packer.seq;
    const plain = packer.finish();
    const data = out.seal === undefined ? plain : out.seal.sealBatch(plain);
    const base = out.size;
    await this.core.fs.writeAll(out.fd, data, 0, data.length, base);
    for (let i = 0; i < this.pendingHint.length; i++) {
      const [key, rel, vlen, exp, crc] = this.pendingHint[i];
      this.newPos.push(base + rel);
      // In a sealed output, the value's offset in its batch (scanner.ts, valueCheck).
      const check = this.tagBytes > 0 ? rel : crc;
      this.newCheck.push(check);
      this.hint.add(Op.Put, key, base + rel, vlen, this.pendingSizes[i], exp, check, batchSeq);
    }
    out.size += data.length;
    if (batchSeq > out.maxSeq) out.maxSeq = batchSeq;
    this.pendingHint = [];
    this.pendingSizes = [];
  }
}

/** A Put entry (its bytes as in a batch) rewritten with its value in stored form (codec.ts). */
function withCodec(entry: Buffer, value: Buffer, compress: boolean): Buffer {
  const sv = storedValue(value, compress);
  const head = entry.length - value.length;
  const out = Buffer.allocUnsafe(head + sv.length);
  entry.copy(out, 0, 0, head);
  out.writeUInt32LE(sv.length, 3);
  sv.copy(out, head);
  return out;
}
