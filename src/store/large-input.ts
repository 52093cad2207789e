/**
 * The content of a large PUT of a set or sorted set, checked in slices
 * (docs/query.md, "Large collections"): the same rules and messages as
 * collection.ts's setContentOf and scoresOf, applied STEP elements per
 * step with the event loop running between steps, and without one hash
 * table of every member (a Set or object of a million entries rehashes in
 * one step of tens of ms, and building a million-key object took seconds):
 * duplicates are found in SHARDS small Maps.
 */
import { checkMember, checkScore, scoresOf, setContentOf } from './collection.js';
import { invalid } from './errors.js';
import { nextTurn } from './stream.js';

/**
 * A JSON object of a large body, parsed in slices (src/http/large-body.ts):
 * its keys and values in document order, a key given twice kept twice (the
 * later one wins, as in JSON.parse).
 */
export class Entries {
  readonly keys: string[] = [];
  readonly values: unknown[] = [];
}

/** Elements checked per step. */
const STEP = 4096;
const SHARDS = 64;

/** A shard from the last characters of a member, where keys that share a prefix differ. */
function shardOf(s: string): number {
  let h = s.length;
  for (let i = Math.max(0, s.length - 8); i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return h & (SHARDS - 1);
}

/** `keys` without repeats, each at its first place; `onEach(i, at)` for every key i, `at` its place in the result. */
async function distinct(keys: readonly string[], onEach?: (i: number, at: number) => void): Promise<string[]> {
  const seen = Array.from({ length: SHARDS }, () => new Map<string, number>());
  const out: string[] = [];
  for (let from = 0; from < keys.length; from += STEP) {
    if (from > 0) await nextTurn();
    const to = Math.min(keys.length, from + STEP);
    for (let i = from; i < to; i++) {
      const k = keys[i];
      const shard = seen[shardOf(k)];
      let at = shard.get(k);
      if (at === undefined) {
        at = out.length;
        shard.set(k, at);
        out.push(k);
      }
      onEach?.(i, at);
    }
  }
  return out;
}

/** Runs `fn` on every index below `n`, STEP per step. */
async function eachInSlices(n: number, fn: (i: number) => void): Promise<void> {
  for (let from = 0; from < n; from += STEP) {
    if (from > 0) await nextTurn();
    const to = Math.min(n, from + STEP);
    for (let i = from; i < to; i++) fn(i);
  }
}

/** An object's keys without repeats, and the value each ends with (the last one given, as JSON.parse keeps). */
async function lastWins(e: Entries): Promise<[string[], unknown[]]> {
  const values: unknown[] = [];
  const keys = await distinct(e.keys, (i, at) => (values[at] = e.values[i]));
  return [keys, values];
}

/** setContentOf (collection.ts) of a value of any size: a large array or a sliced object is checked in slices. */
export async function setContentInSlices(field: string, v: unknown): Promise<string[]> {
  if (v instanceof Entries) {
    const [keys, values] = await lastWins(v);
    await eachInSlices(keys.length, (i) => {
      const m = keys[i];
      checkMember(`field '${field}' member ${JSON.stringify(m)}`, m);
      if (values[i] !== true) throw invalid(`field '${field}' member ${JSON.stringify(m)} must map to true`);
    });
    return keys;
  }
  if (!Array.isArray(v) || v.length <= STEP) return setContentOf(field, v);
  const ms = v as unknown[];
  await eachInSlices(ms.length, (i) => checkMember(`field '${field}' item ${i}`, ms[i]));
  return distinct(ms as string[]);
}

/** scoresOf (collection.ts) of `zset` of a PUT: a sliced object is checked in slices. */
export async function scoresInSlices(field: string, v: unknown): Promise<Array<[string, number]>> {
  if (!(v instanceof Entries)) return scoresOf(field, v, false);
  const [keys, values] = await lastWins(v);
  const out: Array<[string, number]> = new Array(keys.length);
  await eachInSlices(keys.length, (i) => {
    const m = checkMember(`field '${field}' member ${JSON.stringify(keys[i])}`, keys[i]);
    out[i] = [m, checkScore(`field '${field}' member ${JSON.stringify(m)}`, values[i])];
  });
  return out;
}
