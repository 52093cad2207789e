/**
 * POST /txns on PostgreSQL: one database transaction (SERIALIZABLE when the
 * client asks), every check first on the state before the first mutation,
 * then every mutation in order on the same transaction, so a later one sees
 * the earlier ones. Anything failing rolls all of it back. The namespace
 * functions are the single-operation ones, so a mutation behaves the same
 * alone or in a transaction. What a check means and what a mutation
 * answers is shared with the log store (../txn.ts).
 */
import { StoreError } from '../errors.js';
import type { Check, Transaction } from '../store.js';
import { applyMutation, checkFailed, type CheckFacts, checkFailure, failedAt, results, type TxnWriter } from '../txn.js';
import { compileWheres } from '../wheres.js';
import { deleteRecord, putRecord, recordVersion } from './records.js';
import type { Db, Q } from './sql.js';
import { countRows, insertRow, removeRowById, removeRows, replaceRow, tableExists, updateRowById, updateRows } from './tables.js';
import { addVariant, currentVariant, setVariant } from './variants.js';
import { listLength, popItems, pushItems } from './lists.js';
import { listMissing } from '../lists.js';

/** What check `c` reads, from the transaction (so from the state before the first mutation). */
async function factsOf(q: Q, c: Check): Promise<CheckFacts> {
  switch (c.kind) {
    case 'variant': {
      const cur = await currentVariant(q, c.name);
      return { present: cur !== undefined, value: cur?.v };
    }
    case 'record': {
      const version = await recordVersion(q, c.name);
      return { present: version !== undefined, version };
    }
    case 'list': {
      const size = await listLength(q, c.name);
      return { present: size !== undefined, size };
    }
    case 'table': {
      const present = await tableExists(q, c.name);
      return { present, size: present && c.where !== undefined ? await countRows(q, c.name, compileWheres(c.where)) : undefined };
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

/** The database's primitives, answering each mutation's entry of `results`. */
function writer(q: Q): TxnWriter<Promise<string>> {
  return {
    insertRow: async (t, values) => results.inserted(await insertRow(q, t, values)),
    updateRows: async (t, where, values) => results.matched(await updateRows(q, t, compileWheres(where), values)),
    removeRows: async (t, where) => results.matched(await removeRows(q, t, compileWheres(where))),
    updateRow: async (t, id, values) => results.matched(await updateRowById(q, t, id, values)),
    removeRow: async (t, id) => results.matched(await removeRowById(q, t, id)),
    replaceRow: async (t, id, values) => {
      await replaceRow(q, t, id, values);
      return results.none;
    },
    addVariant: async (name, delta) => (await addVariant(q, name, delta)).data,
    setVariant: async (name, value, ttl) => {
      await setVariant(q, name, value, ttl);
      return results.none;
    },
    putRecord: async (id, values, ttl) => {
      await putRecord(q, id, values, ttl);
      return results.none;
    },
    deleteRecord: async (id) => {
      await deleteRecord(q, id);
      return results.none;
    },
    push: async (list, values, side) => results.length(await pushItems(q, list, values.map((v) => JSON.stringify(v)), side, true)),
    pop: async (list, side, count) => {
      const items = await popItems(q, list, { side, count, waitMs: 0, toSide: 'left' }, undefined);
      if (items === undefined) throw listMissing(list);
      return results.items(items);
    },
    setAdd: () => Promise.reject(notKept('set')),
    setRemove: () => Promise.reject(notKept('set')),
    zsetAdd: () => Promise.reject(notKept('zset')),
    zsetIncr: () => Promise.reject(notKept('zset')),
    zsetRemove: () => Promise.reject(notKept('zset')),
  };
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
  return db.run(async (q) => {
    await lockInOrder(q, txn);
    for (let i = 0; i < txn.checks.length; i++) {
      let why: string | undefined;
      try {
        why = checkFailure(txn.checks[i], await factsOf(q, txn.checks[i]));
      } catch (err) {
        throw failedAt(err, `transaction check ${i}`);
      }
      if (why !== undefined) throw checkFailed(i, why);
    }
    const w = writer(q);
    let out = '{"results":[';
    for (let i = 0; i < txn.mutations.length; i++) {
      let r: string;
      try {
        r = await applyMutation(w, txn.mutations[i]);
      } catch (err) {
        throw failedAt(err, `mutation ${i}`);
      }
      out += i === 0 ? r : ',' + r;
    }
    return out + ']}';
  }, txn.serializable);
}
