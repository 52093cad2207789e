/**
 * POST /txns on PostgreSQL: one database transaction (SERIALIZABLE when the
 * client asks), every check first on the state before the first mutation,
 * then every mutation in order on the same transaction, so a later one sees
 * the earlier ones. Anything failing rolls all of it back. The namespace
 * functions are the single-operation ones, so a mutation behaves the same
 * alone or in a transaction; messages mirror ../log/txns.ts exactly.
 */
import { StoreError } from '../errors.js';
import type { Check, Mutation, Transaction } from '../store.js';
import { compileWheres, matches } from '../wheres.js';
import { deleteRecord, putRecord, recordVersion } from './records.js';
import type { Db, Q } from './sql.js';
import { countRows, insertRow, removeRowById, removeRows, replaceRow, tableExists, updateRowById, updateRows } from './tables.js';
import { addVariant, currentVariant, setVariant } from './variants.js';
import { listLength, popItems, pushItems } from './lists.js';
import { listMissing } from '../lists.js';
import { NOT_HERE, oneTrip } from './batch.js';

function satisfies(actual: unknown, expected: unknown): boolean {
  return matches({ value: actual }, compileWheres({ value: expected }));
}

const exists = (yes: boolean): string => (yes ? 'exists' : 'does not exist');

async function failure(q: Q, c: Check): Promise<string | undefined> {
  switch (c.kind) {
    case 'variant': {
      const cur = await currentVariant(q, c.name);
      if (c.exists !== undefined && c.exists !== (cur !== undefined)) return `variant '${c.name}' ${exists(cur !== undefined)}`;
      if (!c.hasValue) return undefined;
      if (cur === undefined) return `variant '${c.name}' does not exist`;
      if (!satisfies(cur.v, c.value)) return `variant '${c.name}' is ${JSON.stringify(cur.v)}, which does not match ${JSON.stringify(c.value)}`;
      return undefined;
    }
    case 'record': {
      const v = await recordVersion(q, c.name);
      const has = v !== undefined;
      if (c.exists !== undefined && c.exists !== has) return `record '${c.name}' ${exists(has)}`;
      if (c.version === undefined || c.version === v) return undefined;
      return has ? `record '${c.name}' has version ${v}, not ${c.version}` : `record '${c.name}' does not exist`;
    }
    case 'list': {
      const n = await listLength(q, c.name);
      if (c.exists !== undefined && c.exists !== (n !== undefined)) return `list '${c.name}' ${exists(n !== undefined)}`;
      if (!c.hasLength) return undefined;
      if (n === undefined) return `list '${c.name}' does not exist`;
      if (!satisfies(n, c.length)) return `list '${c.name}' has length ${n}, which does not match ${JSON.stringify(c.length)}`;
      return undefined;
    }
    case 'table': {
      const has = await tableExists(q, c.name);
      if (c.exists !== undefined && c.exists !== has) return `table '${c.name}' ${exists(has)}`;
      if (c.where === undefined) return undefined;
      if (!has) return `table '${c.name}' does not exist`;
      const n = await countRows(q, c.name, compileWheres(c.where));
      if (!satisfies(n, c.count)) return `table '${c.name}' has ${n} matching row(s), which does not match ${JSON.stringify(c.count)}`;
      return undefined;
    }
    case 'set':
    case 'zset':
      throw notKept(c.kind);
  }
}

/** Sets and sorted sets are not kept by this store yet; transact() refuses them before anything runs. */
function notKept(kind: 'set' | 'zset'): StoreError {
  return new StoreError('unavailable', `this store does not keep ${kind}s`);
}

async function apply(q: Q, m: Mutation): Promise<string> {
  switch (m.kind) {
    case 'table':
      switch (m.op) {
        case 'INSERT':
          return `{"t_id":${await insertRow(q, m.name, m.values)}}`;
        case 'UPDATE':
          return `{"matched":${await updateRows(q, m.name, compileWheres(m.where), m.values)}}`;
        case 'REMOVE':
          return `{"matched":${await removeRows(q, m.name, compileWheres(m.where))}}`;
        case 'UPDATE_ID':
          return `{"matched":${await updateRowById(q, m.name, m.tId, m.values)}}`;
        case 'REMOVE_ID':
          return `{"matched":${await removeRowById(q, m.name, m.tId)}}`;
        case 'REPLACE':
          await replaceRow(q, m.name, m.tId, m.values);
          return '{}';
      }
      break;
    case 'variant':
      if (m.op === 'ADD') return (await addVariant(q, m.name, m.delta)).data;
      await setVariant(q, m.name, m.value, m.ttl);
      return '{}';
    case 'record':
      if (m.op === 'PUT') await putRecord(q, m.name, m.values, m.ttl);
      else await deleteRecord(q, m.name);
      return '{}';
    case 'list': {
      if (m.op === 'PUSH') return `{"length":${await pushItems(q, m.name, m.values.map((v) => JSON.stringify(v)), m.side, true)}}`;
      const items = await popItems(q, m.name, { side: m.side, count: m.count, waitMs: 0, toSide: 'left' }, undefined);
      if (items === undefined) throw listMissing(m.name);
      return `{"items":[${items.join(',')}]}`;
    }
    case 'set':
    case 'zset':
      throw notKept(m.kind);
  }
  throw new Error('unreachable');
}

/** Names the failing part of a transaction in the error, keeping its kind (so its status). */
function at(err: unknown, what: string): unknown {
  return err instanceof StoreError && err.kind !== 'unavailable' ? new StoreError(err.kind, `${what}: ${err.message}`) : err;
}

/**
 * Locks every table, variant and record the mutations write, each kind in
 * name order, before anything else: two transfers a→b and b→a then queue
 * instead of deadlocking (which PostgreSQL detects only after
 * deadlock_timeout, 1 s by default). A record checked for its `version` is
 * locked too, so the version checked is still the version when the
 * mutations write and the transaction commits.
 */
async function lockInOrder(q: Q, txn: Transaction): Promise<void> {
  const names: Record<'table' | 'variant' | 'record' | 'list', Set<string>> = { table: new Set(), variant: new Set(), record: new Set(), list: new Set() };
  for (const m of txn.mutations) if (m.kind === 'table' || m.kind === 'variant' || m.kind === 'record' || m.kind === 'list') names[m.kind].add(m.name);
  for (const c of txn.checks) if (c.kind === 'record' && c.version !== undefined) names.record.add(c.name);
  const sql: Record<'table' | 'variant' | 'record' | 'list', string> = {
    table: 'SELECT name FROM pithos_tables WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE',
    variant: 'SELECT name FROM pithos_variants WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE',
    record: 'SELECT id FROM pithos_records WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
    list: 'SELECT name FROM pithos_lists WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE',
  };
  for (const kind of ['table', 'variant', 'record', 'list'] as const) {
    if (names[kind].size > 0) await q.query(sql[kind], [[...names[kind]].sort()]);
  }
}

export function transact(db: Db, txn: Transaction): Promise<string> {
  // This store keeps no sets or sorted sets yet: refuse before anything runs.
  const coll = [...txn.mutations, ...txn.checks].find((x) => x.kind === 'set' || x.kind === 'zset');
  if (coll !== undefined) return Promise.reject(notKept(coll.kind as 'set' | 'zset'));
  // The common transactions in one round trip (batch.ts); whatever that path cannot
  // answer with success runs again here, statement by statement.
  const one = oneTrip(db.q, txn);
  if (one === undefined) return general(db, txn);
  return db.batch(one.sql).then(one.answer, (err: unknown) => {
    if ((err as { code?: unknown })?.code === NOT_HERE) return general(db, txn);
    throw err;
  });
}

function general(db: Db, txn: Transaction): Promise<string> {
  return db.run(async (q) => {
    await lockInOrder(q, txn);
    for (let i = 0; i < txn.checks.length; i++) {
      let why: string | undefined;
      try {
        why = await failure(q, txn.checks[i]);
      } catch (err) {
        throw at(err, `transaction check ${i}`);
      }
      if (why !== undefined) throw new StoreError('conflict', `transaction check ${i} failed: ${why}`);
    }
    let out = '{"results":[';
    for (let i = 0; i < txn.mutations.length; i++) {
      let r: string;
      try {
        r = await apply(q, txn.mutations[i]);
      } catch (err) {
        throw at(err, `mutation ${i}`);
      }
      out += i === 0 ? r : ',' + r;
    }
    return out + ']}';
  }, txn.serializable);
}
