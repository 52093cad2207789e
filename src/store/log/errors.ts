/**
 * The log store's translation of engine failures into the StoreError
 * vocabulary, so that nothing above the store needs to know the engine's
 * error classes (docs/architecture.md). Anything else (an I/O failure other
 * than a full disk, a defect) passes through and is an internal error.
 */
import { BatchTooLargeError, EngineClosedError, StorageFullError } from '../../engine/index.js';
import { StoreError, storageFull } from '../errors.js';

export function fromEngine(err: unknown): unknown {
  if (err instanceof StorageFullError) return storageFull();
  if (err instanceof BatchTooLargeError) return new StoreError('too_large', err.message);
  if (err instanceof EngineClosedError) return new StoreError('unavailable', 'server is shutting down');
  return err;
}

/** For a `.catch` on a cold read: the engine's failure, in the store's terms. */
export function rethrowFromEngine(err: unknown): never {
  throw fromEngine(err);
}
