/**
 * Rules of lists that every store shares (docs/api.md, "Lists"): how Redis
 * indexes turn into positions, the messages, and which stored items a
 * remove-by-value matches. A store decides where items live; it asks here
 * what a request means.
 */
import { invalid, type StoreError } from './errors.js';
import { missing } from './messages.js';
import { deepEqual } from './json.js';

import { MAX_ELEMENTS } from './collection.js';

/** Items one pop takes at most: the bound of every element operation. */
export const MAX_POP = MAX_ELEMENTS;
export const MAX_WAIT_MS = 30_000;

export const listMissing = (name: string): StoreError => missing('list', name);

/**
 * The inclusive range [start, stop] of a list of `len` items as offsets from
 * the left end, Redis LRANGE style: negative indexes count from the right
 * (-1 = last), a start before the beginning is 0, a stop past the end is the
 * last item. Empty (from > to) when nothing is in range.
 */
export function rangeOf(len: number, start: number, stop: number): { from: number; to: number } {
  let from = start < 0 ? len + start : start;
  let to = stop < 0 ? len + stop : stop;
  if (from < 0) from = 0;
  if (to >= len) to = len - 1;
  return from > to ? { from: 0, to: -1 } : { from, to };
}

/** The offset from the left of `index` (negatives from the right); 400 naming `field` when outside the list. */
export function indexOf(len: number, index: number, field: string): number {
  const i = index < 0 ? len + index : index;
  if (i < 0 || i >= len) {
    throw invalid(`field '${field}' is out of range: the list has ${len} item${len === 1 ? '' : 's'} (indexes ${-len} to ${len - 1})`);
  }
  return i;
}

/**
 * A test for stored items (JSON text) equal to `value`: the same JSON value,
 * objects compared by content whatever their key order (json.ts deepEqual).
 * Items are stored as JSON.stringify writes them, so a scalar compares by text
 * without parsing each item.
 */
export function itemMatcher(value: unknown): (text: string) => boolean {
  const text = JSON.stringify(value);
  if (typeof value !== 'object' || value === null) return (t) => t === text;
  return (t) => t === text || ((t.charCodeAt(0) === 123 || t.charCodeAt(0) === 91) && deepEqual(JSON.parse(t), value));
}

/** Which items a remove takes: offsets (ascending) of the first |count| matches from the left (count > 0) or right (< 0), or all (0). */
export function removals(items: readonly string[], value: unknown, count: number): number[] {
  const eq = itemMatcher(value);
  const out: number[] = [];
  const limit = count === 0 ? Infinity : Math.abs(count);
  if (count >= 0) {
    for (let i = 0; i < items.length && out.length < limit; i++) if (eq(items[i])) out.push(i);
  } else {
    for (let i = items.length - 1; i >= 0 && out.length < limit; i--) if (eq(items[i])) out.push(i);
    out.reverse();
  }
  return out;
}

/** A side as a body names it. */
export function checkSide(v: unknown, field: string): 'left' | 'right' {
  if (v !== 'left' && v !== 'right') throw invalid(`field '${field}' must be "left" or "right"`);
  return v;
}
