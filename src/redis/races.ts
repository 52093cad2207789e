/**
 * Read, decide, write under the version read: how a Redis command whose
 * answer depends on what it replaces (GETDEL, SET … GET, HINCRBY, LSET,
 * SPOP, ZADD GT, …) stays correct when another client, on this node or
 * another, writes the same key in between. The write carries the version
 * it read (`ifVersion`, `ifAbsent`); the store refuses it when the key
 * changed, and the command reads and decides again.
 */
import { ErrorReply } from './resp.js';

/** What an attempt returns when it lost a race without a store failure (a transaction's check): it runs again. */
export const RACED = Symbol('raced');

/** After this many lost races in a row the client is told to try again (a key written without pause by others). */
const ATTEMPTS = 50;

export const KEPT_CHANGING = new ErrorReply('ERR the key kept changing under concurrent writes; try again');

/** Whether a store failure is a refused version condition: another writer got there first. */
export const lostRace = (err: unknown): boolean => (err as { kind?: unknown } | null)?.kind === 'precondition';

/**
 * Runs `attempt` until it neither throws a refused version condition nor
 * returns RACED, at most ATTEMPTS times; any other failure ends it. After a
 * lost race it waits a random time that grows with the losses (up to
 * MAX_BACKOFF_MS): writers that lost together on the shared store, where a
 * read and its write are two round trips, come back apart, so each round has
 * fewer of them instead of all colliding again.
 */
export async function retryOnRace<T>(attempt: () => Promise<T | typeof RACED>): Promise<T> {
  for (let i = 0; i < ATTEMPTS; i++) {
    try {
      const r = await attempt();
      if (r !== RACED) return r;
    } catch (err) {
      if (!lostRace(err)) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(MAX_BACKOFF_MS, 2 ** i)));
  }
  throw KEPT_CHANGING;
}

/** The longest wait after a lost race: 50 losses in a row then take at most about 2 s. */
const MAX_BACKOFF_MS = 50;
