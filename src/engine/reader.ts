/**
 * Reads: a key's live version at an instant, its value from the cache or its
 * segment (checked against its checksum, or its batch's tag when sealed), a
 * group's members in key order, and group snapshots (snapshot.ts). Reads
 * never wait for the writer: the directory already holds every write.
 */
import type { Logger } from '../log.js';
import { CorruptionError, StorageIOError, storageError } from './errors.js';
import { valueCrc } from './format.js';
import type { FileOps } from './fileops.js';
import { type Decoder, type Entry, FLAG_CURRENT, FLAG_REF } from './entry.js';
import type { KeyDir } from './keydir.js';
import type { Segment } from './segment.js';
import type { EngineCore } from './core.js';
import { GroupSnapshot } from './snapshot.js';
import { readSealedBatch, TAG_BYTES } from './seal.js';
import { plainValue } from './codec.js';
import { type EngineObserver, MISS, type Seen, type VersionRef } from './types.js';

export class Reader {
  // The same objects core holds, kept here so a read reaches them from `this`.
  private readonly fs: FileOps;
  private readonly keydir: KeyDir;
  private readonly now: () => number;
  private readonly log: Logger;
  observer: EngineObserver | undefined = undefined;

  constructor(private readonly core: EngineCore) {
    this.fs = core.fs;
    this.keydir = core.keydir;
    this.now = core.now;
    this.log = core.log;
  }

  /**
   * The live entry of a key at `now`. Callers that ask several questions
   * about one moment (a decision of the store: is it there, what is its
   * expiry) pass the same `now` to each, so an expiry cannot fall between
   * two of their answers.
   */
  live(key: string, now?: number): Entry | undefined {
    const e = this.keydir.get(key);
    if (e === undefined) return undefined;
    if (e.exp !== 0 && e.exp <= (now ?? this.now())) return undefined;
    return e;
  }

  has(key: string, now?: number): boolean {
    return this.live(key, now) !== undefined;
  }

  /**
   * The version of a live key: the sequence number of the batch that wrote
   * it (docs/format.md, "Sequence numbers"); undefined when absent.
   */
  versionOf(key: string, now?: number): number | undefined {
    return this.live(key, now)?.seq;
  }

  /** Absolute expiry of a live key (0 = never), or undefined when absent. */
  expiresAt(key: string, now?: number): number | undefined {
    return this.live(key, now)?.exp;
  }

  /**
   * The decoded value when it is in memory, undefined when the key is absent,
   * MISS when it must be read from disk with read(). Never waits. `seen`,
   * when given, receives the key's version (and expiry) from the same lookup,
   * so a read's value and ETag come from one instant without a second search.
   */
  peek<T>(key: string, dec: Decoder<T>, now?: number, seen?: Seen): T | undefined | typeof MISS {
    const e = this.live(key, now);
    if (e === undefined) return undefined;
    if (seen !== undefined) {
      seen.version = e.seq;
      // Only for a caller that asked for it (Tx's memo): a version-only object keeps its shape.
      if (seen.exp !== undefined) seen.exp = e.exp;
    }
    return this.decoded(key, e, dec);
  }

  /**
   * The live version of `key` as a reference its caller may keep and read
   * through later with peekRef (a secondary index keeps one per row it
   * lists: docs/query.md, "Row references"); undefined when absent.
   */
  ref(key: string, now?: number): VersionRef | undefined {
    return this.live(key, now) as unknown as VersionRef | undefined;
  }

  /**
   * The cached value behind a reference, decoded by `dec`, while the
   * reference is still its key's live version; MISS otherwise (replaced,
   * deleted, expired, or not cached with this decoder): the caller then
   * reads by key. Never waits, never searches the directory.
   */
  peekRef<T>(ref: VersionRef, dec: Decoder<T>, now: number): T | typeof MISS {
    const e = ref as unknown as Entry;
    // FLAG_CURRENT is set exactly while the entry is in the directory (KeyDir.set, KeyDir.retire).
    if ((e.flags & FLAG_CURRENT) === 0 || (e.exp !== 0 && e.exp <= now) || e.memo === undefined || e.dec !== dec) return MISS;
    this.keydir.touch(e);
    this.observer?.cacheHit();
    return e.memo as T;
  }

  private decoded<T>(key: string, e: Entry, dec: Decoder<T>): T | typeof MISS {
    if (e.memo !== undefined && e.dec === dec) {
      this.keydir.touch(e);
      this.observer?.cacheHit();
      return e.memo as T;
    }
    if (e.val !== undefined) {
      this.observer?.cacheHit();
      const memo = dec(e.val, key);
      this.keydir.cache(e, e.val, memo, dec as Decoder<unknown>);
      return memo;
    }
    this.observer?.cacheMiss();
    return MISS;
  }

  /** The decoded value, reading it from its segment when it is not cached. */
  async read<T>(key: string, dec: Decoder<T>): Promise<T | undefined> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const e = this.live(key);
      if (e === undefined) return undefined;
      const v = this.decoded(key, e, dec);
      if (v !== MISS) return v;
      const buf = await this.readValue(e);
      if (this.keydir.get(key) !== e) continue; // changed while we read
      if (buf === undefined) continue;
      const memo = dec(buf, key);
      this.keydir.cache(e, buf, memo, dec as Decoder<unknown>);
      return memo;
    }
    throw new StorageIOError(`could not read a stable value for a key`, undefined);
  }

  private async readValue(e: Entry): Promise<Buffer | undefined> {
    const seg = e.seg;
    if (seg === undefined || seg.fd < 0) return undefined;
    const got = seg.seal !== undefined ? await this.readSealedValue(e, seg, e.vpos, e.vlen, e.crc) : await this.readPlainValue(e, seg);
    if (got === undefined || !seg.codecs) return got;
    const v = plainValue(got);
    if (typeof v === 'string') {
      const err = new CorruptionError(seg.name, e.vpos, v);
      this.log('error', err.message);
      throw err;
    }
    return v;
  }

  private async readPlainValue(e: Entry, seg: Segment): Promise<Buffer | undefined> {
    // Taken with seg: compaction may move the entry (and change what crc means) while we read.
    const crc = e.crc;
    const buf = Buffer.allocUnsafe(e.vlen);
    let n: number;
    try {
      n = await seg.read(this.fs, buf, 0, e.vlen, e.vpos);
    } catch (err) {
      if (seg.retired) return undefined; // compaction moved it; look again
      throw storageError('read', err);
    }
    if (n !== e.vlen) {
      if (seg.retired || e.seg !== seg) return undefined;
      throw new StorageIOError(`short read in ${seg.name} at ${e.vpos}`, undefined);
    }
    if (valueCrc(buf, 0, n) !== crc) {
      // Damage after the segment was last verified (hinted segments are not
      // scanned at open): refuse to serve it rather than return wrong bytes.
      const err = new CorruptionError(seg.name, e.vpos, `value checksum mismatch (${e.vlen} bytes)`);
      this.log('error', err.message);
      throw err;
    }
    return buf;
  }

  /**
   * Reads a value from a sealed segment: its whole batch, whose tag is
   * checked, so a changed byte is refused like a checksum mismatch. `rel` is
   * the value's offset in the batch; a value is usually its batch's last
   * bytes before the tag, so one read of `rel + vlen + 16` bytes gets the
   * whole batch, and a second read the rest when the batch is longer.
   */
  private async readSealedValue(e: Entry, seg: Segment, vpos: number, vlen: number, rel: number): Promise<Buffer | undefined> {
    const start = vpos - rel;
    let buf: Buffer;
    try {
      buf = await readSealedBatch(this.fs, seg, start, rel + vlen + TAG_BYTES);
    } catch (err) {
      if (seg.retired || e.seg !== seg) return undefined;
      if (err instanceof CorruptionError) this.log('error', err.message);
      throw err instanceof CorruptionError ? err : storageError('read', err);
    }
    return buf.subarray(rel, rel + vlen);
  }

  /**
   * Decoded values of a group's live keys, in key order. Synchronous when all
   * of them are cached; otherwise a promise.
   */
  scan<T>(group: string, dec: Decoder<T>, at?: number): T[] | Promise<T[]> {
    const members = this.keydir.groupMembers(group);
    const out: T[] = [];
    if (members === undefined) return out;
    const now = at ?? this.now();
    // Fast path: every member's decoded value is cached, so keys are not needed
    // (iterating values avoids an entry pair per member).
    for (const e of members.values()) {
      if (e.exp !== 0 && e.exp <= now) continue;
      if (e.memo === undefined || e.dec !== dec) {
        out.length = 0;
        return this.scanSlow(members, now, out, dec);
      }
      e.flags |= FLAG_REF;
      out.push(e.memo as T);
    }
    return out;
  }

  private scanSlow<T>(members: Map<string, Entry>, now: number, out: T[], dec: Decoder<T>): T[] | Promise<T[]> {
    let missing: Array<[number, string]> | undefined;
    for (const [key, e] of members) {
      if (e.exp !== 0 && e.exp <= now) continue;
      const v = this.decoded(key, e, dec);
      if (v === MISS) {
        (missing ??= []).push([out.length, key]);
        out.push(undefined as T);
      } else {
        out.push(v);
      }
    }
    if (missing === undefined) return out;
    return this.fillMissing(out, missing, dec);
  }

  private async fillMissing<T>(out: T[], missing: Array<[number, string]>, dec: Decoder<T>): Promise<T[]> {
    await Promise.all(
      missing.map(async ([i, key]) => {
        out[i] = (await this.read(key, dec)) as T;
      }),
    );
    // A key deleted while we read leaves a hole; drop it.
    return out.filter((v) => v !== undefined);
  }

  /**
   * The group's members at this instant, to be read later in batches
   * (snapshot.ts). Copies two pointers per member (its key and its current
   * version) and touches nothing else, so it stays cheap for large groups;
   * which members are live is decided at `at` when they are read. The
   * caller must release() the snapshot when done with it.
   */
  snapshot<T>(group: string, dec: Decoder<T>, at?: number): GroupSnapshot<T> {
    const [members, versions] = this.keydir.copyGroup(group);
    return new GroupSnapshot(this.fs, this.keydir, this.log, dec, group, members, versions, at ?? this.now(), this.core.segments);
  }

  /**
   * An empty snapshot of `group`, to be filled in steps by copyMore from the
   * first member after `after` ('' = from the first): for a group too large
   * to copy in one step. Its segments are pinned now, as snapshot() pins them.
   */
  openSnapshot<T>(group: string, dec: Decoder<T>, after: string, at?: number): GroupSnapshot<T> {
    return new GroupSnapshot(this.fs, this.keydir, this.log, dec, group, [], [], at ?? this.now(), this.core.segments, after);
  }

  /**
   * Every key that starts with `prefix` (expired-but-unswept ones included),
   * in no particular order: for views kept outside the engine (the store's
   * listing and secondary indexes, docs/query.md). One pass over the directory.
   */
  keys(prefix = '', grouped = true): Generator<string, void, undefined> {
    return this.keydir.keys(prefix, grouped);
  }

  /**
   * Up to `limit` live keys of a group above `after` ('' = from the first),
   * in key order: a page of a collection's members (src/store/log/collections.ts).
   * Expired-but-unswept keys are skipped, so a page may hold fewer than
   * `limit` keys while more follow; callers ask for one more than they show.
   * `bare`: the keys without the group's prefix (the strings the directory
   * holds, so a caller that keeps them adds no copy).
   */
  groupKeys(group: string, after: string, limit: number, at?: number, bare = false): string[] {
    const now = at ?? this.now();
    const [keys, entries] = this.keydir.groupKeysAfter(group, after, limit, bare);
    let n = 0;
    for (let i = 0; i < keys.length; i++) {
      const e = entries[i];
      if (e.exp !== 0 && e.exp <= now) continue;
      keys[n++] = keys[i];
    }
    keys.length = n;
    return keys;
  }

  /** Number of live keys in a group (expired-but-unswept ones included). */
  groupSize(group: string): number {
    return this.keydir.groupMembers(group)?.size ?? 0;
  }
}
