/**
 * The part of the engine that recovery, hint building and compaction share
 * with it. They get this object instead of the `Engine`, so what they may
 * touch is written down in one place and `Engine`'s public surface is only
 * what the stores call.
 *
 * Hot-path state (the sequence counter, the write queue, the key directory
 * reference write() uses) stays in `Engine` fields: reaching it through this
 * object would add a property load to every write.
 */
import type { Logger } from '../log.js';
import type { FileOps } from './fileops.js';
import type { KeyDir } from './keydir.js';
import type { Segment } from './segment.js';
import type { Keyring } from './keyring.js';

/** What rebuilding the directory at open needs: files, the directory, the clock, a log. */
export interface RecoveryContext {
  readonly dir: string;
  readonly fs: FileOps;
  readonly keydir: KeyDir;
  readonly now: () => number;
  readonly log: Logger;
  /** The data keys; undefined when encryption is off (then a sealed segment refuses to open). */
  readonly keyring: Keyring | undefined;
}

/**
 * Told about a key removed because its ttl ended: the version that expired,
 * and its value on demand (read only if asked for; undefined if it cannot be
 * read at once).
 */
export type ExpireHook = (key: string, seq: number, value: () => Buffer | undefined) => void;

/** The recovery context plus the live segment list, which compaction rewrites. */
export class EngineCore implements RecoveryContext {
  /** All segments in replay order (ascending id); the last is normally the active one. */
  segments: Segment[] = [];
  /** The segment appended to; compaction never touches it. */
  active!: Segment;
  /** Told about keys compaction drops because their ttl ended (Engine.onExpire). */
  onExpire: ExpireHook | undefined = undefined;

  constructor(
    readonly dir: string,
    readonly fs: FileOps,
    readonly keydir: KeyDir,
    readonly now: () => number,
    readonly log: Logger,
    readonly keyring: Keyring | undefined,
    /** Compress values written from now on (codec.ts); compaction outputs follow it. */
    readonly compression = false,
  ) {}
}
