/**
 * The key directory's expiry order: a binary min-heap of (expiry, key, entry)
 * for every version written with an expiry. A version replaced or deleted
 * before its time keeps its item until the item reaches the top (the sweep
 * then skips it) or until such items outnumber the live ones (then the heap
 * is rebuilt without them).
 */
import type { Entry } from './entry.js';

export interface ExpiryItem {
  exp: number;
  /** The key, or for a key of a group its member key (the string the group holds; chunked-group.ts). */
  key: string;
  entry: Entry;
  /** The group's prefix when `key` is a member key, else ''. */
  group: string;
}

/** The whole key of an item. */
export const itemKey = (item: ExpiryItem): string => (item.group === '' ? item.key : item.group + item.key);

export class ExpiryHeap {
  private heap: ExpiryItem[] = [];
  /** Current entries that carry an expiry (the heap also holds items of replaced versions). */
  live = 0;

  /** `isCurrent` tells whether an item's entry is still its key's version (for rebuilding). */
  constructor(private readonly isCurrent: (item: ExpiryItem) => boolean) {}

  get length(): number {
    return this.heap.length;
  }

  /** `group`: the group's prefix when `key` is a member key, else ''. */
  push(key: string, entry: Entry, group: string): void {
    // Items of replaced versions stay until their time comes; a key that is
    // rewritten often with a long ttl would pile them up. Rebuild without
    // them once they outnumber the live ones.
    if (this.heap.length > 2 * this.live + 1024) this.prune();
    const h = this.heap;
    const item: ExpiryItem = { exp: entry.exp, key, entry, group };
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

  private prune(): void {
    const seen = new Set<Entry>();
    const kept: ExpiryItem[] = [];
    for (const item of this.heap) {
      if (this.isCurrent(item) && !seen.has(item.entry)) {
        seen.add(item.entry);
        kept.push(item);
      }
    }
    kept.sort((a, b) => a.exp - b.exp); // a sorted array is a valid min-heap
    this.heap = kept;
  }

  /** The earliest item when it is due at `now`, taken off the heap; undefined otherwise. */
  popDue(now: number): ExpiryItem | undefined {
    const h = this.heap;
    if (h.length === 0 || h[0].exp > now) return undefined;
    const top = h[0];
    const last = h.pop() as ExpiryItem;
    if (h.length === 0) return top;
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

  /** Earliest pending expiry, or 0. */
  next(): number {
    return this.heap.length > 0 ? this.heap[0].exp : 0;
  }
}
