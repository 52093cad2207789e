/**
 * The listing view (docs/query.md, "Listing"): every top-level key (tables,
 * records, variants, locks) in one ordered set beside the engine's key
 * directory, so a page of names costs its own size, not the key space.
 *
 * It is a superset of the live keys, never a subset: a key is added just
 * before the batch that creates it goes to the engine, and removed only once a delete is
 * in the log and the key is still gone. Names that died otherwise (expiry, a
 * failed write undone by the engine) are skipped by the liveness check every
 * page makes against the engine, and dropped then. Built at open from one
 * pass over the directory's top-level keys.
 *
 * The liveness check is one directory lookup per name, and on a large
 * directory each is a few cache misses (docs/benchmarks.md, "What limits the
 * listing"). A namespace where no name can be dead skips it: no name there
 * has carried an expiry since open (nor any key at open), no delete there is
 * on its way to the log, and no write there has failed. Then every name in
 * the view is live and has no expiry, which is what the check would say.
 */
import { type Engine, Op } from '../../engine/index.js';
import { codePointCompare, codePointCompareFor, SortedList } from '../sorted.js';
import type { Tx } from './atomic.js';
import { isTopLevel, namespaceOf } from './keys.js';

/** A page of names: live keys, their absolute expiries (0 = never), whether more may follow. */
export interface Page {
  keys: string[];
  exps: number[];
  more: boolean;
}

/** Per namespace (the key's first character): whether a name in the view may be dead. */
interface Doubt {
  /** A name here has carried an expiry, or a write here failed (sticky: rare, and then the check prunes). */
  sticky: boolean;
  /** Deletes here written to the engine whose batch has not settled yet. */
  deletes: number;
}

export class NameView {
  private list: SortedList<string>;
  private readonly doubt = new Map<number, Doubt>();
  private readonly anyExpiring: boolean;

  /** `keys`: every top-level key, in any order (LogStore.open collects them in its one pass over the directory). */
  constructor(
    private readonly engine: Engine,
    keys: string[],
  ) {
    // Which keys carry an expiry is not known without a lookup each; any at all makes every namespace check.
    this.anyExpiring = engine.expiringKeys > 0;
    // Native sort is UTF-16 order; only names with characters above U+D7FF can sort differently.
    keys.sort();
    if (keys.some((k) => /[\ud800-\uffff]/.test(k))) keys.sort(codePointCompare);
    this.list = SortedList.fromSorted(codePointCompare, keys, codePointCompareFor);
  }

  private doubtOf(key: string): Doubt {
    const ns = namespaceOf(key);
    let d = this.doubt.get(ns);
    if (d === undefined) this.doubt.set(ns, (d = { sticky: this.anyExpiring, deletes: 0 }));
    return d;
  }

  /** Whether every name of the namespace of `key` in the view is live with no expiry. */
  private certain(key: string): boolean {
    const d = this.doubt.get(namespaceOf(key));
    return d === undefined ? !this.anyExpiring : !d.sticky && d.deletes === 0;
  }

  get size(): number {
    return this.list.size;
  }

  /**
   * Batch extender (atomic.ts), before the write, registered last: adds the
   * keys the batch creates. A key that is live now is in the view already, so an overwrite
   * (the common PUT) costs one directory lookup, no search.
   */
  readonly beforeWrite = (tx: Tx): void => {
    let added: string[] | undefined;
    const ops = tx.ops;
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op !== Op.Put || !isTopLevel(o.key)) continue;
      if (!tx.stored(o.key)) {
        this.list.add(o.key);
        (added ??= []).push(o.key);
      }
      if (o.expiresAt !== 0) this.doubtOf(o.key).sticky = true;
    }
    this.added = added;
  };

  /**
   * Names the last beforeWrite added: read by onCommit, which runs right after
   * the same batch's engine.write (nothing runs between the last extender and
   * the observers, atomic.ts).
   */
  private added: string[] | undefined;

  /** Commit observer (atomic.ts): removes deleted keys once the log has the delete and they are still gone. */
  readonly onCommit = (tx: Tx, written: Promise<void>): void => {
    let dels: string[] | undefined;
    const ops = tx.ops;
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op === Op.Del && isTopLevel(o.key)) (dels ??= []).push(o.key);
    }
    // An overwrite of a live name needs nothing: undone or not, the name stays live.
    const added = this.added;
    this.added = undefined;
    if (dels === undefined && added === undefined) return;
    const gone = dels;
    if (gone !== undefined) for (const k of gone) this.doubtOf(k).deletes++;
    written.then(
      () => {
        if (gone === undefined) return;
        for (const k of gone) {
          this.doubtOf(k).deletes--;
          if (!this.engine.has(k)) this.list.delete(k);
        }
      },
      () => {
        // The engine undid the batch: the keys are as they were. A deleted name
        // is live again, and a page that ran meanwhile may have dropped it from
        // the view: put it back. A name this batch added is in the view but not
        // in the engine, so its namespace is checked from now on.
        if (gone !== undefined) {
          for (const k of gone) {
            this.doubtOf(k).deletes--;
            if (this.engine.has(k)) this.list.add(k);
          }
        }
        if (added !== undefined) for (const k of added) this.doubtOf(k).sticky = true;
      },
    );
  };

  /**
   * Up to `limit` live keys that start with `prefix` and sort after `after`
   * (all three include the namespace's `X/`), live at `now`, with their
   * expiries, and whether more may follow. Dead keys met on the way are
   * dropped from the view.
   */
  page(prefix: string, after: string | null, limit: number, now: number): Page {
    const p: Page = { keys: [], exps: [], more: false };
    let dead: string[] | undefined;
    const start = after !== null && codePointCompare(after, prefix) > 0 ? after : prefix;
    const engine = this.engine;
    if (this.certain(prefix)) {
      this.list.walk(start, start === after, (k) => {
        if (!k.startsWith(prefix)) return false;
        if (p.keys.length === limit) {
          p.more = true;
          return false;
        }
        p.keys.push(k);
        p.exps.push(0);
        return true;
      });
      return p;
    }
    // One directory lookup per name: its expiry, undefined when it is gone at `now`.
    this.list.walk(start, start === after, (k) => {
      if (!k.startsWith(prefix)) return false;
      const exp = engine.expiresAt(k, now);
      if (exp === undefined) {
        (dead ??= []).push(k);
        return true;
      }
      if (p.keys.length === limit) {
        p.more = true;
        return false;
      }
      p.keys.push(k);
      p.exps.push(exp);
      return true;
    });
    if (dead !== undefined) for (const k of dead) this.list.delete(k);
    return p;
  }
}
