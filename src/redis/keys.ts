/**
 * Commands over the whole keyspace (docs/redis.md, "Keys"): they see the
 * union of the five visible kinds, through keyspace.ts.
 */
import { glob, type Glob } from './glob.js';
import { type Call, type Command, int, is, syntaxError } from './command.js';
import { deleteKey, eachKey, expireOf, invalidExpire, keyInfo, MAX_TTL_S, type RType, TYPES } from './keyspace.js';
import { rename } from './rename.js';
import { ErrorReply, OK, type Reply } from './resp.js';

/** Redis's glob: glob.ts (kept under this name for its callers). */
export const globToRegExp = glob;

/** The literal part a glob starts with, which narrows the listings read. */
function literalPrefix(pattern: string): string {
  const m = /^[^*?[\\]*/.exec(pattern);
  return m === null ? '' : m[0];
}

async function expire(c: Call, unit: 's' | 'ms', absolute: boolean): Promise<Reply> {
  const key = c.args[1]!;
  const n = int(c.args[2]!);
  let nx = false;
  let xx = false;
  let gt = false;
  let lt = false;
  for (const w of c.args.slice(3)) {
    if (is(w, 'NX')) nx = true;
    else if (is(w, 'XX')) xx = true;
    else if (is(w, 'GT')) gt = true;
    else if (is(w, 'LT')) lt = true;
    else throw new ErrorReply(`ERR Unsupported option ${w}`);
  }
  if (nx && (xx || gt || lt)) throw new ErrorReply('ERR NX and XX, GT or LT options at the same time are not compatible');
  if (gt && lt) throw new ErrorReply('ERR GT and LT options at the same time are not compatible');
  const ms = unit === 's' ? n * 1000 : n;
  const ttlMs = absolute ? ms - Date.now() : ms;
  if (ttlMs / 1000 > MAX_TTL_S) throw invalidExpire(c.args[0]!);
  const info = await keyInfo(c.store, key);
  if (info === undefined) return 0;
  const cur = info.ttlMs;
  if (nx && cur !== null) return 0;
  if (xx && cur === null) return 0;
  // No lifetime counts as an infinite one for GT and LT, as in Redis.
  if (gt && (cur === null || ttlMs <= cur)) return 0;
  if (lt && cur !== null && ttlMs >= cur) return 0;
  if (ttlMs <= 0) {
    await deleteKey(c.store, key);
    return 1;
  }
  await expireOf(c.store, info.type, key, ttlMs / 1000);
  return 1;
}

async function ttl(c: Call, unit: 's' | 'ms'): Promise<Reply> {
  const info = await keyInfo(c.store, c.args[1]!);
  if (info === undefined) return -2;
  if (info.ttlMs === null) return -1;
  return unit === 'ms' ? info.ttlMs : Math.round(info.ttlMs / 1000);
}

async function scan(c: Call): Promise<Reply> {
  const cursor = c.args[1]!;
  if (!/^\d+$/.test(cursor)) throw new ErrorReply('ERR invalid cursor');
  let match: Glob | undefined;
  let prefix = '';
  let count = 10;
  let type: string | undefined;
  for (let i = 2; i < c.args.length; i++) {
    const w = c.args[i]!;
    if (is(w, 'MATCH') && i + 1 < c.args.length) {
      const p = c.args[++i]!;
      match = globToRegExp(p);
      prefix = literalPrefix(p);
    } else if (is(w, 'COUNT') && i + 1 < c.args.length) {
      count = int(c.args[++i]!);
      if (count < 1) throw syntaxError();
    } else if (is(w, 'TYPE') && i + 1 < c.args.length) type = c.args[++i]!.toLowerCase();
    else throw syntaxError();
  }
  // The cursor is a position in the union in KINDS' order, name order within a
  // kind: a key there for the whole scan is returned once (docs/redis.md, "SCAN").
  const skip = Number(cursor);
  const out: string[] = [];
  let pos = 0;
  let next = 0;
  await eachKey(c.store, prefix, (name, t) => {
    pos++;
    if (pos <= skip) return true;
    if ((match === undefined || match.test(name)) && (type === undefined || type === t)) out.push(name);
    if (pos - skip >= count) {
      next = pos;
      return false;
    }
    return true;
  });
  return [String(next), out];
}

async function keys(c: Call): Promise<Reply> {
  const p = c.args[1]!;
  const re = globToRegExp(p);
  const out: string[] = [];
  await eachKey(c.store, literalPrefix(p), (name) => {
    if (re.test(name)) out.push(name);
    return true;
  });
  return out;
}

/** EXPIRETIME / PEXPIRETIME: when the key's lifetime ends, from the remaining lifetime the store reports. */
async function expireTime(c: Call, unit: 's' | 'ms'): Promise<Reply> {
  const info = await keyInfo(c.store, c.args[1]!);
  if (info === undefined) return -2;
  if (info.ttlMs === null) return -1;
  const at = Date.now() + info.ttlMs;
  return unit === 'ms' ? at : Math.floor(at / 1000);
}

async function count(c: Call): Promise<number> {
  let n = 0;
  await eachKey(c.store, '', () => {
    n++;
    return true;
  });
  return n;
}

export const KEY_COMMANDS: Command[] = [
  {
    name: 'del',
    arity: -2,
    flags: ['write'],
    keys: [1, -1, 1],
    summary: 'delete keys of any type',
    run: async (c) => {
      let n = 0;
      for (const k of c.args.slice(1)) if (await deleteKey(c.store, k)) n++;
      return n;
    },
  },
  {
    name: 'unlink',
    arity: -2,
    flags: ['write', 'fast'],
    keys: [1, -1, 1],
    summary: 'DEL',
    run: async (c) => {
      let n = 0;
      for (const k of c.args.slice(1)) if (await deleteKey(c.store, k)) n++;
      return n;
    },
  },
  {
    name: 'exists',
    arity: -2,
    flags: ['readonly', 'fast'],
    keys: [1, -1, 1],
    summary: 'how many of the keys exist',
    run: async (c) => {
      let n = 0;
      for (const k of c.args.slice(1)) if ((await keyInfo(c.store, k)) !== undefined) n++;
      return n;
    },
  },
  {
    name: 'type',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'string, list, set, zset, hash or none',
    run: async (c) => new (await import('./resp.js')).Simple((await keyInfo(c.store, c.args[1]!))?.type ?? 'none'),
  },
  { name: 'expire', arity: -3, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'seconds to live (NX, XX, GT, LT)', run: (c) => expire(c, 's', false) },
  { name: 'pexpire', arity: -3, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'ms to live', run: (c) => expire(c, 'ms', false) },
  { name: 'expireat', arity: -3, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'expire at a Unix time in s', run: (c) => expire(c, 's', true) },
  { name: 'pexpireat', arity: -3, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'expire at a Unix time in ms', run: (c) => expire(c, 'ms', true) },
  { name: 'expiretime', arity: 2, flags: ['readonly', 'fast'], keys: [1, 1, 1], summary: 'when it expires, Unix s', run: (c) => expireTime(c, 's') },
  { name: 'pexpiretime', arity: 2, flags: ['readonly', 'fast'], keys: [1, 1, 1], summary: 'when it expires, Unix ms', run: (c) => expireTime(c, 'ms') },
  { name: 'ttl', arity: 2, flags: ['readonly', 'fast'], keys: [1, 1, 1], summary: 'seconds left, -1 none, -2 absent', run: (c) => ttl(c, 's') },
  { name: 'pttl', arity: 2, flags: ['readonly', 'fast'], keys: [1, 1, 1], summary: 'ms left', run: (c) => ttl(c, 'ms') },
  {
    name: 'persist',
    arity: 2,
    flags: ['write', 'fast'],
    keys: [1, 1, 1],
    summary: 'remove the lifetime',
    run: async (c) => {
      const info = await keyInfo(c.store, c.args[1]!);
      if (info === undefined || info.ttlMs === null) return 0;
      await expireOf(c.store, info.type, c.args[1]!, 0);
      return 1;
    },
  },
  { name: 'rename', arity: 3, flags: ['write'], keys: [1, 2, 1], summary: 'move a key to a new name (copied, then deleted)', run: (c) => rename(c, false) },
  { name: 'renamenx', arity: 3, flags: ['write', 'fast'], keys: [1, 2, 1], summary: 'RENAME unless the new name exists', run: (c) => rename(c, true) },
  { name: 'keys', arity: 2, flags: ['readonly'], keys: [0, 0, 0], summary: 'every key matching a glob', run: keys },
  { name: 'scan', arity: -2, flags: ['readonly'], keys: [0, 0, 0], summary: 'page through keys (MATCH, COUNT, TYPE)', run: scan },
  { name: 'dbsize', arity: 1, flags: ['readonly', 'fast'], keys: [0, 0, 0], summary: 'number of keys', run: count },
  {
    name: 'randomkey',
    arity: 1,
    flags: ['readonly'],
    keys: [0, 0, 0],
    summary: 'a key chosen at random',
    run: async (c) => {
      const n = await count(c);
      if (n === 0) return null;
      let pick = Math.floor(Math.random() * n);
      let out: string | null = null;
      await eachKey(c.store, '', (name) => {
        if (pick-- > 0) return true;
        out = name;
        return false;
      });
      return out;
    },
  },
  {
    name: 'flushdb',
    arity: -1,
    flags: ['write', 'admin'],
    keys: [0, 0, 0],
    summary: 'delete every visible key (admin token)',
    run: async (c) => {
      if (c.args.length > 2 || (c.args.length === 2 && !is(c.args[1], 'ASYNC') && !is(c.args[1], 'SYNC'))) throw syntaxError();
      const names: Array<[string, RType]> = [];
      await eachKey(c.store, '', (name, t) => {
        names.push([name, t]);
        return true;
      });
      for (const [name] of names) await deleteKey(c.store, name);
      return OK;
    },
  },
  { name: 'select', arity: 2, flags: ['fast', 'loading', 'stale'], keys: [0, 0, 0], summary: 'database 0 only', run: (c) => select(c) },
];

function select(c: Call): Reply {
  const n = int(c.args[1]!);
  if (n !== 0) throw new ErrorReply('ERR DB index is out of range');
  return OK;
}

export const ALL_TYPES = TYPES;
