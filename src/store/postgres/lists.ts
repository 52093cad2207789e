/**
 * Lists on PostgreSQL (docs/scaling.md, "Lists"): one row of pithos_lists
 * per list (head, tail, expiry, version) and one row of pithos_list_items per
 * item, keyed by (list, position) with the same dense signed positions as
 * the log store (docs/format.md, "Lists"): a push inserts at head-1 or tail,
 * index i is position head+i. Every write locks the list's row first
 * (SELECT … FOR UPDATE), so writers of one list queue on it and a pop takes
 * each item once; a move locks both lists in one transaction. A range read
 * is one statement, so items and length come from one snapshot.
 *
 * Items carry no expiry of their own: every read joins the live list row,
 * and a list that has expired is emptied by the sweeper, or by the first
 * write that finds it expired.
 *
 * Blocking pops wait in a queue per list on this node. A push anywhere
 * (this node or another) sends `NOTIFY pithos_lists, '<name>'` in its
 * transaction, delivered at commit; every node LISTENs on one connection of
 * its own and serves its waiters of that list in arrival order. A waiter
 * also tries again every RECHECK_MS, so a notification lost while the
 * listening connection was being re-established delays it, never strands it.
 */
import pg from 'pg';
import { StoreError } from '../errors.js';
import { shuttingDown, WaitingPops } from '../list-waiters.js';
import { indexOf, listMissing, rangeOf, removals } from '../lists.js';
import { ELEMENT_BATCH } from '../elements.js';
import type { Elements, ListPatch, ListPop, ListSide, ListStore, Precondition, VersionOut } from '../store.js';
import { checkPrecondition } from '../versions.js';
import { listPages } from './list-pages.js';
import { withReader } from './pages.js';
import type { GroupCommit } from './group-commit.js';
import type { Db, Q } from './sql.js';

const NEXT = "nextval('pithos_seq')";
const CHANNEL = 'pithos_lists';
const RECHECK_MS = 1000;

interface Head {
  head: number;
  tail: number;
  version: number;
}

/**
 * Locks the list's row for the rest of the transaction; the live list, or
 * undefined when there is none (an expired row is locked too, and emptied
 * when `create` makes a new list in its place).
 */
async function lockList(q: Q, name: string, create: boolean): Promise<Head | undefined> {
  for (let i = 0; i < 8; i++) {
    const r = await q.query(
      `SELECT head, tail, version, ${q.live()} AS live, op IS NOT DISTINCT FROM '' AS placeholder FROM pithos_lists WHERE name = $1 FOR UPDATE`,
      [name],
    );
    if (r.length > 0) {
      // Only the transaction that inserted a placeholder sees it (txns.ts locks lists so): no list yet.
      if (r[0].placeholder === true) return create ? { head: 0, tail: 0, version: 0 } : undefined;
      if (r[0].live === true) return { head: Number(r[0].head), tail: Number(r[0].tail), version: Number(r[0].version) };
      if (!create) return undefined;
      await q.query('DELETE FROM pithos_list_items WHERE name = $1', [name]);
      // The version moves with the write that follows (one change in the feed, as a new list's).
      await q.query('UPDATE pithos_lists SET head = 0, tail = 0, expires_at = NULL WHERE name = $1', [name]);
      return { head: 0, tail: 0, version: 0 };
    }
    if (!create) return undefined;
    // Inserted to be locked (op ''): no change until the write that follows sets what it was for.
    const c = await q.query(
      `INSERT INTO pithos_lists (name, head, tail, expires_at, version, op) VALUES ($1, 0, 0, NULL, ${NEXT}, '')
      ON CONFLICT (name) DO NOTHING RETURNING 1`,
      [name],
    );
    if (c.length > 0) return { head: 0, tail: 0, version: 0 };
    // Created meanwhile by another writer: lock that one.
  }
  throw new StoreError('unavailable', `list '${name}' kept changing under concurrent writes; try again`);
}

/** A list lockList has just made in place of a missing or expired one (version 0) has no version: a condition finds it absent. */
function check(name: string, h: Head | undefined, pre: Precondition | undefined): void {
  if (pre !== undefined) checkPrecondition(`list '${name}'`, h === undefined || h.version === 0 ? undefined : h.version, pre);
}

/** Inserts `texts` at positions from, from+step, … */
async function insertItems(q: Q, name: string, texts: readonly string[], from: number, step: 1 | -1): Promise<void> {
  if (texts.length === 0) return;
  await q.query(
    `INSERT INTO pithos_list_items (name, pos, v)
    SELECT $1, $2::int8 + (t.i - 1) * $3::int8, t.v FROM unnest($4::text[]) WITH ORDINALITY AS t(v, i)`,
    [name, from, step, texts],
  );
}

/**
 * The list's new ends and version, and what the write was for (the change
 * feed's `op` and its arguments and result as JSON, as the log store
 * records them: src/store/log/lists.ts); both null for a new lifetime.
 */
async function setHead(q: Q, name: string, head: number, tail: number, op: string | null, data: string | null): Promise<void> {
  await q.query(`UPDATE pithos_lists SET head = $2, tail = $3, version = ${NEXT}, op = $4, op_data = $5 WHERE name = $1`, [name, head, tail, op, data]);
}

/** The live list's length, or undefined when there is none (a transaction's check). */
export async function listLength(q: Q, name: string): Promise<number | undefined> {
  const r = await q.query(`SELECT tail - head AS n FROM pithos_lists WHERE name = $1 AND ${q.live()}`, [name]);
  return r.length === 0 ? undefined : Number(r[0].n);
}

/** Pushes one at a time in order; returns the new length. Inside a transaction. */
export async function pushItems(q: Q, name: string, texts: readonly string[], side: ListSide, create: boolean, pre?: Precondition): Promise<number> {
  const h = await lockList(q, name, create);
  check(name, h, pre);
  if (h === undefined) throw listMissing(name);
  let { head, tail } = h;
  if (side === 'right') {
    await insertItems(q, name, texts, tail, 1);
    tail += texts.length;
  } else {
    await insertItems(q, name, texts, head - 1, -1);
    head -= texts.length;
  }
  await setHead(q, name, head, tail, 'push', `{"side":"${side}","values":[${texts.join(',')}],"length":${tail - head}}`);
  await q.query('SELECT pg_notify($1, $2)', [CHANNEL, name]);
  return tail - head;
}

/** The items popped (undefined when the list does not exist), moved when `p.to` is set. Inside a transaction. */
export async function popItems(q: Q, name: string, p: ListPop, pre: Precondition | undefined): Promise<string[] | undefined> {
  const h = await lockList(q, name, false);
  check(name, h, pre);
  if (h === undefined) return undefined;
  const n = Math.min(p.count, h.tail - h.head);
  if (n === 0) return [];
  const left = p.side === 'left';
  const lo = left ? h.head : h.tail - n;
  const r = await q.query('DELETE FROM pithos_list_items WHERE name = $1 AND pos >= $2 AND pos < $3 RETURNING pos, v', [name, lo, lo + n]);
  r.sort((a, b) => (left ? Number(a.pos) - Number(b.pos) : Number(b.pos) - Number(a.pos)));
  const items = r.map((x) => x.v as string);
  if (items.length !== n) throw new Error(`list '${name}' has ${items.length} of ${n} items at positions ${lo}…${lo + n - 1}`);
  const length = h.tail - h.head - n;
  await setHead(
    q,
    name,
    left ? h.head + n : h.head,
    left ? h.tail : h.tail - n,
    'pop',
    `{"side":"${p.side}","count":${p.count},"items":[${items.join(',')}],"length":${length}}`,
  );
  if (p.to !== undefined) await pushItems(q, p.to, items, p.toSide, true);
  return items;
}

export class PgLists implements ListStore {
  /** This node's blocking pops; a waiter's first attempt checks its `pre`, later ones (woken by a push) do not. */
  private readonly waiting = new WaitingPops();
  /** Lists whose waiters are being served (one attempt at a time per list, in order). */
  private readonly serving = new Set<string>();
  /** A notification came for the list while it was being served: try again before stopping. */
  private readonly dirty = new Set<string>();
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  private recheck: NodeJS.Timeout | undefined;

  /** `group`: batches the unconditional push with other writes (group-commit.ts); absent, each goes alone. */
  constructor(
    private readonly db: Db,
    private readonly group?: GroupCommit,
  ) {}

  async put(name: string, items: unknown[], ttl: number, pre?: Precondition): Promise<boolean> {
    const texts = items.map((v) => JSON.stringify(v));
    return this.db.run(async (q) => {
      const all = `[${texts.join(',')}]`;
      for (let i = 0; i < 8; i++) {
        // The row, live or expired, locked: an expired one is replaced as a missing one is (a new list).
        const r = await q.query(`SELECT version, ${q.live()} AS live FROM pithos_lists WHERE name = $1 FOR UPDATE`, [name]);
        const live = r.length > 0 && r[0].live === true;
        check(name, live ? { head: 0, tail: 0, version: Number(r[0].version) } : undefined, pre);
        if (r.length > 0) {
          await q.query('DELETE FROM pithos_list_items WHERE name = $1', [name]);
          // A whole-list write: the feed's put carries the items (op null).
          await q.query(
            `UPDATE pithos_lists SET head = 0, tail = $2, expires_at = ${q.expiry('$3')}, version = ${NEXT}, op = NULL, op_data = $4
            WHERE name = $1`,
            [name, texts.length, ttl, all],
          );
        } else {
          const c = await q.query(
            `INSERT INTO pithos_lists (name, head, tail, expires_at, version, op_data) VALUES ($1, 0, $2, ${q.expiry('$3')}, ${NEXT}, $4)
            ON CONFLICT (name) DO NOTHING RETURNING 1`,
            [name, texts.length, ttl, all],
          );
          // Created meanwhile by another writer: lock that one and check again (if_absent then fails, a plain PUT replaces).
          if (c.length === 0) continue;
        }
        await insertItems(q, name, texts, 0, 1);
        if (texts.length > 0) await q.query('SELECT pg_notify($1, $2)', [CHANNEL, name]);
        return !live;
      }
      throw new StoreError('unavailable', `list '${name}' kept changing under concurrent writes; try again`);
    });
  }

  /** One statement: the live list's ends and version and the items of the range, from one snapshot. */
  async range(name: string, start: number, stop: number, out?: VersionOut): Promise<string> {
    const q = this.db.q;
    const len = '(l.tail - l.head)';
    const from = `GREATEST(CASE WHEN $2::int8 < 0 THEN ${len} + $2::int8 ELSE $2::int8 END, 0)`;
    const to = `LEAST(CASE WHEN $3::int8 < 0 THEN ${len} + $3::int8 ELSE $3::int8 END, ${len} - 1)`;
    const r = await q.query(
      `SELECT l.head, l.tail, l.version,
        (SELECT string_agg(i.v, ',' ORDER BY i.pos) FROM pithos_list_items i
          WHERE i.name = l.name AND i.pos >= l.head + ${from} AND i.pos <= l.head + ${to}) AS items
      FROM pithos_lists l WHERE l.name = $1 AND ${q.live('l.expires_at')}`,
      [name, start, stop],
    );
    if (r.length === 0) throw listMissing(name);
    if (out !== undefined) out.version = Number(r[0].version);
    return `{"items":[${(r[0].items as string | null) ?? ''}],"length":${Number(r[0].tail) - Number(r[0].head)}}`;
  }

  /**
   * A range of at most ELEMENT_BATCH items in one statement, as `range`; a
   * longer one a page per step in a read-only REPEATABLE READ transaction
   * (list-pages.ts), its ends read in the same transaction: one instant.
   */
  async items(name: string, start: number, stop: number): Promise<Elements<string[]>> {
    const q = this.db.q;
    const len = '(l.tail - l.head)';
    const from = `GREATEST(CASE WHEN $2::int8 < 0 THEN ${len} + $2::int8 ELSE $2::int8 END, 0)`;
    const to = `LEAST(CASE WHEN $3::int8 < 0 THEN ${len} + $3::int8 ELSE $3::int8 END, ${len} - 1)`;
    const r = await q.query(
      `SELECT l.head, l.tail, l.version,
        ARRAY(SELECT i.v FROM pithos_list_items i
          WHERE i.name = l.name AND i.pos >= l.head + ${from} AND i.pos <= l.head + ${to} ORDER BY i.pos LIMIT $4) AS items
      FROM pithos_lists l WHERE l.name = $1 AND ${q.live('l.expires_at')}`,
      [name, start, stop, ELEMENT_BATCH],
    );
    if (r.length === 0) throw listMissing(name);
    const n = Number(r[0].tail) - Number(r[0].head);
    const range = rangeOf(n, start, stop);
    if (range.to - range.from < ELEMENT_BATCH) return { count: n, version: Number(r[0].version), first: r[0].items as string[], rest: undefined };
    return withReader(this.db, async (rd) => {
      const h = await rd.q.query(`SELECT head, tail, version FROM pithos_lists WHERE name = $1 AND ${rd.q.live()}`, [name]);
      if (h.length === 0) throw listMissing(name);
      const head = Number(h[0].head);
      const count = Number(h[0].tail) - head;
      const { from: a, to: b } = rangeOf(count, start, stop);
      return { count, version: Number(h[0].version), first: [], rest: listPages(rd, name, head + a, head + b) };
    });
  }

  async push(name: string, values: unknown[], side: ListSide, create: boolean, pre?: Precondition): Promise<string> {
    const texts = values.map((v) => JSON.stringify(v));
    const alone = async (): Promise<string> => `{"length":${await this.db.run((q) => pushItems(q, name, texts, side, create, pre))}}`;
    if (this.group === undefined || pre !== undefined) return alone();
    // pithos_group does what pushItems does, NOTIFY included.
    return this.group.submit({ k: 'p', n: name, s: side, c: create, vals: texts }, (r) => `{"length":${Number(r)}}`, alone);
  }

  async patch(name: string, p: ListPatch, pre?: Precondition): Promise<string> {
    const len = await this.db.run(async (q) => {
      const h = await lockList(q, name, false);
      check(name, h, pre);
      if (h === undefined) throw listMissing(name);
      const n = h.tail - h.head;
      let { head, tail } = h;
      let op: string | null = null;
      let data: string | null = null;
      if (p.set !== undefined) {
        const i = indexOf(n, p.set.index, 'set.index');
        const text = JSON.stringify(p.set.value);
        await q.query('UPDATE pithos_list_items SET v = $3 WHERE name = $1 AND pos = $2', [name, head + i, text]);
        op = 'set';
        data = `{"index":${p.set.index},"value":${text},"length":${n}}`;
      } else if (p.trim !== undefined) {
        const { from, to } = rangeOf(n, p.trim.start, p.trim.stop);
        const keepFrom = to < from ? n : from;
        const keepTo = to < from ? n - 1 : to;
        await q.query('DELETE FROM pithos_list_items WHERE name = $1 AND (pos < $2 OR pos > $3)', [name, head + keepFrom, head + keepTo]);
        tail = head + keepTo + 1;
        head += keepFrom;
        op = 'trim';
        data = `{"start":${p.trim.start},"stop":${p.trim.stop},"removed":${n - (tail - head)},"length":${tail - head}}`;
      } else if (p.remove !== undefined) {
        const r = await q.query('SELECT v FROM pithos_list_items WHERE name = $1 ORDER BY pos', [name]);
        const items = r.map((x) => x.v as string);
        const gone = removals(items, p.remove.value, p.remove.count);
        if (gone.length > 0) {
          // Positions stay dense: the items after the first removed one move down to close the gaps.
          const out = new Set(gone);
          const kept = items.filter((_, i) => !out.has(i)).slice(gone[0]);
          await q.query('DELETE FROM pithos_list_items WHERE name = $1 AND pos >= $2', [name, head + gone[0]]);
          await insertItems(q, name, kept, head + gone[0], 1);
          tail -= gone.length;
        }
        op = 'remove';
        data = `{"value":${JSON.stringify(p.remove.value)},"count":${p.remove.count},"removed":${gone.length},"length":${tail - head}}`;
      }
      if (p.ttl !== undefined) await q.query(`UPDATE pithos_lists SET expires_at = ${q.expiry('$2')} WHERE name = $1`, [name, p.ttl]);
      await setHead(q, name, head, tail, op, data);
      return tail - head;
    });
    return `{"length":${len}}`;
  }

  async delete(name: string, pre?: Precondition): Promise<void> {
    await this.db.run(async (q) => {
      const h = await lockList(q, name, false);
      check(name, h, pre);
      if (h === undefined) throw listMissing(name);
      await q.query('DELETE FROM pithos_list_items WHERE name = $1', [name]);
      await q.query('DELETE FROM pithos_lists WHERE name = $1', [name]);
    });
  }

  async pop(name: string, p: ListPop, pre?: Precondition): Promise<string> {
    if (p.waitMs === 0) {
      const items = await this.db.run((q) => popItems(q, name, p, pre));
      if (items === undefined) throw listMissing(name);
      return `{"items":[${items.join(',')}]}`;
    }
    if (this.waiting.closed) throw shuttingDown();
    await this.listen();
    // Shutdown began while the LISTEN connection was being opened: nothing waits any more.
    if (this.waiting.closed) throw shuttingDown();
    const w = this.waiting.enqueue(name, p, pre);
    this.serve(name);
    return w.promise;
  }

  /**
   * Tries the list's waiters in arrival order, one pop at a time, until one finds nothing.
   * A waiter waits on purpose, up to its own timeout, so the waiting is no part of the
   * blocking pop's deadline: each try is one operation with a deadline of its own.
   */
  private serve(name: string): void {
    if (this.serving.has(name)) {
      this.dirty.add(name);
      return;
    }
    this.serving.add(name);
    void this.db.ops.apart(async () => {
      try {
        for (;;) {
          this.dirty.delete(name);
          const w = this.waiting.next(name);
          if (w === undefined) return;
          const pre = w.tried ? undefined : w.pre;
          w.tried = true;
          w.taken = true;
          let items: string[] | undefined;
          try {
            // Every node's waiters are woken by every push: a plain read first keeps the ones
            // that would find nothing out of the list row's lock queue (the locked pop decides).
            items = await this.db.ops.run(async () => {
              const n = pre === undefined ? await listLength(this.db.q, name) : 1;
              return n === undefined || n === 0 ? [] : await this.db.run((tx) => popItems(tx, name, w.p, pre));
            });
          } catch (err) {
            w.taken = false;
            this.waiting.settle(w, undefined, err);
            continue;
          }
          w.taken = false;
          if (items !== undefined && items.length > 0) {
            // Answered even when it lapsed meanwhile: the items are out of the list, so they go to it.
            this.waiting.settle(w, `{"items":[${items.join(',')}]}`, undefined);
            continue;
          }
          if (w.lapsed) {
            this.waiting.giveUp(w);
            continue;
          }
          // Nothing to pop: wait for a push (or the recheck).
          if (!this.dirty.has(name)) return;
        }
      } finally {
        this.serving.delete(name);
      }
    });
  }

  /** One LISTEN connection per node, opened by the first waiting pop. */
  private listen(): Promise<void> {
    if (this.listening !== undefined) return this.listening;
    this.listening = (async () => {
      const c = new pg.Client({ connectionString: this.db.opts.url });
      c.on('error', () => {
        // The connection broke: the next waiting pop opens another; waiters meanwhile rely on the recheck.
        this.listener = undefined;
        this.listening = undefined;
      });
      c.on('notification', (n) => {
        if (n.payload !== undefined && this.waiting.has(n.payload)) this.serve(n.payload);
      });
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
      if (this.waiting.closed) {
        // Opened for a pop that shutdown has answered meanwhile: nothing will wait on it.
        this.endListener(c);
        return;
      }
      this.listener = c;
      this.recheck = setInterval(() => {
        for (const name of this.waiting.names()) this.serve(name);
      }, RECHECK_MS);
      this.recheck.unref();
    })().catch((err) => {
      this.listening = undefined;
      throw err;
    });
    return this.listening;
  }

  /** Shutdown has begun (WaitingPops.stop; a pop being decided is an attempt a push on any node woke), and the LISTEN connection ends. */
  stopWaiting(): void {
    if (this.waiting.closed) return;
    this.waiting.stop();
    clearInterval(this.recheck);
    if (this.listener !== undefined) this.endListener(this.listener);
    this.listener = undefined;
  }

  private endListener(c: pg.Client): void {
    void c.end().catch((err: unknown) => this.db.opts.log('warn', `lists: closing the LISTEN connection failed: ${(err as Error)?.message ?? String(err)}`));
  }
}
