/**
 * The PostgreSQL store's access to the database: one pool, statements that
 * fail in the caller's terms (StoreError), and `run`, the one way to make a
 * multi-statement change atomic (BEGIN … COMMIT, retried on serialization
 * failures and deadlocks, bounded).
 *
 * Time: every expiry is compared with the database's clock (`now()`, the
 * transaction's start), never with a node's own, so ttl expiry is the same
 * instant for every node (docs/scaling.md). `offsetMs` is the test clock's
 * offset (PITHOS_TEST_CLOCK), an integer inlined into the SQL.
 */
import pg from 'pg';
import { StoreError, storageFull } from '../errors.js';

/** What the namespace code runs statements on: the pool (one statement each) or one transaction's client. */
export interface Q {
  query(text: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /** SQL for "now" in ms since the epoch, on the database's clock. */
  readonly now: string;
  /** SQL: the object whose expiry column is `col` is live (not expired). */
  live(col?: string): string;
  /** SQL: the absolute expiry (ms) for a ttl in seconds held in parameter `param` (0 = never, NULL). */
  expiry(param: string): string;
}

export interface PgOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  /** Milliseconds added to the database's clock (the test clock); 0 in production. */
  offsetMs: () => number;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/** Attempts of one transaction on serialization failures (40001) or deadlocks (40P01) before 503. */
export const MAX_ATTEMPTS = 20;

const RETRYABLE = new Set(['40001', '40P01']);

/** Jittered exponential wait before attempt `attempt + 1`: 2, 4, 8 … ms, at most 250. */
const backoff = (attempt: number): Promise<void> =>
  new Promise((r) => setTimeout(r, (0.5 + Math.random()) * Math.min(250, 2 ** attempt)));

export function isRetryable(err: unknown): boolean {
  return typeof (err as { code?: unknown })?.code === 'string' && RETRYABLE.has((err as { code: string }).code);
}

/**
 * A failure of the database or of the way to it, as the client should see
 * it: a StoreError('unavailable') for anything transient (connection
 * refused or lost, shutdown, statement timeout, too many connections), the
 * error itself otherwise (a bug in SQL stays a 500).
 */
export function mapError(err: unknown, statementTimeoutMs: number): unknown {
  if (err instanceof StoreError) return err;
  const e = err as { code?: unknown; severity?: unknown; message?: unknown };
  if (typeof e?.severity !== 'string') {
    // Not an answer from the server: the connection failed, was lost or timed
    // out. The details (addresses) go to the server log (noteDown), not to clients.
    return new StoreError('unavailable', 'the database is unreachable; try again');
  }
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === '57014') return new StoreError('unavailable', `the database did not answer within the statement timeout of ${statementTimeoutMs} ms; try again`);
  if (isRetryable(err)) return new StoreError('unavailable', `the database could not serialize this change with concurrent ones; try again`);
  // disk_full: the database's disk, reported as the log store reports its own.
  if (code === '53100') return storageFull();
  if (/^(08|53|57|58)/.test(code)) return new StoreError('unavailable', `the database is unavailable (${code}); try again`);
  return err;
}

export class Db {
  readonly pool: pg.Pool;
  /** Statements on the pool, one transaction each. */
  readonly q: Q;
  private downSince = 0;

  constructor(readonly opts: PgOptions) {
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize,
      statement_timeout: opts.statementTimeoutMs,
      // Do not let a request wait forever for a database that is down.
      connectionTimeoutMillis: Math.max(1000, Math.min(opts.statementTimeoutMs, 5000)),
      idleTimeoutMillis: 30_000,
    });
    // An idle connection that breaks (database restarted) is dropped by the
    // pool; without a listener the error would end the process.
    this.pool.on('error', (err) => this.noteDown(err));
    const pool = this.pool;
    // A single statement is its own transaction; on a serialization failure
    // (CockroachDB, YugabyteDB) or deadlock it is simply run again.
    this.q = this.view({
      async query(text, values) {
        for (let attempt = 1; ; attempt++) {
          try {
            return await pool.query(text, values);
          } catch (err) {
            if (!isRetryable(err)) throw err;
            if (attempt >= MAX_ATTEMPTS) {
              throw new StoreError('unavailable', `the change conflicted with concurrent ones ${MAX_ATTEMPTS} times; nothing was changed; try again`);
            }
            await backoff(attempt);
          }
        }
      },
    });
  }

  /** A Q over anything with a query method. */
  private view(c: { query(text: string, values?: unknown[]): Promise<pg.QueryResult> }): Q {
    const offset = this.opts.offsetMs;
    const timeout = this.opts.statementTimeoutMs;
    const up = (): void => this.noteUp();
    const down = (e: unknown): void => this.noteDown(e);
    const q: Q = {
      async query(text, values) {
        try {
          const r = await c.query(text, values);
          up();
          return r.rows as Record<string, unknown>[];
        } catch (err) {
          const m = mapError(err, timeout);
          if (m instanceof StoreError && m.kind === 'unavailable' && !isRetryable(err)) down(err);
          // Retryable failures reach `run` (or the pool loop) as they are.
          throw isRetryable(err) ? err : m;
        }
      },
      get now() {
        return `(floor(extract(epoch from now()) * 1000)::int8 + ${Math.trunc(offset())})`;
      },
      live(col = 'expires_at') {
        return `(${col} IS NULL OR ${col} > ${q.now})`;
      },
      expiry(param) {
        return `(CASE WHEN ${param}::int8 = 0 THEN NULL ELSE ${q.now} + ${param}::int8 * 1000 END)`;
      },
    };
    return q;
  }

  private noteDown(err: unknown): void {
    if (this.downSince !== 0) return;
    this.downSince = Date.now();
    this.opts.log('warn', `database unavailable: ${(err as Error)?.message ?? String(err)}; answering 503 until it is back`);
  }

  private noteUp(): void {
    if (this.downSince === 0) return;
    this.opts.log('info', `database reachable again after ${Date.now() - this.downSince} ms`);
    this.downSince = 0;
  }

  /**
   * Runs `fn` in one transaction (SERIALIZABLE when asked): all of it or
   * nothing. Serialization failures and deadlocks roll back and run again,
   * at most MAX_ATTEMPTS times, then 503. A StoreError from `fn` rolls back
   * and is the answer.
   */
  async run<T>(fn: (q: Q) => Promise<T>, serializable = false): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const c = await this.checkout();
      let retry = false;
      try {
        await c.q.query(serializable ? 'BEGIN ISOLATION LEVEL SERIALIZABLE' : 'BEGIN');
        const out = await fn(c.q);
        await c.q.query('COMMIT');
        return out;
      } catch (err) {
        await c.rollback();
        if (!isRetryable(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          throw new StoreError('unavailable',
            `the transaction conflicted with concurrent ones ${MAX_ATTEMPTS} times (serialization failure); nothing was changed; try again`);
        }
        retry = true;
      } finally {
        c.release();
      }
      if (retry) await backoff(attempt);
    }
  }

  /**
   * A read-only REPEATABLE READ transaction on a connection of its own, for
   * reading one instant of the data in several statements (a cursor:
   * cursor.ts). `close` ends it and returns the connection; it must be
   * called, once the reading is done or abandoned.
   */
  async reader(): Promise<Reader> {
    const c = await this.checkout();
    let open = true;
    const close = (): void => {
      if (!open) return;
      open = false;
      void c.rollback().finally(() => c.release());
    };
    try {
      await c.q.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    } catch (err) {
      close();
      throw err;
    }
    return { q: c.q, close };
  }

  /**
   * A connection of the pool for several statements. A connection that
   * breaks between two of them emits 'error' on the checked-out client
   * (unheard, that would end the process); it is then destroyed on release
   * instead of going back to the pool.
   */
  private async checkout(): Promise<{ q: Q; rollback(): Promise<void>; release(): void }> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      this.noteDown(err);
      throw mapError(err, this.opts.statementTimeoutMs);
    }
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken = err;
      this.noteDown(err);
    };
    client.on('error', onError);
    return {
      q: this.view(client),
      rollback: async () => {
        try {
          await client.query('ROLLBACK');
        } catch (e) {
          broken = e as Error;
        }
      },
      release: () => {
        client.removeListener('error', onError);
        client.release(broken);
      },
    };
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/** One read-only transaction (Db.reader). */
export interface Reader {
  readonly q: Q;
  close(): void;
}
