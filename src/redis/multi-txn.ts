/**
 * EXEC as one Store transaction (docs/redis.md, "Transactions"): a queue of
 * writes that the Store's transaction can hold (SET, INCR and DECR and their
 * BY forms, LPUSH, RPUSH, SADD, SREM, ZADD, ZINCRBY, ZREM, HSET, HMSET, HDEL,
 * DEL of a hash) becomes one `transact` call: checks first (the watched keys,
 * and what each compiled write assumed of its key), then every mutation, all
 * or nothing, on both stores. Each command is planned on what the queue has
 * done to its key so far, read once from the store when the queue first
 * names the key; the checks make the transaction fail if any of that changed
 * before it commits, and the plan is then made again.
 */
import type { Check, Mutation, Store } from '../store/store.js';
import { float, int64, isStoredInteger } from './command.js';
import { absentChecks, CHECK_OF, keyInfo, type RType } from './keyspace.js';
import { Dbl, ErrorReply, OK, type Reply } from './resp.js';
import { inputOf } from './strings.js';

/** What the queue has made of one key so far. */
interface KeyState {
  type: RType | 'none';
  /** A string held as an integer variant, and its value as the check saw it. */
  int: boolean;
  /** A hash's fields. */
  fields: Record<string, unknown>;
}

/** One command's part of the transaction: its mutations, and its reply from their results. */
interface Part {
  mutations: Mutation[];
  reply: (results: unknown[]) => Reply;
}

/** The transaction a queue becomes, or undefined when a command in it cannot be one of its parts. */
export interface Plan {
  checks: Check[];
  mutations: Mutation[];
  reply: (results: unknown[]) => Reply[];
}

type Compile = (args: readonly string[], s: KeyState, key: string) => Part | undefined;

/** An increment's reply from its result; past 2^53 results() has kept its digits as a string. */
const variantNumber = (r: unknown): number | bigint => {
  const v = (r as { variant: number | string }).variant;
  return typeof v === 'string' ? BigInt(v) : v;
};

/**
 * The transaction's results, parsed; an integer variant's value past 2^53
 * stays its digits (as a JSON string), which JSON.parse would round. In JSON
 * text `"variant":` can only be a key: a quote inside a string is escaped.
 */
export const results = (text: string): unknown[] => (JSON.parse(text.replace(/"variant":(-?\d{16,})/g, '"variant":"$1"')) as { results: unknown[] }).results;

function incr(delta: (args: readonly string[]) => bigint): Compile {
  return (args, s, key) => {
    const d = delta(args);
    const n = { value: Number(d), text: String(d) };
    if (s.type === 'string' && s.int) return { mutations: [{ kind: 'variant', name: key, op: 'ADD', delta: n }], reply: ([r]) => variantNumber(r) };
    if (s.type !== 'none') return undefined;
    s.type = 'string';
    s.int = true;
    return { mutations: [{ kind: 'variant', name: key, op: 'SET', value: n, ttl: 0 }], reply: () => d };
  };
}

const COMPILERS: Record<string, Compile> = {
  set: (args, s, key) => {
    if (args.length !== 3 || (s.type !== 'none' && s.type !== 'string')) return undefined;
    s.type = 'string';
    s.int = isStoredInteger(args[2]!);
    return { mutations: [{ kind: 'variant', name: key, op: 'SET', value: inputOf(args[2]!), ttl: 0, retype: true }], reply: () => OK };
  },
  incr: incr(() => 1n),
  decr: incr(() => -1n),
  incrby: incr((a) => int64(a[2]!)),
  decrby: incr((a) => -int64(a[2]!)),
  lpush: (args, s, key) => push(args, s, key, 'left'),
  rpush: (args, s, key) => push(args, s, key, 'right'),
  sadd: (args, s, key) => {
    if (s.type !== 'none' && s.type !== 'set') return undefined;
    s.type = 'set';
    return { mutations: [{ kind: 'set', name: key, op: 'ADD', members: [...new Set(args.slice(2))] }], reply: ([r]) => (r as { added: number }).added };
  },
  srem: (args, s, key) => {
    if (s.type === 'none') return { mutations: [], reply: () => 0 };
    if (s.type !== 'set') return undefined;
    return { mutations: [{ kind: 'set', name: key, op: 'REMOVE', members: [...new Set(args.slice(2))] }], reply: ([r]) => (r as { removed: number }).removed };
  },
  zadd: (args, s, key) => {
    if (s.type !== 'none' && s.type !== 'zset') return undefined;
    let i = 2;
    let mode: 'upsert' | 'nx' | 'xx' | 'gt' | 'lt' = 'upsert';
    let ch = false;
    for (; i < args.length; i++) {
      const w = args[i]!.toUpperCase();
      if (w === 'CH') ch = true;
      else if ((w === 'NX' || w === 'XX' || w === 'GT' || w === 'LT') && mode === 'upsert') mode = w.toLowerCase() as typeof mode;
      else break;
    }
    const rest = args.slice(i);
    if (rest.length === 0 || rest.length % 2 !== 0) return undefined;
    const pairs: Array<[string, number]> = [];
    for (let j = 0; j < rest.length; j += 2) pairs.push([rest[j + 1]!, float(rest[j]!)]);
    if (pairs.some(([, x]) => !Number.isFinite(x)) || new Set(pairs.map(([m]) => m)).size < pairs.length) return undefined;
    s.type = 'zset';
    return {
      mutations: [{ kind: 'zset', name: key, op: 'ADD', members: pairs, mode }],
      reply: ([r]) => {
        const x = r as { added: number; updated: number };
        return ch ? x.added + x.updated : x.added;
      },
    };
  },
  zincrby: (args, s, key) => {
    if (s.type !== 'none' && s.type !== 'zset') return undefined;
    const d = float(args[2]!);
    if (!Number.isFinite(d)) return undefined;
    s.type = 'zset';
    return { mutations: [{ kind: 'zset', name: key, op: 'INCR', member: args[3]!, delta: d }], reply: ([r]) => new Dbl((r as { score: number }).score) };
  },
  zrem: (args, s, key) => {
    if (s.type === 'none') return { mutations: [], reply: () => 0 };
    if (s.type !== 'zset') return undefined;
    return { mutations: [{ kind: 'zset', name: key, op: 'REMOVE', members: [...new Set(args.slice(2))] }], reply: ([r]) => (r as { removed: number }).removed };
  },
  hset: (args, s, key) => hset(args, s, key, true),
  hmset: (args, s, key) => hset(args, s, key, false),
  hdel: (args, s, key) => {
    if (s.type === 'none') return { mutations: [], reply: () => 0 };
    if (s.type !== 'hash') return undefined;
    let n = 0;
    for (const f of args.slice(2)) if (Object.hasOwn(s.fields, f) && delete s.fields[f]) n++;
    if (n === 0) return { mutations: [], reply: () => 0 };
    if (Object.keys(s.fields).length === 0) {
      s.type = 'none';
      return { mutations: [{ kind: 'record', name: key, op: 'DELETE' }], reply: () => n };
    }
    return { mutations: [{ kind: 'record', name: key, op: 'PUT', values: { ...s.fields }, ttl: 0 }], reply: () => n };
  },
  del: (args, s, key) => {
    if (args.length !== 2) return undefined;
    if (s.type === 'none') return { mutations: [], reply: () => 0 };
    if (s.type !== 'hash') return undefined;
    s.type = 'none';
    s.fields = {};
    return { mutations: [{ kind: 'record', name: key, op: 'DELETE' }], reply: () => 1 };
  },
};

function push(args: readonly string[], s: KeyState, key: string, side: 'left' | 'right'): Part | undefined {
  if (s.type !== 'none' && s.type !== 'list') return undefined;
  s.type = 'list';
  return { mutations: [{ kind: 'list', name: key, op: 'PUSH', values: args.slice(2), side }], reply: ([r]) => (r as { length: number }).length };
}

function hset(args: readonly string[], s: KeyState, key: string, countNew: boolean): Part | undefined {
  if ((s.type !== 'none' && s.type !== 'hash') || args.length % 2 !== 0) return undefined;
  let added = 0;
  for (let i = 2; i < args.length; i += 2) {
    const f = args[i]!;
    if (f === '__proto__') return undefined;
    if (!Object.hasOwn(s.fields, f)) added++;
    s.fields[f] = args[i + 1]!;
  }
  s.type = 'hash';
  // Lifetimes of hashes written in a transaction are not kept: see docs/redis.md.
  return { mutations: [{ kind: 'record', name: key, op: 'PUT', values: { ...s.fields }, ttl: 0 }], reply: () => (countNew ? added : OK) };
}

/** Whether every queued command has a compiler (cheap, before anything is read). */
export function compilable(queue: ReadonlyArray<readonly string[]>): boolean {
  return queue.length > 0 && queue.every((a) => COMPILERS[a[0]!.toLowerCase()] !== undefined);
}

/** Reads a key once: its type, whether a string is an integer, a hash's fields; and the check that pins what was read. */
async function readKey(store: Store, key: string): Promise<[KeyState, Check[]]> {
  const empties: RType[] = [];
  const info = await keyInfo(store, key, undefined, empties);
  // Empty objects of other kinds must go before a write makes the key one
  // kind again (keyspace.ts claim): left to the command-at-a-time path.
  if (info === undefined && empties.length > 0) throw new NotPlanned();
  const s: KeyState = { type: info?.type ?? 'none', int: false, fields: {} };
  if (info === undefined) return [s, [{ kind: 'variant', name: key, exists: false, hasValue: false }]];
  if (info.ttlMs !== null) throw new NotPlanned();
  if (info.type === 'string') {
    const v = (JSON.parse(await store.variants.get(key)) as { variant: unknown }).variant;
    s.int = typeof v === 'number' && Number.isInteger(v);
    // Past 2^53 JSON.parse has rounded v, and the check compares it as rounded:
    // enough to pin that the key still holds an integer, all this plan relies on.
    return [s, [{ kind: 'variant', name: key, exists: true, value: v, hasValue: true }]];
  }
  if (info.type === 'hash') {
    const out = { version: 0 };
    s.fields = JSON.parse(await store.records.get(key, out)) as Record<string, unknown>;
    return [s, [{ kind: 'record', name: key, version: out.version }]];
  }
  // A collection's own mutations are atomic; that it is still there pins its type.
  if (info.type === 'list') return [s, [{ kind: 'list', name: key, exists: true, hasLength: false }]];
  if (info.type === 'set') return [s, [{ kind: 'set', name: key, exists: true, hasCount: false }]];
  return [s, [{ kind: 'zset', name: key, exists: true, hasScore: false, hasCount: false }]];
}

/**
 * The checks that keep watched keys as WATCH saw them, from its
 * fingerprints (`<type>:<version>` or `none`), so a write between WATCH and
 * the commit fails the transaction whatever node made it: a present key by
 * its version, an absent one by being absent in every kind. Undefined when
 * an absent key has empty objects (keyInfo), which those checks would call
 * present: that queue runs one command at a time.
 */
export async function watchPins(store: Store, watched: ReadonlyArray<[string, string]>): Promise<Check[] | undefined> {
  const out: Check[] = [];
  for (const [key, seen] of watched) {
    if (seen !== 'none') {
      const i = seen.lastIndexOf(':');
      out.push(CHECK_OF[seen.slice(0, i) as RType](key, Number(seen.slice(i + 1))));
      continue;
    }
    const empties: RType[] = [];
    if ((await keyInfo(store, key, undefined, empties)) === undefined && empties.length > 0) return undefined;
    out.push(...absentChecks(key));
  }
  return out;
}

/** A key the transaction cannot write as planned (one with a lifetime: a PUT would drop it; one with empty objects of other kinds) is left to the queue-at-a-time path. */
class NotPlanned extends Error {}

/** The transaction for `queue`, or undefined when it cannot be one (docs/redis.md lists when). */
export async function plan(store: Store, queue: ReadonlyArray<readonly string[]>): Promise<Plan | undefined> {
  const states = new Map<string, KeyState>();
  const checks: Check[] = [];
  const parts: Part[] = [];
  try {
    for (const args of queue) {
      const key = args[1]!;
      let s = states.get(key);
      if (s === undefined) {
        const [read, pins] = await readKey(store, key);
        states.set(key, (s = read));
        checks.push(...pins);
      }
      let part: Part | undefined;
      try {
        part = COMPILERS[args[0]!.toLowerCase()]!(args, s, key);
      } catch (err) {
        // A bad argument (not an integer, not a float) is the command's own error: the queue-at-a-time path answers it.
        if (err instanceof ErrorReply) return undefined;
        throw err;
      }
      if (part === undefined) return undefined;
      parts.push(part);
    }
  } catch (err) {
    if (err instanceof NotPlanned) return undefined;
    throw err;
  }
  return {
    checks,
    mutations: parts.flatMap((p) => p.mutations),
    reply: (results) => {
      let i = 0;
      return parts.map((p) => {
        const mine = results.slice(i, i + p.mutations.length);
        i += p.mutations.length;
        return p.reply(mine);
      });
    },
  };
}
