/**
 * The blocking pops' waiting room, the same in every store (docs/api.md,
 * "Lists"): a queue of waiters per list name in arrival order, each with its
 * timeout and its client's leaving, the answer of a pop that waited in vain
 * (no items, or 503 once shutdown has begun), and shutdown's rule that a pop
 * being decided answers what its decision took, so an item is never both
 * taken and refused. A store keeps what tries a pop for a waiter and what
 * wakes the waiters of a list.
 */
import { StoreError } from './errors.js';
import type { ListPop, Precondition } from './store.js';

/** The answer of a pop that took nothing. */
export const NO_ITEMS = '{"items":[]}';

export const shuttingDown = (): StoreError => new StoreError('unavailable', 'server is shutting down');

/** A blocking pop waiting for an item. */
export class Waiter {
  /** Answered (or given up): never served again. */
  done = false;
  /** Its pop is being decided: its time running out, its client leaving or shutdown waits for the decision. */
  taken = false;
  /** Its time ran out (or its client left, or shutdown began) while taken. */
  lapsed = false;
  /** A store that checks `pre` on the first attempt only notes here that it was made. */
  tried = false;
  timer: NodeJS.Timeout | undefined;
  onGone: (() => void) | undefined;
  resolve!: (v: string) => void;
  reject!: (e: unknown) => void;
  /** Settles with the pop's answer. */
  readonly promise: Promise<string>;
  constructor(
    readonly name: string,
    readonly p: ListPop,
    readonly pre: Precondition | undefined,
  ) {
    this.promise = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
  }
}

export class WaitingPops {
  /** Waiting pops per list name, in arrival order; a settled waiter has left its queue. */
  private readonly queues = new Map<string, Waiter[]>();
  /** Shutdown has begun: nothing waits any more. */
  closed = false;

  get empty(): boolean {
    return this.queues.size === 0;
  }

  has(name: string): boolean {
    return this.queues.has(name);
  }

  /** The list's longest-waiting pop whose client is still there; those that left answer no items on the way. */
  next(name: string): Waiter | undefined {
    for (;;) {
      const w = this.queues.get(name)?.[0];
      if (w === undefined || w.p.gone?.aborted !== true) return w;
      this.settle(w, NO_ITEMS, undefined);
    }
  }

  /** The lists that have waiters. */
  names(): IterableIterator<string> {
    return this.queues.keys();
  }

  /** Queues a pop at the end of its list's queue; it lapses after `p.waitMs`, or when its client leaves. */
  enqueue(name: string, p: ListPop, pre: Precondition | undefined): Waiter {
    const w = new Waiter(name, p, pre);
    let q = this.queues.get(name);
    if (q === undefined) this.queues.set(name, (q = []));
    q.push(w);
    w.timer = setTimeout(() => this.lapse(w), p.waitMs);
    if (p.gone !== undefined) {
      w.onGone = () => this.lapse(w);
      if (p.gone.aborted) queueMicrotask(w.onGone);
      else p.gone.addEventListener('abort', w.onGone, { once: true });
    }
    return w;
  }

  /** Its time is up or its client left: it answers no items, unless its pop is being decided right now. */
  private lapse(w: Waiter): void {
    if (w.taken) w.lapsed = true;
    else this.giveUp(w);
  }

  /** Leaves with nothing popped: no items, or 503 once shutdown has begun. */
  giveUp(w: Waiter): void {
    if (this.closed) this.settle(w, undefined, shuttingDown());
    else this.settle(w, NO_ITEMS, undefined);
  }

  /** Leaves the queue with an answer (`v`) or a failure (`err`); a waiter already settled is left as it is. */
  settle(w: Waiter, v: string | undefined, err: unknown): void {
    if (w.done) return;
    this.leave(w);
    if (err !== undefined) w.reject(err);
    else w.resolve(v ?? NO_ITEMS);
  }

  /** Leaves the queue now, its timer and its client's signal released; whoever calls this answers it. */
  leave(w: Waiter): void {
    w.done = true;
    clearTimeout(w.timer);
    if (w.onGone !== undefined) w.p.gone?.removeEventListener('abort', w.onGone);
    const q = this.queues.get(w.name);
    if (q === undefined) return;
    const i = q.indexOf(w);
    if (i >= 0) q.splice(i, 1);
    if (q.length === 0) this.queues.delete(w.name);
  }

  /**
   * Shutdown has begun: every waiting pop answers 503 now, having popped
   * nothing. One whose pop is being decided waits for the decision: it
   * answers the items when it took some, else 503 (giveUp, once lapsed).
   */
  stop(): void {
    this.closed = true;
    for (const q of [...this.queues.values()]) {
      for (const w of [...q]) {
        if (w.taken) w.lapsed = true;
        else this.settle(w, undefined, shuttingDown());
      }
    }
  }
}
