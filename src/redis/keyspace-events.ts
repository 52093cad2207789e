/**
 * Keyspace notifications (docs/redis-rest.md, "Keyspace notifications"):
 * Redis's `__keyspace@0__:<key>` and `__keyevent@0__:<event>` channels, fed
 * from the store's change feed, so a subscriber hears exactly what the feed
 * records — writes over RESP, over REST and over the HTTP API, on this node
 * and (on the shared store, whose feed every node follows) on every node,
 * expirations included. Off until `CONFIG SET notify-keyspace-events`; the
 * setting is this node's, as in a Redis cluster. Each node publishes what its
 * own feed reports to its own subscribers only, so nothing arrives twice.
 */
import type { Change, ChangeFeed } from '../store/store.js';
import { ErrorReply } from './resp.js';
import { HUB } from './pubsub.js';

/** Redis's flag letters; `A` is `g$lshzxetd`. */
const LETTERS = /^[KEg$lshzxetdmnA]*$/;
const ALL = 'g$lshzxetd';
/** The event classes, in the order CONFIG GET lists them (Redis's keyspaceEventsFlagsToString, notify.c). */
const CLASSES = ALL + 'n';

/** The setting as Redis shows it: `A` for all of ALL (then `n` is not shown, as in Redis), else each class in order; then K, E and m. */
function shown(f: ReadonlySet<string>): string {
  const classes = [...ALL].every((c) => f.has(c)) ? 'A' : [...CLASSES].filter((c) => f.has(c)).join('');
  return classes + ['K', 'E', 'm'].filter((c) => f.has(c)).join('');
}

/** A change as Redis's event name and the class letter that switches it on; undefined for kinds Redis has no name for. */
function eventOf(c: Change): [string, string] | undefined {
  if (c.kind === 'table' || c.kind === 'lock') return undefined;
  if (c.type === 'expire') return ['expired', 'x'];
  if (c.type === 'delete') return ['del', 'g'];
  switch (c.kind) {
    case 'variant':
      return ['set', '$'];
    case 'record':
      return ['hset', 'h'];
    case 'list': {
      // Without an op the whole list was written, or its lifetime changed: the feed does not tell which.
      if (c.op === undefined) return ['set', 'l'];
      const left = sideOf(c) === 'left';
      const op = c.op;
      if (op === 'push') return [left ? 'lpush' : 'rpush', 'l'];
      if (op === 'pop') return [left ? 'lpop' : 'rpop', 'l'];
      if (op === 'set') return ['lset', 'l'];
      if (op === 'trim') return ['ltrim', 'l'];
      return ['lrem', 'l'];
    }
    case 'set':
      return [c.op === undefined ? 'set' : c.op === 'remove' ? 'srem' : c.op === 'pop' ? 'spop' : 'sadd', 's'];
    case 'zset':
      return [c.op === undefined ? 'set' : c.op === 'remove' ? 'zrem' : c.op === 'incr' ? 'zincr' : 'zadd', 'z'];
  }
}

function sideOf(c: Change): string | undefined {
  if (c.value === undefined) return undefined;
  try {
    const v = JSON.parse(c.value) as { side?: unknown };
    return typeof v.side === 'string' ? v.side : undefined;
  } catch {
    return undefined;
  }
}

export class KeyspaceNotifier {
  /** What CONFIG GET shows. */
  private setting = '';
  /** The letters in force, `A` spelt out; empty while nothing would be published (no K or E, or no class). */
  private flags = '';
  private feed: ChangeFeed | undefined;
  private unsubscribe: (() => void) | undefined;

  /** The store's change feed; without one, notifications cannot be switched on. */
  attach(feed: ChangeFeed | undefined): void {
    this.feed = feed;
  }

  /** The setting as CONFIG GET shows it. */
  get(): string {
    return this.setting;
  }

  /** CONFIG SET notify-keyspace-events <flags>: Redis's letters; '' switches off. */
  set(value: string): void {
    if (!LETTERS.test(value)) throw new ErrorReply(`ERR Invalid argument '${value}' for CONFIG SET 'notify-keyspace-events'`);
    const f = new Set(value.replace(/A/g, ALL));
    // Kept as given (CONFIG GET shows it), but without K or E, or without a class, nothing is published (Redis's rule).
    const on = (f.has('K') || f.has('E')) && [...CLASSES].some((c) => f.has(c));
    if (on && this.feed === undefined) throw new ErrorReply('ERR keyspace notifications need a store with a change feed');
    this.setting = shown(f);
    this.flags = on ? [...f].join('') : '';
    if (this.flags === '') {
      this.unsubscribe?.();
      this.unsubscribe = undefined;
    } else this.unsubscribe ??= this.feed!.subscribe((batch) => this.publish(batch));
  }

  private publish(batch: readonly Change[]): void {
    const f = this.flags;
    for (const c of batch) {
      if (c.tId !== undefined) continue;
      const e = eventOf(c);
      if (e === undefined || !f.includes(e[1])) continue;
      if (f.includes('K')) HUB.publishLocal(`__keyspace@0__:${c.name}`, e[0]);
      if (f.includes('E')) HUB.publishLocal(`__keyevent@0__:${e[0]}`, c.name);
    }
  }
}

/** The process's setting, as the hub is the process's. */
export const KEYSPACE = new KeyspaceNotifier();
