/**
 * Secondary indexes on the shared store (docs/scaling.md, "Secondary
 * indexes"). The answers are the log store's; only how rows are found differs.
 *
 * - A definition is one row of pithos_indexes (table, incarnation, field,
 *   ready), written in the same transaction that checks the table, so the
 *   409 / 404 answers are decided by the database, whichever node asks.
 * - Each definition is backed by a real index of the database, built after
 *   the definition commits with `CREATE INDEX CONCURRENTLY` (writes go on
 *   meanwhile): a partial expression index over pithos_rows,
 *   `WHERE tname = '<table>' AND inc = <incarnation>`, on the JSONB value at
 *   the field's path (`body::jsonb -> 'a' -> 'b'`). `ready` turns true once
 *   the database reports the index valid.
 * - Rows are TEXT (they keep their key order and may hold `\u0000`, which
 *   JSONB refuses). The expression casts only rows whose text holds no `\u`
 *   (no escaped control character, no lone surrogate) and is NULL for the
 *   others; those rare rows are found through a second partial index per
 *   table incarnation (`… AND strpos(body, '\u') > 0`) and are always
 *   candidates. So the cast never fails, whatever a row holds.
 * - A query sends the conditions an index can serve to the database
 *   (equality, `$in`, number ranges, and string ranges when the database
 *   orders strings by byte), as necessary conditions only: every row the
 *   database returns is checked against the whole `wheres` by
 *   src/store/wheres.ts, and ordered, limited and rendered by
 *   src/store/query.ts, exactly as without an index. An index therefore
 *   narrows what is read; it never decides an answer.
 *
 * A database index that is left over (its definition dropped, its table
 * dropped or expired, a build interrupted) is dropped by the sweeper.
 */
import { createHash } from 'node:crypto';
import { conflict } from '../errors.js';
import { indexMissing } from '../messages.js';
import { T, type Matcher } from '../wheres.js';
import type { Db, Q } from './sql.js';

/**
 * A SQL string literal that means `s` whatever standard_conforming_strings
 * is: with a backslash, an escape string (E'…', where `\\` and `''` are the
 * only escapes needed), as libpq's PQescapeLiteral writes it. A plain '…'
 * with a backslash would, with that setting off, let `\'` end the literal.
 */
export const lit = (s: string): string => (s.includes('\\') ? `E'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'` : `'${s.replace(/'/g, "''")}'`);
/** The two characters `\u` (how a row's text holds an escaped character), as SQL. */
const BACKSLASH_U = lit('\\u');

const hash = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 24);
/** The database index of one definition (≤ 63 bytes, whatever the names). */
export const ixName = (table: string, inc: number, field: string): string => `pithos_ix_${hash(`${table}\u0000${inc}\u0000${field}`)}`;
/** The table incarnation's index of rows whose text has escapes (never cast to JSONB). */
export const escName = (table: string, inc: number): string => `pithos_ixe_${hash(`${table}\u0000${inc}`)}`;

/** SQL: the JSONB value at the path in `col`, NULL when absent or when the row is not cast. */
export function valueExpr(path: readonly string[], col = 'body'): string {
  let e = `${col}::jsonb`;
  for (const seg of path) e += ` -> ${lit(seg)}::text`;
  return `(CASE WHEN strpos(${col}, ${BACKSLASH_U}) = 0 THEN ${e} END)`;
}

/** SQL: the row in `col` has escapes (so is not in the value indexes). */
export const escaped = (col = 'body'): string => `strpos(${col}, ${BACKSLASH_U}) > 0`;

/** SQL: the rows of one table incarnation, as the partial indexes state it (`alias` qualifies the columns in queries). */
export const indexScope = (table: string, inc: number, alias = ''): string => `${alias}tname = ${lit(table)} AND ${alias}inc = ${Number(inc)}`;
const partial = (table: string, inc: number): string => indexScope(table, inc);

/** Every finite JavaScript number is at least this, as JSONB. */
const MIN_NUMBER = `'-1.7976931348623157e308'::jsonb`;
/** JSONB orders null < strings < numbers < booleans < arrays < objects. */
const NUMBERS = (e: string): string => `${e} >= ${MIN_NUMBER} AND ${e} < 'false'::jsonb`;
const STRINGS = (e: string): string => `${e} >= '""'::jsonb AND ${e} < ${MIN_NUMBER}`;

/**
 * The parts of JSONB's order that `order` walks through an index, in the
 * order the sort of src/store/query.ts visits them (numbers < strings <
 * false < true < null; `desc` reverses it): SQL ranges on the expression
 * `e`. Strings are walked only when the database compares them by byte;
 * the walk stops where a part cannot be walked (the rest is read whole).
 * Arrays and objects are never walked (they sort by JSON text, which JSONB
 * does not).
 */
export function orderSegments(e: string, desc: boolean, bytewise: boolean): string[] {
  const asc = [NUMBERS(e), ...(bytewise ? [STRINGS(e)] : [undefined]), `${e} >= 'false'::jsonb AND ${e} <= 'true'::jsonb`, `${e} = 'null'::jsonb`];
  const seq = desc ? asc.reverse() : asc;
  const out: string[] = [];
  for (const x of seq) {
    if (x === undefined) break;
    out.push(x);
  }
  return out;
}

const isPrim = (v: unknown): boolean => v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

interface Meta {
  at: number;
  inc: number;
  /** JSON of the path → field, for the table's declared indexes. */
  byKey: Map<string, string[]>;
}

/** How long a node trusts what it read about a table's indexes (they only make queries faster). */
const META_MS = 1000;

export class PgIndexes {
  private readonly meta = new Map<string, Meta>();
  /** Builds run one at a time on a node: concurrent builds on one table wait for each other anyway. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  /** Whether the database orders JSONB strings by UTF-8 bytes (a C / POSIX collation), so string ranges can use an index. */
  bytewise = false;

  constructor(private readonly db: Db) {}

  /** Probes the database's string order once at open. */
  async init(): Promise<void> {
    try {
      const r = await this.db.q.query('SELECT to_jsonb(d) AS d FROM pg_database AS d WHERE datname = current_database()');
      const d = (r[0]?.d ?? {}) as Record<string, unknown>;
      const provider = (d.datlocprovider ?? 'c') as string;
      const coll = String(d.datcollate ?? '');
      const locale = String(d.datlocale ?? d.daticulocale ?? '');
      this.bytewise = (provider === 'c' && (coll === 'C' || coll === 'POSIX')) || (provider === 'b' && /^C(\.UTF-?8)?$/i.test(locale));
    } catch {
      this.bytewise = false;
    }
  }

  // ---- definitions (in the caller's transaction) -------------------------------

  /** Declares the index; 409 when it exists. The build starts once the caller commits (`build`). */
  async declare(q: Q, table: string, inc: number, field: string): Promise<void> {
    const r = await q.query(
      'INSERT INTO pithos_indexes (tname, inc, field, ready) VALUES ($1, $2, $3, false) ON CONFLICT (tname, inc, field) DO NOTHING RETURNING 1',
      [table, inc, field],
    );
    if (r.length === 0) throw conflict(`index on '${field}' of table '${table}' already exists`);
    this.meta.delete(table);
  }

  /** Removes the definition; 404 when there is none. The database index goes once the caller commits (`discard`). */
  async undeclare(q: Q, table: string, inc: number, field: string): Promise<void> {
    const r = await q.query('DELETE FROM pithos_indexes WHERE tname = $1 AND inc = $2 AND field = $3 RETURNING 1', [table, inc, field]);
    if (r.length === 0) throw indexMissing(table, field);
    this.meta.delete(table);
  }

  /** `[{"field","ready"}]` in field order (byte order, as the log store sorts them). */
  async describe(q: Q, table: string, inc: number): Promise<string> {
    const r = await q.query('SELECT field, ready FROM pithos_indexes WHERE tname = $1 AND inc = $2', [table, inc]);
    const items = r.map((x) => ({ field: x.field as string, ready: x.ready === true }));
    items.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
    return JSON.stringify(items);
  }

  forget(table: string): void {
    this.meta.delete(table);
  }

  // ---- database indexes (outside transactions; CONCURRENTLY) -------------------

  /** Builds the database indexes of a definition in the background, then marks it ready. */
  build(table: string, inc: number, field: string): void {
    this.chain = this.chain
      .then(() => this.buildNow(table, inc, field))
      .catch((err: unknown) => {
        this.db.opts.log(
          'warn',
          `shared store: building the index on '${field}' of table '${table}' failed: ${(err as Error)?.message ?? String(err)}; the sweeper tries again`,
        );
      });
  }

  /** Drops the database index of a definition that is gone (in the background). */
  discard(table: string, inc: number, field: string): void {
    this.chain = this.chain
      .then(() => this.dropUnused([ixName(table, inc, field), escName(table, inc)]))
      .catch((err: unknown) => {
        // An unused database index costs space, never answers: the sweeper drops it later.
        this.db.opts.log(
          'warn',
          `shared store: dropping the index on '${field}' of table '${table}' failed: ${String((err as Error)?.message ?? err)}; the sweeper tries again`,
        );
      });
  }

  /** Resolves when the builds and drops this node started have finished (tests). */
  async settled(): Promise<void> {
    let c: Promise<void>;
    do {
      c = this.chain;
      await c;
    } while (c !== this.chain);
  }

  /** Runs `sql` on a connection of its own without the statement timeout (an index build may take long). */
  private async unbounded(sql: string): Promise<void> {
    const c = await this.db.pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken = err;
    };
    c.on('error', onError);
    try {
      await c.query('SET statement_timeout = 0');
      await c.query(sql);
      await c.query('RESET statement_timeout');
    } catch (err) {
      broken = err as Error;
      throw err;
    } finally {
      c.removeListener('error', onError);
      // A connection whose statement failed may hold the session setting: do not reuse it.
      c.release(broken);
    }
  }

  /** Whether the database index exists, and is valid; undefined when it does not exist. */
  private async valid(name: string): Promise<boolean | undefined> {
    const r = await this.db.q.query(
      `SELECT i.indisvalid AS ok FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
       WHERE c.relname = $1 AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`,
      [name],
    );
    return r.length === 0 ? undefined : r[0].ok === true;
  }

  private async defined(table: string, inc: number, field: string): Promise<boolean> {
    return (await this.db.q.query('SELECT 1 FROM pithos_indexes WHERE tname = $1 AND inc = $2 AND field = $3', [table, inc, field])).length > 0;
  }

  private async buildNow(table: string, inc: number, field: string): Promise<void> {
    if (this.closed || !(await this.defined(table, inc, field))) return;
    const path = field.split('.');
    const esc = escName(table, inc);
    const name = ixName(table, inc, field);
    await this.unbounded(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${esc} ON pithos_rows (t_id) WHERE ${partial(table, inc)} AND ${escaped()}`);
    await this.unbounded(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON pithos_rows (${valueExpr(path)}) WHERE ${partial(table, inc)}`);
    const ok = (await this.valid(name)) !== false && (await this.valid(esc)) !== false;
    if (!(await this.defined(table, inc, field))) {
      // Dropped while it was being built.
      await this.dropUnused([name, esc]);
      return;
    }
    if (ok) {
      await this.db.q.query('UPDATE pithos_indexes SET ready = true WHERE tname = $1 AND inc = $2 AND field = $3', [table, inc, field]);
      this.meta.delete(table);
    }
  }

  /** Drops those of `names` that no live definition uses. */
  private async dropUnused(names: string[]): Promise<void> {
    if (names.length === 0) return;
    const wanted = await this.wanted();
    for (const n of names) if (!wanted.has(n)) await this.unbounded(`DROP INDEX CONCURRENTLY IF EXISTS ${n}`);
  }

  /** Names of the database indexes the definitions of live tables use. */
  private async wanted(): Promise<Set<string>> {
    const q = this.db.q;
    const r = await q.query(`SELECT i.tname, i.inc, i.field FROM pithos_indexes AS i JOIN pithos_tables AS t ON t.name = i.tname AND t.inc = i.inc
      WHERE ${q.live('t.expires_at')}`);
    const out = new Set<string>();
    for (const x of r) {
      out.add(ixName(x.tname as string, Number(x.inc), x.field as string));
      out.add(escName(x.tname as string, Number(x.inc)));
    }
    return out;
  }

  /**
   * The sweeper's part: drops definitions of tables that are gone and the
   * database indexes nothing uses, and finishes builds that stopped (a node
   * that died building, a failed build). Idempotent, so every node runs it.
   */
  async sweep(): Promise<void> {
    const q = this.db.q;
    await q.query(`DELETE FROM pithos_indexes AS i WHERE NOT EXISTS (SELECT 1 FROM pithos_tables AS t
      WHERE t.name = i.tname AND t.inc = i.inc AND ${q.live('t.expires_at')})`);
    const wanted = await this.wanted();
    const present = await q.query(`SELECT c.relname AS name, i.indisvalid AS ok FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
      WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) AND c.relname LIKE ${lit('pithos\\_ix%')}`);
    const building = await this.buildInProgress();
    for (const p of present) {
      const name = p.name as string;
      // An invalid index is a build in progress (on some node) or one that stopped: only the latter is dropped.
      if (!wanted.has(name) || (p.ok !== true && !building)) await this.unbounded(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    }
    const pending = await q.query(`SELECT i.tname, i.inc, i.field FROM pithos_indexes AS i WHERE NOT i.ready`);
    if (pending.length > 0 && !building) {
      for (const x of pending) this.build(x.tname as string, Number(x.inc), x.field as string);
      await this.settled();
    }
  }

  /** Whether some session is building an index on pithos_rows (PostgreSQL's progress view; true when unknown). */
  private async buildInProgress(): Promise<boolean> {
    try {
      const r = await this.db.q.query(`SELECT count(*) AS n FROM pg_stat_progress_create_index WHERE relid = 'pithos_rows'::regclass`);
      return Number(r[0].n) > 0;
    } catch {
      return true;
    }
  }

  close(): void {
    this.closed = true;
  }

  // ---- queries ---------------------------------------------------------------------

  /** The table's incarnation and declared indexes as this node last read them (at most META_MS ago), or undefined when it does not exist. */
  async tableMeta(table: string, fresh = false, q: Q = this.db.q): Promise<Meta | undefined> {
    const m = this.meta.get(table);
    const now = Date.now();
    if (!fresh && m !== undefined && now - m.at < META_MS) return m;
    const r = await q.query(
      `SELECT t.inc, i.field FROM pithos_tables AS t LEFT JOIN pithos_indexes AS i ON i.tname = t.name AND i.inc = t.inc
      WHERE t.name = $1 AND ${q.live('t.expires_at')}`,
      [table],
    );
    if (r.length === 0) {
      this.meta.delete(table);
      return undefined;
    }
    const byKey = new Map<string, string[]>();
    for (const x of r) {
      if (x.field === null) continue;
      const path = (x.field as string).split('.');
      byKey.set(JSON.stringify(path), path);
    }
    const out: Meta = { at: now, inc: Number(r[0].inc), byKey };
    if (this.meta.size > 10_000) this.meta.clear();
    this.meta.set(table, out);
    return out;
  }

  /**
   * SQL conditions on `pithos_rows AS r` that every row matching `matcher`
   * meets (with `params` appended), or undefined when no top-level test is on
   * an indexed path. Rows with escapes are always let through.
   */
  conditions(m: Meta, matcher: Matcher, params: unknown[]): string | undefined {
    if (m.byKey.size === 0) return undefined;
    const conds: string[] = [];
    const param = (v: unknown, type: string): string => {
      params.push(v);
      return `$${params.length}::${type}`;
    };
    for (const n of matcher) {
      if (n.kind !== 0) continue;
      const path = m.byKey.get(n.key);
      if (path === undefined) continue;
      const e = valueExpr(path, 'r.body');
      switch (n.op) {
        case T.EqPrimitive:
        case T.Eq: {
          if (!isPrim(n.arg)) break;
          const j = JSON.stringify(n.arg);
          // A value with an escape can only be in a row with escapes, which are candidates anyway.
          conds.push(j.includes('\\u') ? 'false' : `${e} = ${param(j, 'jsonb')}`);
          break;
        }
        case T.In: {
          const arg = n.arg as unknown[];
          if (!arg.every(isPrim)) break;
          const js = arg.map((v) => JSON.stringify(v)).filter((j) => !j.includes('\\u'));
          conds.push(js.length === 0 ? 'false' : `${e} = ANY(${param(js, 'jsonb[]')})`);
          break;
        }
        case T.Gt:
        case T.Gte:
        case T.Lt:
        case T.Lte: {
          const op = n.op === T.Gt ? '>' : n.op === T.Gte ? '>=' : n.op === T.Lt ? '<' : '<=';
          if (typeof n.arg === 'number') {
            conds.push(`${e} ${op} ${param(JSON.stringify(n.arg), 'jsonb')} AND ${NUMBERS(e)}`);
          } else if (typeof n.arg === 'string' && this.bytewise) {
            const j = JSON.stringify(n.arg);
            // A bound that needs an escape cannot be written as JSONB: this test is left to the check.
            if (!j.includes('\\u')) conds.push(`${e} ${op} ${param(j, 'jsonb')} AND ${STRINGS(e)}`);
          }
          break;
        }
        default:
          break;
      }
    }
    if (conds.length === 0) return undefined;
    return `((${conds.join(' AND ')}) OR ${escaped('r.body')})`;
  }
}
