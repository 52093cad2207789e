/**
 * An ordered set kept as a list of sorted chunks (docs/query.md, "Ordered
 * views"). Lookups are two binary searches (which chunk, then where in it);
 * an insert or delete moves at most one chunk's worth of pointers, plus the
 * chunk list itself when a chunk splits or empties. With chunks of a few
 * hundred elements that is cheap at millions of elements, costs about one
 * pointer per element, and iteration from any position is a plain array walk.
 * Backend-free: the listing views and the secondary indexes both use it.
 */
export type Compare<T> = (a: T, b: T) => number;
/** A compare cheaper than the list's own that gives the same order against one probe, or undefined when there is none for it. */
export type CompareFor<T> = (probe: T) => Compare<T> | undefined;

const CHUNK = 512;

export class SortedList<T> {
  private chunks: T[][] = [];
  size = 0;

  constructor(
    private readonly cmp: Compare<T>,
    private readonly fastFor?: CompareFor<T>,
  ) {}

  /** Builds from values already sorted by `cmp` and free of duplicates (open-time rebuilds). */
  static fromSorted<T>(cmp: Compare<T>, sorted: readonly T[], fastFor?: CompareFor<T>): SortedList<T> {
    const s = new SortedList(cmp, fastFor);
    for (let i = 0; i < sorted.length; i += CHUNK / 2) s.chunks.push(sorted.slice(i, i + CHUNK / 2));
    s.size = sorted.length;
    return s;
  }

  /** Index of the chunk that holds `x` or would: the last chunk whose first element is ≤ x (0 if none). */
  private chunkOf(x: T, cmp: Compare<T>): number {
    const cs = this.chunks;
    let lo = 0;
    let hi = cs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (cmp(cs[mid][0], x) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** First position in `c` whose element is ≥ x (or > x when `after`). */
  private lower(c: T[], x: T, after: boolean, cmp: Compare<T>): number {
    let lo = 0;
    let hi = c.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const r = cmp(c[mid], x);
      if (r < 0 || (after && r === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The compare for searches of `x`: the cheaper one when it holds for `x`. */
  private cmpFor(x: T): Compare<T> {
    return this.fastFor?.(x) ?? this.cmp;
  }

  has(x: T): boolean {
    if (this.size === 0) return false;
    const cmp = this.cmpFor(x);
    const c = this.chunks[this.chunkOf(x, cmp)];
    const i = this.lower(c, x, false, cmp);
    return i < c.length && cmp(c[i], x) === 0;
  }

  /** Adds `x`; false when an equal element is already there. */
  add(x: T): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([x]);
      this.size = 1;
      return true;
    }
    const cmp = this.cmpFor(x);
    const ci = this.chunkOf(x, cmp);
    const c = this.chunks[ci];
    const i = this.lower(c, x, false, cmp);
    if (i < c.length && cmp(c[i], x) === 0) return false;
    c.splice(i, 0, x);
    this.size++;
    if (c.length > CHUNK) this.chunks.splice(ci + 1, 0, c.splice(CHUNK / 2));
    return true;
  }

  /** Removes the element equal to `x`; false when there is none. */
  delete(x: T): boolean {
    if (this.size === 0) return false;
    const cmp = this.cmpFor(x);
    const ci = this.chunkOf(x, cmp);
    const c = this.chunks[ci];
    const i = this.lower(c, x, false, cmp);
    if (i >= c.length || cmp(c[i], x) !== 0) return false;
    c.splice(i, 1);
    this.size--;
    if (c.length === 0) this.chunks.splice(ci, 1);
    return true;
  }

  /**
   * Calls `visit` on the elements ≥ x (> x when `after`), ascending, until it
   * returns false. What `ascending` does without a generator: hot lookups
   * (an index equality, a listing page) allocate no iterator result per element.
   */
  walk(x: T, after: boolean, visit: (e: T) => boolean): void {
    const cs = this.chunks;
    if (cs.length === 0) return;
    const cmp = this.cmpFor(x);
    let ci = this.chunkOf(x, cmp);
    let i = this.lower(cs[ci], x, after, cmp);
    for (; ci < cs.length; ci++, i = 0) {
      const c = cs[ci];
      for (; i < c.length; i++) if (!visit(c[i])) return;
    }
  }

  /** Elements ≥ x (> x when `after`), ascending; with no `x`, all of them. */
  *ascending(x?: T, after = false): Generator<T, void, undefined> {
    const cs = this.chunks;
    let ci = 0;
    let i = 0;
    if (x !== undefined && cs.length > 0) {
      const cmp = this.cmpFor(x);
      ci = this.chunkOf(x, cmp);
      i = this.lower(cs[ci], x, after, cmp);
    }
    for (; ci < cs.length; ci++, i = 0) {
      const c = cs[ci];
      for (; i < c.length; i++) yield c[i];
    }
  }

  /** Elements ≤ x (< x when `before`), descending; with no `x`, all of them. */
  *descending(x?: T, before = false): Generator<T, void, undefined> {
    const cs = this.chunks;
    let ci = cs.length - 1;
    let i = ci < 0 ? -1 : cs[ci].length - 1;
    if (x !== undefined && cs.length > 0) {
      const cmp = this.cmpFor(x);
      ci = this.chunkOf(x, cmp);
      // Last position ≤ x (< x when `before`) is one below the first > x (≥ x).
      i = this.lower(cs[ci], x, !before, cmp) - 1;
    }
    for (; ci >= 0; ci--, i = ci >= 0 ? cs[ci].length - 1 : -1) {
      const c = cs[ci];
      for (; i >= 0; i--) yield c[i];
    }
  }
}

/**
 * Code-point order of two strings, which is UTF-8 byte order. JavaScript's
 * `<` compares UTF-16 units; the two orders differ only where a surrogate
 * (U+D800–DFFF, the halves of characters above U+FFFF) meets U+E000–FFFF.
 */
export function codePointCompare(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      // Move surrogates above every other unit, as their code points are.
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** UTF-16 unit order: JavaScript's `<`. */
const unitCompare: Compare<string> = (a, b) => (a === b ? 0 : a < b ? -1 : 1);
const HIGH_UNIT = /[\ud800-\uffff]/;

/**
 * codePointCompare's cheaper stand-in for a probe with no unit at or above
 * U+D800: the two orders part only where both strings' first differing
 * units are at or above U+D800, and the probe's never is, so for it `<` on
 * units is code-point order.
 */
export const codePointCompareFor: CompareFor<string> = (probe) => (HIGH_UNIT.test(probe) ? undefined : unitCompare);
