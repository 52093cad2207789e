/**
 * Lock namespace on PostgreSQL: one row of pithos_locks per name. Acquire is
 * one `INSERT … ON CONFLICT DO UPDATE … WHERE <expired>`: the database's row
 * lock makes exactly one of any number of acquirers, on any nodes, win. The
 * fence is `nextval('pithos_seq')` taken while that row is locked, so it is
 * above the fence of every earlier holder of the name. A released or
 * expired lock keeps its row (the sweeper removes it an hour later), so a
 * later acquire always takes that locked path.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { notFound, StoreError } from '../errors.js';
import type { LockStore } from '../store.js';
import type { Db, Q } from './sql.js';

const notHeld = (name: string) => notFound(`lock '${name}' is not held`);

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface Lease {
  orig: number;
  fence: number;
}

/** The caller's lease, locked and checked against its token: 404 when not held, 403 for another token. */
async function verify(q: Q, name: string, token: string): Promise<Lease> {
  const r = await q.query(`SELECT token, orig, fence FROM pithos_locks WHERE name = $1 AND ${q.live()} FOR UPDATE`, [name]);
  if (r.length === 0) throw notHeld(name);
  if (!sameToken(r[0].token as string, token)) throw new StoreError('forbidden', `lock '${name}' is held under another token`);
  return { orig: Number(r[0].orig), fence: Number(r[0].fence) };
}

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
       RETURNING fence`, [name, token, JSON.stringify(holder), ttl]);
    if (r.length === 0) throw new StoreError('locked', `lock '${name}' is held`);
    return grant(token, Number(r[0].fence));
  }

  renew(name: string, token: string, ttl: number): Promise<string> {
    return this.db.run(async (q) => {
      const l = await verify(q, name, token);
      const len = ttl === 0 ? l.orig : ttl;
      const next = randomUUID();
      await q.query(`UPDATE pithos_locks SET token = $2, ttl = $3, expires_at = ${q.now} + $3::int8 * 1000 WHERE name = $1`, [name, next, len]);
      return grant(next, l.fence);
    });
  }

  release(name: string, token: string): Promise<void> {
    return this.db.run(async (q) => {
      await verify(q, name, token);
      // Expired now; the row stays so the next acquire takes a fence under its lock.
      await q.query(`UPDATE pithos_locks SET token = '', expires_at = ${q.now} WHERE name = $1`, [name]);
    });
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
