/**
 * The engine's public types: its options, the operations a batch holds, its
 * figures, and the opaque handles its reads give out.
 */
import type { Logger } from '../log.js';
import type { EntryIn } from './format.js';
import type { FileOps } from './fileops.js';
import type { Decoder } from './entry.js';
import type { Keyring } from './keyring.js';

export type Durability = 'always' | 'everysec' | 'never';

export interface EngineOptions {
  dir: string;
  /** always (default): ack after fdatasync; everysec: ack after write, sync each second; never: ack after write. */
  durability?: Durability;
  /** Rotate the active segment when it would grow past this (default 64 MiB). */
  segmentBytes?: number;
  /** Budget for cached values and their decoded forms (default 256 MiB). */
  cacheBytes?: number;
  /** Clock in ms since the epoch; injectable so ttl tests need not sleep. */
  now?: () => number;
  /** How often expired keys are swept from the directory (default 1000 ms; 0 = only on demand). */
  sweepIntervalMs?: number;
  /** How often compaction checks for work (default 10 s; 0 = only on demand). */
  compactIntervalMs?: number;
  /**
   * How long after a rotation the old segment's hint is built (default 30 s;
   * 0 = at once). A hint only speeds up the next open, and in an overwrite-heavy
   * log the segment is often compacted away before the delay ends (compaction
   * writes hints for its own output), which saves re-reading it. A segment whose
   * hint is still pending is scanned at the next open, which then builds the hint.
   */
  hintDelayMs?: number;
  /** Compact a run of segments once this share of its bytes is dead (default 0.5). */
  compactMinDeadRatio?: number;
  /** ... and at least this many bytes are dead (default 16 MiB). */
  compactMinDeadBytes?: number;
  /** Drop damaged batches instead of refusing to open (keeps every intact batch). */
  repair?: boolean;
  /**
   * Encryption at rest (docs/format.md, "Encryption"): everything written is
   * sealed under the current key; segments under older keys of the ring stay
   * readable and compaction rewrites them (and plain ones) under the current key.
   */
  keyring?: Keyring;
  /**
   * Compress values written from now on (codec.ts; docs/format.md,
   * "Compression"). Any directory reads the same with it on or off.
   */
  compression?: boolean;
  log?: Logger;
  /**
   * What the keys of the groups whose names start with `letter` are, plural
   * ("table rows"), for the counts the open logs (Engine.describeKeys); the
   * store that lays the keys out knows, the engine does not.
   */
  groupNoun?: (letter: string) => string;
  fileOps?: FileOps;
}

export interface WriteOp extends EntryIn {
  /** Decoded form of `value` to cache beside it, produced as `decoder` would. */
  memo?: unknown;
  decoder?: Decoder<unknown>;
}

export interface EngineStats {
  /** Keys in the directory (expired ones count until swept). */
  keys: number;
  /** Keys outside any group. */
  topLevelKeys: number;
  liveBytes: number;
  deadBytes: number;
  segments: number;
  /** 0: compaction never ran, 1: running, 2: idle. */
  gcState: 0 | 1 | 2;
  cacheBytes: number;
  nextSeq: number;
}

/** Figures for metrics (src/http/metrics.ts), pushed as they happen; each call must be cheap. */
export interface EngineObserver {
  /** A group commit was written: batches in it, bytes, seconds the write took. */
  logWrite(batches: number, bytes: number, seconds: number): void;
  /** The log was fdatasync'd: seconds it took. */
  logSync(seconds: number): void;
  /** A read found its value in memory (hit) or had to go to disk (miss). */
  cacheHit(): void;
  cacheMiss(): void;
  /** A compaction pass finished: bytes read and bytes written. */
  compacted(bytesIn: number, bytesOut: number): void;
}

/**
 * What peek() saw of a live key besides its value: its version (the batch's
 * seq) and, when `exp` is present (not undefined) in the object passed, its
 * expiry (0 = never).
 */
export interface Seen {
  version: number;
  exp?: number;
}

/** Returned by peek() when the value is not cached and must be read with read(). */
export const MISS: unique symbol = Symbol('miss');

/**
 * A key's version as an opaque reference (Engine.ref). It reads through
 * peekRef only while it is the key's live version; held after its key has
 * moved on, it keeps one small object alive, never a value (a retired
 * version's cached value is dropped: KeyDir.retire).
 */
export type VersionRef = { readonly __versionRef: unique symbol };
