/**
 * What every store shares about POST /txns (docs/api.md, "Transactions"):
 * how a check is judged and worded, which mutation calls which primitive,
 * and the shape of each result. A store only fetches the facts a check needs
 * and writes through its own primitives, synchronously inside one log batch
 * (store/log/txns.ts) or awaited inside one database transaction
 * (store/postgres/txns.ts); Redis shares one generic command among its
 * variants the same way.
 */
import { scoreText, type ZMode } from './collection.js';
import { StoreError } from './errors.js';
import type { Check, ListSide, Mutation, Wheres } from './store.js';
import type { ScalarInput } from './variant.js';
import { compileWheres, matches, type Row } from './wheres.js';

/** Whether `actual` satisfies a where-value (a literal, or an operator object), as a row field would. */
export function satisfies(actual: unknown, expected: unknown): boolean {
  return matches({ value: actual }, compileWheres({ value: expected }));
}

/**
 * What a check reads of the state before the first mutation. `present` is
 * whether the object exists; `size` a list's length, a table's matching rows
 * (only when the check has `where` and the table exists) or a collection's
 * member count; `value` a variant's value; `version` a record's; `member`
 * whether a set holds the checked member, or the checked zset member's score
 * (undefined: not a member), fetched only when the object exists and the
 * check asks.
 */
export interface CheckFacts {
  present: boolean;
  value?: unknown;
  version?: number;
  size?: number;
  member?: boolean | number;
}

const exists = (yes: boolean): string => (yes ? 'exists' : 'does not exist');

/** Why a check fails on these facts, or undefined when it holds. */
export function checkFailure(c: Check, f: CheckFacts): string | undefined {
  const what = `${c.kind} '${c.name}'`;
  if (c.exists !== undefined && c.exists !== f.present) return `${what} ${exists(f.present)}`;
  if (c.kind !== 'record' && c.kind !== 'table' && c.version !== undefined && c.version !== f.version) {
    return f.present ? `${what} has version ${f.version}, not ${c.version}` : `${what} does not exist`;
  }
  switch (c.kind) {
    case 'variant':
      if (!c.hasValue) return undefined;
      if (!f.present) return `${what} does not exist`;
      // A check's own numbers came through JSON.parse: an integer beyond 2^53 compares as the double it rounds to.
      if (typeof f.value === 'bigint') f.value = Number(f.value);
      if (!satisfies(f.value, c.value)) return `${what} is ${JSON.stringify(f.value)}, which does not match ${JSON.stringify(c.value)}`;
      return undefined;
    case 'record':
      if (c.version === undefined || c.version === f.version) return undefined;
      return f.present ? `${what} has version ${f.version}, not ${c.version}` : `${what} does not exist`;
    case 'list':
      if (!c.hasLength) return undefined;
      if (!f.present) return `${what} does not exist`;
      if (!satisfies(f.size, c.length)) return `${what} has length ${f.size}, which does not match ${JSON.stringify(c.length)}`;
      return undefined;
    case 'table':
      if (c.where === undefined) return undefined;
      if (!f.present) return `${what} does not exist`;
      if (!satisfies(f.size, c.count)) return `${what} has ${f.size} matching row(s), which does not match ${JSON.stringify(c.count)}`;
      return undefined;
    case 'set':
    case 'zset': {
      const asks = c.kind === 'set' ? c.contains !== undefined : c.hasScore;
      if (!asks && !c.hasCount) return undefined;
      if (!f.present) return `${what} does not exist`;
      if (c.hasCount && !satisfies(f.size, c.count)) return `${what} has ${f.size} member(s), which does not match ${JSON.stringify(c.count)}`;
      if (c.kind === 'set') {
        if (c.contains !== undefined && f.member !== true) return `${what} does not contain ${JSON.stringify(c.contains)}`;
        return undefined;
      }
      if (!c.hasScore) return undefined;
      const m = JSON.stringify(c.member);
      if (typeof f.member !== 'number') return `${m} is not a member of ${what}`;
      if (!satisfies(f.member, c.score)) return `${what} member ${m} has score ${scoreText(f.member)}, which does not match ${JSON.stringify(c.score)}`;
      return undefined;
    }
  }
}

/**
 * The primitives a transaction writes through, one per mutation. Each
 * returns the mutation's entry of `results` as JSON text (formatted with
 * `results` below): a string inside the log's batch, a promise of one on
 * the database.
 */
export interface TxnWriter<R> {
  insertRow(table: string, values: Row): R;
  updateRows(table: string, where: Wheres, values: Row): R;
  removeRows(table: string, where: Wheres): R;
  updateRow(table: string, tId: number, values: Row): R;
  removeRow(table: string, tId: number): R;
  replaceRow(table: string, tId: number, values: Row): R;
  addVariant(name: string, delta: ScalarInput): R;
  setVariant(name: string, value: ScalarInput, ttl: number, retype: boolean): R;
  putRecord(id: string, values: Row, ttl: number): R;
  deleteRecord(id: string): R;
  push(list: string, values: unknown[], side: ListSide): R;
  pop(list: string, side: ListSide, count: number): R;
  setAdd(name: string, members: string[]): R;
  setRemove(name: string, members: string[]): R;
  zsetAdd(name: string, members: Array<[string, number]>, mode: ZMode): R;
  zsetIncr(name: string, member: string, delta: number): R;
  zsetRemove(name: string, members: string[]): R;
}

/** One mutation through a store's writer. */
export function applyMutation<R>(w: TxnWriter<R>, m: Mutation): R {
  switch (m.kind) {
    case 'table':
      switch (m.op) {
        case 'INSERT':
          return w.insertRow(m.name, m.values);
        case 'UPDATE':
          return w.updateRows(m.name, m.where, m.values);
        case 'REMOVE':
          return w.removeRows(m.name, m.where);
        case 'UPDATE_ID':
          return w.updateRow(m.name, m.tId, m.values);
        case 'REMOVE_ID':
          return w.removeRow(m.name, m.tId);
        case 'REPLACE':
          return w.replaceRow(m.name, m.tId, m.values);
      }
      break;
    case 'variant':
      return m.op === 'ADD' ? w.addVariant(m.name, m.delta) : w.setVariant(m.name, m.value, m.ttl, m.retype === true);
    case 'record':
      return m.op === 'PUT' ? w.putRecord(m.name, m.values, m.ttl) : w.deleteRecord(m.name);
    case 'list':
      return m.op === 'PUSH' ? w.push(m.name, m.values, m.side) : w.pop(m.name, m.side, m.count);
    case 'set':
      return m.op === 'ADD' ? w.setAdd(m.name, m.members) : w.setRemove(m.name, m.members);
    case 'zset':
      switch (m.op) {
        case 'ADD':
          return w.zsetAdd(m.name, m.members, m.mode);
        case 'INCR':
          return w.zsetIncr(m.name, m.member, m.delta);
        case 'REMOVE':
          return w.zsetRemove(m.name, m.members);
      }
  }
  throw new Error('unreachable');
}

/** The entries of `results`, one wording for every store. */
export const results = {
  none: '{}',
  inserted: (tId: number): string => `{"t_id":${tId}}`,
  matched: (n: number): string => `{"matched":${n}}`,
  length: (n: number): string => `{"length":${n}}`,
  /** Items already as JSON text. */
  items: (items: readonly string[]): string => `{"items":[${items.join(',')}]}`,
  added: (added: number, count: number): string => `{"added":${added},"count":${count}}`,
  addedOrUpdated: (added: number, updated: number, count: number): string => `{"added":${added},"updated":${updated},"count":${count}}`,
  removed: (removed: number, count: number): string => `{"removed":${removed},"count":${count}}`,
  score: (s: number): string => `{"score":${scoreText(s)}}`,
} as const;

/** Names the failing part of a transaction in the error, keeping its kind (so its status). */
export function failedAt(err: unknown, what: string): unknown {
  return err instanceof StoreError && err.kind !== 'unavailable' ? new StoreError(err.kind, `${what}: ${err.message}`) : err;
}

/** The error of check `i` failing for `why`. */
export const checkFailed = (i: number, why: string): StoreError => new StoreError('conflict', `transaction check ${i} failed: ${why}`);
