/**
 * Hashes over records (docs/redis.md, "Hashes"): a field is a top-level
 * field of the record, written as a string; a field an HTTP client stored as
 * another JSON value reads as its JSON text. Every change is one record write
 * conditional on the version read, retried on a race, so counts (HSET's new
 * fields, HDEL's removed ones) are exact.
 */
import { StoreError } from '../store/errors.js';
import type { Store, VersionOut } from '../store/store.js';
import { type Call, type Command, float, int, int64, notInteger, syntaxError } from './command.js';
import { assertNotOther, claim, isMissing } from './keyspace.js';
import { ErrorReply, MapReply, OK, type Reply } from './resp.js';
import { retryOnRace } from './races.js';
import { floatText } from './strings.js';
import { MAX_RANDOM, randomOf, scanPage } from './sets.js';

type Fields = Record<string, unknown>;

export const fieldText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** The record's fields, or undefined when the hash is absent (an empty record is); WRONGTYPE for another type. */
export async function readHash(store: Store, key: string, out?: VersionOut): Promise<Fields | undefined> {
  try {
    const rec = JSON.parse(await store.records.get(key, out)) as Fields;
    if (Object.keys(rec).length > 0) return rec;
    // An empty record is an absent hash, but its version still guards a create.
    return undefined;
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  if (out !== undefined) out.version = 0;
  await assertNotOther(store, key, 'hash');
  return undefined;
}

/**
 * Applies `f` to the current fields and writes the changed ones (null
 * deletes) under the version read. `f` returns the changes and the reply.
 */
function update(c: Call, key: string, f: (cur: Fields) => [Fields, Reply]): Promise<Reply> {
  return retryOnRace(async () => {
    const out: VersionOut = { version: 0 };
    const cur = (await readHash(c.store, key, out)) ?? {};
    const [changes, answer] = f(cur);
    if (Object.keys(changes).length === 0) return answer;
    if (out.version === 0) {
      // Empty leftovers of other kinds go first; another type that appeared meanwhile is WRONGTYPE, never deleted.
      await claim(c.store, key, 'hash');
      await c.store.records.put(key, changes, 0, { ifAbsent: true });
    } else if (Object.keys(cur).every((f) => changes[f] === null) && Object.values(changes).every((v) => v === null)) {
      // The last fields go: so does the hash, as in Redis, if nothing changed it since it was read.
      await deleteIfUnchanged(c.store, key, out.version);
    } else await c.store.records.patch(key, changes, { ifVersion: out.version });
    return answer;
  });
}

export async function deleteIfUnchanged(store: Store, key: string, version: number): Promise<void> {
  try {
    await store.transact({ checks: [{ kind: 'record', name: key, version }], mutations: [{ kind: 'record', name: key, op: 'DELETE' }], serializable: true });
  } catch (err) {
    // A failed version check is the race a conditional write loses: the caller reads again.
    if ((err as { kind?: unknown }).kind === 'conflict') throw new StoreError('precondition', `record '${key}' changed`);
    throw err;
  }
}

function pairs(c: Call): Fields {
  const a = c.args;
  if (a.length % 2 !== 0) throw new ErrorReply(`ERR wrong number of arguments for '${a[0]!.toLowerCase()}' command`);
  const out: Fields = Object.create(null) as Fields;
  for (let i = 2; i < a.length; i += 2) out[a[i]!] = a[i + 1]!;
  return out;
}

/** A record field's name must be a usable JSON key: `__proto__` is refused as the HTTP API refuses it. */
function checkField(f: string): void {
  if (f === '__proto__') throw new ErrorReply('ERR field name \'__proto__\' is not allowed (docs/redis.md, "Hashes")');
}

async function hset(c: Call, countNew: boolean): Promise<Reply> {
  const sets = pairs(c);
  for (const f of Object.keys(sets)) checkField(f);
  return update(c, c.args[1]!, (cur) => {
    let added = 0;
    for (const f of Object.keys(sets)) if (!Object.hasOwn(cur, f)) added++;
    return [{ ...sets }, countNew ? added : OK];
  });
}

async function incr(c: Call, isFloat: boolean): Promise<Reply> {
  const [, key, field, by] = c.args as [string, string, string, string];
  checkField(field);
  const d = isFloat ? float(by) : int64(by);
  return update(c, key, (cur) => {
    const text = Object.hasOwn(cur, field) ? fieldText(cur[field]) : '0';
    if (isFloat) {
      const base = float(text, () => new ErrorReply('ERR hash value is not a float'));
      const v = base + (d as number);
      if (!Number.isFinite(v)) throw new ErrorReply('ERR increment would produce NaN or Infinity');
      const t = floatText(v);
      return [{ [field]: t }, t];
    }
    let base: bigint;
    try {
      base = int64(text);
    } catch {
      throw new ErrorReply('ERR hash value is not an integer');
    }
    const v = base + (d as bigint);
    if (v > 9223372036854775807n || v < -9223372036854775808n) throw new ErrorReply('ERR increment or decrement would overflow');
    return [{ [field]: String(v) }, v];
  });
}

async function hrandfield(c: Call): Promise<Reply> {
  if (c.args.length === 2) {
    const keys = Object.keys((await readHash(c.store, c.args[1]!)) ?? {});
    return keys.length === 0 ? null : keys[Math.floor(Math.random() * keys.length)]!;
  }
  // Redis's order: the count and the option are checked before the key is read.
  const n = int(c.args[2]!);
  const withValues = c.args.length === 4;
  if (c.args.length > 4 || (withValues && c.args[3]!.toUpperCase() !== 'WITHVALUES')) throw syntaxError();
  if (n < -MAX_RANDOM) throw new ErrorReply(`ERR value is out of range: Pithos answers at most ${MAX_RANDOM} random fields (docs/redis.md)`);
  const h = (await readHash(c.store, c.args[1]!)) ?? {};
  const chosen = randomOf(Object.keys(h), n);
  if (!withValues) return chosen;
  if (c.session.proto === 3) return chosen.map((k) => [k, fieldText(h[k])]);
  return chosen.flatMap((k) => [k, fieldText(h[k])]);
}

export const HASH_COMMANDS: Command[] = [
  { name: 'hset', arity: -4, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'set fields; answers how many are new', run: (c) => hset(c, true) },
  { name: 'hmset', arity: -4, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'HSET, answering OK', run: (c) => hset(c, false) },
  {
    name: 'hsetnx',
    arity: 4,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'set a field when absent',
    run: (c) => {
      checkField(c.args[2]!);
      return update(c, c.args[1]!, (cur) => (Object.hasOwn(cur, c.args[2]!) ? [{}, 0] : [{ [c.args[2]!]: c.args[3]! }, 1]));
    },
  },
  {
    name: 'hget',
    arity: 3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'a field',
    run: async (c) => {
      const h = await readHash(c.store, c.args[1]!);
      return h !== undefined && Object.hasOwn(h, c.args[2]!) ? fieldText(h[c.args[2]!]) : null;
    },
  },
  {
    name: 'hmget',
    arity: -3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'fields',
    run: async (c) => {
      const h = (await readHash(c.store, c.args[1]!)) ?? {};
      return c.args.slice(2).map((f) => (Object.hasOwn(h, f) ? fieldText(h[f]) : null));
    },
  },
  {
    name: 'hgetall',
    arity: 2,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'every field and value',
    run: async (c) => new MapReply(Object.entries((await readHash(c.store, c.args[1]!)) ?? {}).map(([k, v]): [Reply, Reply] => [k, fieldText(v)])),
  },
  {
    name: 'hdel',
    arity: -3,
    flags: ['write', 'fast'],
    keys: [1, 1, 1],
    summary: 'delete fields',
    run: (c) =>
      update(c, c.args[1]!, (cur) => {
        const gone: Fields = {};
        for (const f of c.args.slice(2)) if (Object.hasOwn(cur, f)) gone[f] = null;
        return [gone, Object.keys(gone).length];
      }),
  },
  {
    name: 'hexists',
    arity: 3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'whether a field is there',
    run: async (c) => (Object.hasOwn((await readHash(c.store, c.args[1]!)) ?? {}, c.args[2]!) ? 1 : 0),
  },
  {
    name: 'hlen',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'number of fields',
    run: async (c) => Object.keys((await readHash(c.store, c.args[1]!)) ?? {}).length,
  },
  {
    name: 'hkeys',
    arity: 2,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'field names',
    run: async (c) => Object.keys((await readHash(c.store, c.args[1]!)) ?? {}),
  },
  {
    name: 'hvals',
    arity: 2,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'values',
    run: async (c) => Object.values((await readHash(c.store, c.args[1]!)) ?? {}).map(fieldText),
  },
  {
    name: 'hstrlen',
    arity: 3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: "a value's length in bytes",
    run: async (c) => {
      const h = (await readHash(c.store, c.args[1]!)) ?? {};
      return Object.hasOwn(h, c.args[2]!) ? Buffer.byteLength(fieldText(h[c.args[2]!])) : 0;
    },
  },
  { name: 'hincrby', arity: 4, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'add to an integer field', run: (c) => incr(c, false) },
  { name: 'hincrbyfloat', arity: 4, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'add to a float field', run: (c) => incr(c, true) },
  { name: 'hrandfield', arity: -2, flags: ['readonly'], keys: [1, 1, 1], summary: 'random fields [count [WITHVALUES]]', run: hrandfield },
  {
    name: 'hscan',
    arity: -3,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'page through fields',
    run: async (c) =>
      scanPage(
        c,
        Object.entries((await readHash(c.store, c.args[1]!)) ?? {}),
        ([k]) => k,
        ([k, v]) => [k, fieldText(v)],
      ),
  },
];

export { notInteger };
