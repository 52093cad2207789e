/**
 * Row matching for `wheres` (docs/api.md "wheres", "Combinators and paths").
 * A where-object is a conjunction of its entries:
 *
 * - `field: value` — deep equality; `field: {"$op": arg, ...}` (every key
 *   starting with `$`) — operators, all of which must hold;
 * - a field with dots is a path into nested objects (`"address.city"`);
 *   `{"$field": ["a.b"], "$eq": 1}` names a path segment by segment, for
 *   field names that themselves contain a dot;
 * - `$and` / `$or`: arrays of where-objects; `$not`: one where-object.
 *
 * The where object is compiled once per request into a tree of tests, so
 * matching a million rows does not re-inspect it per row.
 */
import { invalid } from './errors.js';
import { deepEqual, hasField } from './json.js';
import { codePointCompare } from './sorted.js';

export type Row = Record<string, unknown>;
export { codePointCompare };

export const enum T {
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

/** A test on one field (or path). */
export interface Test {
  kind: 0;
  /** The top-level field when the path has one segment (the fast path), else undefined. */
  field: string | undefined;
  path: readonly string[];
  /** JSON of the path: how an index on the same path is found. */
  key: string;
  op: T;
  arg: unknown;
}
interface Any {
  kind: 1;
  parts: Node[][];
}
interface Not {
  kind: 2;
  parts: Node[];
}
export type Node = Test | Any | Not;

/** A conjunction: every node must hold. */
export type Matcher = readonly Node[];

const OPS: Record<string, T> = {
  $eq: T.Eq,
  $ne: T.Ne,
  $gt: T.Gt,
  $gte: T.Gte,
  $lt: T.Lt,
  $lte: T.Lte,
  $in: T.In,
  $nin: T.Nin,
  $exists: T.Exists,
};
const hasOwn = Object.prototype.hasOwnProperty;

/** An operator object: a non-empty plain object whose keys all start with `$`. */
function isOperatorObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  if (keys.length === 0) return false;
  for (const k of keys) if (k.charCodeAt(0) !== 36 /* $ */) return false;
  return true;
}

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A dotted field name as its path; `where` names it in messages. */
export function pathOf(field: string): string[] {
  return field.split('.');
}

/**
 * JSON of one-segment paths, by field name: the same few fields are queried
 * over and over, and the text is compared with index keys on every query.
 * Bounded: emptied when full.
 */
const FIELD_KEYS = new Map<string, string>();
const FIELD_KEYS_MAX = 4096;

function pathKey(path: readonly string[]): string {
  if (path.length !== 1) return JSON.stringify(path);
  const f = path[0];
  let k = FIELD_KEYS.get(f);
  if (k === undefined) {
    if (FIELD_KEYS.size >= FIELD_KEYS_MAX) FIELD_KEYS.clear();
    FIELD_KEYS.set(f, (k = JSON.stringify(path)));
  }
  return k;
}

function test(path: readonly string[], op: T, arg: unknown): Test {
  return { kind: 0, field: path.length === 1 ? path[0] : undefined, path, key: pathKey(path), op, arg };
}

function equality(path: readonly string[], v: unknown): Test {
  const t = typeof v;
  return test(path, t === 'string' || t === 'number' || t === 'boolean' ? T.EqPrimitive : T.Eq, v);
}

/** Compiles the operators of one field (or `$field` path) into `out`. */
function compileOps(path: readonly string[], name: string, ops: Record<string, unknown>, out: Node[], skip?: string): void {
  for (const opName of Object.keys(ops)) {
    if (opName === skip) continue;
    const arg = ops[opName];
    if (opName === '$not') {
      // Field-level negation: `{"age": {"$not": {"$gt": 3}}}` or `{"age": {"$not": 3}}`.
      const inner: Node[] = [];
      if (isOperatorObject(arg)) compileOps(path, name, arg, inner);
      else inner.push(equality(path, arg));
      out.push({ kind: 2, parts: inner });
      continue;
    }
    const op = hasOwn.call(OPS, opName) ? OPS[opName] : undefined;
    if (op === undefined) throw invalid(`unknown operator '${opName}' in wheres field '${name}'`);
    if ((op === T.In || op === T.Nin) && !Array.isArray(arg)) {
      throw invalid(`operator '${opName}' in wheres field '${name}' needs an array`);
    }
    if (op === T.Exists && typeof arg !== 'boolean') {
      throw invalid(`operator '$exists' in wheres field '${name}' needs true or false`);
    }
    out.push(test(path, op, arg));
  }
}

function whereList(v: unknown, what: string): Record<string, unknown>[] {
  if (!Array.isArray(v)) throw invalid(`'${what}' in wheres needs an array of where-objects`);
  for (const w of v) if (!isPlain(w)) throw invalid(`'${what}' in wheres needs an array of where-objects`);
  return v as Record<string, unknown>[];
}

function compileInto(wheres: Record<string, unknown>, out: Node[], depth: number): void {
  if (depth > 64) throw invalid('wheres is nested too deeply');
  if (hasOwn.call(wheres, '$field')) {
    const p = wheres.$field;
    if (!Array.isArray(p) || p.length === 0 || !p.every((s) => typeof s === 'string')) {
      throw invalid(`'$field' in wheres needs a non-empty array of field names`);
    }
    const name = (p as string[]).join('.');
    const keys = Object.keys(wheres);
    if (keys.length === 1) throw invalid(`'$field' in wheres needs at least one operator beside it`);
    for (const k of keys) {
      if (k.charCodeAt(0) !== 36) throw invalid(`field '${k}' cannot stand beside '$field' (only operators can)`);
    }
    compileOps(p as string[], name, wheres, out, '$field');
    return;
  }
  for (const field of Object.keys(wheres)) {
    const v = wheres[field];
    if (field === '$and') {
      for (const w of whereList(v, '$and')) compileInto(w, out, depth + 1);
      continue;
    }
    if (field === '$or') {
      const parts = whereList(v, '$or').map((w) => {
        const p: Node[] = [];
        compileInto(w, p, depth + 1);
        return p;
      });
      out.push({ kind: 1, parts });
      continue;
    }
    if (field === '$not') {
      if (!isPlain(v)) throw invalid(`'$not' in wheres needs a where-object`);
      const p: Node[] = [];
      compileInto(v, p, depth + 1);
      out.push({ kind: 2, parts: p });
      continue;
    }
    const path = field.indexOf('.') < 0 ? [field] : pathOf(field);
    if (isOperatorObject(v)) compileOps(path, field, v, out);
    else out.push(equality(path, v));
  }
}

export function compileWheres(wheres: Record<string, unknown>): Matcher {
  const out: Node[] = [];
  compileInto(wheres, out, 0);
  return out;
}

/** Numbers with numbers, strings with strings (code-point order); anything else never compares. */
export function compare(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return codePointCompare(a, b);
  return undefined;
}

/** Marks a path that leads nowhere. */
export const MISSING: unique symbol = Symbol('missing');

/** The value at `path`, through own fields of plain objects only (arrays are not entered); MISSING when absent. */
export function lookup(row: Row, path: readonly string[]): unknown {
  let v: unknown = row;
  for (let i = 0; i < path.length; i++) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || !hasOwn.call(v, path[i])) return MISSING;
    v = (v as Row)[path[i]];
  }
  return v;
}

function holds(row: Row, t: Test): boolean {
  if (t.op === T.EqPrimitive) {
    // Object.prototype holds no string, number or boolean values, so
    // row[field] === v can only hold for an own field: no ownership check needed.
    return (t.field !== undefined ? row[t.field] : lookup(row, t.path)) === t.arg;
  }
  let v: unknown;
  if (t.field !== undefined) v = hasField(row, t.field) ? row[t.field] : MISSING;
  else v = lookup(row, t.path);
  if (t.op === T.Exists) return (v !== MISSING) === t.arg;
  // A field the row lacks never matches (not even $ne / $nin).
  if (v === MISSING) return false;
  switch (t.op) {
    case T.Eq:
      return deepEqual(v, t.arg);
    case T.Ne:
      return !deepEqual(v, t.arg);
    case T.In:
      return (t.arg as unknown[]).some((x) => deepEqual(v, x));
    case T.Nin:
      return !(t.arg as unknown[]).some((x) => deepEqual(v, x));
    default: {
      const c = compare(v, t.arg);
      if (c === undefined) return false;
      return t.op === T.Gt ? c > 0 : t.op === T.Gte ? c >= 0 : t.op === T.Lt ? c < 0 : c <= 0;
    }
  }
}

/**
 * Kept small and free of direct recursion so that V8 inlines it into the
 * per-row loops of a query (measured: not inlined, it cost about half as much
 * again as the whole scan of a 1,000-row table); combinators go through holdsNode.
 */
export function matches(row: Row, m: Matcher): boolean {
  for (let i = 0; i < m.length; i++) {
    const n = m[i];
    if (n.kind === 0 && n.op === T.EqPrimitive && n.field !== undefined) {
      // The common `{"field": value}` test: one property read and one ===, per row.
      if (row[n.field] !== n.arg) return false;
    } else if (!holdsNode(row, n)) {
      return false;
    }
  }
  return true;
}

/**
 * The field of a matcher that is one `{"field": primitive}` test, else
 * undefined: the commonest query, which the row loops run with the field
 * and value in locals (one property read and one === per row).
 */
export function singleEq(m: Matcher): { field: string; arg: unknown } | undefined {
  if (m.length !== 1) return undefined;
  const n = m[0];
  return n.kind === 0 && n.op === T.EqPrimitive && n.field !== undefined ? { field: n.field, arg: n.arg } : undefined;
}

function holdsNode(row: Row, n: Node): boolean {
  if (n.kind === 0) return holds(row, n);
  if (n.kind === 1) {
    for (const p of n.parts) if (matches(row, p)) return true;
    return false;
  }
  return !matches(row, n.parts);
}
