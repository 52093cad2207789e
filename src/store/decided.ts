/**
 * What a store can say of a write's promise at the moment it returns it: the
 * log store decides a write in the call itself when what it reads is in
 * memory (atomic.ts), and then only durability is left pending. A protocol
 * that answers in command order (the RESP listener, the REST pipeline) may
 * start the next command at once after a decided write, so a pipeline of them
 * shares group commits. A store that cannot tell (the shared store) marks
 * nothing, and the caller waits as for any promise.
 */
const decided = new WeakSet<Promise<unknown>>();

/** The write is decided and queued (or needs no write): `p` settles once it is durable, or rejects if the write fails. */
export function markDecided<T>(p: Promise<T>): Promise<T> {
  decided.add(p);
  return p;
}

export function isDecided(p: Promise<unknown>): boolean {
  return decided.has(p);
}

/** `p.then(f)`, decided when `p` is. */
export function thenKeeping<T, U>(p: Promise<T>, f: (v: T) => U): Promise<U> {
  const q = p.then(f);
  if (decided.has(p)) decided.add(q);
  return q;
}
