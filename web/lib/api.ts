/**
 * The console's connection to its own server: the typed client (client/index.ts) with the
 * token from sessionStorage, and every request marked with X-Pithos-Console so that the
 * server's metrics can tell the console's own polling from the load it shows.
 */
import { Pithos, PithosError } from '../../client/index.js';

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
