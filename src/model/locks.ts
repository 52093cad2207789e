/**
 * Lock namespace: lease locks with fencing. A held lock is one engine entry
 * that expires with its lease, so an expired lease frees the lock with no
 * write. The fence is the sequence number of the acquiring batch: the log's
 * sequence numbers increase forever and survive restarts, so fences do too,
 * with no per-lock counter to keep (etcd uses its revision the same way).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { type Decoder, type Engine, MISS, Op } from '../engine/index.js';
import { invalid, notFound, PithosError } from './errors.js';
import { lockKey } from './keys.js';

export const MAX_HOLDER_BYTES = 255;

interface Lease {
  token: string;
  holder: string | null;
  /** Length of the current lease, seconds. */
  ttl: number;
  /**
   * Length given at acquire: a renewal without its own ttl lasts this long
   * (API.md section 9, "the original lease length"). Absent in leases written
   * before it was kept; `ttl` stands in for it then.
   */
  orig?: number;
  /** ms since the epoch of the acquire */
  acq: number;
  fence: number;
}

const leaseDecoder: Decoder<Lease> = (buf) => JSON.parse(buf.toString('utf8')) as Lease;
const encode = (l: Lease): Buffer => Buffer.from(JSON.stringify(l), 'utf8');

const notHeld = (name: string) => notFound(`lock '${name}' is not held`);

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class Locks {
  constructor(private readonly engine: Engine, private readonly now: () => number) {}

  private lease(name: string): Lease | undefined | Promise<unknown> {
    const l = this.engine.peek(lockKey(name), leaseDecoder);
    return l === MISS ? this.engine.read(lockKey(name), leaseDecoder) : l;
  }

  /** Acquires without waiting; resolves to the answer's data JSON. */
  async acquire(name: string, ttl: number, holder: unknown): Promise<string> {
    if (holder !== undefined && holder !== null) {
      if (typeof holder !== 'string') throw invalid(`field 'holder' must be a string`);
      if (Buffer.byteLength(holder, 'utf8') > MAX_HOLDER_BYTES) throw invalid(`field 'holder' must be at most ${MAX_HOLDER_BYTES} bytes`);
    }
    const key = lockKey(name);
    // has() and write() run in one turn of the event loop: one winner.
    if (this.engine.has(key)) throw new PithosError('locked', `lock '${name}' is held`);
    const now = this.now();
    const lease: Lease = {
      token: randomUUID(), holder: typeof holder === 'string' ? holder : null, ttl, orig: ttl, acq: now, fence: this.engine.upcomingSeq,
    };
    await this.engine.write([{ op: Op.Put, key, value: encode(lease), expiresAt: now + ttl * 1000, memo: lease, decoder: leaseDecoder }]);
    return `{"token":"${lease.token}","fence":${lease.fence}}`;
  }

  /** Checks the caller's token against the lease; throws 404 / 403 / 400. */
  private verify(name: string, l: Lease | undefined, token: unknown): Lease {
    if (typeof token !== 'string') throw invalid(token === undefined ? `field 'token' is required (a string)` : `field 'token' must be a string`);
    if (l === undefined) throw notHeld(name);
    if (!sameToken(l.token, token)) throw new PithosError('forbidden', `lock '${name}' is held under another token`);
    return l;
  }

  /** Renews the lease for `ttl` seconds from now (the length given at acquire when 0). */
  async renew(name: string, token: unknown, ttl: number): Promise<string> {
    let cur = this.lease(name);
    while (cur instanceof Promise) cur = (await cur, this.lease(name));
    // verify() and write() run in one turn: a token renews at most once.
    const l = this.verify(name, cur, token);
    const now = this.now();
    const orig = l.orig ?? l.ttl;
    const len = ttl === 0 ? orig : ttl;
    const next: Lease = { token: randomUUID(), holder: l.holder, ttl: len, orig, acq: l.acq, fence: l.fence };
    await this.engine.write([{
      op: Op.Put, key: lockKey(name), value: encode(next), expiresAt: now + len * 1000, memo: next, decoder: leaseDecoder,
    }]);
    return `{"token":"${next.token}","fence":${next.fence}}`;
  }

  async release(name: string, token: unknown): Promise<void> {
    let cur = this.lease(name);
    while (cur instanceof Promise) cur = (await cur, this.lease(name));
    this.verify(name, cur, token);
    await this.engine.write([{ op: Op.Del, key: lockKey(name), value: undefined, expiresAt: 0 }]);
  }

  async query(name: string): Promise<string> {
    let l = this.lease(name);
    while (l instanceof Promise) l = (await l, this.lease(name));
    if (l === undefined) throw notHeld(name);
    const exp = this.engine.expiresAt(lockKey(name)) ?? 0;
    return JSON.stringify({
      held: true,
      holder: l.holder,
      ttl: l.ttl,
      expires_in_ms: Math.max(0, exp - this.now()),
      acquired_at: new Date(l.acq).toISOString(),
      fence: l.fence,
    });
  }
}
