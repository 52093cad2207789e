/**
 * The one place where failures become HTTP statuses (API.md section 11).
 * Anything not listed here is a 500: the client gets a generic message and
 * the details go to the server log.
 */
import { BatchTooLargeError, EngineClosedError, StorageFullError } from '../engine/index.js';
import { type ErrorKind, PithosError } from '../model/errors.js';

const STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method: 405,
  conflict: 409,
  too_large: 413,
  locked: 423,
  unavailable: 503,
};

export const INTERNAL_MESSAGE = 'internal error';
export const DISK_FULL_MESSAGE = 'the disk is full: writes are refused until space is freed; reads still work';

/** [status, client-facing message, whether the server log needs the details]. */
export function toStatus(err: unknown): [number, string, boolean] {
  if (err instanceof PithosError) return [STATUS[err.kind], err.message, false];
  if (err instanceof StorageFullError) return [507, DISK_FULL_MESSAGE, true];
  if (err instanceof BatchTooLargeError) return [413, err.message, false];
  if (err instanceof EngineClosedError) return [503, 'server is shutting down', false];
  return [500, INTERNAL_MESSAGE, true];
}
