/**
 * Seeded random Redis commands for the differential test: a few keys shared
 * by every family (so wrong types are frequent), small values, and options
 * drawn from what each command accepts, including some it refuses. Each
 * command says how to compare its replies: as they are, or sorted where
 * Redis's order is its hash table's (SMEMBERS, KEYS, HGETALL, …).
 */
export type Cmp = 'exact' | 'sorted' | 'pairs' | 'size' | 'lifetime';

export interface Gen {
  args: string[];
  cmp: Cmp;
  /** A MULTI … EXEC block: these commands are queued between them, and EXEC's reply is compared. */
  block?: string[][];
}

const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
const VALUES = ['a', 'b', 'c', 'x y', '10', '-3', '007', '0', '42', 'hello', '3.5'];
const FIELDS = ['f1', 'f2', 'f3', 'f4'];
const BIG = ['9223372036854775806', '-9223372036854775807', '9007199254740993', '4611686018427387904', '-4611686018427387904', '9223372036854775808', '0'];
const SCORES = ['1', '2', '-1', '0', '2.5', '10', '(1', '-inf', '+inf', '100'];

export function generator(rand: () => number): () => Gen {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const key = (): string => pick(KEYS);
  const val = (): string => pick(VALUES);
  const int = (lo: number, hi: number): string => String(lo + Math.floor(rand() * (hi - lo + 1)));
  const some = <T>(f: () => T, max = 3): T[] => Array.from({ length: 1 + Math.floor(rand() * max) }, f);
  const score = (): string => pick(['1', '2', '-1', '0', '2.5', '10', '0.5', '7']);
  const e = (...args: string[]): Gen => ({ args, cmp: 'exact' });
  const s = (...args: string[]): Gen => ({ args, cmp: 'sorted' });
  const p = (...args: string[]): Gen => ({ args, cmp: 'pairs' });
  const table: Array<() => Gen> = [
    // strings
    () => e('SET', key(), val()),
    () => e('SET', key(), val(), ...pick([['NX'], ['XX'], ['GET'], ['EX', '100'], ['NX', 'GET'], ['XX', 'GET'], ['KEEPTTL'], ['EX', '0'], ['PX', 'x']])),
    () => e('GET', key()),
    () => e('INCR', key()),
    () => e('INCRBY', key(), int(-5, 5)),
    () => e('DECR', key()),
    () => e('DECRBY', key(), int(-5, 5)),
    () => e('INCRBYFLOAT', key(), pick(['1.5', '-0.25', '2', '0.5'])),
    // A counter of its own near the ends of 64 bits and past 2^53, where a double is not exact.
    () => e('SET', 'big', pick(BIG)),
    () => e(pick(['INCRBY', 'DECRBY']), 'big', pick([...BIG, '1', '-1', '2'])),
    () => e(pick(['INCR', 'DECR', 'GET', 'STRLEN']), 'big'),
    () => e('APPEND', key(), val()),
    () => e('STRLEN', key()),
    () => e('GETRANGE', key(), int(-4, 3), int(-3, 6)),
    () => e('SETRANGE', key(), int(0, 4), pick(['zz', 'Q', ''])),
    () => e('GETSET', key(), val()),
    () => e('GETDEL', key()),
    () => e('MGET', ...some(key)),
    () => e('MSET', ...some(() => [key(), val()]).flat()),
    () => e('MSETNX', ...some(() => [key(), val()]).flat()),
    () => e('SETNX', key(), val()),
    // keys
    () => e('DEL', ...some(key)),
    () => e('EXISTS', ...some(key)),
    () => e('TYPE', key()),
    () => e('EXPIRE', key(), pick(['100', '1000', '-1'])),
    // Each server reads its own clock: a remaining lifetime may round to seconds on either side of one.
    () => ({ args: ['TTL', key()], cmp: 'lifetime' }),
    () => e('PERSIST', key()),
    () => e(pick(['RENAME', 'RENAMENX']), key(), key()),
    () => e('DBSIZE'),
    // Never a timeout of 0 with a replica asked for: Redis would wait for ever.
    () =>
      e(
        'WAIT',
        ...pick([
          ['0', '0'],
          ['1', '10'],
          ['x', '0'],
          ['0', '-1'],
          ['0', 'y'],
          ['-1', '0'],
        ]),
      ),
    () => s('KEYS', pick(['*', 'k[12]', 'k?', 'x*'])),
    // lists
    () => e('LPUSH', key(), ...some(val)),
    () => e('RPUSH', key(), ...some(val)),
    () => e('LPUSHX', key(), val()),
    () => e('LPOP', key()),
    () => e('RPOP', key(), ...pick([[], ['2'], ['0']])),
    () => e('LLEN', key()),
    () => e('LRANGE', key(), int(-3, 2), int(-2, 5)),
    () => e('LINDEX', key(), int(-3, 3)),
    () => e('LSET', key(), int(-2, 3), val()),
    () => e('LTRIM', key(), int(0, 2), int(-2, 4)),
    () => e('LREM', key(), int(-2, 2), val()),
    () => e('LPOS', key(), val(), ...pick([[], ['RANK', '-1'], ['COUNT', '0'], ['RANK', '2', 'COUNT', '2']])),
    () => e('LINSERT', key(), pick(['BEFORE', 'AFTER']), val(), val()),
    () => e('LMOVE', key(), key(), pick(['LEFT', 'RIGHT']), pick(['LEFT', 'RIGHT'])),
    () => e('RPOPLPUSH', key(), key()),
    () => e('LMPOP', '2', key(), key(), pick(['LEFT', 'RIGHT']), 'COUNT', int(1, 3)),
    () => e('BLPOP', key(), key(), '0.01'),
    // sets
    () => e('SADD', key(), ...some(val)),
    () => e('SREM', key(), ...some(val)),
    () => e('SISMEMBER', key(), val()),
    () => e('SMISMEMBER', key(), ...some(val)),
    () => s('SMEMBERS', key()),
    () => e('SCARD', key()),
    () => s('SINTER', ...some(key)),
    () => s('SUNION', ...some(key)),
    () => s('SDIFF', ...some(key)),
    () => e('SINTERSTORE', key(), ...some(key)),
    () => e('SUNIONSTORE', key(), ...some(key)),
    () => e('SDIFFSTORE', key(), ...some(key)),
    () => e('SMOVE', key(), key(), val()),
    () => e('SINTERCARD', '2', key(), key()),
    // Random picks: with a count, how many (and every error) must match.
    () => ({ args: ['SRANDMEMBER', key(), pick(['2', '-3', '0', '10', 'x'])], cmp: 'size' }),
    () => ({ args: ['HRANDFIELD', key(), pick(['2', '-3', '0', '10', 'x']), ...pick([[], ['WITHVALUES'], ['BAD']])], cmp: 'size' }),
    () => ({ args: ['ZRANDMEMBER', key(), pick(['2', '-3', '0', '10', 'x']), ...pick([[], ['WITHSCORES'], ['BAD']])], cmp: 'size' }),
    // sorted sets
    () =>
      e('ZADD', key(), ...pick([[], ['NX'], ['XX'], ['GT'], ['LT'], ['CH'], ['XX', 'CH'], ['GT', 'CH'], ['NX', 'XX']]), ...some(() => [score(), val()]).flat()),
    () => e('ZADD', key(), 'INCR', score(), val()),
    () => e('ZINCRBY', key(), score(), val()),
    () => e('ZREM', key(), ...some(val)),
    () => e('ZSCORE', key(), val()),
    () => e('ZMSCORE', key(), ...some(val)),
    () => e('ZRANK', key(), val()),
    () => e('ZREVRANK', key(), val()),
    () => e('ZCARD', key()),
    () => e('ZCOUNT', key(), pick(SCORES), pick(SCORES)),
    () => e('ZRANGE', key(), int(-3, 1), int(-1, 4), ...pick([[], ['WITHSCORES'], ['REV'], ['REV', 'WITHSCORES']])),
    () => e('ZRANGE', key(), pick(SCORES), pick(SCORES), 'BYSCORE', ...pick([[], ['WITHSCORES'], ['LIMIT', '1', '2']])),
    () => e('ZRANGE', key(), pick(SCORES), pick(SCORES), 'BYSCORE', 'REV'),
    () => e('ZRANGEBYSCORE', key(), pick(SCORES), pick(SCORES), ...pick([[], ['WITHSCORES'], ['LIMIT', '0', '1']])),
    () => e('ZREVRANGEBYSCORE', key(), pick(SCORES), pick(SCORES)),
    () => e('ZREVRANGE', key(), int(0, 2), int(-1, 3), ...pick([[], ['WITHSCORES']])),
    // Lexicographic ranges are defined when every score is equal (Redis's own rule): on a key of its own.
    () => e('ZADD', 'lex', ...some(() => ['0', val()]).flat()),
    () => e('ZRANGEBYLEX', 'lex', pick(['-', '[a', '(b', '[10']), pick(['+', '[c', '(x', '(hello'])),
    () => e('ZRANGE', 'lex', pick(['-', '[a', '(0']), pick(['+', '(c']), 'BYLEX', ...pick([[], ['LIMIT', '1', '2']])),
    () => e('ZLEXCOUNT', 'lex', pick(['-', '[a', 'x']), pick(['+', '(c'])),
    () => e('ZPOPMIN', key(), ...pick([[], ['2']])),
    () => e('ZPOPMAX', key(), ...pick([[], ['2']])),
    () => e('ZREMRANGEBYRANK', key(), int(0, 1), int(0, 2)),
    () => e('ZREMRANGEBYSCORE', key(), pick(SCORES), pick(SCORES)),
    () => e('ZRANGESTORE', key(), key(), '0', '-1'),
    // hashes
    () => e('HSET', key(), ...some(() => [pick(FIELDS), val()]).flat()),
    () => e('HSETNX', key(), pick(FIELDS), val()),
    () => e('HGET', key(), pick(FIELDS)),
    () => e('HMGET', key(), ...some(() => pick(FIELDS))),
    () => p('HGETALL', key()),
    () => e('HDEL', key(), ...some(() => pick(FIELDS))),
    () => e('HEXISTS', key(), pick(FIELDS)),
    () => e('HLEN', key()),
    () => s('HKEYS', key()),
    () => s('HVALS', key()),
    () => e('HINCRBY', key(), pick(FIELDS), int(-3, 3)),
    () => e('HINCRBYFLOAT', key(), pick(FIELDS), pick(['1.5', '-0.5'])),
    () => e('HSTRLEN', key(), pick(FIELDS)),
    () => e('HMSET', key(), pick(FIELDS), val()),
  ];
  // Writes a Store transaction holds (one atomic EXEC), and a read that sends EXEC down the queue-at-a-time path.
  const queued: Array<() => string[]> = [
    () => ['SET', key(), val()],
    () => ['INCR', key()],
    () => ['INCRBY', key(), int(-3, 3)],
    () => ['RPUSH', key(), val()],
    () => ['SADD', key(), val(), val()],
    () => ['SREM', key(), val()],
    () => ['ZADD', key(), score(), val()],
    () => ['ZINCRBY', key(), score(), val()],
    () => ['HSET', key(), pick(FIELDS), val()],
    () => ['HDEL', key(), pick(FIELDS)],
    () => ['GET', key()],
  ];
  table.push(() => ({ args: ['MULTI'], cmp: 'exact', block: some(() => pick(queued)(), 4) }));
  return () => pick(table)();
}

/**
 * Two replies normalised for comparison under `cmp`: for a lifetime in
 * seconds (not -1 or -2, which say none or no key), Pithos's is taken as
 * Redis's when they are one second apart or less.
 */
export function normalisePair(pithos: unknown, redis: unknown, cmp: Cmp): [unknown, unknown] {
  if (cmp === 'lifetime') {
    const [p, r] = [Number(pithos), Number(redis)];
    if (Number.isInteger(p) && Number.isInteger(r) && p >= 0 && r >= 0 && Math.abs(p - r) <= 1) return [redis, redis];
    return [pithos, redis];
  }
  return [normalise(pithos, cmp), normalise(redis, cmp)];
}

/** A reply normalised for comparison under `cmp`. */
export function normalise(reply: unknown, cmp: Cmp): unknown {
  if (!Array.isArray(reply)) return reply;
  if (cmp === 'sorted') return [...(reply as unknown[])].map(String).sort();
  if (cmp === 'pairs') {
    const pairs: string[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) pairs.push(`${String(reply[i])}=${String(reply[i + 1])}`);
    return pairs.sort();
  }
  if (cmp === 'size') return reply.length;
  return reply;
}
