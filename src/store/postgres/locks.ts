/**
 * Lock namespace on PostgreSQL: one row of pithos_locks per name. Acquire is
 * one `INSERT … ON CONFLICT DO UPDATE … WHERE <expired>`: the database's row
 * lock makes exactly one of any number of acquirers, on any nodes, win. The
 * fence is `nextval('pithos_seq')` taken while that row is locked, so it is
 * above the fence of every earlier holder of the name. A released or
 * expired lock keeps its row (the sweeper removes it an hour later), so a
 * later acquire always takes that locked path.
 */
import { randomUUID } from 'node:crypto';
import { notFound, StoreError } from '../errors.js';
import type { LockStore } from '../store.js';
import type { Db } from './sql.js';

const notHeld = (name: string) => notFound(`lock '${name}' is not held`);

const grant = (token: string, fence: number): string => `{"token":"${token}","fence":${fence}}`;

export class PgLocks implements LockStore {
  constructor(private readonly db: Db) {}

  async acquire(name: string, ttl: number, holder: string | null): Promise<string> {
    const q = this.db.q;
    const token = randomUUID();
    const r = await q.query(
      `INSERT INTO pithos_locks AS l (name, token, holder, ttl, orig, acq, fence, expires_at)
       VALUES ($1, $2, $3, $4, $4, ${q.now}, nextval('pithos_seq'), ${q.now} + $4::int8 * 1000)
       ON CONFLICT (name) DO UPDATE SET token = excluded.token, holder = excluded.holder, ttl = excluded.ttl,
         orig = excluded.orig, acq = excluded.acq, fence = nextval('pithos_seq'), expires_at = excluded.expires_at
       WHERE l.expires_at <= ${q.now}
       RETURNING fence`,
      [name, token, JSON.stringify(holder), ttl],
    );
    if (r.length === 0) throw new StoreError('locked', `lock '${name}' is held`);
    return grant(token, Number(r[0].fence));
  }

  /**
   * Renew and release are one statement each: the UPDATE takes the lease only
   * when it is live and its token matches, compared as digests (md5) so the
   * comparison's time says nothing about the token itself. When it takes nothing, the same statement's read of the
   * lease (its snapshot) says which answer: 404 not held, 403 another token.
   */
  private async byToken(name: string, token: string, set: string, values: unknown[]): Promise<Record<string, unknown>> {
    const q = this.db.q;
    const r = await q.query(
      `WITH u AS (UPDATE pithos_locks SET ${set} WHERE name = $1 AND ${q.live()} AND md5(token) = md5($2) RETURNING fence)
       SELECT (SELECT fence FROM u) AS fence, (SELECT count(*) FROM u) AS done,
              (SELECT 1 FROM pithos_locks WHERE name = $1 AND ${q.live()}) AS held`,
      [name, token, ...values],
    );
    const x = r[0];
    if (Number(x.done) > 0) return x;
    if (x.held === null) throw notHeld(name);
    throw new StoreError('forbidden', `lock '${name}' is held under another token`);
  }

  async renew(name: string, token: string, ttl: number): Promise<string> {
    const next = randomUUID();
    // ttl 0: the length given at acquire (orig).
    const x = await this.byToken(
      name,
      token,
      `token = $3, ttl = CASE WHEN $4::int8 = 0 THEN orig ELSE $4::int8 END, expires_at = ${this.db.q.now} + (CASE WHEN $4::int8 = 0 THEN orig ELSE $4::int8 END) * 1000`,
      [next, ttl],
    );
    return grant(next, Number(x.fence));
  }

  async release(name: string, token: string): Promise<void> {
    // Expired now; the row stays so the next acquire takes a fence under its lock.
    await this.byToken(name, token, `token = '', expires_at = ${this.db.q.now}`, []);
  }

  async query(name: string): Promise<string> {
    const q = this.db.q;
    const r = await q.query(`SELECT holder, ttl, acq, fence, expires_at, ${q.now} AS now FROM pithos_locks WHERE name = $1 AND ${q.live()}`, [name]);
    if (r.length === 0) throw notHeld(name);
    const l = r[0];
    return JSON.stringify({
      held: true,
      holder: JSON.parse(l.holder as string) as string | null,
      ttl: Number(l.ttl),
      expires_in_ms: Math.max(0, Number(l.expires_at) - Number(l.now)),
      acquired_at: new Date(Number(l.acq)).toISOString(),
      fence: Number(l.fence),
    });
  }
}
