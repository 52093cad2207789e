/**
 * What every store shares about collections (docs/api.md, "Sets", "Sorted
 * sets"): the rules on members and scores, the messages, and the typed
 * inputs a store receives. A store checks only what depends on stored state;
 * everything here is decided from the request alone, the same way whichever
 * store answers.
 */
import { invalid, StoreError } from './errors.js';
import { missing } from './messages.js';
import { isPlainObject } from './validate.js';
import type { CollectionKind } from './kinds.js';

export type { CollectionKind };

/** A member is a string of at most this many bytes of UTF-8 (docs/api.md, "Sets"). */
export const MAX_MEMBER_BYTES = 4096;
/**
 * Elements one request may push, pop, add, remove or ask about, and one
 * mutation of a transaction too (docs/api.md, "Element bounds"): a list push's
 * values, a pop's count, the members of a set's or sorted set's add, remove
 * or contains. Every element operation refuses more with the same message
 * (`tooManyElements`). A whole content (PUT) is bounded by the body size only.
 */
export const MAX_ELEMENTS = 1000;

/**
 * The one refusal of an element operation over MAX_ELEMENTS: `field 'values'
 * holds 1001 elements; one request takes at most 1000`. `asks` for a count
 * (a pop's), where the request names a number rather than the elements.
 */
export function tooManyElements(field: string, n: number, asks = false): StoreError {
  return invalid(`field '${field}' ${asks ? 'asks for' : 'holds'} ${n} elements; one request takes at most ${MAX_ELEMENTS}`);
}

/** A list push's values: 1 to MAX_ELEMENTS of any JSON. */
export function valuesOf(field: string, v: unknown): unknown[] {
  if (!Array.isArray(v)) throw invalid(`field '${field}' ${v === undefined ? 'is required (an array)' : 'must be an array'}`);
  if (v.length === 0) throw invalid(`field '${field}' must not be empty`);
  if (v.length > MAX_ELEMENTS) throw tooManyElements(field, v.length);
  return v;
}

/** A pop's count: an integer ≥ 1, at most MAX_ELEMENTS. */
export function popCountOf(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalid(`field '${field}' must be an integer ≥ 1 and ≤ ${MAX_ELEMENTS}`);
  if (v > MAX_ELEMENTS) throw tooManyElements(field, v, true);
  return v;
}
/** Sets one combine reads besides its own. */
export const MAX_COMBINE = 16;

/**
 * Members a `combine` with `store` may read in all, its own set's and the
 * others' counted together (docs/api.md, "Sets"): its result is written in
 * one atomic batch, and a batch's cost grows with its members, so a larger
 * one is refused before any work is done rather than hold the server.
 */
export const MAX_COMBINE_STORE = 200_000;

/** 413 with the figures when the inputs of a `combine` with `store` hold more than MAX_COMBINE_STORE members. */
export function combineLimit(names: readonly string[], counts: readonly number[]): void {
  let total = 0;
  for (const c of counts) total += c;
  if (total <= MAX_COMBINE_STORE) return;
  const each = names.map((n, i) => `'${n}' ${counts[i]}`).join(', ');
  throw new StoreError(
    'too_large',
    `combine with 'store' reads at most ${MAX_COMBINE_STORE} members in all; these sets hold ${total} (${each}); combine without 'store' streams any size`,
  );
}

const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

export const collectionMissing = (kind: CollectionKind, name: string): StoreError => missing(kind, name);

/** One member, checked; `where` names it in the message ("field 'members' item 3"). */
export function checkMember(where: string, v: unknown): string {
  if (typeof v !== 'string') throw invalid(`${where} must be a string`);
  // Most members are short: the byte count is only needed when the UTF-16 length could exceed the limit.
  if (v.length * 3 > MAX_MEMBER_BYTES && Buffer.byteLength(v, 'utf8') > MAX_MEMBER_BYTES) {
    throw invalid(`${where} must be at most ${MAX_MEMBER_BYTES} bytes of UTF-8`);
  }
  if (!isWellFormed.call(v)) throw invalid(`${where} must be well-formed Unicode (it holds a lone surrogate)`);
  return v;
}

/**
 * An array of members (`members` of add, remove, contains): 1 to
 * MAX_ELEMENTS strings. Duplicates are kept: each answer counts a member once (an add of
 * ["a", "a"] adds one member) and `contains` answers every position.
 */
export function membersOf(field: string, v: unknown): string[] {
  if (!Array.isArray(v)) throw invalid(`field '${field}' must be an array of strings`);
  if (v.length === 0) throw invalid(`field '${field}' must not be empty`);
  if (v.length > MAX_ELEMENTS) throw tooManyElements(field, v.length);
  for (let i = 0; i < v.length; i++) checkMember(`field '${field}' item ${i}`, v[i]);
  return v as string[];
}

/**
 * The whole content of a set (`set` of PUT): an array of strings, or
 * UrnaDB's object whose keys are the members and whose values are `true`.
 * Any size (the batch limit of the store applies); may be empty.
 */
export function setContentOf(field: string, v: unknown): string[] {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) checkMember(`field '${field}' item ${i}`, v[i]);
    return Array.from(new Set(v as string[]));
  }
  if (!isPlainObject(v)) throw invalid(`field '${field}' must be an array of strings or an object whose keys are the members`);
  const out = Object.keys(v);
  for (const m of out) {
    checkMember(`field '${field}' member ${JSON.stringify(m)}`, m);
    if (v[m] !== true) throw invalid(`field '${field}' member ${JSON.stringify(m)} must map to true`);
  }
  return out;
}

/** A score: a finite number (JSON's 1e999 parses to Infinity, which is not one). -0 is 0. */
export function checkScore(where: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${where} must be a finite number`);
  return v + 0;
}

/**
 * Members with scores: an object member → score. `element` (the `members` of
 * an add): 1 to MAX_ELEMENTS of them; otherwise (the `zset` of a PUT, a whole
 * content) any number, none included.
 */
export function scoresOf(field: string, v: unknown, element: boolean): Array<[string, number]> {
  if (!isPlainObject(v)) throw invalid(`field '${field}' must be an object of member → score`);
  const keys = Object.keys(v);
  if (element && keys.length === 0) throw invalid(`field '${field}' must not be empty`);
  if (element && keys.length > MAX_ELEMENTS) throw tooManyElements(field, keys.length);
  const out: Array<[string, number]> = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const m = checkMember(`field '${field}' member ${JSON.stringify(keys[i])}`, keys[i]);
    out[i] = [m, checkScore(`field '${field}' member ${JSON.stringify(m)}`, v[m])];
  }
  return out;
}

export type SetOp = 'union' | 'inter' | 'diff';
export const SET_OPS: readonly SetOp[] = ['union', 'inter', 'diff'];

/** `mode` of a zset add (Redis ZADD's NX, XX, GT, LT; upsert is the default). */
export type ZMode = 'upsert' | 'nx' | 'xx' | 'gt' | 'lt';
export const Z_MODES: readonly ZMode[] = ['upsert', 'nx', 'xx', 'gt', 'lt'];

/**
 * What a zset add under `mode` does to one member whose current score is
 * `cur` (undefined: not a member): 'add' it, 'update' its score, or nothing.
 * A score equal to the current one is no change, so it counts as neither.
 */
export function zaddEffect(mode: ZMode, cur: number | undefined, score: number): 'add' | 'update' | undefined {
  if (cur === undefined) return mode === 'xx' ? undefined : 'add';
  if (mode === 'nx' || score === cur || (mode === 'gt' && !(score > cur)) || (mode === 'lt' && !(score < cur))) return undefined;
  return 'update';
}

/** One end of a score range: a score and whether it is excluded. */
export interface ScoreBound {
  score: number;
  open: boolean;
}

/**
 * A zset read (docs/api.md, "Sorted sets"): by rank (`start`..`stop`,
 * inclusive, negatives from the end) or by score (`min`..`max`, then
 * `offset` and `limit`), lowest first, or highest first with `rev`.
 */
export type ZRange =
  | { by: 'rank'; start: number; stop: number; rev: boolean }
  | { by: 'score'; min: ScoreBound; max: ScoreBound; offset: number; limit: number | undefined; rev: boolean };

/** A score bound as a query string gives it: a number, `-inf`, `+inf` (or `inf`), `(` before any of them to exclude it. */
export function parseBound(param: string, text: string): ScoreBound {
  const open = text.startsWith('(');
  const t = open ? text.slice(1) : text;
  let score: number;
  if (t === '-inf') score = -Infinity;
  // 'inf' as Redis takes it; ' inf' is '+inf' after a form decoder on its way here (form encoding
  // reads '+' as a space; this server's router keeps a '+' as it is).
  else if (t === '+inf' || t === 'inf' || t === ' inf') score = Infinity;
  else if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) && Number.isFinite(Number(t))) score = Number(t) + 0;
  else throw invalid(`query parameter '${param}' must be a number, -inf or +inf, optionally after '(' (exclusive), not '${text}'`);
  return { score, open };
}

/** Zset order: score ascending, then member in byte order (code-point order of the strings). */
export { codePointCompare as memberCompare } from './sorted.js';

/** A score as JSON text (finite numbers only: scores are checked to be). */
export const scoreText = (s: number): string => String(s);
