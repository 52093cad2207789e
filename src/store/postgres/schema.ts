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
import { COUNTERS_FUNCTION, GROUP_STATEMENTS } from './group-sql.js';
import { MIGRATION_12 } from './group-sql-12.js';
import { GROUP_FUNCTION_11 } from './group-sql-11.js';

/** SQL over pithos_seq: the highest value drawn so far (a new sequence has drawn none). */
export const DRAWN = 'CASE WHEN is_called THEN last_value ELSE last_value - 1 END';

export interface Migration {
  version: number;
  name: string;
  statements: string[];
  /**
   * Only on PostgreSQL itself (13 or newer): elsewhere the migration is
   * recorded as skipped and the feature it builds is absent.
   */
  postgresOnly?: true;
}

/**
 * The change feed's capture (docs/scaling.md, "The change feed"): triggers,
 * so every statement that writes an object records its change in the same
 * transaction, whichever code path wrote it.
 *
 * `pithos_stamp` gives records, variants and rows their version. It runs
 * after the row is locked (a BEFORE ROW trigger), so versions of one object
 * grow in commit order, and it takes the transaction's id before it draws
 * the version, which is what lets the feed know when no transaction can
 * still commit a lower one (src/store/postgres/changes.ts). A statement's
 * own `nextval` only says that it writes a new version.
 *
 * A change's `pos` is its place in the feed: the object's new version for a
 * put, a fresh number for a delete, an expiry or a change of a table or lock.
 * A DELETE run by the sweeper (`pithos.sweep` set for its transaction) is an
 * expiry. Rows deleted with their table are not reported one by one; the
 * table's delete reports them, as on the log store.
 *
 * `stamp`: a BEFORE ROW trigger function giving `col` a new number from pithos_seq
 * when the row is inserted or the statement asked for a new one (by setting
 * it): after the row lock, and after the transaction has its id.
 */
const stamp = (fn: string, col: string): string => `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'INSERT' OR NEW.${col} IS DISTINCT FROM OLD.${col} THEN
       PERFORM pg_current_xact_id();
       NEW.${col} := nextval('pithos_seq');
     END IF;
     RETURN NEW;
   END $$`;

/** The AFTER ROW trigger function of a record or variant: a put with its value, or its delete (or expiry). */
const change = (
  kind: string,
  nameCol: string,
  value: string,
): string => `CREATE OR REPLACE FUNCTION pithos_change_${kind}() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       PERFORM pithos_gone('${kind}', OLD.${nameCol}, NULL, OLD.version);
     ELSE
       INSERT INTO pithos_changes (pos, version, type, kind, name, value) VALUES (NEW.version, NEW.version, 'put', '${kind}', NEW.${nameCol}, ${value});
     END IF;
     RETURN NULL;
   END $$`;

const FEED: string[] = [
  `CREATE TABLE IF NOT EXISTS pithos_changes (
     pos INT8 PRIMARY KEY, version INT8 NOT NULL, type TEXT NOT NULL, kind TEXT NOT NULL,
     name TEXT NOT NULL, t_id INT8, value TEXT)`,
  // floor: changes at or below it may have been pruned (a watcher resuming there gets reset).
  'CREATE TABLE IF NOT EXISTS pithos_feed (id INT4 PRIMARY KEY, floor INT8 NOT NULL)',
  `INSERT INTO pithos_feed (id, floor) SELECT 1, ${DRAWN} FROM pithos_seq ON CONFLICT (id) DO NOTHING`,
  // Sequence positions by time, for pruning by age without an index on every change.
  'CREATE TABLE IF NOT EXISTS pithos_feed_marks (at INT8 PRIMARY KEY, pos INT8 NOT NULL)',
  stamp('pithos_stamp', 'version'),
  // A table's incarnation is the version of its put, as on the log store.
  stamp('pithos_stamp_table', 'inc'),
  `CREATE OR REPLACE FUNCTION pithos_gone(kind TEXT, name TEXT, t_id INT8, version INT8) RETURNS void LANGUAGE plpgsql AS $$
   DECLARE p INT8 := nextval('pithos_seq');
   BEGIN
     IF coalesce(current_setting('pithos.sweep', true), '') = 'on' THEN
       INSERT INTO pithos_changes (pos, version, type, kind, name, t_id) VALUES (p, version, 'expire', kind, name, t_id);
     ELSE
       INSERT INTO pithos_changes (pos, version, type, kind, name, t_id) VALUES (p, p, 'delete', kind, name, t_id);
     END IF;
   END $$`,
  change('record', 'id', 'NEW.body'),
  // Stored as the log store stores a variant: its type letter, then its JSON.
  change('variant', 'name', 'NEW.t || NEW.v'),
  `CREATE OR REPLACE FUNCTION pithos_change_row() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       IF EXISTS (SELECT 1 FROM pithos_tables WHERE name = OLD.tname AND inc = OLD.inc) THEN
         PERFORM pithos_gone('table', OLD.tname, OLD.t_id, OLD.version);
       END IF;
     ELSE
       INSERT INTO pithos_changes (pos, version, type, kind, name, t_id, value)
         VALUES (NEW.version, NEW.version, 'put', 'table', NEW.tname, NEW.t_id, NEW.body);
     END IF;
     RETURN NULL;
   END $$`,
  `CREATE OR REPLACE FUNCTION pithos_change_table() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       PERFORM pithos_gone('table', OLD.name, NULL, OLD.inc);
     ELSIF TG_OP = 'INSERT' OR NEW.inc <> OLD.inc THEN
       INSERT INTO pithos_changes (pos, version, type, kind, name) VALUES (NEW.inc, NEW.inc, 'put', 'table', NEW.name);
     END IF;
     RETURN NULL;
   END $$`,
  // A lease is a put when taken or renewed (a new token), a delete when released
  // (token emptied, the row stays for its fence); the sweeper empties expired ones: expire.
  `CREATE OR REPLACE FUNCTION pithos_change_lock() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE p INT8;
   BEGIN
     IF TG_OP = 'INSERT' OR (NEW.token <> '' AND NEW.token <> OLD.token) THEN
       p := nextval('pithos_seq');
       INSERT INTO pithos_changes (pos, version, type, kind, name) VALUES (p, p, 'put', 'lock', NEW.name);
     ELSIF NEW.token = '' AND OLD.token <> '' THEN
       PERFORM pithos_gone('lock', NEW.name, NULL, OLD.fence);
     END IF;
     RETURN NULL;
   END $$`,
  ...['pithos_records', 'pithos_variants', 'pithos_rows', 'pithos_tables'].flatMap((t) => [
    `DROP TRIGGER IF EXISTS ${t}_stamp ON ${t}`,
    t === 'pithos_tables'
      ? `CREATE TRIGGER ${t}_stamp BEFORE INSERT OR UPDATE OF inc ON ${t} FOR EACH ROW EXECUTE FUNCTION pithos_stamp_table()`
      : `CREATE TRIGGER ${t}_stamp BEFORE INSERT OR UPDATE OF version ON ${t} FOR EACH ROW EXECUTE FUNCTION pithos_stamp()`,
  ]),
  ...(
    [
      ['pithos_records', 'record', 'INSERT OR UPDATE OR DELETE'],
      ['pithos_variants', 'variant', 'INSERT OR UPDATE OR DELETE'],
      ['pithos_rows', 'row', 'INSERT OR UPDATE OR DELETE'],
      ['pithos_tables', 'table', 'INSERT OR UPDATE OF inc OR DELETE'],
      ['pithos_locks', 'lock', 'INSERT OR UPDATE OF token'],
    ] as const
  ).flatMap(([t, f, on]) => [
    `DROP TRIGGER IF EXISTS ${t}_change ON ${t}`,
    `CREATE TRIGGER ${t}_change AFTER ${on} ON ${t} FOR EACH ROW EXECUTE FUNCTION pithos_change_${f}()`,
  ]),
];

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
      (t) => `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS version INT8 NOT NULL DEFAULT nextval('pithos_seq')`,
    ),
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
    statements: [`UPDATE pithos_tables AS t SET row_count = (SELECT count(*) FROM pithos_rows AS r WHERE r.tname = t.name AND r.inc = t.inc)`],
  },
  {
    version: 5,
    name: 'change feed: pithos_changes, written by triggers',
    statements: FEED,
    postgresOnly: true,
  },
  {
    version: 6,
    name: 'lists: pithos_lists and one row per item',
    // Items are keyed by (list, position), the log store's dense signed
    // positions (src/store/postgres/lists.ts); the name index in "C" order
    // serves the listing as migration 3's do.
    statements: [
      `CREATE TABLE IF NOT EXISTS pithos_lists (
         name TEXT PRIMARY KEY, head INT8 NOT NULL, tail INT8 NOT NULL, expires_at INT8, version INT8 NOT NULL)`,
      `CREATE INDEX IF NOT EXISTS pithos_lists_name_c ON pithos_lists ((name COLLATE "C"))`,
      `CREATE TABLE IF NOT EXISTS pithos_list_items (
         name TEXT NOT NULL, pos INT8 NOT NULL, v TEXT NOT NULL, PRIMARY KEY (name, pos))`,
    ],
  },
  {
    version: 7,
    name: 'sets and sorted sets: a header row each and one row per member; what each collection write was for',
    // Members are bytea (their UTF-8 bytes): byte order is the contract's
    // order, and a member may hold U+0000. (name, score, member) is the
    // sorted-set order, walked by ranges and counted for ranks
    // (src/store/postgres/zsets.ts). `op` and `op_data` name the element
    // operation a header write was for, for the change feed (migration 8);
    // '' marks a header inserted only to be locked (collections.ts).
    statements: [
      ...['pithos_sets', 'pithos_zsets'].flatMap((t) => [
        `CREATE TABLE IF NOT EXISTS ${t} (
           name TEXT PRIMARY KEY, count INT8 NOT NULL, expires_at INT8, version INT8 NOT NULL, op TEXT, op_data TEXT)`,
        `CREATE INDEX IF NOT EXISTS ${t}_name_c ON ${t} ((name COLLATE "C"))`,
        `CREATE INDEX IF NOT EXISTS ${t}_exp ON ${t} (expires_at)`,
      ]),
      `CREATE TABLE IF NOT EXISTS pithos_set_members (
         name TEXT NOT NULL, member BYTEA NOT NULL, PRIMARY KEY (name, member))`,
      `CREATE TABLE IF NOT EXISTS pithos_zset_members (
         name TEXT NOT NULL, member BYTEA NOT NULL, score FLOAT8 NOT NULL, PRIMARY KEY (name, member))`,
      'CREATE INDEX IF NOT EXISTS pithos_zset_members_order ON pithos_zset_members (name, score, member)',
      'ALTER TABLE pithos_lists ADD COLUMN IF NOT EXISTS op TEXT',
      'ALTER TABLE pithos_lists ADD COLUMN IF NOT EXISTS op_data TEXT',
    ],
  },
  {
    version: 8,
    name: 'change feed: lists, sets and sorted sets, with the element operation of each change',
    // As migration 5 does for the other kinds: the header row's version is
    // stamped after the transaction has its id, and every version it gets
    // is a put carrying the header's `op` and `op_data` (the operation's
    // arguments and result, or a whole list's items); a header deleted is a
    // delete, or an expiry when the sweeper deletes it. A header in the
    // placeholder state (op '') is no change.
    statements: [
      'ALTER TABLE pithos_changes ADD COLUMN IF NOT EXISTS op TEXT',
      `CREATE OR REPLACE FUNCTION pithos_change_collection() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'DELETE' THEN
           IF OLD.op IS DISTINCT FROM '' THEN
             PERFORM pithos_gone(TG_ARGV[0], OLD.name, NULL, OLD.version);
           END IF;
         ELSIF NEW.op IS DISTINCT FROM '' THEN
           INSERT INTO pithos_changes (pos, version, type, kind, name, value, op)
             VALUES (NEW.version, NEW.version, 'put', TG_ARGV[0], NEW.name, NEW.op_data, NEW.op);
         END IF;
         RETURN NULL;
       END $$`,
      ...(
        [
          ['pithos_lists', 'list'],
          ['pithos_sets', 'set'],
          ['pithos_zsets', 'zset'],
        ] as const
      ).flatMap(([t, kind]) => [
        `DROP TRIGGER IF EXISTS ${t}_stamp ON ${t}`,
        `CREATE TRIGGER ${t}_stamp BEFORE INSERT OR UPDATE OF version ON ${t} FOR EACH ROW EXECUTE FUNCTION pithos_stamp()`,
        `DROP TRIGGER IF EXISTS ${t}_change ON ${t}`,
        `CREATE TRIGGER ${t}_change AFTER INSERT OR UPDATE OF version OR DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION pithos_change_collection('${kind}')`,
      ]),
    ],
    postgresOnly: true,
  },
  {
    version: 9,
    name: 't_ids from a sequence per table incarnation; row counts in one slot per backend',
    // So that inserts into one table hold no lock another insert waits for
    // (src/store/postgres/tables.ts). next_id is no longer kept.
    statements: [
      `CREATE TABLE IF NOT EXISTS pithos_row_counts (
         tname TEXT NOT NULL, inc INT8 NOT NULL, slot INT8 NOT NULL, n INT8 NOT NULL, PRIMARY KEY (tname, inc, slot))`,
      'ALTER TABLE pithos_tables ALTER COLUMN next_id DROP NOT NULL',
    ],
  },
  {
    version: 10,
    name: 'row counts of existing tables',
    // A separate transaction, as migration 4 (CockroachDB). An existing
    // table gets its t_id sequence at its first insert after this
    // (tables.ts, withSequences), started above its counter and its rows:
    // one transaction creating thousands of sequences could run out of
    // lock slots.
    statements: [
      'INSERT INTO pithos_row_counts (tname, inc, slot, n) SELECT name, inc, 0, row_count FROM pithos_tables ON CONFLICT (tname, inc, slot) DO NOTHING',
    ],
  },
  {
    version: 11,
    name: 'group commit: pithos_group, a batch of single-object writes in one statement',
    // src/store/postgres/group-sql-11.ts; without it (not PostgreSQL) every write goes alone.
    statements: [GROUP_FUNCTION_11],
    postgresOnly: true,
  },
  {
    version: 12,
    name: 'group commit: set remove, sorted-set add, incr and remove, record patch in pithos_group',
    // src/store/postgres/group-sql-12.ts: CREATE OR REPLACE, the ops of migration 11 included.
    statements: MIGRATION_12,
    postgresOnly: true,
  },
  {
    version: 13,
    name: "group commit: a batch's increments of distinct counters in one statement",
    // src/store/postgres/group-sql.ts: pithos_group_increments, and pithos_group calling it.
    statements: GROUP_STATEMENTS,
    postgresOnly: true,
  },
  {
    version: 14,
    name: 'group commit: a batch of increments only, as arrays, in one statement',
    // src/store/postgres/group-sql.ts: pithos_group_counters, which group-commit.ts sends such a batch to.
    statements: [COUNTERS_FUNCTION],
    postgresOnly: true,
  },
];

// 42710: a concurrent CREATE TABLE IF NOT EXISTS can fail on the table's row type ('type … already exists').
const RACES = new Set(['23505', '42P07', '42710', '40001', '40P01']);

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
      const r = await c.query('INSERT INTO pithos_migrations (version, name) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING RETURNING version', [
        m.version,
        m.name,
      ]);
      if (r.rows.length === 0) {
        await c.query('ROLLBACK');
        continue;
      }
      if (m.postgresOnly === undefined || (await isPostgres(c))) {
        for (const s of m.statements) await c.query(s);
      } else {
        await c.query("UPDATE pithos_migrations SET name = name || ' (skipped: not PostgreSQL 13 or newer)' WHERE version = $1", [m.version]);
      }
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

/** PostgreSQL itself, 13 or newer (not CockroachDB or YugabyteDB, which speak its protocol). */
async function isPostgres(c: pg.ClientBase): Promise<boolean> {
  const r = await c.query("SELECT version() AS v, current_setting('server_version_num')::int AS n");
  const v = String(r.rows[0].v);
  return v.startsWith('PostgreSQL ') && !/cockroach|-YB-/i.test(v) && Number(r.rows[0].n) >= 130000;
}

/** Whether the change feed's capture is installed (migration 5 ran, on PostgreSQL). */
export async function hasFeed(pool: pg.Pool): Promise<boolean> {
  const r = await pool.query("SELECT to_regclass('pithos_changes') IS NOT NULL AS ok");
  return r.rows[0].ok === true;
}

/** Whether group commit's function is installed (migration 11 ran, on PostgreSQL). */
export async function hasGroup(pool: pg.Pool): Promise<boolean> {
  const r = await pool.query("SELECT to_regproc('pithos_group') IS NOT NULL AS ok");
  return r.rows[0].ok === true;
}
