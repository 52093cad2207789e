/**
 * The member keys of one or more sets at one instant, copied without one
 * long step (docs/query.md, "Large collections"): COPY_STEP keys per read
 * decision, the event loop running between them. Every write to a set
 * writes its header (a new version), and a write the engine undoes counts
 * as a rollback, so a copy whose sets' header versions and the rollback
 * count are the same at every step is the sets of the first step's
 * instant. A copy that sees a change starts again; after MAX_TRIES the
 * copy is made in one step, as a small set's always is, so a reader of a
 * set written without pause is slower, never refused.
 */
import { nextTurn } from '../stream.js';
import type { Atomic, Tx } from './atomic.js';
import { elementGroup, headerKey, readHeader } from './collections.js';

/** Keys per decision: a few ms of copying here. */
const COPY_STEP = 4096;
const MAX_TRIES = 3;

export interface MemberCopy {
  /** Per set: its header's count and version, undefined when it does not exist. */
  heads: Array<{ count: number; version: number } | undefined>;
  /** Per set: its member keys without the group's prefix, in byte order ([] when it does not exist). */
  keys: string[][];
  /** The engine's rollback count at that instant (with the versions: whether the sets are still those of the copy). */
  rollbacks: number;
}

interface Start {
  heads: MemberCopy['heads'];
  groups: Array<string | undefined>;
  rollbacks: number;
}

/** Whether the sets `names` are still those of the instant `s` was read at (a copy's, or a step's start). */
export function unchanged(tx: Tx, names: readonly string[], s: { heads: MemberCopy['heads']; rollbacks: number }): boolean {
  if (tx.rollbacks !== s.rollbacks) return false;
  for (let i = 0; i < names.length; i++) if ((tx.version(headerKey('set', names[i])) ?? undefined) !== s.heads[i]?.version) return false;
  return true;
}

function start(tx: Tx, names: readonly string[]): Start {
  const heads: MemberCopy['heads'] = [];
  const groups: Array<string | undefined> = [];
  for (const n of names) {
    const h = readHeader(tx, 'set', n);
    heads.push(h === undefined ? undefined : { count: h.count, version: tx.version(headerKey('set', n)) ?? 0 });
    groups.push(h === undefined ? undefined : elementGroup('set', n, h.inc));
  }
  return { heads, groups, rollbacks: tx.rollbacks };
}

const all = (tx: Tx, group: string | undefined): string[] => (group === undefined ? [] : tx.groupKeys(group, '', Number.MAX_SAFE_INTEGER, true));

export async function copyMembers(atomic: Atomic, names: readonly string[]): Promise<MemberCopy> {
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const first = await atomic.read((tx) => {
      const s = start(tx, names);
      let total = 0;
      for (const h of s.heads) total += h?.count ?? 0;
      // Small enough for one step: copied in this decision, as before.
      return total <= COPY_STEP ? { s, keys: s.groups.map((g) => all(tx, g)) } : { s, keys: undefined };
    });
    if (first.keys !== undefined) return { heads: first.s.heads, keys: first.keys, rollbacks: first.s.rollbacks };
    const s = first.s;
    const keys: string[][] = names.map(() => []);
    let same = true;
    for (let i = 0; i < names.length && same; i++) {
      const group = s.groups[i];
      if (group === undefined) continue;
      let after = '';
      for (;;) {
        await nextTurn();
        const page = await atomic.read((tx) => (unchanged(tx, names, s) ? tx.groupKeys(group, after, COPY_STEP, true) : undefined));
        if (page === undefined) {
          same = false;
          break;
        }
        for (let k = 0; k < page.length; k++) keys[i].push(page[k]);
        if (page.length < COPY_STEP) break;
        after = group + page[page.length - 1];
      }
    }
    if (same && (await atomic.read((tx) => unchanged(tx, names, s)))) return { heads: s.heads, keys, rollbacks: s.rollbacks };
  }
  return atomic.read((tx) => {
    const s = start(tx, names);
    return { heads: s.heads, keys: s.groups.map((g) => all(tx, g)), rollbacks: s.rollbacks };
  });
}
