/**
 * Rebuilds the key directory at open: segments in id order, each from its
 * hint file when that is present and matches, else by scanning its batches.
 *
 * Damage policy (docs/engine.md, "Guarantees": detected corruption):
 *  - the newest log segment may end in a torn batch (the process died inside
 *    a write). If no valid batch follows the damage, the tail is cut off and
 *    the number of bytes dropped is logged.
 *  - damage anywhere else refuses to open with the file and offset, unless
 *    `repair` is set: then every intact batch is kept, the damaged ranges are
 *    dropped, the segment is rewritten without them, and each drop is logged.
 */
import * as path from 'node:path';
import { CorruptionError } from './errors.js';
import {
  checkHint,
  decodeSegmentHeader,
  HEADER_TRUNCATED,
  type HintVisitor,
  Op,
  SEALED_FORMAT_VERSION,
  SEALED_SEGMENT_HEADER_SIZE,
  SEGMENT_HEADER_SIZE,
  type SegmentHeader,
  SegmentKind,
  visitHint,
} from './format.js';
import type { RecoveryContext } from './core.js';
import { Entry } from './keydir.js';
import { hintFileName, parseFileName, Segment, segmentFileName } from './segment.js';
import { SegmentScanner, valueCheck, Yielder } from './scanner.js';
import { removeFile, writeFileDurably } from './fileops.js';
import { KeyMismatchError, openHint, SegmentSeal } from './seal.js';
import type { Keyring } from './keyring.js';

export interface Recovered {
  segments: Segment[];
  nextSeq: number;
  /** The newest log segment, to continue appending to if it has room. */
  appendTo: Segment | undefined;
}

/** Applies recovered entries to the directory, in log order. */
class Applier implements HintVisitor {
  seg!: Segment;
  applied = 0;
  constructor(
    private readonly ctx: RecoveryContext,
    private readonly now: number,
  ) {}

  hint(op: Op, key: string, valuePos: number, valueLength: number, size: number, expiresAt: number, crc: number, seq: number): void {
    const kd = this.ctx.keydir;
    this.applied++;
    if (op === Op.Put) {
      // An expired version still shadows older ones, so it deletes.
      if (expiresAt !== 0 && expiresAt <= this.now) kd.delete(key);
      else kd.set(key, new Entry(this.seg, valuePos, valueLength, size, expiresAt, crc, seq));
    } else if (op === Op.Del) {
      kd.delete(key);
    } else {
      kd.dropGroup(key);
    }
  }

  hintMember(group: string, member: string, valuePos: number, valueLength: number, size: number, expiresAt: number, crc: number, seq: number): void {
    this.applied++;
    // An expired version still shadows older ones, so it deletes.
    if (expiresAt !== 0 && expiresAt <= this.now) this.ctx.keydir.delete(group + member);
    else this.ctx.keydir.setMember(group, member, new Entry(this.seg, valuePos, valueLength, size, expiresAt, crc, seq));
  }
}

/**
 * The directory's segment ids in ascending order and the ids that have a
 * hint, after removing what no open needs: unfinished compaction outputs and
 * hints (`.tmp`), and hints whose segment is gone.
 */
async function listFiles(ctx: RecoveryContext, names: string[]): Promise<{ logs: number[]; hints: Set<number> }> {
  const f = ctx.fs;
  const logs: number[] = [];
  const hints = new Set<number>();
  for (const n of names) {
    if (n.endsWith('.tmp')) {
      // An unfinished compaction output or hint: never renamed, never needed.
      await removeFile(f, path.join(ctx.dir, n), ctx.log);
      continue;
    }
    const p = parseFileName(n);
    if (p === undefined) continue;
    if (p.ext === 'log') logs.push(p.id);
    else hints.add(p.id);
  }
  logs.sort((a, b) => a - b);
  // A hint whose segment is gone (a crash between compaction removing the
  // segment and a late hint build landing) describes nothing.
  for (const id of hints) {
    if (!logs.includes(id)) {
      await removeFile(f, path.join(ctx.dir, hintFileName(id)), ctx.log);
      hints.delete(id);
    }
  }
  return { logs, hints };
}

export async function recover(ctx: RecoveryContext, repair: boolean): Promise<Recovered> {
  const f = ctx.fs;
  const names = await f.readdir(ctx.dir);
  // Keys first, before anything in the directory is changed: a directory
  // opened without its key, or with a wrong one, must be left as it was.
  const { headers, seals } = await checkKeys(ctx, names);
  const { logs, hints } = await listFiles(ctx, names);
  const lastLogId = [...logs].reverse().find((id) => id % 1024 === 0);

  const segments: Segment[] = [];
  const applier = new Applier(ctx, ctx.now());
  let maxSeq = 0;
  let appendTo: Segment | undefined;

  let seg: Segment | undefined;
  try {
    for (const id of logs) {
      seg = new Segment(ctx.dir, id, id % 1024 === 0 ? SegmentKind.Log : SegmentKind.Compacted);
      const isTail = id === lastLogId;
      seg.fd = await f.open(seg.path, isTail ? 'r+' : 'r');
      let size = await f.fstatSize(seg.fd);
      const header = headers.get(id) ?? (await readHeader(ctx, seg, size));
      if (typeof header === 'string') {
        if (isTail && header === HEADER_TRUNCATED) {
          // Died while creating this segment: it holds nothing. Start it afresh.
          ctx.log('warn', `${seg.name}: ${size}-byte segment without a header (died while creating it); removed`);
          await seg.closeQuietly(f);
          await f.unlink(seg.path);
          continue;
        }
        await seg.closeQuietly(f);
        throw new CorruptionError(seg.name, 0, header);
      }
      if (header.sealed !== undefined) {
        const sealed = seals.get(id);
        // checkKeys saw this header; a file that changed since is not trusted.
        if (sealed === undefined) throw new CorruptionError(seg.name, 0, 'segment header changed while the directory was opened');
        seg.seal = sealed;
      }
      seg.headerSize = header.size ?? seg.headerSize;
      seg.codecs = header.codecs === true;
      seg.groups = header.groups === true;
      maxSeq = Math.max(maxSeq, header.baseSeq - 1);
      if (header.kind === SegmentKind.Compacted) seg.covers = header.baseSeq - 1;
      applier.seg = seg;

      let loaded = false;
      if (hints.has(id) && !isTail) {
        loaded = await loadHint(ctx, seg, size, applier);
        if (loaded) seg.hasHint = true;
      }
      if (!loaded) {
        size = await scanSegment(ctx, seg, size, isTail, repair, applier);
      }
      seg.size = size;
      maxSeq = Math.max(maxSeq, seg.maxSeq);
      segments.push(seg);
      if (isTail) appendTo = seg;
    }
  } catch (err) {
    // Refusing to open must not leak the descriptors opened so far.
    for (const s of segments) await s.closeQuietly(f);
    if (seg !== undefined) await seg.closeQuietly(f);
    throw err;
  }
  return { segments, nextSeq: maxSeq + 1, appendTo };
}

/** The segment's header, or why it is not one (HEADER_TRUNCATED when the file is shorter than a header). */
async function readHeader(ctx: RecoveryContext, seg: Segment, size: number): Promise<SegmentHeader | string> {
  const head = Buffer.alloc(SEALED_SEGMENT_HEADER_SIZE);
  let got = await seg.read(ctx.fs, head, 0, Math.min(size, SEGMENT_HEADER_SIZE), 0);
  // Only a version 2 header is longer; a hinted plain segment costs 16 bytes of reading.
  if (got === SEGMENT_HEADER_SIZE && head[4] === SEALED_FORMAT_VERSION && size > got) {
    got += await seg.read(ctx.fs, head, got, Math.min(size, SEALED_SEGMENT_HEADER_SIZE) - got, got);
  }
  return decodeSegmentHeader(head.subarray(0, got));
}

/**
 * Reads every segment header (returned by id, so the replay does not read them again) and checks that each sealed one names a key of
 * the keyring and authenticates under it. Returns the seal of each sealed
 * segment by id. Throws KeyMismatchError (no key given, or none with the
 * header's id) or CorruptionError (the id matches but the header does not
 * authenticate). Writes nothing.
 */
async function checkKeys(ctx: RecoveryContext, names: string[]): Promise<{ headers: Map<number, SegmentHeader | string>; seals: Map<number, SegmentSeal> }> {
  const seals = new Map<number, SegmentSeal>();
  const headers = new Map<number, SegmentHeader | string>();
  const missing: string[] = [];
  for (const n of names) {
    const p = parseFileName(n);
    if (p === undefined || p.ext !== 'log') continue;
    const seg = new Segment(ctx.dir, p.id, SegmentKind.Log);
    let header: SegmentHeader | string;
    try {
      seg.fd = await ctx.fs.open(seg.path, 'r');
      header = await readHeader(ctx, seg, await ctx.fs.fstatSize(seg.fd));
    } finally {
      await seg.closeQuietly(ctx.fs);
    }
    headers.set(p.id, header);
    if (typeof header === 'string' || header.sealed === undefined) continue; // judged by the scan
    const key = ctx.keyring?.get(header.sealed.keyId);
    if (key === undefined) {
      missing.push(`${segmentFileName(p.id)} (key ${header.sealed.keyId})`);
      continue;
    }
    const seal = new SegmentSeal(key, header.sealed.salt, false);
    if (!seal.headerTag(header.sealed.head).equals(header.sealed.tag)) {
      throw new CorruptionError(segmentFileName(p.id), 0, `segment header does not authenticate under key ${key.idHex}`);
    }
    seals.set(p.id, seal);
  }
  if (missing.length > 0) throw new KeyMismatchError(keyMessage(ctx.dir, ctx.keyring, missing));
  return { headers, seals };
}

function keyMessage(dir: string, keyring: Keyring | undefined, missing: string[]): string {
  const list = missing.length > 3 ? `${missing.slice(0, 3).join(', ')} and ${missing.length - 3} more` : missing.join(', ');
  return (
    `data directory ${dir} is encrypted and ` +
    (keyring === undefined
      ? `no key was given (--encryption-key-file): ${list} need(s) one; nothing was opened or written`
      : `the key(s) given (${keyring.ids.join(', ')}) are not the one(s) it needs: ${list}; ` +
        'give the right --encryption-key-file, or the old key in --encryption-old-key-files; nothing was opened or written')
  );
}

async function loadHint(ctx: RecoveryContext, seg: Segment, size: number, applier: Applier): Promise<boolean> {
  const f = ctx.fs;
  let buf: Buffer;
  try {
    const fd = await f.open(seg.hintPath, 'r');
    try {
      const len = await f.fstatSize(fd);
      buf = Buffer.allocUnsafe(len);
      let done = 0;
      while (done < len) {
        const n = await f.read(fd, buf, done, len - done, done);
        if (n === 0) break;
        done += n;
      }
      buf = buf.subarray(0, done);
    } finally {
      await f.close(fd);
    }
  } catch (err) {
    ctx.log('warn', `${seg.name}: hint unreadable (${String(err)}); scanning the segment`);
    return false;
  }
  if (seg.seal !== undefined) {
    // A sealed segment's hint must be sealed too: a plain one could list anything.
    const plain = openHint(buf, ctx.keyring, seg.seal.key);
    if (typeof plain === 'string') {
      ctx.log('warn', `${seg.name}: hint ignored (${plain}); scanning the segment`);
      return false;
    }
    buf = plain;
  }
  const footer = checkHint(buf);
  if (typeof footer === 'string' || footer.segmentSize !== size) {
    ctx.log('warn', `${seg.name}: hint ignored (${typeof footer === 'string' ? footer : 'size mismatch'}); scanning the segment`);
    return false;
  }
  const yielder = new Yielder();
  let pos = 0;
  do {
    pos = visitHint(buf, pos, 1024, applier);
    if (pos !== 0) await yielder.maybe();
  } while (pos !== 0);
  seg.maxSeq = footer.maxSeq;
  return true;
}

/** Scans a segment's batches into the directory; returns the segment's valid size. */
async function scanSegment(ctx: RecoveryContext, seg: Segment, size: number, isTail: boolean, repair: boolean, applier: Applier): Promise<number> {
  const scanner = new SegmentScanner(ctx.fs, seg, size);
  const dropped: Array<[number, number]> = [];
  const yielder = new Yielder();
  for (;;) {
    const step = await scanner.next();
    if (step.kind === 'end') break;
    if (step.kind === 'bad') {
      const next = await scanner.resync(step.pos);
      if (next < 0 && isTail) {
        // Torn tail: the last write never completed. Cut it off.
        const cut = size - step.pos;
        ctx.log('warn', `${seg.name}: torn tail at offset ${step.pos}, dropped ${cut} byte(s) of an unfinished write`);
        await ctx.fs.ftruncate(seg.fd, step.pos);
        await ctx.fs.fdatasync(seg.fd);
        size = step.pos;
        break;
      }
      if (!repair) throw new CorruptionError(seg.name, step.pos, step.reason);
      const end = next < 0 ? size : next;
      ctx.log('warn', `${seg.name}: repair dropped ${end - step.pos} damaged byte(s) at offset ${step.pos} (${step.reason})`);
      dropped.push([step.pos, end]);
      if (next < 0) break;
      continue;
    }
    const { batch, pos, buf, bufPos } = step;
    if (batch.seq > seg.maxSeq) seg.maxSeq = batch.seq;
    for (const en of batch.entries) {
      const crc = en.op === Op.Put ? valueCheck(seg, buf, bufPos, en) : 0;
      applier.hint(en.op, en.key, pos + (en.valueOffset - bufPos), en.valueLength, en.size, en.expiresAt, crc, batch.seq);
    }
    await yielder.maybe();
  }
  if (dropped.length > 0) return rewriteWithout(ctx, seg, size, dropped, applier);
  return size;
}

/**
 * Repair: writes the segment again without the damaged ranges and replays it
 * from the new file, so every directory entry points at real bytes.
 */
async function rewriteWithout(ctx: RecoveryContext, seg: Segment, size: number, dropped: Array<[number, number]>, applier: Applier): Promise<number> {
  const f = ctx.fs;
  const keep: Buffer[] = [];
  let from = 0;
  for (const [a, b] of dropped) {
    if (a > from) keep.push(await readRange(ctx, seg, from, a));
    from = b;
  }
  if (size > from) keep.push(await readRange(ctx, seg, from, size));
  const bytes = Buffer.concat(keep);
  // Entries applied from the old file point at old offsets; rebuild them.
  for (const [k, e] of Array.from(ctx.keydir.map)) if (e.seg === seg) ctx.keydir.delete(k);
  await writeFileDurably(f, seg.path, bytes);
  await removeFile(f, seg.hintPath, ctx.log);
  await seg.closeQuietly(f);
  seg.retired = false;
  seg.fd = await f.open(seg.path, 'r+');
  seg.maxSeq = 0;
  seg.live = 0;
  ctx.log('warn', `${seg.name}: rewritten without ${size - bytes.length} damaged byte(s)`);
  const scanner = new SegmentScanner(f, seg, bytes.length);
  for (;;) {
    const step = await scanner.next();
    if (step.kind === 'end') break;
    if (step.kind === 'bad') throw new CorruptionError(seg.name, step.pos, 'damage left after repair');
    const { batch, pos, buf, bufPos } = step;
    if (batch.seq > seg.maxSeq) seg.maxSeq = batch.seq;
    for (const en of batch.entries) {
      const crc = en.op === Op.Put ? valueCheck(seg, buf, bufPos, en) : 0;
      applier.hint(en.op, en.key, pos + (en.valueOffset - bufPos), en.valueLength, en.size, en.expiresAt, crc, batch.seq);
    }
  }
  return bytes.length;
}

async function readRange(ctx: RecoveryContext, seg: Segment, a: number, b: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(b - a);
  const n = await seg.read(ctx.fs, buf, 0, b - a, a);
  return buf.subarray(0, n);
}
