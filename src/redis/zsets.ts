/**
 * Sorted sets (docs/redis.md, "Sorted sets") over the zset store: adds,
 * increments and removes are its atomic operations; ranges by rank or score
 * are its reads; lexicographic ranges, pops and range removals read with the
 * version and write under it, retried on a race.
 */
import type { ZMode } from '../store/collection.js';
import type { Store, VersionOut } from '../store/store.js';
import { type Call, type Command, float, int, is, syntaxError } from './command.js';
import { assertNotOther, claim, claimFirst, deleteHeld, isMissing } from './keyspace.js';
import { Dbl, ErrorReply, Issued, NULL_ARRAY, type Reply } from './resp.js';
import { isDecided } from '../store/decided.js';
import { retryOnRace } from './races.js';
import { MAX_RANDOM, randomOf, scanPage } from './sets.js';

interface Item {
  member: string;
  score: number;
}

const notFloat = (): ErrorReply => new ErrorReply('ERR value is not a valid float');
const minMax = (): ErrorReply => new ErrorReply('ERR min or max is not a float');

/** Every member in order, or undefined when absent (WRONGTYPE for another type). */
export async function allItems(store: Store, key: string, out?: VersionOut): Promise<Item[] | undefined> {
  try {
    const r = JSON.parse(await store.zsets.range(key, { by: 'rank', start: 0, stop: -1, rev: false }, out)) as { items: Item[] };
    if (r.items.length > 0) return r.items;
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await assertNotOther(store, key, 'zset');
  return undefined;
}

/**
 * ZRANDMEMBER key [count [WITHSCORES]], in Redis's order of checks: the
 * count and the option before the key is read. A negative count may repeat
 * members (at most MAX_RANDOM of them, as SRANDMEMBER).
 */
async function zrandmember(c: Call): Promise<Reply> {
  if (c.args.length === 2) {
    const xs = (await allItems(c.store, c.args[1]!)) ?? [];
    return xs.length === 0 ? null : xs[Math.floor(Math.random() * xs.length)]!.member;
  }
  const n = int(c.args[2]!);
  const withScores = c.args.length === 4 && is(c.args[3], 'WITHSCORES');
  if (c.args.length > 3 && !withScores) throw syntaxError();
  if (n < -MAX_RANDOM) throw new ErrorReply(`ERR value is out of range: Pithos answers at most ${MAX_RANDOM} random members (docs/redis.md)`);
  return reply(c, randomOf((await allItems(c.store, c.args[1]!)) ?? [], n), withScores);
}

function finite(s: number): number {
  if (!Number.isFinite(s)) throw new ErrorReply('ERR Pithos keeps finite scores only (docs/redis.md, "Differences")');
  return s;
}

type ZaddOptions = { nx: boolean; xx: boolean; gt: boolean; lt: boolean; ch: boolean; incr: boolean };

/**
 * ZADD. A plain add (NX, XX, GT, LT, CH alone) to a key the store tells at
 * once no other type holds (claimFirst: the log store, in the same turn as
 * the add) goes to the sorted set with nothing asked first: one the store
 * decided at once is issued (Issued: a pipeline of them shares group
 * commits), and only a missing set needs the key claimed. Anything else
 * claims the key first, so a name another type holds answers WRONGTYPE and
 * changes nothing; INCR, a member named twice and XX with GT or LT read
 * first.
 */
function zadd(c: Call): Promise<Reply> | Issued {
  const key = c.args[1]!;
  let i = 2;
  const o: ZaddOptions = { nx: false, xx: false, gt: false, lt: false, ch: false, incr: false };
  for (; i < c.args.length; i++) {
    const w = c.args[i]!.toUpperCase();
    if (w === 'NX' || w === 'XX' || w === 'GT' || w === 'LT' || w === 'CH' || w === 'INCR') o[w.toLowerCase() as keyof typeof o] = true;
    else break;
  }
  const rest = c.args.slice(i);
  if (rest.length === 0 || rest.length % 2 !== 0) throw syntaxError();
  if (o.nx && o.xx) throw new ErrorReply('ERR XX and NX options at the same time are not compatible');
  if ((o.gt && o.lt) || (o.nx && (o.gt || o.lt))) throw new ErrorReply('ERR GT, LT, and/or NX options at the same time are not compatible');
  if (o.incr && rest.length !== 2) throw new ErrorReply('ERR INCR option supports a single increment-element pair');
  const pairs: Array<[string, number]> = [];
  for (let j = 0; j < rest.length; j += 2) pairs.push([rest[j + 1]!, float(rest[j]!, notFloat)]);
  for (const [, s] of pairs) finite(s);
  const mode: ZMode = o.nx ? 'nx' : o.gt ? 'gt' : o.lt ? 'lt' : o.xx ? 'xx' : 'upsert';
  if (o.incr || (o.xx && mode !== 'xx') || new Set(pairs.map(([m]) => m)).size < pairs.length || claimFirst(c.store, key, 'zset', false))
    return zaddClaimed(c, key, pairs, o, mode);
  const answer = (r: string): number => {
    const x = JSON.parse(r) as { added: number; updated: number };
    return o.ch ? x.added + x.updated : x.added;
  };
  const first = c.store.zsets.add(key, pairs, mode, false);
  if (isDecided(first)) return new Issued(first.then(answer));
  return zaddRest(c, key, pairs, mode, first, answer);
}

/** A plain add the store has not decided at once: its answer, or, when the sorted set is missing, the key claimed and the set created. */
async function zaddRest(
  c: Call,
  key: string,
  pairs: Array<[string, number]>,
  mode: ZMode,
  first: Promise<string>,
  answer: (r: string) => number,
): Promise<Reply> {
  try {
    return answer(await first);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await claim(c.store, key, 'zset');
  return answer(await c.store.zsets.add(key, pairs, mode, true));
}

const incrScore = (r: string): Reply => new Dbl((JSON.parse(r) as { score: number }).score);
const incrFailed = (err: unknown): never => {
  if ((err as { kind?: unknown }).kind === 'conflict') throw new ErrorReply('ERR resulting score is not a number (NaN)');
  throw err;
};

/** ZINCRBY: as a plain ZADD, to the sorted set at once when the store tells at once that no other type holds the key; else on a claimed key. */
function zincrby(c: Call, key: string, member: string, d: number): Promise<Reply> | Issued {
  if (claimFirst(c.store, key, 'zset', false)) return zincrbyClaimed(c, key, member, d);
  const first = c.store.zsets.incr(key, member, d, false);
  if (isDecided(first)) return new Issued(first.then(incrScore, incrFailed));
  return zincrbyRest(c, key, member, d, first);
}

async function zincrbyRest(c: Call, key: string, member: string, d: number, first: Promise<string>): Promise<Reply> {
  try {
    return incrScore(await first);
  } catch (err) {
    if (!isMissing(err)) incrFailed(err);
  }
  return zincrbyClaimed(c, key, member, d);
}

async function zincrbyClaimed(c: Call, key: string, member: string, d: number): Promise<Reply> {
  await claim(c.store, key, 'zset');
  return c.store.zsets.incr(key, member, d, true).then(incrScore, incrFailed);
}

/** ZADD on a claimed key: the forms that read before they write, and a plain add the store could not clear at once. */
async function zaddClaimed(c: Call, key: string, pairs: Array<[string, number]>, o: ZaddOptions, mode: ZMode): Promise<Reply> {
  await claim(c.store, key, 'zset');
  if (o.incr) return zaddIncr(c, key, pairs[0]!, o);
  if (new Set(pairs.map(([m]) => m)).size < pairs.length) return zaddRepeated(c, key, pairs, o);
  let use = pairs;
  let pre: { ifVersion: number } | undefined;
  if (o.xx && mode !== 'xx') {
    // XX with GT or LT: only members already there, decided on the version read.
    const out: VersionOut = { version: 0 };
    const have = new Set((await allItems(c.store, key, out))?.map((x) => x.member) ?? []);
    use = pairs.filter(([m]) => have.has(m));
    if (use.length === 0) return 0;
    pre = { ifVersion: out.version };
  }
  const r = JSON.parse(await c.store.zsets.add(key, use, mode, true, pre)) as { added: number; updated: number };
  return o.ch ? r.added + r.updated : r.added;
}

/**
 * ZADD naming a member more than once: Redis applies the pairs one by one,
 * counting an add and then an update of one member. Simulated here on the
 * scores read, then written as one change under the version read.
 */
async function zaddRepeated(
  c: Call,
  key: string,
  pairs: Array<[string, number]>,
  o: { nx: boolean; xx: boolean; gt: boolean; lt: boolean; ch: boolean },
): Promise<Reply> {
  return retryOnRace(async () => {
    const out: VersionOut = { version: 0 };
    const cur = new Map((await allItems(c.store, key, out))?.map((x): [string, number] => [x.member, x.score]) ?? []);
    const next = new Map<string, number>();
    let added = 0;
    let updated = 0;
    for (const [m, s] of pairs) {
      const had = next.get(m) ?? cur.get(m);
      if (had === undefined) {
        if (o.xx) continue;
        added++;
      } else if (o.nx || s === had || (o.gt && !(s > had)) || (o.lt && !(s < had))) continue;
      else updated++;
      next.set(m, s);
    }
    if (next.size > 0) await c.store.zsets.add(key, [...next], 'upsert', true, out.version === 0 ? undefined : { ifVersion: out.version });
    return o.ch ? added + updated : added;
  });
}

async function zaddIncr(c: Call, key: string, [member, delta]: [string, number], o: { nx: boolean; xx: boolean; gt: boolean; lt: boolean }): Promise<Reply> {
  const cur = await score(c.store, key, member);
  if ((o.nx && cur !== undefined) || (o.xx && cur === undefined)) return null;
  if (cur !== undefined && ((o.gt && !(cur + delta > cur)) || (o.lt && !(cur + delta < cur)))) return null;
  const r = JSON.parse(await c.store.zsets.incr(key, member, delta, true)) as { score: number };
  return new Dbl(r.score);
}

async function score(store: Store, key: string, member: string): Promise<number | undefined> {
  try {
    return (JSON.parse(await store.zsets.member(key, member)) as { score: number }).score;
  } catch (err) {
    if (!isMissing(err)) throw err;
    await assertNotOther(store, key, 'zset');
    return undefined;
  }
}

async function rank(c: Call, rev: boolean): Promise<Reply> {
  const withScore = c.args.length === 4 && is(c.args[3], 'WITHSCORE');
  if (c.args.length > 4 || (c.args.length === 4 && !withScore)) throw syntaxError();
  try {
    const r = JSON.parse(await c.store.zsets.member(c.args[1]!, c.args[2]!)) as { score: number; rank: number; rev_rank: number };
    const n = rev ? r.rev_rank : r.rank;
    return withScore ? [n, new Dbl(r.score)] : n;
  } catch (err) {
    if (!isMissing(err)) throw err;
    await assertNotOther(c.store, c.args[1]!, 'zset');
    return withScore ? NULL_ARRAY : null;
  }
}

interface Bound {
  v: number | string;
  open: boolean;
}

function scoreBound(t: string): Bound {
  const open = t.startsWith('(');
  return { v: float(open ? t.slice(1) : t, minMax), open };
}

function lexBound(t: string): Bound {
  if (t === '-') return { v: -Infinity, open: false };
  if (t === '+') return { v: Infinity, open: false };
  if (t.startsWith('(')) return { v: t.slice(1), open: true };
  if (t.startsWith('[')) return { v: t.slice(1), open: false };
  throw new ErrorReply('ERR min or max not valid string range item');
}

const above = (x: number | string, b: Bound): boolean => (b.v === -Infinity ? true : b.v === Infinity ? false : b.open ? x > b.v : x >= b.v);
const below = (x: number | string, b: Bound): boolean => (b.v === Infinity ? true : b.v === -Infinity ? false : b.open ? x < b.v : x <= b.v);

interface RangeSpec {
  by: 'rank' | 'score' | 'lex';
  rev: boolean;
  min: string;
  max: string;
  offset: number;
  count: number;
  withScores: boolean;
}

/** The items a ZRANGE-family spec selects, computed over the whole set read once. */
function select(items: Item[], s: RangeSpec): Item[] {
  let xs = s.rev ? [...items].reverse() : items;
  if (s.by === 'rank') {
    const n = xs.length;
    let a = int(s.min);
    let b = int(s.max);
    if (a < 0) a = Math.max(0, n + a);
    if (b < 0) b = n + b;
    if (b >= n) b = n - 1;
    return a > b ? [] : xs.slice(a, b + 1);
  }
  // For REV the arguments come max first: min is then the upper bound.
  const [lo, hi] = s.rev ? [s.max, s.min] : [s.min, s.max];
  if (s.by === 'score') {
    const l = scoreBound(lo);
    const h = scoreBound(hi);
    xs = xs.filter((x) => above(x.score, l) && below(x.score, h));
  } else {
    const l = lexBound(lo);
    const h = lexBound(hi);
    xs = xs.filter((x) => above(x.member, l) && below(x.member, h));
  }
  if (s.offset < 0) return [];
  return xs.slice(s.offset, s.count < 0 ? undefined : s.offset + s.count);
}

function reply(c: Call, xs: Item[], withScores: boolean): Reply {
  if (!withScores) return xs.map((x) => x.member);
  if (c.session.proto === 3) return xs.map((x) => [x.member, new Dbl(x.score)]);
  return xs.flatMap((x) => [x.member, new Dbl(x.score)]);
}

/** Parses ZRANGE's options after min max (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES). */
function rangeSpec(args: readonly string[], from: number, base: Partial<RangeSpec>): RangeSpec {
  const s: RangeSpec = { by: 'rank', rev: false, min: args[from]!, max: args[from + 1]!, offset: 0, count: -1, withScores: false, ...base };
  let limit = false;
  for (let i = from + 2; i < args.length; i++) {
    const w = args[i]!.toUpperCase();
    if (w === 'BYSCORE' && base.by === undefined) s.by = 'score';
    else if (w === 'BYLEX' && base.by === undefined) s.by = 'lex';
    else if (w === 'REV' && base.rev === undefined) s.rev = true;
    else if (w === 'WITHSCORES') s.withScores = true;
    else if (w === 'LIMIT' && i + 2 < args.length) {
      s.offset = int(args[++i]!);
      s.count = int(args[++i]!);
      limit = true;
    } else throw syntaxError();
  }
  if (limit && s.by === 'rank') throw new ErrorReply('ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX');
  if (s.withScores && s.by === 'lex') throw new ErrorReply('ERR syntax error, WITHSCORES not supported in combination with BYLEX');
  return s;
}

async function zrange(c: Call, base: Partial<RangeSpec>): Promise<Reply> {
  const s = rangeSpec(c.args, 2, base);
  if (s.by === 'rank') {
    int(s.min);
    int(s.max);
  }
  return reply(c, select((await allItems(c.store, c.args[1]!)) ?? [], s), s.withScores);
}

/** ZREVRANGEBYSCORE and ZRANGEBYSCORE take WITHSCORES and LIMIT only. */
async function byScore(c: Call, rev: boolean): Promise<Reply> {
  for (const w of c.args.slice(4)) if (is(w, 'BYSCORE') || is(w, 'BYLEX') || is(w, 'REV')) throw syntaxError();
  return zrange(c, { by: 'score', rev });
}

/** Removes exactly `pick(items)` under the version read (pops, range removals); resolves to what was removed. */
function removeWhere(c: Call, key: string, pick: (xs: Item[]) => Item[]): Promise<Item[]> {
  return retryOnRace(async () => {
    const out: VersionOut = { version: 0 };
    const xs = await allItems(c.store, key, out);
    if (xs === undefined) return [];
    const gone = pick(xs);
    if (gone.length === 0) return [];
    await c.store.zsets.remove(
      key,
      gone.map((x) => x.member),
      { ifVersion: out.version },
    );
    return gone;
  });
}

async function zpop(c: Call, max: boolean): Promise<Reply> {
  if (c.args.length > 3) throw syntaxError();
  const n = c.args.length === 3 ? int(c.args[2]!) : 1;
  if (n < 0) throw new ErrorReply('ERR value is out of range, must be positive');
  const gone = await removeWhere(c, c.args[1]!, (xs) => (max ? [...xs].reverse() : xs).slice(0, n));
  if (c.session.proto === 3 && c.args.length === 3) return gone.map((x) => [x.member, new Dbl(x.score)]);
  return gone.flatMap((x) => [x.member, new Dbl(x.score)]);
}

/** BZPOPMIN / BZPOPMAX: the store has no waiting zset pop, so this polls (docs/redis.md, "Blocking commands"). */
async function bzpop(c: Call, max: boolean): Promise<Reply> {
  const keys = c.args.slice(1, -1);
  const t = float(c.args[c.args.length - 1]!, () => new ErrorReply('ERR timeout is not a float or out of range'));
  if (t < 0) throw new ErrorReply('ERR timeout is negative');
  const deadline = c.nonBlocking === true ? 0 : t === 0 ? Infinity : Date.now() + t * 1000;
  for (;;) {
    for (const k of keys) {
      const gone = await removeWhere(c, k, (xs) => (max ? [...xs].reverse() : xs).slice(0, 1));
      if (gone.length > 0) return [k, gone[0]!.member, new Dbl(gone[0]!.score)];
    }
    if (Date.now() >= deadline || c.session.gone.aborted) return NULL_ARRAY;
    await new Promise((r) => setTimeout(r, Math.min(50, Math.max(1, deadline - Date.now()))));
  }
}

async function zrangestore(c: Call): Promise<Reply> {
  const [, dst, src] = c.args as [string, string, string];
  const s = rangeSpec(c.args, 3, {});
  if (s.withScores) throw syntaxError();
  const xs = select((await allItems(c.store, src)) ?? [], s);
  if (xs.length === 0) {
    await deleteHeld(c.store, dst);
    return 0;
  }
  await deleteHeld(c.store, dst, 'zset');
  await c.store.zsets.put(
    dst,
    xs.map((x) => [x.member, x.score]),
    0,
  );
  return xs.length;
}

export const ZSET_COMMANDS: Command[] = [
  { name: 'zadd', arity: -4, flags: ['write', 'denyoom', 'fast'], keys: [1, 1, 1], summary: 'NX, XX, GT, LT, CH, INCR', run: zadd },
  {
    name: 'zincrby',
    arity: 4,
    flags: ['write', 'denyoom', 'fast'],
    keys: [1, 1, 1],
    summary: "add to a member's score",
    run: (c) => zincrby(c, c.args[1]!, c.args[3]!, finite(float(c.args[2]!, notFloat))),
  },
  {
    name: 'zrem',
    arity: -3,
    flags: ['write', 'fast'],
    keys: [1, 1, 1],
    summary: 'remove members',
    run: async (c) => {
      try {
        return (JSON.parse(await c.store.zsets.remove(c.args[1]!, [...new Set(c.args.slice(2))])) as { removed: number }).removed;
      } catch (err) {
        if (!isMissing(err)) throw err;
        await assertNotOther(c.store, c.args[1]!, 'zset');
        return 0;
      }
    },
  },
  { name: 'zrandmember', arity: -2, flags: ['readonly'], keys: [1, 1, 1], summary: 'random members [count [WITHSCORES]]', run: zrandmember },
  {
    name: 'zscore',
    arity: 3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: "a member's score",
    run: async (c) => {
      const s = await score(c.store, c.args[1]!, c.args[2]!);
      return s === undefined ? null : new Dbl(s);
    },
  },
  {
    name: 'zmscore',
    arity: -3,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'scores of members',
    run: async (c) => {
      const out: Reply[] = [];
      for (const m of c.args.slice(2)) {
        const s = await score(c.store, c.args[1]!, m);
        out.push(s === undefined ? null : new Dbl(s));
      }
      return out;
    },
  },
  { name: 'zrank', arity: -3, flags: ['readonly', 'fast'], keys: [1, 1, 1], summary: 'rank, lowest first [WITHSCORE]', run: (c) => rank(c, false) },
  { name: 'zrevrank', arity: -3, flags: ['readonly', 'fast'], keys: [1, 1, 1], summary: 'rank, highest first [WITHSCORE]', run: (c) => rank(c, true) },
  {
    name: 'zcard',
    arity: 2,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'number of members',
    run: async (c) => (await allItems(c.store, c.args[1]!))?.length ?? 0,
  },
  {
    name: 'zcount',
    arity: 4,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'members with scores in min..max',
    run: async (c) =>
      select((await allItems(c.store, c.args[1]!)) ?? [], {
        by: 'score',
        rev: false,
        min: c.args[2]!,
        max: c.args[3]!,
        offset: 0,
        count: -1,
        withScores: false,
      }).length,
  },
  {
    name: 'zlexcount',
    arity: 4,
    flags: ['readonly', 'fast'],
    keys: [1, 1, 1],
    summary: 'members in a lexicographic range',
    run: async (c) =>
      select((await allItems(c.store, c.args[1]!)) ?? [], { by: 'lex', rev: false, min: c.args[2]!, max: c.args[3]!, offset: 0, count: -1, withScores: false })
        .length,
  },
  { name: 'zrange', arity: -4, flags: ['readonly'], keys: [1, 1, 1], summary: 'BYSCORE, BYLEX, REV, LIMIT, WITHSCORES', run: (c) => zrange(c, {}) },
  { name: 'zrevrange', arity: -4, flags: ['readonly'], keys: [1, 1, 1], summary: 'by rank, highest first', run: (c) => zrange(c, { by: 'rank', rev: true }) },
  { name: 'zrangebyscore', arity: -4, flags: ['readonly'], keys: [1, 1, 1], summary: 'by score', run: (c) => byScore(c, false) },
  { name: 'zrevrangebyscore', arity: -4, flags: ['readonly'], keys: [1, 1, 1], summary: 'by score, highest first', run: (c) => byScore(c, true) },
  { name: 'zrangebylex', arity: -4, flags: ['readonly'], keys: [1, 1, 1], summary: 'by member', run: (c) => zrange(c, { by: 'lex', rev: false }) },
  { name: 'zrangestore', arity: -5, flags: ['write', 'denyoom'], keys: [1, 2, 1], summary: 'a range into a key', run: zrangestore },
  { name: 'zpopmin', arity: -2, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'remove the lowest', run: (c) => zpop(c, false) },
  { name: 'zpopmax', arity: -2, flags: ['write', 'fast'], keys: [1, 1, 1], summary: 'remove the highest', run: (c) => zpop(c, true) },
  { name: 'bzpopmin', arity: -3, flags: ['write', 'fast', 'blocking'], keys: [1, -2, 1], summary: 'blocking ZPOPMIN (polls)', run: (c) => bzpop(c, false) },
  { name: 'bzpopmax', arity: -3, flags: ['write', 'fast', 'blocking'], keys: [1, -2, 1], summary: 'blocking ZPOPMAX (polls)', run: (c) => bzpop(c, true) },
  {
    name: 'zremrangebyrank',
    arity: 4,
    flags: ['write'],
    keys: [1, 1, 1],
    summary: 'remove by rank',
    run: async (c) =>
      (
        await removeWhere(c, c.args[1]!, (xs) =>
          select(xs, { by: 'rank', rev: false, min: c.args[2]!, max: c.args[3]!, offset: 0, count: -1, withScores: false }),
        )
      ).length,
  },
  {
    name: 'zremrangebyscore',
    arity: 4,
    flags: ['write'],
    keys: [1, 1, 1],
    summary: 'remove by score',
    run: async (c) =>
      (
        await removeWhere(c, c.args[1]!, (xs) =>
          select(xs, { by: 'score', rev: false, min: c.args[2]!, max: c.args[3]!, offset: 0, count: -1, withScores: false }),
        )
      ).length,
  },
  {
    name: 'zscan',
    arity: -3,
    flags: ['readonly'],
    keys: [1, 1, 1],
    summary: 'page through members and scores',
    run: async (c) =>
      scanPage(
        c,
        (await allItems(c.store, c.args[1]!)) ?? [],
        (x) => x.member,
        (x) => [x.member, String(x.score)],
      ),
  },
];
