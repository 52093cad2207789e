/**
 * POST /txns bodies → the store's typed Transaction (docs/api.md
 * "Transactions"). Shape only: every kind, operation and field is checked
 * here, naming the mutation's or check's index, before any store sees it.
 * UrnaDB's own clients send `"where": {}` with every INSERT and
 * `"values": {}` with every REMOVE: empty ones are accepted and ignored.
 */
import { invalid } from '../store/errors.js';
import type { Check, Mutation, Transaction } from '../store/store.js';
import { elementNumberTexts } from '../store/json.js';
import { isRowId, MAX_ROW_ID } from '../store/rows.js';
import { checkName, isPlainObject, isVersion, MAX_TTL } from '../store/validate.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { checkMember, checkScore, membersOf, popCountOf, scoresOf, valuesOf, Z_MODES } from '../store/collection.js';
import { wordList, type TxnKind } from '../store/kinds.js';

export const MAX_TXN_ITEMS = 1000;

/** A list side as a mutation names it. */
function sideOf(v: unknown, where: string): 'left' | 'right' {
  if (v !== 'left' && v !== 'right') throw invalid(`${where}: field 'side' must be "left" or "right"`);
  return v;
}

type Obj = Record<string, unknown>;
const hasOwn = (o: Obj, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

function allowOnly(o: Obj, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw invalid(`${where}: unknown field '${k}' (allowed: ${allowed.join(', ')})`);
  }
}

function obj(o: Obj, k: string, where: string): Obj {
  const v = o[k];
  if (!isPlainObject(v)) throw invalid(`${where}: field '${k}' ${v === undefined ? 'is required (an object)' : 'must be an object'}`);
  return v;
}

function emptyOrAbsent(o: Obj, k: string, where: string, why: string): void {
  const v = o[k];
  if (v === undefined) return;
  if (!isPlainObject(v) || Object.keys(v).length > 0) throw invalid(`${where}: field '${k}' must be absent or {} (${why})`);
}

function ttlOf(o: Obj, where: string): number {
  const v = o.ttl;
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_TTL) {
    throw invalid(`${where}: field 'ttl' must be an integer ≥ 0 and ≤ ${MAX_TTL}`);
  }
  return v;
}

function bool(o: Obj, k: string, where: string): boolean | undefined {
  const v = o[k];
  if (v === undefined || typeof v === 'boolean') return v;
  throw invalid(`${where}: field '${k}' must be true or false`);
}

function nameOf(o: Obj, kind: string, where: string): string {
  const v = o.name;
  if (typeof v !== 'string') throw invalid(`${where}: field 'name' ${v === undefined ? 'is required (a string)' : 'must be a string'}`);
  try {
    checkName(v, kind);
  } catch (err) {
    throw invalid(`${where}: ${(err as Error).message}`);
  }
  return v;
}

type Kind = TxnKind;
/** The kinds in the order the 400 for a bad 'kind' names them, which is not the kinds table's order. */
const KIND_ORDER: Record<Kind, null> = { table: null, variant: null, record: null, list: null, set: null, zset: null };
const KINDS = Object.keys(KIND_ORDER) as Kind[];
const KINDS_TEXT = wordList(KINDS);

/** Whether `v` is one of `options`, as a type guard. */
function oneOf<T extends string>(options: readonly T[], v: unknown): v is T {
  return options.some((o) => o === v);
}

function kindOf(o: Obj, where: string): Kind {
  const k = o.kind ?? 'table';
  if (oneOf(KINDS, k)) return k;
  throw invalid(`${where}: field 'kind' must be ${KINDS_TEXT}${typeof k === 'string' ? `, not '${k}'` : ''}`);
}

/** A shared rule's error (src/store/collection.ts), prefixed with the mutation or check it is about. */
function within<T>(where: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw invalid(`${where}: ${(err as Error).message}`);
  }
}

function scalar(o: Obj, k: string, where: string): unknown {
  const v = o[k];
  if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) return v;
  throw invalid(`${where}: field '${k}' ${v === undefined ? 'is required (a string, boolean or number)' : 'must be a string, boolean or number'}`);
}

function rowIdField(o: Obj, where: string): number {
  const v = o.t_id;
  if (!isRowId(v)) throw invalid(`${where}: field 't_id' must be a positive integer (at most ${MAX_ROW_ID})`);
  return v;
}

/** The t_id an UPDATE or REMOVE names instead of `where`; undefined when it has `where`. */
function byRowId(o: Obj, where: string): number | undefined {
  if (o.t_id === undefined) return undefined;
  if (o.where !== undefined) throw invalid(`${where}: give 'where' or 't_id', not both`);
  return rowIdField(o, where);
}

const OPS = {
  table: ['INSERT', 'UPDATE', 'REMOVE', 'REPLACE'],
  variant: ['ADD', 'SET'],
  record: ['PUT', 'DELETE'],
  list: ['PUSH', 'POP'],
  set: ['ADD', 'REMOVE'],
  zset: ['ADD', 'INCR', 'REMOVE'],
} as const;

/** Source texts of the mutations' numbers, by mutation index (JSON.parse forgets whether `1.0` had a fraction). */
interface NumberTexts {
  values: ReadonlyMap<number, string>;
  deltas: ReadonlyMap<number, string>;
}
const NONE: ReadonlyMap<number, string> = new Map();

function mutation(m: unknown, i: number, texts: NumberTexts): Mutation {
  const where = `mutation ${i}`;
  if (!isPlainObject(m)) throw invalid(`${where} must be an object`);
  const kind = kindOf(m, where);
  const op = m.operation;
  if (typeof op !== 'string' || !(OPS[kind] as readonly string[]).includes(op)) {
    throw invalid(`${where}: field 'operation' must be one of ${OPS[kind].join(', ')} for a ${kind}` + (typeof op === 'string' ? `, not '${op}'` : ''));
  }
  const name = nameOf(m, kind, where);
  switch (kind) {
    case 'table':
      return tableMutation(m, op, name, where);
    case 'variant':
      return variantMutation(m, op, name, where, texts.deltas.get(i), texts.values.get(i));
    case 'list':
      return listMutation(m, op, name, where);
    case 'record':
      return recordMutation(m, op, name, where);
    case 'set':
    case 'zset':
      return collectionMutation(m, kind, op, name, where);
  }
}

/** A table mutation's fields, `op` already one of OPS.table. */
function tableMutation(m: Obj, op: string, name: string, where: string): Mutation {
  switch (op) {
    case 'INSERT':
      allowOnly(m, ['kind', 'name', 'operation', 'values', 'where'], where);
      emptyOrAbsent(m, 'where', where, 'an INSERT matches no rows');
      return { kind: 'table', name, op: 'INSERT', values: obj(m, 'values', where) };
    case 'UPDATE': {
      allowOnly(m, ['kind', 'name', 'operation', 'values', 'where', 't_id'], where);
      const id = byRowId(m, where);
      const values = obj(m, 'values', where);
      return id === undefined
        ? { kind: 'table', name, op: 'UPDATE', where: obj(m, 'where', where), values }
        : { kind: 'table', name, op: 'UPDATE_ID', tId: id, values };
    }
    case 'REMOVE': {
      allowOnly(m, ['kind', 'name', 'operation', 'values', 'where', 't_id'], where);
      emptyOrAbsent(m, 'values', where, 'a REMOVE writes no values');
      const id = byRowId(m, where);
      return id === undefined ? { kind: 'table', name, op: 'REMOVE', where: obj(m, 'where', where) } : { kind: 'table', name, op: 'REMOVE_ID', tId: id };
    }
    case 'REPLACE':
      allowOnly(m, ['kind', 'name', 'operation', 'values', 't_id'], where);
      if (m.t_id === undefined) throw invalid(`${where}: field 't_id' is required (the row to replace)`);
      return { kind: 'table', name, op: 'REPLACE', tId: rowIdField(m, where), values: obj(m, 'values', where) };
    default:
      throw new Error('unreachable');
  }
}

/** `deltaText` / `valueText`: the number's source text, which decides its type as on PUT and POST /variants (`1.0` is a double). */
function variantMutation(m: Obj, op: string, name: string, where: string, deltaText: string | undefined, valueText: string | undefined): Mutation {
  switch (op) {
    case 'ADD': {
      allowOnly(m, ['kind', 'name', 'operation', 'delta'], where);
      const d = m.delta;
      if (typeof d !== 'number' || !Number.isFinite(d)) {
        throw invalid(`${where}: field 'delta' ${d === undefined ? 'is required (a number)' : 'must be a number'}`);
      }
      // As POST /variants does, the delta's source text decides its type (`1.0` is a double).
      return { kind: 'variant', name, op: 'ADD', delta: { value: d, text: deltaText } };
    }
    case 'SET':
      allowOnly(m, ['kind', 'name', 'operation', 'variant', 'ttl'], where);
      // As PUT /variants does, the number's source text decides its type (`3.0` is a double).
      return { kind: 'variant', name, op: 'SET', value: { value: scalar(m, 'variant', where), text: valueText }, ttl: ttlOf(m, where) };
    default:
      throw new Error('unreachable');
  }
}

function listMutation(m: Obj, op: string, name: string, where: string): Mutation {
  switch (op) {
    case 'PUSH': {
      allowOnly(m, ['kind', 'name', 'operation', 'values', 'side'], where);
      const values = within(where, () => valuesOf('values', m.values));
      return { kind: 'list', name, op: 'PUSH', values, side: m.side === undefined ? 'right' : sideOf(m.side, where) };
    }
    case 'POP': {
      allowOnly(m, ['kind', 'name', 'operation', 'side', 'count'], where);
      const c = within(where, () => popCountOf('count', m.count ?? 1));
      return { kind: 'list', name, op: 'POP', side: m.side === undefined ? 'left' : sideOf(m.side, where), count: c };
    }
    default:
      throw new Error('unreachable');
  }
}

function recordMutation(m: Obj, op: string, name: string, where: string): Mutation {
  switch (op) {
    case 'PUT':
      allowOnly(m, ['kind', 'name', 'operation', 'values', 'ttl'], where);
      return { kind: 'record', name, op: 'PUT', values: obj(m, 'values', where), ttl: ttlOf(m, where) };
    default:
      allowOnly(m, ['kind', 'name', 'operation'], where);
      return { kind: 'record', name, op: 'DELETE' };
  }
}

function collectionMutation(m: Obj, kind: 'set' | 'zset', op: string, name: string, where: string): Mutation {
  switch (`${kind} ${op}`) {
    case 'set ADD':
    case 'set REMOVE':
    case 'zset REMOVE': {
      allowOnly(m, ['kind', 'name', 'operation', 'members'], where);
      const members = within(where, () => membersOf('members', m.members));
      if (kind === 'zset') return { kind, name, op: 'REMOVE', members };
      return { kind, name, op: op === 'ADD' ? 'ADD' : 'REMOVE', members };
    }
    case 'zset ADD': {
      allowOnly(m, ['kind', 'name', 'operation', 'members', 'mode'], where);
      const mode = m.mode ?? 'upsert';
      if (!oneOf(Z_MODES, mode)) throw invalid(`${where}: field 'mode' must be upsert, nx, xx, gt or lt`);
      return { kind: 'zset', name, op: 'ADD', members: within(where, () => scoresOf('members', m.members, true)), mode };
    }
    case 'zset INCR': {
      allowOnly(m, ['kind', 'name', 'operation', 'member', 'delta'], where);
      const member = within(where, () => checkMember(m.member === undefined ? `field 'member' (required)` : `field 'member'`, m.member));
      const delta = within(where, () => checkScore(m.delta === undefined ? `field 'delta' (required)` : `field 'delta'`, m.delta));
      return { kind: 'zset', name, op: 'INCR', member, delta };
    }
    default:
      throw new Error('unreachable');
  }
}

function versionOf(v: unknown, where: string): number {
  if (!isVersion(v)) throw invalid(`${where}: field 'version' must be an integer ≥ 0`);
  return v;
}

function check(c: unknown, i: number): Check {
  const where = `check ${i}`;
  if (!isPlainObject(c)) throw invalid(`${where} must be an object`);
  const kind = c.kind;
  if (!oneOf(KINDS, kind)) throw invalid(`${where}: field 'kind' must be ${KINDS_TEXT}`);
  const name = nameOf(c, kind, where);
  const exists = bool(c, 'exists', where);
  switch (kind) {
    // ---- sets and sorted sets
    case 'set': {
      allowOnly(c, ['kind', 'name', 'exists', 'contains', 'count'], where);
      const contains = c.contains === undefined ? undefined : within(where, () => checkMember(`field 'contains'`, c.contains));
      if (exists === undefined && contains === undefined && !hasOwn(c, 'count')) throw invalid(`${where}: a set check needs 'exists', 'contains' or 'count'`);
      return { kind: 'set', name, exists, contains, count: c.count, hasCount: hasOwn(c, 'count') };
    }
    case 'zset': {
      allowOnly(c, ['kind', 'name', 'exists', 'member', 'score', 'count'], where);
      if (hasOwn(c, 'member') !== hasOwn(c, 'score')) throw invalid(`${where}: a zset check takes 'member' and 'score' together`);
      const member = c.member === undefined ? undefined : within(where, () => checkMember(`field 'member'`, c.member));
      if (exists === undefined && member === undefined && !hasOwn(c, 'count'))
        throw invalid(`${where}: a zset check needs 'exists', 'member' and 'score', or 'count'`);
      return { kind: 'zset', name, exists, member, score: c.score, hasScore: hasOwn(c, 'score'), count: c.count, hasCount: hasOwn(c, 'count') };
    }
    case 'list':
      allowOnly(c, ['kind', 'name', 'exists', 'length'], where);
      if (exists === undefined && !hasOwn(c, 'length')) throw invalid(`${where}: a list check needs 'length' or 'exists'`);
      return { kind: 'list', name, exists, length: c.length, hasLength: hasOwn(c, 'length') };
    case 'variant':
      allowOnly(c, ['kind', 'name', 'exists', 'value'], where);
      if (exists === undefined && !hasOwn(c, 'value')) throw invalid(`${where}: a variant check needs 'value' or 'exists'`);
      return { kind: 'variant', name, exists, value: c.value, hasValue: hasOwn(c, 'value') };
    case 'record': {
      allowOnly(c, ['kind', 'name', 'exists', 'version'], where);
      const version = c.version === undefined ? undefined : versionOf(c.version, where);
      if (exists === undefined && version === undefined) throw invalid(`${where}: a record check needs 'exists' or 'version'`);
      return { kind: 'record', name, exists, version };
    }
    default: {
      allowOnly(c, ['kind', 'name', 'exists', 'where', 'count'], where);
      const hasWhere = hasOwn(c, 'where');
      if (hasWhere !== hasOwn(c, 'count')) throw invalid(`${where}: a table check takes 'where' and 'count' together`);
      if (exists === undefined && !hasWhere) throw invalid(`${where}: a table check needs 'exists', or 'where' and 'count'`);
      return { kind: 'table', name, exists, where: hasWhere ? obj(c, 'where', where) : undefined, count: c.count };
    }
  }
}

/** The body's fields are already declared and type-checked by the route table (arrays, booleans: bodies.ts `transact`). */
export function parseTransaction(body: BodyOf<typeof b.transact>, raw: string): Transaction {
  const ms = body.mutations;
  const cs = body.checks ?? [];
  if (ms.length > MAX_TXN_ITEMS) throw invalid(`field 'mutations' holds ${ms.length} mutations; at most ${MAX_TXN_ITEMS} are allowed`);
  if (cs.length > MAX_TXN_ITEMS) throw invalid(`field 'checks' holds ${cs.length} checks; at most ${MAX_TXN_ITEMS} are allowed`);
  const texts: NumberTexts = {
    values: ms.some((m) => isPlainObject(m) && typeof m.variant === 'number') ? elementNumberTexts(raw, 'mutations', 'variant') : NONE,
    deltas: ms.some((m) => isPlainObject(m) && typeof m.delta === 'number') ? elementNumberTexts(raw, 'mutations', 'delta') : NONE,
  };
  return {
    mutations: ms.map((m, i) => mutation(m, i, texts)),
    checks: cs.map(check),
    serializable: body.serializable ?? body.serialization ?? false,
  };
}
