/**
 * Record namespace on PostgreSQL: one row of pithos_records per id, the JSON
 * text as the log store keeps it, and `version`, the pithos_seq value taken
 * by the statement that last wrote it (docs/scaling.md). PUT is one
 * statement: an UPDATE of the live record, or else an INSERT … ON CONFLICT
 * that creates it (over an expired one); a concurrent create since the
 * statement's snapshot makes neither happen, and the next try the UPDATE.
 *
 * A conditional write (`pre`) that succeeds is one statement, the condition
 * in its WHERE (`version = $v`, or for `ifAbsent` a create that only takes
 * an expired row's place). When it writes nothing, the transaction below
 * decides the answer, so every 412 and its message come from one place: the
 * record's row is locked (SELECT … FOR UPDATE, expired or not), the
 * condition checked by ../versions.ts on the live version, then the write.
 * When there is no row to lock, the create is `INSERT … ON CONFLICT DO
 * NOTHING`: losing that race to a concurrent create means locking the new
 * row and checking again.
 *
 * PATCH merges in this process (key order and text as the log store keeps
 * them), so it reads, then writes only over the version it read: two
 * statements, no transaction; a write that lost a race reads again.
 */
import { StoreError } from '../errors.js';
import { missing as missingObject } from '../messages.js';
import { hasField, mergeFields } from '../json.js';
import type { Precondition, RecordStore, VersionOut } from '../store.js';
import { checkPrecondition } from '../versions.js';
import type { Row } from '../wheres.js';
import type { GroupCommit } from './group-commit.js';
import type { Db, Q } from './sql.js';

const missing = (id: string): StoreError => missingObject('record', id);
const NEXT = "nextval('pithos_seq')";

/** The live record's version, or undefined. */
export async function recordVersion(q: Q, id: string): Promise<number | undefined> {
  const r = await q.query(`SELECT version FROM pithos_records WHERE id = $1 AND ${q.live()}`, [id]);
  return r.length === 0 ? undefined : Number(r[0].version);
}

/**
 * Locks the record's row (live or expired) for the rest of the transaction.
 * Resolves to undefined when there is no row at all, otherwise to the live
 * version (undefined inside when expired).
 */
async function lockRecord(q: Q, id: string): Promise<{ version: number | undefined } | undefined> {
  const r = await q.query(`SELECT version, ${q.live()} AS live FROM pithos_records WHERE id = $1 FOR UPDATE`, [id]);
  if (r.length === 0) return undefined;
  return { version: r[0].live === true ? Number(r[0].version) : undefined };
}

/** Stores the record; returns true when it is new. With `pre`, `q` must be a transaction. */
export async function putRecord(q: Q, id: string, record: Row, ttl: number, pre?: Precondition): Promise<boolean> {
  const json = JSON.stringify(record);
  for (let i = 0; i < 8; i++) {
    if (pre !== undefined) {
      const cur = await lockRecord(q, id);
      checkPrecondition(`record '${id}'`, cur?.version, pre);
      if (cur === undefined) {
        const c = await q.query(
          `INSERT INTO pithos_records (id, body, expires_at, version) VALUES ($1, $2, ${q.expiry('$3')}, ${NEXT})
           ON CONFLICT (id) DO NOTHING RETURNING 1`,
          [id, json, ttl],
        );
        if (c.length > 0) return true;
        continue; // created meanwhile by another writer: lock it and check again
      }
      // The row is ours until COMMIT: one UPDATE, live or expired.
      await q.query(`UPDATE pithos_records SET body = $2, expires_at = ${q.expiry('$3')}, version = ${NEXT} WHERE id = $1`, [id, json, ttl]);
      return cur.version === undefined;
    }
    // One statement: replace the live record, or else create it (over an expired one).
    // Neither happens only when another writer created it since this statement's snapshot.
    const r = await q.query(
      `WITH u AS (UPDATE pithos_records SET body = $2, expires_at = ${q.expiry('$3')}, version = ${NEXT} WHERE id = $1 AND ${q.live()} RETURNING 1),
       c AS (INSERT INTO pithos_records AS x (id, body, expires_at, version) SELECT $1, $2, ${q.expiry('$3')}, ${NEXT} WHERE NOT EXISTS (SELECT 1 FROM u)
             ON CONFLICT (id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at, version = ${NEXT}
             WHERE x.expires_at IS NOT NULL AND x.expires_at <= ${q.now} RETURNING 1)
       SELECT (SELECT count(*) FROM u) AS replaced, (SELECT count(*) FROM c) AS created`,
      [id, json, ttl],
    );
    if (Number(r[0].replaced) > 0) return false;
    if (Number(r[0].created) > 0) return true;
  }
  throw new StoreError('unavailable', `record '${id}' kept changing under concurrent writes; try again`);
}

export async function deleteRecord(q: Q, id: string): Promise<void> {
  const r = await q.query(`DELETE FROM pithos_records WHERE id = $1 AND ${q.live()} RETURNING 1`, [id]);
  if (r.length === 0) throw missing(id);
}

/**
 * The live record's body, its row locked, after checking `pre` (as the log
 * store does: the condition first, then 404). Inside a transaction.
 */
async function lockExisting(q: Q, id: string, pre: Precondition | undefined): Promise<string> {
  const r = await q.query(`SELECT body, version, ${q.live()} AS live FROM pithos_records WHERE id = $1 FOR UPDATE`, [id]);
  const live = r.length > 0 && r[0].live === true;
  if (pre !== undefined) checkPrecondition(`record '${id}'`, live ? Number(r[0].version) : undefined, pre);
  if (!live) throw missing(id);
  return r[0].body as string;
}

/** How long a record whose PATCH lost a race is patched under its lock straight away. */
const CONTENDED_MS = 1000;

export class PgRecords implements RecordStore {
  /** Records this node saw written by several at once, until when (bounded: cleared when full). */
  private readonly contended = new Map<string, number>();

  /** `group`: batches the plain put, the delete and PATCH's write with other writes (group-commit.ts); absent, each goes alone. */
  constructor(
    private readonly db: Db,
    private readonly group?: GroupCommit,
  ) {}

  async put(id: string, record: Row, ttl: number, pre?: Precondition): Promise<boolean> {
    if (pre === undefined) {
      const alone = (): Promise<boolean> => putRecord(this.db.q, id, record, ttl);
      if (this.group === undefined || !Number.isFinite(ttl)) return alone();
      return this.group.submit({ k: 'r', n: id, b: JSON.stringify(record), ttl }, (r) => r === true, alone);
    }
    const q = this.db.q;
    const json = JSON.stringify(record);
    if (pre.ifAbsent === true && pre.ifVersion === undefined) {
      // Created, or over an expired record; a live one fails the condition.
      const r = await q.query(
        `INSERT INTO pithos_records AS x (id, body, expires_at, version) VALUES ($1, $2, ${q.expiry('$3')}, ${NEXT})
         ON CONFLICT (id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at, version = ${NEXT}
         WHERE NOT ${q.live('x.expires_at')} RETURNING 1`,
        [id, json, ttl],
      );
      if (r.length > 0) return true;
    } else if (pre.ifAbsent !== true && pre.ifVersion !== undefined) {
      const r = await q.query(
        `UPDATE pithos_records SET body = $2, expires_at = ${q.expiry('$3')}, version = ${NEXT} WHERE id = $1 AND ${q.live()} AND version = $4 RETURNING 1`,
        [id, json, ttl, pre.ifVersion],
      );
      if (r.length > 0) return false;
    }
    // The condition failed (or is unusual): the transaction decides, with the message.
    return this.db.run((tx) => putRecord(tx, id, record, ttl, pre));
  }

  /**
   * Merges `sets` (null deletes a field), keeping its expiry unless `ttl`:
   * reads the record, then writes the merge only over the version read
   * (one statement each, no transaction); when another write came in
   * between, it locks the row and does it again in a transaction, as it
   * does straight away for a while after (CONTENDED_MS).
   */
  async patch(id: string, sets: Row, pre?: Precondition, ttl?: number): Promise<void> {
    const q = this.db.q;
    const merge = (body: string): string => {
      const merged = mergeFields(JSON.parse(body) as Row, sets);
      for (const k of Object.keys(sets)) if (sets[k] === null) delete merged[k];
      return JSON.stringify(merged);
    };
    const expiry = ttl === undefined ? '' : `, expires_at = ${q.expiry('$3')}`;
    const params = (body: string): unknown[] => (ttl === undefined ? [id, body] : [id, body, ttl]);
    const locked = (): Promise<void> =>
      this.db.run(async (tx) => {
        const body = await lockExisting(tx, id, pre);
        await tx.query(`UPDATE pithos_records SET body = $2, version = ${NEXT}${expiry} WHERE id = $1`, params(merge(body)));
      });
    if ((this.contended.get(id) ?? 0) > Date.now()) return locked();
    const r = await q.query(`SELECT body, version, ${q.live()} AS live FROM pithos_records WHERE id = $1`, [id]);
    const live = r.length > 0 && r[0].live === true;
    // As the log store: the condition first, then 404.
    checkPrecondition(`record '${id}'`, live ? Number(r[0].version) : undefined, pre);
    if (!live) throw missing(id);
    const body = merge(r[0].body as string);
    const ver = Number(r[0].version);
    const write = async (): Promise<boolean> => {
      const p = [...params(body), ver];
      const w = await q.query(
        `UPDATE pithos_records SET body = $2, version = ${NEXT}${expiry} WHERE id = $1 AND version = $${p.length} AND ${q.live()} RETURNING 1`,
        p,
      );
      return w.length > 0;
    };
    // The write over the version read rides in a batch; one the batch could not do (the version moved on) runs alone and finds that out.
    const batched = this.group !== undefined && (ttl === undefined || Number.isFinite(ttl));
    const op = { k: 'rp' as const, n: id, b: body, ver, ...(ttl === undefined ? {} : { ttl }) };
    if (batched ? await this.group.submit(op, () => true, write) : await write()) return;
    // Written under us: a record written by several at once, whose writers then queue on its
    // lock (a while, for the next PATCHes too) rather than read again and again.
    if (this.contended.size >= 1024) this.contended.clear();
    this.contended.set(id, Date.now() + CONTENDED_MS);
    return locked();
  }

  /**
   * Sets the remaining lifetime (0 = none); the value is untouched, the
   * version is new (as on the log store). One statement without `pre`.
   */
  async expire(id: string, ttl: number, pre?: Precondition): Promise<void> {
    if (pre?.ifVersion !== undefined && pre.ifAbsent !== true) {
      // The condition holds: one statement; otherwise the transaction below gives the answer.
      const q = this.db.q;
      const r = await q.query(
        `UPDATE pithos_records SET expires_at = ${q.expiry('$2')}, version = ${NEXT} WHERE id = $1 AND ${q.live()} AND version = $3 RETURNING 1`,
        [id, ttl, pre.ifVersion],
      );
      if (r.length > 0) return;
    }
    if (pre !== undefined) {
      await this.db.run(async (q) => {
        await lockExisting(q, id, pre);
        await q.query(`UPDATE pithos_records SET expires_at = ${q.expiry('$2')}, version = ${NEXT} WHERE id = $1`, [id, ttl]);
      });
      return;
    }
    const q = this.db.q;
    const r = await q.query(`UPDATE pithos_records SET expires_at = ${q.expiry('$2')}, version = ${NEXT} WHERE id = $1 AND ${q.live()} RETURNING 1`, [id, ttl]);
    if (r.length === 0) throw missing(id);
  }

  /** The body and its version, from one row read, so they agree. */
  async get(id: string, out?: VersionOut): Promise<string> {
    const r = await this.db.q.query(`SELECT body, version FROM pithos_records WHERE id = $1 AND ${this.db.q.live()}`, [id]);
    if (r.length === 0) throw missing(id);
    if (out !== undefined) out.version = Number(r[0].version);
    return r[0].body as string;
  }

  async search(id: string, column: string): Promise<string> {
    const doc = JSON.parse(await this.get(id)) as Record<string, unknown>;
    return hasField(doc, column) ? `[${JSON.stringify(doc[column])}]` : '[]';
  }

  delete(id: string): Promise<void> {
    const alone = (): Promise<void> => deleteRecord(this.db.q, id);
    if (this.group === undefined) return alone();
    // A missing record is the batch's "run it alone": deleteRecord then answers 404.
    return this.group.submit({ k: 'd', n: id }, () => undefined, alone);
  }
}
