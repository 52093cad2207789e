/** The engine's public surface. Nothing outside src/engine imports deeper than this. */
export { Engine, MISS, Op } from './engine.js';
export type { DecodedEntry } from './format.js';
export type { Decoder, Durability, VersionRef, EngineObserver, EngineOptions, EngineStats, Logger, WriteOp } from './engine.js';
export type { Seen } from './types.js';
export { BatchTooLargeError, CorruptionError, DataDirError, DirectoryLockedError, EngineClosedError, StorageFullError, StorageIOError } from './errors.js';
export type { FileOps } from './fileops.js';
export { makeDirectory, nodeFileOps, writeFileDurably } from './fileops.js';
export { assertHoldsData } from './segment.js';
export { LOCK_FILE, lockDirectory, unlockDirectory } from './lockfile.js';
export type { GroupSnapshot } from './snapshot.js';
export { groupOf } from './chunked-group.js';
export { DataKey, KeyFileError, Keyring, loadKeyring } from './keyring.js';
export { KeyMismatchError, segmentKeys } from './seal.js';
