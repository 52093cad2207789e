/**
 * Redis's one keyspace over Pithos's kinds (docs/redis.md, "The keyspace"):
 * string ↔ variant, hash ↔ record, list ↔ list, set ↔ set, sorted set ↔
 * zset. Tables and locks are not visible. A name held by more than one kind
 * (possible through the HTTP API, whose namespaces are separate) shows the
 * first in KINDS' order; an empty collection behaves as absent.
 */
import type { Check, Holding, ListKind, Store } from '../store/store.js';
import { ErrorReply } from './resp.js';

export type RType = 'string' | 'hash' | 'list' | 'set' | 'zset';

/** Each Redis type's kind, in the order a name held by several shows them. */
export const KINDS: Readonly<Record<RType, ListKind>> = { string: 'variants', hash: 'records', list: 'lists', set: 'sets', zset: 'zsets' };
export const TYPES = Object.keys(KINDS) as RType[];

export const WRONGTYPE = new ErrorReply('WRONGTYPE Operation against a key holding the wrong kind of value');

/** The longest lifetime a key may be given, in seconds: the HTTP API's `ttl` bound (docs/redis.md, "Differences"). */
export const MAX_TTL_S = 2147483647;

/** Redis's refusal of a lifetime (≤ 0, or past MAX_TTL_S) given to `command`. */
export const invalidExpire = (command: string): ErrorReply => new ErrorReply(`ERR invalid expire time in '${command.toLowerCase()}' command`);

/** Seconds left of a key's lifetime as a write takes it (0: none; at least 1 ms when some is left). */
export const ttlSeconds = (info: { ttlMs: number | null } | undefined): number => (info?.ttlMs == null ? 0 : Math.max(info.ttlMs, 1) / 1000);

/** What a listing shows of one name. */
interface Item {
  name: string;
  ttl_ms: number | null;
  length?: number;
  count?: number;
}

/** A key as the keyspace sees it: its type and remaining lifetime (null: none). */
export interface KeyInfo {
  type: RType;
  ttlMs: number | null;
}

async function page(store: Store, kind: ListKind, prefix: string, after: string | null, limit: number): Promise<{ items: Item[]; next: string | null }> {
  return JSON.parse(await store.list(kind, { prefix, limit, after })) as { items: Item[]; next: string | null };
}

/** Whether a listing item is a live key: a collection only when it holds something. */
function present(type: RType, it: Item): boolean {
  if (type === 'list') return (it.length ?? 0) > 0;
  if (type === 'set' || type === 'zset') return (it.count ?? 0) > 0;
  return true;
}

/** What Store.holders is asked when one type is left out (or none): the other types, and their kinds, in TYPES' order. */
const ASK = Object.fromEntries(
  [...TYPES, 'none' as const].map((skip) => {
    const types = TYPES.filter((t) => t !== skip);
    return [skip, { types, kinds: types.map((t) => KINDS[t]) }];
  }),
) as Record<RType | 'none', { types: RType[]; kinds: ListKind[] }>;

/**
 * The key's type and lifetime from what holds it in each of `types`' kinds,
 * or undefined when none does; an empty object is absent, and its type goes
 * to `empties` (the caller may have to delete it first).
 */
function infoOf(held: ReadonlyArray<Holding | null>, types: readonly RType[], empties: RType[] | undefined): KeyInfo | undefined {
  for (let i = 0; i < types.length; i++) {
    const h = held[i];
    if (h === null || h === undefined) continue;
    if (h.empty) {
      empties?.push(types[i]!);
      continue;
    }
    return { type: types[i]!, ttlMs: h.ttlMs };
  }
  return undefined;
}

/** The key's type and lifetime, or undefined when no visible kind holds it (empty objects are absent; their types go to `empties`). `skip` leaves a type out. */
export async function keyInfo(store: Store, key: string, skip?: RType, empties?: RType[]): Promise<KeyInfo | undefined> {
  const ask = ASK[skip ?? 'none'];
  return infoOf(await store.holders(key, ask.kinds), ask.types, empties);
}

/** The answer to "is it there" when the store could not tell without waiting. */
export const WAIT = Symbol('wait');

/**
 * keyInfo answered at once, when the store serves it from memory (the log
 * store's): WAIT when it would have to wait, or the key names an empty
 * object of some kind, so the caller takes the general path.
 */
export function keyInfoNow(store: Store, key: string, skip?: RType): KeyInfo | undefined | typeof WAIT {
  const ask = ASK[skip ?? 'none'];
  const held = ifInMemory(store, () => store.holders(key, ask.kinds));
  if (held === undefined) return WAIT;
  const empties: RType[] = [];
  const info = infoOf(held, ask.types, empties);
  // An empty object must go before the key is written (claim): the general path does that.
  return empties.length > 0 && info === undefined ? WAIT : info;
}

/**
 * Whether a write to the `type` object at `key` must claim the key first
 * (claim: WRONGTYPE when another type holds it) instead of going to its kind
 * at once: the store could not tell at once that no other type holds the
 * key. `trustShared`: on the shared store, which tells nothing at once, go to
 * the kind at once (SADD, the pushes: asking would cost a statement per add,
 * docs/redis.md "Deliberate differences"); without it, always claim first.
 */
export function claimFirst(store: Store, key: string, type: RType, trustShared: boolean): boolean {
  if (trustShared && !store.answersAtOnce) return false;
  return keyInfoNow(store, key, type) !== undefined;
}

/**
 * Refuses a command on `key` for type `want` when the key holds another type
 * (WRONGTYPE). Called by reads that found nothing of their own kind, to tell
 * "missing" from "wrong type".
 */
export async function assertNotOther(store: Store, key: string, want: RType): Promise<void> {
  if ((await keyInfo(store, key, want)) !== undefined) throw WRONGTYPE;
}

/**
 * Before a write creates `want`'s object at `key`: WRONGTYPE when another
 * type holds the key; empty objects of other kinds (an emptied list, an
 * empty record), which Redis would not have, are removed so the key has one
 * kind again.
 */
export async function claim(store: Store, key: string, want: RType): Promise<void> {
  const empties: RType[] = [];
  if ((await keyInfo(store, key, want, empties)) !== undefined) throw WRONGTYPE;
  for (const t of empties) await deleteOf(store, t, key);
}

/**
 * Every live key whose name starts with `prefix`, by type, in byte order per
 * type, paged through the listings. `each` returns false to stop.
 */
export async function eachKey(
  store: Store,
  prefix: string,
  each: (name: string, type: RType, ttlMs: number | null) => boolean | Promise<boolean>,
): Promise<void> {
  const seen = new Set<string>();
  for (const type of TYPES) {
    let after: string | null = null;
    for (;;) {
      const { items, next } = await page(store, KINDS[type], prefix, after, 1000);
      for (const it of items) {
        if (!present(type, it) || seen.has(it.name)) continue;
        seen.add(it.name);
        if (!(await each(it.name, type, it.ttl_ms))) return;
      }
      if (next === null) break;
      after = next;
    }
  }
}

/** Deletes whatever visible object `key` names, in every kind; resolves to whether one was live. */
export async function deleteKey(store: Store, key: string): Promise<boolean> {
  return deleteHeld(store, key);
}

/**
 * Deletes what holds `key` in every type but `keep` (none: in every type),
 * empty objects included; whether a live one was among them. The store is
 * asked once which kinds hold the key, and only those are deleted: on the
 * shared store each delete is a statement, and most keys are held by one
 * kind or none.
 */
export async function deleteHeld(store: Store, key: string, keep?: RType): Promise<boolean> {
  const ask = ASK[keep ?? 'none'];
  const held = await store.holders(key, ask.kinds);
  let live = false;
  for (let i = 0; i < ask.types.length; i++) {
    const h = held[i];
    if (h === null || h === undefined) continue;
    if (!h.empty) live = true;
    await deleteOf(store, ask.types[i]!, key);
  }
  return live;
}

/** Deletes `key` in `type`'s kind; false when it was not there. */
export async function deleteOf(store: Store, type: RType, key: string): Promise<boolean> {
  try {
    switch (type) {
      case 'string':
        await store.variants.delete(key);
        break;
      case 'hash':
        await store.records.delete(key);
        break;
      case 'list':
        await store.lists.delete(key);
        break;
      case 'set':
        await store.sets.delete(key);
        break;
      case 'zset':
        await store.zsets.delete(key);
        break;
    }
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

/** Sets the remaining lifetime in seconds (0: none) of `key` in `type`'s kind. */
export async function expireOf(store: Store, type: RType, key: string, ttl: number): Promise<void> {
  switch (type) {
    case 'string':
      return store.variants.expire(key, ttl);
    case 'hash':
      return store.records.expire(key, ttl);
    case 'list':
      await store.lists.patch(key, { ttl });
      return;
    case 'set':
      return store.sets.expire(key, ttl);
    case 'zset':
      return store.zsets.expire(key, ttl);
  }
}

/**
 * What a read answers when the store has it in memory now (a `Sync` read
 * that returned at once); undefined when it would have to wait or failed.
 * The fast paths of GET, INCR, SET and the pushes decide on it and fall back
 * to the general path, which reads again and reports any failure. On a
 * store that never answers at once nothing is read.
 */
export function ifInMemory<T>(store: Store, read: () => T | Promise<T>): T | undefined {
  if (!store.answersAtOnce) return undefined;
  let r: T | Promise<T>;
  try {
    r = read();
  } catch {
    return undefined;
  }
  if (r instanceof Promise) {
    r.then(readAgainLater, readAgainLater);
    return undefined;
  }
  return r;
}

function readAgainLater(): void {
  // The caller takes the general path, which reads the value again and answers its failure: nothing is lost here.
}

/** Whether a store failure says the object is not there. */
export function isMissing(err: unknown): boolean {
  return (err as { kind?: unknown } | null)?.kind === 'not_found';
}

/** A check that `name` still has `version` in the kind holding `type` (or, with `exists`, is or is not there). */
export const CHECK_OF: Record<RType, (name: string, version: number | undefined, exists?: boolean) => Check> = {
  string: (name, version, exists) => ({ kind: 'variant', name, hasValue: false, version, exists }),
  hash: (name, version, exists) => ({ kind: 'record', name, version, exists }),
  list: (name, version, exists) => ({ kind: 'list', name, hasLength: false, version, exists }),
  set: (name, version, exists) => ({ kind: 'set', name, hasCount: false, version, exists }),
  zset: (name, version, exists) => ({ kind: 'zset', name, hasScore: false, hasCount: false, version, exists }),
};

/** Checks that `key` is absent in every kind Redis's keyspace spans. */
export const absentChecks = (key: string): Check[] => (Object.keys(CHECK_OF) as RType[]).map((t) => CHECK_OF[t](key, undefined, false));
