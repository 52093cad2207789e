/**
 * Whole-collection writes of any size on the log (docs/query.md, "Large
 * collections"): a PUT of a list, set or sorted set, and the result of a
 * combine with `store`. The new value's elements are written a slice per
 * decision into the element group of a fresh incarnation, which no header
 * names yet, so no reader sees them and the event loop serves other
 * requests between slices. One last decision checks the write's condition
 * and points the header at the new incarnation, dropping the old one: the
 * whole new value appears in that one batch, or none of it does.
 *
 * The first slice's batch also writes a marker naming the group being
 * filled (keys.ts, STAGED_PREFIX), which the switch deletes in its batch.
 * A write that fails before its switch drops its group and marker; a
 * marker found at open names the group of a write the process did not
 * finish (killed mid-write), which nothing will ever point to: it is
 * dropped then (dropUnfinished), so after a crash the collection is its old
 * whole value and the partial new one leaves nothing behind.
 */
import type { Decoder } from '../../engine/index.js';
import { nextTurn } from '../stream.js';
import { expiryOf } from '../validate.js';
import type { Atomic, Decide, Tx } from './atomic.js';
import { stagedGroup, stagedKey } from './keys.js';

/** Elements per slice: one batch of this many keys took 5-15 ms to encode and apply (2 busy cores). */
export const STAGE_STEP = 2048;

/** The incarnation a staged write fills. */
export interface Staging {
  /** Its number: the sequence number of the first slice's batch, unique as every incarnation's. */
  readonly inc: number;
  /** Its element group. */
  readonly group: string;
  /** The expiry its elements and header carry (from the write's ttl at its start). */
  readonly exp: number;
}

export interface StagedWrite<T> {
  /** The element group of incarnation `inc`. */
  groupOf(inc: number): string;
  ttl: number;
  /** Refuses the write (throws) from what is stored: run before the first slice, so a failed condition costs nothing. */
  check(tx: Tx): void;
  /** Writes the next slice of elements into `s.group`; false once there are no more. */
  fill(tx: Tx, s: Staging): boolean;
  /** Checks again and switches the header to `s` (dropping the old incarnation); its result is the write's. */
  commit(tx: Tx, s: Staging): T;
}

const EMPTY = Buffer.alloc(0);
const markerDecoder: Decoder<true> = () => true;

export async function stagedWrite<T>(atomic: Atomic, w: StagedWrite<T>): Promise<T> {
  let more = true;
  const s = await atomic.atomically(undefined, (tx) => {
    w.check(tx);
    const inc = tx.seq;
    const st: Staging = { inc, group: w.groupOf(inc), exp: expiryOf(w.ttl, tx.now) };
    tx.put(stagedKey(st.group), EMPTY, true, markerDecoder, 0);
    more = w.fill(tx, st);
    return st;
  });
  try {
    while (more) {
      await nextTurn();
      await atomic.atomically(undefined, (tx) => {
        more = w.fill(tx, s);
      });
    }
    await nextTurn();
    const commit = (tx: Tx): T => {
      const r = w.commit(tx, s);
      tx.del(stagedKey(s.group));
      return r;
    };
    // `commit` is synchronous (StagedWrite's callers return plain values), as a decision must be.
    return await atomic.atomically(undefined, commit as Decide<T>);
  } catch (err) {
    await abandon(atomic, s.group);
    throw err;
  }
}

/** Drops a staged group that will not be switched to, with its marker. */
async function abandon(atomic: Atomic, group: string): Promise<void> {
  try {
    await atomic.atomically(undefined, (tx) => {
      tx.dropGroup(group);
      tx.del(stagedKey(group));
    });
  } catch {
    // The marker stays when this fails too (the log cannot be written): the
    // next open drops the group (dropUnfinished), and until then no header
    // names it, so no reader sees it. The caller reports the first failure.
  }
}

/** At open: drops the groups of staged writes a previous process did not finish, and their markers. */
export async function dropUnfinished(atomic: Atomic, markers: readonly string[]): Promise<number> {
  if (markers.length === 0) return 0;
  await atomic.atomically(undefined, (tx) => {
    for (const k of markers) {
      tx.dropGroup(stagedGroup(k));
      tx.del(k);
    }
  });
  return markers.length;
}

/** A `fill` over an array: `put` writes element i; STAGE_STEP of them per slice. */
export function fillFrom(n: number, put: (tx: Tx, s: Staging, i: number) => void): (tx: Tx, s: Staging) => boolean {
  let at = 0;
  return (tx, s) => {
    const end = Math.min(n, at + STAGE_STEP);
    for (; at < end; at++) put(tx, s, at);
    return at < n;
  };
}
