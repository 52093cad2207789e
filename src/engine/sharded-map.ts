/**
 * The key directory's map of every live key: 256 small Maps chosen by a hash
 * of the key, so that no single insert pays for rehashing a large Map.
 */

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
