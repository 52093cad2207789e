/**
 * Lock namespace on the log: lease locks with fencing. A held lock is one
 * engine entry that expires with its lease, so an expired lease frees the
 * lock with no write. The fence is the sequence number of the acquiring
 * batch: the log's sequence numbers increase forever and survive restarts, so
 * fences do too, with no per-lock counter to keep (etcd uses its revision the
 * same way).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Decoder } from '../../engine/index.js';
import { notFound, StoreError } from '../errors.js';
import type { LockStore } from '../store.js';
import type { Atomic, Tx } from './atomic.js';
import { lockKey } from './keys.js';

export interface Lease {
  token: string;
  holder: string | null;
  /** Length of the current lease, seconds. */
  ttl: number;
  /**
   * Length given at acquire: a renewal without its own ttl lasts this long
   * (docs/api.md, "Locks"). Absent in leases written before it was kept;
   * `ttl` stands in for it then.
   */
  orig?: number;
  /** ms since the epoch of the acquire */
  acq: number;
  fence: number;
}

export const leaseDecoder: Decoder<Lease> = (buf) => JSON.parse(buf.toString('utf8')) as Lease;
const encode = (l: Lease): Buffer => Buffer.from(JSON.stringify(l), 'utf8');

const notHeld = (name: string) => notFound(`lock '${name}' is not held`);

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The caller's lease, checked against its token: 404 when not held, 403 for another token. */
function verify(tx: Tx, name: string, token: string): Lease {
  const l = tx.get(lockKey(name), leaseDecoder);
  if (l === undefined) throw notHeld(name);
  if (!sameToken(l.token, token)) throw new StoreError('forbidden', `lock '${name}' is held under another token`);
  return l;
}

const grant = (l: Lease): string => `{"token":"${l.token}","fence":${l.fence}}`;

export class LogLocks implements LockStore {
  constructor(private readonly atomic: Atomic) {}

  acquire(name: string, ttl: number, holder: string | null): Promise<string> {
    return this.atomic.atomically(undefined, (tx) => {
      const key = lockKey(name);
      if (tx.has(key)) throw new StoreError('locked', `lock '${name}' is held`);
      const lease: Lease = { token: randomUUID(), holder, ttl, orig: ttl, acq: tx.now, fence: tx.seq };
      tx.put(key, encode(lease), lease, leaseDecoder, tx.now + ttl * 1000);
      return grant(lease);
    });
  }

  renew(name: string, token: string, ttl: number): Promise<string> {
    return this.atomic.atomically(undefined, (tx) => {
      // One decision: a token renews at most once.
      const l = verify(tx, name, token);
      const orig = l.orig ?? l.ttl;
      const len = ttl === 0 ? orig : ttl;
      const next: Lease = { token: randomUUID(), holder: l.holder, ttl: len, orig, acq: l.acq, fence: l.fence };
      tx.put(lockKey(name), encode(next), next, leaseDecoder, tx.now + len * 1000);
      return grant(next);
    });
  }

  release(name: string, token: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      verify(tx, name, token);
      tx.del(lockKey(name));
    });
  }

  query(name: string): Promise<string> {
    return this.atomic.read((tx) => {
      const l = tx.get(lockKey(name), leaseDecoder);
      if (l === undefined) throw notHeld(name);
      return JSON.stringify({
        held: true,
        holder: l.holder,
        ttl: l.ttl,
        expires_in_ms: Math.max(0, tx.expiry(lockKey(name)) - tx.now),
        acquired_at: new Date(l.acq).toISOString(),
        fence: l.fence,
      });
    });
  }
}
