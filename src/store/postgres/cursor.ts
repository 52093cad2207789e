/**
 * A table's rows read a page at a time (keyset pages in t_id order, each
 * bounded by rows and by bytes), for the large answers of the shared store
 * (docs/query.md, "Large answers"; docs/scaling.md): one instant of the
 * table (a read-only REPEATABLE READ transaction), and no more than a batch
 * of its rows in this process at a time, where reading them in one statement
 * would hold them all. A server-side cursor was used before; its FETCH takes
 * a count of rows only, so a batch of large rows could not be bounded. The
 * transaction and its connection stay open while the answer is sent and are
 * given back by release(), which the streaming code always calls (at the
 * end, on error, and when the client goes away).
 */
import { missing } from '../messages.js';
import type { IdRow } from '../query.js';
import { BATCH_BYTES, BATCH_ROWS, EMPTY, type RowSource } from '../stream.js';
import type { Db, Reader } from './sql.js';

export class CursorSource implements RowSource {
  private done = false;
  /** The last t_id read: the next page starts above it. */
  private last: number;
  /** Rows the next page may look at (its LIMIT): BATCH_ROWS, less once rows turn out large. */
  private window = BATCH_ROWS;

  /**
   * `length` is unknown until the rows run out (Infinity, which the
   * generators treat as "keep reading"); the page that comes back short of
   * its window sets it to where the rows ended.
   */
  length = Infinity;

  private constructor(
    private readonly r: Reader,
    private readonly name: string,
    private readonly inc: number,
    after: number,
  ) {
    this.last = after;
  }

  /** The live rows of table `name` with a t_id above `after`, in t_id order. */
  static async open(db: Db, name: string, after: number): Promise<CursorSource> {
    const r = await db.reader();
    try {
      const t = await r.q.query(`SELECT inc FROM pithos_tables WHERE name = $1 AND ${r.q.live()}`, [name]);
      if (t.length === 0) throw missing('table', name);
      return new CursorSource(r, name, Number(t[0].inc), after);
    } catch (err) {
      r.close();
      throw err;
    }
  }

  /** The pages already start above the `after` the source was opened with. */
  firstAbove(): number {
    return 0;
  }

  batchEnd(from: number, end: number): number {
    return Math.min(end, from + BATCH_ROWS);
  }

  read(from: number, to: number, parse: boolean): IdRow[] | Promise<IdRow[]> {
    if (this.done) return [];
    return this.page(from, to - from, parse);
  }

  /**
   * The next rows after `last`: at most `want` of them, and no more than
   * BATCH_BYTES of stored JSON (always at least one row): the database
   * counts the bytes (a running sum over the page's window of rows), so a
   * batch is bounded whatever the rows' sizes. All pages are read in the one
   * REPEATABLE READ transaction: one instant of the table.
   */
  private async page(from: number, want: number, parse: boolean): Promise<IdRow[]> {
    const window = Math.min(want, this.window);
    const rows = await this.r.q.query(
      `SELECT t_id, body, upto FROM (
         SELECT t_id, body, octet_length(body) AS len, sum(octet_length(body)) OVER (ORDER BY t_id) AS upto
         FROM (SELECT t_id, body FROM pithos_rows WHERE tname = $1 AND inc = $2 AND t_id > $3 ORDER BY t_id LIMIT $4) AS w) AS s
       WHERE upto - len < $5 ORDER BY t_id`,
      [this.name, this.inc, this.last, window, BATCH_BYTES],
    );
    // Fewer rows than the window, and not cut by the byte bound (then the last row would
    // have taken the sum to it): the window held every row left.
    if (rows.length === 0 || (rows.length < window && Number(rows[rows.length - 1].upto) < BATCH_BYTES)) {
      this.done = true;
      this.length = from + rows.length;
    }
    const out: IdRow[] = new Array(rows.length);
    let bytes = 0;
    for (let i = 0; i < rows.length; i++) {
      const json = rows[i].body as string;
      bytes += json.length;
      out[i] = { id: Number(rows[i].t_id), json, obj: parse ? (JSON.parse(json) as Record<string, unknown>) : EMPTY };
    }
    if (rows.length > 0) {
      this.last = out[rows.length - 1].id;
      // The database reads the whole window to count its bytes: keep it near twice what fits.
      this.window = Math.max(16, Math.min(BATCH_ROWS, Math.ceil((2 * BATCH_BYTES * rows.length) / Math.max(1, bytes))));
    }
    return out;
  }

  release(): void {
    this.done = true;
    this.r.close();
  }
}
