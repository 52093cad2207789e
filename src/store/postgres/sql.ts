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
import { BusyError, StoreError, storageFull } from '../errors.js';
import { Operations } from './deadline.js';
import { ENDPOINT, Locator, WrongRoleError, clientClass, parsePgUrl, type Endpoint } from './hosts.js';
import { Primary } from './primary.js';

/**
 * A statement node-postgres sends by name: each connection parses and plans
 * it once (Parse), then only binds and executes it. Its text must never
 * change (values go in parameters), or the connection refuses it.
 */
export interface Named {
  readonly name: string;
  readonly text: string;
}

/** What the namespace code runs statements on: the pool (one statement each) or one transaction's client. */
export interface Q {
  query(text: string | Named, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /** SQL for "now" in ms since the epoch, on the database's clock. */
  readonly now: string;
  /** SQL: the object whose expiry column is `col` is live (not expired). */
  live(col?: string): string;
  /** SQL: the absolute expiry (ms) for a ttl in seconds held in parameter `param` (0 = never, NULL). */
  expiry(param: string): string;
}

export interface PgOptions {
  /** libpq-style URL; several hosts as `h1:5432,h2:5432` (hosts.ts). */
  url: string;
  /** Replaces the URL's host list (`--pg-hosts`). */
  hosts?: string;
  /** Replaces the URL's target_session_attrs (`--pg-target-session-attrs`). */
  targetSessionAttrs?: string;
  poolSize: number;
  /**
   * The bound on one operation's database work: the server cancels a
   * statement running longer (statement_timeout), and this node gives up on
   * an operation (waiting for a connection, its statements, its retries, its
   * COMMIT: one budget, deadline.ts) DEADLINE_SLACK_MS later, whatever the
   * database does.
   */
  statementTimeoutMs: number;
  /** Milliseconds added to the database's clock (the test clock); 0 in production. */
  offsetMs: () => number;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/** Attempts of one transaction on serialization failures (40001) or deadlocks (40P01) before 503. */
export const MAX_ATTEMPTS = 20;

/**
 * How long after the server's own statement timeout this node gives up: a
 * server that answers cancels first (SQLSTATE 57014, the connection stays
 * usable); one that does not answer at all is given up on here.
 */
export const DEADLINE_SLACK_MS = 500;
/** Connect attempt per host when the URL names several (the next host is tried after it). */
const HOST_CONNECT_MS = 2000;

const RETRYABLE = new Set(['40001', '40P01']);

/** Jittered exponential wait before attempt `attempt + 1`: 2, 4, 8 … ms, at most 250. */
const backoff = (attempt: number): Promise<void> => new Promise((r) => setTimeout(r, (0.5 + Math.random()) * Math.min(250, 2 ** attempt)));

export function isRetryable(err: unknown): boolean {
  return typeof (err as { code?: unknown })?.code === 'string' && RETRYABLE.has((err as { code: string }).code);
}

/**
 * A named statement the connection can no longer run as node-postgres
 * believes it prepared it: the server forgot it (26000: a DISCARD, or a
 * pooler that moved the session to another server connection) or refuses
 * its cached plan (0A000: the table changed shape under it, as a migration
 * by a newer node may do). The server refuses it before executing anything,
 * and node-postgres would send it the same way on that connection again, so
 * the connection is discarded.
 */
function isStalePrepared(text: string | Named, err: unknown): boolean {
  if (typeof text === 'string') return false;
  const code = (err as { code?: unknown })?.code;
  return code === '26000' || (code === '0A000' && /cached plan/.test(String((err as { message?: unknown }).message)));
}

/**
 * A string as an SQL literal for `Db.batch`, safe whatever
 * standard_conforming_strings says (pg's escapeLiteral: quotes doubled, and
 * backslashes doubled in an E'' literal).
 */
export function literal(s: string): string {
  return pg.escapeLiteral(s);
}

/** This node gave up waiting for the database (DEADLINE_SLACK_MS past the bound). */
class DeadlineError extends Error {}

/** What a database failure means for the answer, the connection and the node. */
interface Fault {
  error: StoreError;
  /** The connection can no longer be trusted (lost, read-only, mid-statement): destroy it. */
  discard: boolean;
  /** The database (or the way to it) failed, not one statement: not ready, and older connections go. */
  down: boolean;
}

const UNKNOWN_OUTCOME =
  'the change may or may not have been made (as with any database when the connection breaks during a commit); read it back before retrying';

/**
 * The one classification of database failures. Every failure of the
 * database or of the way to it is StoreError('unreachable') (503 with
 * Retry-After). `committing`: the statement was a COMMIT or a statement
 * committing by itself, so a failure without the server's answer leaves
 * the outcome unknown, and the message says so; inside a transaction the
 * server rolls back what it never committed. Undefined: not a database
 * failure (a defect, left a 500).
 */
export function classify(err: unknown, boundMs: number, committing: boolean): Fault | undefined {
  const unknown = (why: string): StoreError => new StoreError('unreachable', `${why}: ${UNKNOWN_OUTCOME}`);
  if (err instanceof DeadlineError) {
    return {
      error: committing
        ? unknown(`the database did not confirm the change within this request's bound (${boundMs + DEADLINE_SLACK_MS} ms)`)
        : new StoreError(
            'unreachable',
            `the database work of this request did not end within its bound (${boundMs + DEADLINE_SLACK_MS} ms); nothing was changed; try again`,
          ),
      discard: true,
      down: false,
    };
  }
  if (err instanceof WrongRoleError) {
    return {
      error: new StoreError('unreachable', 'the database is read-only (a standby, or a primary being demoted in a failover); try again'),
      discard: true,
      down: true,
    };
  }
  const e = err as { code?: unknown; severity?: unknown; message?: unknown };
  if (typeof e?.severity !== 'string') {
    if (typeof e?.message === 'string' && /timeout exceeded when trying to connect/.test(e.message)) {
      // The pool had no free connection in time: the database may be fine, this node is busy.
      return { error: new StoreError('unreachable', `no database connection became free within ${boundMs} ms; try again`), discard: false, down: false };
    }
    // Not an answer from the server: the connection failed or was lost. The details
    // (addresses) go to the server log once (Primary), not to clients.
    return {
      error: committing
        ? unknown('the connection to the database was lost while the change was being committed')
        : new StoreError('unreachable', 'the database is unreachable; try again'),
      discard: true,
      down: true,
    };
  }
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === '25006') {
    return {
      error: new StoreError('unreachable', 'the database is read-only (a standby, or a primary being demoted in a failover); nothing was changed; try again'),
      discard: true,
      down: true,
    };
  }
  if (/^(57P0|08)/.test(code)) {
    return {
      error: committing
        ? unknown(`the database went away (${code}) while the change was being committed`)
        : new StoreError('unreachable', `the database is shutting down, restarting or unreachable (${code}); try again`),
      discard: true,
      down: true,
    };
  }
  if (code === '57014') {
    return {
      error: new StoreError('unreachable', `the database did not answer within the statement timeout of ${boundMs} ms; nothing was changed; try again`),
      discard: false,
      down: false,
    };
  }
  // disk_full: the database's disk, reported as the log store reports its own.
  if (code === '53100') return { error: storageFull(), discard: false, down: false };
  if (/^(53|57|58)/.test(code))
    return { error: new StoreError('unreachable', `the database is unavailable (${code}); try again`), discard: false, down: false };
  return undefined;
}

/** Whether `err` is a failure of the database or the way to it (start-up retries on those). */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof StoreError) return err.kind === 'unreachable';
  return classify(err, 0, false) !== undefined;
}

/** A pooled connection used for one operation (or one reader). */
interface Conn {
  readonly q: Q;
  /** COMMIT; a failure after it was sent is reported as an unknown outcome. */
  commit(): Promise<void>;
  /** ROLLBACK (none on a broken connection), then back to the pool or destroyed. */
  finish(): Promise<void>;
  /** ROLLBACK within a deadline, for a retry on the same path. */
  rollback(): Promise<void>;
  /** Several statements in one simple-protocol query (one round trip); the rows of each. */
  batch(text: string): Promise<Record<string, unknown>[][]>;
  release(): void;
}

type PgClient = pg.PoolClient & { [ENDPOINT]?: Endpoint; connection: { stream: { destroy(err?: Error): void } } };

/** `p`, or a DeadlineError once `ms` have passed (then `late` gets what `p` settles with). */
function within<T>(p: Promise<T>, ms: number, expired: () => void, late?: (v: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const t = setTimeout(
      () => {
        done = true;
        expired();
        reject(new DeadlineError('deadline'));
      },
      Math.max(0, ms),
    );
    p.then(
      (v) => {
        if (done) return late?.(v);
        done = true;
        clearTimeout(t);
        resolve(v);
      },
      (err: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(t);
        reject(err);
      },
    );
  });
}

export class Db {
  readonly pool: pg.Pool;
  /** Statements on the pool, one transaction each. */
  readonly q: Q;
  readonly primary: Primary;
  /** Each store operation's one budget (deadline.ts). */
  readonly ops: Operations;
  private readonly loc: Locator;
  private readonly bound: number;
  /** Connections made before the current generation are discarded when next checked out. */
  private gen = 0;
  private readonly gens = new WeakMap<object, number>();

  /** Readers open (reader()): each holds a connection of the pool. */
  private readers = 0;

  constructor(readonly opts: PgOptions) {
    const t = parsePgUrl(opts.url, opts.hosts, opts.targetSessionAttrs);
    this.loc = new Locator(t.hosts, t.target);
    this.bound = opts.statementTimeoutMs;
    this.ops = new Operations(opts.statementTimeoutMs + DEADLINE_SLACK_MS);
    const connectMs = t.hosts.length > 1 ? Math.min(opts.statementTimeoutMs, HOST_CONNECT_MS) : opts.statementTimeoutMs;
    const Client = clientClass(this.loc, connectMs);
    const clientOptions = {
      connectionString: t.url,
      statement_timeout: opts.statementTimeoutMs,
      // A peer that vanished (a frozen or unplugged server) is found by the kernel, not only by a deadline.
      keepAlive: true,
      keepAliveInitialDelayMillis: 5000,
      connectionTimeoutMillis: connectMs,
    };
    this.pool = new pg.Pool({
      ...clientOptions,
      Client,
      max: opts.poolSize,
      idleTimeoutMillis: 30_000,
    });
    this.pool.on('connect', (c) => this.gens.set(c, this.gen));
    // An idle connection that breaks (database restarted) is dropped by the
    // pool; without a listener the error would end the process.
    this.pool.on('error', (err, c) => {
      if (this.gens.get(c) === this.gen) this.primary.lost((err as Error)?.message ?? String(err), Date.now());
    });
    this.primary = new Primary(
      () => new Client(clientOptions) as unknown as PgClient,
      this.loc,
      Math.min(opts.statementTimeoutMs, HOST_CONNECT_MS),
      opts.log,
      () => this.gen++,
    );
    // A single statement is its own transaction; on a serialization failure
    // (CockroachDB, YugabyteDB) or deadlock it is simply run again.
    const run = async (text: string | Named, values?: unknown[]): Promise<Record<string, unknown>[]> => {
      for (let attempt = 1; ; attempt++) {
        const c = await this.checkout('statement');
        try {
          return await c.q.query(text, values);
        } catch (err) {
          // The connection was discarded (checkout) and the statement never ran: once more, on another.
          if (attempt === 1 && isStalePrepared(text, err)) continue;
          if (!isRetryable(err)) throw err;
          if (attempt >= MAX_ATTEMPTS) {
            throw new StoreError('unavailable', `the change conflicted with concurrent ones ${MAX_ATTEMPTS} times; nothing was changed; try again`);
          }
        } finally {
          c.release();
        }
        await backoff(attempt);
      }
    };
    this.q = this.view(run);
  }

  /** Starts watching for a writable primary and waits for the first (start-up). */
  async waitForPrimary(): Promise<void> {
    this.primary.start();
    await this.primary.whenUp();
  }

  /** A Q over a function running one statement. */
  private view(exec: (text: string | Named, values?: unknown[]) => Promise<Record<string, unknown>[]>): Q {
    const offset = this.opts.offsetMs;
    const q: Q = {
      query: exec,
      get now() {
        return `(floor(extract(epoch from now()) * 1000)::int8 + ${Math.trunc(offset())})`;
      },
      live(col = 'expires_at') {
        return `(${col} IS NULL OR ${col} > ${q.now})`;
      },
      expiry(param) {
        // Seconds with a fraction (Redis's PEXPIRE, a kept remaining lifetime), to the millisecond, as the log keeps them.
        return `(CASE WHEN ${param}::float8 = 0 THEN NULL ELSE ${q.now} + round(${param}::float8 * 1000)::int8 END)`;
      },
    };
    return q;
  }

  /**
   * The failure as the caller should see it (classify), noting what it means:
   * a connection to discard, a database gone (not ready). Retryable failures
   * (serialization, deadlock) go back as they are, for `run` to retry.
   */
  private fail(err: unknown, client: PgClient | undefined, startedAt: number, commit = false): { error: unknown; discard: boolean } {
    if (err instanceof StoreError || isRetryable(err)) return { error: err, discard: false };
    const f = classify(err, this.bound, commit);
    if (f === undefined) return { error: err, discard: false };
    this.primary.unavailable++;
    // Only a connection of the current generation speaks for the database as it is now.
    if (f.down && (client === undefined || this.gens.get(client) === this.gen) && this.primary.lost((err as Error)?.message ?? String(err), startedAt)) {
      this.gen++;
      this.loc.failed(client?.[ENDPOINT]);
    }
    return { error: f.error, discard: f.discard };
  }

  /**
   * Runs `fn` in one transaction (SERIALIZABLE when asked): all of it or
   * nothing. Serialization failures and deadlocks roll back and run again,
   * at most MAX_ATTEMPTS times, then 503. A StoreError from `fn` rolls back
   * and is the answer. Inside a store operation, waiting for connections,
   * every statement, the retries and the COMMIT share the operation's one
   * deadline (checkout); outside one, each step has its own.
   */
  async run<T>(fn: (q: Q) => Promise<T>, serializable = false): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const c = await this.checkout('transaction');
      try {
        await c.q.query(serializable ? 'BEGIN ISOLATION LEVEL SERIALIZABLE' : 'BEGIN');
        const out = await fn(c.q);
        await c.commit();
        c.release();
        return out;
      } catch (err) {
        if (!isRetryable(err)) {
          await c.finish();
          throw err;
        }
        await c.rollback();
        c.release();
        if (attempt >= MAX_ATTEMPTS) {
          throw new StoreError(
            'unavailable',
            `the transaction conflicted with concurrent ones ${MAX_ATTEMPTS} times (serialization failure); nothing was changed; try again`,
          );
        }
      }
      await backoff(attempt);
    }
  }

  /**
   * Runs `text`, several statements with their values inlined as literals
   * (`literal`), as one simple-protocol query: one round trip to the
   * database. Without BEGIN in it, PostgreSQL runs them as one transaction
   * (an error in any rolls back all of them); with `BEGIN … COMMIT`, a
   * failure leaves the transaction to be rolled back, which happens here.
   * Serialization failures and deadlocks run it again, as `run` does.
   * Resolves to the rows of each statement.
   */
  async batch(text: string): Promise<Record<string, unknown>[][]> {
    for (let attempt = 1; ; attempt++) {
      const c = await this.checkout('statement');
      try {
        const out = await c.batch(text);
        c.release();
        return out;
      } catch (err) {
        await c.finish();
        if (!isRetryable(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          throw new StoreError(
            'unavailable',
            `the transaction conflicted with concurrent ones ${MAX_ATTEMPTS} times (serialization failure); nothing was changed; try again`,
          );
        }
      }
      await backoff(attempt);
    }
  }

  /**
   * A read-only REPEATABLE READ transaction on a connection of its own, for
   * reading one instant of the data in several statements (a cursor:
   * cursor.ts). `close` ends it and returns the connection; it must be
   * called, once the reading is done or abandoned. Its first statements
   * share the deadline of the operation that opened it; each one after that
   * operation answered has its own (the reading follows the client's pace).
   */
  async reader(): Promise<Reader> {
    // A reader keeps its connection while the client reads the answer, at the client's pace:
    // beyond half the pool, statements of other requests would wait for connections.
    const max = Math.max(1, Math.floor(this.opts.poolSize / 2));
    if (this.readers >= max) {
      throw new BusyError(`${this.readers} large answers are being read from the database already (at most ${max}: half of --pg-pool-size); try again`);
    }
    this.readers++;
    let c: Conn;
    try {
      c = await this.checkout('reader');
    } catch (err) {
      this.readers--;
      throw err;
    }
    let open = true;
    const close = (): void => {
      if (!open) return;
      open = false;
      this.readers--;
      void c.finish();
    };
    try {
      await c.q.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    } catch (err) {
      close();
      throw err;
    }
    return { q: c.q, close };
  }

  /** A connection of the current generation, within the deadline; several hosts are each tried once. */
  private async acquire(deadline: number): Promise<PgClient> {
    let tries = 0;
    for (;;) {
      // An operation whose budget is spent (a retry after a backoff) does not queue for the pool.
      if (Date.now() >= deadline) throw new DeadlineError('deadline');
      let client: PgClient;
      try {
        const p = this.pool.connect() as Promise<PgClient>;
        // A connection that arrives after the deadline goes straight back.
        client = await within(
          p,
          deadline - Date.now(),
          () => undefined,
          (late) => late.release(),
        );
      } catch (err) {
        tries++;
        const f = err instanceof DeadlineError ? undefined : classify(err, this.bound, false);
        if (f?.down === true && tries < this.loc.hosts.length && Date.now() < deadline) continue;
        throw err;
      }
      if ((this.gens.get(client) ?? -1) === this.gen) return client;
      // Made before the database last failed (or before a failover): it may point at the old primary.
      client.release(new Error('connection from before a failover'));
    }
  }

  /**
   * A connection of the pool for several statements. Inside a store
   * operation (deadline.ts) waiting for it, every statement and the COMMIT
   * end at the operation's deadline. Outside one (the sweeper, the feed's
   * polls, a large answer's pages after the operation answered), waiting for
   * it and the first statement share one deadline, and every later
   * statement has its own. A connection that breaks between two of them emits
   * 'error' on the checked-out client; it is then destroyed on release
   * instead of going back to the pool, as is one that failed in a way that
   * leaves it untrustworthy (read-only, lost, given up on mid-statement).
   */
  private async checkout(use: 'statement' | 'transaction' | 'reader'): Promise<Conn> {
    const startedAt = Date.now();
    const step = this.bound + DEADLINE_SLACK_MS;
    const op = this.ops.current;
    let first = true;
    /** When the wait beginning now must end. */
    const deadline = (): number => (op?.open === true ? op.until : (first ? startedAt : Date.now()) + step);
    let client: PgClient;
    try {
      client = await this.acquire(deadline());
    } catch (err) {
      throw this.fail(err, undefined, startedAt).error;
    }
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onError);
    const give = (err: Error): void => {
      broken ??= err;
      client.connection.stream.destroy();
    };
    const send = async (text: string | Named, values: unknown[] | undefined, commit: boolean, multi = false): Promise<Record<string, unknown>[]> => {
      const until = deadline();
      first = false;
      try {
        if (broken !== undefined) throw broken;
        if (Date.now() >= until) throw new DeadlineError('deadline');
        const r = await within(client.query(text, values), until - Date.now(), () => give(new Error('gave up waiting for the database')));
        // Several statements in one query answer one result each (one alone, a single result).
        if (multi) return (Array.isArray(r) ? r : [r]).map((x: pg.QueryResult) => x.rows) as unknown as Record<string, unknown>[];
        return r.rows as Record<string, unknown>[];
      } catch (err) {
        if (isStalePrepared(text, err)) broken ??= err as Error;
        const f = this.fail(err, client, startedAt, commit || use === 'statement');
        if (f.discard) broken ??= err as Error;
        throw f.error;
      }
    };
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      client.removeListener('error', onError);
      client.release(broken);
    };
    const rollback = async (): Promise<void> => {
      if (broken !== undefined) return;
      try {
        await within(client.query('ROLLBACK'), deadline() - Date.now(), () => give(new Error('no answer to ROLLBACK')));
      } catch (e) {
        broken ??= e as Error;
      }
    };
    return {
      q: this.view((text, values) => send(text, values, false)),
      commit: async () => {
        await send('COMMIT', undefined, true);
      },
      rollback,
      batch: async (text) => (await send(text, undefined, true, true)) as unknown as Record<string, unknown>[][],
      finish: () => rollback().finally(release),
      release,
    };
  }

  close(): Promise<void> {
    this.primary.close();
    return this.pool.end();
  }
}

/** One read-only transaction (Db.reader). */
export interface Reader {
  readonly q: Q;
  close(): void;
}
