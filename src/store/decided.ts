/**
 * What a store can say of a write's promise at the moment it returns it: the
 * log store decides a write in the call itself when what it reads is in
 * memory (atomic.ts), and then only durability is left pending. A protocol
 * that answers in command order (the RESP listener, the REST pipeline) may
 * start the next command at once after a decided write, so a pipeline of them
 * shares group commits; after a refused one it may take another path at once,
 * knowing nothing was written. A store that cannot tell (the shared store)
 * marks nothing: every write is 'pending', and the caller waits as for any
 * promise.
 */
export type Decision = 'decided' | 'refused' | 'pending';

const decided = new WeakSet<Promise<unknown>>();
const refused = new WeakSet<Promise<unknown>>();

/** The write is decided and queued: `p` settles once it is durable (or rejects if the write fails). */
export function markDecided<T>(p: Promise<T>): Promise<T> {
  decided.add(p);
  return p;
}

/** The write was refused in the call and changed nothing: `p` rejects with the reason. */
export function markRefused<T>(p: Promise<T>): Promise<T> {
  refused.add(p);
  return p;
}

export function decisionOf(p: Promise<unknown>): Decision {
  return decided.has(p) ? 'decided' : refused.has(p) ? 'refused' : 'pending';
}

/** `p.then(f)`, and what decisionOf says of `p` said of it too. */
export function thenKeeping<T, U>(p: Promise<T>, f: (v: T) => U): Promise<U> {
  const q = p.then(f);
  if (decided.has(p)) decided.add(q);
  else if (refused.has(p)) refused.add(q);
  return q;
}
