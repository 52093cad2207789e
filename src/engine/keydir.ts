/**
 * The key directory: every live key, where its value lives, when it expires,
 * and (maybe) the value itself under a byte-budgeted cache.
 *
 * Memory is the constraint here (target: <= 200 bytes per key beyond the key
 * string), so an Entry is one small fixed-shape object and the directory is
 * one Map. Keys that contain U+0000 also belong to a *group* (the prefix up to
 * and including the last U+0000) so the model can iterate a table's rows
 * without touching the rest of the directory.
 */
import type { Segment } from './segment.js';

/** Turns stored bytes into whatever the caller wants cached next to them. */
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
  }
}

/** A group: keys in insertion order, re-sorted lazily when one arrives out of order. */
class Group {
  map = new Map<string, Entry>();
  last = '';
  sorted = true;
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
  readonly map = new Map<string, Entry>();
  private readonly groups = new Map<string, Group>();
  private groupedKeys = 0;

  // Value cache: a CLOCK queue of entries whose val/memo is set.
  private cacheQueue: Entry[] = [];
  private cacheHead = 0;
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

  constructor(cacheBudget: number) {
    this.cacheBudget = cacheBudget;
  }

  get size(): number {
    return this.map.size;
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
    const prev = this.map.get(key);
    this.map.set(key, e);
    e.flags |= FLAG_CURRENT;
    if (e.seg !== undefined) e.seg.live += e.size;
    if (prev !== undefined) this.retire(prev);
    const g = key.lastIndexOf('\u0000') < 0 ? undefined : groupOf(key);
    if (g !== undefined) {
      if (prev === undefined) this.addToGroup(g, key, e);
      else (this.groups.get(g) as Group).map.set(key, e); // same position, new version
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
        grp.map.delete(key);
        this.groupedKeys--;
        if (grp.map.size === 0) this.groups.delete(g);
      }
    }
    return prev;
  }

  /** Removes a whole group; returns its former members (for undo). */
  dropGroup(group: string): Array<[string, Entry]> {
    const grp = this.groups.get(group);
    if (grp === undefined) return [];
    const removed = Array.from(grp.map);
    this.groups.delete(group);
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

  private retire(e: Entry): void {
    e.flags &= ~FLAG_CURRENT;
    if (e.exp !== 0) this.expiring--;
    if (e.seg !== undefined) e.seg.live -= e.size;
    this.uncache(e);
  }

  private addToGroup(g: string, key: string, e: Entry): void {
    let grp = this.groups.get(g);
    if (grp === undefined) {
      grp = new Group();
      this.groups.set(g, grp);
    }
    if (grp.map.size > 0 && key < grp.last) grp.sorted = false;
    else grp.last = key;
    grp.map.set(key, e);
    this.groupedKeys++;
  }

  /** The members of a group in key order (live view; do not mutate). */
  groupMembers(group: string): Map<string, Entry> | undefined {
    const grp = this.groups.get(group);
    if (grp === undefined) return undefined;
    if (!grp.sorted) {
      const keys = Array.from(grp.map.keys()).sort();
      const m = new Map<string, Entry>();
      for (const k of keys) m.set(k, grp.map.get(k) as Entry);
      grp.map = m;
      grp.last = keys[keys.length - 1];
      grp.sorted = true;
    }
    return grp.map;
  }

  // ---- value cache -------------------------------------------------------

  /** Attaches a value (and optionally its decoded form) to an entry. */
  cache(e: Entry, val: Buffer, memo: unknown, dec: Decoder<unknown> | undefined): void {
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
      if (e.val !== undefined || e.memo !== undefined) kept.push(e);
      else e.flags &= ~FLAG_QUEUED;
    }
    this.cacheQueue = kept;
    this.cacheHead = 0;
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
        q.push(e);
        continue;
      }
      e.flags &= ~FLAG_QUEUED;
      this.uncache(e);
    }
    if (this.cacheHead > 4096 && this.cacheHead * 2 > q.length) {
      this.cacheQueue = q.slice(this.cacheHead);
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
