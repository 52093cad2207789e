/**
 * Sorted sets on PostgreSQL (docs/scaling.md, "Sets and sorted sets"): a
 * header row in pithos_zsets and one row per member in pithos_zset_members
 * (name, member, score), with the primary key (name, member) for a
 * member's score and an index on (name, score, member), which is the
 * sorted-set order (score, then member bytes): ranges by rank and by score
 * walk it. A member's rank is the number of index entries before it, a
 * count over the index (cost grows with the rank, not O(log n):
 * docs/scaling.md has the figures); rev_rank is count − 1 − rank.
 *
 * Scores are float8, which holds every finite JS number exactly and
 * answers it back as the shortest text that reads back the same, as
 * String() does. Writes lock the header, then decide in JS as the log store
 * does (the same rules, the same messages), so concurrent increments on any
 * number of nodes are exact.
 *
 * The functions taking a Q are the decisions; transactions (txns.ts) reuse them.
 */
import { collectionMissing, scoreText, type ZMode, type ZRange, zaddEffect } from '../collection.js';
import { results } from '../txn.js';
import { incremented, memberAnswer, memberItem, notMember, zsetEvents } from '../zsets.js';
import { ELEMENT_BATCH } from '../elements.js';
import type { Elements, Precondition, VersionOut, ZBatch, ZsetStore } from '../store.js';
import {
  dropCollection,
  expireHeader,
  INSERT_STEP,
  liveCount,
  lockExisting,
  lockHeader,
  memberBytes,
  memberOf,
  NEXT,
  replaceHeader,
  unlockUnchanged,
  writeHeader,
} from './collections.js';
import { cursorRest, declare, fetchRows, MEMBER_FETCH, withReader } from './pages.js';
import { GROUP_MEMBERS, type GroupCommit } from './group-commit.js';
import type { Db, Q } from './sql.js';

const LIVE_HEADER = (q: Q): string => `pithos_zsets h WHERE h.name = $1 AND ${q.live('h.expires_at')}`;

async function upsertMembers(q: Q, name: string, pairs: ReadonlyArray<[string, number]>): Promise<void> {
  // In slices (a PUT may hold any number of members), all within the operation's one deadline (deadline.ts).
  for (let from = 0; from < pairs.length; from += INSERT_STEP) {
    const part = pairs.slice(from, from + INSERT_STEP);
    await q.query(
      `INSERT INTO pithos_zset_members (name, member, score) SELECT $1, t.m, t.s FROM unnest($2::bytea[], $3::float8[]) AS t(m, s)
      ON CONFLICT (name, member) DO UPDATE SET score = EXCLUDED.score`,
      [name, part.map((p) => memberBytes(p[0])), part.map((p) => p[1])],
    );
  }
}

/** The current scores of `members` that are in the sorted set, by member. */
async function scoresOf(q: Q, name: string, members: readonly string[]): Promise<Map<string, number>> {
  const r = await q.query('SELECT member, score FROM pithos_zset_members WHERE name = $1 AND member = ANY($2::bytea[])', [name, members.map(memberBytes)]);
  return new Map(r.map((x) => [memberOf(x.member), Number(x.score)]));
}

export async function zsetPut(q: Q, name: string, pairs: ReadonlyArray<[string, number]>, ttl: number, pre?: Precondition): Promise<boolean> {
  const created = await replaceHeader(q, 'zset', name, pairs.length, ttl, pre);
  await upsertMembers(q, name, pairs);
  return created;
}

/** Adds or updates members under `mode`; returns [added, updated, count]. Writes nothing when nothing changes. */
export async function zsetAdd(
  q: Q,
  name: string,
  pairs: ReadonlyArray<[string, number]>,
  mode: ZMode,
  create: boolean,
  pre?: Precondition,
): Promise<[number, number, number]> {
  const h = await lockHeader(q, 'zset', name, create, pre);
  const cur =
    h.count === 0
      ? new Map<string, number>()
      : await scoresOf(
          q,
          name,
          pairs.map((p) => p[0]),
        );
  let added = 0;
  let updated = 0;
  const writes: Array<[string, number]> = [];
  for (const [m, s] of pairs) {
    const effect = zaddEffect(mode, cur.get(m), s);
    if (effect === undefined) continue;
    if (effect === 'add') added++;
    else updated++;
    writes.push([m, s]);
  }
  if (writes.length === 0) {
    await unlockUnchanged(q, 'zset', name, h);
    return [0, 0, h.count];
  }
  await upsertMembers(q, name, writes);
  const count = h.count + added;
  await writeHeader(q, 'zset', name, h, count, 'add', zsetEvents.add(pairs, mode, added, updated, count));
  return [added, updated, count];
}

/** Adds `delta` to a member's score (a missing member starts at 0); returns the new score. */
export async function zsetIncr(q: Q, name: string, member: string, delta: number, create: boolean, pre?: Precondition): Promise<number> {
  const h = await lockHeader(q, 'zset', name, create, pre);
  const cur = h.count === 0 ? undefined : (await scoresOf(q, name, [member])).get(member);
  const s = incremented(name, member, cur, delta);
  const count = h.count + (cur === undefined ? 1 : 0);
  // The member and the header in one statement: the header stays locked for one round trip less.
  await q.query(
    `WITH m AS (INSERT INTO pithos_zset_members (name, member, score) VALUES ($1, $2, $3::float8)
      ON CONFLICT (name, member) DO UPDATE SET score = EXCLUDED.score)
    UPDATE pithos_zsets SET count = $4, version = ${NEXT}, op = 'incr', op_data = $5${h.exists ? '' : ', expires_at = NULL'} WHERE name = $1`,
    [name, memberBytes(member), s, count, zsetEvents.incr(member, delta, s)],
  );
  return s;
}

/** Removes members; returns [removed, count]. The sorted set stays, possibly empty. */
export async function zsetRemove(q: Q, name: string, members: readonly string[], pre?: Precondition): Promise<[number, number]> {
  const h = await lockExisting(q, 'zset', name, pre);
  const r = await q.query('DELETE FROM pithos_zset_members WHERE name = $1 AND member = ANY($2::bytea[]) RETURNING 1', [name, members.map(memberBytes)]);
  const count = h.count - r.length;
  // None was a member: a write that changes nothing writes nothing.
  if (r.length === 0) return [0, count];
  await writeHeader(q, 'zset', name, h, count, 'remove', zsetEvents.remove(members, r.length, count));
  return [r.length, count];
}

/** A member's score (undefined when not a member); 404 when the sorted set does not exist (a transaction's check). */
export async function zsetScore(q: Q, name: string, member: string): Promise<number | undefined> {
  const r = await q.query(`SELECT (SELECT z.score FROM pithos_zset_members z WHERE z.name = h.name AND z.member = $2) AS score FROM ${LIVE_HEADER(q)}`, [
    name,
    memberBytes(member),
  ]);
  if (r.length === 0) throw collectionMissing('zset', name);
  return r[0].score === null ? undefined : Number(r[0].score);
}

export const zsetCount = (q: Q, name: string): Promise<number | undefined> => liveCount(q, 'zset', name);

/**
 * The live header's count and version with the items of a range, one row
 * per item (one row with a null member when the range is empty), in the
 * range's order; `cap`: at most that many items.
 */
function rangeSql(q: Q, name: string, zr: ZRange, cap: number | undefined): [string, unknown[]] {
  const dir = zr.rev ? 'DESC' : 'ASC';
  const params: unknown[] = [name];
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  let where = '';
  let window: string;
  if (zr.by === 'rank') {
    const from = `GREATEST(CASE WHEN ${p(zr.start)}::int8 < 0 THEN h.count + $2::int8 ELSE $2::int8 END, 0)`;
    const to = `LEAST(CASE WHEN ${p(zr.stop)}::int8 < 0 THEN h.count + $3::int8 ELSE $3::int8 END, h.count - 1)`;
    window = `OFFSET ${from} LIMIT GREATEST(${to} - ${from} + 1, 0)`;
  } else {
    // An infinite bound that includes its end is no bound (every score is finite).
    if (zr.min.score !== -Infinity || zr.min.open) where += ` AND z.score ${zr.min.open ? '>' : '>='} ${p(zr.min.score)}::float8`;
    if (zr.max.score !== Infinity || zr.max.open) where += ` AND z.score ${zr.max.open ? '<' : '<='} ${p(zr.max.score)}::float8`;
    window = `OFFSET ${p(zr.offset)}::int8${zr.limit === undefined ? '' : ` LIMIT ${p(zr.limit)}::int8`}`;
  }
  let items = `SELECT z.member, z.score FROM pithos_zset_members z WHERE z.name = h.name${where} ORDER BY z.score ${dir}, z.member ${dir} ${window}`;
  if (cap !== undefined) items = `SELECT * FROM (${items}) w LIMIT ${p(cap)}::int8`;
  const sql = `SELECT h.count, h.version, i.member, i.score FROM pithos_zsets h
      LEFT JOIN LATERAL (${items}) i ON true
      WHERE h.name = $1 AND ${q.live('h.expires_at')} ORDER BY i.score ${dir}, i.member ${dir}`;
  return [sql, params];
}

/** Rows of rangeSql as a batch (none for the one row of an empty range). */
function zbatch(rows: Record<string, unknown>[]): ZBatch {
  const members: string[] = [];
  const scores: number[] = [];
  if (rows.length > 0 && rows[0].member !== null) {
    for (const r of rows) {
      members.push(memberOf(r.member));
      scores.push(Number(r.score));
    }
  }
  return { members, scores };
}

/** Hex of a member's UTF-8, as pithos_group takes members (a member may hold U+0000, which text cannot). */
const hex = (m: string): string => memberBytes(m).toString('hex');

export class PgZsets implements ZsetStore {
  /** `group`: batches add, incr and remove of a few members without a condition with other writes (group-commit.ts); absent, each goes alone. */
  constructor(
    private readonly db: Db,
    private readonly group?: GroupCommit,
  ) {}

  /** The batcher, when a write of `n` members without `pre` may ride in a batch. */
  private batcher(n: number, pre: Precondition | undefined): GroupCommit | undefined {
    return pre === undefined && n > 0 && n <= GROUP_MEMBERS ? this.group : undefined;
  }

  put(name: string, pairs: ReadonlyArray<[string, number]>, ttl: number, pre?: Precondition): Promise<boolean> {
    return this.db.run((q) => zsetPut(q, name, pairs, ttl, pre));
  }

  async add(name: string, pairs: ReadonlyArray<[string, number]>, mode: ZMode, create: boolean, pre?: Precondition): Promise<string> {
    const alone = async (): Promise<string> => {
      const [added, updated, count] = await this.db.run((q) => zsetAdd(q, name, pairs, mode, create, pre));
      return results.addedOrUpdated(added, updated, count);
    };
    // A member named twice would be written twice by one statement there: alone, as zsetAdd decides it.
    const group = this.batcher(pairs.length, pre);
    if (group === undefined || new Set(pairs.map((p) => p[0])).size !== pairs.length) return alone();
    const op = {
      k: 'za' as const,
      n: name,
      c: create,
      mode,
      e: zsetEvents.addHead(pairs, mode),
      hex: pairs.map((p) => hex(p[0])),
      sc: pairs.map((p) => scoreText(p[1])),
    };
    return group.submit(op, (r) => results.addedOrUpdated(...(r as [number, number, number])), alone);
  }

  async incr(name: string, member: string, delta: number, create: boolean, pre?: Precondition): Promise<string> {
    const alone = async (): Promise<string> => results.score(await this.db.run((q) => zsetIncr(q, name, member, delta, create, pre)));
    const group = this.batcher(1, pre);
    if (group === undefined) return alone();
    // pithos_group answers the new score as float8's shortest text, which reads back exactly.
    const op = { k: 'zi' as const, n: name, c: create, m: JSON.stringify(member), hex: [hex(member)], d: scoreText(delta) };
    return group.submit(op, (r) => results.score(Number(r)), alone);
  }

  async remove(name: string, members: readonly string[], pre?: Precondition): Promise<string> {
    const alone = async (): Promise<string> => {
      const [removed, count] = await this.db.run((q) => zsetRemove(q, name, members, pre));
      return results.removed(removed, count);
    };
    const group = this.batcher(members.length, pre);
    if (group === undefined) return alone();
    const op = { k: 'zr' as const, n: name, m: JSON.stringify(members), hex: members.map(hex) };
    return group.submit(op, (r) => results.removed(...(r as [number, number])), alone);
  }

  /**
   * One statement: the live header, and the items of the range read off the
   * (name, score, member) index, ascending or (rev) descending, from one
   * snapshot. Negative ranks are resolved against the header's count.
   */
  async range(name: string, zr: ZRange, out?: VersionOut): Promise<string> {
    const q = this.db.q;
    const r = await q.query(...rangeSql(q, name, zr, undefined));
    if (r.length === 0) throw collectionMissing('zset', name);
    if (out !== undefined) out.version = Number(r[0].version);
    let text = '{"items":[';
    if (r[0].member !== null) for (let i = 0; i < r.length; i++) text += (i === 0 ? '' : ',') + memberItem(Number(r[i].score), memberOf(r[i].member));
    return `${text}],"count":${Number(r[0].count)}}`;
  }

  /**
   * A range of at most ELEMENT_BATCH items in one statement, as `range`; a
   * longer one through a cursor over the same statement, in a read-only
   * REPEATABLE READ transaction (pages.ts): one instant, a FETCH per step.
   */
  async items(name: string, zr: ZRange): Promise<Elements<ZBatch>> {
    const q = this.db.q;
    const r = await q.query(...rangeSql(q, name, zr, ELEMENT_BATCH + 1));
    if (r.length === 0) throw collectionMissing('zset', name);
    const count = Number(r[0].count);
    const version = Number(r[0].version);
    if (r.length <= ELEMENT_BATCH) return { count, version, first: zbatch(r), rest: undefined };
    return withReader(this.db, async (rd) => {
      await declare(rd.q, ...rangeSql(rd.q, name, zr, undefined));
      const rows = await fetchRows(rd.q);
      if (rows.length === 0) throw collectionMissing('zset', name);
      const e = { count: Number(rows[0].count), version: Number(rows[0].version), first: zbatch(rows) };
      if (rows.length < MEMBER_FETCH) {
        rd.close();
        return { ...e, rest: undefined };
      }
      return { ...e, rest: cursorRest(rd, zbatch) };
    });
  }

  /** One statement: the score, and the rank as the count of members before it in the index. */
  async member(name: string, member: string): Promise<string> {
    const q = this.db.q;
    const r = await q.query(
      `SELECT h.count, z.score,
        (SELECT count(*) FROM pithos_zset_members y WHERE y.name = h.name AND (y.score, y.member) < (z.score, z.member)) AS rank
      FROM pithos_zsets h LEFT JOIN pithos_zset_members z ON z.name = h.name AND z.member = $2
      WHERE h.name = $1 AND ${q.live('h.expires_at')}`,
      [name, memberBytes(member)],
    );
    if (r.length === 0) throw collectionMissing('zset', name);
    if (r[0].score === null) throw notMember(name, member);
    const rank = Number(r[0].rank);
    return memberAnswer(Number(r[0].score), rank, Number(r[0].count));
  }

  expire(name: string, ttl: number, pre?: Precondition): Promise<void> {
    return this.db.run((q) => expireHeader(q, 'zset', name, ttl, pre));
  }

  delete(name: string, pre?: Precondition): Promise<void> {
    return this.db.run((q) => dropCollection(q, 'zset', name, pre));
  }
}
