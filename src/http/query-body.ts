/**
 * Shaping fields of a row query and the listing's query parameters, checked
 * into the store's typed inputs (docs/api.md "Shape a row query",
 * "List names"). Every failure names the field and the reason.
 */
import { invalid } from '../store/errors.js';
import type { ListOptions, OrderKey, RowQuery } from '../store/store.js';
import { isPlainObject, MAX_TTL } from '../store/validate.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';

const MAX_ORDER_KEYS = 16;

function positiveInt(name: string, v: unknown, min: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_TTL) {
    throw invalid(`field '${name}' must be an integer ≥ ${min} and ≤ ${MAX_TTL}`);
  }
  return v;
}

function orderOf(v: unknown): OrderKey[] {
  if (!Array.isArray(v) || v.length > MAX_ORDER_KEYS) throw invalid(`field 'order' must be an array of at most ${MAX_ORDER_KEYS} {"field", "dir"} objects`);
  return v.map((k, i) => {
    if (!isPlainObject(k)) throw invalid(`order[${i}] must be an object {"field": <name>, "dir": "asc" | "desc"}`);
    for (const key of Object.keys(k)) {
      if (key !== 'field' && key !== 'dir') throw invalid(`unknown field '${key}' in order[${i}] (allowed: field, dir)`);
    }
    if (typeof k.field !== 'string' || k.field.length === 0) throw invalid(`order[${i}].field must be a non-empty string`);
    if (k.dir !== undefined && k.dir !== 'asc' && k.dir !== 'desc') throw invalid(`order[${i}].dir must be "asc" or "desc"`);
    return { field: k.field, dir: k.dir === 'desc' ? 'desc' : 'asc' };
  });
}

/** True when the body asks for nothing beyond `wheres` (the plain query's fast path). */
export function isPlainQuery(body: Body): boolean {
  for (const k in body) if (k !== 'wheres') return false;
  return true;
}

/** The row query a body of GET …/rows or POST …/query asks for (the field types checked by the route: bodies.ts `rowQuery`). */
export function rowQueryOf(body: BodyOf<typeof b.rowQuery>): RowQuery {
  const q: RowQuery = { wheres: body.wheres };
  if (body.limit !== undefined) q.limit = positiveInt('limit', body.limit, 1);
  if (body.after !== undefined) q.after = positiveInt('after', body.after, 0);
  if (body.order !== undefined) q.order = orderOf(body.order);
  if (body.fields !== undefined) {
    const f = body.fields;
    if (!Array.isArray(f) || !f.every((x): x is string => typeof x === 'string')) throw invalid(`field 'fields' must be an array of field names`);
    q.fields = f;
  }
  if (body.count !== undefined) {
    if (typeof body.count !== 'boolean') throw invalid(`field 'count' must be true or false`);
    q.count = body.count;
  }
  if (body.with_ids !== undefined) {
    if (typeof body.with_ids !== 'boolean') throw invalid(`field 'with_ids' must be true or false`);
    q.withIds = body.with_ids;
  }
  if (q.count === true && (q.fields !== undefined || q.withIds === true)) {
    throw invalid(`field 'count' returns no rows: it cannot be combined with 'fields' or 'with_ids'`);
  }
  return q;
}

/** A query parameter that must be an integer within [min, max]. */
export function intParam(name: string, v: string | undefined, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = /^[0-9]{1,10}$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw invalid(`query parameter '${name}' must be an integer ≥ ${min} and ≤ ${max}`);
  return n;
}

export const MAX_PAGE = 1000;
const DEFAULT_PAGE = 100;

export function listOptionsOf(q: Readonly<Record<string, string>>): ListOptions {
  return {
    prefix: q.prefix ?? '',
    limit: intParam('limit', q.limit, 1, MAX_PAGE) ?? DEFAULT_PAGE,
    after: q.after === undefined || q.after === '' ? null : q.after,
  };
}

/** An index's field: a top-level name or a dotted path with no empty segment. */
export function indexFieldOf(field: string): string {
  if (field.split('.').some((s) => s.length === 0)) throw invalid(`index field '${field}' must be a field name or a dotted path without empty parts`);
  return field;
}
