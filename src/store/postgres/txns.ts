/**
 * POST /txns on PostgreSQL: one database transaction (SERIALIZABLE when the
 * client asks), every check first on the state before the first mutation,
 * then every mutation in order on the same transaction, so a later one sees
 * the earlier ones. Anything failing rolls all of it back. The namespace
 * functions are the single-operation ones, so a mutation behaves the same
 * alone or in a transaction. What a check means and what a mutation
 * answers is shared with the log store (../txn.ts).
 */
import type { Check, Transaction } from '../store.js';
import { applyMutation, checkFailed, type CheckFacts, checkFailure, failedAt, results, type TxnWriter } from '../txn.js';
import { compileWheres } from '../wheres.js';
import { deleteRecord, putRecord, recordVersion } from './records.js';
import type { Db, Q } from './sql.js';
import { countRows, insertRow, removeRowById, removeRows, replaceRow, tableExists, updateRowById, updateRows } from './tables.js';
import { withSequences } from './tids.js';
import { addVariant, currentVariant, setVariant } from './variants.js';
import { listLength, popItems, pushItems } from './lists.js';
import { listMissing } from '../lists.js';
import { liveCount } from './collections.js';
import { setAdd, setHas, setRemove } from './sets.js';
import { zsetAdd, zsetIncr, zsetRemove, zsetScore } from './zsets.js';
import { NOT_HERE, oneTrip } from './batch.js';
import { type ElementKind, isElementKind, KINDS, type TxnKind } from '../kinds.js';

/**
 * What check `c` reads, from the transaction (so from the state before the first mutation).
 * `missing`: the collections whose header is only this transaction's placeholder (lockInOrder).
 */
async function factsOf(q: Q, c: Check, missing: Set<string>): Promise<CheckFacts> {
  if (isElementKind(c.kind) && missing.has(placeholderKey(c.kind, c.name))) return { present: false };
  const f = await factsWithoutVersion(q, c);
  if (c.kind !== 'record' && c.kind !== 'table' && c.version !== undefined && f.present) {
    const r = await q.query(`SELECT version FROM ${KINDS[c.kind].pg.objects} WHERE name = $1`, [c.name]);
    f.version = r.length === 0 ? undefined : Number(r[0].version);
  }
  return f;
}

async function factsWithoutVersion(q: Q, c: Check): Promise<CheckFacts> {
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
    case 'zset': {
      const size = await liveCount(q, c.kind, c.name);
      if (size === undefined) return { present: false };
      const f: CheckFacts = { present: true, size };
      if (c.kind === 'set') {
        if (c.contains !== undefined) f.member = await setHas(q, c.name, c.contains);
      } else if (c.hasScore && c.member !== undefined) {
        f.member = await zsetScore(q, c.name, c.member);
      }
      return f;
    }
  }
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
    setVariant: async (name, value, ttl, retype) => {
      await setVariant(q, name, value, ttl, retype ? {} : undefined, retype);
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
    push: async (list, values, side) =>
      results.length(
        await pushItems(
          q,
          list,
          values.map((v) => JSON.stringify(v)),
          side,
          true,
        ),
      ),
    pop: async (list, side, count) => {
      const items = await popItems(q, list, { side, count, waitMs: 0, toSide: 'left' }, undefined);
      if (items === undefined) throw listMissing(list);
      return results.items(items);
    },
    setAdd: async (name, members) => results.added(...(await setAdd(q, name, members, true))),
    setRemove: async (name, members) => results.removed(...(await setRemove(q, name, members))),
    zsetAdd: async (name, members, mode) => results.addedOrUpdated(...(await zsetAdd(q, name, members, mode, true))),
    zsetIncr: async (name, member, delta) => results.score(await zsetIncr(q, name, member, delta, true)),
    zsetRemove: async (name, members) => results.removed(...(await zsetRemove(q, name, members))),
  };
}

/** The header of a list, set or sorted set, and the columns of a placeholder (op ''): locked, no change in the feed (collections.ts). */
const PLACEHOLDERS: Record<ElementKind, string> = {
  list: `${KINDS.list.pg.objects} AS x (name, head, tail, expires_at, version, op) SELECT n, 0, 0, NULL, nextval('pithos_seq'), ''`,
  set: `${KINDS.set.pg.objects} AS x (name, count, expires_at, version, op) SELECT n, 0, NULL, nextval('pithos_seq'), ''`,
  zset: `${KINDS.zset.pg.objects} AS x (name, count, expires_at, version, op) SELECT n, 0, NULL, nextval('pithos_seq'), ''`,
};

/** Keys of the placeholders lockInOrder inserted: collections that do not exist yet. */
const placeholderKey = (kind: ElementKind, name: string): string => `${kind} ${name}`;

/**
 * Locks every table, variant, record, list, set and sorted set the mutations write, each kind in
 * name order, before anything else (a table only inserted into excepted: an
 * insert locks nothing, tables.ts): two transfers a→b and b→a then queue
 * instead of deadlocking (which PostgreSQL detects only after
 * deadlock_timeout, 1 s by default). A record checked for its `version` is
 * locked too, so the version checked is still the version when the
 * mutations write and the transaction commits.
 *
 * A list, set or sorted set that does not exist yet is locked in its place in
 * that order too, by inserting its header as a placeholder (what a write to a
 * missing collection does, collections.ts); an existing header is locked by
 * the same statement (ON CONFLICT DO UPDATE locks the row even where its WHERE
 * updates nothing). Locked later, by the mutation that creates it, it would be
 * taken after the others: a transaction that found it created meanwhile, and
 * locked it first, then waits for this one's other locks while this one waits
 * for it. Resolves to the placeholders inserted (placeholderKey), which the
 * checks see as absent; a mutation that does not create its collection (pop,
 * remove) finds it missing and the transaction rolls back, placeholder and all.
 */
async function lockInOrder(q: Q, txn: Transaction): Promise<Set<string>> {
  const names: Record<TxnKind, Set<string>> = { table: new Set(), variant: new Set(), record: new Set(), list: new Set(), set: new Set(), zset: new Set() };
  for (const m of txn.mutations) names[m.kind].add(m.name);
  for (const c of txn.checks) if (c.kind === 'record' && c.version !== undefined) names.record.add(c.name);
  const sql: Record<'table' | 'variant' | 'record', string> = {
    table: 'SELECT name FROM pithos_tables WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE',
    variant: 'SELECT name FROM pithos_variants WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE',
    record: 'SELECT id FROM pithos_records WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
  };
  const written = [...names.table].filter((t) => txn.mutations.some((m) => m.kind === 'table' && m.name === t && m.op !== 'INSERT'));
  if (written.length > 0) await q.query(sql.table, [written.sort()]);
  for (const kind of ['variant', 'record'] as const) {
    if (names[kind].size > 0) await q.query(sql[kind], [[...names[kind]].sort()]);
  }
  const inserted = new Set<string>();
  for (const kind of Object.keys(PLACEHOLDERS) as ElementKind[]) {
    if (names[kind].size === 0) continue;
    const r = await q.query(
      `INSERT INTO ${PLACEHOLDERS[kind]} FROM unnest($1::text[]) AS t(n) ORDER BY n
      ON CONFLICT (name) DO UPDATE SET op = x.op WHERE false RETURNING name`,
      [[...names[kind]]],
    );
    for (const x of r) inserted.add(placeholderKey(kind, x.name as string));
  }
  return inserted;
}

export function transact(db: Db, txn: Transaction): Promise<string> {
  const inserted = new Set<string>();
  for (const m of txn.mutations) if (m.kind === 'table' && m.op === 'INSERT') inserted.add(m.name);
  return inserted.size === 0 ? attempt(db, txn) : withSequences(db, inserted, () => attempt(db, txn));
}

function attempt(db: Db, txn: Transaction): Promise<string> {
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
    const missing = await lockInOrder(q, txn);
    for (let i = 0; i < txn.checks.length; i++) {
      let why: string | undefined;
      try {
        why = checkFailure(txn.checks[i], await factsOf(q, txn.checks[i], missing));
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
