/**
 * The garbage collector. It compacts a *prefix* of the segment list: the
 * oldest immutable segments, up to the longest run whose dead share passes
 * the threshold. Working on a prefix is what makes it safe to drop
 * tombstones and expired versions: no older segment remains in which the
 * version they shadow could survive.
 *
 * Steps, each bounded so the event loop never stalls:
 *  1. copy: read the run in 1 MiB chunks; append every entry the directory
 *     still points at to `<out>.log.tmp`, keeping its batch sequence number;
 *  2. seal: fdatasync, write the hint, rename the output into place, fsync
 *     the directory. From here a crash replays the old segments and then the
 *     output, which holds copies of the same live versions: same result;
 *  3. swap: in slices, repoint every entry that still points at its old place;
 *  4. retire: unlink the old segments and their hints.
 * If a failed write put back a version that lives in the run while we worked
 * (`conflict`), the inputs are kept: deleting them could lose that version.
 */
import {
  BatchPacker, encodeSegmentHeader, HintWriter, Op, SegmentKind, valueCrc,
} from './format.js';
import { storedValue } from './codec.js';
import type { EngineCore } from './core.js';
import type { EngineObserver } from './engine.js';
import type { Entry } from './keydir.js';
import { ID_STEP, Segment } from './segment.js';
import { SegmentScanner, Yielder } from './scanner.js';
import { removeFile, writeFileDurably } from './fileops.js';
import { hintBytes } from './hints.js';
import { SegmentSeal, TAG_BYTES } from './seal.js';

export interface CompactionPolicy {
  minDeadRatio: number;
  minDeadBytes: number;
}

const OUT_BATCH = 1 << 20;
/** Most live bytes one compaction pass copies. */
export const MAX_RUN_LIVE = 2 ** 31;
const SWAP_SLICE = 20_000;

const yieldNow = (): Promise<void> => new Promise((r) => setImmediate(r));

export class Compactor {
  state: 0 | 1 | 2 = 0;
  conflict = false;
  private running: Promise<boolean> | undefined;
  private stopping = false;
  /** Completed passes, for tests and stats. */
  passes = 0;
  /** Set by Engine.observe (metrics). */
  observer: EngineObserver | undefined;
  /** While set, passes also take segments that are not sealed under the current key (Engine.rekey). */
  rekey = false;

  /**
   * `settled` resolves once every batch in flight when it was called has
   * settled (Engine.settled): a batch that fails may put back a version that
   * lives in the run, so inputs are retired only after that.
   */
  constructor(
    private readonly core: EngineCore,
    private readonly policy: CompactionPolicy,
    private readonly settled: () => Promise<void>,
  ) {}

  /** Picks the run to compact: the longest prefix of immutable segments over the threshold. */
  pickRun(force: boolean): Segment[] {
    const segs = this.core.segments;
    let dead = 0;
    let total = 0;
    let live = 0;
    let best = -1;
    for (let i = 0; i < segs.length; i++) {
      const s = segs[i];
      if (s === this.core.active) break;
      // One output file per pass, and hint offsets are 32-bit: keep a run's
      // live data under MAX_RUN_LIVE (the first segment always fits, see config).
      live += s.live;
      if (i > 0 && live > MAX_RUN_LIVE) break;
      const d = s.dead(s.headerSize);
      dead += d;
      total += s.size - s.headerSize;
      // A segment under another key than the current one is rewritten
      // whatever its dead share (rekey), and so is a plain one once a key is set.
      const convert = this.rekey && this.needsRewrite(s);
      if (total === 0 && !convert) continue;
      if (convert || (force ? dead > 0 : dead >= this.policy.minDeadBytes && dead / total >= this.policy.minDeadRatio)) best = i;
    }
    return best < 0 ? [] : segs.slice(0, best + 1);
  }

  /** Whether a segment is not sealed under the current key (plain when a key is set, or under an old key). */
  needsRewrite(s: Segment): boolean {
    const ring = this.core.keyring;
    if (ring === undefined) return false;
    return s.seal === undefined || s.seal.key !== ring.current;
  }

  maybeRun(force = false): Promise<boolean> {
    if (this.running !== undefined || this.stopping) return this.running ?? Promise.resolve(false);
    const run = this.pickRun(force);
    if (run.length === 0) {
      // A pass that found nothing worth compacting has still run.
      if (this.state === 0) this.state = 2;
      return Promise.resolve(false);
    }
    this.running = this.compact(run).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // compact() reports its own failures ("compaction abandoned") and resolves false.
    if (this.running !== undefined) await this.running;
  }

  private async compact(run: Segment[]): Promise<boolean> {
    const e = this.core;
    const f = e.fs;
    const last = run[run.length - 1];
    // The output must replay after the run and before every later segment:
    // its id has to stay below the id of the segment that follows the run.
    const following = e.segments[e.segments.indexOf(last) + 1];
    const limit = following !== undefined ? following.id : (Math.floor(last.id / ID_STEP) + 1) * ID_STEP;
    let outId = last.id + 1;
    const taken = new Set(e.segments.map((s) => s.id));
    while (taken.has(outId)) outId++;
    if (outId >= limit) {
      e.log('warn', `compaction skipped: no free segment id between ${last.name} and the next segment; it resumes after the next rotation`);
      if (this.state === 0) this.state = 2;
      return false;
    }
    this.state = 1;
    this.conflict = false;
    for (const s of run) s.compacting = true;
    const out = new Segment(e.dir, outId, SegmentKind.Compacted);
    if (e.keyring !== undefined) out.seal = SegmentSeal.fresh(e.keyring.current);
    const tagBytes = out.seal === undefined ? 0 : TAG_BYTES;
    // One segment either stores a codec byte with every value or with none: the
    // output has them when compression is on or any input has them, and values
    // copied from an input without them get one (compressed when compression is on).
    out.codecs = e.compression || run.some((s) => s.codecs);
    const tmp = `${out.path}.tmp`;
    let sealed = false;
    const started = Date.now();
    try {
      let baseSeq = 0;
      for (const s of run) baseSeq = Math.max(baseSeq, s.maxSeq, s.covers);
      out.fd = await f.open(tmp, 'w+');
      const header = encodeSegmentHeader(SegmentKind.Compacted, baseSeq + 1, out.seal, out.codecs);
      await f.writeAll(out.fd, header, 0, header.length, 0);
      out.size = header.length;
      out.headerSize = header.length;
      out.maxSeq = baseSeq;
      out.covers = baseSeq;

      // 1. copy. Live entries are packed into output batches; a batch holds
      // entries of one original batch only and carries its sequence number,
      // because that number is the version of every object in it
      // (docs/format.md, "Compaction"): a version must survive compaction.
      const moved: Entry[] = [];
      const newPos: number[] = [];
      const newCheck: number[] = [];
      const newSize: number[] = [];
      const newVlen: number[] = [];
      const oldPos: number[] = [];
      const oldSeg: Segment[] = [];
      const hint = new HintWriter();
      const packer = new BatchPacker();
      let pendingHint: Array<[string, number, number, number, number]> = []; // key, value pos in batch, vlen, exp, crc
      let pendingSizes: number[] = [];
      const emitBatch = async (): Promise<void> => {
        if (packer.count === 0) return;
        const batchSeq = packer.seq;
        const plain = packer.finish();
        const data = out.seal === undefined ? plain : out.seal.sealBatch(plain);
        const base = out.size;
        await f.writeAll(out.fd, data, 0, data.length, base);
        for (let i = 0; i < pendingHint.length; i++) {
          const [key, rel, vlen, exp, crc] = pendingHint[i];
          newPos.push(base + rel);
          // In a sealed output, the value's offset in its batch (scanner.ts, valueCheck).
          const check = tagBytes > 0 ? rel : crc;
          newCheck.push(check);
          hint.add(Op.Put, key, base + rel, vlen, pendingSizes[i], exp, check, batchSeq);
        }
        out.size += data.length;
        if (batchSeq > out.maxSeq) out.maxSeq = batchSeq;
        pendingHint = [];
        pendingSizes = [];
      };
      const yielder = Yielder.background();
      for (const s of run) {
        const scanner = new SegmentScanner(f, s, s.size);
        for (;;) {
          await yielder.maybe();
          if (this.stopping) throw new Error('compaction stopped by close');
          const step = await scanner.next();
          if (step.kind === 'end') break;
          if (step.kind === 'bad') throw new Error(`${s.name} at ${step.pos}: ${step.reason}`);
          const { batch, pos, buf, bufPos } = step;
          const now = e.now();
          for (const en of batch.entries) {
            if (en.op !== Op.Put) continue; // tombstones die here: nothing older survives the run
            const cur = e.keydir.get(en.key);
            const vpos = pos + (en.valueOffset - bufPos);
            if (cur === undefined || cur.seg !== s || cur.vpos !== vpos) continue;
            if (cur.exp !== 0 && cur.exp <= now) {
              // Expired: not copied, so take it out of the directory now (as
              // the sweeper would); left there it would keep counting as live
              // in the run and the inputs could never be retired.
              e.keydir.delete(en.key);
              e.onExpire?.(en.key, cur.seq, () => buf.subarray(en.valueOffset, en.valueOffset + en.valueLength));
              continue;
            }
            const start = en.valueOffset - en.size + en.valueLength; // entry header in buf
            let bytes = buf.subarray(start, start + en.size);
            if (out.codecs && !s.codecs) bytes = withCodec(bytes, buf.subarray(en.valueOffset, en.valueOffset + en.valueLength), e.compression);
            const vlen = en.valueLength + bytes.length - en.size;
            if (packer.count > 0 && packer.seq !== batch.seq) await emitBatch();
            const at = packer.add(bytes, batch.seq);
            pendingHint.push([en.key, at + bytes.length - vlen, vlen, en.expiresAt, valueCrc(bytes, bytes.length - vlen, bytes.length)]);
            pendingSizes.push(bytes.length);
            newSize.push(bytes.length);
            newVlen.push(vlen);
            moved.push(cur);
            oldSeg.push(s);
            oldPos.push(vpos);
          }
          // Entries of one original batch share its seq, so one batch may only grow
          // past OUT_BATCH when its source batch was that large.
          if (packer.entryBytes >= OUT_BATCH) await emitBatch();
        }
      }
      await emitBatch();

      // 2. seal
      await f.fdatasync(out.fd);
      if (this.conflict) throw new Error('a rolled-back write restored a version inside the run');
      await writeFileDurably(f, out.hintPath, await hintBytes(out, hint, out.size, out.maxSeq));
      await f.rename(tmp, out.path);
      await f.syncDir(e.dir);
      sealed = true;
      out.hasHint = true;
      const idx = e.segments.indexOf(last);
      e.segments.splice(idx + 1, 0, out);

      // 3. swap
      for (let i = 0; i < moved.length; i++) {
        const cur = moved[i];
        if (cur.seg === oldSeg[i] && cur.vpos === oldPos[i]) {
          const current = (cur.flags & 1) !== 0;
          if (current) cur.seg.live -= cur.size;
          cur.seg = out;
          cur.vpos = newPos[i];
          cur.crc = newCheck[i];
          cur.size = newSize[i];
          if (cur.vlen !== newVlen[i]) e.keydir.resize(cur, newVlen[i]);
          if (current) out.live += cur.size;
        }
        if (i % SWAP_SLICE === SWAP_SLICE - 1) await yieldNow();
      }

      // 4. retire. Batches in flight when the copy ran may still fail and
      // put back a version that lives in the run; wait until they settle.
      await this.settled();
      const stillUsed = this.conflict || run.some((s) => s.live > 0);
      if (stillUsed) {
        e.log('warn', 'compaction kept its input segments: a version inside them became current again');
      } else {
        e.segments = e.segments.filter((s) => !run.includes(s));
        for (const s of run) {
          s.retired = true;
          await removeFile(f, s.path, e.log);
          await removeFile(f, s.hintPath, e.log);
          void s.closeQuietly(f);
        }
        await f.syncDir(e.dir);
      }
      const inBytes = run.reduce((a, s) => a + s.size, 0);
      e.log('info', `compacted ${run.length} segment(s), ${inBytes} -> ${out.size} bytes, ${moved.length} live entries, in ${Date.now() - started} ms`);
      this.passes++;
      this.observer?.compacted(inBytes, out.size);
      return true;
    } catch (err) {
      if (!sealed) {
        await out.closeQuietly(f);
        await removeFile(f, tmp, e.log);
        await removeFile(f, `${out.hintPath}.tmp`, e.log);
      }
      if (!this.stopping) e.log('warn', `compaction abandoned: ${String((err as Error).message ?? err)}`);
      return false;
    } finally {
      for (const s of run) s.compacting = false;
      this.state = 2;
    }
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
