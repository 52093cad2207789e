/**
 * What sets and sorted sets share on PostgreSQL (docs/scaling.md, "Sets and
 * sorted sets"): one header row per collection (pithos_sets, pithos_zsets:
 * count, expiry, version) and one row per member in its own table, keyed
 * (name, member). Members are bytea holding their UTF-8 bytes, so the
 * database orders them in byte order (the contract's order) and a member
 * may hold U+0000, which text cannot.
 *
 * Every write locks the header row first (SELECT … FOR UPDATE), so writers
 * of one collection queue on it and counts stay exact on any number of
 * nodes. A write to a missing collection inserts the header as a
 * placeholder (op '') to lock it; the change feed's trigger skips rows in
 * that state, and the write either turns it into the collection or, when
 * it changes nothing, deletes it again. An expired header is treated as
 * absent: its members go when a write makes a new collection under the name.
 *
 * Each header write says what it was for in `op` and `op_data` (an element
 * operation's name and its arguments and result as JSON, both NULL for a
 * whole-object write), which the change feed's trigger publishes (schema.ts).
 */
import { type CollectionKind, collectionMissing } from '../collection.js';
import { KINDS } from '../kinds.js';
import { StoreError } from '../errors.js';
import type { Precondition } from '../store.js';
import { checkPrecondition } from '../versions.js';
import type { Q } from './sql.js';

export const NEXT = "nextval('pithos_seq')";
/** Members one INSERT statement writes at most (a whole-object write of more takes several). */
export const INSERT_STEP = 10_000;

export const HEADERS: Record<CollectionKind, string> = { set: KINDS.set.pg.objects, zset: KINDS.zset.pg.objects };
export const MEMBERS: Record<CollectionKind, string> = { set: KINDS.set.pg.elements, zset: KINDS.zset.pg.elements };

/** A member as the database keeps it: its UTF-8 bytes. */
export const memberBytes = (m: string): Buffer => Buffer.from(m, 'utf8');
export const memberOf = (b: unknown): string => (b as Buffer).toString('utf8');

/** The header a write holds locked for the rest of its transaction. */
export interface Locked {
  /** The collection existed (live) before this write. */
  exists: boolean;
  count: number;
  /** This write inserted the header to lock it: it must write it or delete it. */
  placeholder: boolean;
}

/**
 * Locks the header of `name` and checks `pre` against its version. An
 * existing collection, or (with `create`) an empty new one without expiry;
 * 404 otherwise. The members of an expired one are deleted when `create`
 * makes a new one in its place.
 */
export async function lockHeader(q: Q, kind: CollectionKind, name: string, create: boolean, pre: Precondition | undefined): Promise<Locked> {
  const hdr = HEADERS[kind];
  for (let i = 0; i < 8; i++) {
    const r = await q.query(`SELECT count, version, ${q.live()} AS live, op IS NOT DISTINCT FROM '' AS placeholder FROM ${hdr} WHERE name = $1 FOR UPDATE`, [
      name,
    ]);
    if (r.length > 0 && r[0].placeholder === true) {
      // Only the transaction that inserted a placeholder sees it (txns.ts locks collections so): no collection yet.
      if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, undefined, pre);
      if (!create) throw collectionMissing(kind, name);
      return { exists: false, count: 0, placeholder: true };
    }
    if (r.length > 0) {
      const live = r[0].live === true;
      if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, live ? Number(r[0].version) : undefined, pre);
      if (live) return { exists: true, count: Number(r[0].count), placeholder: false };
      if (!create) throw collectionMissing(kind, name);
      await q.query(`DELETE FROM ${MEMBERS[kind]} WHERE name = $1`, [name]);
      return { exists: false, count: 0, placeholder: false };
    }
    if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, undefined, pre);
    if (!create) throw collectionMissing(kind, name);
    const c = await q.query(
      `INSERT INTO ${hdr} (name, count, expires_at, version, op) VALUES ($1, 0, NULL, ${NEXT}, '')
      ON CONFLICT (name) DO NOTHING RETURNING 1`,
      [name],
    );
    if (c.length > 0) return { exists: false, count: 0, placeholder: true };
    // Created meanwhile by another writer: lock that one.
  }
  throw new StoreError('unavailable', `${kind} '${name}' kept changing under concurrent writes; try again`);
}

/** An existing collection's header, locked; 404 when there is none. */
export const lockExisting = (q: Q, kind: CollectionKind, name: string, pre: Precondition | undefined): Promise<Locked> => lockHeader(q, kind, name, false, pre);

/**
 * Writes the header of an element operation: its new count and version,
 * the operation for the change feed; a collection this write created gets
 * no expiry (an object created by add or incr has none).
 */
export async function writeHeader(q: Q, kind: CollectionKind, name: string, h: Locked, count: number, op: string, data: string): Promise<void> {
  const exp = h.exists ? '' : ', expires_at = NULL';
  await q.query(`UPDATE ${HEADERS[kind]} SET count = $2, version = ${NEXT}, op = $3, op_data = $4${exp} WHERE name = $1`, [name, count, op, data]);
}

/** A write that changed nothing: the placeholder it inserted goes (an expired header stays for the sweeper). */
export async function unlockUnchanged(q: Q, kind: CollectionKind, name: string, h: Locked): Promise<void> {
  if (h.placeholder) await q.query(`DELETE FROM ${HEADERS[kind]} WHERE name = $1`, [name]);
}

/**
 * The header of a whole-object write (PUT, and combine's `store`): `count`
 * members with a new lifetime, the old members deleted (the caller inserts
 * the new ones). Resolves true when the collection is new.
 */
export async function replaceHeader(q: Q, kind: CollectionKind, name: string, count: number, ttl: number, pre: Precondition | undefined): Promise<boolean> {
  const h = await lockHeader(q, kind, name, true, pre);
  if (h.exists) await q.query(`DELETE FROM ${MEMBERS[kind]} WHERE name = $1`, [name]);
  await q.query(
    `UPDATE ${HEADERS[kind]} SET count = $2, expires_at = ${q.expiry('$3')}, version = ${NEXT}, op = NULL, op_data = NULL
    WHERE name = $1`,
    [name, count, ttl],
  );
  return !h.exists;
}

/** PATCH ttl: a new remaining lifetime (0 = none); the members follow their header. */
export async function expireHeader(q: Q, kind: CollectionKind, name: string, ttl: number, pre: Precondition | undefined): Promise<void> {
  await lockExisting(q, kind, name, pre);
  await q.query(`UPDATE ${HEADERS[kind]} SET expires_at = ${q.expiry('$2')}, version = ${NEXT}, op = NULL, op_data = NULL WHERE name = $1`, [name, ttl]);
}

export async function dropCollection(q: Q, kind: CollectionKind, name: string, pre: Precondition | undefined): Promise<void> {
  await lockExisting(q, kind, name, pre);
  await q.query(`DELETE FROM ${MEMBERS[kind]} WHERE name = $1`, [name]);
  await q.query(`DELETE FROM ${HEADERS[kind]} WHERE name = $1`, [name]);
}

/** The live collection's count, or undefined when there is none (a transaction's check). */
export async function liveCount(q: Q, kind: CollectionKind, name: string): Promise<number | undefined> {
  const r = await q.query(`SELECT count FROM ${HEADERS[kind]} WHERE name = $1 AND ${q.live()}`, [name]);
  return r.length === 0 ? undefined : Number(r[0].count);
}

/** Locks the headers that exist of `names`, in name order (so two writers of the same collections queue, never deadlock). */
export async function lockAll(q: Q, kind: CollectionKind, names: Iterable<string>): Promise<void> {
  const sorted = [...new Set(names)].sort();
  if (sorted.length > 0) await q.query(`SELECT name FROM ${HEADERS[kind]} WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE`, [sorted]);
}
