/**
 * Variant namespace on PostgreSQL: one row of pithos_variants per name, its
 * type letter and its value as JSON text. Typing and arithmetic are
 * ../variant.ts, the same code as the log store's. An increment of an
 * integer by a safe integer is one `UPDATE … SET v = v + delta` with the
 * range check in its WHERE; anything else (doubles, huge deltas, every
 * error) reads the row FOR UPDATE and decides in addDelta, in one
 * transaction. Either way N concurrent +1s add exactly N.
 *
 * Every write sets `version` to a fresh pithos_seq value in its statement.
 * A conditional PUT (`pre`) whose condition holds is one statement; when it
 * writes nothing, a transaction locks the variant's row and checks with
 * ../versions.ts, as records.ts does.
 */
import { StoreError } from '../errors.js';
import { missing as missingObject } from '../messages.js';
import type { VariantStore, Precondition, VersionOut } from '../store.js';
import { checkPrecondition } from '../versions.js';
import {
  addDelta,
  appendText,
  checkAppend,
  checkDelta,
  checkSameType,
  checkType,
  isIntegerLiteral,
  makeVariant,
  parseStored,
  type ScalarInput,
  storedJson,
  type Variant,
  type VType,
  variantOf,
} from '../variant.js';
import type { GroupCommit } from './group-commit.js';
import type { Db, Named, Q } from './sql.js';

const missing = (name: string): StoreError => missingObject('variant', name);
const NEXT = "nextval('pithos_seq')";
const decode = (r: Record<string, unknown>): Variant => makeVariant(r.t as VType, parseStored(r.t as VType, r.v as string));

/**
 * The integer increment, prepared once per connection (sql.ts, Named): the
 * database then only binds and executes it, instead of parsing and planning
 * it on every request. `$3` is the test clock's offset (ms), a parameter so
 * that the text never changes (Q.live's test, with it).
 */
const INCREMENT: Named = {
  name: 'pithos_increment',
  text: `UPDATE pithos_variants SET v = (v::int8 + $2::int8)::text, version = ${NEXT}
  WHERE name = $1 AND t = 'i' AND (expires_at IS NULL OR expires_at > floor(extract(epoch from now()) * 1000)::int8 + $3::int8)
    AND v::numeric + $2::numeric BETWEEN -9223372036854775808 AND 9223372036854775807 RETURNING v`,
};

export async function currentVariant(q: Q, name: string, lock = false): Promise<Variant | undefined> {
  const r = await q.query(`SELECT t, v FROM pithos_variants WHERE name = $1 AND ${q.live()}${lock ? ' FOR UPDATE' : ''}`, [name]);
  return r.length === 0 ? undefined : decode(r[0]);
}

/**
 * Creates or replaces; returns [created, the new variant]. With `pre`, `q`
 * must be a transaction: the row (live or expired) is locked, the condition
 * checked, then written; with no row to lock, the create is
 * `ON CONFLICT DO NOTHING`, and losing that race means checking again.
 */
export async function setVariant(q: Q, name: string, value: ScalarInput, ttl: number, pre?: Precondition, retype = false): Promise<[boolean, Variant]> {
  const x = variantOf(value);
  const v = storedJson(x);
  for (let i = 0; i < 8; i++) {
    if (pre !== undefined) {
      const r = await q.query(`SELECT t, v, version, ${q.live()} AS live FROM pithos_variants WHERE name = $1 FOR UPDATE`, [name]);
      const live = r.length > 0 && r[0].live === true;
      checkPrecondition(`variant '${name}'`, live ? Number(r[0].version) : undefined, pre);
      if (r.length === 0) {
        const c = await q.query(
          `INSERT INTO pithos_variants (name, t, v, expires_at, version) VALUES ($1, $2, $3, ${q.expiry('$4')}, ${NEXT})
           ON CONFLICT (name) DO NOTHING RETURNING 1`,
          [name, x.t, v, ttl],
        );
        if (c.length > 0) return [true, x];
        continue; // created meanwhile by another writer: lock it and check again
      }
      if (!retype) checkSameType(name, live ? decode(r[0]) : undefined, x);
      // The row is ours until COMMIT: one UPDATE, live or expired.
      await q.query(`UPDATE pithos_variants SET t = $2, v = $3, expires_at = ${q.expiry('$4')}, version = ${NEXT} WHERE name = $1`, [name, x.t, v, ttl]);
      return [!live, x];
    }
    // One statement: replace the live variant of the same type, or else create it (over an expired one).
    const r = await q.query(
      `WITH u AS (UPDATE pithos_variants SET v = $3, expires_at = ${q.expiry('$4')}, version = ${NEXT} WHERE name = $1 AND t = $2 AND ${q.live()} RETURNING 1),
       c AS (INSERT INTO pithos_variants AS x (name, t, v, expires_at, version) SELECT $1, $2, $3, ${q.expiry('$4')}, ${NEXT} WHERE NOT EXISTS (SELECT 1 FROM u)
             ON CONFLICT (name) DO UPDATE SET t = excluded.t, v = excluded.v, expires_at = excluded.expires_at, version = ${NEXT}
             WHERE x.expires_at IS NOT NULL AND x.expires_at <= ${q.now} RETURNING 1)
       SELECT (SELECT count(*) FROM u) AS replaced, (SELECT count(*) FROM c) AS created`,
      [name, x.t, v, ttl],
    );
    if (Number(r[0].replaced) > 0) return [false, x];
    if (Number(r[0].created) > 0) return [true, x];
    // A live variant exists and the UPDATE did not take it: another type (or created just now).
    checkSameType(name, await currentVariant(q, name), x);
  }
  throw new StoreError('unavailable', `variant '${name}' kept changing under concurrent writes; try again`);
}

/** Adds `delta` keeping the variant's expiry; returns the new variant. Inside a transaction. */
export async function addVariant(q: Q, name: string, delta: ScalarInput, type?: VType): Promise<Variant> {
  checkDelta(delta.value);
  const cur = await currentVariant(q, name, true);
  if (cur === undefined) throw missing(name);
  checkType(name, cur, type);
  const x = addDelta(name, cur, delta.value, delta.text);
  await q.query(`UPDATE pithos_variants SET v = $2, version = ${NEXT} WHERE name = $1`, [name, storedJson(x)]);
  return x;
}

/**
 * Appends to a string variant keeping its expiry; returns the new variant.
 * Inside a transaction: the row is locked, so concurrent appends queue and
 * none is lost.
 */
export async function appendVariant(q: Q, name: string, text: string, pre?: Precondition): Promise<Variant> {
  checkAppend(text);
  const r = await q.query(`SELECT t, v, version FROM pithos_variants WHERE name = $1 AND ${q.live()} FOR UPDATE`, [name]);
  if (r.length === 0) throw missing(name);
  checkPrecondition(`variant '${name}'`, Number(r[0].version), pre);
  const x = appendText(name, decode(r[0]), text);
  await q.query(`UPDATE pithos_variants SET v = $2, version = ${NEXT} WHERE name = $1`, [name, storedJson(x)]);
  return x;
}

export class PgVariants implements VariantStore {
  /** `group`: batches the plain put and the integer increment with other writes (group-commit.ts); absent, each goes alone. */
  constructor(
    private readonly db: Db,
    private readonly group?: GroupCommit,
  ) {}

  async put(name: string, value: ScalarInput, ttl: number, pre?: Precondition, retype = false): Promise<[boolean, string]> {
    if (retype) {
      // Whatever the type: the locking path, which reads the row before it writes.
      const [created, y] = await this.db.run((tx) => setVariant(tx, name, value, ttl, pre ?? {}, true));
      return [created, y.data];
    }
    if (pre === undefined) {
      const alone = (): Promise<[boolean, string]> => setVariant(this.db.q, name, value, ttl).then(([created, x]) => [created, x.data]);
      if (this.group === undefined || !Number.isFinite(ttl)) return alone();
      const x = variantOf(value);
      return this.group.submit({ k: 'v', n: name, t: x.t, v: storedJson(x), ttl }, (r) => [r === true, x.data], alone);
    }
    // A condition that holds is one statement; otherwise the transaction decides, with the message.
    const x = variantOf(value);
    const q = this.db.q;
    const params = [name, x.t, storedJson(x), ttl];
    if (pre.ifAbsent === true && pre.ifVersion === undefined) {
      const r = await q.query(
        `INSERT INTO pithos_variants AS x (name, t, v, expires_at, version) VALUES ($1, $2, $3, ${q.expiry('$4')}, ${NEXT})
         ON CONFLICT (name) DO UPDATE SET t = excluded.t, v = excluded.v, expires_at = excluded.expires_at, version = ${NEXT}
         WHERE NOT ${q.live('x.expires_at')} RETURNING 1`,
        params,
      );
      if (r.length > 0) return [true, x.data];
    } else if (pre.ifAbsent !== true && pre.ifVersion !== undefined) {
      // Same type only: another type is the transaction's 409.
      const r = await q.query(
        `UPDATE pithos_variants SET v = $3, expires_at = ${q.expiry('$4')}, version = ${NEXT} WHERE name = $1 AND t = $2 AND ${q.live()} AND version = $5 RETURNING 1`,
        [...params, pre.ifVersion],
      );
      if (r.length > 0) return [false, x.data];
    }
    const [created, y] = await this.db.run((tx) => setVariant(tx, name, value, ttl, pre));
    return [created, y.data];
  }

  async increment(name: string, delta: ScalarInput, type?: VType): Promise<string> {
    checkDelta(delta.value);
    const d = delta.value;
    const general = (): Promise<string> => this.db.run(async (q) => (await addVariant(q, name, delta, type)).data);
    if (Number.isSafeInteger(d) && isIntegerLiteral(d, delta.text)) {
      const alone = async (): Promise<string> => {
        const r = await this.db.q.query(INCREMENT, [name, d, Math.trunc(this.db.opts.offsetMs())]);
        if (r.length > 0) return makeVariant('i', parseStored('i', r[0].v as string)).data;
        // Missing, another type, or overflow: the general path finds out which.
        return general();
      };
      if (this.group === undefined) return alone();
      // The batch's increment is INCREMENT's statement (its sum as text); what it cannot apply runs alone.
      return this.group.submit({ k: 'i', n: name, d }, (r) => makeVariant('i', parseStored('i', r as string)).data, alone);
    }
    return general();
  }

  async append(name: string, text: string, pre?: Precondition): Promise<number> {
    checkAppend(text);
    const x = await this.db.run((q) => appendVariant(q, name, text, pre));
    return Buffer.byteLength(x.v as string);
  }

  /** The data and its version, from one row read, so they agree. */
  async get(name: string, out?: VersionOut): Promise<string> {
    const r = await this.db.q.query(`SELECT t, v, version FROM pithos_variants WHERE name = $1 AND ${this.db.q.live()}`, [name]);
    if (r.length === 0) throw missing(name);
    if (out !== undefined) out.version = Number(r[0].version);
    return decode(r[0]).data;
  }

  /** Sets the remaining lifetime (0 = none) in one statement; the value is untouched, the version new (as on the log). */
  async expire(name: string, ttl: number): Promise<void> {
    const q = this.db.q;
    const r = await q.query(`UPDATE pithos_variants SET expires_at = ${q.expiry('$2')}, version = ${NEXT} WHERE name = $1 AND ${q.live()} RETURNING 1`, [
      name,
      ttl,
    ]);
    if (r.length === 0) throw missing(name);
  }

  async delete(name: string, type?: VType, pre?: Precondition): Promise<void> {
    if (pre !== undefined) {
      // The row locked, the condition checked, then the delete: one transaction.
      return this.db.run(async (tx) => {
        const r = await tx.query(`SELECT t, version FROM pithos_variants WHERE name = $1 AND ${tx.live()} FOR UPDATE`, [name]);
        checkPrecondition(`variant '${name}'`, r.length === 0 ? undefined : Number(r[0].version), pre);
        if (r.length === 0) throw missing(name);
        if (type !== undefined && r[0].t !== type) checkType(name, makeVariant(r[0].t as VType, ''), type);
        await tx.query('DELETE FROM pithos_variants WHERE name = $1', [name]);
      });
    }
    const q = this.db.q;
    if (type === undefined) {
      const r = await q.query(`DELETE FROM pithos_variants WHERE name = $1 AND ${q.live()} RETURNING 1`, [name]);
      if (r.length === 0) throw missing(name);
      return;
    }
    const r = await q.query(`DELETE FROM pithos_variants WHERE name = $1 AND t = $2 AND ${q.live()} RETURNING 1`, [name, type]);
    if (r.length > 0) return;
    // Nothing of that type: another type (409) or none (404).
    const cur = await currentVariant(q, name);
    if (cur === undefined) throw missing(name);
    checkType(name, cur, type);
    throw missing(name);
  }
}
