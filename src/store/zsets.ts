/**
 * Sorted-set rules every store shares beyond checking input (collection.ts):
 * what an increment sums to, and the JSON texts of members and of the
 * change feed's add, incr and remove events (docs/api.md, "Sorted sets";
 * "Change feed"), so both stores answer and report byte for byte alike. A
 * store reads the current scores and writes; it asks here what they make.
 */
import { scoreText, type ZMode } from './collection.js';
import { conflict, notFound, type StoreError } from './errors.js';

/** The score `delta` makes of `cur` (a missing member starts at 0); 409 when the sum is not a finite number. */
export function incremented(name: string, member: string, cur: number | undefined, delta: number): number {
  const s = (cur ?? 0) + delta + 0;
  if (!Number.isFinite(s))
    throw conflict(`zset '${name}' member ${JSON.stringify(member)}: score ${scoreText(cur ?? 0)} + ${scoreText(delta)} is not a finite number`);
  return s;
}

/** One member of a range answer. */
export const memberItem = (score: number, member: string): string => `{"member":${JSON.stringify(member)},"score":${scoreText(score)}}`;

/** The members of an add as an object from member to score, in the order given. */
function membersJson(pairs: ReadonlyArray<[string, number]>): string {
  let out = '{';
  for (let i = 0; i < pairs.length; i++) out += (i === 0 ? '' : ',') + JSON.stringify(pairs[i][0]) + ':' + scoreText(pairs[i][1]);
  return out + '}';
}

/** The change feed's data of each sorted-set write. */
export const zsetEvents = {
  /** An add's event up to its results (the shared store's group commit appends them in the database). */
  addHead: (pairs: ReadonlyArray<[string, number]>, mode: ZMode): string => `{"members":${membersJson(pairs)},"mode":"${mode}"`,
  add: (pairs: ReadonlyArray<[string, number]>, mode: ZMode, added: number, updated: number, count: number): string =>
    `${zsetEvents.addHead(pairs, mode)},"added":${added},"updated":${updated},"count":${count}}`,
  incr: (member: string, delta: number, score: number): string =>
    `{"member":${JSON.stringify(member)},"delta":${scoreText(delta)},"score":${scoreText(score)}}`,
  remove: (members: readonly string[], removed: number, count: number): string =>
    `{"members":${JSON.stringify(members)},"removed":${removed},"count":${count}}`,
} as const;

/** 404 of a member that a sorted set does not hold. */
export const notMember = (name: string, member: string): StoreError => notFound(`${JSON.stringify(member)} is not a member of zset '${name}'`);

/** GET of one member: its score, and its rank from either end among `size` members. */
export const memberAnswer = (score: number, rank: number, size: number): string => `{"score":${scoreText(score)},"rank":${rank},"rev_rank":${size - 1 - rank}}`;
