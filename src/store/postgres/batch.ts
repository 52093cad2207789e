/**
 * A /txns in one round trip (docs/scaling.md, "Round trips"). The common
 * transactions (checks of existence or of a record's version; variant ADD of
 * a safe integer or SET, record PUT or DELETE, row INSERT) need no decision
 * between their statements that SQL cannot make itself, so they are sent as
 * one simple-protocol query (Db.batch): the locks in name order as txns.ts
 * takes them, one statement per check, then one per mutation, which
 * PostgreSQL runs as one transaction.
 *
 * A check that does not hold, or a mutation whose statement finds nothing
 * to do (a missing variant or record, another type, an overflow, a missing
 * table), ends with a division by zero (SQLSTATE 22012), which rolls the
 * whole query back; the caller
 * then runs the transaction again on the general path, which decides the
 * same state statement by statement and gives the exact answer or error.
 * So this path only ever answers success, exactly as the general path would.
 */
import type { Check, Mutation, Transaction } from '../store.js';
import { isIntegerLiteral, makeVariant, parseStored, storedJson, variantOf } from '../variant.js';
import { literal, type Q } from './sql.js';
import { insertSql } from './tids.js';

/** The SQLSTATE that says "a mutation found nothing to do": run it the general way. */
export const NOT_HERE = '22012';

/** Fails the statement (22012) unless the data-modifying CTE `u` returned a row. */
const needs = (u: string): string => `1 / (SELECT count(*) FROM ${u})::int4 AS ok`;

interface Planned {
  sql: string;
  /** The mutation's result, from the rows its statement returned. */
  result(rows: Record<string, unknown>[]): string;
}

const int = (n: number): string => `${Math.trunc(n)}::int8`;

function plan(q: Q, m: Mutation): Planned | undefined {
  const now = q.now;
  if (m.kind === 'variant' && m.op === 'ADD') {
    const d = m.delta.value;
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || !isIntegerLiteral(d, m.delta.text)) return undefined;
    const n = literal(m.name);
    return {
      // The increment of variants.ts: an integer, live, the sum within 64 bits.
      sql: `WITH u AS (UPDATE pithos_variants SET v = (v::int8 + ${int(d)})::text, version = nextval('pithos_seq')
             WHERE name = ${n} AND t = 'i' AND ${q.live()} AND v::numeric + ${int(d)} BETWEEN -9223372036854775808 AND 9223372036854775807 RETURNING v)
            SELECT (SELECT v FROM u) AS v, ${needs('u')}`,
      result: (rows) => makeVariant('i', parseStored('i', rows[0].v as string)).data,
    };
  }
  if (m.kind === 'variant' && m.op === 'SET') {
    if (!Number.isSafeInteger(m.ttl)) return undefined;
    const x = variantOf(m.value);
    // Creates, replaces a live one of the same type, or replaces an expired one (any type).
    return {
      sql: `WITH u AS (INSERT INTO pithos_variants AS x (name, t, v, expires_at) VALUES (${literal(m.name)}, ${literal(x.t)}, ${literal(storedJson(x))}, ${q.expiry(int(m.ttl))})
             ON CONFLICT (name) DO UPDATE SET t = excluded.t, v = excluded.v, expires_at = excluded.expires_at, version = nextval('pithos_seq')
             WHERE x.t = excluded.t OR NOT ${q.live('x.expires_at')} RETURNING 1)
            SELECT ${needs('u')}`,
      result: () => '{}',
    };
  }
  if (m.kind === 'record' && m.op === 'PUT') {
    if (!Number.isSafeInteger(m.ttl)) return undefined;
    return {
      sql: `INSERT INTO pithos_records AS x (id, body, expires_at) VALUES (${literal(m.name)}, ${literal(JSON.stringify(m.values))}, ${q.expiry(int(m.ttl))})
            ON CONFLICT (id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at, version = nextval('pithos_seq')`,
      result: () => '{}',
    };
  }
  if (m.kind === 'record' && m.op === 'DELETE') {
    return {
      sql: `WITH u AS (DELETE FROM pithos_records WHERE id = ${literal(m.name)} AND ${q.live()} RETURNING 1) SELECT ${needs('u')}`,
      result: () => '{}',
    };
  }
  if (m.kind === 'table' && m.op === 'INSERT') {
    const n = literal(m.name);
    return {
      // insertRow of tables.ts.
      sql: insertSql(n, literal(JSON.stringify(m.values)), q.live(), `SELECT (SELECT t_id FROM u) AS t_id, ${needs('u')}`),
      result: (rows) => `{"t_id":${Number(rows[0].t_id)}}`,
    };
  }
  return undefined;
}

/**
 * A check as a statement that fails (22012) unless it holds: the checks that
 * only ask whether a variant, record or table exists, or a record's version.
 * A failing one sends the transaction to the general path, which words the
 * 409. Undefined for the others (values, counts, lengths, members).
 */
function guard(q: Q, c: Check): string | undefined {
  const n = literal(c.name);
  const live = (table: string, key: string, more = ''): string => `EXISTS (SELECT 1 FROM ${table} WHERE ${key} = ${n} AND ${q.live()}${more})`;
  const holds: string[] = [];
  if (c.kind === 'variant' && !c.hasValue && c.exists !== undefined) holds.push(`${live('pithos_variants', 'name')} = ${c.exists}`);
  else if (c.kind === 'table' && c.where === undefined && c.exists !== undefined) holds.push(`${live('pithos_tables', 'name')} = ${c.exists}`);
  else if (c.kind === 'record') {
    if (c.exists !== undefined) holds.push(`${live('pithos_records', 'id')} = ${c.exists}`);
    if (c.version !== undefined) holds.push(live('pithos_records', 'id', ` AND version = ${int(c.version)}`));
  } else return undefined;
  return `SELECT 1 / (${holds.length === 0 ? 'true' : holds.join(' AND ')})::int4 AS ok`;
}

const LOCKS = {
  variant: (names: string) => `SELECT name FROM pithos_variants WHERE name = ANY(${names}) ORDER BY name FOR UPDATE`,
  record: (names: string) => `SELECT id FROM pithos_records WHERE id = ANY(${names}) ORDER BY id FOR UPDATE`,
} as const;

export interface OneTrip {
  sql: string;
  /** The transaction's answer from the rows of every statement of `sql`. */
  answer(results: Record<string, unknown>[][]): string;
}

/**
 * The transaction as one query, or undefined when it needs decisions only
 * the general path makes (checks of values or counts, other operations,
 * values SQL text cannot carry).
 */
export function oneTrip(q: Q, txn: Transaction): OneTrip | undefined {
  if (txn.mutations.length === 0) return undefined;
  const planned: Planned[] = [];
  // Tables are only inserted into here, and an insert locks nothing (tables.ts).
  const names = { variant: new Set<string>(), record: new Set<string>() };
  const guards: string[] = [];
  for (const c of txn.checks) {
    const g = guard(q, c);
    if (g === undefined || c.name.includes('\u0000')) return undefined;
    guards.push(g);
    // As txns.ts: a record checked for its version is locked with the objects written.
    if (c.kind === 'record' && c.version !== undefined) names.record.add(c.name);
  }
  for (const m of txn.mutations) {
    // A NUL cannot be in a query's text (nor in a text value): the general path reports it.
    if (m.name.includes('\u0000')) return undefined;
    let p: Planned | undefined;
    try {
      p = plan(q, m);
    } catch {
      return undefined; // a value the general path refuses, with its message
    }
    if (p === undefined || p.sql.includes('\u0000')) return undefined;
    planned.push(p);
    if (m.kind === 'variant' || m.kind === 'record') names[m.kind].add(m.name);
  }
  // The locks of txns.ts (lockInOrder), in its order, when there is more than one object to lock.
  const locks: string[] = [];
  // A record checked for its version is locked even when it is the only object: the version checked is the one written over.
  if (names.variant.size + names.record.size > 1 || txn.checks.some((c) => c.kind === 'record' && c.version !== undefined)) {
    for (const kind of ['variant', 'record'] as const) {
      if (names[kind].size === 0) continue;
      locks.push(LOCKS[kind](`ARRAY[${[...names[kind]].sort().map(literal).join(', ')}]::text[]`));
    }
  }
  // The checks after the locks and before the first mutation, as txns.ts runs them.
  const before = [...locks, ...guards];
  const statements = [...before, ...planned.map((p) => p.sql)];
  const sql = txn.serializable ? `BEGIN ISOLATION LEVEL SERIALIZABLE;\n${statements.join(';\n')};\nCOMMIT` : statements.join(';\n');
  const skip = (txn.serializable ? 1 : 0) + before.length;
  return {
    sql,
    answer(results) {
      let out = '{"results":[';
      for (let i = 0; i < planned.length; i++) out += (i === 0 ? '' : ',') + planned[i].result(results[skip + i]);
      return out + ']}';
    },
  };
}
