/**
 * Request bodies: read on every method (GET and DELETE carry `wheres` and
 * `token`), bounded in size, parsed as JSON whatever the Content-Type, and
 * bounded in nesting before JSON.parse so nothing later can recurse deeply.
 */
import { exceedsDepth, MAX_DEPTH } from '../store/json.js';
import { isPlainObject } from '../store/validate.js';
import { HttpError } from './errors.js';

export type Body = Record<string, unknown>;

const EMPTY = /^[\s]*$/;

export function parseBody(text: string): Body {
  if (text.length === 0 || EMPTY.test(text)) return Object.create(null) as Body;
  if (exceedsDepth(text, MAX_DEPTH)) {
    throw new HttpError('invalid', `request body nests deeper than ${MAX_DEPTH} levels`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new HttpError('invalid', `request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(v)) throw new HttpError('invalid', 'request body must be a JSON object');
  return v;
}

export function tooLarge(limit: number): HttpError {
  return new HttpError('too_large', `request body exceeds the limit of ${limit} bytes`);
}
