/**
 * The one place where failures become HTTP statuses (docs/api.md, "Errors").
 * Store failures carry a StoreError kind; failures of the HTTP exchange
 * itself (unknown path, wrong method, body too large, auth) are HttpErrors.
 * Anything else is a 500: the client gets a generic message and the details
 * go to the server log.
 */
import { BusyError, StoreError, type StoreErrorKind } from '../store/errors.js';

const STATUS: Record<StoreErrorKind, number> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  precondition: 412,
  too_large: 413,
  locked: 423,
  storage_full: 507,
  unavailable: 503,
  unreachable: 503,
};

/** Seconds a client should wait before retrying when the database cannot serve (a failover takes a few). */
export const RETRY_AFTER_S = 1;

export type HttpErrorKind = 'invalid' | 'unauthorized' | 'not_found' | 'method' | 'too_large';
const HTTP_STATUS: Record<HttpErrorKind, number> = { invalid: 400, unauthorized: 401, not_found: 404, method: 405, too_large: 413 };

export class HttpError extends Error {
  constructor(
    readonly kind: HttpErrorKind,
    message: string,
    readonly headers?: string[],
  ) {
    super(message);
  }

  /** `hint`, when given, follows the message (path-hints.ts). */
  static notFound(method: string, path: string, hint = ''): HttpError {
    return new HttpError('not_found', `no endpoint at ${method} ${path}${hint}`);
  }

  static methodNotAllowed(method: string, path: string, allow: string): HttpError {
    return new HttpError('method', `method ${method} is not allowed on ${path}; allowed: ${allow}`, ['Allow', allow]);
  }
}

export const INTERNAL_MESSAGE = 'internal error';

/** Headers an error answer carries beyond its body: Retry-After when the database cannot serve now. */
export function errorHeaders(err: unknown): string[] | undefined {
  if (err instanceof HttpError) return err.headers;
  if (err instanceof StoreError && err.kind === 'unreachable') return ['Retry-After', String(RETRY_AFTER_S)];
  if (err instanceof BusyError) return ['Retry-After', String(RETRY_AFTER_S)];
  return undefined;
}

/** [status, client-facing message, whether the server log needs the details]. */
export function toStatus(err: unknown): [number, string, boolean] {
  if (err instanceof StoreError) return [STATUS[err.kind], err.message, false];
  if (err instanceof HttpError) return [HTTP_STATUS[err.kind], err.message, false];
  return [500, INTERNAL_MESSAGE, true];
}
