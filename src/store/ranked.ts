/**
 * (score, member) pairs in sorted-set order with ranks: an order-statistic
 * structure (docs/api.md, "Sorted sets"; docs/format.md, "Collections").
 *
 * Sorted chunks of a few hundred pairs, as SortedList (sorted.ts), each held
 * as two plain arrays (scores unboxed, members as pointers), plus a Fenwick
 * tree over the chunk sizes. Finding a pair is two binary searches; its rank
 * is the Fenwick prefix sum of the chunks before it plus its offset, and the
 * pair at a rank is found by descending the tree: O(log n) each. An insert or
 * delete moves at most one chunk's worth of entries and updates the tree in
 * O(log chunks); a chunk that splits or empties rebuilds the tree in
 * O(chunks), once per few hundred inserts. Backend-free: any store may use it.
 */
const CHUNK = 512;

interface Chunk {
  s: number[];
  m: string[];
  /** The structure's `gen` when this chunk was made: one made before the last snapshot is shared with it. */
  g: number;
}

/**
 * Ties on score order by the member strings' UTF-16 units, with the engine's
 * native comparison. The log store hands in element keys: one sorted set's
 * keys share their group prefix and end in the member's UTF-8 bytes, one
 * Latin-1 character each (log/collections.ts, encodeMember), so unit order is
 * the members' byte order. A comparison walked in JavaScript would re-read the
 * shared prefix (up to ~270 characters) on every tie.
 */
const cmp = (s1: number, m1: string, s2: number, m2: string): number => (s1 < s2 ? -1 : s1 > s2 ? 1 : m1 < m2 ? -1 : m1 > m2 ? 1 : 0);

/** Whether a Float64Array's high word is the second Uint32 of each pair of its bytes. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The positions of `scores` in ascending score order, stable (equal scores
 * keep their given order, so members given in member order stay in it): an
 * LSD radix sort of each score's IEEE 754 bits made order-preserving as two
 * unsigned words, 16 bits a pass. Four linear passes, where a comparison sort
 * or a binary search per element costs n log n steps on a million members.
 * -0 sorts as 0, as the comparison does; scores are finite.
 */
export function scoreOrder(scores: ArrayLike<number>): Int32Array {
  const n = scores.length;
  const f = new Float64Array(n);
  for (let i = 0; i < n; i++) f[i] = scores[i] === 0 ? 0 : scores[i];
  const words = new Uint32Array(f.buffer);
  const [loAt, hiAt] = LITTLE_ENDIAN ? [0, 1] : [1, 0];
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const h = words[2 * i + hiAt];
    const l = words[2 * i + loAt];
    // Negative: every bit flipped (larger magnitude sorts first); positive: the sign bit set.
    if (h & 0x80000000) {
      hi[i] = ~h >>> 0;
      lo[i] = ~l >>> 0;
    } else {
      hi[i] = (h | 0x80000000) >>> 0;
      lo[i] = l;
    }
  }
  let idx = new Int32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  let out = new Int32Array(n);
  const count = new Int32Array(65_536);
  for (const [word, shift] of [
    [lo, 0],
    [lo, 16],
    [hi, 0],
    [hi, 16],
  ] as const) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[(word[i] >>> shift) & 0xffff]++;
    // All in one bucket: this pass would not move anything.
    if (n === 0 || count[(word[0] >>> shift) & 0xffff] === n) continue;
    let sum = 0;
    for (let d = 0; d < 65_536; d++) {
      const c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const at = idx[i];
      out[count[(word[at] >>> shift) & 0xffff]++] = at;
    }
    [idx, out] = [out, idx];
  }
  return idx;
}

export class RankedPairs {
  private chunks: Chunk[] = [];
  /** Fenwick tree (1-based) over chunk sizes. */
  private tree: number[] = [0];
  size = 0;
  /**
   * Bumped by each snapshot: a chunk whose `g` differs is shared with a
   * snapshot and copied before it is changed (copy on write, one chunk of at
   * most CHUNK pairs at a time). A snapshot's own `gen` is -1: it owns none.
   */
  private gen = 0;

  /**
   * The pairs as they are now, for reading in slices while this structure
   * goes on changing (docs/query.md, "Large collections"): it copies the
   * list of chunks and the tree (a pointer per CHUNK/2 to CHUNK pairs), not
   * the pairs; a later change copies the one chunk it touches.
   */
  snapshot(): RankedPairs {
    const r = new RankedPairs();
    r.chunks = this.chunks.slice();
    r.tree = this.tree.slice();
    r.size = this.size;
    r.gen = -1;
    this.gen++;
    return r;
  }

  /** Chunk `ci`, copied first when a snapshot shares it. */
  private own(ci: number): Chunk {
    const c = this.chunks[ci];
    if (c.g === this.gen) return c;
    const copy = { s: c.s.slice(), m: c.m.slice(), g: this.gen };
    this.chunks[ci] = copy;
    return copy;
  }

  /** Builds from pairs already in order and free of duplicate members. */
  static fromSorted(scores: readonly number[], members: readonly string[]): RankedPairs {
    const r = new RankedPairs();
    const step = CHUNK / 2;
    for (let i = 0; i < scores.length; i += step) {
      r.chunks.push({ s: scores.slice(i, i + step), m: members.slice(i, i + step), g: 0 });
    }
    r.size = scores.length;
    r.rebuild();
    return r;
  }

  private rebuild(): void {
    const n = this.chunks.length;
    const t = new Array<number>(n + 1).fill(0);
    for (let i = 0; i < n; i++) {
      const j = i + 1;
      t[j] += this.chunks[i].s.length;
      const p = j + (j & -j);
      if (p <= n) t[p] += t[j];
    }
    this.tree = t;
  }

  private bump(ci: number, d: number): void {
    const t = this.tree;
    for (let j = ci + 1; j < t.length; j += j & -j) t[j] += d;
  }

  /** Pairs in chunks before `ci`. */
  private before(ci: number): number {
    let sum = 0;
    for (let j = ci; j > 0; j -= j & -j) sum += this.tree[j];
    return sum;
  }

  /** The last chunk whose first pair is ≤ (s, m) (0 if none). */
  private chunkOf(s: number, m: string): number {
    const cs = this.chunks;
    let lo = 0;
    let hi = cs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (cmp(cs[mid].s[0], cs[mid].m[0], s, m) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** First offset in `c` whose pair is ≥ (s, m). */
  private static lower(c: Chunk, s: number, m: string): number {
    let lo = 0;
    let hi = c.s.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(c.s[mid], c.m[mid], s, m) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  add(s: number, m: string): void {
    if (this.chunks.length === 0) {
      this.chunks.push({ s: [s], m: [m], g: this.gen });
      this.size = 1;
      this.rebuild();
      return;
    }
    const ci = this.chunkOf(s, m);
    const c = this.own(ci);
    const i = RankedPairs.lower(c, s, m);
    c.s.splice(i, 0, s);
    c.m.splice(i, 0, m);
    this.size++;
    if (c.s.length > CHUNK) {
      const half = CHUNK / 2;
      this.chunks.splice(ci + 1, 0, { s: c.s.splice(half), m: c.m.splice(half), g: this.gen });
      this.rebuild();
    } else {
      this.bump(ci, 1);
    }
  }

  /** Removes the pair; false when it is not there. */
  delete(s: number, m: string): boolean {
    if (this.size === 0) return false;
    const ci = this.chunkOf(s, m);
    const i = RankedPairs.lower(this.chunks[ci], s, m);
    const found = this.chunks[ci];
    if (i >= found.s.length || found.s[i] !== s || found.m[i] !== m) return false;
    const c = this.own(ci);
    c.s.splice(i, 1);
    c.m.splice(i, 1);
    this.size--;
    if (c.s.length === 0) {
      this.chunks.splice(ci, 1);
      this.rebuild();
    } else {
      this.bump(ci, -1);
    }
    return true;
  }

  /** Rank (0-based, ascending) of the pair; -1 when it is not there. */
  rank(s: number, m: string): number {
    if (this.size === 0) return -1;
    const ci = this.chunkOf(s, m);
    const c = this.chunks[ci];
    const i = RankedPairs.lower(c, s, m);
    if (i >= c.s.length || c.s[i] !== s || c.m[i] !== m) return -1;
    return this.before(ci) + i;
  }

  /**
   * How many pairs have a score below `score` (at most `score` when
   * `inclusive`): the rank of the first pair above that bound.
   */
  countBelow(score: number, inclusive: boolean): number {
    if (this.size === 0) return 0;
    const cs = this.chunks;
    // The first chunk whose first score is past the bound; the answer lies in the chunk before it.
    let lo = 0;
    let hi = cs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const f = cs[mid].s[0];
      if (inclusive ? f <= score : f < score) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) return 0;
    const ci = lo - 1;
    const c = cs[ci].s;
    let a = 0;
    let b = c.length;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (inclusive ? c[mid] <= score : c[mid] < score) a = mid + 1;
      else b = mid;
    }
    return this.before(ci) + a;
  }

  /** Chunk index and offset of the pair at `rank` (0 ≤ rank < size), by descending the tree. */
  private locate(rank: number): [number, number] {
    const t = this.tree;
    let pos = 0;
    let rem = rank;
    let step = 1;
    while (step * 2 < t.length) step *= 2;
    for (; step > 0; step >>= 1) {
      const next = pos + step;
      if (next < t.length && t[next] <= rem) {
        pos = next;
        rem -= t[next];
      }
    }
    return [pos, rem];
  }

  /**
   * Calls `visit` with the pairs of ranks `from`..`to` (inclusive, clamped),
   * ascending, or descending from `to` down to `from` when `desc`.
   */
  slice(from: number, to: number, desc: boolean, visit: (s: number, m: string) => void): void {
    if (from < 0) from = 0;
    if (to > this.size - 1) to = this.size - 1;
    if (from > to) return;
    const cs = this.chunks;
    if (!desc) {
      let [ci, i] = this.locate(from);
      for (let n = to - from + 1; n > 0; ci++, i = 0) {
        const c = cs[ci];
        for (; i < c.s.length && n > 0; i++, n--) visit(c.s[i], c.m[i]);
      }
      return;
    }
    let [ci, i] = this.locate(to);
    for (let n = to - from + 1; n > 0; ci--, i = ci >= 0 ? cs[ci].s.length - 1 : -1) {
      const c = cs[ci];
      for (; i >= 0 && n > 0; i--, n--) visit(c.s[i], c.m[i]);
    }
  }
}
