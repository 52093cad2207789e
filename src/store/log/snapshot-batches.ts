/**
 * A range of a group snapshot (src/engine/snapshot.ts) read a batch per
 * step, for the whole-collection reads of the log store (docs/query.md,
 * "Large collections"): a list's items, whose positions are dense, so the
 * snapshot's i-th member is the list's i-th item. Values not in memory are
 * read from the log with the snapshot's coalesced reads, a batch at a time.
 */
import type { GroupSnapshot } from '../../engine/index.js';
import { BATCH_BYTES } from '../stream.js';
import { ELEMENT_BATCH } from '../elements.js';

/** Members [from, to] (inclusive) of `snap`; the snapshot is released (once) at the end, on failure, or by `return()`. */
export function snapshotBatches<T>(snap: GroupSnapshot<T>, from: number, to: number): AsyncIterable<T[]> {
  let p = from;
  // Released once, however the iteration ends: a shared snapshot counts its holders' releases.
  let held = true;
  const release = (): void => {
    if (!held) return;
    held = false;
    snap.release();
  };
  const it: AsyncIterator<T[]> = {
    next: async (): Promise<IteratorResult<T[]>> => {
      if (p > to) {
        release();
        return { done: true, value: undefined };
      }
      // A batch ends at ELEMENT_BATCH members or BATCH_BYTES of stored values, whichever comes first.
      const max = Math.min(to + 1, p + ELEMENT_BATCH);
      let end = p;
      let bytes = 0;
      while (end < max && bytes < BATCH_BYTES) bytes += snap.size(end++);
      try {
        const got = snap.read(p, end);
        const vals = got instanceof Promise ? await got : got;
        // Items carry their list's expiry, so every item of a live list is live: a short read is a defect.
        if (vals.length !== end - p) throw new Error(`a list snapshot gave ${vals.length} of ${end - p} items`);
        p = end;
        return { done: false, value: vals };
      } catch (err) {
        release();
        throw err;
      }
    },
    return: (): Promise<IteratorResult<T[]>> => {
      release();
      p = to + 1;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}
