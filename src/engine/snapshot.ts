/**
 * A group's members at one instant, read later in bounded batches
 * (docs/engine.md, "Group snapshots"): how a large answer is served without
 * holding the whole group in memory, and without one long synchronous step.
 *
 * Taking a snapshot copies, for each member, its key and its Entry: the
 * version current at that instant. Versions never change once written (an
 * overwrite makes a new Entry; only compaction moves a version, updating its
 * location), so reading an Entry later gives the value it had at the instant
 * of the snapshot, even if the key was overwritten or deleted since: from
 * the cache while its decoded value is there, else from the log. To keep the
 * old bytes readable the snapshot pins every segment that exists when it is
 * taken (a segment that compaction retires keeps its open descriptor until
 * the last reader is gone); `release()` unpins them. Liveness (expiry) is
 * judged at the snapshot's instant when a member is read.
 *
 * Reading a range reads the values that are not in memory with few large
 * reads: the locations are sorted and neighbours merged into runs of at most
 * RUN_BYTES, so rows written one after another (the common case) cost one
 * read per run instead of one per row.
 */
import type { Logger } from '../log.js';
import { CorruptionError, StorageIOError, storageError } from './errors.js';
import type { FileOps } from './fileops.js';
import { valueCrc } from './format.js';
import type { Decoder, Entry, KeyDir } from './keydir.js';
import type { Segment } from './segment.js';
import { readSealedBatch, TAG_BYTES } from './seal.js';
import { plainValue } from './codec.js';

/** Neighbouring values at most this far apart are read together. */
const GAP_BYTES = 16 * 1024;
/** Largest single read of a batch (a value larger than this is read alone). */
const RUN_BYTES = 1024 * 1024;

interface Loc {
  i: number;
  /** Where its value goes in the answer. */
  slot: number;
  e: Entry;
  seg: Segment;
  pos: number;
  len: number;
  /** Entry.crc taken with seg and pos: the value's CRC-32, or in a sealed segment its offset in its batch. */
  check: number;
}

export class GroupSnapshot<T> {
  private readonly pinned: Segment[] = [];
  private released = false;
  /** Readers holding it (retain); the first is its taker. */
  private holders = 1;
  private freed: (() => void) | undefined;

  /**
   * `members` and `versions` are parallel: the members' keys without the
   * group's prefix `group` (as the directory holds them, chunked-group.ts), in key
   * order, and their current versions. `after`: a snapshot taken in steps
   * (copyMore), to be continued after this key ('' = from the group's first);
   * undefined when `members` is the whole snapshot.
   */
  constructor(
    private readonly fs: FileOps,
    private readonly keydir: KeyDir,
    private readonly log: Logger,
    private readonly dec: Decoder<T>,
    private readonly group: string,
    private readonly members: string[],
    private readonly versions: Entry[],
    /** The instant: members expired at it are not part of the snapshot. */
    private readonly now: number,
    segments: readonly Segment[],
    private after?: string,
  ) {
    for (const seg of segments) {
      if (seg.fd < 0) continue;
      seg.readers++;
      this.pinned.push(seg);
    }
  }

  /**
   * Copies up to `limit` more members (the next in key order after those
   * copied so far) and returns how many it copied: fewer than `limit` when
   * the group has no more. For a snapshot taken in steps, with the event
   * loop running between them; the caller knows the group did not change
   * between the steps (a version it checks at each), which is what makes
   * the steps one instant. Pointers only, as Reader.snapshot copies them.
   */
  copyMore(limit: number): number {
    if (this.released) throw new StorageIOError('copy into a released snapshot', undefined);
    if (this.after === undefined || limit <= 0) return 0;
    const n = this.keydir.appendGroupKeys(this.group, this.after, limit, this.members, this.versions);
    if (n > 0) this.after = this.group + this.members[this.members.length - 1];
    return n;
  }

  /** Members, including any that had expired but were not yet swept (read() skips them). */
  get length(): number {
    return this.members.length;
  }

  /** The i-th member's key. */
  key(i: number): string {
    return this.group + this.members[i];
  }

  /** The i-th member's key without the group's prefix: the string the directory holds, so keeping it adds no copy. */
  member(i: number): string {
    return this.members[i];
  }

  /** Bytes of the i-th member's stored value (what reading it costs). */
  size(i: number): number {
    return this.versions[i].vlen;
  }

  /**
   * The decoded values of the live members among [from, to), in key order,
   * as of the snapshot. Synchronous when all of them are in memory;
   * otherwise a promise. The decoder must not keep the buffer it is given
   * (it is a slice of a larger read). With `cache` false no value it decodes
   * is put in the value cache (read from the log, or bytes held since their
   * write): a reader that keeps what it read in a structure of its own (a
   * sorted set's rank order) spares the directory lookup and the cache insert
   * per member.
   */
  read(from: number, to: number, cache = true): T[] | Promise<T[]> {
    if (this.released) throw new StorageIOError('read of a released snapshot', undefined);
    const out: T[] = [];
    let need: number[] | undefined;
    let slots: number[] | undefined;
    for (let i = from; i < to; i++) {
      const e = this.versions[i];
      if (e.exp !== 0 && e.exp <= this.now) continue;
      if (e.memo !== undefined && e.dec === this.dec) {
        this.keydir.touch(e);
        out.push(e.memo as T);
        continue;
      }
      if (e.val !== undefined) {
        const key = this.key(i);
        const memo = this.dec(e.val, key);
        if (cache && this.keydir.get(key) === e) this.keydir.cache(e, e.val, memo, this.dec as Decoder<unknown>);
        out.push(memo);
        continue;
      }
      (need ??= []).push(i);
      (slots ??= []).push(out.length);
      out.push(undefined as T);
    }
    if (need === undefined) return out;
    return this.fill(out, need, slots as number[], cache);
  }

  private async fill(out: T[], need: number[], slots: number[], cache: boolean): Promise<T[]> {
    const locs: Loc[] = [];
    for (let k = 0; k < need.length; k++) {
      const i = need[k];
      const e = this.versions[i];
      const seg = e.seg;
      // Only a version that compaction moved after the snapshot (into a
      // segment the snapshot did not pin) and then retired can be gone, or
      // one whose write failed and was rolled back.
      if (seg === undefined || seg.fd < 0) throw gone();
      locs.push({ i, slot: slots[k], e, seg, pos: e.vpos, len: e.vlen, check: e.crc });
    }
    locs.sort((a, b) => a.seg.id - b.seg.id || a.pos - b.pos);
    for (let k = 0; k < locs.length;) {
      if (locs[k].seg.seal !== undefined) {
        // Values of one sealed unit (a batch, or a group commit's batches) are adjacent here: open it once for all of them.
        const unit = locs[k].pos - locs[k].check;
        let j = k + 1;
        while (j < locs.length && locs[j].seg === locs[k].seg && locs[j].pos - locs[j].check === unit) j++;
        await this.fillSealed(out, locs.slice(k, j), cache);
        k = j;
        continue;
      }
      const seg = locs[k].seg;
      const start = locs[k].pos;
      let end = start + locs[k].len;
      let j = k + 1;
      while (j < locs.length && locs[j].seg === seg && locs[j].pos - end <= GAP_BYTES && locs[j].pos + locs[j].len - start <= RUN_BYTES) {
        end = Math.max(end, locs[j].pos + locs[j].len);
        j++;
      }
      const buf = Buffer.allocUnsafe(end - start);
      let n: number;
      try {
        n = await seg.read(this.fs, buf, 0, end - start, start);
      } catch (err) {
        if (seg.fd < 0) throw gone();
        throw storageError('read', err);
      }
      if (n !== end - start) throw new StorageIOError(`short read in ${seg.name} at ${start}`, undefined);
      for (let m = k; m < j; m++) {
        const l = locs[m];
        const off = l.pos - start;
        if (valueCrc(buf, off, off + l.len) !== l.check) {
          const err = new CorruptionError(seg.name, l.pos, `value checksum mismatch (${l.len} bytes)`);
          this.log('error', err.message);
          throw err;
        }
        const key = this.key(l.i);
        const v = this.plain(l, buf.subarray(off, off + l.len));
        const memo = this.dec(v, key);
        out[l.slot] = memo;
        // Still the current version, not cached meanwhile, and the cache has room: cache its
        // decoded form (the bytes stay in the file, KeyDir.dropBytes). A scan never evicts: a
        // table larger than the cache would otherwise push out everything else and then
        // itself, at a cost per row.
        if (cache && l.e.memo === undefined && this.keydir.hasRoom(l.len) && this.keydir.get(key) === l.e) {
          this.keydir.cache(l.e, undefined, memo, this.dec as Decoder<unknown>);
        }
      }
      k = j;
    }
    return out;
  }

  /** The value behind its stored bytes (a segment with codec bytes, codec.ts). */
  private plain(l: Loc, stored: Buffer): Buffer {
    if (!l.seg.codecs) return stored;
    const v = plainValue(stored);
    if (typeof v === 'string') {
      const err = new CorruptionError(l.seg.name, l.pos, v);
      this.log('error', err.message);
      throw err;
    }
    return v;
  }

  /** Values of one sealed unit, read with it: its tag is checked (seal.ts, readSealedBatch). */
  private async fillSealed(out: T[], ls: readonly Loc[], cache: boolean): Promise<void> {
    const l0 = ls[0];
    let guess = 0;
    for (const l of ls) guess = Math.max(guess, l.check + l.len + TAG_BYTES);
    let plain: Buffer;
    try {
      plain = await readSealedBatch(this.fs, l0.seg, l0.pos - l0.check, guess);
    } catch (err) {
      if (l0.seg.fd < 0) throw gone();
      if (err instanceof CorruptionError) {
        this.log('error', err.message);
        throw err;
      }
      throw storageError('read', err);
    }
    for (const l of ls) {
      const key = this.key(l.i);
      const memo = this.dec(this.plain(l, plain.subarray(l.check, l.check + l.len)), key);
      out[l.slot] = memo;
      if (cache && l.e.memo === undefined && this.keydir.hasRoom(l.len) && this.keydir.get(key) === l.e) {
        this.keydir.cache(l.e, undefined, memo, this.dec as Decoder<unknown>);
      }
    }
  }

  /**
   * One more holder: a reader that shares this snapshot (the same range of
   * the same version), and releases it once as every holder does; false
   * when it was released already.
   */
  retain(): boolean {
    if (this.released) return false;
    this.holders++;
    return true;
  }

  /** `fn` runs when the last holder has released the snapshot. */
  onFree(fn: () => void): void {
    this.freed = fn;
  }

  /** One holder's release; the last unpins the segments. Reads after that fail. */
  release(): void {
    if (this.released || --this.holders > 0) return;
    this.released = true;
    this.freed?.();
    for (const seg of this.pinned) {
      seg.readers--;
      if (seg.retired && seg.readers === 0) void seg.closeQuietly(this.fs);
    }
    this.pinned.length = 0;
  }
}

const gone = (): StorageIOError => new StorageIOError('a value of this snapshot was reclaimed by compaction while it was read; try again', undefined);
