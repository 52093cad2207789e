/**
 * The change feed of the shared store (docs/scaling.md, "The change feed").
 * Triggers record every change in pithos_changes in the writing transaction
 * (schema.ts, migration 5); each node reads that table in `pos` order and
 * publishes what it finds to its own watchers, so every node publishes the
 * same sequence.
 *
 * The one hard part is when a position may be published. Positions are
 * drawn when a statement runs, transactions commit later and in any order:
 * a transaction holding 10 may commit after one holding 11, and a watcher
 * that resumes after 11 would never see 10. So a node publishes only below
 * a watermark that no open transaction can still commit under:
 *
 * 1. read the sequence's last value L (every position ≤ L has been drawn);
 * 2. then, in a later statement, the database's snapshot S, whose `xip`
 *    lists the transactions open at that instant;
 * 3. once every transaction in that list has ended, L is safe.
 *
 * That holds because the triggers take the transaction's id before they
 * draw a position: a transaction holding a position ≤ L had its id before
 * step 1, so at step 2 it had either ended or was listed. The watermark
 * trails the slowest open write transaction (bounded by the statement
 * timeout); a session that keeps a write transaction open delays the feed,
 * it never loses a change.
 */
import { StoreError } from '../errors.js';
import type { Change, ChangeFeed, ChangeKind } from '../store.js';
import { variantValue } from '../variant.js';
import { History } from './history.js';
import { DRAWN } from './schema.js';
import type { Db } from './sql.js';

/** How often a node looks for new changes while it has watchers, and without. */
const POLL_MS = 50;
const IDLE_POLL_MS = 1000;
/** One read of the change table: at most this many changes, and about this many bytes of values. */
const PAGE_ROWS = 1000;
const PAGE_BYTES = 256 << 10;
/** Marks kept while transactions stay open; older ones are merged (which only delays). */
const MAX_MARKS = 64;
/** How long a change stays replayable (`since`, Last-Event-ID). */
export const FEED_RETENTION_MS = 3_600_000;

interface Mark {
  /** The sequence's last value, read before the snapshot. */
  upto: number;
  /** Transactions open at the snapshot taken after it. */
  open: number[];
}

interface Snapshot {
  xmin: number;
  xmax: number;
  open: Set<number>;
}

/** pg_snapshot text: `xmin:xmax:xip,xip,…`. */
function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, xip] = text.split(':');
  return { xmin: Number(xmin), xmax: Number(xmax), open: new Set(xip === '' || xip === undefined ? [] : xip.split(',').map(Number)) };
}

/** Whether every transaction of `open` has ended by snapshot `s` (committed or rolled back). */
const ended = (open: readonly number[], s: Snapshot): boolean => open.every((x) => x < s.xmin || (x < s.xmax && !s.open.has(x)));

/**
 * One page of (after, upto] in position order, cut after about PAGE_BYTES of
 * values (always at least one change), with the floor read in the same
 * statement, so the two agree.
 */
const SELECT_PAGE = `
  WITH f AS (SELECT floor FROM pithos_feed WHERE id = 1),
  c AS (SELECT pos, version, type, kind, name, t_id, value, op,
               sum(coalesce(octet_length(value), 0)) OVER (ORDER BY pos) - coalesce(octet_length(value), 0) AS before_bytes
        FROM pithos_changes WHERE pos > $1 AND pos <= $2 AND ($3 OR type <> 'expire') ORDER BY pos LIMIT ${PAGE_ROWS}),
  n AS (SELECT count(*) AS n FROM c)
  SELECT f.floor, n.n, k.* FROM f CROSS JOIN n LEFT JOIN (SELECT * FROM c WHERE before_bytes < ${PAGE_BYTES}) k ON true ORDER BY k.pos`;

interface Page {
  floor: number;
  changes: Change[];
  /** The last position read, or undefined when the range holds nothing. */
  last: number | undefined;
  /** Whether the range may hold more after `last`. */
  more: boolean;
}

export class PgChanges implements ChangeFeed {
  private readonly listeners = new Set<(batch: readonly Change[]) => void>();
  private readonly gaps = new Set<(version: number) => void>();
  /** Everything at or below it is published (or, without listeners, passed). */
  private emitted = 0;
  /** Safe to publish up to here. */
  private safe = 0;
  private marks: Mark[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  /** Callers of reach() waiting for the feed to pass a version. */
  private waiters: Array<{ version: number; done: () => void }> = [];

  private readonly history: History;

  private constructor(private readonly db: Db) {
    this.history = new History(db.q, db.opts.log);
  }

  /** Starts polling once the first watermark is known (at most a transaction's length). */
  static async start(db: Db): Promise<PgChanges> {
    const c = new PgChanges(db);
    const floor = await db.q.query('SELECT floor FROM pithos_feed WHERE id = 1');
    c.emitted = c.safe = Number(floor[0]?.floor ?? 0);
    // The database's identity, known from the start: a failover before the first poll would
    // otherwise be the first identity this node sees, and its watchers never told (history.ts).
    await c.history.changed(c.emitted, false);
    // Where a new watcher starts: the first watermark, waited for up to ~2 s (an open write
    // transaction holds it); later watchers start from what the polls have reached.
    await c.advance();
    for (let i = 0; i < 200 && c.marks.length !== 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      await c.advance();
    }
    c.emitted = c.safe;
    c.schedule();
    return c;
  }

  /** Whether this node has watchers (the sweeper then looks for expiries more often). */
  get watched(): boolean {
    return this.listeners.size > 0;
  }

  get lastVersion(): number {
    return this.emitted;
  }

  subscribe(fn: (batch: readonly Change[]) => void, gap?: (version: number) => void): () => void {
    this.listeners.add(fn);
    if (gap !== undefined) this.gaps.add(gap);
    if (this.listeners.size === 1) this.kick();
    return () => {
      this.listeners.delete(fn);
      if (gap !== undefined) this.gaps.delete(gap);
    };
  }

  /** Resolves once the feed has published up to `version`, or after `ms`. */
  reach(version: number, ms: number): Promise<void> {
    if (this.emitted >= version) return Promise.resolve();
    return new Promise((resolve) => {
      const w = {
        version,
        done: (): void => {
          clearTimeout(t);
          resolve();
        },
      };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve();
      }, ms);
      this.waiters.push(w);
      this.kick();
    });
  }

  async replay(after: number, upto: number, fn: (batch: readonly Change[]) => void): Promise<boolean> {
    let from = after;
    for (;;) {
      const p = await this.page(from, upto, false);
      // Read with the page in one statement: nothing above the floor was pruned.
      if (from < p.floor) return false;
      if (p.changes.length > 0) fn(p.changes);
      if (!p.more || p.last === undefined) return true;
      from = p.last;
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.waiters) w.done();
    this.waiters = [];
  }

  /** Prunes changes older than the retention, recording positions by time (called by the sweeper). */
  async prune(nowMs: number): Promise<void> {
    const q = this.db.q;
    await q.query(`INSERT INTO pithos_feed_marks (at, pos) SELECT $1, ${DRAWN} FROM pithos_seq ON CONFLICT (at) DO NOTHING`, [nowMs]);
    const cut = await q.query('SELECT max(pos) AS pos FROM pithos_feed_marks WHERE at < $1', [nowMs - FEED_RETENTION_MS]);
    if (cut[0].pos === null) return;
    // Never past what this node has published: a transaction open longer than the
    // retention holds the watermark, and the changes above it are not out yet.
    const pos = Math.min(Number(cut[0].pos), this.emitted);
    // In slices, each with the floor it leaves, so a replay never reads past a hole.
    for (let i = 0; i < 20; i++) {
      const r = await q.query(
        `WITH d AS (DELETE FROM pithos_changes WHERE pos IN (SELECT pos FROM pithos_changes WHERE pos <= $1 ORDER BY pos LIMIT 10000) RETURNING pos)
         UPDATE pithos_feed SET floor = greatest(floor, (SELECT max(pos) FROM d)) WHERE id = 1 AND EXISTS (SELECT 1 FROM d)
         RETURNING (SELECT count(*) FROM d) AS n`,
        [pos],
      );
      if (r.length === 0 || Number(r[0].n) < 10000) break;
    }
    await q.query('UPDATE pithos_feed SET floor = greatest(floor, $1) WHERE id = 1 AND NOT EXISTS (SELECT 1 FROM pithos_changes WHERE pos <= $1)', [pos]);
    await q.query('DELETE FROM pithos_feed_marks WHERE at < $1 AND pos < $2', [nowMs - FEED_RETENTION_MS, pos]);
  }

  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), this.listeners.size > 0 || this.waiters.length > 0 ? POLL_MS : IDLE_POLL_MS);
    this.timer.unref();
  }

  /** Runs one round now (or right after the one running). */
  private kick(): void {
    if (this.closed) return;
    if (this.running !== undefined) return;
    clearTimeout(this.timer);
    this.running = this.round()
      .catch((err: unknown) => {
        // The database away is logged by Db once, not every round; the next round tries again.
        if (!(err instanceof StoreError && (err.kind === 'unreachable' || err.kind === 'unavailable'))) {
          this.db.opts.log('warn', `change feed: a poll failed: ${String((err as Error)?.message ?? err)}; the next round tries again`);
        }
      })
      .finally(() => {
        this.running = undefined;
        this.schedule();
      });
  }

  private async round(): Promise<void> {
    if (await this.history.changed(this.emitted)) {
      // Positions at or below what was published may have been handed out again: those
      // changes cannot be told apart, so watchers re-read (history.ts).
      this.marks = [];
      this.safe = Math.max(this.safe, this.emitted);
      for (const g of this.gaps) g(this.emitted);
    }
    await this.advance();
    if (this.listeners.size === 0) {
      this.emitted = Math.max(this.emitted, this.safe);
    } else {
      while (this.emitted < this.safe && !this.closed) {
        const p = await this.page(this.emitted, this.safe, true);
        if (p.floor > this.emitted) {
          // Changes above what this node published were pruned (it could not reach the
          // database for longer than the retention): its watchers must re-read.
          this.emitted = Math.min(p.floor, this.safe);
          for (const g of this.gaps) g(this.emitted);
        }
        const next = p.more && p.last !== undefined ? p.last : this.safe;
        this.emitted = next;
        if (p.changes.length > 0) for (const fn of this.listeners) fn(p.changes);
      }
    }
    if (this.waiters.length > 0) {
      const due = this.waiters.filter((w) => w.version <= this.emitted);
      this.waiters = this.waiters.filter((w) => w.version > this.emitted);
      for (const w of due) w.done();
    }
  }

  /** Steps 1–3 of the header: a new mark, and the watermark past every mark whose transactions ended. */
  private async advance(): Promise<void> {
    const q = this.db.q;
    // The statement also takes a transaction id, after reading L, so it is above the id of every
    // transaction that drew a position up to L; once it has ended, the snapshot's xmax is above
    // them all, and one still open is listed (pg_current_snapshot() lists only ids below xmax,
    // which is one past the newest ended one: the newest open writer would otherwise be missed).
    const l = await q.query(`SELECT ${DRAWN} AS last_value, pg_current_xact_id() AS x FROM pithos_seq`);
    const s = await q.query('SELECT pg_current_snapshot()::text AS s');
    const snap = parseSnapshot(s[0].s as string);
    this.marks.push({ upto: Number(l[0].last_value), open: [...snap.open] });
    while (this.marks.length > 0 && ended(this.marks[0].open, snap)) {
      this.safe = Math.max(this.safe, (this.marks.shift() as Mark).upto);
    }
    if (this.marks.length > MAX_MARKS) {
      const [a, b] = this.marks.splice(0, 2);
      this.marks.unshift({ upto: Math.max(a.upto, b.upto), open: [...new Set([...a.open, ...b.open])] });
    }
  }

  private async page(after: number, upto: number, expiries: boolean): Promise<Page> {
    const rows = await this.db.q.query(SELECT_PAGE, [after, upto, expiries]);
    const floor = Number(rows[0]?.floor ?? 0);
    const read = Number(rows[0]?.n ?? 0);
    const changes: Change[] = [];
    let last: number | undefined;
    for (const r of rows) {
      if (r.pos === null) break;
      const type = r.type as Change['type'];
      const version = Number(r.version);
      changes.push({
        type,
        kind: r.kind as ChangeKind,
        name: r.name as string,
        version,
        tId: r.t_id === null ? undefined : Number(r.t_id),
        // An expiry is not replayed, so it has no place to resume from (as on the log store).
        id: type === 'expire' ? '' : String(version),
        value: r.value === null ? undefined : r.kind === 'variant' ? variantValue(r.value as string) : (r.value as string),
        // An element operation on a list, set or sorted set: `value` holds its arguments and result.
        op: r.op === null ? undefined : (r.op as string),
      });
      last = Number(r.pos);
    }
    return { floor, changes, last, more: read === PAGE_ROWS || changes.length < read };
  }
}
