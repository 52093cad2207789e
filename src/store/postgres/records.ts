/**
 * Record namespace on PostgreSQL: one row of pithos_records per id, the JSON
 * text as the log store keeps it. PUT replaces a live record in one UPDATE,
 * or creates one (over an expired one) in one INSERT … ON CONFLICT; a
 * concurrent create between the two makes the UPDATE the answer next time.
 */
import { notFound, StoreError } from '../errors.js';
import { hasField, mergeFields } from '../json.js';
import type { Precondition, RecordStore } from '../store.js';
import type { Row } from '../wheres.js';
import type { Db, Q } from './sql.js';

const missing = (id: string) => notFound(`record '${id}' does not exist`);

export async function recordExists(q: Q, id: string): Promise<boolean> {
  return (await q.query(`SELECT 1 FROM pithos_records WHERE id = $1 AND ${q.live()}`, [id])).length > 0;
}

/** Stores the record; returns true when it is new. */
export async function putRecord(q: Q, id: string, record: Row, ttl: number): Promise<boolean> {
  const json = JSON.stringify(record);
  for (let i = 0; i < 8; i++) {
    const u = await q.query(`UPDATE pithos_records SET body = $2, expires_at = ${q.expiry('$3')} WHERE id = $1 AND ${q.live()} RETURNING 1`, [id, json, ttl]);
    if (u.length > 0) return false;
    const c = await q.query(
      `INSERT INTO pithos_records AS x (id, body, expires_at) VALUES ($1, $2, ${q.expiry('$3')})
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at
       WHERE x.expires_at IS NOT NULL AND x.expires_at <= ${q.now} RETURNING 1`, [id, json, ttl]);
    if (c.length > 0) return true;
  }
  throw new StoreError('unavailable', `record '${id}' kept changing under concurrent writes; try again`);
}

export async function deleteRecord(q: Q, id: string): Promise<void> {
  const r = await q.query(`DELETE FROM pithos_records WHERE id = $1 AND ${q.live()} RETURNING 1`, [id]);
  if (r.length === 0) throw missing(id);
}

/**
 * Conditional writes need versions, which this store does not keep yet
 * (docs/scaling.md): refuse them rather than write unconditionally.
 */
export function refuseConditions(pre: Precondition | undefined): void {
  if (pre !== undefined) {
    throw new StoreError('invalid', 'conditional writes (if_version, if_absent, If-Match, If-None-Match) are not supported by the postgres store yet');
  }
}

export class PgRecords implements RecordStore {
  constructor(private readonly db: Db) {}

  put(id: string, record: Row, ttl: number, pre?: Precondition): Promise<boolean> {
    refuseConditions(pre);
    return putRecord(this.db.q, id, record, ttl);
  }

  /** Merges `sets` (null deletes a field) under the row's lock, keeping its expiry. */
  async patch(id: string, sets: Row, pre?: Precondition): Promise<void> {
    refuseConditions(pre);
    await this.db.run(async (q) => {
      const r = await q.query(`SELECT body FROM pithos_records WHERE id = $1 AND ${q.live()} FOR UPDATE`, [id]);
      if (r.length === 0) throw missing(id);
      const merged = mergeFields(JSON.parse(r[0].body as string) as Row, sets);
      for (const k of Object.keys(sets)) if (sets[k] === null) delete merged[k];
      await q.query('UPDATE pithos_records SET body = $2 WHERE id = $1', [id, JSON.stringify(merged)]);
    });
  }

  /** Sets the remaining lifetime (0 = none) in one statement; the value is untouched. */
  async expire(id: string, ttl: number, pre?: Precondition): Promise<void> {
    refuseConditions(pre);
    const r = await this.db.q.query(
      `UPDATE pithos_records SET expires_at = ${this.db.q.expiry('$2')} WHERE id = $1 AND ${this.db.q.live()} RETURNING 1`, [id, ttl]);
    if (r.length === 0) throw missing(id);
  }

  async get(id: string): Promise<string> {
    // No versions on this store yet: `out` is left alone, so no ETag is sent.
    const r = await this.db.q.query(`SELECT body FROM pithos_records WHERE id = $1 AND ${this.db.q.live()}`, [id]);
    if (r.length === 0) throw missing(id);
    return r[0].body as string;
  }

  async search(id: string, column: string): Promise<string> {
    const doc = JSON.parse(await this.get(id)) as Record<string, unknown>;
    return hasField(doc, column) ? `[${JSON.stringify(doc[column])}]` : '[]';
  }

  delete(id: string): Promise<void> {
    return deleteRecord(this.db.q, id);
  }
}
