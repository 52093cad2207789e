/**
 * The key directory: every live key, where its value lives, when it expires,
 * and (maybe) the value itself under a byte-budgeted cache.
 *
 * Memory is the constraint here (target: <= 200 bytes per key beyond the key
 * string), so an Entry is one small fixed-shape object (entry.ts); pauses are
 * the other (no single insert may stall the event loop for long), so the
 * directory is 256 hash shards rather than one Map (sharded-map.ts). Keys that
 * contain U+0000 belong to a *group* (the prefix up to and including the
 * last U+0000), kept in key order in chunks (chunked-group.ts), so the log store can
 * iterate a table's rows without touching the rest of the directory. A grouped
 * key lives in its group only, not also in the shards: a second map slot per
 * row or collection element cost 29-39 bytes and a second hash insert (at
 * open, for every key), and a lookup finds the group from the key's own
 * prefix (the last group used first, as writes and recovery meet one
 * group's keys in long runs). Cached
 * values live under a CLOCK cache (value-cache.ts) and expiries in a heap
 * (expiry-heap.ts); this class keeps the four in step.
 */
import { type Decoder, type Entry, FLAG_CURRENT, FLAG_QUEUED, FLAG_REF } from './entry.js';
import { ShardedMap } from './sharded-map.js';
import { CHUNK_MAX, Group } from './chunked-group.js';
import { ValueCache } from './value-cache.js';
import { ExpiryHeap, itemKey } from './expiry-heap.js';
import type { Segment } from './segment.js';

export { type Decoder, Entry, FLAG_CURRENT, FLAG_REF } from './entry.js';
export { ShardedMap, shardOf } from './sharded-map.js';
export { CHUNK_MAX, groupOf } from './chunked-group.js';

/**
 * Index of the last U+0000 of `key` (its group ends there), or -1 for a key
 * outside any group. Most lookups are of top-level keys (records, variants,
 * headers): indexOf is a fast builtin, lastIndexOf a runtime call about four
 * times its cost (7 against 30 ns, measured), so it runs only for grouped keys.
 */
function groupCut(key: string): number {
  return key.indexOf('\u0000') < 0 ? -1 : key.lastIndexOf('\u0000');
}

export class KeyDir {
  /** Keys that belong to no group. */
  private readonly top = new ShardedMap<Entry>();
  /** Every live key, grouped or not, read-only: iterated shard by shard, then group by group. */
  readonly map: AllKeys;
  private readonly groups = new Map<string, Group>();
  /** The group groupFor() returned last (never a removed one). */
  private lastGroup: Group | undefined;
  private groupedKeys = 0;

  /** Cached values and their decoded forms, under a byte budget. */
  readonly values: ValueCache;
  /** Entries that carry an expiry, earliest first. */
  private readonly expiry = new ExpiryHeap((item) => this.get(itemKey(item)) === item.entry);

  constructor(
    cacheBudget: number,
    private readonly chunkMax = CHUNK_MAX,
  ) {
    this.values = new ValueCache(cacheBudget);
    this.map = new AllKeys(this, this.top, this.groups);
  }

  /** Decides whether an entry's value may leave memory (false while its bytes are not in the file). */
  set evictable(fn: (e: Entry) => boolean) {
    this.values.evictable = fn;
  }

  /** Bytes the value cache holds now. */
  get cacheBytes(): number {
    return this.values.bytes;
  }

  get size(): number {
    return this.top.size + this.groupedKeys;
  }

  /** Current entries that carry an expiry (any key, grouped or not). */
  get expiringCount(): number {
    return this.expiry.live;
  }

  /** Keys that belong to no group: the stores' top-level objects. */
  get ungroupedSize(): number {
    return this.top.size;
  }

  /** Keys inside groups, by the first character of their group's name, most first. */
  groupedSizes(): Array<[string, number]> {
    const by = new Map<string, number>();
    for (const g of this.groups.values()) by.set(g.name[0], (by.get(g.name[0]) ?? 0) + g.size);
    return [...by].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  }

  get(key: string): Entry | undefined {
    const cut = groupCut(key);
    if (cut < 0) return this.top.get(key);
    return this.existingGroup(key, cut)?.get(key);
  }

  /**
   * Makes `e` the current version of `key`; returns the version it replaced.
   * Accounting of live bytes follows the entries (see Segment.live).
   */
  set(key: string, e: Entry): Entry | undefined {
    const cut = groupCut(key);
    if (cut >= 0) {
      // A new member, or a new version in the same position.
      const grp = this.groupFor(key, cut);
      return this.placed(grp.swap(key, e), e, key, grp);
    }
    const shard = this.top.shard(key); // one hash for the get and the set
    const prev = shard.get(key);
    this.top.setIn(shard, key, e);
    return this.placed(prev, e, key, undefined);
  }

  /**
   * set() of the key `group` + `member`, given apart: `group` ends at the
   * key's last U+0000 and `member` is a flat string of its own, which a new
   * member keeps. Recovery decodes both straight from a hint entry, so no
   * whole key is built, searched for its last U+0000 and copied again.
   */
  setMember(group: string, member: string, e: Entry): Entry | undefined {
    const last = this.lastGroup;
    const grp = last !== undefined && last.name === group ? last : this.namedGroup(group);
    return this.placed(grp.put(member, e), e, '', grp);
  }

  /** The bookkeeping of set() once `e` is in place of `prev`: flags, live bytes, the cache slot, the expiry heap. */
  private placed(prev: Entry | undefined, e: Entry, key: string, grp: Group | undefined): Entry | undefined {
    if (grp !== undefined && prev === undefined) this.groupedKeys++;
    e.flags |= FLAG_CURRENT;
    if (e.seg !== undefined) e.seg.live += e.size;
    if (prev !== undefined) {
      this.retire(prev);
      if ((prev.flags & FLAG_QUEUED) !== 0) this.values.takeSlot(prev, e);
    }
    if (e.exp !== 0) {
      this.expiry.live++;
      // A member's item keeps the member key the group holds (a collection
      // with an expiry puts every element in the heap), not a second whole key.
      if (grp === undefined) this.expiry.push(key, e, '');
      else this.expiry.push(grp.lastMember, e, grp.name);
    }
    return prev;
  }

  /** Removes `key`; returns the removed entry. */
  delete(key: string): Entry | undefined {
    const cut = groupCut(key);
    let prev: Entry | undefined;
    if (cut < 0) {
      prev = this.top.get(key);
      if (prev === undefined) return undefined;
      this.top.delete(key);
    } else {
      const grp = this.existingGroup(key, cut);
      prev = grp?.take(key);
      if (grp === undefined || prev === undefined) return undefined;
      this.groupedKeys--;
      if (grp.size === 0) {
        this.groups.delete(grp.name);
        if (this.lastGroup === grp) this.lastGroup = undefined;
      }
    }
    this.retire(prev);
    return prev;
  }

  /** Removes a whole group; returns its former members (for undo). */
  dropGroup(group: string): Array<[string, Entry]> {
    const grp = this.groups.get(group);
    if (grp === undefined) return [];
    const removed = Array.from(grp);
    this.groups.delete(group);
    if (this.lastGroup === grp) this.lastGroup = undefined;
    this.groupedKeys -= removed.length;
    for (const [, e] of removed) this.retire(e);
    return removed;
  }

  /** Puts back a version removed by set/delete/dropGroup (used to undo a failed batch). */
  restore(key: string, e: Entry | undefined): void {
    const cur = this.get(key);
    if (cur !== undefined) {
      if (e === undefined) this.delete(key);
      else this.set(key, e);
      return;
    }
    if (e !== undefined) this.set(key, e);
  }

  private retire(e: Entry): void {
    e.flags &= ~FLAG_CURRENT;
    if (e.exp !== 0) this.expiry.live--;
    if (e.seg !== undefined) e.seg.live -= e.size;
    this.values.uncache(e);
  }

  /**
   * The group of `key` (whose last U+0000 is at `cut`), created when missing.
   * Writes and recovery meet one group's keys in long runs (a table's rows),
   * so the last group used is checked first: a prefix comparison instead of
   * slicing the name out and hashing it for every key.
   */
  private groupFor(key: string, cut: number): Group {
    const last = this.lastGroup;
    if (last !== undefined && last.name.length === cut + 1 && key.startsWith(last.name)) return last;
    return this.namedGroup(key.slice(0, cut + 1));
  }

  /** The group named `name`, created when missing; it becomes the last group used. */
  private namedGroup(name: string): Group {
    let grp = this.groups.get(name);
    if (grp === undefined) {
      grp = new Group(this.chunkMax, name);
      this.groups.set(name, grp);
    }
    this.lastGroup = grp;
    return grp;
  }

  /** The group of `key` (whose last U+0000 is at `cut`), if it has one; the last group used is checked first, as in groupFor. */
  private existingGroup(key: string, cut: number): Group | undefined {
    const last = this.lastGroup;
    if (last !== undefined && last.name.length === cut + 1 && key.startsWith(last.name)) return last;
    const grp = this.groups.get(key.slice(0, cut + 1));
    if (grp !== undefined) this.lastGroup = grp;
    return grp;
  }

  /**
   * The members of a group; iterating it yields them in key order (live view;
   * do not mutate, and do not mutate the directory while iterating it).
   */
  groupMembers(group: string): Map<string, Entry> | undefined {
    return this.groups.get(group);
  }

  /**
   * Up to `limit` keys of a group above `after` ('' = from the first) and
   * their entries, in key order; `bare`: the keys without the group's prefix
   * (Group.keysAfter).
   */
  groupKeysAfter(group: string, after: string, limit: number, bare = false): [string[], Entry[]] {
    const keys: string[] = [];
    const entries: Entry[] = [];
    this.groups.get(group)?.keysAfter(after, limit, keys, entries, bare);
    return [keys, entries];
  }

  /** groupKeysAfter's member keys and entries appended to `keys` and `entries`; returns how many. */
  appendGroupKeys(group: string, after: string, limit: number, keys: string[], entries: Entry[]): number {
    const n = keys.length;
    this.groups.get(group)?.keysAfter(after, limit, keys, entries, true);
    return keys.length - n;
  }

  /**
   * Every key that starts with `prefix`, in no particular order; a group is
   * walked only when its keys can start with `prefix`, so asking for one kind
   * of group (the store's index entries) skips every collection's elements.
   * `grouped` false: the keys outside any group only.
   */
  *keys(prefix: string, grouped = true): Generator<string, void, undefined> {
    for (const k of this.top.keys()) if (k.startsWith(prefix)) yield k;
    if (!grouped) return;
    for (const g of this.groups.values()) {
      if (g.name.startsWith(prefix)) yield* g.keys();
      else if (prefix.startsWith(g.name)) for (const k of g.keys()) if (k.startsWith(prefix)) yield k;
    }
  }

  /** A group's keys without its prefix, and their entries, in key order, as two arrays (empty when there is no such group). */
  copyGroup(group: string): [string[], Entry[]] {
    const g = this.groups.get(group);
    return g === undefined ? [[], []] : g.copy();
  }

  // ---- value cache (value-cache.ts) --------------------------------------

  /** Attaches a value (and optionally its decoded form) to an entry: ValueCache.cache. */
  cache(e: Entry, val: Buffer | undefined, memo: unknown, dec: Decoder<unknown> | undefined): void {
    this.values.cache(e, val, memo, dec);
  }

  /** Lets go of the stored bytes once they are in the log: ValueCache.dropBytes. */
  dropBytes(e: Entry): void {
    this.values.dropBytes(e);
  }

  /** Whether a value of `vlen` bytes (and its decoded form) can be cached without evicting anything. */
  hasRoom(vlen: number): boolean {
    return this.values.hasRoom(vlen);
  }

  /**
   * Points `e` at a copy of its value in `seg` (compaction and the compressed
   * rewrite, recode.ts), moving its live bytes from the old segment to the new
   * when it is current and keeping the cache's charge right when the copy's
   * length differs (it was re-encoded).
   */
  relocate(e: Entry, seg: Segment, vpos: number, crc: number, size: number, vlen: number): void {
    const current = (e.flags & FLAG_CURRENT) !== 0;
    if (current && e.seg !== undefined) e.seg.live -= e.size;
    e.seg = seg;
    e.vpos = vpos;
    e.crc = crc;
    e.size = size;
    if (e.vlen !== vlen) this.values.resize(e, vlen);
    if (current) seg.live += size;
  }

  touch(e: Entry): void {
    e.flags |= FLAG_REF;
  }

  uncache(e: Entry): void {
    this.values.uncache(e);
  }

  // ---- expiry (expiry-heap.ts) -------------------------------------------

  /**
   * Removes up to `limit` keys whose expiry is at or before `now`.
   * Returns how many were removed; the caller loops with a yield in between.
   */
  sweep(now: number, limit: number): number {
    let removed = 0;
    while (removed < limit) {
      const item = this.expiry.popDue(now);
      if (item === undefined) break;
      const key = itemKey(item);
      if (this.get(key) === item.entry) {
        this.delete(key);
        removed++;
      }
    }
    return removed;
  }

  /** Earliest pending expiry, or 0. */
  nextExpiry(): number {
    return this.expiry.next();
  }
}

/**
 * Every live key of a directory, grouped or not, as a read-only Map: the
 * ungrouped shards first, then each group in key order. For the few passes
 * over the whole directory (the store's views at open, a repair's replay).
 */
export class AllKeys {
  readonly [Symbol.toStringTag] = 'AllKeys';

  constructor(
    private readonly kd: KeyDir,
    private readonly top: ShardedMap<Entry>,
    private readonly groups: Map<string, Group>,
  ) {}

  get size(): number {
    return this.kd.size;
  }

  get(key: string): Entry | undefined {
    return this.kd.get(key);
  }

  has(key: string): boolean {
    return this.kd.get(key) !== undefined;
  }

  *entries(): Generator<[string, Entry], void, undefined> {
    yield* this.top;
    for (const g of this.groups.values()) yield* g;
  }

  *keys(): Generator<string, void, undefined> {
    yield* this.top.keys();
    for (const g of this.groups.values()) yield* g.keys();
  }

  *values(): Generator<Entry, void, undefined> {
    yield* this.top.values();
    for (const g of this.groups.values()) yield* g.values();
  }

  [Symbol.iterator](): Generator<[string, Entry], void, undefined> {
    return this.entries();
  }
}
