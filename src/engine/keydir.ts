/**
 * The key directory: every live key, where its value lives, when it expires,
 * and (maybe) the value itself under a byte-budgeted cache.
 *
 * Memory is the constraint here (target: <= 200 bytes per key beyond the key
 * string), so an Entry is one small fixed-shape object; pauses are the other
 * (no single insert may stall the event loop for long), so the directory is
 * 256 hash shards rather than one Map. Keys that contain U+0000 also belong to
 * a *group* (the prefix up to and including the last U+0000), kept in key
 * order in chunks, so the model can iterate a table's rows without touching
 * the rest of the directory.
 */
import type { Segment } from './segment.js';

/**
 * Turns stored bytes into whatever the caller wants cached next to them. The
 * result must not refer to `value` (it may be a slice of a larger read, and
 * the engine keeps only the result once the bytes are in the log: KeyDir.dropBytes).
 */
export type Decoder<T> = (value: Buffer, key: string) => T;

export const FLAG_CURRENT = 1;
/** Set when the cached value is used; CLOCK eviction gives such entries a second chance. */
export const FLAG_REF = 2;
/** The entry has a slot in the cache queue (so it is never queued twice). */
const FLAG_QUEUED = 4;

/**
 * One version of one key. `seg` is undefined while the batch that wrote it
 * waits for the log flush; such an entry always holds its value in cache.
 */
export class Entry {
  seg: Segment | undefined;
  /** Absolute offset of the value inside the segment file. */
  vpos: number;
  vlen: number;
  /** Bytes of the whole log entry (header + key + value), for dead-space accounting. */
  size: number;
  /** Absolute expiry in ms since the epoch; 0 = never. */
  exp: number;
  /** crc32 of the value (as int32), checked whenever the value is read from its segment. */
  crc: number;
  val: Buffer | undefined;
  /** Decoded form of `val`, produced by `dec`. */
  memo: unknown;
  dec: Decoder<unknown> | undefined;
  flags: number;
  /**
   * Sequence number of the batch that wrote this version: the object's
   * version (docs/format.md, "Sequence numbers"). Kept through recovery,
   * hints and compaction, so it never changes while the version lives.
   */
  seq: number;
  /**
   * Position in the cache queue (absolute: the queue's array index plus its
   * base), meaningful while FLAG_QUEUED is set; lets a new version take over
   * the slot of the version it replaces (KeyDir.set).
   */
  qpos: number;

  constructor(seg: Segment | undefined, vpos: number, vlen: number, size: number, exp: number, crc: number, seq: number) {
    this.seg = seg;
    this.vpos = vpos;
    this.vlen = vlen;
    this.size = size;
    this.exp = exp;
    this.crc = crc;
    this.val = undefined;
    this.memo = undefined;
    this.dec = undefined;
    this.flags = 0;
    this.seq = seq;
    this.qpos = 0;
  }
}

/**
 * Why the directory is not one `Map`: V8 grows a `Map` by rehashing all of it
 * in one step when it outgrows its capacity (a power of two), and the
 * allocation of the doubled table comes with it. At 524,289 entries that step
 * took 55 ms, at 1,048,577 79 ms — on the event loop, inside one write. Every
 * structure below is therefore made of many small `Map`s, none of which ever
 * gets big enough for its rehash to matter (see docs/engine.md for figures).
 */

/** Shards of the key directory. 256 keeps each under ~8,000 keys at 2 M keys. */
const SHARD_BITS = 8;
const SHARD_MASK = (1 << SHARD_BITS) - 1;

/**
 * FNV-1a over the key's UTF-16 code units, folded to SHARD_BITS. Every unit
 * of a key up to 128 units long counts, so keys that share long prefixes or
 * suffixes — `R/user:…`, table rows `t\0name\0inc\0<id>` — still spread
 * evenly. Longer keys: the first 32 and the last 96 units and the length, so
 * a read never hashes more than 128 units. Keys that differ only in the middle
 * of a long key land in one shard: lookups stay correct, only that shard (and
 * its rehash) grows.
 */
export function shardOf(key: string): number {
  let h = 0x811c9dc5 | 0;
  const n = key.length;
  if (n <= 128) {
    for (let i = 0; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  } else {
    for (let i = 0; i < 32; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    for (let i = n - 96; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ n, 0x01000193);
  }
  return (h ^ (h >>> 16) ^ (h >>> 24)) & SHARD_MASK;
}

/**
 * A string-keyed map split by `shardOf` into 256 `Map`s. Same semantics as a
 * `Map` for get/has/set/delete/size; iteration visits every entry once, shard
 * by shard (not in insertion order: nothing iterates the whole directory for
 * its order). A lookup is one hash of the key plus one `Map.get`.
 */
export class ShardedMap<V> implements Map<string, V> {
  private readonly shards: Array<Map<string, V>> = [];
  private count = 0;
  readonly [Symbol.toStringTag] = 'ShardedMap';

  constructor() {
    for (let i = 0; i <= SHARD_MASK; i++) this.shards.push(new Map());
  }

  get size(): number {
    return this.count;
  }

  /** The shard that holds (or would hold) `key`: lets a caller get then set with one hash. */
  shard(key: string): Map<string, V> {
    return this.shards[shardOf(key)];
  }

  get(key: string): V | undefined {
    return this.shards[shardOf(key)].get(key);
  }

  has(key: string): boolean {
    return this.shards[shardOf(key)].has(key);
  }

  set(key: string, value: V): this {
    const m = this.shards[shardOf(key)];
    const n = m.size;
    m.set(key, value);
    this.count += m.size - n;
    return this;
  }

  /** For a caller that already holds the shard (from `shard()`). */
  setIn(m: Map<string, V>, key: string, value: V): void {
    const n = m.size;
    m.set(key, value);
    this.count += m.size - n;
  }

  delete(key: string): boolean {
    if (!this.shards[shardOf(key)].delete(key)) return false;
    this.count--;
    return true;
  }

  clear(): void {
    for (const m of this.shards) m.clear();
    this.count = 0;
  }

  forEach(fn: (value: V, key: string, map: Map<string, V>) => void, thisArg?: unknown): void {
    for (const m of this.shards) for (const [k, v] of m) fn.call(thisArg, v, k, this);
  }

  *entries(): MapIterator<[string, V]> {
    for (const m of this.shards) yield* m;
  }

  *keys(): MapIterator<string> {
    for (const m of this.shards) yield* m.keys();
  }

  *values(): MapIterator<V> {
    for (const m of this.shards) yield* m.values();
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }
}

/**
 * Most keys one chunk of a group holds. A chunk's Map rehashes in well under
 * a millisecond at this size, and sorting or splitting one costs about as
 * much, so no single insert into a group of any size pays more.
 */
export const CHUNK_MAX = 4096;

/**
 * One key range of a group: keys k with lo <= k < (next chunk's lo). Chunk
 * 0's lo is never consulted: it takes every key below chunk 1's lo.
 */
class Chunk {
  map: Map<string, Entry>;
  lo: string;
  /** Greatest key appended since the map was last in key order; keys are appended in order as long as sorted holds. */
  last: string;
  sorted = true;
  /**
   * Keys at which this chunk is full: between 3/4 of the group's maximum and
   * the maximum, drawn at random per chunk. Keys spread over a group's whole
   * range (an index on a value that cycles, filled by a batch of 1,000 rows or
   * by a build step of 500) make every chunk grow at the same pace; with one
   * common limit they all filled in the same few batches, and one batch then
   * split many of them at about 1 ms each: stalls of 90-170 ms while an index
   * was built (docs/engine.md, "Key directory: memory and pauses"). Different
   * limits spread the splits out.
   */
  readonly cap: number;

  constructor(lo: string, max: number, map: Map<string, Entry> = new Map(), last = lo) {
    this.lo = lo;
    this.map = map;
    this.last = last;
    this.cap = Math.max(1, max - Math.floor(Math.random() * (max >> 2)));
  }

  /** Rebuilds the map in key order (at most CHUNK_MAX + 1 keys). */
  sort(): void {
    if (this.sorted) return;
    const keys = sortedKeys(this.map);
    const m = new Map<string, Entry>();
    for (const k of keys) m.set(k, this.map.get(k) as Entry);
    this.map = m;
    this.last = keys.length > 0 ? keys[keys.length - 1] : this.lo;
    this.sorted = true;
  }
}

/**
 * A map's keys in key order (JavaScript's `<`, UTF-16 units, which is what the
 * default sort compares): sorting the keys alone, without a comparator, is
 * 1.4-1.9x as fast as sorting [key, entry] pairs with one (measured apart).
 */
function sortedKeys(m: Map<string, Entry>): string[] {
  return Array.from(m.keys()).sort();
}

/**
 * A group's members in key order: a list of chunks, each a key range held in
 * one small Map (a two-level B-tree whose leaves are Maps). Rows usually
 * arrive in key order (t_id order), which appends to the last chunk and opens
 * a new one when it is full; a key that arrives out of order goes into the
 * chunk of its range, which is then re-sorted lazily, when iterated. A chunk
 * that overflows is split in two. Behaves as a Map whose iteration order is
 * key order; do not mutate it while iterating (no caller does).
 */
class Group implements Map<string, Entry> {
  chunks: Chunk[] = [];
  private count = 0;
  readonly [Symbol.toStringTag] = 'Group';

  /** `max`: keys per chunk (CHUNK_MAX; tests use tiny chunks to reach splits and merges); `name`: the group's prefix. */
  constructor(private readonly max: number, readonly name: string) {}

  get size(): number {
    return this.count;
  }

  /** Index of the chunk whose range holds `key` (chunks must not be empty). */
  private find(key: string): number {
    const c = this.chunks;
    let lo = 0;
    let hi = c.length - 1;
    if (hi === 0 || key >= c[hi].lo) return hi; // one chunk, or an append
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (c[mid].lo <= key) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  get(key: string): Entry | undefined {
    return this.chunks.length === 0 ? undefined : this.chunks[this.find(key)].map.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, e: Entry): this {
    if (this.chunks.length === 0) {
      this.chunks.push(new Chunk(key, this.max));
    }
    let i = this.find(key);
    let c = this.chunks[i];
    if (c.map.has(key)) {
      c.map.set(key, e); // same position, new version
      return this;
    }
    if (c.map.size >= c.cap) {
      if (i === this.chunks.length - 1 && c.sorted && key > c.last) {
        // In-order append to a full last chunk: open a new one, O(1).
        c = new Chunk(key, this.max);
        this.chunks.push(c);
        i++;
      } else {
        this.split(i);
        if (key >= this.chunks[i + 1].lo) i++;
        c = this.chunks[i];
      }
    }
    if (c.map.size > 0 && key < c.last) c.sorted = false;
    else c.last = key;
    c.map.set(key, e);
    this.count++;
    return this;
  }

  /** Splits a full chunk into two halves of its key range. */
  private split(i: number): void {
    const c = this.chunks[i];
    const keys = c.sorted ? Array.from(c.map.keys()) : sortedKeys(c.map);
    const half = keys.length >> 1;
    const lm = new Map<string, Entry>();
    const rm = new Map<string, Entry>();
    for (let k = 0; k < half; k++) lm.set(keys[k], c.map.get(keys[k]) as Entry);
    for (let k = half; k < keys.length; k++) rm.set(keys[k], c.map.get(keys[k]) as Entry);
    const left = new Chunk(c.lo, this.max, lm, keys[half - 1]);
    const right = new Chunk(keys[half], this.max, rm, keys[keys.length - 1]);
    this.chunks.splice(i, 1, left, right);
  }

  delete(key: string): boolean {
    if (this.chunks.length === 0) return false;
    const i = this.find(key);
    const c = this.chunks[i];
    if (!c.map.delete(key)) return false;
    this.count--;
    if (c.map.size === 0) {
      // Its range goes to the chunk before it (find() picks the last chunk
      // whose lo <= key), whose keys are all below it, so that chunk stays in
      // order; if it was chunk 0, the new chunk 0 takes everything below.
      this.chunks.splice(i, 1);
    } else if (c.map.size <= this.max >> 3 && this.chunks.length > 1) {
      // Merge a nearly empty chunk into a neighbour, so deletes cannot leave a Map per row behind.
      this.mergeSmall(i);
    }
    return true;
  }

  /** Merges chunk i with a neighbour when both together fit in half a chunk. */
  private mergeSmall(i: number): void {
    const j = i + 1 < this.chunks.length ? i : i - 1; // merge chunks j and j + 1
    const a = this.chunks[j];
    const b = this.chunks[j + 1];
    if (a.map.size + b.map.size > this.max >> 1) return;
    a.sort();
    b.sort();
    for (const [k, v] of b.map) a.map.set(k, v); // every key of b is above every key of a
    if (b.map.size > 0) a.last = b.last;
    this.chunks.splice(j + 1, 1);
  }

  clear(): void {
    this.chunks = [];
    this.count = 0;
  }

  /**
   * The members' keys and entries, in key order, as two arrays: copied
   * chunk by chunk by the native iterators (pointers only; no entry is
   * touched), then joined by one native concat (a group snapshot, snapshot.ts).
   */
  copy(): [string[], Entry[]] {
    const ks: string[][] = [];
    const es: Entry[][] = [];
    for (let c = 0; c < this.chunks.length; c++) {
      const m = this.sortedMap(c);
      ks.push(Array.from(m.keys()));
      es.push(Array.from(m.values()));
    }
    if (ks.length === 1) return [ks[0], es[0]];
    return [([] as string[]).concat(...ks), ([] as Entry[]).concat(...es)];
  }

  /**
   * Up to `limit` keys above `after` ('' = from the first), in key order,
   * with their entries: one page of a collection's members (a set lists its
   * members in key order, docs/format.md). Costs the page plus, at most, one
   * chunk's keys below `after`.
   */
  keysAfter(after: string, limit: number, keys: string[], entries: Entry[]): void {
    if (this.chunks.length === 0 || limit <= 0) return;
    for (let i = after === '' ? 0 : this.find(after); i < this.chunks.length; i++) {
      for (const [k, e] of this.sortedMap(i)) {
        if (after !== '' && k <= after) continue;
        keys.push(k);
        entries.push(e);
        if (keys.length >= limit) return;
      }
    }
  }

  /** The chunk's map in key order (sorting it first if keys arrived out of order). */
  sortedMap(i: number): Map<string, Entry> {
    const c = this.chunks[i];
    c.sort();
    return c.map;
  }

  forEach(fn: (value: Entry, key: string, map: Map<string, Entry>) => void, thisArg?: unknown): void {
    for (const [k, v] of this) fn.call(thisArg, v, k, this);
  }

  // A one-chunk group (a table under CHUNK_MAX rows: nearly all of them)
  // hands out the native Map iterator, so scanning it costs what it did when
  // a group was one Map.
  entries(): MapIterator<[string, Entry]> {
    if (this.chunks.length === 1) return this.sortedMap(0).entries();
    return new ChunkIterator(this, (m) => m.entries());
  }

  keys(): MapIterator<string> {
    if (this.chunks.length === 1) return this.sortedMap(0).keys();
    return new ChunkIterator(this, (m) => m.keys());
  }

  values(): MapIterator<Entry> {
    if (this.chunks.length === 1) return this.sortedMap(0).values();
    return new ChunkIterator(this, (m) => m.values());
  }

  [Symbol.iterator](): MapIterator<[string, Entry]> {
    return this.entries();
  }
}

/** Walks a group chunk by chunk; each chunk is put in key order as it is reached. */
class ChunkIterator<T> implements MapIterator<T> {
  private i = 0;
  private inner: Iterator<T> | undefined;
  readonly [Symbol.toStringTag] = 'Group Iterator';

  constructor(private readonly g: Group, private readonly pick: (m: Map<string, Entry>) => Iterator<T>) {}

  next(): IteratorResult<T, undefined> {
    for (;;) {
      if (this.inner !== undefined) {
        const r = this.inner.next();
        if (r.done !== true) return r;
        this.inner = undefined;
        this.i++;
      }
      if (this.i >= this.g.chunks.length) return { done: true, value: undefined };
      this.inner = this.pick(this.g.sortedMap(this.i));
    }
  }

  [Symbol.iterator](): MapIterator<T> {
    return this;
  }
}

/** Cost charged against the cache budget for one cached value (object overheads included). */
function cacheCost(e: Entry): number {
  return (e.val === undefined ? 0 : e.vlen + 96) + (e.memo === undefined ? 0 : 2 * e.vlen + 64);
}

/** The group a key belongs to: its prefix up to and including the last U+0000. */
export function groupOf(key: string): string | undefined {
  const i = key.lastIndexOf('\u0000');
  return i < 0 ? undefined : key.slice(0, i + 1);
}

interface ExpiryItem {
  exp: number;
  key: string;
  entry: Entry;
}

export class KeyDir {
  /** Every live key. Iterable and get-able like a Map; iteration is shard by shard, not insertion order. */
  readonly map = new ShardedMap<Entry>();
  private readonly groups = new Map<string, Group>();
  /** The group groupFor() returned last (never a removed one). */
  private lastGroup: Group | undefined;
  private groupedKeys = 0;

  // Value cache: a CLOCK queue of entries whose val/memo is set. Invariant:
  // an entry has FLAG_QUEUED exactly when cacheQueue[e.qpos - queueBase] is
  // that entry, at or after cacheHead.
  private cacheQueue: Entry[] = [];
  private cacheHead = 0;
  private queueBase = 0;
  /** Entries whose val or memo is set (the queue may also hold slots of dropped ones). */
  private cachedEntries = 0;
  cacheBytes = 0;
  cacheBudget: number;

  // Expiry: a binary min-heap of the entries that carry an expiry.
  private heap: ExpiryItem[] = [];
  /** Current entries that carry an expiry (the heap also holds items of replaced versions). */
  private expiring = 0;

  /** Decides whether an entry's value may leave memory (false while its bytes are not in the file). */
  evictable: (e: Entry) => boolean = () => true;

  constructor(cacheBudget: number, private readonly chunkMax = CHUNK_MAX) {
    this.cacheBudget = cacheBudget;
  }

  get size(): number {
    return this.map.size;
  }

  /** Current entries that carry an expiry (any key, grouped or not). */
  get expiringCount(): number {
    return this.expiring;
  }

  /** Keys that belong to no group: the model's top-level objects. */
  get ungroupedSize(): number {
    return this.map.size - this.groupedKeys;
  }

  get(key: string): Entry | undefined {
    return this.map.get(key);
  }

  /**
   * Makes `e` the current version of `key`; returns the version it replaced.
   * Accounting of live bytes follows the entries (see Segment.live).
   */
  set(key: string, e: Entry): Entry | undefined {
    const shard = this.map.shard(key); // one hash for the get and the set
    const prev = shard.get(key);
    this.map.setIn(shard, key, e);
    e.flags |= FLAG_CURRENT;
    if (e.seg !== undefined) e.seg.live += e.size;
    if (prev !== undefined) {
      this.retire(prev);
      if ((prev.flags & FLAG_QUEUED) !== 0) this.takeSlot(prev, e);
    }
    const cut = key.lastIndexOf('\u0000');
    if (cut >= 0) {
      this.groupFor(key, cut).set(key, e); // a new member, or a new version in the same position
      if (prev === undefined) this.groupedKeys++;
    }
    if (e.exp !== 0) {
      this.expiring++;
      this.pushExpiry(key, e);
    }
    return prev;
  }

  /** Removes `key`; returns the removed entry. */
  delete(key: string): Entry | undefined {
    const prev = this.map.get(key);
    if (prev === undefined) return undefined;
    this.map.delete(key);
    this.retire(prev);
    const g = groupOf(key);
    if (g !== undefined) {
      const grp = this.groups.get(g);
      if (grp !== undefined) {
        grp.delete(key);
        this.groupedKeys--;
        if (grp.size === 0) {
          this.groups.delete(g);
          if (this.lastGroup === grp) this.lastGroup = undefined;
        }
      }
    }
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
    for (const [key, e] of removed) {
      this.map.delete(key);
      this.retire(e);
    }
    return removed;
  }

  /** Puts back a version removed by set/delete/dropGroup (used to undo a failed batch). */
  restore(key: string, e: Entry | undefined): void {
    const cur = this.map.get(key);
    if (cur !== undefined) {
      if (e === undefined) this.delete(key);
      else this.set(key, e);
      return;
    }
    if (e !== undefined) this.set(key, e);
  }

  /**
   * A write caches its new version (queued last) and then retires the old
   * one, whose slot would stay behind, dead, until a prune: the new version
   * takes that slot instead, so a key rewritten N times holds one slot, not
   * N (a table's meta key is rewritten by every row insert: without this,
   * every inserted row kept a dead entry alive).
   */
  private takeSlot(prev: Entry, e: Entry): void {
    const q = this.cacheQueue;
    if ((e.flags & FLAG_QUEUED) === 0 || q[q.length - 1] !== e) return;
    q[prev.qpos - this.queueBase] = e;
    e.qpos = prev.qpos;
    prev.flags &= ~FLAG_QUEUED;
    q.pop();
  }

  private retire(e: Entry): void {
    e.flags &= ~FLAG_CURRENT;
    if (e.exp !== 0) this.expiring--;
    if (e.seg !== undefined) e.seg.live -= e.size;
    this.uncache(e);
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
    const name = key.slice(0, cut + 1);
    let grp = this.groups.get(name);
    if (grp === undefined) {
      grp = new Group(this.chunkMax, name);
      this.groups.set(name, grp);
    }
    this.lastGroup = grp;
    return grp;
  }

  /**
   * The members of a group; iterating it yields them in key order (live view;
   * do not mutate, and do not mutate the directory while iterating it).
   */
  groupMembers(group: string): Map<string, Entry> | undefined {
    return this.groups.get(group);
  }

  /** Up to `limit` keys of a group above `after` ('' = from the first) and their entries, in key order. */
  groupKeysAfter(group: string, after: string, limit: number): [string[], Entry[]] {
    const keys: string[] = [];
    const entries: Entry[] = [];
    this.groups.get(group)?.keysAfter(after, limit, keys, entries);
    return [keys, entries];
  }

  /** A group's keys and entries in key order, as two arrays (empty when there is no such group). */
  copyGroup(group: string): [string[], Entry[]] {
    const g = this.groups.get(group);
    return g === undefined ? [[], []] : g.copy();
  }

  // ---- value cache -------------------------------------------------------

  /**
   * Attaches a value (and optionally its decoded form) to an entry. The bytes
   * are kept only while they are the entry's only form, or not yet in the log
   * (see dropBytes, which applies the same rule once they are).
   */
  cache(e: Entry, val: Buffer | undefined, memo: unknown, dec: Decoder<unknown> | undefined): void {
    if (memo !== undefined && e.seg !== undefined) val = undefined;
    // Nothing to hold (a decoder that returned undefined and no bytes): counting the
    // entry as cached would leave it counted forever, as uncache() sees nothing to drop.
    if (val === undefined && memo === undefined) return;
    const before = cacheCost(e);
    const wasCached = e.val !== undefined || e.memo !== undefined;
    e.val = val;
    e.memo = memo;
    e.dec = dec;
    this.cacheBytes += cacheCost(e) - before;
    if (!wasCached) {
      this.cachedEntries++;
      if ((e.flags & FLAG_QUEUED) === 0) {
        e.flags |= FLAG_QUEUED;
        e.qpos = this.queueBase + this.cacheQueue.length;
        this.cacheQueue.push(e);
        // Versions replaced or deleted while under budget leave their slots
        // behind; drop them once they outnumber the cached entries, or the
        // queue would grow with every overwrite.
        if (this.cacheQueue.length - this.cacheHead > 2 * this.cachedEntries + 1024) this.pruneQueue();
      }
    }
    e.flags |= FLAG_REF;
    if (this.cacheBytes > this.cacheBudget) this.evict();
  }

  private pruneQueue(): void {
    const q = this.cacheQueue;
    const kept: Entry[] = [];
    for (let i = this.cacheHead; i < q.length; i++) {
      const e = q[i];
      if (e.val !== undefined || e.memo !== undefined) {
        e.qpos = kept.length;
        kept.push(e);
      } else e.flags &= ~FLAG_QUEUED;
    }
    this.cacheQueue = kept;
    this.cacheHead = 0;
    this.queueBase = 0;
  }

  /**
   * Lets go of the stored bytes of an entry whose decoded form is cached,
   * once its bytes are in the log file (the engine calls it when the write
   * lands): reads use the decoded form, and a read with another decoder
   * reads the file. Rows and documents so hold one copy in memory, not two
   * (and no slice pins an 8 KiB buffer pool).
   */
  dropBytes(e: Entry): void {
    if (e.val === undefined || e.memo === undefined) return;
    const before = cacheCost(e);
    e.val = undefined;
    this.cacheBytes += cacheCost(e) - before;
  }

  /** Whether a value of `vlen` bytes (and its decoded form) can be cached without evicting anything. */
  hasRoom(vlen: number): boolean {
    return this.cacheBytes + 3 * vlen + 160 <= this.cacheBudget;
  }

  /** Changes an entry's stored value length (compaction re-encoded it), keeping the cache's charge right. */
  resize(e: Entry, vlen: number): void {
    const before = cacheCost(e);
    e.vlen = vlen;
    this.cacheBytes += cacheCost(e) - before;
  }

  touch(e: Entry): void {
    e.flags |= FLAG_REF;
  }

  uncache(e: Entry): void {
    if (e.val === undefined && e.memo === undefined) return;
    this.cachedEntries--;
    this.cacheBytes -= cacheCost(e);
    e.val = undefined;
    e.memo = undefined;
    e.dec = undefined;
  }

  private evict(): void {
    const q = this.cacheQueue;
    // Two passes over the queue at most: the first may only clear ref bits.
    let budget = 2 * (q.length - this.cacheHead) + 1;
    while (this.cacheBytes > this.cacheBudget && this.cacheHead < q.length && budget-- > 0) {
      const e = q[this.cacheHead];
      (q as Array<Entry | undefined>)[this.cacheHead] = undefined;
      this.cacheHead++;
      if (e.val === undefined && e.memo === undefined) {
        e.flags &= ~FLAG_QUEUED; // already dropped
        continue;
      }
      if ((e.flags & FLAG_REF) !== 0 || !this.evictable(e)) {
        e.flags &= ~FLAG_REF;
        e.qpos = this.queueBase + q.length;
        q.push(e);
        continue;
      }
      e.flags &= ~FLAG_QUEUED;
      this.uncache(e);
    }
    if (this.cacheHead > 4096 && this.cacheHead * 2 > q.length) {
      this.cacheQueue = q.slice(this.cacheHead);
      this.queueBase += this.cacheHead;
      this.cacheHead = 0;
    }
  }

  // ---- expiry ------------------------------------------------------------

  private pushExpiry(key: string, entry: Entry): void {
    // Items of replaced versions stay until their time comes; a key that is
    // rewritten often with a long ttl would pile them up. Rebuild without
    // them once they outnumber the live ones.
    if (this.heap.length > 2 * this.expiring + 1024) this.pruneHeap();
    const h = this.heap;
    const item: ExpiryItem = { exp: entry.exp, key, entry };
    let i = h.length;
    h.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent].exp <= item.exp) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = item;
  }

  private pruneHeap(): void {
    const seen = new Set<Entry>();
    const kept: ExpiryItem[] = [];
    for (const item of this.heap) {
      if (this.map.get(item.key) === item.entry && !seen.has(item.entry)) {
        seen.add(item.entry);
        kept.push(item);
      }
    }
    kept.sort((a, b) => a.exp - b.exp); // a sorted array is a valid min-heap
    this.heap = kept;
  }

  private popExpiry(): ExpiryItem | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length === 0 || last === undefined) return top;
    let i = 0;
    const n = h.length;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && h[c + 1].exp < h[c].exp) c++;
      if (h[c].exp >= last.exp) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = last;
    return top;
  }

  /**
   * Removes up to `limit` keys whose expiry is at or before `now`.
   * Returns how many were removed; the caller loops with a yield in between.
   */
  sweep(now: number, limit: number): number {
    let removed = 0;
    const h = this.heap;
    while (h.length > 0 && h[0].exp <= now && removed < limit) {
      const item = this.popExpiry() as ExpiryItem;
      if (this.map.get(item.key) === item.entry) {
        this.delete(item.key);
        removed++;
      }
    }
    return removed;
  }

  /** Earliest pending expiry, or 0. */
  nextExpiry(): number {
    return this.heap.length > 0 ? this.heap[0].exp : 0;
  }
}
