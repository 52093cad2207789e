/**
 * Group commit on the shared store (docs/scaling.md, "Group commit"): the
 * single-object writes of this node that arrive while MAX_IN_FLIGHT batches
 * are in flight go together, as one call of pithos_group (group-sql.ts), in
 * the next one (of pithos_group_counters when every write is an increment):
 * one statement, one round trip, one transaction, one WAL flush for all of
 * them.
 *
 * No write waits for company: with nothing in flight a write goes out at
 * once, and a batch of one runs on the general path (the namespace's own
 * statements, exactly as without group commit), so a lone request costs what
 * it did. A batch holds at most MAX_OPS writes and MAX_BYTES of their JSON;
 * the rest wait for the next one.
 *
 * Each write keeps its own deadline (deadline.ts): a batch must end by the
 * earliest deadline of the writes in it (Db's checkout gives up on it then),
 * and a write whose deadline passed while it waited is answered without being
 * sent. Failures:
 * - a write pithos_group could not apply (a missing object, another type, a
 *   condition the batch does not decide) changed nothing; it runs alone on the
 *   general path, which gives today's answer or StoreError;
 * - the batch as a whole failing is classified once by Db (sql.ts) as a
 *   single statement's failure is: serialization failures and deadlocks are
 *   retried there (the function is one statement: nothing of a failed call
 *   was applied), a lost connection or a deadline mid-statement is every
 *   write's "outcome unknown", a read-only or unreachable database every
 *   write's 503; a write is never sent twice after it may have been applied;
 * - a batch refused by the database for a reason that is not a database
 *   failure (classified as nothing) applied nothing either: each write then
 *   runs alone.
 */
import { StoreError } from '../errors.js';
import type { BatchObserver } from '../store.js';
import { DEADLINE_SLACK_MS, type Db, type Named } from './sql.js';

/** Writes in one batch at most. Above 64, a transaction's subtransactions overflow PostgreSQL's per-backend cache of them. */
export const MAX_OPS = 64;
/** Members of a set or sorted-set write in a batch at most (a write of more goes alone). */
export const GROUP_MEMBERS = 64;
/** Bytes of the batch's JSON at most (a write larger than this goes alone). */
export const MAX_BYTES = 256 * 1024;
/**
 * Batches in flight at once on this node: a second one is applied while the
 * first commits (measured against one: docs/benchmarks.md).
 */
export const MAX_IN_FLIGHT = 2;

const GROUP: Named = { name: 'pithos_group', text: 'SELECT pithos_group($1::jsonb, $2::int8) AS r' };
/** A batch of increments only (group-sql.ts, pithos_group_counters): less database time per increment than pithos_group. */
const COUNTERS: Named = { name: 'pithos_group_counters', text: 'SELECT op, val FROM pithos_group_counters($1::text[], $2::int8[], $3::int8)' };

/** One write of a batch, as pithos_group takes it (group-sql.ts). */
export type GroupOp =
  | { k: 'i'; n: string; d: number }
  | { k: 'v'; n: string; t: string; v: string; ttl: number }
  | { k: 'r'; n: string; b: string; ttl: number }
  | { k: 'd'; n: string }
  | { k: 'p'; n: string; s: 'left' | 'right'; c: boolean; vals: string[] }
  | { k: 'rp'; n: string; b: string; ver: number; ttl?: number }
  | { k: 'sa'; n: string; c: boolean; m: string; hex: string[] }
  | { k: 'sr'; n: string; m: string; hex: string[] }
  | { k: 'za'; n: string; c: boolean; mode: string; e: string; hex: string[]; sc: string[] }
  | { k: 'zi'; n: string; c: boolean; m: string; hex: string[]; d: string }
  | { k: 'zr'; n: string; m: string; hex: string[] };

/** One write's outcome in a batch: its result, or f (it changed nothing and runs alone). */
type Result = { i: number; r?: unknown; f?: true };

/** The batch's names and deltas when every write in it is an increment. */
function increments(batch: Job[]): { names: string[]; deltas: number[] } | undefined {
  const names: string[] = [];
  const deltas: number[] = [];
  for (const j of batch) {
    if (j.op.k !== 'i') return undefined;
    names.push(j.op.n);
    deltas.push(j.op.d);
  }
  return { names, deltas };
}

/** The write must run alone, on the general path (it changed nothing). */
const ALONE = Symbol('alone');

interface Job {
  op: GroupOp;
  text: string;
  until: number;
  resolve(v: unknown): void;
  reject(err: unknown): void;
  /** For a write sent alone: called back when its general path has answered (the batcher's slot is held until then). */
  hold(done: () => void): void;
}

export class GroupCommit {
  private queue: Job[] = [];
  private inFlight = 0;
  private observers: BatchObserver[] = [];

  constructor(
    private readonly db: Db,
    private readonly maxOps = MAX_OPS,
    private readonly maxBytes = MAX_BYTES,
    private readonly maxInFlight = MAX_IN_FLIGHT,
  ) {}

  observe(o: BatchObserver): void {
    this.observers.push(o);
  }

  /**
   * Applies `op` in a batch; `parse` turns pithos_group's result into the
   * answer; `alone` is the general path, for a write sent alone or one the
   * batch could not apply. Called inside the write's store operation.
   */
  async submit<T>(op: GroupOp, parse: (r: unknown) => T, alone: () => Promise<T>): Promise<T> {
    const until = this.db.ops.current?.until ?? Date.now() + this.db.ops.ms;
    let release: (() => void) | undefined;
    const r = await new Promise<unknown>((resolve, reject) => {
      this.queue.push({ op, text: JSON.stringify(op), until, resolve, reject, hold: (done) => (release = done) });
      this.flush();
    });
    if (r !== ALONE) return parse(r);
    try {
      return await alone();
    } finally {
      release?.();
    }
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.take();
      if (batch.length === 0) continue;
      this.inFlight++;
      void this.send(batch).then(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  /** The next batch: the writes waiting, in arrival order, within the bounds; those already past their deadline are answered. */
  private take(): Job[] {
    const now = Date.now();
    const out: Job[] = [];
    let bytes = 0;
    while (this.queue.length > 0 && out.length < this.maxOps) {
      const j = this.queue[0];
      if (j.until - DEADLINE_SLACK_MS <= now) {
        this.queue.shift();
        j.reject(
          new StoreError('unreachable', 'the database work of this request did not start within its bound (a busy database); nothing was changed; try again'),
        );
        continue;
      }
      if (out.length > 0 && bytes + j.text.length > this.maxBytes) break;
      bytes += j.text.length;
      out.push(this.queue.shift() as Job);
    }
    return out;
  }

  /** Sends one batch and answers each of its writes; never rejects. */
  private async send(batch: Job[]): Promise<void> {
    const started = performance.now();
    if (batch.length === 1) {
      // Nothing to share the round trip with: the general path, as without group commit.
      await new Promise<void>((done) => {
        batch[0].hold(done);
        batch[0].resolve(ALONE);
      });
      return this.observed(1, started);
    }
    const until = Math.min(...batch.map((j) => j.until));
    let results: Result[];
    try {
      results = await this.db.ops.until(until, () => this.apply(batch));
    } catch (err) {
      this.observed(batch.length, started);
      // A database failure: every write's answer, as for a single statement. Anything else applied nothing: each goes alone.
      for (const j of batch) {
        if (err instanceof StoreError) j.reject(err);
        else j.resolve(ALONE);
      }
      return;
    }
    this.observed(batch.length, started);
    const answered = new Set<number>();
    for (const x of results) {
      answered.add(x.i);
      batch[x.i - 1].resolve(x.f === true ? ALONE : x.r);
    }
    for (let i = 0; i < batch.length; i++) {
      if (!answered.has(i + 1)) batch[i].reject(new Error(`pithos_group answered no result for write ${i + 1} of ${batch.length}`));
    }
  }

  /** One statement for the batch: pithos_group_counters when every write is an increment, else pithos_group. */
  private async apply(batch: Job[]): Promise<Result[]> {
    const offset = Math.trunc(this.db.opts.offsetMs());
    // Migrations 11 to 14 are applied together or skipped together (schema.ts): with pithos_group comes pithos_group_counters.
    const incs = increments(batch);
    if (incs === undefined) return (await this.db.q.query(GROUP, [`[${batch.map((j) => j.text).join(',')}]`, offset]))[0].r as Result[];
    const rows = await this.db.q.query(COUNTERS, [incs.names, incs.deltas, offset]);
    const applied = new Map(rows.map((x) => [Number(x.op), x.val]));
    return batch.map((_, i) => (applied.has(i + 1) ? { i: i + 1, r: applied.get(i + 1) } : { i: i + 1, f: true }));
  }

  private observed(ops: number, started: number): void {
    const s = (performance.now() - started) / 1e3;
    for (const o of this.observers) o(ops, s);
  }
}
