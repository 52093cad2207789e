/**
 * The one error type a Store fails with. `kind` says what went wrong in the
 * caller's terms, never in HTTP's; src/http/errors.ts maps each kind to a
 * status in one table, so a second store (or a CLI) can use the same kinds.
 */
export type StoreErrorKind =
  | 'invalid' // malformed or ill-typed input
  | 'forbidden' // wrong lock token
  | 'not_found' // no such object, or expired
  | 'conflict' // exists, type mismatch, overflow, failed transaction check
  | 'precondition' // a conditional write whose condition does not hold
  | 'too_large' // the change exceeds what one atomic write may hold
  | 'locked' // lock held by someone else
  | 'storage_full' // the store's disk is full: writes are refused, reads go on
  | 'unavailable' // shutting down, no change feed, too many conflicting attempts
  | 'unreachable'; // the backing database cannot serve now (down, failing over, read-only, over its time budget): try again

export class StoreError extends Error {
  constructor(
    readonly kind: StoreErrorKind,
    message: string,
  ) {
    // An expected outcome (a missing key, a failed condition), answered by its kind and never
    // logged with a stack: capturing one cost about a third of a GET miss over RESP (measured).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

/**
 * Work refused for now to keep memory or database connections bounded (too
 * many large answers under way): 'unavailable', and the client may ask again
 * shortly (the HTTP answer carries Retry-After).
 */
export class BusyError extends StoreError {
  constructor(message: string) {
    super('unavailable', message);
  }
}

export const invalid = (message: string): StoreError => new StoreError('invalid', message);
export const notFound = (message: string): StoreError => new StoreError('not_found', message);
export const conflict = (message: string): StoreError => new StoreError('conflict', message);

/** The one wording of a full disk, whichever store's disk it is. */
export const DISK_FULL_MESSAGE = 'the disk is full: writes are refused until space is freed; reads still work';
export const storageFull = (): StoreError => new StoreError('storage_full', DISK_FULL_MESSAGE);
