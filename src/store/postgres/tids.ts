/**
 * Where a table's t_ids and row count come from on PostgreSQL, so that
 * transactions inserting into one table run side by side (docs/scaling.md,
 * "Tables"):
 *
 * - t_ids: a sequence per table incarnation, `pithos_tid_<inc>`, created in
 *   the transaction that creates the table (starting at 1, as on the log
 *   store) and dropped in the one that drops it or replaces it. Its OID is
 *   the table row's `tid_seq`, so an insert opens it by OID (a lock, which
 *   also makes a sequence created by a transaction that committed while the
 *   insert waited visible), never by name. `nextval` holds no lock until
 *   commit; it is WAL-logged before the row that uses it commits, so a
 *   committed t_id is never handed out again, whatever node inserts and
 *   after a crash (a crash may skip values: gaps, never reuse).
 * - the table's row is locked `FOR SHARE` by an insert: concurrent inserts
 *   share it; a drop, a re-create, a ttl change or a row delete (which lock
 *   it for update) wait for them, and they for it.
 * - row counts: an insert adds 1 to one of ROW_SLOTS rows of
 *   pithos_row_counts, chosen by the connection's backend, so two inserts
 *   wait on each other only when their connections share a slot. The count
 *   of a table is its row's `row_count` (moved by deletes, under the table's
 *   row lock) plus its slots.
 *
 * A table made by a node older than migration 9 has no sequence
 * (`tid_seq` NULL): the first insert makes one, above every t_id it has.
 */
import type { Q } from './sql.js';

/** Rows of pithos_row_counts per table incarnation. */
export const ROW_SLOTS = 32;

const seqName = (inc: number): string => `pithos_tid_${Math.trunc(inc)}`;

/** SQL: the live row count of the pithos_tables row aliased `t`. */
export const rowCount = (t: string): string =>
  `(${t}.row_count + (SELECT coalesce(sum(c.n), 0) FROM pithos_row_counts AS c WHERE c.tname = ${t}.name AND c.inc = ${t}.inc))`;

/**
 * One statement inserting a row of the live table named by SQL `name` with
 * body SQL `body`: its rows are `t_id` (NULL when nothing was inserted) and
 * `tables` (0: no live table; 1 and no t_id: the table has no sequence yet);
 * `extra`, more of the final select list (`r` is the inserted row).
 */
export const insertSql = (q: Q, name: string, body: string, extra = ''): string =>
  `WITH t AS (SELECT inc, tid_seq FROM pithos_tables WHERE name = ${name} AND ${q.live()} FOR SHARE),
        r AS (INSERT INTO pithos_rows (tname, inc, t_id, body, version) SELECT ${name}, t.inc, nextval(t.tid_seq), ${body}, nextval('pithos_seq')
              FROM t WHERE t.tid_seq IS NOT NULL RETURNING inc, t_id),
        k AS (INSERT INTO pithos_row_counts AS c (tname, inc, slot, n) SELECT ${name}, r.inc, pg_backend_pid() % ${ROW_SLOTS}, 1 FROM r
              ON CONFLICT (tname, inc, slot) DO UPDATE SET n = c.n + 1)
   SELECT (SELECT t_id FROM r) AS t_id, (SELECT inc FROM r) AS inc, (SELECT count(*) FROM t) AS tables${extra}`;

/** The t_ids one transaction drew, per table: the incarnation, the first and the last. */
export type Drawn = Map<string, { inc: number; first: number; last: number }>;

/**
 * Gives back the t_ids a transaction drew and will not commit (it failed, or
 * an earlier attempt of it was rolled back), so that the next insert takes
 * them, as on the log store, where a failed transaction takes none. Only
 * under the tables' row locks FOR UPDATE (txns.ts holds them), so no other
 * transaction draws meanwhile, and only while each sequence is still at the
 * last t_id drawn: anything else leaves them skipped, never reused.
 */
export async function giveBack(q: Q, drawn: Drawn): Promise<void> {
  for (const [name, d] of drawn) {
    await q.query(`SELECT setval(t.tid_seq, $3, false) FROM pithos_tables AS t WHERE t.name = $1 AND t.inc = $2 AND pg_sequence_last_value(t.tid_seq) = $4`, [
      name,
      d.inc,
      d.first,
      d.last,
    ]);
  }
  drawn.clear();
}

/** Creates incarnation `inc`'s sequence, starting at `start`, and records it on the table's row. Inside a transaction. */
export async function newSequence(q: Q, name: string, inc: number, start = 1): Promise<void> {
  await q.query(`CREATE SEQUENCE IF NOT EXISTS ${seqName(inc)} START WITH ${Math.max(1, Math.trunc(start))}`);
  await q.query(`UPDATE pithos_tables SET tid_seq = '${seqName(inc)}'::regclass WHERE name = $1 AND inc = $2`, [name, inc]);
}

/** Drops incarnation `inc`'s sequence and row counts (the incarnation is gone in the same transaction). */
export async function dropSequence(q: Q, name: string, inc: number): Promise<void> {
  await q.query(`DROP SEQUENCE IF EXISTS ${seqName(inc)}`);
  await q.query('DELETE FROM pithos_row_counts WHERE tname = $1 AND inc = $2', [name, inc]);
}

/**
 * Gives the live table a sequence when it has none, starting above its
 * counter from before migration 9 and above every t_id it has. Locks the
 * table's row for update (so no older node takes a t_id meanwhile). Inside
 * a transaction; false when the table does not exist.
 */
export async function ensureSequence(q: Q, name: string): Promise<boolean> {
  const r = await q.query(
    `SELECT t.inc, t.tid_seq IS NULL AS none, greatest(t.next_id, (SELECT coalesce(max(x.t_id), 0) + 1 FROM pithos_rows AS x WHERE x.tname = t.name AND x.inc = t.inc)) AS start
     FROM pithos_tables AS t WHERE t.name = $1 AND ${q.live('t.expires_at')} FOR UPDATE`,
    [name],
  );
  if (r.length === 0) return false;
  if (r[0].none === true) await newSequence(q, name, Number(r[0].inc), Number(r[0].start));
  return true;
}

/** Migration 9: the row counts and the sequences' column (every database). */
export const MIGRATION_9 = [
  `CREATE TABLE IF NOT EXISTS pithos_row_counts (
     tname TEXT NOT NULL, inc INT8 NOT NULL, slot INT4 NOT NULL, n INT8 NOT NULL, PRIMARY KEY (tname, inc, slot))`,
  'ALTER TABLE pithos_tables ADD COLUMN IF NOT EXISTS tid_seq REGCLASS',
];

/**
 * Migration 10 (PostgreSQL): a sequence for every existing table, started
 * at its counter, with the table rows locked so no insert of an older node
 * takes a t_id between the read and the commit.
 */
export const MIGRATION_10 = [
  `DO $$
   DECLARE t RECORD;
   BEGIN
     FOR t IN SELECT name, inc, next_id FROM pithos_tables WHERE tid_seq IS NULL FOR UPDATE LOOP
       EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I START WITH %s', 'pithos_tid_' || t.inc, greatest(t.next_id, 1));
       UPDATE pithos_tables SET tid_seq = ('pithos_tid_' || t.inc)::regclass WHERE name = t.name AND inc = t.inc;
     END LOOP;
   END $$`,
];
