/**
 * A table's rows read through a database cursor, a batch per FETCH, for the
 * large answers of the shared store (docs/query.md, "Large answers";
 * docs/scaling.md): one instant of the table (a read-only REPEATABLE READ
 * transaction), and no more than a batch of its rows in this process at a
 * time, where reading them in one statement would hold them all. The
 * transaction and its connection stay open while the answer is sent and are
 * given back by release(), which the streaming code always calls (at the
 * end, on error, and when the client goes away).
 */
import { notFound } from '../errors.js';
import type { IdRow } from '../query.js';
import { BATCH_BYTES, BATCH_ROWS, EMPTY, type RowSource } from '../stream.js';

/**
 * Rows of the first FETCH, before the rows' size is known: at 100 kB a row
 * (well within a body limit) that is 6.4 MB, where BATCH_ROWS would be 100 MB.
 */
const FIRST_FETCH = 64;
import type { Db, Reader } from './sql.js';

export class CursorSource implements RowSource {
  private done = false;
  /** Mean bytes of a row's JSON in the last non-empty FETCH; 0 before the first. */
  private rowBytes = 0;

  /**
   * `length` starts as the table's row count at the cursor's instant, an
   * upper bound (rows at or below `after` are not read); once a FETCH comes
   * back short it is cut to where the rows ended, so the generators, which
   * loop until their position reaches it, stop there instead of reading
   * nothing batch after batch.
   */
  private constructor(private readonly r: Reader, public length: number) {}

  /** The live rows of table `name` with a t_id above `after`, in t_id order. */
  static async open(db: Db, name: string, after: number): Promise<CursorSource> {
    const r = await db.reader();
    try {
      const t = await r.q.query(`SELECT inc, row_count FROM pithos_tables WHERE name = $1 AND ${r.q.live()}`, [name]);
      if (t.length === 0) throw notFound(`table '${name}' does not exist`);
      await r.q.query('DECLARE pithos_rows_cursor NO SCROLL CURSOR FOR SELECT t_id, body FROM pithos_rows WHERE tname = $1 AND inc = $2 AND t_id > $3 ORDER BY t_id',
        [name, t[0].inc, after]);
      return new CursorSource(r, Number(t[0].row_count));
    } catch (err) {
      r.close();
      throw err;
    }
  }

  /** The cursor already starts above the `after` it was opened with. */
  firstAbove(): number {
    return 0;
  }

  /**
   * A FETCH is sized by rows, so its bytes are estimated from the rows of the
   * one before: about BATCH_BYTES, as the log store's batches (stream.ts
   * batchEnd), never more than BATCH_ROWS rows.
   */
  batchEnd(from: number, end: number): number {
    const n = this.rowBytes === 0 ? FIRST_FETCH : Math.max(1, Math.min(BATCH_ROWS, Math.floor(BATCH_BYTES / this.rowBytes)));
    return Math.min(end, from + n);
  }

  read(from: number, to: number, parse: boolean): IdRow[] | Promise<IdRow[]> {
    if (this.done) return [];
    return this.fetch(from, to - from, parse);
  }

  private async fetch(from: number, n: number, parse: boolean): Promise<IdRow[]> {
    const rows = await this.r.q.query(`FETCH ${n} FROM pithos_rows_cursor`);
    if (rows.length < n) {
      this.done = true;
      this.length = from + rows.length;
    }
    const out: IdRow[] = new Array(rows.length);
    let bytes = 0;
    for (let i = 0; i < rows.length; i++) {
      const json = rows[i].body as string;
      bytes += json.length;
      out[i] = { id: Number(rows[i].t_id), json, obj: parse ? JSON.parse(json) as Record<string, unknown> : EMPTY };
    }
    if (rows.length > 0) this.rowBytes = Math.max(1, bytes / rows.length);
    return out;
  }

  release(): void {
    this.done = true;
    this.r.close();
  }
}
