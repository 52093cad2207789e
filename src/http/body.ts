/**
 * Request bodies: read on every method (GET and DELETE carry `wheres` and
 * `token`), bounded in size, parsed as JSON whatever the Content-Type, and
 * bounded in nesting before JSON.parse so nothing later can recurse deeply.
 */
import { PithosError } from '../model/errors.js';
import { exceedsDepth, MAX_DEPTH } from '../model/json.js';
import { isPlainObject } from '../model/validate.js';

export type Body = Record<string, unknown>;

const EMPTY = /^[\s]*$/;

export function parseBody(text: string): Body {
  if (text.length === 0 || EMPTY.test(text)) return Object.create(null) as Body;
  if (exceedsDepth(text, MAX_DEPTH)) {
    throw new PithosError('invalid', `request body nests deeper than ${MAX_DEPTH} levels`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new PithosError('invalid', `request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(v)) throw new PithosError('invalid', 'request body must be a JSON object');
  return v;
}

export function tooLarge(limit: number): PithosError {
  return new PithosError('too_large', `request body exceeds the limit of ${limit} bytes`);
}
