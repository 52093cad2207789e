/**
 * Table namespace on PostgreSQL. A table is one row of pithos_tables (its
 * incarnation, from the shared sequence, and the next t_id); its rows are
 * pithos_rows keyed by (table, incarnation, t_id). Taking a t_id is one
 * `UPDATE … SET next_id = next_id + 1 … RETURNING`, so t_ids are never
 * reused, whatever node inserts. A dropped or expired table's rows belong to
 * an incarnation no live table has: invisible at once, removed by drop (in
 * the same statement) or by the sweeper.
 *
 * Rows are stored as the JSON text the log store would answer with (key
 * order kept, `\u0000` allowed, which JSONB refuses); `wheres` are matched
 * by src/store/wheres.ts on the rows fetched in the same statement or
 * transaction, so both stores match exactly alike (docs/scaling.md).
 * Every write to a table's rows first locks its pithos_tables row.
 *
 * A row's `version` is the pithos_seq value of the statement that last
 * wrote it; a statement writing several rows (PATCH, a table's ttl) gives
 * them one version, as one batch does on the log.
 */
import { conflict, invalid, notFound } from '../errors.js';
import { mergeFields } from '../json.js';
import { compareRows, compileOrder, type IdRow, render } from '../query.js';
import type { RowQuery, TableStore, Text, Wheres } from '../store.js';
import { ArraySource, findText, pageText, STREAM_ROWS } from '../stream.js';
import { compileWheres, type Matcher, matches, type Row } from '../wheres.js';
import type { Db, Q } from './sql.js';

const missing = (name: string) => notFound(`table '${name}' does not exist`);

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

/** Live rows of an existing table in t_id order, read in one statement; 404 when it does not exist. */
export async function tableRows(q: Q, name: string): Promise<PgRow[]> {
  const r = await q.query(
    `SELECT r.t_id, r.body FROM pithos_tables t LEFT JOIN pithos_rows r ON r.tname = t.name AND r.inc = t.inc
     WHERE t.name = $1 AND ${q.live('t.expires_at')} ORDER BY r.t_id`, [name]);
  if (r.length === 0) throw missing(name);
  const out: PgRow[] = [];
  for (const x of r) if (x.t_id !== null) out.push({ id: Number(x.t_id), json: x.body as string });
  return out;
}

export async function createTable(q: Q, name: string, ttl: number): Promise<void> {
  const cur = await q.query(`SELECT inc, ${q.live()} AS live FROM pithos_tables WHERE name = $1 FOR UPDATE`, [name]);
  if (cur.length > 0) {
    if (cur[0].live === true) throw conflict(`table '${name}' already exists`);
    // An expired table of that name: a new incarnation replaces it, its rows go.
    await q.query('DELETE FROM pithos_rows WHERE tname = $1 AND inc = $2', [name, cur[0].inc]);
    await q.query(`UPDATE pithos_tables SET inc = nextval('pithos_seq'), next_id = 1, expires_at = ${q.expiry('$2')} WHERE name = $1`, [name, ttl]);
    return;
  }
  const r = await q.query(
    `INSERT INTO pithos_tables (name, inc, next_id, expires_at) VALUES ($1, nextval('pithos_seq'), 1, ${q.expiry('$2')})
     ON CONFLICT (name) DO NOTHING RETURNING inc`, [name, ttl]);
  // Another node created it between the two statements.
  if (r.length === 0) throw conflict(`table '${name}' already exists`);
}

/** One statement: takes the next t_id and writes the row. */
export async function insertRow(q: Q, name: string, row: Row): Promise<number> {
  const r = await q.query(
    `WITH t AS (UPDATE pithos_tables SET next_id = next_id + 1 WHERE name = $1 AND ${q.live()} RETURNING inc, next_id - 1 AS id)
     INSERT INTO pithos_rows (tname, inc, t_id, body, version) SELECT $1, t.inc, t.id, $2, nextval('pithos_seq') FROM t RETURNING t_id`,
    [name, JSON.stringify(row)]);
  if (r.length === 0) throw missing(name);
  return Number(r[0].t_id);
}

async function matchingRows(q: Q, name: string, matcher: Matcher): Promise<[number, PgRow[]]> {
  const inc = await lockMeta(q, name);
  const r = await q.query('SELECT t_id, body FROM pithos_rows WHERE tname = $1 AND inc = $2 ORDER BY t_id', [name, inc]);
  const out: PgRow[] = [];
  for (const x of r) {
    const json = x.body as string;
    if (matches(JSON.parse(json) as Row, matcher)) out.push({ id: Number(x.t_id), json });
  }
  return [inc, out];
}

/** Writes `sets` over every matching row; returns how many matched. Inside a transaction. */
export async function updateRows(q: Q, name: string, matcher: Matcher, sets: Row): Promise<number> {
  const [inc, rows] = await matchingRows(q, name, matcher);
  if (rows.length === 0 || Object.keys(sets).length === 0) return rows.length;
  const ids = rows.map((r) => r.id);
  const bodies = rows.map((r) => JSON.stringify(mergeFields(JSON.parse(r.json) as Row, sets)));
  await q.query(
    `UPDATE pithos_rows AS r SET body = u.body, version = (SELECT nextval('pithos_seq')) FROM (SELECT unnest($3::int8[]) AS id, unnest($4::text[]) AS body) AS u
     WHERE r.tname = $1 AND r.inc = $2 AND r.t_id = u.id`, [name, inc, ids, bodies]);
  return rows.length;
}

/** Deletes every matching row; returns how many matched. Inside a transaction. */
export async function removeRows(q: Q, name: string, matcher: Matcher): Promise<number> {
  const [inc, rows] = await matchingRows(q, name, matcher);
  if (rows.length > 0) {
    await q.query('DELETE FROM pithos_rows WHERE tname = $1 AND inc = $2 AND t_id = ANY($3::int8[])', [name, inc, rows.map((r) => r.id)]);
  }
  return rows.length;
}

export async function countRows(q: Q, name: string, matcher: Matcher): Promise<number> {
  let n = 0;
  for (const r of await tableRows(q, name)) if (matches(JSON.parse(r.json) as Row, matcher)) n++;
  return n;
}

export class PgTables implements TableStore {
  constructor(private readonly db: Db) {}

  create(name: string, ttl: number): Promise<void> {
    return this.db.run((q) => createTable(q, name, ttl));
  }

  insert(name: string, row: Row): Promise<number> {
    return insertRow(this.db.q, name, row);
  }

  // Reads: the driver returns every row of the statement at once (one instant
  // of the table); more than STREAM_ROWS of them are filtered and rendered a
  // batch per step (src/store/stream.ts), fewer in one string as before.

  async all(name: string): Promise<Text> {
    const rows = await tableRows(this.db.q, name);
    if (rows.length > STREAM_ROWS) return pageText(new ArraySource(rows), undefined, undefined);
    let out = '{';
    for (let i = 0; i < rows.length; i++) out += `${i > 0 ? ',' : ''}"${rows[i].id}":${rows[i].json}`;
    return out + '}';
  }

  async query(name: string, wheres: Wheres): Promise<Text> {
    const matcher = compileWheres(wheres);
    const rows = await tableRows(this.db.q, name);
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

  // ---- Part two (docs/query.md): shaped queries by filtering the rows here, with the
  // shared order and rendering, so answers are byte-identical to the log store's.

  async page(name: string, limit: number | undefined, after: number | undefined): Promise<Text> {
    const all = await tableRows(this.db.q, name);
    if (all.length > STREAM_ROWS) return pageText(new ArraySource(all), after, limit);
    const rows = all.filter((r) => after === undefined || r.id > after);
    let out = '{';
    const n = limit === undefined ? rows.length : Math.min(limit, rows.length);
    for (let i = 0; i < n; i++) out += `${i > 0 ? ',' : ''}"${rows[i].id}":${rows[i].json}`;
    return out + '}';
  }

  async find(name: string, q: RowQuery): Promise<Text> {
    const matcher = compileWheres(q.wheres);
    const order = q.order === undefined || q.order.length === 0 ? undefined : compileOrder(q.order);
    const rows = await tableRows(this.db.q, name);
    if (rows.length > STREAM_ROWS) return findText(new ArraySource(rows), matcher, q, order);
    const after = q.after ?? 0;
    const limit = q.limit ?? Infinity;
    const out: IdRow[] = [];
    for (const r of rows) {
      if (r.id <= after) continue;
      const obj = JSON.parse(r.json) as Row;
      if (!matches(obj, matcher)) continue;
      out.push({ id: r.id, obj, json: r.json });
      if (order === undefined && out.length === limit) break;
    }
    if (order !== undefined) out.sort((a, b) => compareRows(order, a, b));
    return render(out.length > limit ? out.slice(0, limit) : out, q);
  }

  createIndex(): Promise<void> {
    return Promise.reject(invalid('secondary indexes are not supported by the postgres store yet'));
  }

  listIndexes(): Promise<string> {
    return Promise.reject(invalid('secondary indexes are not supported by the postgres store yet'));
  }

  dropIndex(): Promise<void> {
    return Promise.reject(invalid('secondary indexes are not supported by the postgres store yet'));
  }

  async patch(name: string, wheres: Wheres, sets: Row): Promise<void> {
    const matcher = compileWheres(wheres);
    await this.db.run((q) => updateRows(q, name, matcher, sets));
  }

  async deleteRows(name: string, wheres: Wheres): Promise<void> {
    const matcher = compileWheres(wheres);
    await this.db.run((q) => removeRows(q, name, matcher));
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
       SELECT (SELECT count(*) FROM r) AS rows FROM t`, [name, ttl]);
    if (r.length === 0) throw missing(name);
  }

  async drop(name: string): Promise<void> {
    // One statement: the table and its rows go together.
    const r = await this.db.q.query(
      `WITH t AS (DELETE FROM pithos_tables WHERE name = $1 AND ${this.db.q.live()} RETURNING inc),
            d AS (DELETE FROM pithos_rows WHERE tname = $1 AND inc IN (SELECT inc FROM t) RETURNING 1)
       SELECT (SELECT count(*) FROM d) AS rows, inc FROM t`, [name]);
    if (r.length === 0) throw missing(name);
  }
}
