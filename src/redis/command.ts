/**
 * What one Redis command is (docs/redis.md, "Commands"): declared once, with
 * the facts COMMAND INFO reports, the role it needs, and its handler over the
 * Store interface. The families (strings.ts, lists.ts, …) each export their
 * declarations; table.ts gathers them into the one table that the dispatcher,
 * COMMAND, the role check, the metrics labels and docs/redis.md read.
 */
import type { Store } from '../store/store.js';
import { ErrorReply, type Issued, type Reply } from './resp.js';

/** Redis's command flags, as COMMAND INFO spells them, for the flags Pithos uses. */
export type Flag = 'write' | 'readonly' | 'blocking' | 'admin' | 'fast' | 'noauth' | 'loading' | 'stale' | 'denyoom' | 'pubsub' | 'noscript';

/** The per-connection state a command may read or change (listener.ts owns it). */
export interface Session {
  readonly id: number;
  proto: 2 | 3;
  name: string;
  /** The token's name once authenticated (undefined: not yet). */
  user: string | undefined;
  /** The role of that token: a `read` token runs `readonly` commands only. */
  role: 'read' | 'write' | 'admin' | undefined;
  readonly addr: string;
  readonly createdAt: number;
  /** Aborted when the connection closes: a blocking command then takes nothing. */
  readonly gone: AbortSignal;
  lastCommand: string;
}

/** What the server lends every command: statistics and settings for INFO and CONFIG. */
export interface ServerView {
  readonly startedAt: number;
  readonly port: number;
  readonly version: string;
  readonly storeName: string;
  /** Longest a blocking command waits, in ms (a timeout of 0 waits this long, then answers as a timeout). */
  readonly maxBlockMs: number;
  clients(): Session[];
  /** Closes connections matching `pred` (CLIENT KILL); returns how many. */
  kill(pred: (s: Session) => boolean): number;
  readonly stats: { commands: number; connections: number };
  /** The longest value a command may make (APPEND, SETRANGE): the largest bulk the listener takes (--max-body-bytes). */
  readonly maxValueBytes?: number;
}

/** One call of a command: the store, its arguments as text (args[0] is the name as sent), and the caller. */
export interface Call {
  readonly store: Store;
  readonly args: readonly string[];
  readonly session: Session;
  readonly server: ServerView;
  /** Inside EXEC: a blocking command does not wait, as in Redis (it answers as its timeout would). */
  readonly nonBlocking?: boolean;
  /**
   * The arguments as sent, for a command marked `bytes` whose arguments are
   * not all UTF-8 (`args` then holds them as Latin-1 text, one character per byte).
   */
  readonly raw?: readonly Buffer[];
}

/** A handler's reply; undefined when the command has answered by itself (QUIT). */
export type Handler = (c: Call) => Reply | undefined | Promise<Reply | undefined> | Issued;

export interface Command {
  /** Lower case. */
  readonly name: string;
  /** Redis's arity: N exactly N words with the name, -N at least N. */
  readonly arity: number;
  readonly flags: readonly Flag[];
  /** Key positions as COMMAND INFO gives them: first, last (-1: the last argument), step; 0 0 0 for none. */
  readonly keys: readonly [number, number, number];
  /** One line for docs/redis.md. */
  readonly summary: string;
  readonly run: Handler;
  /**
   * It keeps nothing and answers its arguments as sent (ECHO, PING with a
   * message), so it takes bytes that are not UTF-8 too: `redis-cli --pipe`
   * ends its input with an ECHO of 20 random bytes and waits for them back.
   */
  readonly bytes?: true;
}

// ---- argument helpers: Redis's own error texts ----------------------------------

export const syntaxError = (): ErrorReply => new ErrorReply('ERR syntax error');
export const notInteger = (): ErrorReply => new ErrorReply('ERR value is not an integer or out of range');
export const notFloat = (): ErrorReply => new ErrorReply('ERR value is not a valid float');
export const wrongArgs = (name: string): ErrorReply => new ErrorReply(`ERR wrong number of arguments for '${name}' command`);

const INT = /^-?(0|[1-9][0-9]*)$/;

/** A 64-bit signed integer as Redis reads one (string2ll): canonical decimal only. */
export function int64(text: string): bigint {
  if (!INT.test(text) || text === '-0') throw notInteger();
  const v = BigInt(text);
  if (v > 9223372036854775807n || v < -9223372036854775808n) throw notInteger();
  return v;
}

/** An integer argument that must fit a JS number exactly (counts, indexes, times). */
export function int(text: string): number {
  const v = int64(text);
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw notInteger();
  return Number(v);
}

/** A float argument as Redis reads one (strtold): `inf`, `-inf`, `+inf` too; NaN refused. */
export function float(text: string, err: () => ErrorReply = notFloat): number {
  const t = text.toLowerCase();
  if (t === 'inf' || t === '+inf' || t === 'infinity' || t === '+infinity') return Infinity;
  if (t === '-inf' || t === '-infinity') return -Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) throw err();
  return Number(t);
}

/** Whether `text` is a canonical signed 64-bit integer, which Pithos keeps as an integer variant (as Redis's int encoding). */
export function isStoredInteger(text: string): boolean {
  if (text.length > 20 || !INT.test(text) || text === '-0') return false;
  if (text.length < 19) return true;
  const v = BigInt(text);
  return v <= 9223372036854775807n && v >= -9223372036854775808n;
}

/** Case-insensitive option match. */
export const is = (arg: string | undefined, word: string): boolean => arg !== undefined && arg.length === word.length && arg.toUpperCase() === word;
