/**
 * The one error type requests fail with. `kind` says what went wrong in the
 * client's terms; src/http/errors.ts maps each kind to a status in one table.
 */
export type ErrorKind =
  | 'invalid' // 400: malformed or ill-typed input
  | 'unauthorized' // 401
  | 'forbidden' // 403: wrong lock token
  | 'not_found' // 404
  | 'method' // 405
  | 'conflict' // 409: exists, type mismatch, overflow
  | 'too_large' // 413
  | 'locked' // 423
  | 'unavailable'; // 503: shutting down

export class PithosError extends Error {
  constructor(readonly kind: ErrorKind, message: string) {
    super(message);
  }
}

export const invalid = (message: string): PithosError => new PithosError('invalid', message);
export const notFound = (message: string): PithosError => new PithosError('not_found', message);
export const conflict = (message: string): PithosError => new PithosError('conflict', message);
