/**
 * Whole-collection reads of the shared store in batches (docs/query.md,
 * "Large collections"; docs/scaling.md): a read-only REPEATABLE READ
 * transaction (Db.reader: one instant of every table it reads) holding a
 * server-side cursor over the collection's elements, FETCHed a batch per
 * step, so neither this process nor one synchronous step holds more than a
 * batch of them. A member is at most 4 KiB (collection.ts), so a FETCH of
 * MEMBER_FETCH rows is bounded in bytes too; a list's items are not, and
 * are read in keyset pages bounded by bytes instead (lists.ts).
 */
import type { Db, Q, Reader } from './sql.js';

/** Rows per FETCH: at most 4 MiB of members. */
export const MEMBER_FETCH = 1024;

type Rows = Record<string, unknown>[];

/** A reader transaction, given back when `fn` fails (on success the caller owns it). */
export async function withReader<T>(db: Db, fn: (r: Reader) => Promise<T>): Promise<T> {
  const r = await db.reader();
  try {
    return await fn(r);
  } catch (err) {
    r.close();
    throw err;
  }
}

/**
 * Declares the cursor over `sql` in the reader's transaction. Every row will
 * be fetched, so the plan is chosen for the whole result, as for the one
 * statement (a cursor's default favours its first rows: a set difference
 * planned that way ran past the statement timeout at 60k members).
 */
export async function declare(q: Q, sql: string, params: unknown[]): Promise<void> {
  await q.query('SET LOCAL cursor_tuple_fraction = 1.0');
  await q.query(`DECLARE pithos_elements NO SCROLL CURSOR FOR ${sql}`, params);
}

export const fetchRows = (q: Q, n = MEMBER_FETCH): Promise<Rows> => q.query(`FETCH FORWARD ${n} FROM pithos_elements`);

/**
 * The batches after a first FETCH that came back full: one FETCH per step
 * until one comes back short. The reader is closed at the end, on failure
 * and by `return()`.
 */
export function cursorRest<B>(r: Reader, map: (rows: Rows) => B, n = MEMBER_FETCH): AsyncIterable<B> {
  let done = false;
  const finish = (): void => {
    done = true;
    r.close();
  };
  const it: AsyncIterator<B> = {
    next: async (): Promise<IteratorResult<B>> => {
      if (done) return { done: true, value: undefined };
      let rows: Rows;
      try {
        rows = await fetchRows(r.q, n);
      } catch (err) {
        finish();
        throw err;
      }
      if (rows.length < n) finish();
      if (rows.length === 0) return { done: true, value: undefined };
      return { done: false, value: map(rows) };
    },
    return: (): Promise<IteratorResult<B>> => {
      if (!done) finish();
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}
