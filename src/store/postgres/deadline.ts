/**
 * One deadline per store operation (docs/scaling.md, "Every wait is
 * bounded"). A request on the shared store is one call of a Store method;
 * everything that call waits for on the database (a pool connection, every
 * statement, retries after serialization failures, the COMMIT) shares one
 * budget, so no answer waits longer than the bound, however many steps the
 * operation takes and whatever the database does. Db's checkout reads the
 * budget of the operation it runs in (AsyncLocalStorage): the namespace code
 * calls the database as before and passes nothing down.
 *
 * Work an operation leaves running after it has answered (a large answer's
 * later pages, sent at the client's pace; an index built in the background)
 * is past the operation's budget: a closed budget is not used, and such work
 * gets a deadline per step, as does work done outside any operation (the
 * sweeper, the change feed's polls).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export class Budget {
  /** False once the operation has answered. */
  open = true;
  constructor(readonly until: number) {}
}

export class Operations {
  private readonly als = new AsyncLocalStorage<Budget>();

  /** `ms`: every operation's budget. */
  constructor(readonly ms: number) {}

  /** The budget of the operation running now; undefined outside one, or once it has answered. */
  get current(): Budget | undefined {
    const b = this.als.getStore();
    return b?.open === true ? b : undefined;
  }

  /** Runs `fn` as one operation with one budget; inside another operation it shares that one's. */
  run<T>(fn: () => T): T {
    if (this.current !== undefined) return fn();
    const b = new Budget(Date.now() + this.ms);
    const out = this.als.run(b, fn);
    if (!isThenable(out)) {
      b.open = false;
      return out;
    }
    return out.then(
      (v) => {
        b.open = false;
        return v;
      },
      (err: unknown) => {
        b.open = false;
        throw err;
      },
    ) as T;
  }

  /** Runs `fn` as one operation that must end by `until` (ms since the epoch): a batch of several operations' writes (group-commit.ts). */
  until<T>(until: number, fn: () => Promise<T>): Promise<T> {
    const b = new Budget(until);
    return this.als.run(b, fn).finally(() => {
      b.open = false;
    });
  }

  /** Runs `fn` outside any operation: work that waits on purpose (a blocking pop), whose database steps are bounded one by one. */
  apart<T>(fn: () => T): T {
    return this.als.exit(fn);
  }

  /**
   * `ns` with every method called on it from outside (the HTTP layer's
   * calls) run as one operation. Calls a method makes on its own object
   * reach the object itself, inside the caller's operation.
   */
  bound<T extends object>(ns: T): T {
    const wrapped = new Map<PropertyKey, unknown>();
    return new Proxy(ns, {
      get: (target, key) => {
        const v: unknown = Reflect.get(target, key, target);
        if (typeof v !== 'function') return v;
        let w = wrapped.get(key);
        if (w === undefined) {
          const f = v as (...args: unknown[]) => unknown;
          w = (...args: unknown[]): unknown => this.run(() => f.apply(target, args));
          wrapped.set(key, w);
        }
        return w;
      },
    });
  }
}

function isThenable(x: unknown): x is Promise<unknown> {
  return typeof (x as { then?: unknown } | null)?.then === 'function';
}
