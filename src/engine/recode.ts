/**
 * Compression at rest kept off the write path (docs/format.md, "Compression"):
 * a log segment is written with its values as given, and once it stops being
 * appended to it is rewritten in the background with every Put value in
 * stored form (codec.ts), the way LSM stores compress their sorted tables and
 * not their write-ahead log. Compressing on the write path cost about as much
 * CPU as the write itself (docs/benchmarks.md).
 *
 * The rewrite changes nothing but the values' form: every batch keeps its
 * sequence number and every entry, dead or alive, Del and DropGroup included,
 * so the new file replays exactly as the old one did (the change feed too),
 * and it keeps the old file's id, kind and base_seq. It is written to
 * `<name>.log.tmp`, made durable and renamed over the old file; a crash
 * before the rename leaves the old file (the .tmp is deleted at open), after
 * it the new one, which holds the same batches.
 */
import { decodeSegmentHeader, encodeBatch, encodeSegmentHeader, type EntryIn, HintWriter, Op, SEALED_SEGMENT_HEADER_SIZE, valueCrc } from './format.js';
import { storedValue } from './codec.js';
import type { EngineCore } from './core.js';
import type { Entry } from './entry.js';
import { removeFile, writeFileDurably } from './fileops.js';
import { hintBytes } from './hints.js';
import { SegmentScanner, Yielder } from './scanner.js';
import { SegmentSeal } from './seal.js';
import { Segment } from './segment.js';

const OUT_CHUNK = 1 << 20;

/** Where each Put of the old file lies in the new one (parallel arrays, in file order). */
class Moves {
  readonly oldPos: number[] = [];
  readonly newPos: number[] = [];
  readonly check: number[] = [];
  readonly size: number[] = [];
  readonly vlen: number[] = [];
  /** Versions the directory pointed at when they were copied, and their index above. */
  readonly current: Entry[] = [];
  readonly currentAt: number[] = [];

  /** Index of the Put whose value was at `pos` in the old file, or -1. */
  find(pos: number): number {
    let lo = 0;
    let hi = this.oldPos.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const p = this.oldPos[mid];
      if (p === pos) return mid;
      if (p < pos) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/**
 * Rewrites `seg` (immutable, without codec bytes) with its values compressed,
 * under the current key when encryption is on. Returns the new segment, which
 * has taken the old one's place in the segment list; the old one is retired.
 * Throws when `stopping` turns true or a read or write fails; the old segment
 * is then left as it was.
 *
 * No directory entry can be left pointing into the old file. Every version a
 * lookup can reach is, at the rename, either current or in the undo list of a
 * batch in flight (writer.ts, failFrom). Those current when copied are moved
 * at the rename (swap), those put back by a rolled-back write while the copy
 * ran are handed over in `seg.putBack` and moved with them, and from the
 * rename on `seg.forward` moves any other one at the moment a rollback puts it
 * back; all three happen synchronously with the change of file.
 */
export async function recodeSegment(core: EngineCore, seg: Segment, stopping: () => boolean, hurry: () => boolean = () => false): Promise<Segment> {
  const f = core.fs;
  const out = new Segment(core.dir, seg.id, seg.kind);
  if (core.keyring !== undefined) out.seal = SegmentSeal.fresh(core.keyring.current);
  out.codecs = true;
  const tmp = `${out.path}.tmp`;
  const moves = new Moves();
  const hint = new HintWriter();
  seg.putBack = [];
  try {
    const head = Buffer.allocUnsafe(SEALED_SEGMENT_HEADER_SIZE);
    const header = decodeSegmentHeader(head.subarray(0, await seg.read(f, head, 0, head.length, 0)));
    if (typeof header === 'string') throw new Error(`${seg.name}: ${header}`);
    const bytes = encodeSegmentHeader(seg.kind, header.baseSeq, out.seal, true);
    out.fd = await f.open(tmp, 'w+');
    await f.writeAll(out.fd, bytes, 0, bytes.length, 0);
    out.size = out.headerSize = bytes.length;
    out.maxSeq = seg.maxSeq;
    out.covers = seg.covers;
    await copyBatches(core, seg, out, moves, hint, stopping, hurry);
    await f.fdatasync(out.fd);
    // No hint of the old file may sit beside the new one: its size check is all that would tell them apart.
    if (seg.hasHint) {
      await removeFile(f, seg.hintPath, core.log);
      seg.hasHint = false;
      await f.syncDir(core.dir);
    }
    await f.rename(tmp, out.path);
  } catch (err) {
    // The old file stays in use: rollbacks stop handing their versions to this
    // rewrite, and the rewrite's descriptor and file go, whichever step failed
    // (a failed rename included), so nothing is left for the next open to clear.
    seg.putBack = undefined;
    await out.closeQuietly(f);
    await removeFile(f, tmp, core.log);
    throw err;
  }
  // From here the file at the old name is the new one: put it in the list before anything else runs.
  core.segments[core.segments.indexOf(seg)] = out;
  swap(core, moves, seg, out);
  seg.forward = (e) => forward(core, moves, seg, out, e);
  try {
    await f.syncDir(core.dir);
  } catch (err) {
    // Either name is a whole, equivalent file: a lost rename only costs doing it again.
    core.log('warn', `syncing the directory after compressing ${out.name}: ${String(err)}`);
  }
  seg.retired = true;
  void seg.closeQuietly(f);
  try {
    await writeFileDurably(f, out.hintPath, await hintBytes(out, hint, out.size, out.maxSeq));
    out.hasHint = true;
  } catch (err) {
    // Only costs a scan at the next open.
    core.log('warn', `hint for ${out.name} after compressing it: ${String(err)}`);
  }
  return out;
}

/** Step 1: every batch of `seg`, re-encoded with its values in stored form, appended to `out`. */
async function copyBatches(
  core: EngineCore,
  seg: Segment,
  out: Segment,
  moves: Moves,
  hint: HintWriter,
  stopping: () => boolean,
  hurry: () => boolean,
): Promise<void> {
  const scanner = new SegmentScanner(core.fs, seg, seg.size);
  // Low priority, unless other work waits for this rewrite (a compaction: Compactor.maybeRun).
  const yielder = Yielder.lowPriority(hurry);
  const keyLens: number[] = [];
  const offsets: number[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (): Promise<void> => {
    const data = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes);
    await core.fs.writeAll(out.fd, data, 0, data.length, out.size);
    out.size += data.length;
    pending = [];
    pendingBytes = 0;
  };
  for (;;) {
    await yielder.maybe();
    if (stopping()) throw new Error('stopped by close');
    const step = await scanner.next();
    if (step.kind === 'end') break;
    if (step.kind === 'bad') throw new Error(`${seg.name} at ${step.pos}: ${step.reason}`);
    const { batch, pos, buf, bufPos } = step;
    const entries: EntryIn[] = batch.entries.map((en) => ({
      op: en.op,
      key: en.key,
      value: en.op === Op.Put ? storedValue(buf.subarray(en.valueOffset, en.valueOffset + en.valueLength), true) : undefined,
      expiresAt: en.expiresAt,
    }));
    const plain = encodeBatch(batch.seq, entries, keyLens, offsets);
    const at = out.size + pendingBytes;
    for (let i = 0; i < entries.length; i++) {
      const en = batch.entries[i];
      const v = entries[i].value;
      if (v === undefined) {
        hint.add(en.op, en.key, 0, 0, 15 + keyLens[i], en.expiresAt, 0, batch.seq);
        continue;
      }
      const check = out.seal !== undefined ? offsets[i] : valueCrc(v, 0, v.length);
      const size = 15 + keyLens[i] + v.length;
      hint.add(Op.Put, en.key, at + offsets[i], v.length, size, en.expiresAt, check, batch.seq);
      const oldPos = pos + (en.valueOffset - bufPos);
      moves.oldPos.push(oldPos);
      moves.newPos.push(at + offsets[i]);
      moves.check.push(check);
      moves.size.push(size);
      moves.vlen.push(v.length);
      const cur = core.keydir.get(en.key);
      if (cur !== undefined && cur.seg === seg && cur.vpos === oldPos) {
        moves.current.push(cur);
        moves.currentAt.push(moves.oldPos.length - 1);
      }
    }
    const data = out.seal === undefined ? plain : out.seal.sealBatch(plain);
    pending.push(data);
    pendingBytes += data.length;
    if (pendingBytes >= OUT_CHUNK) await flush();
  }
  if (pendingBytes > 0) await flush();
}

/** Points a version at its place in the new file, moving its live bytes with it. */
function move(core: EngineCore, e: Entry, m: Moves, i: number, out: Segment): void {
  core.keydir.relocate(e, out, m.newPos[i], m.check[i], m.size[i], m.vlen[i]);
}

/** Every version copied while current or put back meanwhile that still points at its old place (synchronous: no write runs meanwhile). */
function swap(core: EngineCore, m: Moves, seg: Segment, out: Segment): void {
  for (let k = 0; k < m.current.length; k++) {
    const e = m.current[k];
    const i = m.currentAt[k];
    if (e.seg === seg && e.vpos === m.oldPos[i]) move(core, e, m, i, out);
  }
  const back = seg.putBack ?? [];
  seg.putBack = undefined;
  for (const e of back) forward(core, m, seg, out, e);
}

/** Moves `e` to its copy when it still points into the old file; every Put of that file was copied, so it has one. */
function forward(core: EngineCore, m: Moves, seg: Segment, out: Segment, e: Entry): void {
  if (e.seg !== seg) return;
  const i = m.find(e.vpos);
  if (i >= 0) move(core, e, m, i, out);
  else core.log('error', `${seg.name}: a version at ${e.vpos} has no copy in ${out.name}`);
}
