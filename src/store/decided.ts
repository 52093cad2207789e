/**
 * What a store can say of a write's promise at the moment it returns it: the
 * log store decides a write in the call itself when what it reads is in
 * memory (atomic.ts), and then only durability is left pending. A protocol
 * that answers in command order (the RESP listener, the REST pipeline) may
 * start the next command at once after a decided write, so a pipeline of them
 * shares group commits. A store that cannot tell (the shared store) marks
 * nothing, and the caller waits as for any promise.
 *
 * Only the promise marked last is remembered (one reference, no set of them:
 * every write on the log store is marked, and a WeakSet's add cost more than
 * the rest of the marking). So the question is asked right after the call
 * that returned the promise, before any other write starts; asked later, the
 * answer may be "not decided", which costs only the wait, never a wrong
 * order. The mark is forgotten at the end of the synchronous run that made
 * it (a microtask), so a large answer is not kept alive by it.
 */
let last: Promise<unknown> | undefined;
let lastRefused: Promise<unknown> | undefined;
let refusal: unknown;
let clearing = false;

/** Forgets the marks once the code that made them has run (they hold the promises, and so their values). */
function clear(): void {
  last = undefined;
  lastRefused = undefined;
  refusal = undefined;
  clearing = false;
}

function clearSoon(): void {
  if (!clearing) {
    clearing = true;
    queueMicrotask(clear);
  }
}

/** The write is decided and queued (or needs no write): `p` settles once it is durable, or rejects if the write fails. */
export function markDecided<T>(p: Promise<T>): Promise<T> {
  last = p;
  clearSoon();
  return p;
}

/**
 * The decision was taken at once and refused the write (a missing object, a
 * wrong type): nothing was written, and the promise rejects with `err`. A
 * caller that asks `refusalOf` right after the call may act on the refusal
 * in the same step (and must then handle the rejection itself).
 */
export function refusedNow<T>(err: unknown): Promise<T> {
  const p = Promise.reject(err as Error) as Promise<T>;
  lastRefused = p;
  refusal = err;
  clearSoon();
  return p;
}

/** The error a write was refused with at once (refusedNow), or undefined; asked right after the call that returned `p`. */
export function refusalOf(p: Promise<unknown>): unknown {
  return p === lastRefused && p !== undefined ? refusal : undefined;
}

/** Whether `p` is the promise of a decided write; asked right after the call that returned it. */
export function isDecided(p: Promise<unknown>): boolean {
  return p === last && p !== undefined;
}

/** `p.then(f)`, decided when `p` is. */
export function thenKeeping<T, U>(p: Promise<T>, f: (v: T) => U): Promise<U> {
  const q = p.then(f);
  if (p === last) last = q;
  return q;
}
