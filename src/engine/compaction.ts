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
import { encodeSegmentHeader, type HintWriter, SegmentKind } from './format.js';
import type { EngineCore } from './core.js';
import type { EngineObserver } from './types.js';
import { ID_STEP, Segment } from './segment.js';
import { RunCopier } from './compaction-copy.js';
import { removeFile, writeFileDurably } from './fileops.js';
import { hintBytes } from './hints.js';
import { SegmentSeal } from './seal.js';
import { recodeSegment } from './recode.js';

export interface CompactionPolicy {
  minDeadRatio: number;
  minDeadBytes: number;
}

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
  /** Segments waiting to be rewritten with their values compressed (recode.ts), each with what to do instead if that cannot be done. */
  private toRecode: Array<{ seg: Segment; otherwise: () => void }> = [];
  private recoding: Promise<void> | undefined;
  /**
   * A compaction waiting for the rewrite in progress: the next rewrite gives
   * way to it, or a long queue of rewrites (every plain segment at a start)
   * would hold compaction off until the queue is empty.
   */
  private compactionWaiting: Promise<boolean> | undefined;
  /** Segments rewritten compressed so far (tests, stats). */
  recoded = 0;

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
    // Whichever call comes first once the rewrite is done (or the stop) answers the compaction that waited.
    this.compactionWaiting = undefined;
    if (this.running !== undefined || this.stopping) return this.running ?? Promise.resolve(false);
    // One rewrite at a time: a compaction waits for the segment being compressed.
    if (this.recoding !== undefined) {
      const waiting = this.recoding.then(() => this.maybeRun(force));
      this.compactionWaiting = waiting;
      return waiting;
    }
    const run = this.pickRun(force);
    if (run.length === 0) {
      // A pass that found nothing worth compacting has still run; the rewrites it held back go on.
      if (this.state === 0) this.state = 2;
      this.nextRecode();
      return Promise.resolve(false);
    }
    this.running = this.compact(run).finally(() => {
      this.running = undefined;
      this.nextRecode();
    });
    return this.running;
  }

  /**
   * A log segment has stopped being appended to: rewrite it with its values
   * compressed (recode.ts) when no other rewrite runs; `otherwise` (its hint)
   * runs when that fails or the engine closes first.
   */
  recode(seg: Segment, otherwise: () => void): void {
    this.toRecode.push({ seg, otherwise });
    this.nextRecode();
  }

  /** Resolves once no segment waits to be compressed and none is being compressed. */
  async recodesDone(): Promise<void> {
    while (this.recoding !== undefined || this.running !== undefined || this.compactionWaiting !== undefined)
      await (this.recoding ?? this.running ?? this.compactionWaiting);
  }

  private nextRecode(): void {
    if (this.running !== undefined || this.recoding !== undefined) return;
    // maybeRun starts the waiting compaction next, then calls this again (a stop drops it).
    if (this.compactionWaiting !== undefined && !this.stopping) return;
    const job = this.toRecode.shift();
    if (job === undefined) return;
    if (this.stopping) {
      for (const j of [job, ...this.toRecode.splice(0)]) j.otherwise();
      return;
    }
    // Compacted away meanwhile (its output has codec bytes), or already done.
    if (job.seg.retired || job.seg.codecs || !this.core.segments.includes(job.seg)) return this.nextRecode();
    this.recoding = this.recodeOne(job.seg, job.otherwise).finally(() => {
      this.recoding = undefined;
      this.nextRecode();
    });
  }

  private async recodeOne(seg: Segment, otherwise: () => void): Promise<void> {
    const e = this.core;
    const started = Date.now();
    seg.compacting = true;
    try {
      // A compaction waiting for this rewrite must not wait out its low priority.
      const out = await recodeSegment(
        e,
        seg,
        () => this.stopping,
        () => this.compactionWaiting !== undefined,
      );
      this.recoded++;
      e.log('info', `compressed ${seg.name}: ${seg.size} -> ${out.size} bytes in ${Date.now() - started} ms`);
    } catch (err) {
      if (!this.stopping) e.log('warn', `compressing ${seg.name} abandoned: ${String((err as Error).message ?? err)}`);
      otherwise();
    } finally {
      seg.compacting = false;
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // compact() reports its own failures ("compaction abandoned") and resolves false.
    if (this.running !== undefined) await this.running;
    if (this.recoding !== undefined) await this.recoding;
    this.nextRecode();
  }

  private async compact(run: Segment[]): Promise<boolean> {
    const e = this.core;
    const outId = this.outputId(run);
    if (outId === undefined) {
      e.log('warn', `compaction skipped: no free segment id between ${run[run.length - 1].name} and the next segment; it resumes after the next rotation`);
      if (this.state === 0) this.state = 2;
      return false;
    }
    this.state = 1;
    this.conflict = false;
    for (const s of run) s.compacting = true;
    const out = this.output(outId, run);
    const tmp = `${out.path}.tmp`;
    let sealed = false;
    const started = Date.now();
    try {
      await this.writeHeader(out, tmp, run);
      // 1. copy
      const copied = new RunCopier(e, out, () => this.stopping);
      await copied.copy(run);
      // 2. seal
      await this.seal(out, tmp, copied.hint, run[run.length - 1]);
      sealed = true;
      // 3. swap
      await swap(e, copied, out);
      // 4. retire. Batches in flight when the copy ran may still fail and
      // put back a version that lives in the run; wait until they settle.
      await this.settled();
      await this.retire(run);
      const inBytes = run.reduce((a, s) => a + s.size, 0);
      e.log('info', `compacted ${run.length} segment(s), ${inBytes} -> ${out.size} bytes, ${copied.moved.length} live entries, in ${Date.now() - started} ms`);
      this.passes++;
      this.observer?.compacted(inBytes, out.size);
      return true;
    } catch (err) {
      if (!sealed) {
        await out.closeQuietly(e.fs);
        await removeFile(e.fs, tmp, e.log);
        await removeFile(e.fs, `${out.hintPath}.tmp`, e.log);
      }
      if (!this.stopping) e.log('warn', `compaction abandoned: ${String((err as Error).message ?? err)}`);
      return false;
    } finally {
      for (const s of run) s.compacting = false;
      this.state = 2;
    }
  }

  /**
   * The output's id: the output must replay after the run and before every
   * later segment, so its id has to stay below the id of the segment that
   * follows the run. Undefined when no such id is free.
   */
  private outputId(run: Segment[]): number | undefined {
    const segs = this.core.segments;
    const last = run[run.length - 1];
    const following = segs[segs.indexOf(last) + 1];
    const limit = following !== undefined ? following.id : (Math.floor(last.id / ID_STEP) + 1) * ID_STEP;
    let outId = last.id + 1;
    const taken = new Set(segs.map((s) => s.id));
    while (taken.has(outId)) outId++;
    return outId < limit ? outId : undefined;
  }

  private output(outId: number, run: Segment[]): Segment {
    const e = this.core;
    const out = new Segment(e.dir, outId, SegmentKind.Compacted);
    if (e.keyring !== undefined) out.seal = SegmentSeal.fresh(e.keyring.current);
    // One segment either stores a codec byte with every value or with none: the
    // output has them when compression is on or any input has them, and values
    // copied from an input without them get one (compressed when compression is on).
    out.codecs = e.compression || run.some((s) => s.codecs);
    return out;
  }

  /** Opens the output under its temporary name and writes its header: it covers every batch of the run. */
  private async writeHeader(out: Segment, tmp: string, run: Segment[]): Promise<void> {
    const f = this.core.fs;
    let baseSeq = 0;
    for (const s of run) baseSeq = Math.max(baseSeq, s.maxSeq, s.covers);
    out.fd = await f.open(tmp, 'w+');
    const header = encodeSegmentHeader(SegmentKind.Compacted, baseSeq + 1, out.seal, out.codecs);
    await f.writeAll(out.fd, header, 0, header.length, 0);
    out.size = header.length;
    out.headerSize = header.length;
    out.maxSeq = baseSeq;
    out.covers = baseSeq;
  }

  /** Makes the output durable under its own name, with its hint, and puts it after the run. */
  private async seal(out: Segment, tmp: string, hint: HintWriter, last: Segment): Promise<void> {
    const e = this.core;
    const f = e.fs;
    await f.fdatasync(out.fd);
    if (this.conflict) throw new Error('a rolled-back write restored a version inside the run');
    await writeFileDurably(f, out.hintPath, await hintBytes(out, hint, out.size, out.maxSeq));
    await f.rename(tmp, out.path);
    await f.syncDir(e.dir);
    out.hasHint = true;
    const idx = e.segments.indexOf(last);
    e.segments.splice(idx + 1, 0, out);
  }

  /** Unlinks the run's segments and hints, unless a version inside them became current again. */
  private async retire(run: Segment[]): Promise<void> {
    const e = this.core;
    const f = e.fs;
    const stillUsed = this.conflict || run.some((s) => s.live > 0);
    if (stillUsed) {
      e.log('warn', 'compaction kept its input segments: a version inside them became current again');
      return;
    }
    e.segments = e.segments.filter((s) => !run.includes(s));
    for (const s of run) {
      s.retired = true;
      await removeFile(f, s.path, e.log);
      await removeFile(f, s.hintPath, e.log);
      void s.closeQuietly(f);
    }
    await f.syncDir(e.dir);
  }
}

/** Step 3: in slices, repoints every copied version that still points at its old place. */
async function swap(e: EngineCore, c: RunCopier, out: Segment): Promise<void> {
  for (let i = 0; i < c.moved.length; i++) {
    const cur = c.moved[i];
    if (cur.seg === c.oldSeg[i] && cur.vpos === c.oldPos[i]) e.keydir.relocate(cur, out, c.newPos[i], c.newCheck[i], c.newSize[i], c.newVlen[i]);
    if (i % SWAP_SLICE === SWAP_SLICE - 1) await yieldNow();
  }
}
