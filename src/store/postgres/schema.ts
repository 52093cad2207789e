/**
 * The shared store's schema, as numbered migrations applied on start.
 *
 * Safe when several nodes start at once, on PostgreSQL, CockroachDB and
 * YugabyteDB alike (no advisory locks, which CockroachDB lacks): each
 * migration runs in one transaction that first inserts its number into
 * pithos_migrations. A second node doing the same waits on that row; when
 * the first commits, its insert finds the row and it skips the migration;
 * if the first fails, the second applies it. Every statement is also
 * idempotent (IF NOT EXISTS), and the bootstrap itself is retried, because
 * concurrent CREATE TABLE IF NOT EXISTS can still collide in PostgreSQL's
 * catalog (23505 / 42P07).
 *
 * Times are integers: milliseconds since the epoch on the database's clock.
 * expires_at NULL = no expiry.
 */
import type pg from 'pg';

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tables, rows, records, variants, locks',
    statements: [
      // Table incarnations and lock fences: increasing, never reused.
      'CREATE SEQUENCE IF NOT EXISTS pithos_seq',
      `CREATE TABLE IF NOT EXISTS pithos_tables (
         name TEXT PRIMARY KEY, inc INT8 NOT NULL, next_id INT8 NOT NULL, expires_at INT8)`,
      `CREATE TABLE IF NOT EXISTS pithos_rows (
         tname TEXT NOT NULL, inc INT8 NOT NULL, t_id INT8 NOT NULL, body TEXT NOT NULL,
         PRIMARY KEY (tname, inc, t_id))`,
      `CREATE TABLE IF NOT EXISTS pithos_records (
         id TEXT PRIMARY KEY, body TEXT NOT NULL, expires_at INT8)`,
      `CREATE TABLE IF NOT EXISTS pithos_variants (
         name TEXT PRIMARY KEY, t TEXT NOT NULL, v TEXT NOT NULL, expires_at INT8)`,
      `CREATE TABLE IF NOT EXISTS pithos_locks (
         name TEXT PRIMARY KEY, token TEXT NOT NULL, holder TEXT NOT NULL, ttl INT8 NOT NULL, orig INT8 NOT NULL,
         acq INT8 NOT NULL, fence INT8 NOT NULL, expires_at INT8 NOT NULL)`,
      // For the sweeper.
      'CREATE INDEX IF NOT EXISTS pithos_tables_exp ON pithos_tables (expires_at)',
      'CREATE INDEX IF NOT EXISTS pithos_records_exp ON pithos_records (expires_at)',
      'CREATE INDEX IF NOT EXISTS pithos_variants_exp ON pithos_variants (expires_at)',
      'CREATE INDEX IF NOT EXISTS pithos_locks_exp ON pithos_locks (expires_at)',
    ],
  },
  {
    version: 2,
    name: 'versions of records, variants and table rows',
    // The version of an object's last write, from pithos_seq (so increasing
    // and unique across nodes). Every write sets it explicitly in its own
    // statement; the default gives rows that exist when this runs a version
    // each (a volatile default is evaluated per existing row), and is a
    // fresh version for any insert that names none.
    statements: ['pithos_records', 'pithos_variants', 'pithos_rows'].map(
      (t) => `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS version INT8 NOT NULL DEFAULT nextval('pithos_seq')`),
  },
  {
    version: 3,
    name: 'listing: byte-ordered name indexes, row counts; secondary index definitions',
    statements: [
      // Listing walks names in UTF-8 byte order (COLLATE "C"), whatever the
      // database's default collation: these indexes serve that order. A
      // name's entry never changes after its insert, so updates stay HOT.
      'CREATE INDEX IF NOT EXISTS pithos_tables_name_c ON pithos_tables ((name COLLATE "C"))',
      'CREATE INDEX IF NOT EXISTS pithos_records_name_c ON pithos_records ((id COLLATE "C"))',
      'CREATE INDEX IF NOT EXISTS pithos_variants_name_c ON pithos_variants ((name COLLATE "C"))',
      'CREATE INDEX IF NOT EXISTS pithos_locks_name_c ON pithos_locks ((name COLLATE "C"))',
      // Live rows of the table's incarnation, kept by every statement that
      // inserts or deletes rows (they lock or update this row anyway);
      // counted for existing tables by migration 4.
      'ALTER TABLE pithos_tables ADD COLUMN IF NOT EXISTS row_count INT8 NOT NULL DEFAULT 0',
      // One row per declared secondary index; `ready` once its database
      // index is built (src/store/postgres/indexes.ts).
      `CREATE TABLE IF NOT EXISTS pithos_indexes (
         tname TEXT NOT NULL, inc INT8 NOT NULL, field TEXT NOT NULL, ready BOOL NOT NULL DEFAULT false,
         PRIMARY KEY (tname, inc, field))`,
    ],
  },
  {
    version: 4,
    name: 'row counts of existing tables',
    // A separate transaction: CockroachDB does not let a transaction write a
    // column it added itself.
    statements: [
      `UPDATE pithos_tables AS t SET row_count = (SELECT count(*) FROM pithos_rows AS r WHERE r.tname = t.name AND r.inc = t.inc)`,
    ],
  },
];

const RACES = new Set(['23505', '42P07', '40001', '40P01']);

/** Applies every migration the database lacks; returns the versions this call applied. */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(pool);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === undefined || !RACES.has(code) || attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

async function migrateOnce(pool: pg.Pool): Promise<number[]> {
  await pool.query(`CREATE TABLE IF NOT EXISTS pithos_migrations (
    version INT8 PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    const c = await pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken = err;
    };
    c.on('error', onError);
    try {
      await c.query('BEGIN');
      const r = await c.query('INSERT INTO pithos_migrations (version, name) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING RETURNING version', [m.version, m.name]);
      if (r.rows.length === 0) {
        await c.query('ROLLBACK');
        continue;
      }
      for (const s of m.statements) await c.query(s);
      await c.query('COMMIT');
      applied.push(m.version);
    } catch (err) {
      try {
        await c.query('ROLLBACK');
      } catch (e) {
        broken = e as Error;
      }
      throw err;
    } finally {
      c.removeListener('error', onError);
      c.release(broken);
    }
  }
  return applied;
}

/** The newest migration the database has, so a node older than the schema can say so. */
export async function schemaVersion(pool: pg.Pool): Promise<number> {
  const r = await pool.query('SELECT max(version) AS v FROM pithos_migrations');
  return Number(r.rows[0].v ?? 0);
}
