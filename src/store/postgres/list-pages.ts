/**
 * A long range of a list on the shared store read a page per step
 * (docs/query.md, "Large collections"), in the reader's read-only
 * REPEATABLE READ transaction (one instant): keyset pages over the dense
 * positions, each at most ELEMENT_BATCH items and about BATCH_BYTES of
 * them, the database summing their sizes as cursor.ts does for rows (an
 * item, unlike a member, has no small bound of its own).
 */
import { ELEMENT_BATCH } from '../elements.js';
import { BATCH_BYTES } from '../stream.js';
import type { Reader } from './sql.js';

/** Items at positions lo..hi (inclusive) of list `name`; the reader is closed at the end, on failure and by `return()`. */
export function listPages(r: Reader, name: string, lo: number, hi: number): AsyncIterable<string[]> {
  let p = lo;
  let open = true;
  const finish = (): void => {
    p = hi + 1;
    if (open) r.close();
    open = false;
  };
  const it: AsyncIterator<string[]> = {
    next: async (): Promise<IteratorResult<string[]>> => {
      if (p > hi) {
        finish();
        return { done: true, value: undefined };
      }
      let rows: Record<string, unknown>[];
      try {
        // One text per page, the items joined by line feeds: an item is JSON.stringify's output
        // (lists.ts writes nothing else), which never holds a raw line feed, and one text
        // costs the driver far less than thousands of rows.
        rows = await r.q.query(
          `SELECT string_agg(v, E'\\n' ORDER BY pos) AS vs, max(pos) AS last FROM (
             SELECT pos, v, octet_length(v) AS len, sum(octet_length(v)) OVER (ORDER BY pos) AS upto
             FROM (SELECT pos, v FROM pithos_list_items WHERE name = $1 AND pos >= $2 AND pos <= $3 ORDER BY pos LIMIT $4) AS w) AS s
           WHERE upto - len < $5`,
          [name, p, hi, ELEMENT_BATCH, BATCH_BYTES],
        );
        // Positions are dense within the list's ends: a page that finds none is a defect, never an answer.
        if (rows[0].vs === null) throw new Error(`list '${name}' has no item at position ${p}`);
      } catch (err) {
        finish();
        throw err;
      }
      p = Number(rows[0].last) + 1;
      return { done: false, value: (rows[0].vs as string).split('\n') };
    },
    return: (): Promise<IteratorResult<string[]>> => {
      finish();
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}
