/**
 * Whole-collection reads in batches (docs/query.md, "Large collections"),
 * shared by both stores: a store takes its view of one instant (the member
 * keys the log's directory holds, a sorted set's frozen order, a database
 * transaction) and hands it over as `Batches` (store.ts). The helpers here
 * turn a synchronous generator of batches into that shape: its first batch
 * is computed at once (for a small collection, the whole answer, with no
 * iteration after), the others one per step of an async iterator, so no
 * step does more than a batch of work and the consumer yields between them.
 */
import type { SetOp } from './collection.js';
import type { Batches } from './store.js';

/** Elements per batch: a small collection (at most this many) is answered from its first batch. */
export const ELEMENT_BATCH = 4096;
/** A batch of a merge also ends after this many input elements were looked at (an intersection may find few). */
const MERGE_WORK = 64 * 1024;

/**
 * The batches of `gen`: the first now, the rest one per step. `release`
 * runs once the iteration ends, fails or is stopped early (the consumer's
 * `return()`), and at once when the first batch was all there was.
 */
export function batchesOf<B>(gen: Iterator<B, undefined>, empty: B, release?: () => void): Batches<B> {
  let r: IteratorResult<B, undefined>;
  try {
    r = gen.next();
  } catch (err) {
    release?.();
    throw err;
  }
  if (r.done === true) {
    release?.();
    return { first: empty, rest: undefined };
  }
  const first = r.value;
  const after = gen.next();
  if (after.done === true) {
    release?.();
    return { first, rest: undefined };
  }
  return { first, rest: asyncRest(after.value, gen, release) };
}

function asyncRest<B>(second: B, gen: Iterator<B, undefined>, release: (() => void) | undefined): AsyncIterable<B> {
  let pending: B | undefined = second;
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    release?.();
  };
  const it: AsyncIterator<B> = {
    next: (): Promise<IteratorResult<B>> => {
      if (finished) return Promise.resolve({ done: true, value: undefined });
      if (pending !== undefined) {
        const v = pending;
        pending = undefined;
        return Promise.resolve({ done: false, value: v });
      }
      try {
        const r = gen.next();
        if (r.done === true) finish();
        return Promise.resolve(r.done === true ? { done: true, value: undefined } : { done: false, value: r.value });
      } catch (err) {
        finish();
        return Promise.reject(err as Error);
      }
    },
    return: (): Promise<IteratorResult<B>> => {
      finish();
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}

/** `keys` (one instant of a collection) decoded a batch at a time. */
export function* keyBatches(keys: readonly string[], decode: (k: string) => string): Generator<string[], undefined> {
  for (let from = 0; from < keys.length; from += ELEMENT_BATCH) {
    const to = Math.min(keys.length, from + ELEMENT_BATCH);
    const out: string[] = new Array(to - from);
    for (let i = from; i < to; i++) out[i - from] = decode(keys[i]);
    yield out;
  }
  return undefined;
}

/**
 * union / inter / diff of sorted, duplicate-free key arrays (each one set at
 * the same instant, keys comparing as the members' byte order), decoded, in
 * batches: a merge that walks each input once (inter and diff look each
 * member of the first set up in the others by binary search), so a step
 * costs at most ELEMENT_BATCH results or about MERGE_WORK comparisons.
 */
export function* mergeBatches(
  op: SetOp,
  first: readonly string[],
  others: ReadonlyArray<readonly string[]>,
  decode: (k: string) => string,
): Generator<string[], undefined> {
  let out: string[] = [];
  let work = 0;
  if (op === 'union') {
    const all = [first, ...others];
    const at = all.map(() => 0);
    for (;;) {
      let min: string | undefined;
      for (let s = 0; s < all.length; s++) {
        const k = all[s][at[s]];
        if (k !== undefined && (min === undefined || k < min)) min = k;
      }
      if (min === undefined) break;
      for (let s = 0; s < all.length; s++) if (all[s][at[s]] === min) at[s]++;
      out.push(decode(min));
      work += all.length;
      if (out.length >= ELEMENT_BATCH || work >= MERGE_WORK) {
        yield out;
        out = [];
        work = 0;
      }
    }
  } else {
    const at = others.map(() => 0);
    for (let i = 0; i < first.length; i++) {
      const k = first[i];
      let keep = true;
      for (let s = 0; s < others.length; s++) {
        const o = others[s];
        // The first key of `o` at or after `k`, by binary search from where the last one was found.
        let j = at[s];
        let hi = o.length;
        while (j < hi) {
          const mid = (j + hi) >>> 1;
          if (o[mid] < k) j = mid + 1;
          else hi = mid;
        }
        work++;
        at[s] = j;
        const inOther = o[j] === k;
        if (op === 'inter' ? !inOther : inOther) {
          keep = false;
          break;
        }
      }
      if (keep) out.push(decode(k));
      if (out.length >= ELEMENT_BATCH || ++work >= MERGE_WORK) {
        yield out;
        out = [];
        work = 0;
      }
    }
  }
  if (out.length > 0) yield out;
  return undefined;
}
