/**
 * Body fields as the route table declares them (routes.ts): each declared
 * field is checked in declaration order, before the handler runs, with one
 * message per type. The handler then reads fields it knows are well-formed,
 * and the declarations cannot drift from what the server accepts.
 */
import { invalid } from '../store/errors.js';
import { checkHolder, isPlainObject, isVersion, MAX_TTL } from '../store/validate.js';
import type { Body } from './request-body.js';

export type FieldType =
  | 'object'
  | 'string'
  | 'number'
  | 'boolean'
  | 'array'
  /** a string, number or boolean: a variant's value */
  | 'scalar'
  /** seconds, 0 ≤ ttl ≤ 2^31−1; absent = 0 */
  | 'ttl'
  /** a lease length: 1 ≤ ttl ≤ 2^31−1 */
  | 'lease'
  /** a lock holder label: a string of at most 255 bytes, or null */
  | 'holder'
  /** an object's version, as GET's ETag gives it: an integer ≥ 0 */
  | 'version'
  /** anything JSON; checked by the handler (transaction bodies) */
  | 'any';

export interface Field {
  type: FieldType;
  required?: boolean;
  doc: string;
  /** Text appended when a required field is missing: a guess at what the client meant (hints.ts). */
  hint?: (body: Body, name: string) => string;
}

export type Fields = Readonly<Record<string, Field>>;

/** What a field of each type holds once check() has passed it. */
type ValueOf<T extends FieldType> = T extends 'object'
  ? Record<string, unknown>
  : T extends 'string'
    ? string
    : T extends 'number' | 'ttl' | 'lease' | 'version'
      ? number
      : T extends 'boolean'
        ? boolean
        : T extends 'array'
          ? unknown[]
          : T extends 'scalar'
            ? string | number | boolean
            : T extends 'holder'
              ? string | null
              : unknown;

type RequiredFields<F extends Fields> = { [K in keyof F as F[K] extends { required: true } ? K : never]: ValueOf<F[K]['type']> };
type OptionalFields<F extends Fields> = { [K in keyof F as F[K] extends { required: true } ? never : K]?: ValueOf<F[K]['type']> };

/**
 * The body a handler receives once checkBody has passed the route's fields
 * `F`: each declared field typed as its check guarantees (absent when not
 * required), anything else unknown (non-strict endpoints ignore extra fields).
 * Handlers take their body as this type of their route's declaration
 * (body-fields.ts), so that a field's type lives in one place.
 */
export type BodyOf<F extends Fields> = RequiredFields<F> & OptionalFields<F> & Body;

const A: Partial<Record<FieldType, string>> = {
  object: 'an object',
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  array: 'an array',
};

function ttl(name: string, v: unknown, min: 0 | 1): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_TTL) {
    throw invalid(`field '${name}' must be an integer ≥ ${min} and ≤ ${MAX_TTL}`);
  }
}

function check(name: string, f: Field, v: unknown, body: Body, param: string): void {
  if (v === undefined) {
    if (!f.required) return;
    if (f.hint !== undefined) {
      const hint = f.hint(body, param);
      if (hint !== '') throw invalid(`field '${name}' is required (${A[f.type] ?? 'a value'})${hint}`);
    }
    switch (f.type) {
      case 'scalar':
        throw invalid(`field '${name}' is required (a string, boolean or number)`);
      case 'lease':
      case 'ttl':
        throw invalid(`field '${name}' is required (an integer ≥ ${f.type === 'lease' ? 1 : 0})`);
      default:
        throw invalid(`field '${name}' is required (${A[f.type] ?? 'a value'})`);
    }
  }
  switch (f.type) {
    case 'object':
      if (!isPlainObject(v)) throw invalid(`field '${name}' must be an object`);
      return;
    case 'string':
    case 'number':
    case 'boolean':
      if (typeof v !== f.type || (f.type === 'number' && !Number.isFinite(v))) throw invalid(`field '${name}' must be ${A[f.type]}`);
      return;
    case 'array':
      if (!Array.isArray(v)) throw invalid(`field '${name}' must be an array`);
      return;
    case 'scalar':
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
        throw invalid(`field '${name}' must be a string, boolean or number`);
      }
      return;
    case 'ttl':
      return ttl(name, v, 0);
    case 'lease':
      return ttl(name, v, 1);
    case 'holder':
      checkHolder(v);
      return;
    case 'version':
      if (!isVersion(v)) throw invalid(`field '${name}' must be an integer ≥ 0 (a version)`);
      return;
    case 'any':
      return;
  }
}

/** Checks the declared fields; `strict` also refuses undeclared ones (docs/api.md "Transport"). */
export function checkBody(fields: Fields, names: readonly string[], body: Body, strict: boolean, param: string): void {
  // Unknown fields first: a misspelt field ("set" for "sets") is named as what it is, not
  // reported as the required field it was meant to be.
  if (strict) {
    for (const k of Object.keys(body)) {
      if (!Object.prototype.hasOwnProperty.call(fields, k)) {
        throw invalid(names.length === 0 ? `unknown field '${k}': this endpoint takes no body fields` : `unknown field '${k}' (allowed: ${names.join(', ')})`);
      }
    }
  }
  for (let i = 0; i < names.length; i++) check(names[i], fields[names[i]], body[names[i]], body, param);
}
