/**
 * Strings and counters over variants (docs/redis.md, "Strings"): a canonical
 * integer is kept as an integer variant, as Redis's int encoding, anything
 * else as a string variant; a boolean or double variant made over HTTP reads
 * as its text. Writes that replace a value of another type (SET over a
 * list, APPEND to a number) replace it whole, as in Redis.
 */
import type { ScalarInput, VType } from '../store/variant.js';
import type { Mutation, Store, VersionOut } from '../store/store.js';
import { StoreError } from '../store/errors.js';
import { isDecided, refusalOf } from '../store/decided.js';
import { type Command, float, int, int64, is, isStoredInteger, notFloat, notInteger, syntaxError, type Call } from './command.js';
import {
  absentChecks,
  assertNotOther,
  claim,
  deleteHeld,
  deleteOf,
  isMissing,
  keyInfo,
  keyInfoNow,
  MAX_TTL_S,
  invalidExpire,
  ttlSeconds,
  type RType,
  WAIT,
  WRONGTYPE,
} from './keyspace.js';
import { ErrorReply, Issued, NULL_ARRAY, OK, type Reply } from './resp.js';
import { lostRace, RACED, retryOnRace } from './races.js';

/** A string value as Redis shows it, with the variant's type and version. */
export interface StringValue {
  text: string;
  t: VType;
  version: number;
}

/** The text of a stored variant (its data JSON, {"variant": v}). */
export function variantText(data: string): [string, VType] {
  // data is {"variant":<value>} (store/variant.ts makeVariant): read the value's text, exactly.
  const raw = data.slice(11, -1);
  const c = raw.charCodeAt(0);
  if (c === 34 /* " */) return [JSON.parse(raw) as string, 's'];
  if (c === 116 /* t */ || c === 102 /* f */) return [raw, 'b'];
  // A double always prints with a fraction; an integer, digit for digit, never does.
  if (raw.indexOf('.') < 0) return [raw, 'i'];
  return [String(Number(raw)), 'd'];
}

/** The string at `key`, or undefined when absent; WRONGTYPE when another type holds it. */
export async function getString(store: Store, key: string, checkType = true): Promise<StringValue | undefined> {
  const out: VersionOut = { version: 0 };
  try {
    const [text, t] = variantText(await store.variants.get(key, out));
    return { text, t, version: out.version };
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  if (checkType) await assertNotOther(store, key, 'string');
  return undefined;
}

/** What a text is stored as: an integer variant when canonical and in range, a string variant otherwise. */
export function inputOf(text: string): ScalarInput {
  return isStoredInteger(text) ? { value: Number(text), text } : { value: text, text: undefined };
}

/**
 * Stores `text` at `key` with `ttl` seconds (0: none), replacing whatever is
 * there. A new variant makes the key's other kinds go (the key had one
 * type); replacing a variant leaves nothing else to remove.
 */
export async function putString(store: Store, key: string, text: string, ttl: number, ifVersion?: number, replace = true): Promise<void> {
  const input = inputOf(text);
  const pre = ifVersion === undefined ? undefined : ifVersion === 0 ? { ifAbsent: true } : { ifVersion };
  let created: boolean;
  try {
    [created] = await store.variants.put(key, input, ttl, pre);
  } catch (err) {
    if ((err as { kind?: unknown }).kind !== 'conflict') throw err;
    [created] = await store.variants.put(key, input, ttl, pre, true);
  }
  if (!created) return;
  // SET replaces whatever the key held; a write that only creates (APPEND to nothing) removes empty leftovers only,
  // never another client's write that raced it.
  if (replace) {
    await deleteHeld(store, key, 'string');
    return;
  }
  const empties: RType[] = [];
  await keyInfo(store, key, 'string', empties);
  for (const type of empties) await deleteOf(store, type, key);
}

/** Read-modify-write of a string with a version check, retried when another writer got there first. */
export async function updateString(
  store: Store,
  key: string,
  f: (cur: StringValue | undefined) => { text: string; keepTtlMs?: number | null } | undefined,
): Promise<string | undefined> {
  return retryOnRace(async () => {
    const cur = await getString(store, key);
    const next = f(cur);
    if (next === undefined) return undefined;
    let ttl = 0;
    if (cur !== undefined) ttl = await remainingTtl(store, key);
    await putString(store, key, next.text, ttl, cur?.version ?? 0, false);
    return next.text;
  });
}

/** Seconds left of a key's lifetime (0: none), for writes that keep it. */
export async function remainingTtl(store: Store, key: string): Promise<number> {
  return ttlSeconds(await keyInfo(store, key));
}

const OVERFLOW = new ErrorReply('ERR increment or decrement would overflow');
const TOO_BIG = new ErrorReply('ERR string exceeds maximum allowed size (--max-body-bytes, docs/redis.md "Limits")');
const maxValue = (c: Call): number => c.server.maxValueBytes ?? 16 * 1024 * 1024;

const MISSING = Symbol('missing');
const OTHER = Symbol('other');

/**
 * What the fast paths of GET, INCR and SET decide on, read at once (no
 * waiting): the variant's data when a string holds the key (the first type
 * a name shows, so nothing else is asked), MISSING when no kind does, OTHER
 * when another type does, undefined when the store would have to wait or an
 * empty object of some kind is in the way (the general path decides).
 */
function look(store: Store, key: string): string | typeof MISSING | typeof OTHER | undefined {
  if (!store.answersAtOnce) return undefined;
  try {
    const r = store.variants.get(key);
    if (typeof r === 'string') return r;
    r.then(noWait, noWait);
    return undefined;
  } catch (err) {
    if (!isMissing(err)) return undefined;
  }
  const other = keyInfoNow(store, key, 'string');
  return other === undefined ? MISSING : other === WAIT ? undefined : OTHER;
}

function noWait(): void {
  // Only a synchronous answer decides here; the general path reads again and answers any failure.
}

/** An integer variant's value as a reply: a number while exact, else the bigint. */
const intReply = (text: string): number | bigint => (text.length <= 15 || Number.isSafeInteger(Number(text)) ? Number(text) : BigInt(text));
const incrReply = (data: string): number | bigint => intReply(variantText(data)[0]);
const incrError = (err: unknown): never => {
  const e = err as { kind?: unknown; message?: string };
  if (e.kind === 'conflict') throw /overflow/.test(e.message ?? '') ? OVERFLOW : notInteger();
  throw err;
};

/**
 * INCRBY and friends: the variant's atomic add first, as SADD does; one the
 * store decided at once is issued (Issued: a pipeline of them shares group
 * commits). One refused at once because no variant holds the key creates
 * the counter from the delta when the store can tell at once that the key
 * is free (also issued); anything else takes the general path.
 */
function incrBy(store: Store, key: string, delta: bigint | Delta): Promise<Reply> | Issued {
  const [input, d] = typeof delta === 'bigint' ? deltaOf(delta) : delta;
  const first = store.variants.increment(key, input, 'i');
  if (isDecided(first)) return new Issued(first.then(incrReply, incrError));
  const refused = refusalOf(first);
  if (refused === undefined) return incrRest(store, key, input, d, first);
  first.then(undefined, noWait);
  if (!isMissing(refused)) return incrError(refused);
  if (keyInfoNow(store, key, 'string') !== undefined) return incrSlow(store, key, input, d, undefined, true);
  return new Issued(
    store.variants.put(key, input, 0, { ifAbsent: true }).then(
      () => d,
      (err: unknown) => incrSlow(store, key, input, d, err),
    ),
  );
}

/** An add the store has not decided yet (it reads from disk, or it is the shared store): its answer, or the general path's when the key was missing. */
async function incrRest(store: Store, key: string, input: ScalarInput, d: number | bigint, first: Promise<string>): Promise<Reply> {
  try {
    return incrReply(await first);
  } catch (err) {
    if (!isMissing(err)) incrError(err);
  }
  return incrSlow(store, key, input, d, undefined, true);
}

/** A delta as the store takes it, and as INCRBY answers a new key's value. */
type Delta = readonly [ScalarInput, number | bigint];
const deltaOf = (delta: bigint): Delta => {
  const text = String(delta);
  return [Object.freeze({ value: Number(delta), text }), intReply(text)];
};
const PLUS_ONE = deltaOf(1n);
const MINUS_ONE = deltaOf(-1n);

/**
 * The general path of INCRBY; `raced` is a create of the fast path that
 * another writer got ahead of; `missing`: the add was just refused for want
 * of the counter, so the first attempt creates it without asking again.
 */
async function incrSlow(store: Store, key: string, input: ScalarInput, d: number | bigint, raced?: unknown, missing = false): Promise<Reply> {
  if (raced !== undefined && !lostRace(raced)) throw raced;
  let add = !missing;
  return retryOnRace(async () => {
    if (add) {
      try {
        return incrReply(await store.variants.increment(key, input, 'i'));
      } catch (err) {
        if (!isMissing(err)) incrError(err);
      }
    }
    add = true;
    // Missing: created from the delta, unless another writer created it first (a lost race: incremented next time).
    await claim(store, key, 'string');
    await store.variants.put(key, input, 0, { ifAbsent: true });
    return d;
  });
}

/**
 * Redis's text of an INCRBYFLOAT result: no exponent, trailing zeros dropped.
 * Redis adds in long double, so -0.2542 + 0.5 prints 0.2458 where a double
 * sum carries a binary tail (0.24580000000000002): 15 significant digits,
 * what a double holds exactly, drop that tail (a differential test found it).
 * Past 1e21 the digits are the double's: Redis's long double may differ after
 * the 16th significant one (docs/redis.md, "Differences").
 */
export function floatText(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return String(v);
  const r = Number(v.toPrecision(15));
  const s = String(r);
  if (!s.includes('e')) return s;
  // Redis prints with %.17Lf: every integer digit of a large value, 17 decimals of a small one.
  if (Math.abs(r) >= 1e21) return BigInt(r).toString();
  const t = r.toFixed(17).replace(/0+$/, '').replace(/\.$/, '');
  return t === '-0' ? '0' : t;
}

/** GET: answered at once when the store has the value in memory (its measured fast path), else through getString. */
function get(c: Call): Reply | Promise<Reply> {
  const key = c.args[1]!;
  const data = look(c.store, key);
  if (typeof data === 'string') return variantText(data)[0];
  if (data === MISSING) return null;
  if (data === OTHER) throw WRONGTYPE;
  return getString(c.store, key).then((s) => s?.text ?? null);
}

interface SetOptions {
  nx: boolean;
  xx: boolean;
  get: boolean;
  keepTtl: boolean;
  /** Seconds; undefined: no lifetime given. Non-positive: the key expires at once. */
  ttl: number | undefined;
}

function setOptions(c: Call, from: number): SetOptions {
  const o: SetOptions = { nx: false, xx: false, get: false, keepTtl: false, ttl: undefined };
  const a = c.args;
  for (let i = from; i < a.length; i++) {
    const w = a[i]!.toUpperCase();
    if (w === 'NX' && !o.xx) o.nx = true;
    else if (w === 'XX' && !o.nx) o.xx = true;
    else if (w === 'GET') o.get = true;
    else if (w === 'KEEPTTL' && o.ttl === undefined) o.keepTtl = true;
    else if ((w === 'EX' || w === 'PX' || w === 'EXAT' || w === 'PXAT') && o.ttl === undefined && !o.keepTtl && i + 1 < a.length) {
      const n = int(a[++i]!);
      if (n <= 0) throw invalidExpire(c.args[0]!);
      o.ttl = w === 'EX' ? n : w === 'PX' ? n / 1000 : w === 'EXAT' ? n - Date.now() / 1000 : (n - Date.now()) / 1000;
    } else throw syntaxError();
  }
  return o;
}

async function set(c: Call): Promise<Reply> {
  const [, key, value] = c.args as [string, string, string];
  const o = setOptions(c, 3);
  if (o.ttl !== undefined && o.ttl > MAX_TTL_S) throw invalidExpire(c.args[0]!);
  if (!o.nx && !o.xx && !o.get && !o.keepTtl && o.ttl === undefined) {
    await putString(c.store, key, value, 0);
    return OK;
  }
  return setWith(c, key, value, o);
}

/**
 * SET: a plain one over a variant of the same type the store holds in memory
 * is one put issued at once (Issued: a pipeline of them shares group commits).
 */
function setCommand(c: Call): Promise<Reply> | Issued {
  if (c.args.length === 3) {
    const key = c.args[1]!;
    const value = c.args[2]!;
    const cur = look(c.store, key);
    if (typeof cur === 'string' && variantText(cur)[1] === (isStoredInteger(value) ? 'i' : 's'))
      return new Issued(c.store.variants.put(key, inputOf(value), 0).then(() => OK));
    // A new key no other kind holds, as far as the store can tell at once: one create, nothing to remove.
    if (cur === MISSING) {
      return new Issued(c.store.variants.put(key, inputOf(value), 0, undefined, true).then(() => OK));
    }
  }
  return set(c);
}

function setWith(c: Call, key: string, value: string, o: SetOptions): Promise<Reply> {
  // SET … GET answers the value it replaced: the write holds only while the version read is current (RACED: retried).
  return retryOnRace(async () => setWithOnce(c, key, value, o, o.get ? await getString(c.store, key) : undefined));
}

async function setWithOnce(c: Call, key: string, value: string, o: SetOptions, old?: StringValue): Promise<Reply | typeof RACED> {
  if (o.nx || o.xx) {
    const exists = (await keyInfo(c.store, key)) !== undefined;
    if ((o.nx && exists) || (o.xx && !exists)) return o.get ? (old?.text ?? null) : null;
  }
  let ttl = o.ttl ?? 0;
  if (o.keepTtl) ttl = await remainingTtl(c.store, key);
  if (ttl < 0 || (o.ttl !== undefined && ttl === 0)) {
    // An EXAT / PXAT in the past: the value is set and gone at once, as in Redis.
    await deleteHeld(c.store, key);
  } else {
    try {
      await putString(c.store, key, value, ttl, o.nx ? 0 : o.get ? (old?.version ?? 0) : undefined);
    } catch (err) {
      if ((err as { kind?: unknown }).kind !== 'precondition') throw err;
      // NX lost a race with another writer: the key exists after all, which NX answers with nil.
      if (o.nx) return o.get ? (old?.text ?? null) : null;
      return RACED;
    }
  }
  return o.get ? (old?.text ?? null) : OK;
}

async function mset(c: Call, nx: boolean): Promise<Reply> {
  const a = c.args;
  if (a.length % 2 === 0) throw new ErrorReply(`ERR wrong number of arguments for '${a[0]!.toLowerCase()}' command`);
  if (nx) return msetnx(c.store, a);
  for (let i = 1; i < a.length; i += 2) await putString(c.store, a[i]!, a[i + 1]!, 0);
  return OK;
}

/**
 * MSETNX: one Store transaction that sets every key while each is still
 * absent in every kind, so two overlapping ones cannot both answer 1. Empty
 * objects (absent to Redis, present to those checks) are removed first.
 */
async function msetnx(store: Store, a: readonly string[]): Promise<Reply> {
  // The last value of a key named twice, as Redis keeps; the keys in one order for every
  // MSETNX, so that overlapping ones, each creating its keys in that order, queue on the
  // first key they share instead of deadlocking on PostgreSQL.
  const values = new Map<string, string>();
  for (let i = 1; i < a.length; i += 2) values.set(a[i]!, a[i + 1]!);
  const keys = [...values.keys()].sort();
  const mutations: Mutation[] = keys.map((k) => ({ kind: 'variant', name: k, op: 'SET', value: inputOf(values.get(k)!), ttl: 0, retype: true }));
  return retryOnRace(async () => {
    for (const k of keys) {
      const empties: RType[] = [];
      if ((await keyInfo(store, k, undefined, empties)) !== undefined) return 0;
      for (const t of empties) await deleteOf(store, t, k);
    }
    try {
      await store.transact({ checks: keys.flatMap(absentChecks), mutations, serializable: true });
      return 1;
    } catch (err) {
      // A check failed: some key appeared meanwhile (answered 0 above next time), or an empty object did.
      if (err instanceof StoreError && /^transaction check \d+ failed/.test(err.message)) return RACED;
      throw err;
    }
  });
}

async function getRange(c: Call): Promise<Reply> {
  let start = int(c.args[2]!);
  let end = int(c.args[3]!);
  const s = await getString(c.store, c.args[1]!);
  if (s === undefined) return '';
  const b = Buffer.from(s.text);
  const n = b.length;
  if (start < 0 && end < 0 && start > end) return '';
  if (start < 0) start = Math.max(0, n + start);
  if (end < 0) end = Math.max(0, n + end);
  if (end >= n) end = n - 1;
  if (start > end || n === 0) return '';
  // The bytes as they are: a range may cut a multi-byte character, as Redis's may.
  return b.subarray(start, end + 1);
}

async function setRange(c: Call): Promise<Reply> {
  const offset = int(c.args[2]!);
  if (offset < 0) throw new ErrorReply('ERR offset is out of range');
  const value = Buffer.from(c.args[3]!);
  if (offset + value.length > maxValue(c)) throw TOO_BIG;
  let len = 0;
  await updateString(c.store, c.args[1]!, (cur) => {
    const b = Buffer.from(cur?.text ?? '');
    if (value.length === 0) {
      len = b.length;
      return undefined;
    }
    const out = Buffer.alloc(Math.max(b.length, offset + value.length));
    b.copy(out);
    value.copy(out, offset);
    len = out.length;
    return { text: checkUtf8(out) };
  });
  return len;
}

function checkUtf8(b: Buffer): string {
  const t = b.toString('utf8');
  if (!Buffer.from(t).equals(b)) throw new ErrorReply('ERR the result is not valid UTF-8, which Pithos cannot store (docs/redis.md, "Binary data")');
  return t;
}

async function getex(c: Call): Promise<Reply> {
  const key = c.args[1]!;
  const a = c.args;
  let ttl: number | undefined;
  let persist = false;
  for (let i = 2; i < a.length; i++) {
    const w = a[i]!.toUpperCase();
    if (w === 'PERSIST' && ttl === undefined && !persist) persist = true;
    else if ((w === 'EX' || w === 'PX' || w === 'EXAT' || w === 'PXAT') && ttl === undefined && !persist && i + 1 < a.length) {
      const n = int(a[++i]!);
      if (n <= 0) throw invalidExpire('getex');
      ttl = w === 'EX' ? n : w === 'PX' ? n / 1000 : w === 'EXAT' ? n - Date.now() / 1000 : (n - Date.now()) / 1000;
    } else throw syntaxError();
  }
  if (ttl !== undefined && ttl > MAX_TTL_S) throw invalidExpire('getex');
  const s = await getString(c.store, key);
  if (s === undefined) return null;
  if (ttl !== undefined && ttl <= 0) await deleteOf(c.store, 'string', key);
  else if (ttl !== undefined) await c.store.variants.expire(key, ttl);
  else if (persist) await c.store.variants.expire(key, 0);
  return s.text;
}

export const STRING_COMMANDS: Command[] = [
  {
    name: 'get',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'the string at a key',
    run: get,
  },
  { name: 'set', arity: -3, flags: ['write', 'denyoom'], keys: [1, 1, 1], summary: 'NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL', run: setCommand },
  {
    name: 'setnx',
    arity: 3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'set when absent',
    run: async (c) => ((await set({ ...c, args: [c.args[0]!, c.args[1]!, c.args[2]!, 'NX'] })) === OK ? 1 : 0),
  },
  {
    name: 'setex',
    arity: 4,
    flags: ['write', 'denyoom'],
    keys: [1, 1, 1],
    summary: 'set with seconds to live',
    run: (c) => set({ ...c, args: [c.args[0]!, c.args[1]!, c.args[3]!, 'EX', c.args[2]!] }),
  },
  {
    name: 'psetex',
    arity: 4,
    flags: ['write', 'denyoom'],
    keys: [1, 1, 1],
    summary: 'set with ms to live',
    run: (c) => set({ ...c, args: [c.args[0]!, c.args[1]!, c.args[3]!, 'PX', c.args[2]!] }),
  },
  {
    name: 'getset',
    arity: 3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'set, answering the old value',
    run: (c) => set({ ...c, args: [c.args[0]!, c.args[1]!, c.args[2]!, 'GET'] }),
  },
  {
    name: 'getdel',
    arity: 2,
    flags: ['write', 'fast'],
    keys: [1, 1, 1],
    summary: 'get, then delete',
    run: async (c) => {
      // The delete holds only while the version read is current: nothing another client writes in between is lost unseen.
      return retryOnRace(async () => {
        const s = await getString(c.store, c.args[1]!);
        if (s === undefined) return null;
        try {
          await c.store.variants.delete(c.args[1]!, undefined, { ifVersion: s.version });
          return s.text;
        } catch (err) {
          // Gone since it was read: read again (nil now, or a new value).
          if (isMissing(err)) return RACED;
          throw err;
        }
      });
    },
  },
  { name: 'getex', arity: -2, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'get, and set or remove the lifetime', run: getex },
  {
    name: 'mget',
    arity: -2,
    flags: ['readonly', 'fast'],
    keys: [1, -1, 1],
    summary: 'the strings at many keys (nil for others)',
    run: async (c) => {
      const out: Reply[] = [];
      for (const k of c.args.slice(1)) out.push((await getString(c.store, k, false))?.text ?? null);
      return out;
    },
  },
  {
    name: 'mset',
    arity: -3,
    flags: ['write', 'denyoom'],
    keys: [1, -1, 2],
    summary: 'set many (one write each: see the differences)',
    run: (c) => mset(c, false),
  },
  { name: 'msetnx', arity: -3, flags: ['write', 'denyoom'], keys: [1, -1, 2], summary: 'set many when none exists', run: (c) => mset(c, true) },
  { name: 'incr', arity: 2, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'add 1', run: (c) => incrBy(c.store, c.args[1]!, PLUS_ONE) },
  { name: 'decr', arity: 2, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'subtract 1', run: (c) => incrBy(c.store, c.args[1]!, MINUS_ONE) },
  {
    name: 'incrby',
    arity: 3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'add n',
    run: (c) => incrBy(c.store, c.args[1]!, int64(c.args[2]!)),
  },
  {
    name: 'decrby',
    arity: 3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'subtract n',
    run: (c) => {
      const d = int64(c.args[2]!);
      if (d === -9223372036854775808n) throw new ErrorReply('ERR decrement would overflow');
      return incrBy(c.store, c.args[1]!, -d);
    },
  },
  {
    name: 'incrbyfloat',
    arity: 3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'add a float, kept as its text',
    run: async (c) => {
      const d = float(c.args[2]!);
      if (!Number.isFinite(d)) throw new ErrorReply('ERR increment would produce NaN or Infinity');
      const out = await updateString(c.store, c.args[1]!, (cur) => {
        const base = cur === undefined ? 0 : float(cur.text, notFloat);
        const v = base + d;
        if (!Number.isFinite(v)) throw new ErrorReply('ERR increment would produce NaN or Infinity');
        return { text: floatText(v) };
      });
      return out ?? null;
    },
  },
  {
    name: 'append',
    arity: 3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'append to the string',
    run: async (c) => {
      const out = await updateString(c.store, c.args[1]!, (cur) => {
        const text = (cur?.text ?? '') + c.args[2]!;
        if (Buffer.byteLength(text) > maxValue(c)) throw TOO_BIG;
        return { text };
      });
      return Buffer.byteLength(out ?? '');
    },
  },
  {
    name: 'strlen',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'length in bytes',
    run: async (c) => Buffer.byteLength((await getString(c.store, c.args[1]!))?.text ?? ''),
  },
  { name: 'getrange', arity: 4, flags: ['readonly'], keys: [1, 1, 1], summary: 'a byte range of the string', run: getRange },
  { name: 'substr', arity: 4, flags: ['readonly'], keys: [1, 1, 1], summary: 'GETRANGE', run: getRange },
  { name: 'setrange', arity: 4, flags: ['write', 'denyoom'], keys: [1, 1, 1], summary: 'overwrite part of the string', run: setRange },
];

export { is, NULL_ARRAY };
