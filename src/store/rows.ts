/**
 * Single rows by `t_id` (docs/api.md, "One row by t_id"): the rules every
 * store shares, so both answer with the same words. A `t_id` as a client
 * writes it in a path, the 404 of a row that is not there, how a
 * conditional write names a row, and the merge of a row PATCH (`sets`, then
 * `unset`).
 */
import { invalid, notFound, type StoreError } from './errors.js';
import { mergeFields } from './json.js';
import type { Row } from './wheres.js';

/** A t_id is at most this: the largest integer a JSON number carries exactly. */
export const MAX_ROW_ID = Number.MAX_SAFE_INTEGER;

const DECIMAL = /^[1-9][0-9]*$/;

/**
 * The t_id a path segment names: a positive integer in decimal, no sign, no
 * leading zero, no fraction or exponent, at most MAX_ROW_ID. Anything else
 * is 400: a t_id is assigned by the server, so a malformed one can never name
 * a row, and answering 404 would hide the client's mistake.
 */
export function rowIdOfText(text: string): number {
  const shown = text.length > 32 ? `${text.slice(0, 32)}…` : text;
  if (!DECIMAL.test(text)) throw invalid(`t_id must be a positive integer in decimal, not '${shown}'`);
  const id = Number(text);
  if (id > MAX_ROW_ID) throw invalid(`t_id must be at most ${MAX_ROW_ID}, not '${shown}'`);
  return id;
}

/** Whether a JSON value is a t_id (a transaction's `t_id` field). */
export function isRowId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_ROW_ID;
}

/** How conditional writes and errors name one row. */
export const rowWhat = (name: string, id: number): string => `row ${id} of table '${name}'`;

export const rowMissing = (name: string, id: number): StoreError => notFound(`${rowWhat(name, id)} does not exist`);

/**
 * The `unset` of a row PATCH: an array of distinct top-level field names,
 * none of which is also in `sets` (that would say two things about one
 * field). Checked before any store sees the request.
 */
export function checkUnset(unset: unknown, sets: Row): string[] {
  if (!Array.isArray(unset)) throw invalid(`field 'unset' must be an array of field names`);
  const seen = new Set<string>();
  for (let i = 0; i < unset.length; i++) {
    const f: unknown = unset[i];
    if (typeof f !== 'string') throw invalid(`field 'unset' must hold field names (strings); element ${i} is not a string`);
    if (seen.has(f)) throw invalid(`field 'unset' names '${f}' twice`);
    if (Object.prototype.hasOwnProperty.call(sets, f)) throw invalid(`field '${f}' is both in 'sets' and in 'unset'`);
    seen.add(f);
  }
  return unset as string[];
}

/**
 * A row PATCH: `sets` written over the row as a table PATCH writes them
 * (top-level fields, a value replaces its field whole), then the fields of
 * `unset` removed. A field named in `unset` that the row lacks is no error:
 * after the PATCH the row lacks it, which is what was asked.
 */
export function patchedRow(row: Row, sets: Row, unset: readonly string[]): Row {
  const out = mergeFields(row, sets);
  for (let i = 0; i < unset.length; i++) delete out[unset[i]];
  return out;
}
