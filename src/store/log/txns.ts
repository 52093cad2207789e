/**
 * Transactions on the log (docs/api.md "Transactions"): every check on the
 * state before the first mutation, then every mutation in order on one Tx,
 * all in one decision and so one batch in the log: all or nothing, also
 * across a crash (docs/engine.md, atomic batches).
 */
import { StoreError } from '../errors.js';
import { listMissing } from '../lists.js';
import type { Check, Mutation, Transaction } from '../store.js';
import { compileWheres, matches } from '../wheres.js';
import type { Atomic, Tx } from './atomic.js';
import { deleteRecord, putRecord, recordVersion } from './records.js';
import { countRows, insertRow, removeRowById, removeRows, replaceRow, tableExists, updateRowById, updateRows } from './tables.js';
import { addVariant, currentVariant, setVariant } from './variants.js';
import { listHead, popItems, pushItems } from './lists.js';
import { readHeader } from './collections.js';
import { setAdd, setHas, setRemove } from './sets.js';
import { type ZsetIndexes, zsetAdd, zsetIncr, zsetRemove, zsetScore } from './zsets.js';
import { scoreText } from '../collection.js';

/** Whether `actual` satisfies a where-value (a literal, or an operator object), as a row field would. */
export function satisfies(actual: unknown, expected: unknown): boolean {
  return matches({ value: actual }, compileWheres({ value: expected }));
}

const exists = (yes: boolean): string => (yes ? 'exists' : 'does not exist');

/** Why a check fails, or undefined when it holds. */
function failure(tx: Tx, c: Check): string | undefined {
  switch (c.kind) {
    case 'variant': {
      const cur = currentVariant(tx, c.name);
      if (c.exists !== undefined && c.exists !== (cur !== undefined)) return `variant '${c.name}' ${exists(cur !== undefined)}`;
      if (!c.hasValue) return undefined;
      if (cur === undefined) return `variant '${c.name}' does not exist`;
      if (!satisfies(cur.v, c.value)) return `variant '${c.name}' is ${JSON.stringify(cur.v)}, which does not match ${JSON.stringify(c.value)}`;
      return undefined;
    }
    case 'record': {
      const v = recordVersion(tx, c.name);
      const has = v !== undefined;
      if (c.exists !== undefined && c.exists !== has) return `record '${c.name}' ${exists(has)}`;
      if (c.version === undefined || c.version === v) return undefined;
      return has ? `record '${c.name}' has version ${v}, not ${c.version}` : `record '${c.name}' does not exist`;
    }
    case 'list': {
      const h = listHead(tx, c.name);
      if (c.exists !== undefined && c.exists !== (h !== undefined)) return `list '${c.name}' ${exists(h !== undefined)}`;
      if (!c.hasLength) return undefined;
      if (h === undefined) return `list '${c.name}' does not exist`;
      const n = h.tail - h.head;
      if (!satisfies(n, c.length)) return `list '${c.name}' has length ${n}, which does not match ${JSON.stringify(c.length)}`;
      return undefined;
    }
    case 'table': {
      const has = tableExists(tx, c.name);
      if (c.exists !== undefined && c.exists !== has) return `table '${c.name}' ${exists(has)}`;
      if (c.where === undefined) return undefined;
      if (!has) return `table '${c.name}' does not exist`;
      const n = countRows(tx, c.name, compileWheres(c.where));
      if (!satisfies(n, c.count)) return `table '${c.name}' has ${n} matching row(s), which does not match ${JSON.stringify(c.count)}`;
      return undefined;
    }
    case 'set':
    case 'zset': {
      const h = readHeader(tx, c.kind, c.name);
      if (c.exists !== undefined && c.exists !== (h !== undefined)) return `${c.kind} '${c.name}' ${exists(h !== undefined)}`;
      const asks = c.kind === 'set' ? c.contains !== undefined : c.hasScore;
      if (!asks && !c.hasCount) return undefined;
      if (h === undefined) return `${c.kind} '${c.name}' does not exist`;
      if (c.hasCount && !satisfies(h.count, c.count)) {
        return `${c.kind} '${c.name}' has ${h.count} member(s), which does not match ${JSON.stringify(c.count)}`;
      }
      if (c.kind === 'set') {
        if (c.contains !== undefined && !setHas(tx, c.name, c.contains)) return `set '${c.name}' does not contain ${JSON.stringify(c.contains)}`;
        return undefined;
      }
      if (!c.hasScore) return undefined;
      const m = c.member as string;
      const s = zsetScore(tx, c.name, m);
      if (s === undefined) return `${JSON.stringify(m)} is not a member of zset '${c.name}'`;
      if (!satisfies(s, c.score)) return `zset '${c.name}' member ${JSON.stringify(m)} has score ${scoreText(s)}, which does not match ${JSON.stringify(c.score)}`;
      return undefined;
    }
  }
}

/** Applies one mutation; returns its entry of `results` as JSON text. */
function apply(tx: Tx, m: Mutation, zix: ZsetIndexes): string {
  switch (m.kind) {
    case 'table':
      switch (m.op) {
        case 'INSERT':
          return `{"t_id":${insertRow(tx, m.name, m.values)}}`;
        case 'UPDATE':
          return `{"matched":${updateRows(tx, m.name, compileWheres(m.where), m.values)}}`;
        case 'REMOVE':
          return `{"matched":${removeRows(tx, m.name, compileWheres(m.where))}}`;
        case 'UPDATE_ID':
          return `{"matched":${updateRowById(tx, m.name, m.tId, m.values)}}`;
        case 'REMOVE_ID':
          return `{"matched":${removeRowById(tx, m.name, m.tId)}}`;
        case 'REPLACE':
          replaceRow(tx, m.name, m.tId, m.values);
          return '{}';
      }
      break;
    case 'variant':
      if (m.op === 'ADD') return addVariant(tx, m.name, m.delta).data;
      setVariant(tx, m.name, m.value, m.ttl);
      return '{}';
    case 'record':
      if (m.op === 'PUT') putRecord(tx, m.name, m.values, m.ttl);
      else deleteRecord(tx, m.name);
      return '{}';
    case 'list': {
      if (m.op === 'PUSH') return `{"length":${pushItems(tx, m.name, m.values.map((v) => JSON.stringify(v)), m.side, true)}}`;
      const items = popItems(tx, m.name, m.side, m.count);
      if (items === undefined) throw listMissing(m.name);
      return `{"items":[${items.join(',')}]}`;
    }
    case 'set': {
      if (m.op === 'ADD') {
        const [added, count] = setAdd(tx, m.name, m.members, true);
        return `{"added":${added},"count":${count}}`;
      }
      const [removed, count] = setRemove(tx, m.name, m.members);
      return `{"removed":${removed},"count":${count}}`;
    }
    case 'zset':
      switch (m.op) {
        case 'ADD': {
          const [added, updated, count] = zsetAdd(zix, tx, m.name, m.members, m.mode, true);
          return `{"added":${added},"updated":${updated},"count":${count}}`;
        }
        case 'INCR':
          return `{"score":${scoreText(zsetIncr(zix, tx, m.name, m.member, m.delta, true))}}`;
        case 'REMOVE': {
          const [removed, count] = zsetRemove(zix, tx, m.name, m.members);
          return `{"removed":${removed},"count":${count}}`;
        }
      }
  }
  throw new Error('unreachable');
}

/** Names the failing part of a transaction in the error, keeping its kind (so its status). */
function at(err: unknown, what: string): unknown {
  return err instanceof StoreError ? new StoreError(err.kind, `${what}: ${err.message}`) : err;
}

export function transact(atomic: Atomic, txn: Transaction, zix: ZsetIndexes): Promise<string> {
  return atomic.atomically(undefined, (tx) => {
    for (let i = 0; i < txn.checks.length; i++) {
      let why: string | undefined;
      try {
        why = failure(tx, txn.checks[i]);
      } catch (err) {
        throw at(err, `transaction check ${i}`);
      }
      if (why !== undefined) throw new StoreError('conflict', `transaction check ${i} failed: ${why}`);
    }
    let out = '{"results":[';
    for (let i = 0; i < txn.mutations.length; i++) {
      let r: string;
      try {
        r = apply(tx, txn.mutations[i], zix);
      } catch (err) {
        throw at(err, `mutation ${i}`);
      }
      out += i === 0 ? r : ',' + r;
    }
    return out + ']}';
  });
}
