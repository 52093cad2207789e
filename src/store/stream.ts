/**
 * Large answers in pieces (docs/query.md, "Large answers"), shared by every
 * store. A store hands over its rows as a RowSource (the rows of one instant,
 * read a batch at a time); the generators here filter, order and render them
 * one batch per step, so no step costs more than a batch of rows and no more
 * than a batch of rows that were not in memory is held at once (plus what
 * the answer itself needs: the matching rows when they must be sorted).
 *
 * The bytes are exactly those of the one-string answers (render() in
 * query.ts and the stores' own loops): same separators, same order.
 */
import { compareRows, type IdRow, type Order, rowText } from './query.js';
import type { RowQuery, Sync, Text } from './store.js';
import { type Matcher, matches } from './wheres.js';

/** Answers over more rows than this are produced in pieces; smaller ones in one string, as before. */
export const STREAM_ROWS = 1000;
/** A batch: at most this many rows ... */
export const BATCH_ROWS = 1024;
/** ... and at most about this many bytes of stored values. */
export const BATCH_BYTES = 256 * 1024;

/** The rows of a table at one instant, in t_id order, read a batch at a time. */
export interface RowSource {
  /** Positions [0, length) hold the rows; a source that learns of fewer rows as it reads may lower it (never below what it has read). */
  readonly length: number;
  /** Position of the first row with a t_id above `after`. */
  firstAbove(after: number): number;
  /** End (exclusive, ≤ end, > from) of the batch that starts at `from`. */
  batchEnd(from: number, end: number): number;
  /** The rows at positions [from, to) (a source may leave some out, e.g. expired ones); `obj` is needed only when `parse` is set. */
  read(from: number, to: number, parse: boolean): Sync<IdRow[]>;
  /** Lets go of what the source holds (idempotent). */
  release(): void;
}

/** A RowSource over rows already in memory (a store whose driver returned them all). */
export class ArraySource implements RowSource {
  constructor(private readonly rows: ReadonlyArray<{ id: number; json: string; obj?: Record<string, unknown> }>) {}

  get length(): number {
    return this.rows.length;
  }

  firstAbove(after: number): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.rows[mid].id <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  batchEnd(from: number, end: number): number {
    return batchEnd(from, end, (i) => this.rows[i].json.length);
  }

  read(from: number, to: number, parse: boolean): IdRow[] {
    const out: IdRow[] = new Array(to - from);
    for (let i = from; i < to; i++) {
      const r = this.rows[i];
      out[i - from] = { id: r.id, json: r.json, obj: r.obj ?? (parse ? (JSON.parse(r.json) as Record<string, unknown>) : EMPTY) };
    }
    return out;
  }

  release(): void {
    // The rows are plain memory, freed with the source: there is nothing to let go of.
  }
}

/** The `obj` of a row read without parsing (`read(…, parse = false)`). */
export const EMPTY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** The end of a batch from `from`: BATCH_ROWS rows or BATCH_BYTES bytes, whichever comes first (at least one row). */
export function batchEnd(from: number, end: number, size: (i: number) => number): number {
  const max = Math.min(end, from + BATCH_ROWS);
  let bytes = 0;
  let i = from;
  while (i < max) {
    bytes += size(i++);
    if (bytes >= BATCH_BYTES) break;
  }
  return i;
}

/** Lets the event loop run (I/O, timers, other requests) before the next step. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Wraps a generator over `src` so that stopping early (the consumer's
 * `return()`, also before the first step) releases the source.
 */
function owning(src: RowSource, gen: AsyncGenerator<string>): AsyncIterable<string> {
  const it: AsyncIterator<string> = {
    next: () => gen.next(),
    return: async (): Promise<IteratorResult<string>> => {
      src.release();
      return gen.return(undefined);
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}

/** GET /tables/<name>: `{"<t_id>":row,...}`, at most `limit` rows above `after`. */
export function pageText(src: RowSource, after: number | undefined, limit: number | undefined): AsyncIterable<string> {
  return owning(src, pagePieces(src, after ?? 0, limit));
}

async function* pagePieces(src: RowSource, after: number, limit: number | undefined): AsyncGenerator<string> {
  try {
    const max = limit ?? Infinity;
    let p = src.firstAbove(after);
    let n = 0;
    let out = '{';
    while (p < src.length && n < max) {
      // A source may skip members (expired ones), so the limit counts rows, not positions.
      const to = src.batchEnd(p, Math.min(src.length, p + (max - n)));
      const got = src.read(p, to, false);
      const rows = got instanceof Promise ? await got : got;
      p = to;
      for (let i = 0; i < rows.length; i++) {
        if (n > 0) out += ',';
        out += `"${rows[i].id}":${rows[i].json}`;
        n++;
      }
      if (p < src.length && n < max) {
        yield out;
        out = '';
      }
    }
    yield out + '}';
  } finally {
    src.release();
  }
}

/**
 * A row query (`query` is `find` with wheres only): an array of rows (or of
 * {"t_id","row"}), or {"count": n}. Without `order`, rows stream out as they
 * match and the scan stops at `limit`; with it, the matching rows are kept
 * (only the best ~2×limit when a limit is set), sorted in slices, then
 * rendered in slices.
 */
export function findText(src: RowSource, matcher: Matcher, q: RowQuery, order: Order | undefined): AsyncIterable<string> {
  return owning(src, findPieces(src, matcher, q, order));
}

async function* findPieces(src: RowSource, matcher: Matcher, q: RowQuery, order: Order | undefined): AsyncGenerator<string> {
  try {
    const limit = q.limit ?? Infinity;
    const count = q.count === true;
    let p = src.firstAbove(q.after ?? 0);
    if (order === undefined) {
      let n = 0;
      let out = count ? '' : '[';
      while (p < src.length && n < limit) {
        const to = src.batchEnd(p, src.length);
        const got = src.read(p, to, true);
        const rows = got instanceof Promise ? await got : got;
        p = to;
        for (let i = 0; i < rows.length; i++) {
          if (!matches(rows[i].obj, matcher)) continue;
          if (!count) {
            if (n > 0) out += ',';
            out += rowText(rows[i], q);
          }
          if (++n === limit) break;
        }
        if (p < src.length && n < limit) {
          yield out;
          out = '';
        }
      }
      yield count ? `{"count":${n}}` : out + ']';
      return;
    }
    const cmp = (a: IdRow, b: IdRow): number => compareRows(order, a, b);
    let kept: IdRow[] = [];
    while (p < src.length) {
      const to = src.batchEnd(p, src.length);
      const got = src.read(p, to, true);
      const rows = got instanceof Promise ? await got : got;
      p = to;
      for (let i = 0; i < rows.length; i++) if (matches(rows[i].obj, matcher)) kept.push(rows[i]);
      if (limit !== Infinity && kept.length >= 2 * limit + BATCH_ROWS) {
        kept = await sortInSlices(kept, cmp);
        kept.length = limit;
      }
      yield '';
    }
    kept = await sortInSlices(kept, cmp);
    if (kept.length > limit) kept.length = limit;
    if (count) {
      yield `{"count":${kept.length}}`;
      return;
    }
    yield* rowsPieces(kept, q);
  } finally {
    src.release();
  }
}

/** Rows already chosen and ordered, rendered as render() would, a batch per piece. */
export async function* rowsPieces(rows: readonly IdRow[], q: RowQuery): AsyncGenerator<string> {
  let out = '[';
  for (let p = 0; p < rows.length;) {
    const to = batchEnd(p, rows.length, (i) => rows[i].json.length);
    for (let i = p; i < to; i++) {
      if (i > 0) out += ',';
      out += rowText(rows[i], q);
    }
    p = to;
    if (p < rows.length) {
      yield out;
      out = '';
    }
  }
  yield out + ']';
}

/** render() in pieces when there are many rows; the one string otherwise. */
export function renderText(rows: readonly IdRow[], q: RowQuery): Text {
  if (q.count === true) return `{"count":${rows.length}}`;
  if (rows.length <= STREAM_ROWS) {
    let out = '[';
    for (let i = 0; i < rows.length; i++) {
      if (i > 0) out += ',';
      out += rowText(rows[i], q);
    }
    return out + ']';
  }
  const gen = rowsPieces(rows, q);
  return { [Symbol.asyncIterator]: () => gen };
}

/** Comparisons between two turns of the event loop while sorting. */
const SORT_STEP = 32 * 1024;
const SORT_RUN = 1024;

/**
 * A stable sort that yields to the event loop every SORT_STEP comparisons:
 * runs of SORT_RUN sorted natively, then merged bottom-up. Returns the
 * sorted array (may be `a` itself or a new one).
 */
export async function sortInSlices<T>(a: T[], cmp: (x: T, y: T) => number): Promise<T[]> {
  const n = a.length;
  if (n <= SORT_RUN) return a.sort(cmp);
  let steps = 0;
  for (let lo = 0; lo < n; lo += SORT_RUN) {
    const hi = Math.min(n, lo + SORT_RUN);
    const run = a.slice(lo, hi).sort(cmp);
    for (let i = 0; i < run.length; i++) a[lo + i] = run[i];
    steps += run.length * 10;
    if (steps >= SORT_STEP) {
      steps = 0;
      await nextTurn();
    }
  }
  let src = a;
  let dst: T[] = new Array<T>(n);
  for (let w = SORT_RUN; w < n; w *= 2) {
    for (let lo = 0; lo < n; lo += 2 * w) {
      const mid = Math.min(lo + w, n);
      const hi = Math.min(lo + 2 * w, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        dst[k++] = cmp(src[j], src[i]) < 0 ? src[j++] : src[i++];
        if (++steps >= SORT_STEP) {
          steps = 0;
          await nextTurn();
        }
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    const t = src;
    src = dst;
    dst = t;
  }
  return src;
}

/** The whole text of an answer (for callers that need one string: tests, tools). */
export async function textOf(t: Text): Promise<string> {
  if (typeof t === 'string') return t;
  let out = '';
  for await (const piece of t) out += piece;
  return out;
}
