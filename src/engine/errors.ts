/**
 * Typed engine failures. The HTTP layer maps these to statuses in one place
 * (src/http/errors.ts); the engine itself never thinks in statuses.
 */

/** The device is full (ENOSPC / EDQUOT). Writes are refused, reads go on. */
export class StorageFullError extends Error {
  readonly code = 'STORAGE_FULL';
  constructor(override readonly cause: unknown) {
    super('the disk is full');
  }
}

/** Any other write-side I/O failure (EIO on write or fsync, EBADF, ...). */
export class StorageIOError extends Error {
  readonly code = 'STORAGE_IO';
  constructor(
    message: string,
    override readonly cause: unknown,
  ) {
    super(message);
  }
}

/** A checksum or structure failure that is not a torn tail. Refuses open. */
export class CorruptionError extends Error {
  readonly code = 'CORRUPTION';
  constructor(
    readonly file: string,
    readonly offset: number,
    reason: string,
  ) {
    super(
      `corrupt data in ${file} at offset ${offset}: ${reason}; ` +
        'start with --repair (or run `pithos repair`) to keep every intact batch and drop the damaged bytes',
    );
  }
}

/** The engine is closed or closing. */
export class EngineClosedError extends Error {
  readonly code = 'ENGINE_CLOSED';
  constructor() {
    super('the storage engine is closed');
  }
}

/** Another process holds the data directory (`pid`; 0 when the lock could not be read). */
export class DirectoryLockedError extends Error {
  readonly code = 'DIR_LOCKED';
  constructor(
    readonly dir: string,
    readonly pid: number,
    message?: string,
  ) {
    // The pid can outlive the server: a SIGKILLed process stays a zombie
    // until its parent reaps it, and pids are reused. Say how to tell.
    super(
      message ??
        `data directory ${dir} is in use by process ${pid} (its pid is in ${dir}/LOCK). ` +
          `If no Pithos server is running on it, the lock may be stale: check with \`ps -p ${pid} -o pid,stat,args\`; ` +
          `if that process is not a pithos server (or its state is Z, a zombie), remove ${dir}/LOCK and start again`,
    );
  }
}

/** A data directory that cannot be created or used (or, for repair, holds no data); the message says why. */
export class DataDirError extends Error {
  readonly code = 'DATA_DIR';
}

/** Wraps a raw errno failure into the typed error callers can branch on. */
export function storageError(op: string, err: unknown): StorageFullError | StorageIOError {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new StorageFullError(err);
  return new StorageIOError(`${op} failed: ${code ?? String(err)}`, err);
}

/** One batch larger than the log accepts (MAX_BATCH_BYTES). Nothing was applied. */
export class BatchTooLargeError extends Error {
  readonly code = 'BATCH_TOO_LARGE';
  constructor(limit: number) {
    super(`the change is too large: one batch may hold at most ${limit} bytes`);
  }
}
