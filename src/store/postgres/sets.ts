/**
 * Sets on PostgreSQL (docs/scaling.md, "Sets and sorted sets"): a header
 * row in pithos_sets and one row per member in pithos_set_members
 * (collections.ts). Writes lock the header; reads are one statement each,
 * so a page, its count and its version come from one snapshot. Pages walk
 * the primary key (name, member) in byte order.
 *
 * The functions taking a Q are the decisions; transactions (txns.ts) reuse them.
 */
import { collectionMissing, combineLimit, type SetOp } from '../collection.js';
import { ELEMENT_BATCH } from '../elements.js';
import type { Batches, Elements, Precondition, SetStore, VersionOut } from '../store.js';
import { results } from '../txn.js';
import {
  dropCollection,
  expireHeader,
  INSERT_STEP,
  liveCount,
  lockAll,
  lockExisting,
  lockHeader,
  memberBytes,
  memberOf,
  replaceHeader,
  writeHeader,
} from './collections.js';
import { cursorRest, declare, fetchRows, MEMBER_FETCH, withReader } from './pages.js';
import { GROUP_MEMBERS, type GroupCommit } from './group-commit.js';
import type { Db, Q, Reader } from './sql.js';

const LIVE_HEADER = (q: Q): string => `pithos_sets h WHERE h.name = $1 AND ${q.live('h.expires_at')}`;

/** Inserts the members not there yet; returns how many. In slices, all within the operation's one deadline (deadline.ts). */
async function insertMembers(q: Q, name: string, members: readonly string[]): Promise<number> {
  let added = 0;
  for (let from = 0; from < members.length; from += INSERT_STEP) {
    const r = await q.query(
      `INSERT INTO pithos_set_members (name, member) SELECT $1, m FROM unnest($2::bytea[]) AS t(m)
      ON CONFLICT (name, member) DO NOTHING RETURNING 1`,
      [name, members.slice(from, from + INSERT_STEP).map(memberBytes)],
    );
    added += r.length;
  }
  return added;
}

/** Creates or replaces the set with exactly `members` (distinct); true when it is new. */
export async function setPut(q: Q, name: string, members: readonly string[], ttl: number, pre?: Precondition): Promise<boolean> {
  const created = await replaceHeader(q, 'set', name, members.length, ttl, pre);
  await insertMembers(q, name, members);
  return created;
}

/** Adds members; returns [added, count]. */
export async function setAdd(q: Q, name: string, members: readonly string[], create: boolean, pre?: Precondition): Promise<[number, number]> {
  const h = await lockHeader(q, 'set', name, create, pre);
  const added = await insertMembers(q, name, members);
  const count = h.count + added;
  // Every member was there already (a new set gains at least one): a write that changes nothing writes nothing.
  if (added === 0) return [0, count];
  await writeHeader(q, 'set', name, h, count, 'add', `{"members":${JSON.stringify(members)},"added":${added},"count":${count}}`);
  return [added, count];
}

/** Removes members; returns [removed, count]. The set stays, possibly empty. */
export async function setRemove(q: Q, name: string, members: readonly string[], pre?: Precondition): Promise<[number, number]> {
  const h = await lockExisting(q, 'set', name, pre);
  const r = await q.query('DELETE FROM pithos_set_members WHERE name = $1 AND member = ANY($2::bytea[]) RETURNING 1', [name, members.map(memberBytes)]);
  const count = h.count - r.length;
  if (r.length === 0) return [0, count];
  await writeHeader(q, 'set', name, h, count, 'remove', `{"members":${JSON.stringify(members)},"removed":${r.length},"count":${count}}`);
  return [r.length, count];
}

/** Whether `member` is in the live set; 404 when the set does not exist (a transaction's check). */
export async function setHas(q: Q, name: string, member: string): Promise<boolean> {
  const r = await q.query(`SELECT EXISTS (SELECT 1 FROM pithos_set_members m WHERE m.name = h.name AND m.member = $2) AS has FROM ${LIVE_HEADER(q)}`, [
    name,
    memberBytes(member),
  ]);
  if (r.length === 0) throw collectionMissing('set', name);
  return r[0].has === true;
}

export const setCount = (q: Q, name: string): Promise<number | undefined> => liveCount(q, 'set', name);

/**
 * union / inter / diff of `name` with `others` in byte order, in one
 * statement; a missing (or expired) set counts as empty.
 */
function combineSql(q: Q, name: string, op: SetOp, others: readonly string[]): [string, unknown[]] {
  const live = q.live('h.expires_at');
  const from = `pithos_set_members m JOIN pithos_sets h ON h.name = m.name AND ${live}`;
  if (op === 'union') return [`SELECT DISTINCT m.member FROM ${from} WHERE m.name = ANY($1::text[]) ORDER BY m.member`, [[name, ...others]]];
  if (op === 'inter') {
    // Each (set, member) is one row: a member is in every set when it is in as many rows as there are sets.
    const names = [...new Set([name, ...others])];
    return [`SELECT m.member FROM ${from} WHERE m.name = ANY($1::text[]) GROUP BY m.member HAVING count(*) = $2 ORDER BY m.member`, [names, names.length]];
  }
  const sql = `SELECT m.member FROM ${from} WHERE m.name = $1 AND NOT EXISTS (
        SELECT 1 FROM pithos_set_members o JOIN pithos_sets oh ON oh.name = o.name AND ${q.live('oh.expires_at')}
        WHERE o.name = ANY($2::text[]) AND o.member = m.member)
      ORDER BY m.member`;
  return [sql, [name, others]];
}

export async function setCombine(q: Q, name: string, op: SetOp, others: readonly string[]): Promise<string[]> {
  const [sql, params] = combineSql(q, name, op, others);
  const r = await q.query(sql, params);
  return r.map((x) => memberOf(x.member));
}

const membersOf = (rows: Record<string, unknown>[]): string[] => rows.map((x) => memberOf(x.member));

/** The first FETCH of a members cursor declared in `r`, and the rest when it came back full. */
async function memberBatches(r: Reader): Promise<Batches<string[]>> {
  const rows = await fetchRows(r.q);
  if (rows.length < MEMBER_FETCH) {
    r.close();
    return { first: membersOf(rows), rest: undefined };
  }
  return { first: membersOf(rows), rest: cursorRest(r, membersOf) };
}

export class PgSets implements SetStore {
  /** `group`: batches the unconditional add and remove of a few members with other writes (group-commit.ts); absent, each goes alone. */
  constructor(
    private readonly db: Db,
    private readonly group?: GroupCommit,
  ) {}

  put(name: string, members: readonly string[], ttl: number, pre?: Precondition): Promise<boolean> {
    return this.db.run((q) => setPut(q, name, members, ttl, pre));
  }

  /** One statement: the live header and the page of members after `after`. */
  async get(name: string, limit: number | undefined, after: string | undefined, out?: VersionOut): Promise<string> {
    const q = this.db.q;
    const params: unknown[] = [name];
    let cond = '';
    if (after !== undefined) {
      params.push(memberBytes(after));
      cond = ` AND m.member > $${params.length}`;
    }
    let lim = '';
    if (limit !== undefined) {
      params.push(limit + 1);
      lim = ` LIMIT $${params.length}`;
    }
    const r = await q.query(
      `SELECT h.count, h.version, p.member FROM pithos_sets h
      LEFT JOIN LATERAL (SELECT m.member FROM pithos_set_members m WHERE m.name = h.name${cond} ORDER BY m.member${lim}) p ON true
      WHERE h.name = $1 AND ${q.live('h.expires_at')} ORDER BY p.member`,
      params,
    );
    if (r.length === 0) throw collectionMissing('set', name);
    if (out !== undefined) out.version = Number(r[0].version);
    const rows = r[0].member === null ? [] : r;
    const more = limit !== undefined && rows.length > limit;
    const n = more ? limit : rows.length;
    let text = '{"members":[';
    for (let i = 0; i < n; i++) text += (i === 0 ? '' : ',') + JSON.stringify(memberOf(rows[i].member));
    const next = more ? JSON.stringify(memberOf(rows[n - 1].member)) : 'null';
    return `${text}],"count":${Number(r[0].count)},"next":${next}}`;
  }

  /**
   * A set of at most ELEMENT_BATCH members in one statement, as `get`; a
   * larger one through a cursor in a read-only REPEATABLE READ transaction
   * (pages.ts), its header read in the same transaction: one instant.
   */
  async members(name: string): Promise<Elements<string[]>> {
    const q = this.db.q;
    const r = await q.query(
      `SELECT h.count, h.version, p.member FROM pithos_sets h
      LEFT JOIN LATERAL (SELECT m.member FROM pithos_set_members m WHERE m.name = h.name ORDER BY m.member LIMIT $2) p ON true
      WHERE h.name = $1 AND ${q.live('h.expires_at')} ORDER BY p.member`,
      [name, ELEMENT_BATCH + 1],
    );
    if (r.length === 0) throw collectionMissing('set', name);
    if (r.length <= ELEMENT_BATCH) {
      const first = r[0].member === null ? [] : membersOf(r);
      return { count: Number(r[0].count), version: Number(r[0].version), first, rest: undefined };
    }
    return withReader(this.db, async (rd) => {
      const h = await rd.q.query(`SELECT h.count, h.version FROM ${LIVE_HEADER(rd.q)}`, [name]);
      if (h.length === 0) throw collectionMissing('set', name);
      await declare(rd.q, 'SELECT member FROM pithos_set_members WHERE name = $1 ORDER BY member', [name]);
      return { count: Number(h[0].count), version: Number(h[0].version), ...(await memberBatches(rd)) };
    });
  }

  /** The statement of `combine` through a cursor, in a read-only REPEATABLE READ transaction. */
  combineMembers(name: string, op: SetOp, others: readonly string[]): Promise<Batches<string[]>> {
    return withReader(this.db, async (rd) => {
      const [sql, params] = combineSql(rd.q, name, op, others);
      await declare(rd.q, sql, params);
      return memberBatches(rd);
    });
  }

  async add(name: string, members: readonly string[], create: boolean, pre?: Precondition): Promise<string> {
    const alone = async (): Promise<string> => {
      const [added, count] = await this.db.run((q) => setAdd(q, name, members, create, pre));
      return results.added(added, count);
    };
    if (this.group === undefined || pre !== undefined || members.length === 0 || members.length > GROUP_MEMBERS) return alone();
    // pithos_group does what setAdd does; the members go as hex (a member may hold U+0000, which text cannot).
    const op = { k: 'sa' as const, n: name, c: create, m: JSON.stringify(members), hex: members.map((m) => memberBytes(m).toString('hex')) };
    return this.group.submit(op, (r) => results.added(...(r as [number, number])), alone);
  }

  async remove(name: string, members: readonly string[], pre?: Precondition): Promise<string> {
    const alone = async (): Promise<string> => {
      const [removed, count] = await this.db.run((q) => setRemove(q, name, members, pre));
      return results.removed(removed, count);
    };
    if (this.group === undefined || pre !== undefined || members.length === 0 || members.length > GROUP_MEMBERS) return alone();
    // pithos_group does what setRemove does.
    const op = { k: 'sr' as const, n: name, m: JSON.stringify(members), hex: members.map((m) => memberBytes(m).toString('hex')) };
    return this.group.submit(op, (r) => results.removed(...(r as [number, number])), alone);
  }

  async contains(name: string, members: readonly string[]): Promise<string> {
    const q = this.db.q;
    const r = await q.query(
      `SELECT (SELECT array_agg(EXISTS (SELECT 1 FROM pithos_set_members m WHERE m.name = h.name AND m.member = t.m) ORDER BY t.i)
        FROM unnest($2::bytea[]) WITH ORDINALITY AS t(m, i)) AS c
      FROM ${LIVE_HEADER(q)}`,
      [name, members.map(memberBytes)],
    );
    if (r.length === 0) throw collectionMissing('set', name);
    return `{"contains":[${(r[0].c as boolean[]).map((b) => (b ? 'true' : 'false')).join(',')}]}`;
  }

  async combine(name: string, op: SetOp, others: readonly string[], store: string | undefined, pre?: Precondition): Promise<string> {
    if (store === undefined) {
      const ms = await setCombine(this.db.q, name, op, others);
      return `{"members":${JSON.stringify(ms)},"count":${ms.length}}`;
    }
    // Inputs and target locked (in name order), the inputs read, the target replaced: one transaction.
    // The target keeps no expiry.
    const n = await this.db.run(async (q) => {
      await lockAll(q, 'set', [name, ...others, store]);
      const names = [name, ...others];
      const counts = await q.query(`SELECT h.name, h.count FROM pithos_sets h WHERE h.name = ANY($1::text[]) AND ${q.live('h.expires_at')}`, [names]);
      const byName = new Map(counts.map((c) => [c.name as string, Number(c.count)]));
      combineLimit(
        names,
        names.map((n) => byName.get(n) ?? 0),
      );
      const ms = await setCombine(q, name, op, others);
      await setPut(q, store, ms, 0, pre);
      return ms.length;
    });
    return `{"count":${n}}`;
  }

  expire(name: string, ttl: number, pre?: Precondition): Promise<void> {
    return this.db.run((q) => expireHeader(q, 'set', name, ttl, pre));
  }

  delete(name: string, pre?: Precondition): Promise<void> {
    return this.db.run((q) => dropCollection(q, 'set', name, pre));
  }
}
