/**
 * A long range of a list read from a snapshot of its items taken in steps
 * (docs/query.md, "Large collections"): COPY_STEP item versions per read
 * decision, the event loop running between them, so no step copies a
 * million pointers at once. Every write to a list writes its header (a new
 * version), and a write the engine undoes counts as a rollback, so a copy
 * whose list header version and rollback count are the same at every step
 * holds the items of the first step's instant. A copy that sees a change
 * starts again; after MAX_TRIES the range is snapshotted in one step
 * (lists.ts, rangeItems), so a reader of a list written without pause is
 * slower, never refused. The answer's first byte is sent only after the
 * copy is whole, so a restart is never visible to the client. Readers of
 * the same range at the same version share one copy (SharedCopies).
 */
import type { Decoder, GroupSnapshot } from '../../engine/index.js';
import { ELEMENT_BATCH } from '../elements.js';
import { rangeOf } from '../lists.js';
import type { Elements } from '../store.js';
import { nextTurn } from '../stream.js';
import type { Atomic, Tx } from './atomic.js';
import { itemKey, listGroup, listKey } from './keys.js';
import { snapshotBatches } from './snapshot-batches.js';

/** Item versions copied per decision: a few ms of copying (pointers only). */
const COPY_STEP = 16384;
const MAX_TRIES = 3;

/** What this module needs of lists.ts (which calls it), given rather than imported. */
export interface ListReads {
  head(tx: Tx, name: string): { inc: number; head: number; tail: number } | undefined;
  decoder: Decoder<string>;
  /** The range read in one decision: a short one at once, a long one from a snapshot taken in one step. */
  oneStep(tx: Tx, name: string, start: number, stop: number): Elements<string[]>;
}

/** The list as the copy's first step saw it. */
interface Seen {
  count: number;
  version: number;
  rollbacks: number;
  /** Items the range holds. */
  n: number;
}

type Opened = { done: Elements<string[]> } | { snap: GroupSnapshot<string>; seen: Seen };

const settled = async <T>(v: T | Promise<T>): Promise<T> => (v instanceof Promise ? await v : v);

/** Whether the list is still the one `seen` describes: no write to it, and no write undone, since. */
export function sameList(tx: Tx, name: string, seen: Seen): boolean {
  return tx.rollbacks === seen.rollbacks && (tx.version(listKey(name)) ?? -1) === seen.version;
}

/** The first step: a short range is read at once; a long one gets an empty snapshot, opened after the item before the range. */
function open(tx: Tx, name: string, start: number, stop: number, reads: ListReads): Opened {
  const h = reads.head(tx, name);
  const len = h === undefined ? 0 : h.tail - h.head;
  const { from, to } = rangeOf(len, start, stop);
  if (h === undefined || to - from < ELEMENT_BATCH) return { done: reads.oneStep(tx, name, start, stop) };
  const group = listGroup(name, h.inc);
  const seen = { count: len, version: tx.version(listKey(name)) ?? 0, rollbacks: tx.rollbacks, n: to - from + 1 };
  // Positions are dense: the range starts right after the key of the item before it.
  return { snap: tx.openSnapshot(group, reads.decoder, from === 0 ? '' : itemKey(group, h.head + from - 1)), seen };
}

/** Copies the range into `snap` a step at a time; false when the list changed meanwhile (or came up short). */
async function fill(atomic: Atomic, name: string, snap: GroupSnapshot<string>, seen: Seen): Promise<boolean> {
  while (snap.length < seen.n) {
    await nextTurn();
    const more = await settled(atomic.readNow((tx) => (sameList(tx, name, seen) ? snap.copyMore(Math.min(COPY_STEP, seen.n - snap.length)) : -1)));
    // Items carry their list's expiry: an item swept between steps means the list is gone; the next try finds it so.
    if (more <= 0) return false;
  }
  return true;
}

/** A copy under way or made, which readers of the same range of the same version share. */
interface Shared {
  snap: GroupSnapshot<string>;
  seen: Seen;
  /** Whether the copy is whole (false: the list changed while it was made). */
  whole: Promise<boolean>;
}

/**
 * Copies shared by readers: keyed by list name, header version, rollback
 * count and range, so only readers of one instant share one. Many clients
 * reading the same large list at once (a fan-out) hold one copy of its item
 * versions between them, not one each.
 */
export type SharedCopies = Map<string, Shared>;

const answer = (sh: Shared): Elements<string[]> => ({
  count: sh.seen.count,
  version: sh.seen.version,
  first: [],
  rest: snapshotBatches(sh.snap, 0, sh.seen.n - 1),
});

/** Waits for a copy this reader holds; false (and released) when it is not whole. */
async function held(sh: Shared): Promise<boolean> {
  let whole: boolean;
  try {
    whole = await sh.whole;
  } catch (err) {
    sh.snap.release();
    throw err;
  }
  if (!whole) sh.snap.release();
  return whole;
}

/** The items start..stop (inclusive) as batches: a list's whole-range read on the log store. */
export async function listItems(
  atomic: Atomic,
  copies: SharedCopies,
  name: string,
  start: number,
  stop: number,
  reads: ListReads,
): Promise<Elements<string[]>> {
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const o = await settled(atomic.readNow((tx) => open(tx, name, start, stop, reads)));
    if ('done' in o) return o.done;
    const key = `${name}\u0000${o.seen.version} ${o.seen.rollbacks} ${start} ${stop}`;
    const other = copies.get(key);
    if (other !== undefined && other.snap.retain()) {
      o.snap.release();
      if (await held(other)) return answer(other);
      continue;
    }
    const sh: Shared = { snap: o.snap, seen: o.seen, whole: fill(atomic, name, o.snap, o.seen) };
    copies.set(key, sh);
    o.snap.onFree(() => {
      if (copies.get(key) === sh) copies.delete(key);
    });
    if (await held(sh)) return answer(sh);
  }
  return settled(atomic.readNow((tx) => reads.oneStep(tx, name, start, stop)));
}
