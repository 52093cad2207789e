/**
 * The console's connection to its own server: the typed client (client/, entry client/index.ts) with the
 * token from sessionStorage, and every request marked with X-Pithos-Console so that the
 * server's metrics can tell the console's own polling from the load it shows.
 */
import { Pithos, PithosError } from '../../client/index.js';
import { duration } from './format.js';

export const TOKEN_KEY = 'pithos-console-token';
export const CONSOLE_HEADER = 'X-Pithos-Console';

export function makeClient(token: string): Pithos {
  const marked: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set(CONSOLE_HEADER, '1');
    return fetch(input, { ...init, headers });
  };
  return new Pithos({ url: '', token, fetch: marked });
}

/** Set by the app: what a 401 does (back to the sign-in form). */
let unauthorized: (message: string) => void = () => undefined;
export function onUnauthorized(f: (message: string) => void): void {
  unauthorized = f;
}

/** The words to show for a failure; a 401 also signs out. */
export function errorText(err: unknown): string {
  if (err instanceof PithosError) {
    if (err.status === 401) unauthorized('The server refused the token (401). Sign in again.');
    return err.status === 0 ? `No answer: ${err.message}` : `${err.status}: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export const isNotFound = (err: unknown): boolean => err instanceof PithosError && err.status === 404;

export const enc = encodeURIComponent;

/**
 * What is left of one object's lifetime, in ms: null when it never expires, undefined when it
 * is gone. From a listing of one name: a name comes first among the names it is a prefix of.
 */
export async function lifeLeft(db: Pithos, kind: 'record' | 'variant' | Collection, name: string): Promise<number | null | undefined> {
  const it = (await db.list(kind, { prefix: name, limit: 1 })).items[0];
  return it?.name === name ? it.ttl_ms : undefined;
}

/**
 * The `ttl` that keeps an object's lifetime across a save from the console. A PUT replaces
 * the lifetime with the one it carries (none: the object no longer expires), and the API
 * has no "keep", so what is left is sent: whole seconds rounded up, so it never ends sooner
 * than it would have (and never 0, which would mean never).
 */
export const keepTtl = (left: number | null | undefined): number | undefined =>
  left === null || left === undefined ? undefined : Math.max(1, Math.ceil(left / 1000));

/** "expires in 8 min 20 s" / "never expires": what is left as read (lifeLeft). */
export const lifeText = (left: number | null | undefined): string => (left === null || left === undefined ? 'never expires' : `expires in ${duration(left)}`);

/** The kinds whose views share the version guard and the lifetime card (components/Collection.tsx). */
export type Collection = 'list' | 'set' | 'zset';

/** A write's condition as the API's body field: `if_version` when the view's guard is on. */
export const ifVersionField = (o: { ifVersion?: number }): { if_version?: number } => (o.ifVersion === undefined ? {} : { if_version: o.ifVersion });

/** PATCH with only `ttl` (and the guard's `if_version`): the remaining lifetime, the items untouched; 0 = never expires. */
export async function setLifetime(db: Pithos, kind: Collection, name: string, ttl: number, o: { ifVersion?: number }): Promise<void> {
  const op = ({ list: 'patchList', set: 'setSetTtl', zset: 'setZsetTtl' } as const)[kind];
  await db.call(op, [name], { body: { ttl, ...ifVersionField(o) } });
}

/** DELETE of a list, set or sorted set, with the guard's `if_version`. */
export async function deleteCollection(db: Pithos, kind: Collection, name: string, o: { ifVersion?: number }): Promise<void> {
  const op = ({ list: 'deleteList', set: 'deleteSet', zset: 'deleteZset' } as const)[kind];
  const cond = ifVersionField(o);
  await db.call(op, [name], cond.if_version === undefined ? {} : { body: cond });
}
