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
 */
import { type Engine, Op } from '../../engine/index.js';
import { codePointCompare, SortedList } from '../sorted.js';
import type { Tx } from './atomic.js';

/** Top-level keys are `X/name`; row and index keys start with a lower-case letter and U+0000. */
export const isTopLevel = (key: string): boolean => key.charCodeAt(1) === 47 /* / */;

/** A page of names: live keys, their absolute expiries (0 = never), whether more may follow. */
export interface Page {
  keys: string[];
  exps: number[];
  more: boolean;
}

export class NameView {
  private list: SortedList<string>;

  /** `keys`: every top-level key, in any order (LogStore.open collects them in its one pass over the directory). */
  constructor(private readonly engine: Engine, keys: string[]) {
    // Native sort is UTF-16 order; only names with characters above U+D7FF can sort differently.
    keys.sort();
    if (keys.some((k) => /[\ud800-\uffff]/.test(k))) keys.sort(codePointCompare);
    this.list = SortedList.fromSorted(codePointCompare, keys);
  }

  get size(): number {
    return this.list.size;
  }

  /**
   * Batch extender (atomic.ts), before the write: adds the keys the batch
   * creates. A key that is live now is in the view already, so an overwrite
   * (the common PUT) costs one directory lookup, no search.
   */
  readonly beforeWrite = (tx: Tx): void => {
    const ops = tx.ops;
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op === Op.Put && isTopLevel(o.key) && !this.engine.has(o.key)) this.list.add(o.key);
    }
  };

  /** Commit observer (atomic.ts): removes deleted keys once the log has the delete and they are still gone. */
  readonly onCommit = (tx: Tx, written: Promise<void>): void => {
    let dels: string[] | undefined;
    const ops = tx.ops;
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op === Op.Del && isTopLevel(o.key)) (dels ??= []).push(o.key);
    }
    if (dels === undefined) return;
    const gone = dels;
    written.then(() => {
      for (const k of gone) if (!this.engine.has(k)) this.list.delete(k);
    }, () => {
      // The engine undid the batch: the keys are as they were, and so is this view.
    });
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
