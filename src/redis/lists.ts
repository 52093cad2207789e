/**
 * Lists (docs/redis.md, "Lists") over the list store: pushes, pops and moves
 * are the store's atomic operations; blocking pops are its waiting pop; the
 * few commands the store has no operation for (LINSERT, LREM's count) read
 * the list with its version and write it back only if nothing changed.
 */
import { MAX_POP, MAX_WAIT_MS } from '../store/lists.js';
import type { ListPop, ListSide, Store, VersionOut } from '../store/store.js';
import { type Call, type Command, float, int, is, syntaxError } from './command.js';
import { assertNotOther, claim, claimFirst, ifInMemory, isMissing } from './keyspace.js';
import { remainingTtl } from './strings.js';
import { ErrorReply, Issued, NULL_ARRAY, OK, type Reply } from './resp.js';
import { retryOnRace } from './races.js';

/** An item as Redis shows it: a string as itself, anything else an HTTP client stored as its JSON text. */
export const itemText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

const side = (w: string): ListSide => {
  if (is(w, 'LEFT')) return 'left';
  if (is(w, 'RIGHT')) return 'right';
  throw syntaxError();
};

interface Range {
  items: unknown[];
  length: number;
}

/** The inclusive range, or undefined when the list is absent (WRONGTYPE when another type holds the key). */
export async function range(store: Store, key: string, start: number, stop: number, out?: VersionOut): Promise<Range | undefined> {
  try {
    const r = JSON.parse(await store.lists.range(key, start, stop, out)) as Range;
    if (r.length > 0) return r;
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await assertNotOther(store, key, 'list');
  return undefined;
}

/**
 * LPUSH / RPUSH: onto a list the store holds in memory with items, when it
 * tells at once that no other type holds the key, one push issued at once
 * (Issued: a pipeline of them shares group commits).
 */
function pushCommand(c: Call, s: ListSide): Promise<Reply> | Issued {
  const key = c.args[1]!;
  const head = !claimFirst(c.store, key, 'list', true) ? ifInMemory(c.store, () => c.store.lists.range(key, 0, 0)) : undefined;
  if (head !== undefined && (JSON.parse(head) as Range).length > 0) {
    return new Issued(c.store.lists.push(key, c.args.slice(2), s, false).then((r) => (JSON.parse(r) as { length: number }).length));
  }
  return push(c, s, false);
}

async function push(c: Call, s: ListSide, onlyExisting: boolean): Promise<Reply> {
  const key = c.args[1]!;
  const values = c.args.slice(2);
  if (onlyExisting) return pushExisting(c, key, values, s);
  // Onto an existing list with nothing asked first. On the log store only when no other type holds
  // the key, else it is claimed first, so such a name answers WRONGTYPE; the shared store does not
  // ask (a statement per push; docs/redis.md, "Deliberate differences").
  if (!claimFirst(c.store, key, 'list', true)) {
    try {
      return (JSON.parse(await c.store.lists.push(key, values, s, false)) as { length: number }).length;
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
  }
  await claim(c.store, key, 'list');
  return (JSON.parse(await c.store.lists.push(key, values, s, true)) as { length: number }).length;
}

/** LPUSHX / RPUSHX: only onto a list that holds items (an emptied one is absent), decided on the version read. */
function pushExisting(c: Call, key: string, values: string[], s: ListSide): Promise<Reply> {
  return retryOnRace(async () => {
    const out: VersionOut = { version: 0 };
    if ((await range(c.store, key, 0, 0, out)) === undefined) return 0;
    return (JSON.parse(await c.store.lists.push(key, values, s, false, { ifVersion: out.version })) as { length: number }).length;
  });
}

/** Pops up to `count` items (Redis counts may exceed the store's per-call maximum). */
async function popItems(store: Store, key: string, s: ListSide, count: number): Promise<unknown[] | undefined> {
  const out: unknown[] = [];
  try {
    while (out.length < count) {
      const n = Math.min(MAX_POP, count - out.length);
      const { items } = JSON.parse(await store.lists.pop(key, { side: s, count: n, waitMs: 0, toSide: 'left' })) as { items: unknown[] };
      out.push(...items);
      if (items.length < n) break;
    }
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  if (out.length === 0) {
    await assertNotOther(store, key, 'list');
    return undefined;
  }
  return out;
}

async function pop(c: Call, s: ListSide): Promise<Reply> {
  const key = c.args[1]!;
  if (c.args.length > 3) throw syntaxError();
  if (c.args.length === 3) {
    const n = int(c.args[2]!);
    if (n < 0) throw new ErrorReply('ERR value is out of range, must be positive');
    if (n === 0) {
      // Redis answers an empty array for an existing list, nil for a missing one.
      return (await range(c.store, key, 0, 0)) === undefined ? NULL_ARRAY : [];
    }
    const items = await popItems(c.store, key, s, n);
    return items === undefined ? NULL_ARRAY : items.map(itemText);
  }
  const items = await popItems(c.store, key, s, 1);
  return items === undefined ? null : itemText(items[0]);
}

/** A blocking command's timeout in ms: seconds with fractions; 0 waits until an item comes or the client leaves. */
function timeoutMs(text: string): number {
  const t = float(text, () => new ErrorReply('ERR timeout is not a float or out of range'));
  if (t < 0) throw new ErrorReply('ERR timeout is negative');
  if (!Number.isFinite(t)) throw new ErrorReply('ERR timeout is out of range');
  return t === 0 ? Infinity : Math.max(1, Math.round(t * 1000));
}

/** A blocking command's wait: its timeout, or none inside EXEC. */
function wait(c: Call, text: string): number {
  const ms = timeoutMs(text);
  return c.nonBlocking === true ? 0 : ms;
}

/** Slice of a wait on the first key while the command also watches others (docs/redis.md, "Blocking commands"). */
const SLICE_MS = 100;

/**
 * Waits for an item on any of `keys` (the first that has one, in order),
 * popping `count` from `s` and moving it to `to` when given. Resolves to the
 * key and its items, or undefined on timeout or when the client left.
 */
async function waitPop(
  c: Call,
  keys: string[],
  s: ListSide,
  count: number,
  ms: number,
  to?: { key: string; side: ListSide },
): Promise<[string, unknown[]] | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    for (const key of keys) {
      const got = await popOnce(c, key, { side: s, count, waitMs: 0, to: to?.key, toSide: to?.side ?? 'left' });
      if (got !== undefined) return [key, got];
    }
    const left = deadline - Date.now();
    if (left <= 0 || c.session.gone.aborted) return undefined;
    const slice = Math.min(left, keys.length > 1 ? SLICE_MS : MAX_WAIT_MS);
    const got = await popOnce(c, keys[0]!, {
      side: s,
      count,
      waitMs: Math.max(1, Math.floor(slice)),
      to: to?.key,
      toSide: to?.side ?? 'left',
      gone: c.session.gone,
    });
    if (got !== undefined) return [keys[0]!, got];
    if (c.session.gone.aborted) return undefined;
  }
}

async function popOnce(c: Call, key: string, p: ListPop): Promise<unknown[] | undefined> {
  try {
    const { items } = JSON.parse(await c.store.lists.pop(key, p)) as { items: unknown[] };
    if (items.length > 0) return items;
    // An empty list is an absent key, which another kind may hold.
    await assertNotOther(c.store, key, 'list');
    return undefined;
  } catch (err) {
    if (!isMissing(err)) throw err;
    await assertNotOther(c.store, key, 'list');
    // A missing list can still be waited on: the store waits for its first push.
    if (p.waitMs === 0) return undefined;
    await new Promise((r) => setTimeout(r, Math.min(p.waitMs, SLICE_MS)));
    return undefined;
  }
}

async function bpop(c: Call, s: ListSide): Promise<Reply> {
  const keys = c.args.slice(1, -1);
  const ms = c.nonBlocking === true ? 0 : timeoutMs(c.args[c.args.length - 1]!);
  // Keys are tried in order, each checked for its type as it comes, as in Redis.
  const got = await waitPop(c, keys, s, 1, ms);
  return got === undefined ? NULL_ARRAY : [got[0], itemText(got[1][0])];
}

async function move(c: Call, from: string, to: string, s: ListSide, toSide: ListSide, ms: number): Promise<Reply> {
  // Redis's order: a missing source answers nil before the destination's type is checked.
  if (ms === 0 && (await range(c.store, from, 0, 0)) === undefined) return null;
  await assertNotOther(c.store, from, 'list');
  await claim(c.store, to, 'list');
  const got =
    ms === 0 ? await popOnce(c, from, { side: s, count: 1, waitMs: 0, to, toSide }) : (await waitPop(c, [from], s, 1, ms, { key: to, side: toSide }))?.[1];
  if (got === undefined) return ms === 0 ? null : NULL_ARRAY;
  return itemText(got[0]);
}

/** LMPOP / BLMPOP: numkeys key… LEFT|RIGHT [COUNT n]. */
async function mpop(c: Call, from: number, ms: number): Promise<Reply> {
  const a = c.args;
  const n = int(a[from]!);
  if (n <= 0) throw new ErrorReply('ERR numkeys should be greater than 0');
  if (a.length < from + 2 + n) throw syntaxError();
  const keys = a.slice(from + 1, from + 1 + n);
  const s = side(a[from + 1 + n]!);
  let count = 1;
  const rest = a.slice(from + 2 + n);
  if (rest.length === 2 && is(rest[0], 'COUNT')) {
    count = int(rest[1]!);
    if (count <= 0) throw new ErrorReply('ERR count should be greater than 0');
  } else if (rest.length !== 0) throw syntaxError();
  if (ms === 0) {
    for (const k of keys) {
      const items = await popItems(c.store, k, s, count);
      if (items !== undefined) return [k, items.map(itemText)];
    }
    return NULL_ARRAY;
  }
  const got = await waitPop(c, keys, s, Math.min(count, MAX_POP), ms);
  return got === undefined ? NULL_ARRAY : [got[0], got[1].map(itemText)];
}

/** Read, change, write back under the version read; retried when another writer got there first. */
function rewrite(c: Call, key: string, f: (items: unknown[]) => unknown[] | undefined): Promise<boolean> {
  return retryOnRace(async () => {
    const out: VersionOut = { version: 0 };
    const r = await range(c.store, key, 0, -1, out);
    if (r === undefined) return false;
    const next = f(r.items);
    if (next === undefined) return true;
    // One atomic replacement, under the version read, keeping the lifetime.
    if (next.length === 0) await c.store.lists.delete(key, { ifVersion: out.version });
    else await c.store.lists.put(key, next, await remainingTtl(c.store, key), { ifVersion: out.version });
    return true;
  });
}

async function lpos(c: Call): Promise<Reply> {
  const [, key, el] = c.args as [string, string, string];
  let rank = 1;
  let num: number | undefined;
  let maxlen = 0;
  for (let i = 3; i < c.args.length; i += 2) {
    const w = c.args[i]!;
    if (i + 1 >= c.args.length) throw syntaxError();
    const v = int(c.args[i + 1]!);
    if (is(w, 'RANK')) {
      if (v === 0)
        throw new ErrorReply(
          "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
        );
      rank = v;
    } else if (is(w, 'COUNT')) {
      if (v < 0) throw new ErrorReply("ERR COUNT can't be negative");
      num = v;
    } else if (is(w, 'MAXLEN')) {
      if (v < 0) throw new ErrorReply("ERR MAXLEN can't be negative");
      maxlen = v;
    } else throw syntaxError();
  }
  const r = await range(c.store, key, 0, -1);
  const items = r?.items.map(itemText) ?? [];
  const found: number[] = [];
  const want = num === undefined ? 1 : num === 0 ? Infinity : num;
  const n = items.length;
  let skip = Math.abs(rank) - 1;
  for (let k = 0; k < n && (maxlen === 0 || k < maxlen) && found.length < want; k++) {
    const i = rank > 0 ? k : n - 1 - k;
    if (items[i] !== el) continue;
    if (skip > 0) skip--;
    else found.push(i);
  }
  if (num === undefined) return found.length > 0 ? found[0]! : null;
  return found;
}

export const LIST_COMMANDS: Command[] = [
  { name: 'lpush', arity: -3, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'push to the head', run: (c) => pushCommand(c, 'left') },
  { name: 'rpush', arity: -3, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'push to the tail', run: (c) => pushCommand(c, 'right') },
  {
    name: 'lpushx',
    arity: -3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'push to the head of an existing list',
    run: (c) => push(c, 'left', true),
  },
  {
    name: 'rpushx',
    arity: -3,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: 'push to the tail of an existing list',
    run: (c) => push(c, 'right', true),
  },
  { name: 'lpop', arity: -2, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'pop from the head [count]', run: (c) => pop(c, 'left') },
  { name: 'rpop', arity: -2, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'pop from the tail [count]', run: (c) => pop(c, 'right') },
  {
    name: 'llen',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'length',
    run: async (c) => (await range(c.store, c.args[1]!, 0, 0))?.length ?? 0,
  },
  {
    name: 'lrange',
    arity: 4,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'items start..stop',
    run: async (c) => (await range(c.store, c.args[1]!, int(c.args[2]!), int(c.args[3]!)))?.items.map(itemText) ?? [],
  },
  {
    name: 'lindex',
    arity: 3,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'the item at an index',
    run: async (c) => {
      const i = int(c.args[2]!);
      const r = await range(c.store, c.args[1]!, i, i === -1 ? -1 : i);
      return r === undefined || r.items.length === 0 ? null : itemText(r.items[0]);
    },
  },
  {
    name: 'lset',
    arity: 4,
    flags: ['write', 'denyoom'],
    keys: [1, 1, 1],
    summary: 'replace the item at an index',
    run: async (c) => {
      if ((await range(c.store, c.args[1]!, 0, 0)) === undefined) throw new ErrorReply('ERR no such key');
      try {
        await c.store.lists.patch(c.args[1]!, { set: { index: int(c.args[2]!), value: c.args[3]! } });
      } catch (err) {
        if ((err as { kind?: unknown }).kind === 'invalid' || (err as { kind?: unknown }).kind === 'conflict') throw new ErrorReply('ERR index out of range');
        throw err;
      }
      return OK;
    },
  },
  {
    name: 'ltrim',
    arity: 4,
    flags: ['write'],
    keys: [1, 1, 1],
    summary: 'keep start..stop',
    run: async (c) => {
      const start = int(c.args[2]!);
      const stop = int(c.args[3]!);
      if ((await range(c.store, c.args[1]!, 0, 0)) === undefined) return OK;
      await c.store.lists.patch(c.args[1]!, { trim: { start, stop } });
      return OK;
    },
  },
  {
    name: 'lrem',
    arity: 4,
    flags: ['write'],
    keys: [1, 1, 1],
    summary: 'remove count equal items',
    run: async (c) => {
      const count = int(c.args[2]!);
      const el = c.args[3]!;
      let removed = 0;
      await rewrite(c, c.args[1]!, (items) => {
        removed = 0;
        const texts = items.map(itemText);
        const drop = new Set<number>();
        const order = count < 0 ? texts.map((_, i) => texts.length - 1 - i) : texts.map((_, i) => i);
        for (const i of order) if (texts[i] === el && (count === 0 || drop.size < Math.abs(count))) drop.add(i);
        removed = drop.size;
        return drop.size === 0 ? undefined : items.filter((_, i) => !drop.has(i));
      });
      return removed;
    },
  },
  { name: 'lpos', arity: -3, flags: ['readonly'], keys: [1, 1, 1], summary: 'index of an item (RANK, COUNT, MAXLEN)', run: lpos },
  {
    name: 'linsert',
    arity: 5,
    flags: ['write', 'denyoom'],
    keys: [1, 1, 1],
    summary: 'insert before or after an item',
    run: async (c) => {
      const where = c.args[2]!;
      if (!is(where, 'BEFORE') && !is(where, 'AFTER')) throw syntaxError();
      let out = 0;
      const existed = await rewrite(c, c.args[1]!, (items) => {
        const i = items.findIndex((v) => itemText(v) === c.args[3]!);
        if (i < 0) {
          out = -1;
          return undefined;
        }
        const next = [...items];
        next.splice(is(where, 'BEFORE') ? i : i + 1, 0, c.args[4]!);
        out = next.length;
        return next;
      });
      return existed ? out : 0;
    },
  },
  {
    name: 'lmove',
    arity: 5,
    flags: ['write', 'denyoom'],
    keys: [1, 2, 1],
    summary: 'pop from one list, push to another',
    run: (c) => move(c, c.args[1]!, c.args[2]!, side(c.args[3]!), side(c.args[4]!), 0),
  },
  {
    name: 'rpoplpush',
    arity: 3,
    flags: ['write', 'denyoom'],
    keys: [1, 2, 1],
    summary: 'LMOVE src dst RIGHT LEFT',
    run: (c) => move(c, c.args[1]!, c.args[2]!, 'right', 'left', 0),
  },
  { name: 'lmpop', arity: -4, flags: ['write'], keys: [0, 0, 0], summary: 'pop from the first non-empty list', run: (c) => mpop(c, 1, 0) },
  { name: 'blpop', arity: -3, flags: ['write', 'blocking'], keys: [1, -2, 1], summary: 'blocking LPOP over keys', run: (c) => bpop(c, 'left') },
  { name: 'brpop', arity: -3, flags: ['write', 'blocking'], keys: [1, -2, 1], summary: 'blocking RPOP over keys', run: (c) => bpop(c, 'right') },
  {
    name: 'blmove',
    arity: 6,
    flags: ['write', 'denyoom', 'blocking'],
    keys: [1, 2, 1],
    summary: 'blocking LMOVE',
    run: (c) => move(c, c.args[1]!, c.args[2]!, side(c.args[3]!), side(c.args[4]!), wait(c, c.args[5]!)),
  },
  {
    name: 'brpoplpush',
    arity: 4,
    flags: ['write', 'denyoom', 'blocking'],
    keys: [1, 2, 1],
    summary: 'blocking RPOPLPUSH',
    run: (c) => move(c, c.args[1]!, c.args[2]!, 'right', 'left', wait(c, c.args[3]!)),
  },
  { name: 'blmpop', arity: -5, flags: ['write', 'blocking'], keys: [0, 0, 0], summary: 'blocking LMPOP', run: (c) => mpop(c, 2, wait(c, c.args[1]!)) },
];
