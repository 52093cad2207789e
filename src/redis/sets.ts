/**
 * Sets (docs/redis.md, "Sets") over the set store. Set algebra reads each
 * set's members and computes here, treating a missing set as empty as Redis
 * does; the STORE forms are the store's combine with `store`. SPOP and
 * SMOVE are conditional writes on the version read, retried on a race.
 */
import { glob, type Glob } from './glob.js';
import { isDecided } from '../store/decided.js';
import type { Store, VersionOut } from '../store/store.js';
import { type Call, type Command, int, is, syntaxError } from './command.js';
import { assertNotOther, claim, claimFirst, deleteHeld, deleteKey, isMissing } from './keyspace.js';
import { ErrorReply, Issued, type Reply, SetReply } from './resp.js';
import { retryOnRace } from './races.js';

interface Members {
  members: string[];
  count: number;
}

/** Every member in byte order, or undefined when the set is absent (WRONGTYPE for another type). */
export async function members(store: Store, key: string, out?: VersionOut): Promise<string[] | undefined> {
  try {
    const r = JSON.parse(await store.sets.get(key, undefined, undefined, out)) as Members;
    if (r.count > 0) return r.members;
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await assertNotOther(store, key, 'set');
  return undefined;
}

const added = (r: string): number => (JSON.parse(r) as { added: number }).added;
const removed = (r: string): number => (JSON.parse(r) as { removed: number }).removed;

/**
 * SADD: the add to an existing set first; one the store decided at once is
 * issued (Issued: a pipeline of them shares group commits). A missing set is
 * created once the key is claimed. On the log store the add goes first only
 * when the store tells at once that no other type holds the key (claimFirst,
 * in the same turn as the add), so such a name answers WRONGTYPE; the shared
 * store would need a statement for that question, which would cost its group
 * commit a round trip per add (docs/redis.md, "Deliberate differences").
 */
function add(c: Call): Promise<Reply> | Issued {
  const key = c.args[1]!;
  const ms = [...new Set(c.args.slice(2))];
  if (claimFirst(c.store, key, 'set', true)) return addClaimed(c, key, ms);
  const first = c.store.sets.add(key, ms, false);
  if (isDecided(first)) return new Issued(first.then(added));
  return addRest(c, key, ms, first);
}

async function addRest(c: Call, key: string, ms: string[], first: Promise<string>): Promise<Reply> {
  try {
    return added(await first);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  return addClaimed(c, key, ms);
}

async function addClaimed(c: Call, key: string, ms: string[]): Promise<Reply> {
  await claim(c.store, key, 'set');
  return added(await c.store.sets.add(key, ms, true));
}

/** SREM: as SADD, issued when the store decided it at once; a missing set removes nothing. */
function remove(c: Call): Promise<Reply> | Issued {
  const key = c.args[1]!;
  const first = c.store.sets.remove(key, [...new Set(c.args.slice(2))]);
  if (isDecided(first)) return new Issued(first.then(removed));
  return removeRest(c, key, first);
}

async function removeRest(c: Call, key: string, first: Promise<string>): Promise<Reply> {
  try {
    return removed(await first);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await assertNotOther(c.store, key, 'set');
  return 0;
}

async function contains(c: Call, ms: string[]): Promise<boolean[]> {
  const key = c.args[1]!;
  try {
    return (JSON.parse(await c.store.sets.contains(key, ms)) as { contains: boolean[] }).contains;
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await assertNotOther(c.store, key, 'set');
  return ms.map(() => false);
}

/** The result of an algebra over `keys` (missing sets are empty). */
async function algebra(store: Store, op: 'union' | 'inter' | 'diff', keys: readonly string[]): Promise<string[]> {
  const sets: Array<string[] | undefined> = [];
  for (const k of keys) sets.push(await members(store, k));
  const first = new Set(sets[0] ?? []);
  if (op === 'union') {
    for (const s of sets.slice(1)) for (const m of s ?? []) first.add(m);
  } else if (op === 'inter') {
    for (const s of sets.slice(1)) {
      const other = new Set(s ?? []);
      for (const m of first) if (!other.has(m)) first.delete(m);
    }
  } else {
    for (const s of sets.slice(1)) for (const m of s ?? []) first.delete(m);
  }
  return [...first];
}

/** Whether a set with members is at `key` (one member read; an empty set is absent, as in Redis). */
async function hasMembers(store: Store, key: string): Promise<boolean> {
  try {
    return (JSON.parse(await store.sets.get(key, 1, undefined)) as Members).count > 0;
  } catch (err) {
    if (!isMissing(err)) throw err;
    return false;
  }
}

/**
 * SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the set store's combine with
 * `store` (docs/api.md, "Sets"), which computes the result in slices and
 * replaces the target in one atomic step, refusing inputs of more than
 * MAX_COMBINE_STORE members in all, as POST /sets/<name>/combine does.
 * Before it, a source of another type is WRONGTYPE and nothing is written;
 * after it, the target's other types go and an empty result removes the
 * key, as Redis's *STORE replaces whatever the key held.
 */
async function store(c: Call, op: 'union' | 'inter' | 'diff'): Promise<Reply> {
  const dest = c.args[1]!;
  const keys = c.args.slice(2);
  for (const k of new Set(keys)) if (!(await hasMembers(c.store, k))) await assertNotOther(c.store, k, 'set');
  const { count } = JSON.parse(await c.store.sets.combine(keys[0]!, op, keys.slice(1), dest)) as { count: number };
  if (count === 0) await deleteKey(c.store, dest);
  else await deleteHeld(c.store, dest, 'set');
  return count;
}

/** Replaces whatever `key` holds with a set of `ms` (none: the key goes), as Redis's *STORE commands do. */
export async function replaceSet(s: Store, key: string, ms: string[]): Promise<void> {
  if (ms.length === 0) {
    await deleteKey(s, key);
    return;
  }
  await deleteHeld(s, key, 'set');
  await s.sets.put(key, ms, 0);
}

/** The most members a negative SRANDMEMBER (or fields a negative HRANDFIELD) count may ask for: its reply is built whole. */
export const MAX_RANDOM = 1_000_000;

/**
 * SRANDMEMBER's, HRANDFIELD's and ZRANDMEMBER's pick with a count, `n`
 * checked by the caller (≥ -MAX_RANDOM): n ≥ 0 distinct elements (all of
 * them when n ≥ size), n < 0 |n| elements that may repeat (none of an empty
 * collection).
 */
export function randomOf<T>(xs: readonly T[], n: number): T[] {
  if (n < 0) return xs.length === 0 ? [] : Array.from({ length: -n }, () => xs[Math.floor(Math.random() * xs.length)]!);
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, n);
}

async function spop(c: Call): Promise<Reply> {
  const key = c.args[1]!;
  if (c.args.length > 3) throw syntaxError();
  const n = c.args.length === 3 ? int(c.args[2]!) : undefined;
  if (n !== undefined && n < 0) throw new ErrorReply('ERR value is out of range, must be positive');
  return retryOnRace(async (): Promise<Reply> => {
    const out: VersionOut = { version: 0 };
    const ms = await members(c.store, key, out);
    if (ms === undefined) return n === undefined ? null : [];
    const chosen = randomOf(ms, n ?? 1);
    if (chosen.length === 0) return [];
    await c.store.sets.remove(key, chosen, { ifVersion: out.version });
    return n === undefined ? chosen[0]! : new SetReply(chosen);
  });
}

async function srandmember(c: Call): Promise<Reply> {
  if (c.args.length > 3) throw syntaxError();
  if (c.args.length === 2) {
    const ms = (await members(c.store, c.args[1]!)) ?? [];
    return ms.length === 0 ? null : ms[Math.floor(Math.random() * ms.length)]!;
  }
  // Redis's order: the count is checked before the key is read.
  const n = int(c.args[2]!);
  if (n < -MAX_RANDOM) throw new ErrorReply(`ERR value is out of range: Pithos answers at most ${MAX_RANDOM} random members (docs/redis.md)`);
  return randomOf((await members(c.store, c.args[1]!)) ?? [], n);
}

async function smove(c: Call): Promise<Reply> {
  const [, src, dst, m] = c.args as [string, string, string, string];
  // Redis's order: a missing source answers 0 before any type is checked.
  if ((await members(c.store, src)) === undefined) return 0;
  await claim(c.store, dst, 'set');
  const has = await contains({ ...c, args: [c.args[0]!, src] }, [m]);
  if (!has[0]) return 0;
  if (src === dst) return 1;
  try {
    await c.store.transact({
      checks: [{ kind: 'set', name: src, contains: m, hasCount: false }],
      mutations: [
        { kind: 'set', name: src, op: 'REMOVE', members: [m] },
        { kind: 'set', name: dst, op: 'ADD', members: [m] },
      ],
      serializable: true,
    });
    return 1;
  } catch (err) {
    if ((err as { kind?: unknown }).kind === 'conflict') return 0;
    throw err;
  }
}

async function sintercard(c: Call): Promise<Reply> {
  const n = int(c.args[1]!);
  if (n <= 0) throw new ErrorReply('ERR numkeys should be greater than 0');
  if (c.args.length < 2 + n) throw new ErrorReply("ERR Number of keys can't be greater than number of args");
  const keys = c.args.slice(2, 2 + n);
  const rest = c.args.slice(2 + n);
  let limit = 0;
  if (rest.length === 2 && is(rest[0], 'LIMIT')) {
    limit = int(rest[1]!);
    if (limit < 0) throw new ErrorReply("ERR LIMIT can't be negative");
  } else if (rest.length !== 0) throw syntaxError();
  const r = await algebra(c.store, 'inter', keys);
  return limit > 0 ? Math.min(limit, r.length) : r.length;
}

/** SSCAN / HSCAN / ZSCAN: the cursor is a position; COUNT a hint, as in Redis. */
export function scanPage<T>(c: Call, items: T[], text: (t: T) => string, flat: (t: T) => string[]): Reply {
  const cursor = c.args[2]!;
  if (!/^\d+$/.test(cursor)) throw new ErrorReply('ERR invalid cursor');
  let count = 10;
  let re: Glob | undefined;
  for (let i = 3; i < c.args.length; i += 2) {
    if (i + 1 >= c.args.length) throw syntaxError();
    if (is(c.args[i], 'COUNT')) {
      count = int(c.args[i + 1]!);
      if (count < 1) throw syntaxError();
    } else if (is(c.args[i], 'MATCH')) re = glob(c.args[i + 1]!);
    else throw syntaxError();
  }
  const from = Number(cursor);
  const page = items.slice(from, from + count);
  const next = from + count >= items.length ? 0 : from + count;
  return [String(next), page.filter((t) => re === undefined || re.test(text(t))).flatMap(flat)];
}

export const SET_COMMANDS: Command[] = [
  { name: 'sadd', arity: -3, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'add members', run: add },
  { name: 'srem', arity: -3, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'remove members', run: remove },
  {
    name: 'sismember',
    arity: 3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'whether a member is in',
    run: async (c) => ((await contains(c, [c.args[2]!]))[0] ? 1 : 0),
  },
  {
    name: 'smismember',
    arity: -3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'SISMEMBER for many',
    run: async (c) => (await contains(c, c.args.slice(2))).map((b) => (b ? 1 : 0)),
  },
  {
    name: 'smembers',
    arity: 2,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'every member',
    run: async (c) => new SetReply((await members(c.store, c.args[1]!)) ?? []),
  },
  {
    name: 'scard',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'number of members',
    run: async (c) => (await members(c.store, c.args[1]!))?.length ?? 0,
  },
  { name: 'spop', arity: -2, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'remove and answer random members', run: spop },
  { name: 'srandmember', arity: -2, flags: ['readonly'], keys: [1, 1, 1], summary: 'random members', run: srandmember },
  { name: 'smove', arity: 4, flags: ['write', 'fast'], keys: [1, 2, 1], summary: 'move a member, atomically', run: smove },
  {
    name: 'sinter',
    arity: -2,
    flags: ['readonly'],
    keys: [1, -1, 1],
    summary: 'intersection',
    run: async (c) => new SetReply(await algebra(c.store, 'inter', c.args.slice(1))),
  },
  {
    name: 'sunion',
    arity: -2,
    flags: ['readonly'],
    keys: [1, -1, 1],
    summary: 'union',
    run: async (c) => new SetReply(await algebra(c.store, 'union', c.args.slice(1))),
  },
  {
    name: 'sdiff',
    arity: -2,
    flags: ['readonly'],
    keys: [1, -1, 1],
    summary: 'difference',
    run: async (c) => new SetReply(await algebra(c.store, 'diff', c.args.slice(1))),
  },
  { name: 'sinterstore', arity: -3, flags: ['write', 'denyoom'], keys: [1, -1, 1], summary: 'intersection into a key', run: (c) => store(c, 'inter') },
  { name: 'sunionstore', arity: -3, flags: ['write', 'denyoom'], keys: [1, -1, 1], summary: 'union into a key', run: (c) => store(c, 'union') },
  { name: 'sdiffstore', arity: -3, flags: ['write', 'denyoom'], keys: [1, -1, 1], summary: 'difference into a key', run: (c) => store(c, 'diff') },
  { name: 'sintercard', arity: -3, flags: ['readonly'], keys: [0, 0, 0], summary: 'size of the intersection [LIMIT]', run: sintercard },
  {
    name: 'sscan',
    arity: -3,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'page through members',
    run: async (c) =>
      scanPage(
        c,
        (await members(c.store, c.args[1]!)) ?? [],
        (m) => m,
        (m) => [m],
      ),
  },
];
