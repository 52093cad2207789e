/**
 * A group's members in key order (the keys that share a prefix up to their
 * last U+0000: a table's rows, a collection's elements): a list of chunks,
 * each a key range in one small Map. The chunks hold each member's key
 * without the group's prefix (its *member key*): the group knows it.
 * (Group commit, the writer's batching of appends, is writer.ts; a group
 * here is a set of keys, not a set of writes.)
 */
import type { Entry } from './entry.js';

/**
 * Most keys one chunk of a group holds. A chunk's Map rehashes in well under
 * a millisecond at this size, and sorting or splitting one costs about as
 * much, so no single insert into a group of any size pays more.
 */
export const CHUNK_MAX = 4096;

/**
 * A bare page at least this long copies each chunk it touches by the native
 * iterators and finds where it starts by binary search; a shorter one walks
 * the chunk's [key, entry] pairs, as a few members cost less than a copy.
 */
const NATIVE_PAGE = 256;

/**
 * A member key's own copy of `key`'s characters from `cut` on. In V8 a slice
 * of 13 characters or more is a view that keeps the whole key alive (a
 * sliced string: 32 bytes on top of the key's own); a shorter one is a copy.
 * Joining two pieces builds a new flat string, sized to the member.
 */
function ownMember(key: string, cut: number): string {
  return key.length - cut < 13 ? key.slice(cut) : [key[cut], key.slice(cut + 1)].join('');
}

/**
 * One key range of a group: keys k with lo <= k < (next chunk's lo). `lo` is
 * a whole key (one string per chunk): the binary search over the chunks
 * compares the key looked up, as given, with it; a slice of the key (a view
 * into it) compares several times slower (measured: a lookup in a 200,000-key
 * group took 250 ns more). Chunk 0's lo is never consulted: it takes every
 * key below chunk 1's lo. The map and `last` hold member keys.
 */
class Chunk {
  map: Map<string, Entry>;
  lo: string;
  /** `lo` without the group's prefix: an insert finds its chunk by member key ('' for chunk 0, never consulted). */
  loMember: string;
  /** Greatest member key appended since the map was last in key order; keys are appended in order as long as sorted holds. */
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

  constructor(lo: string, loMember: string, max: number, map: Map<string, Entry> = new Map(), last = '') {
    this.lo = lo;
    this.loMember = loMember;
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
    this.last = keys.length > 0 ? keys[keys.length - 1] : '';
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
 * that overflows is split in two. Behaves as a Map of full keys whose
 * iteration order is key order; do not mutate it while iterating (no caller
 * does).
 *
 * The chunks are keyed by member key (the key without the group's prefix,
 * which every member shares, so their order is the keys' order): a
 * collection of 16-byte members holds a 16-character string per element
 * instead of the whole key (27 characters for a set's, 48 bytes against 32
 * on the heap). Keys handed out (iteration, keysAfter) are rebuilt as the
 * prefix joined to the member key; copy() and keysAfter(bare) hand out the
 * member keys themselves, which a caller that keeps them (a sorted set's
 * rank order) shares with the group.
 */
export class Group implements Map<string, Entry> {
  chunks: Chunk[] = [];
  private count = 0;
  /** Length of `name`: a key's member key starts there. */
  private readonly cut: number;
  /** The member key swap() made last (the group's own string for a new member): for the directory's expiry heap. */
  lastMember = '';
  readonly [Symbol.toStringTag] = 'Group';

  /** `max`: keys per chunk (CHUNK_MAX; tests use tiny chunks to reach splits and merges); `name`: the group's prefix. */
  constructor(
    private readonly max: number,
    readonly name: string,
  ) {
    this.cut = name.length;
  }

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

  /** Index of the chunk whose range holds the member key `own` (chunks must not be empty). */
  private findMember(own: string): number {
    const c = this.chunks;
    let lo = 0;
    let hi = c.length - 1;
    if (hi === 0 || own >= c[hi].loMember) return hi;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (c[mid].loMember <= own) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** `key` must start with the group's prefix (KeyDir finds a key's group by it). */
  get(key: string): Entry | undefined {
    if (this.chunks.length === 0) return undefined;
    return this.chunks[this.find(key)].map.get(key.slice(this.cut));
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, e: Entry): this {
    this.swap(key, e);
    return this;
  }

  /** Sets `key` to `e`; returns the entry it replaced (one chunk lookup for both). */
  swap(key: string, e: Entry): Entry | undefined {
    // The member key as a string of its own, which a new member keeps (a Map
    // given a key it holds keeps the one it has). Made before the lookup: most
    // keys written are new ones (recovery, appends), and a flat string
    // compares faster than a slice.
    return this.put(ownMember(key, this.cut), e);
  }

  /**
   * Sets the member whose member key is `own` to `e`; returns the entry it
   * replaced. `own` must be a flat string of its own (not a slice of a whole
   * key), as a new member keeps it: recovery decodes it straight from a hint.
   */
  put(own: string, e: Entry): Entry | undefined {
    if (this.chunks.length === 0) {
      this.chunks.push(new Chunk('', '', this.max));
    }
    let i = this.findMember(own);
    let c = this.chunks[i];
    this.lastMember = own;
    // A key above the greatest of an ordered chunk is new (writes and recovery
    // append to a collection or table mostly in key order): no lookup first.
    if (!c.sorted || c.map.size === 0 || own <= c.last) {
      const prev = c.map.get(own);
      if (prev !== undefined) {
        c.map.set(own, e); // same position, new version
        return prev;
      }
    }
    // An in-order append fills the last chunk to `max`, not to its drawn cap:
    // a Map holding exactly a power of two keys has no unused slots (28 bytes
    // a key at 4,096 keys, 32 at the caps' average 3,584). The drawn caps are
    // for chunks that grow anywhere in a group's range; a chunk filled by
    // appends is full either way when a key lands inside its range.
    const append = i === this.chunks.length - 1 && c.sorted && (c.map.size === 0 || own > c.last);
    if (c.map.size >= (append ? this.max : c.cap)) {
      if (append) {
        // In-order append to a full last chunk: open a new one, O(1).
        c = new Chunk(this.name + own, own, this.max);
        this.chunks.push(c);
        i++;
      } else {
        this.split(i);
        if (own >= this.chunks[i + 1].loMember) i++;
        c = this.chunks[i];
      }
    }
    if (c.map.size > 0 && own < c.last) c.sorted = false;
    else c.last = own;
    c.map.set(own, e);
    this.count++;
    return undefined;
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
    const left = new Chunk(c.lo, c.loMember, this.max, lm, keys[half - 1]);
    const right = new Chunk(this.name + keys[half], keys[half], this.max, rm, keys[keys.length - 1]);
    this.chunks.splice(i, 1, left, right);
  }

  delete(key: string): boolean {
    return this.take(key) !== undefined;
  }

  /** Removes `key`; returns the entry it held. */
  take(key: string): Entry | undefined {
    if (this.chunks.length === 0) return undefined;
    const i = this.find(key);
    const c = this.chunks[i];
    const m = key.slice(this.cut);
    const prev = c.map.get(m);
    if (prev === undefined) return undefined;
    c.map.delete(m);
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
    return prev;
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
   * The members' member keys (without the group's prefix) and entries, in key
   * order, as two arrays: copied chunk by chunk by the native iterators
   * (pointers only; no entry is touched), then joined by one native concat
   * (a group snapshot, snapshot.ts).
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
   * with their entries, appended to `keys` and `entries`: one page of a
   * collection's members (a set lists its members in key order,
   * docs/format.md), or a step of a snapshot copied in steps. Costs the page
   * plus, at most, one chunk's keys below `after`. `bare`: the member keys,
   * without the prefix. A bare page takes a chunk it holds whole by the map's
   * native forEach, and copies a chunk it starts or ends in, when long
   * (NATIVE_PAGE), by the native iterators, as copy() does: walking [key, entry]
   * pairs and comparing each key below `after` with it made the steps of a
   * million-member copy several times as costly as copy() (CPU profile of
   * 20 concurrent list reads).
   */
  keysAfter(after: string, limit: number, keys: string[], entries: Entry[], bare = false): void {
    if (this.chunks.length === 0 || limit <= 0) return;
    // Member keys above `a` when `from`; a key outside the group is below all its keys or above all of them.
    let from = false;
    let a = '';
    if (after !== '') {
      if (after.startsWith(this.name)) {
        from = true;
        a = after.slice(this.cut);
      } else if (after > this.name) return;
    }
    const end = keys.length + limit;
    for (let i = from ? this.find(after) : 0; i < this.chunks.length; i++) {
      const m = this.sortedMap(i);
      if (bare && !from && m.size <= end - keys.length) {
        // A chunk taken whole: pushed straight from the map (its native forEach), no temporary arrays.
        m.forEach((e, k) => {
          keys.push(k);
          entries.push(e);
        });
        if (keys.length >= end) return;
        continue;
      }
      if (bare && end - keys.length >= NATIVE_PAGE) {
        const ks = Array.from(m.keys());
        // The first member key above `a`, by binary search in the chunk's (sorted) keys.
        let lo = 0;
        let hi = from ? ks.length : 0;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (ks[mid] <= a) lo = mid + 1;
          else hi = mid;
        }
        const stop = Math.min(ks.length, lo + end - keys.length);
        if (lo < stop) {
          const es = Array.from(m.values());
          for (let j = lo; j < stop; j++) {
            keys.push(ks[j]);
            entries.push(es[j]);
          }
        }
        from = false;
        if (keys.length >= end) return;
        continue;
      }
      for (const [k, e] of m) {
        if (from && k <= a) continue;
        keys.push(bare ? k : this.name + k);
        entries.push(e);
        if (keys.length >= end) return;
      }
      // Every key of the chunks after the one `after` falls in is above it.
      from = false;
    }
  }

  /** The chunk's map in key order (sorting it first if keys arrived out of order); keyed by member key. */
  sortedMap(i: number): Map<string, Entry> {
    const c = this.chunks[i];
    c.sort();
    return c.map;
  }

  forEach(fn: (value: Entry, key: string, map: Map<string, Entry>) => void, thisArg?: unknown): void {
    for (const [k, v] of this) fn.call(thisArg, v, k, this);
  }

  entries(): MapIterator<[string, Entry]> {
    return new ChunkIterator(
      this,
      (m) => m.entries(),
      (r: [string, Entry], name) => {
        // The native iterator hands out a new pair each step: complete its key in place.
        r[0] = name + r[0];
        return r;
      },
    );
  }

  keys(): MapIterator<string> {
    return new ChunkIterator(
      this,
      (m) => m.keys(),
      (k: string, name) => name + k,
    );
  }

  // A one-chunk group (a table under CHUNK_MAX rows: nearly all of them)
  // hands out the native Map iterator, so scanning its values costs what it
  // did when a group was one Map.
  values(): MapIterator<Entry> {
    if (this.chunks.length === 1) return this.sortedMap(0).values();
    return new ChunkIterator(this, (m) => m.values(), undefined);
  }

  [Symbol.iterator](): MapIterator<[string, Entry]> {
    return this.entries();
  }
}

/**
 * Walks a group chunk by chunk; each chunk is put in key order as it is
 * reached. `full` turns what a chunk's iterator yields (keyed by member key)
 * into what the group's does (keyed by full key).
 */
class ChunkIterator<T> implements MapIterator<T> {
  private i = 0;
  private inner: Iterator<T> | undefined;
  readonly [Symbol.toStringTag] = 'Group Iterator';

  constructor(
    private readonly g: Group,
    private readonly pick: (m: Map<string, Entry>) => Iterator<T>,
    private readonly full: ((v: T, name: string) => T) | undefined,
  ) {}

  next(): IteratorResult<T, undefined> {
    for (;;) {
      if (this.inner !== undefined) {
        const r = this.inner.next();
        if (r.done !== true) {
          if (this.full !== undefined) r.value = this.full(r.value, this.g.name);
          return r;
        }
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

/** The group a key belongs to: its prefix up to and including the last U+0000. */
export function groupOf(key: string): string | undefined {
  const i = key.lastIndexOf('\u0000');
  return i < 0 ? undefined : key.slice(0, i + 1);
}
