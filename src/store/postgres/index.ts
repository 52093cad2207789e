/**
 * The shared store: every namespace and transaction over a PostgreSQL-wire
 * database (PostgreSQL, CockroachDB, YugabyteDB), so any number of Pithos
 * nodes serve the same data (docs/scaling.md). Nodes
 * keep no state of their own: every answer comes from the database, every
 * expiry is checked in the query against the database's clock.
 *
 * Physically removing expired objects is the sweeper's job: every node runs
 * it every SWEEP_MS (it is idempotent, so no election is needed); until it
 * runs, expired objects are already invisible.
 */
import type { BatchObserver, Holding, ListKind, ListOptions, Store, StoreAvailability, StoreStats, Transaction } from '../store.js';
import { PgChanges } from './changes.js';
import { GroupCommit } from './group-commit.js';
import { hasFeed, hasGroup, MIGRATIONS, migrate, schemaVersion } from './schema.js';
import { Db, isUnavailable, type PgOptions } from './sql.js';
import { PgIndexes } from './indexes.js';
import { holders, list } from './listing.js';
import { PgLocks } from './locks.js';
import { PgLists } from './lists.js';
import { PgMessages } from './bus.js';
import { PgRecords } from './records.js';
import { PgSets } from './sets.js';
import { PgTables } from './tables.js';
import { forgetIncarnation, sweepCounts } from './tids.js';
import { transact } from './txns.js';
import { PgVariants } from './variants.js';
import { PgZsets } from './zsets.js';

export type { PgOptions } from './sql.js';

const SWEEP_MS = 10_000;
/** While this node has watchers, expiries are looked for this often, so `expire` events come soon after the ttl ends. */
const WATCHED_SWEEP_MS = 1_000;
/** Released or expired lock rows stay this long, so fences are always taken under the row's lock. */
const LOCK_ROW_GRACE_MS = 3_600_000;

const SWEEPING = "SELECT set_config('pithos.sweep', 'on', true)";

/** The keys of `table`'s expired rows that no other transaction holds, locked for the sweeper (`also`: a further condition). */
const expiredRows = (now: string, table: string, key: string, also = '', limit?: number): string =>
  `SELECT ${key} FROM ${table} WHERE ${also}expires_at <= ${now}${limit === undefined ? '' : ` LIMIT ${limit}`} FOR UPDATE SKIP LOCKED`;

/** Expired collections a sweep transaction removes at most: their names travel through this node. */
const SWEEP_CHUNK = 5_000;

export class PgStore implements Store {
  readonly tables: PgTables;
  readonly records: PgRecords;
  readonly variants: PgVariants;
  readonly locks: PgLocks;
  readonly indexes: PgIndexes;
  readonly lists: PgLists;
  readonly sets: PgSets;
  readonly zsets: PgZsets;
  readonly messages: PgMessages;
  readonly answersAtOnce = false;

  together<O extends object, A, T>(owner: O, run: (owner: O, arg: A) => T, arg: A): T {
    // Statements are batched by the group commit (group-commit.ts), not by caller.
    return run(owner, arg);
  }
  /** The change feed; absent on a database without it (not PostgreSQL 13+: docs/scaling.md). */
  changes: PgChanges | undefined = undefined;
  private gcState: 0 | 1 | 2 = 0;
  private sweeper: NodeJS.Timeout | undefined;
  private nextSweep = Date.now() + SWEEP_MS * (0.5 + Math.random());
  private closed = false;

  private constructor(
    private readonly db: Db,
    private readonly group: GroupCommit | undefined,
  ) {
    this.indexes = new PgIndexes(db);
    // Each call from the HTTP layer is one operation with one deadline for all its database work (deadline.ts); stats() is one statement.
    this.tables = db.ops.bound(new PgTables(db, this.indexes));
    this.records = db.ops.bound(new PgRecords(db, group));
    this.variants = db.ops.bound(new PgVariants(db, group));
    this.locks = db.ops.bound(new PgLocks(db));
    this.lists = db.ops.bound(new PgLists(db, group));
    this.sets = db.ops.bound(new PgSets(db, group));
    this.zsets = db.ops.bound(new PgZsets(db, group));
    this.messages = new PgMessages(db);
  }

  /**
   * Connects and migrates. While no writable primary answers (the database
   * is unreachable, or a standby) this waits and tries again, logging why,
   * so nodes may start before the database or during a failover.
   */
  static async open(opts: PgOptions): Promise<PgStore> {
    const db = new Db(opts);
    await db.waitForPrimary();
    for (let attempt = 1; ; attempt++) {
      try {
        const applied = await migrate(db.pool);
        const v = await schemaVersion(db.pool);
        const known = MIGRATIONS[MIGRATIONS.length - 1].version;
        if (applied.length > 0) opts.log('info', `shared store: applied schema migration(s) ${applied.join(', ')}`);
        if (v > known) opts.log('warn', `shared store: the database schema is version ${v}, newer than this node knows (${known}); upgrade this node`);
        break;
      } catch (err) {
        if (!isUnavailable(err)) {
          await db.close().catch((e: unknown) => opts.log('warn', `shared store: closing the pool failed: ${String((e as Error)?.message ?? e)}`));
          throw err;
        }
        opts.log('warn', `shared store: cannot migrate the schema: ${(err as Error)?.message ?? String(err)} (attempt ${attempt}; retrying every second)`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    // Group commit needs pithos_group (PostgreSQL only); elsewhere every write goes alone.
    const s = new PgStore(db, (await hasGroup(db.pool)) ? new GroupCommit(db) : undefined);
    await s.indexes.init();
    if (await hasFeed(db.pool)) s.changes = await PgChanges.start(db);
    else opts.log('warn', 'shared store: the database has no change feed (it needs PostgreSQL 13 or newer); GET /watch answers 503');
    s.schedule();
    return s;
  }

  private schedule(): void {
    if (this.closed) return;
    // Jitter spreads the nodes' sweeps apart.
    this.sweeper = setTimeout(
      () => {
        if (this.changes?.watched !== true && Date.now() < this.nextSweep) return this.schedule();
        this.nextSweep = Date.now() + SWEEP_MS * (0.5 + Math.random());
        void this.sweep().finally(() => this.schedule());
      },
      WATCHED_SWEEP_MS * (0.5 + Math.random()),
    );
    this.sweeper.unref();
  }

  /** Removes expired objects; after a failure the next round tries again (expired objects are invisible meanwhile). */
  async sweep(): Promise<void> {
    this.gcState = 1;
    const q = this.db.q;
    try {
      for (const t of await q.query(`SELECT name, inc FROM pithos_tables WHERE expires_at <= ${q.now}`)) {
        await this.db.run(async (tx) => {
          if (this.changes !== undefined) await tx.query(SWEEPING);
          const r = await tx.query(`DELETE FROM pithos_tables WHERE name = $1 AND inc = $2 AND expires_at <= ${tx.now} RETURNING 1`, [t.name, t.inc]);
          if (r.length > 0) await forgetIncarnation(tx, t.name as string, Number(t.inc));
        });
      }
      // One transaction marked as the sweeper's: the change feed reports these deletes as expiries.
      // Each statement takes only rows no one else holds (SKIP LOCKED), so the sweeper never waits
      // for a writer: a batch locks its rows in name order, and a sweep that waited in scan order
      // could close a cycle with it. A row skipped now is expired for every reader meanwhile, and the
      // next round takes it.
      await this.db.run(async (tx) => {
        if (this.changes !== undefined) await tx.query(SWEEPING);
        await tx.query(`DELETE FROM pithos_records WHERE id IN (${expiredRows(tx.now, 'pithos_records', 'id')})`);
        await tx.query(`DELETE FROM pithos_variants WHERE name IN (${expiredRows(tx.now, 'pithos_variants', 'name')})`);
        // An expired lease: its token emptied (an expiry in the feed), the row kept for its fence.
        await tx.query(`UPDATE pithos_locks SET token = '' WHERE name IN (${expiredRows(tx.now, 'pithos_locks', 'name', "token <> '' AND ")})`);
      });
      await q.query(`DELETE FROM pithos_locks WHERE name IN (${expiredRows(`${q.now} - ${LOCK_ROW_GRACE_MS}`, 'pithos_locks', 'name')})`);
      // Expired lists, sets and sorted sets with their elements, SWEEP_CHUNK headers per transaction
      // marked as the sweeper's (expiries in the feed); a write that finds one expired empties it
      // itself. The headers are locked before their elements, as every writer of a collection does.
      for (const [head, elems] of [
        ['pithos_lists', 'pithos_list_items'],
        ['pithos_sets', 'pithos_set_members'],
        ['pithos_zsets', 'pithos_zset_members'],
      ]) {
        let swept: number;
        do {
          swept = await this.db.run(async (tx) => {
            if (this.changes !== undefined) await tx.query(SWEEPING);
            const gone = (await tx.query(expiredRows(tx.now, head, 'name', '', SWEEP_CHUNK))).map((r) => r.name as string);
            if (gone.length === 0) return 0;
            // The elements go in a statement of their own, after the headers are held: its snapshot
            // has every element a writer added before it let go of the header, and none can be added now.
            await tx.query(`DELETE FROM ${elems} WHERE name = ANY($1::text[])`, [gone]);
            await tx.query(`DELETE FROM ${head} WHERE name = ANY($1::text[])`, [gone]);
            return gone.length;
          });
        } while (swept === SWEEP_CHUNK && !this.closed);
      }
      await this.changes?.prune(Date.now());
      // Index definitions of tables that are gone, database indexes nothing uses, builds that stopped.
      await this.indexes.sweep();
      await sweepCounts(q);
    } catch (err) {
      this.sweepFailed(err);
    } finally {
      this.gcState = 2;
    }
  }

  /**
   * Nothing is lost by sweeping later, but a round that keeps failing must be
   * seen. Db counts every failure of the database (/metrics'
   * pithos_store_unavailable_total) and Primary logs it once when the database
   * goes away, so that case stays quiet here; every other failure (a SQL
   * error, a statement timeout while the primary is up) is logged with its
   * cause. A round cut short by close() is the close's doing.
   */
  private sweepFailed(err: unknown): void {
    if (this.closed || this.db.primary.availability().state !== 'up') return;
    this.db.opts.log('warn', `shared store: a sweep of expired objects failed: ${String((err as Error)?.message ?? err)}; the next round tries again`);
  }

  /** Whether a writable primary answered lately, and the counts behind /health and /metrics (cached, no query). */
  availability(): StoreAvailability {
    return this.db.primary.availability();
  }

  /** Group commit's batches, for /metrics (none without pithos_group). */
  observeBatches(o: BatchObserver): void {
    this.group?.observe(o);
  }

  list(kind: ListKind, opts: ListOptions): Promise<string> {
    return this.db.ops.run(() => list(this.db.q, kind, opts));
  }

  holders(name: string, kinds: readonly ListKind[]): Promise<Array<Holding | null>> {
    return this.db.ops.run(() => holders(this.db.q, name, kinds));
  }

  transact(txn: Transaction): Promise<string> {
    return this.db.ops.run(() => transact(this.db, txn));
  }

  /**
   * Figures for the whole shared store, the same from every node: live
   * top-level objects, and the bytes of their names and values. Exact, so
   * it costs a scan of the data; gc_state is this node's sweeper.
   */
  async stats(): Promise<StoreStats> {
    const q = this.db.q;
    const live = q.live();
    const r = await q.query(`SELECT
      (SELECT count(*) FROM pithos_tables WHERE ${live}) +
      (SELECT count(*) FROM pithos_records WHERE ${live}) +
      (SELECT count(*) FROM pithos_variants WHERE ${live}) +
      (SELECT count(*) FROM pithos_locks WHERE ${live}) +
      (SELECT count(*) FROM pithos_lists WHERE ${live}) +
      (SELECT count(*) FROM pithos_sets WHERE ${live}) +
      (SELECT count(*) FROM pithos_zsets WHERE ${live}) AS keys,
      (SELECT coalesce(sum(octet_length(name)), 0) FROM pithos_tables WHERE ${live}) +
      (SELECT coalesce(sum(octet_length(r.body) + 8), 0) FROM pithos_rows r JOIN pithos_tables t ON t.name = r.tname AND t.inc = r.inc
         WHERE ${q.live('t.expires_at')}) +
      (SELECT coalesce(sum(octet_length(id) + octet_length(body)), 0) FROM pithos_records WHERE ${live}) +
      (SELECT coalesce(sum(octet_length(name) + octet_length(v)), 0) FROM pithos_variants WHERE ${live}) +
      (SELECT coalesce(sum(octet_length(name) + octet_length(token) + octet_length(holder) + 40), 0) FROM pithos_locks WHERE ${live}) AS bytes`);
    return { keyCount: Number(r[0].keys), gcState: this.gcState, liveBytes: Number(r[0].bytes) };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.sweeper);
    this.changes?.close();
    this.lists.stopWaiting();
    this.messages.close();
    this.indexes.close();
    await this.db.close();
  }
}
