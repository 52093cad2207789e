/**
 * Table namespace on PostgreSQL. A table is one row of pithos_tables (its
 * incarnation, from the shared sequence); its rows are pithos_rows keyed by
 * (table, incarnation, t_id). Each incarnation has a sequence of its own,
 * `pithos_tid_<inc>`, created and dropped with it: taking a t_id is a
 * `nextval` on it, so t_ids are never reused, whatever node inserts. An
 * insert takes no row lock at all, so inserts never wait for each other,
 * nor for a PATCH or DELETE of the table's rows (which lock the table's
 * row FOR UPDATE, as do drop and index changes, to exclude each other). A
 * drop drops the sequence first: that waits for every insert that drew
 * from it (nextval holds the sequence's lock to commit), so the rows they
 * committed are seen and deleted by the drop, and an insert that comes
 * later finds no table, or no sequence and then no table (tids.ts).
 *
 * The live row count is the sum of pithos_row_counts, one slot per
 * database backend (pg_backend_pid()), so the backends that insert or
 * delete rows of one table at once never write the same counter row
 * either; the sweeper folds the slots of a table that has many
 * (tids.ts). A dropped or expired table's rows belong to an
 * incarnation no live table has: invisible at once, removed by drop (in
 * the same transaction) or by the sweeper.
 *
 * Rows are stored as the JSON text the log store would answer with (key
 * order kept, `\u0000` allowed, which JSONB refuses); `wheres` are matched
 * by src/store/wheres.ts on the rows fetched in the same statement or
 * transaction, so both stores match exactly alike (docs/scaling.md).
 *
 * A row's `version` is the pithos_seq value of the statement that last
 * wrote it; a statement writing several rows (PATCH, a table's ttl) gives
 * them one version, as one batch does on the log.
 */
import { conflict, type StoreError } from '../errors.js';
import { missing as missingObject } from '../messages.js';
import { mergeFields } from '../json.js';
import { compareRows, compareValues, compileOrder, type IdRow, type Order, render } from '../query.js';
import { patchedRow, rowMissing, rowWhat } from '../rows.js';
import type { Precondition, RowQuery, TableStore, Text, VersionOut, Wheres } from '../store.js';
import { ArraySource, findText, pageText, STREAM_ROWS } from '../stream.js';
import { checkPrecondition } from '../versions.js';
import { compileWheres, type Matcher, matches, type Row } from '../wheres.js';
import { escaped, indexScope, orderSegments, type PgIndexes, valueExpr } from './indexes.js';
import { CursorSource } from './cursor.js';
import type { Db, Q } from './sql.js';
import { countRowsBy, forgetIncarnation, insertSql, rowCount, tidSequence, withSequences } from './tids.js';

const missing = (name: string): StoreError => missingObject('table', name);

interface PgRow {
  id: number;
  json: string;
}

/** The live table's incarnation, its row locked; 404 when it does not exist. */
async function lockMeta(q: Q, name: string): Promise<number> {
  const r = await q.query(`SELECT inc FROM pithos_tables WHERE name = $1 AND ${q.live()} FOR UPDATE`, [name]);
  if (r.length === 0) throw missing(name);
  return Number(r[0].inc);
}

export async function tableExists(q: Q, name: string): Promise<boolean> {
  return (await q.query(`SELECT 1 FROM pithos_tables WHERE name = $1 AND ${q.live()}`, [name])).length > 0;
}

/**
 * Live rows of an existing table in t_id order, read in one statement; 404
 * when it does not exist. Only rows above `after`, at most `limit` of them.
 */
export async function tableRows(q: Q, name: string, after = 0, limit?: number): Promise<PgRow[]> {
  const r = await q.query(
    `SELECT r.t_id, r.body FROM pithos_tables t LEFT JOIN pithos_rows r ON r.tname = t.name AND r.inc = t.inc AND r.t_id > $2
     WHERE t.name = $1 AND ${q.live('t.expires_at')} ORDER BY r.t_id${limit === undefined ? '' : ' LIMIT $3'}`,
    limit === undefined ? [name, after] : [name, after, limit],
  );
  if (r.length === 0) throw missing(name);
  return rowsOf(r);
}

/** The rows of a table-LEFT-JOIN-rows result (a table without rows gives one row of NULLs). */
function rowsOf(r: Record<string, unknown>[]): PgRow[] {
  const out: PgRow[] = [];
  for (const x of r) if (x.t_id !== null) out.push({ id: Number(x.t_id), json: x.body as string });
  return out;
}

export async function createTable(q: Q, name: string, ttl: number): Promise<void> {
  const cur = await q.query(`SELECT inc, ${q.live()} AS live FROM pithos_tables WHERE name = $1 FOR UPDATE`, [name]);
  if (cur.length > 0) {
    if (cur[0].live === true) throw conflict(`table '${name}' already exists`);
    // An expired table of that name: a new incarnation replaces it, its rows and index definitions go.
    // The new incarnation first: rows of the old one are then gone with their table,
    // not deleted one by one (the change feed reports the table, as the log store does).
    const r = await q.query(`UPDATE pithos_tables SET inc = nextval('pithos_seq'), expires_at = ${q.expiry('$2')} WHERE name = $1 RETURNING inc`, [name, ttl]);
    await q.query(`CREATE SEQUENCE ${tidSequence(Number(r[0].inc))}`);
    await forgetIncarnation(q, name, Number(cur[0].inc));
    return;
  }
  const r = await q.query(
    `INSERT INTO pithos_tables (name, inc, expires_at) VALUES ($1, nextval('pithos_seq'), ${q.expiry('$2')})
     ON CONFLICT (name) DO NOTHING RETURNING inc`,
    [name, ttl],
  );
  // Another node created it between the two statements.
  if (r.length === 0) throw conflict(`table '${name}' already exists`);
  await q.query(`CREATE SEQUENCE ${tidSequence(Number(r[0].inc))}`);
}

/** One statement: takes the next t_id and writes the row. */
export async function insertRow(q: Q, name: string, row: Row): Promise<number> {
  const r = await q.query(insertSql('$1', '$2', q.live()), [name, JSON.stringify(row)]);
  if (r.length === 0) throw missing(name);
  return Number(r[0].t_id);
}

/**
 * Locks the table's row and reads its rows that match. With `ix`, the
 * conditions its indexes serve narrow the read (the incarnation is the
 * locked one, so the literal in the statement is exact).
 */
async function matchingRows(q: Q, name: string, matcher: Matcher, ix?: PgIndexes): Promise<[number, PgRow[]]> {
  const inc = await lockMeta(q, name);
  // Read on the transaction's own connection: waiting for a second one while holding the lock could starve the pool.
  const m = ix === undefined ? undefined : await ix.tableMeta(name, false, q);
  const params: unknown[] = [name, inc];
  const cond = m === undefined ? undefined : ix?.conditions({ ...m, inc }, matcher, params);
  const r = await q.query(
    cond === undefined
      ? 'SELECT t_id, body FROM pithos_rows WHERE tname = $1 AND inc = $2 ORDER BY t_id'
      : `SELECT r.t_id, r.body FROM pithos_rows AS r WHERE r.tname = $1 AND r.inc = $2 AND ${indexScope(name, inc, 'r.')} AND ${cond} ORDER BY r.t_id`,
    params,
  );
  const out: PgRow[] = [];
  for (const x of r) {
    const json = x.body as string;
    if (matches(JSON.parse(json) as Row, matcher)) out.push({ id: Number(x.t_id), json });
  }
  return [inc, out];
}

/** Writes `sets` over every matching row; returns how many matched. Inside a transaction. */
export async function updateRows(q: Q, name: string, matcher: Matcher, sets: Row, ix?: PgIndexes): Promise<number> {
  const [inc, rows] = await matchingRows(q, name, matcher, ix);
  if (rows.length === 0 || Object.keys(sets).length === 0) return rows.length;
  const ids = rows.map((r) => r.id);
  const bodies = rows.map((r) => JSON.stringify(mergeFields(JSON.parse(r.json) as Row, sets)));
  await q.query(
    `UPDATE pithos_rows AS r SET body = u.body, version = (SELECT nextval('pithos_seq')) FROM (SELECT unnest($3::int8[]) AS id, unnest($4::text[]) AS body) AS u
     WHERE r.tname = $1 AND r.inc = $2 AND r.t_id = u.id`,
    [name, inc, ids, bodies],
  );
  return rows.length;
}

/** Deletes every matching row; returns how many matched. Inside a transaction. */
export async function removeRows(q: Q, name: string, matcher: Matcher, ix?: PgIndexes): Promise<number> {
  const [inc, rows] = await matchingRows(q, name, matcher, ix);
  if (rows.length > 0) {
    await q.query('DELETE FROM pithos_rows WHERE tname = $1 AND inc = $2 AND t_id = ANY($3::int8[])', [name, inc, rows.map((r) => r.id)]);
    await q.query(countRowsBy('(SELECT $1::text AS tname, $2::int8 AS inc) AS d', '-$3::int8'), [name, inc, rows.length]);
  }
  return rows.length;
}

/**
 * Row `id` of the live table, with the table's row locked (so no other
 * write to its rows can fall between this read and the caller's write):
 * the incarnation and the row's body, or undefined body when there is no
 * such row. `pre` is checked on the row's version (412 also for an absent row).
 */
async function lockedRow(q: Q, name: string, id: number, pre: Precondition | undefined): Promise<[number, string | undefined]> {
  const inc = await lockMeta(q, name);
  const r = await q.query('SELECT body, version FROM pithos_rows WHERE tname = $1 AND inc = $2 AND t_id = $3', [name, inc, id]);
  if (pre !== undefined) checkPrecondition(rowWhat(name, id), r.length === 0 ? undefined : Number(r[0].version), pre);
  return [inc, r.length === 0 ? undefined : (r[0].body as string)];
}

async function writeRow(q: Q, name: string, inc: number, id: number, row: Row): Promise<void> {
  await q.query(`UPDATE pithos_rows SET body = $4, version = nextval('pithos_seq') WHERE tname = $1 AND inc = $2 AND t_id = $3`, [
    name,
    inc,
    id,
    JSON.stringify(row),
  ]);
}

async function deleteRowAt(q: Q, name: string, inc: number, id: number): Promise<void> {
  await q.query('DELETE FROM pithos_rows WHERE tname = $1 AND inc = $2 AND t_id = $3', [name, inc, id]);
  await q.query(countRowsBy('(SELECT $1::text AS tname, $2::int8 AS inc) AS d', '-1'), [name, inc]);
}

/** Writes `row` in place of row `id`; 404 when there is none. Inside a transaction. */
export async function replaceRow(q: Q, name: string, id: number, row: Row, pre?: Precondition): Promise<void> {
  const [inc, body] = await lockedRow(q, name, id, pre);
  if (body === undefined) throw rowMissing(name, id);
  await writeRow(q, name, inc, id, row);
}

/** `sets` then `unset` on row `id` (src/store/rows.ts). Inside a transaction. */
export async function patchRowById(q: Q, name: string, id: number, sets: Row, unset: readonly string[], pre?: Precondition): Promise<void> {
  const [inc, body] = await lockedRow(q, name, id, pre);
  if (body === undefined) throw rowMissing(name, id);
  await writeRow(q, name, inc, id, patchedRow(JSON.parse(body) as Row, sets, unset));
}

export async function deleteRowById(q: Q, name: string, id: number, pre?: Precondition): Promise<void> {
  const [inc, body] = await lockedRow(q, name, id, pre);
  if (body === undefined) throw rowMissing(name, id);
  await deleteRowAt(q, name, inc, id);
}

/** A transaction's UPDATE by t_id: as updateRows with a where that matches that row alone. */
export async function updateRowById(q: Q, name: string, id: number, sets: Row): Promise<number> {
  const [inc, body] = await lockedRow(q, name, id, undefined);
  if (body === undefined) return 0;
  if (Object.keys(sets).length > 0) await writeRow(q, name, inc, id, mergeFields(JSON.parse(body) as Row, sets));
  return 1;
}

/** A transaction's REMOVE by t_id: as removeRows with a where that matches that row alone. */
export async function removeRowById(q: Q, name: string, id: number): Promise<number> {
  const [inc, body] = await lockedRow(q, name, id, undefined);
  if (body === undefined) return 0;
  await deleteRowAt(q, name, inc, id);
  return 1;
}

export async function countRows(q: Q, name: string, matcher: Matcher): Promise<number> {
  let n = 0;
  for (const r of await tableRows(q, name)) if (matches(JSON.parse(r.json) as Row, matcher)) n++;
  return n;
}

export class PgTables implements TableStore {
  constructor(
    private readonly db: Db,
    private readonly ix: PgIndexes,
  ) {}

  /**
   * Live rows of an existing table that may match `matcher`, in t_id order
   * (404 when it does not exist): every row, or, when a top-level test is on
   * an indexed path, the rows the database finds through the conditions
   * indexes serve (indexes.ts). Callers check every row with `matches`.
   */
  private async candidates(name: string, matcher: Matcher, after = 0): Promise<PgRow[] | CursorSource> {
    const q = this.db.q;
    for (let attempt = 0; attempt < 3; attempt++) {
      const m = await this.ix.tableMeta(name, attempt > 0);
      if (m === undefined) break; // gone, or never was: tableRows says 404
      const params: unknown[] = [name, after];
      const cond = this.ix.conditions(m, matcher, params);
      if (cond === undefined) break;
      // The incarnation is a literal, so the database can match the partial indexes of that incarnation.
      const r = await q.query(
        `SELECT t.inc AS live_inc, r.t_id, r.body FROM pithos_tables AS t
         LEFT JOIN pithos_rows AS r ON r.tname = t.name AND r.inc = t.inc AND r.t_id > $2 AND ${indexScope(name, m.inc, 'r.')} AND ${cond}
         WHERE t.name = $1 AND ${q.live('t.expires_at')} ORDER BY r.t_id`,
        params,
      );
      if (r.length === 0) throw missing(name);
      // The table was dropped and created again since this node read its incarnation: read it again.
      if (Number(r[0].live_inc) !== m.inc) continue;
      return rowsOf(r);
    }
    return this.scan(name, after);
  }

  /**
   * Every live row above `after`: in memory when there are at most
   * STREAM_ROWS of them (one statement, as before), else through a cursor,
   * so a large table is never held whole in this process (cursor.ts).
   */
  private async scan(name: string, after = 0): Promise<PgRow[] | CursorSource> {
    const q = this.db.q;
    // The table's row count decides in the same statement; for a large table no row is read
    // here (the condition on it is a one-time filter: OFFSET 0 keeps the subquery apart),
    // only by the cursor.
    const r = await q.query(
      `SELECT t.row_count, x.t_id, x.body FROM (SELECT name, inc, ${rowCount('pithos_tables')} AS row_count FROM pithos_tables
           WHERE name = $1 AND ${q.live()}) AS t LEFT JOIN LATERAL
         (SELECT r.t_id, r.body FROM pithos_rows r WHERE r.tname = t.name AND r.inc = t.inc AND r.t_id > $2 AND t.row_count <= ${STREAM_ROWS} OFFSET 0) x ON true
       ORDER BY x.t_id`,
      [name, after],
    );
    if (r.length === 0) throw missing(name);
    if (Number(r[0].row_count) > STREAM_ROWS) return CursorSource.open(this.db, name, after);
    return rowsOf(r);
  }

  create(name: string, ttl: number): Promise<void> {
    return this.db.run((q) => createTable(q, name, ttl));
  }

  insert(name: string, row: Row): Promise<number> {
    return withSequences(this.db, [name], () => insertRow(this.db.q, name, row));
  }

  // Reads: up to STREAM_ROWS rows come in one statement and are answered in
  // one string, as before; more are read through a cursor and filtered and
  // rendered a batch per step (src/store/stream.ts). Rows an index condition
  // selected come in one statement (ArraySource) and are sliced the same way.

  all(name: string): Promise<Text> {
    return this.page(name, undefined, undefined);
  }

  async query(name: string, wheres: Wheres): Promise<Text> {
    const matcher = compileWheres(wheres);
    const rows = await this.candidates(name, matcher);
    if (!Array.isArray(rows)) return findText(rows, matcher, { wheres }, undefined);
    if (rows.length > STREAM_ROWS) return findText(new ArraySource(rows), matcher, { wheres }, undefined);
    let out = '[';
    let first = true;
    for (const r of rows) {
      if (!matches(JSON.parse(r.json) as Row, matcher)) continue;
      out += first ? r.json : ',' + r.json;
      first = false;
    }
    return out + ']';
  }

  // ---- Shaped queries (docs/query.md): by filtering the rows here, with the
  // shared order and rendering, so answers are byte-identical to the log store's.

  async page(name: string, limit: number | undefined, after: number | undefined): Promise<Text> {
    // The database applies after (and a small limit); a big page is read through a cursor.
    const rows = limit !== undefined && limit <= STREAM_ROWS ? await tableRows(this.db.q, name, after ?? 0, limit) : await this.scan(name, after ?? 0);
    if (!Array.isArray(rows)) return pageText(rows, undefined, limit);
    let out = '{';
    for (let i = 0; i < rows.length; i++) out += `${i > 0 ? ',' : ''}"${rows[i].id}":${rows[i].json}`;
    return out + '}';
  }

  async find(name: string, q: RowQuery): Promise<Text> {
    const matcher = compileWheres(q.wheres);
    const order = q.order === undefined || q.order.length === 0 ? undefined : compileOrder(q.order);
    const after = q.after ?? 0;
    const limit = q.limit ?? Infinity;
    if (order !== undefined && limit !== Infinity) {
      const walked = await this.byIndexOrder(name, matcher, order, after, limit);
      if (walked !== undefined) return render(walked, q);
    }
    const out: IdRow[] = [];
    const rows = await this.candidates(name, matcher, after);
    if (!Array.isArray(rows)) return findText(rows, matcher, q, order);
    if (rows.length > STREAM_ROWS) return findText(new ArraySource(rows), matcher, q, order);
    for (const r of rows) {
      const obj = JSON.parse(r.json) as Row;
      if (!matches(obj, matcher)) continue;
      out.push({ id: r.id, obj, json: r.json });
      if (order === undefined && out.length === limit) break;
    }
    if (order !== undefined) out.sort((a, b) => compareRows(order, a, b));
    return render(out.length > limit ? out.slice(0, limit) : out, q);
  }

  /**
   * The first `limit` matching rows under `order` by walking the index on the
   * first sort key (the log store's plan 2, docs/query.md), or undefined when
   * it cannot answer: no index on that path, an index condition serves the
   * query instead, a descending walk would meet arrays or objects first, or
   * the walkable parts of the index (orderSegments) ran out before the page
   * was full. One snapshot (a read-only SERIALIZABLE transaction).
   *
   * Rows come in index order, about `want` at a time, each batch completed
   * to the end of its last run of equal values; within a run the other keys
   * and t_id decide (compareRows). Rows the expression does not cast
   * (escapes) are not in the index: they are all read, checked and merged
   * in, which is exact because every row not walked sorts after every row
   * walked, and at least `limit` walked rows match.
   */
  private async byIndexOrder(name: string, matcher: Matcher, order: Order, after: number, limit: number): Promise<IdRow[] | undefined> {
    const m = await this.ix.tableMeta(name);
    if (m === undefined) return undefined;
    const first = order[0];
    const path = m.byKey.get(JSON.stringify(first.path));
    if (path === undefined || this.ix.conditions(m, matcher, []) !== undefined) return undefined;
    const segments = orderSegments(valueExpr(path, 'r.body'), first.desc, this.ix.bytewise);
    const e = valueExpr(path, 'r.body');
    const scope = `${indexScope(name, m.inc, 'r.')} AND r.t_id > ${Math.trunc(after)}`;
    return this.db.run(async (q) => {
      const t = await q.query(`SELECT inc FROM pithos_tables WHERE name = $1 AND ${q.live()}`, [name]);
      if (t.length === 0) throw missing(name);
      if (Number(t[0].inc) !== m.inc) return undefined;
      if (first.desc) {
        // Arrays and objects sort first when descending (an empty array sorts below null in JSONB).
        const big = await q.query(`SELECT 1 FROM pithos_rows AS r WHERE ${scope} AND (${e} > 'true'::jsonb OR ${e} < 'null'::jsonb) LIMIT 1`);
        if (big.length > 0) return undefined;
      }
      const out: IdRow[] = [];
      const take = (x: Record<string, unknown>): IdRow | undefined => {
        const json = x.body as string;
        const obj = JSON.parse(json) as Row;
        return matches(obj, matcher) ? { id: Number(x.t_id), obj, json } : undefined;
      };
      let want = Math.max(64, limit * 2);
      const dir = first.desc ? 'DESC' : 'ASC';
      const beyond = first.desc ? '<' : '>';
      walk: for (const seg of segments) {
        let cursor: { v: string; id: number } | undefined;
        for (;;) {
          const params: unknown[] = [];
          let keyset = '';
          if (cursor !== undefined) {
            params.push(cursor.v, cursor.id);
            keyset = ` AND (${e} ${beyond} $1::jsonb OR (${e} = $1::jsonb AND r.t_id > $2))`;
          }
          params.push(want);
          const batch = await q.query(
            `SELECT r.t_id, r.body, (${e})::text AS v FROM pithos_rows AS r WHERE ${scope} AND ${seg}${keyset}
             ORDER BY ${e} ${dir}, r.t_id LIMIT $${params.length}`,
            params,
          );
          const full = batch.length === want;
          if (full) {
            // Complete the last run of equal values, so no run is split between batches.
            const last = batch[batch.length - 1];
            const rest = await q.query(
              `SELECT r.t_id, r.body, (${e})::text AS v FROM pithos_rows AS r WHERE ${scope} AND ${e} = $1::jsonb AND r.t_id > $2
              ORDER BY r.t_id`,
              [last.v, last.t_id],
            );
            for (const x of rest) batch.push(x);
          }
          let run: IdRow[] = [];
          for (let i = 0; i < batch.length; i++) {
            const r = take(batch[i]);
            if (r !== undefined) run.push(r);
            if (i < batch.length - 1 && compareValues(JSON.parse(batch[i + 1].v as string), JSON.parse(batch[i].v as string)) === 0) continue;
            // Within one value of the first key, the other keys (and t_id) decide.
            run.sort((a, b) => compareRows(order, a, b));
            for (const x of run) out.push(x);
            run = [];
            if (out.length >= limit) break walk;
          }
          if (!full) break;
          const last = batch[batch.length - 1];
          cursor = { v: last.v as string, id: Number(last.t_id) };
          want *= 4;
        }
      }
      if (out.length < limit) return undefined;
      for (const x of await q.query(`SELECT r.t_id, r.body FROM pithos_rows AS r WHERE ${scope} AND ${escaped('r.body')}`)) {
        const r = take(x);
        if (r !== undefined) out.push(r);
      }
      out.sort((a, b) => compareRows(order, a, b));
      return out.slice(0, limit);
    }, true);
  }

  /**
   * Declares the index under the table's row lock (so a concurrent drop of
   * the table waits), then builds its database index in the background.
   */
  async createIndex(name: string, field: string): Promise<void> {
    const inc = await this.db.run(async (q) => {
      const inc = await lockMeta(q, name);
      await this.ix.declare(q, name, inc, field);
      return inc;
    });
    this.ix.build(name, inc, field);
  }

  async listIndexes(name: string): Promise<string> {
    const q = this.db.q;
    const r = await q.query(`SELECT inc FROM pithos_tables WHERE name = $1 AND ${q.live()}`, [name]);
    if (r.length === 0) throw missing(name);
    return this.ix.describe(q, name, Number(r[0].inc));
  }

  async dropIndex(name: string, field: string): Promise<void> {
    const inc = await this.db.run(async (q) => {
      const inc = await lockMeta(q, name);
      await this.ix.undeclare(q, name, inc, field);
      return inc;
    });
    this.ix.discard(name, inc, field);
  }

  /** The body and its version from one read, so they agree; 404 for a missing table or row. */
  async getRow(name: string, id: number, out?: VersionOut): Promise<string> {
    const q = this.db.q;
    const r = await q.query(
      `SELECT r.body, r.version FROM pithos_tables AS t LEFT JOIN pithos_rows AS r ON r.tname = t.name AND r.inc = t.inc AND r.t_id = $2
       WHERE t.name = $1 AND ${q.live('t.expires_at')}`,
      [name, id],
    );
    if (r.length === 0) throw missing(name);
    if (r[0].body === null) throw rowMissing(name, id);
    if (out !== undefined) out.version = Number(r[0].version);
    return r[0].body as string;
  }

  replaceRow(name: string, id: number, row: Row, pre?: Precondition): Promise<void> {
    return this.db.run((q) => replaceRow(q, name, id, row, pre));
  }

  patchRow(name: string, id: number, sets: Row, unset: readonly string[], pre?: Precondition): Promise<void> {
    return this.db.run((q) => patchRowById(q, name, id, sets, unset, pre));
  }

  deleteRow(name: string, id: number, pre?: Precondition): Promise<void> {
    return this.db.run((q) => deleteRowById(q, name, id, pre));
  }

  async patch(name: string, wheres: Wheres, sets: Row): Promise<void> {
    const matcher = compileWheres(wheres);
    await this.db.run((q) => updateRows(q, name, matcher, sets, this.ix));
  }

  async deleteRows(name: string, wheres: Wheres): Promise<void> {
    const matcher = compileWheres(wheres);
    await this.db.run((q) => removeRows(q, name, matcher, this.ix));
  }

  /**
   * Sets the remaining lifetime (0 = none): rows live as long as their
   * table's row here. One statement, which also gives every row one new
   * version, as the log's rewrite of them does (so O(rows), as there).
   */
  async expire(name: string, ttl: number): Promise<void> {
    const q = this.db.q;
    const r = await q.query(
      `WITH t AS (UPDATE pithos_tables SET expires_at = ${q.expiry('$2')} WHERE name = $1 AND ${q.live()} RETURNING inc),
            r AS (UPDATE pithos_rows SET version = (SELECT nextval('pithos_seq')) WHERE tname = $1 AND inc IN (SELECT inc FROM t) RETURNING 1)
       SELECT (SELECT count(*) FROM r) AS rows FROM t`,
      [name, ttl],
    );
    if (r.length === 0) throw missing(name);
  }

  async drop(name: string): Promise<void> {
    // One transaction: the table, its rows, index definitions, counts and t_id sequence go together.
    const [inc, fields] = await this.db.run(async (q) => {
      const r = await q.query(
        `WITH t AS (DELETE FROM pithos_tables WHERE name = $1 AND ${q.live()} RETURNING inc)
         SELECT inc, (SELECT array_agg(field) FROM pithos_indexes AS x WHERE x.tname = $1 AND x.inc = t.inc) AS fields FROM t`,
        [name],
      );
      if (r.length === 0) throw missing(name);
      await forgetIncarnation(q, name, Number(r[0].inc));
      return [Number(r[0].inc), (r[0].fields as string[] | null) ?? []] as const;
    });
    this.ix.forget(name);
    // Their database indexes are dropped in the background (the sweeper drops any left over).
    for (const f of fields) this.ix.discard(name, inc, f);
  }
}
