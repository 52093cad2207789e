/**
 * Conditional writes (docs/api.md, "Versions and conditional writes"): the
 * rule and its messages, shared by every store so a client sees the same 412
 * whichever store answers.
 */
import { StoreError } from './errors.js';
import type { Precondition } from './store.js';

export const precondition = (message: string): StoreError => new StoreError('precondition', message);

/**
 * Throws a 'precondition' StoreError unless `pre` holds for an object whose
 * current version is `cur` (undefined = absent). `what` names it: "record 'a'".
 */
export function checkPrecondition(what: string, cur: number | undefined, pre: Precondition | undefined): void {
  if (pre === undefined) return;
  if (pre.ifAbsent === true && cur !== undefined) throw precondition(`${what} already exists (version ${cur})`);
  const want = pre.ifVersion;
  if (want === undefined) return;
  // An absent object has no version to match: say so rather than invent one.
  if (cur === undefined) throw precondition(`${what} does not exist (expected version ${want})`);
  if (cur !== want) throw precondition(`${what} changed (version ${cur})`);
}
