/**
 * Row matching for `wheres` (docs/api.md, "How wheres matches"): every listed field must
 * match. A where-value that is an object whose keys all start with `$` is an
 * operator object; any other value means deep equality. The where object is
 * compiled once per request into a list of tests, so matching 1,000 rows
 * does not re-inspect it per row.
 */
import { invalid } from './errors.js';
import { deepEqual, hasField } from './json.js';

export type Row = Record<string, unknown>;

const enum T {
  /** Equality with a string, number or boolean: one `===` (see compileWheres). */
  EqPrimitive,
  Eq,
  Ne,
  Gt,
  Gte,
  Lt,
  Lte,
  In,
  Nin,
  Exists,
}

interface Test {
  field: string;
  op: T;
  arg: unknown;
}

export type Matcher = readonly Test[];

const OPS: Record<string, T> = {
  $eq: T.Eq, $ne: T.Ne, $gt: T.Gt, $gte: T.Gte, $lt: T.Lt, $lte: T.Lte, $in: T.In, $nin: T.Nin, $exists: T.Exists,
};

/** An operator object: a non-empty plain object whose keys all start with `$`. */
function isOperatorObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  if (keys.length === 0) return false;
  for (const k of keys) if (k.charCodeAt(0) !== 36 /* $ */) return false;
  return true;
}

export function compileWheres(wheres: Record<string, unknown>): Matcher {
  const tests: Test[] = [];
  for (const field of Object.keys(wheres)) {
    const v = wheres[field];
    if (!isOperatorObject(v)) {
      // Object.prototype holds no string, number or boolean values, so
      // row[field] === v can only hold for an own field: no ownership check needed.
      const t = typeof v;
      tests.push({ field, op: t === 'string' || t === 'number' || t === 'boolean' ? T.EqPrimitive : T.Eq, arg: v });
      continue;
    }
    for (const name of Object.keys(v)) {
      const op = Object.prototype.hasOwnProperty.call(OPS, name) ? OPS[name] : undefined;
      if (op === undefined) throw invalid(`unknown operator '${name}' in wheres field '${field}'`);
      const arg = v[name];
      if ((op === T.In || op === T.Nin) && !Array.isArray(arg)) {
        throw invalid(`operator '${name}' in wheres field '${field}' needs an array`);
      }
      if (op === T.Exists && typeof arg !== 'boolean') {
        throw invalid(`operator '$exists' in wheres field '${field}' needs true or false`);
      }
      tests.push({ field, op, arg });
    }
  }
  return tests;
}

/** Numbers with numbers, strings with strings (code-point order); anything else never compares. */
function compare(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return codePointCompare(a, b);
  return undefined;
}

function codePointCompare(a: string, b: string): number {
  // UTF-16 order differs from code-point order only around surrogates.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(i) as number;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

export function matches(row: Row, m: Matcher): boolean {
  for (let i = 0; i < m.length; i++) {
    const t = m[i];
    if (t.op === T.EqPrimitive) {
      if (row[t.field] !== t.arg) return false;
      continue;
    }
    const present = hasField(row, t.field);
    if (t.op === T.Exists) {
      if (present !== t.arg) return false;
      continue;
    }
    // A field the row lacks never matches (not even $ne / $nin).
    if (!present) return false;
    const v = row[t.field];
    switch (t.op) {
      case T.Eq:
        if (!deepEqual(v, t.arg)) return false;
        break;
      case T.Ne:
        if (deepEqual(v, t.arg)) return false;
        break;
      case T.In:
        if (!(t.arg as unknown[]).some((x) => deepEqual(v, x))) return false;
        break;
      case T.Nin:
        if ((t.arg as unknown[]).some((x) => deepEqual(v, x))) return false;
        break;
      default: {
        const c = compare(v, t.arg);
        if (c === undefined) return false;
        if (t.op === T.Gt ? c <= 0 : t.op === T.Gte ? c < 0 : t.op === T.Lt ? c >= 0 : c > 0) return false;
      }
    }
  }
  return true;
}
