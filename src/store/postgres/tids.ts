/**
 * The t_ids and row counts of tables on PostgreSQL (docs/scaling.md,
 * "Tables" and "Row counts"): each table incarnation's sequence
 * `pithos_tid_<inc>`, the insert statement that draws from it, the slots of
 * pithos_row_counts, and the sweeper's upkeep of both. tables.ts holds the
 * namespace that uses them.
 */
import type { Db, Q } from './sql.js';

/** The sequence that hands out the t_ids of incarnation `inc`. */
export const tidSequence = (inc: number): string => `pithos_tid_${Math.trunc(inc)}`;

/**
 * SQL (one data-modifying CTE body): adds `delta` to this backend's slot of
 * the row count of each (tname, inc) that `source` yields.
 */
export const countRowsBy = (source: string, delta: string): string =>
  `INSERT INTO pithos_row_counts AS c (tname, inc, slot, n) SELECT tname, inc, pg_backend_pid(), ${delta} FROM ${source}
   ON CONFLICT (tname, inc, slot) DO UPDATE SET n = c.n + excluded.n`;

/** SQL: the live row count of the table whose pithos_tables row is `t`. */
export const rowCount = (t: string): string => `(SELECT coalesce(sum(c.n), 0) FROM pithos_row_counts AS c WHERE c.tname = ${t}.name AND c.inc = ${t}.inc)`;

/**
 * SQL: one insert of a row, its t_id from the incarnation's sequence
 * (`name` and `body` are SQL expressions), then `answer`, which reads the
 * inserted row (if any) as `u`.
 */
export const insertSql = (name: string, body: string, live: string, answer = 'SELECT t_id FROM u'): string =>
  `WITH t AS (SELECT inc FROM pithos_tables WHERE name = ${name} AND ${live}),
        u AS (INSERT INTO pithos_rows (tname, inc, t_id, body, version)
              SELECT ${name}, t.inc, nextval(('pithos_tid_' || t.inc)::regclass), ${body}, nextval('pithos_seq') FROM t RETURNING tname, inc, t_id),
        c AS (${countRowsBy('u', '1')})
   ${answer}`;

/** A table's slots in pithos_row_counts past which the sweeper folds them into one. */
const FOLD_SLOTS = 16;

/**
 * The sweeper's upkeep of row counts and t_id sequences:
 * - folds the row-count slots of every table that has more than
 *   FOLD_SLOTS into slot 0, so the slots of backends long gone do not pile
 *   up. Exact under concurrent writers: a slot a writer's open transaction
 *   holds is skipped (SKIP LOCKED: the fold never waits for a writer), a
 *   writer that finds its slot deleted inserts it again, and slot 0 rows
 *   are written in one order (two nodes folding at once queue, never
 *   deadlock);
 * - removes the counts and sequences of incarnations no table has (left by
 *   a node older than migration 9, or by a fold that raced a drop).
 */
export async function sweepCounts(q: Q): Promise<void> {
  await q.query(
    `WITH f AS (SELECT tname, inc FROM pithos_row_counts GROUP BY tname, inc HAVING count(*) > ${FOLD_SLOTS}),
          l AS (SELECT c.tname, c.inc, c.slot FROM pithos_row_counts AS c JOIN f ON c.tname = f.tname AND c.inc = f.inc
                WHERE c.slot <> 0 FOR UPDATE OF c SKIP LOCKED),
          d AS (DELETE FROM pithos_row_counts AS c USING l WHERE c.tname = l.tname AND c.inc = l.inc AND c.slot = l.slot RETURNING c.tname, c.inc, c.n)
     INSERT INTO pithos_row_counts AS c (tname, inc, slot, n) SELECT tname, inc, 0, sum(n) FROM d GROUP BY tname, inc ORDER BY tname, inc
     ON CONFLICT (tname, inc, slot) DO UPDATE SET n = c.n + excluded.n`,
  );
  await q.query('DELETE FROM pithos_row_counts AS c WHERE NOT EXISTS (SELECT 1 FROM pithos_tables AS t WHERE t.name = c.tname AND t.inc = c.inc)');
  const orphans = await q.query(
    `SELECT s.relname FROM pg_class AS s WHERE s.relkind = 'S' AND s.relnamespace = current_schema()::regnamespace AND s.relname LIKE 'pithos\\_tid\\_%'
     AND NOT EXISTS (SELECT 1 FROM pithos_tables AS t WHERE s.relname = 'pithos_tid_' || t.inc)`,
  );
  for (const o of orphans) await q.query(`DROP SEQUENCE IF EXISTS ${tidSequence(Number(String(o.relname).slice('pithos_tid_'.length)))}`);
}

/**
 * Whether `err` says an insert found no t_id sequence for the incarnation it
 * read: the table was dropped or replaced meanwhile (the sequence went
 * between the insert's read of the table and its nextval), or it is a table
 * whose sequence was never made (created by a node older than migration 9).
 */
function sequenceGone(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  const m = String(e?.message);
  return (e?.code === '42P01' && m.includes('pithos_tid_')) || (e?.code === 'XX000' && m.startsWith('could not open relation with OID'));
}

/**
 * Creates the t_id sequence of live table `name` when it has none, starting
 * above every t_id it has given: its old counter (`next_id`, which a node
 * older than migration 9 moves) and its highest row. The table's row is
 * locked meanwhile, so such an older node's insert waits.
 */
async function ensureSequence(db: Db, name: string): Promise<void> {
  await db.run(async (q) => {
    const t = await q.query(`SELECT inc, next_id FROM pithos_tables WHERE name = $1 AND ${q.live()} FOR UPDATE`, [name]);
    if (t.length === 0) return;
    const inc = Number(t[0].inc);
    const top = await q.query('SELECT coalesce(max(t_id), 0) AS m FROM pithos_rows WHERE tname = $1 AND inc = $2', [name, inc]);
    const start = Math.max(Number(t[0].next_id ?? 1), Number(top[0].m) + 1);
    await q.query(`CREATE SEQUENCE IF NOT EXISTS ${tidSequence(inc)} START WITH ${start}`);
  });
}

/**
 * Runs `attempt`, which inserts rows into `tables` (each attempt its own
 * transaction), again when it failed for want of a t_id sequence: after
 * making the sequence of any of those tables that is live and has none.
 * A table that is gone then answers 404 from the attempt itself.
 */
export async function withSequences<T>(db: Db, tables: Iterable<string>, attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!sequenceGone(err) || n >= 3) throw err;
      for (const t of tables) await ensureSequence(db, t);
    }
  }
}

/**
 * Removes what incarnation `inc` of table `name` left once its pithos_tables
 * row is gone or replaced (in the same transaction): its rows, index
 * definitions, row counts and t_id sequence.
 */
export async function forgetIncarnation(q: Q, name: string, inc: number): Promise<void> {
  // First: this waits for every insert that drew a t_id from it to commit or roll back,
  // so the statements below (each with a snapshot of its own) see the rows they wrote.
  await q.query(`DROP SEQUENCE IF EXISTS ${tidSequence(inc)}`);
  await q.query('DELETE FROM pithos_rows WHERE tname = $1 AND inc = $2', [name, inc]);
  await q.query('DELETE FROM pithos_indexes WHERE tname = $1 AND inc = $2', [name, inc]);
  await q.query('DELETE FROM pithos_row_counts WHERE tname = $1 AND inc = $2', [name, inc]);
}
