/**
 * The differential test (docs/redis.md, "How it is checked"): the same
 * seeded random sequence of commands goes to Pithos and to a real
 * redis-server (appendonly yes, appendfsync always), one command at a time,
 * and every reply is compared; a mismatch fails the test with the seed, the
 * step and the commands that led to it. Three times: through Pithos's RESP
 * listener in RESP3 and in RESP2 (ioredis on both sides), then through its
 * Upstash REST route (the @upstash/redis client's requester against Pithos,
 * ioredis against Redis).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { Redis as Upstash } from '@upstash/redis';
import type { PithosServer } from '../helpers/server.js';
import { STORE, TOKEN } from '../helpers/server.js';
import { RedisServer, startWithResp } from '../helpers/redis.js';
import { rng } from '../helpers/rng.js';
import { type Gen, generator, normalisePair } from '../redis/commands.js';

const COUNT = Number(process.env.PITHOS_REDIS_DIFF_COUNT ?? (STORE === 'log' ? 3000 : 1500));
const SEED = Number(process.env.PITHOS_REDIS_DIFF_SEED ?? 20261128);

let pithos: PithosServer;
let ref: RedisServer;
let a: Redis;
let b: Redis;
let rest: RawUpstash;
/** redis-server through ioredis in RESP2, integers as their exact digits (see asJson). */
let c: Redis;

/**
 * @upstash/redis sends each command through its requester: the same
 * headers, body and error handling as its typed calls, without their
 * per-command result parsing, so every command of the generator can go.
 */
class RawUpstash extends Upstash {
  async send(args: string[]): Promise<unknown> {
    try {
      return (await this.client.request<unknown>({ body: args })).result;
    } catch (err) {
      return { error: upstashError(err) };
    }
  }

  /** A MULTI … EXEC block through /multi-exec: EXEC's reply in RESP2's shape, an error in place of a failed command's result. */
  async block(cmds: string[][]): Promise<unknown> {
    try {
      const r = (await this.client.request<unknown>({ path: ['multi-exec'], body: cmds })) as unknown as Array<{ result?: unknown; error?: string }>;
      return r.map((x) => (x.error !== undefined ? { error: x.error } : x.result));
    } catch (err) {
      return { error: upstashError(err) };
    }
  }
}

/** The server's own error text: the client appends the command it sent. */
const upstashError = (err: unknown): string => (err as Error).message.replace(/, command was: .*$/s, '');

before(async () => {
  const started = await startWithResp();
  pithos = started.srv;
  ref = await RedisServer.start();
  // Integer replies as strings on both sides: past 2^53 a JS number would round both alike and hide a difference.
  a = new Redis({ port: started.port, host: '127.0.0.1', password: TOKEN, lazyConnect: true, maxRetriesPerRequest: 0, stringNumbers: true });
  b = new Redis({ port: ref.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, stringNumbers: true });
  // RESP2, whose reply shapes Upstash's REST answers keep (ioredis 6 speaks RESP3 by default, as a and b do).
  c = new Redis({ port: ref.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, protocol: 2, stringNumbers: true });
  await a.connect();
  await b.connect();
  await c.connect();
  rest = new RawUpstash({ url: `${pithos.base}/redis`, token: TOKEN, responseEncoding: false, enableAutoPipelining: false, automaticDeserialization: false });
});

after(async () => {
  a?.disconnect();
  b?.disconnect();
  c?.disconnect();
  await ref?.close();
  await pithos?.close();
});

async function reply(r: Redis, args: string[]): Promise<unknown> {
  try {
    return errorsIn(await r.call(args[0]!, ...args.slice(1)));
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** EXEC's reply holds its failed commands' errors as Error objects: compared by their text. */
const errorsIn = (r: unknown): unknown => (Array.isArray(r) ? r.map((x) => (x instanceof Error ? { error: x.message } : x)) : r);

/** MULTI, the queued commands (each must answer QUEUED), EXEC: EXEC's reply. */
async function block(r: Redis, cmds: string[][]): Promise<unknown> {
  await reply(r, ['MULTI']);
  for (const c of cmds) {
    const q = await reply(r, c);
    if (q !== 'QUEUED') return { queued: q };
  }
  return reply(r, ['EXEC']);
}

/**
 * Redis's reply `r` as a JSON reader of Pithos's REST answer `p` sees it: an
 * integer the reference gave as its exact digits becomes the number that
 * JSON.parse makes of them, where `p` has a number there. Past 2^53 that is
 * the one rounding both an exact and a correctly printed answer get.
 */
function asJson(p: unknown, r: unknown): unknown {
  if (typeof p === 'number' && typeof r === 'string' && /^-?\d+$/.test(r)) return Number(r);
  if (Array.isArray(p) && Array.isArray(r)) return r.map((x, i) => asJson(p[i], x));
  return r;
}

/** Sends the generator's commands to both sides and compares every reply. */
async function compare(pithosSide: Side, redisSide: Side, reconcile = (_p: unknown, r: unknown): unknown => r): Promise<void> {
  const next = generator(rng(SEED));
  const history: string[] = [];
  let compared = 0;
  for (let i = 0; i < COUNT; i++) {
    const g = next();
    history.push(g.args.join(' '));
    const [x, y0] = await Promise.all([pithosSide(g), redisSide(g)]);
    const y = reconcile(x, y0);
    if (g.block !== undefined) history.push(...g.block.map((w) => `  ${w.join(' ')}`), 'EXEC');
    const [nx, ny] = normalisePair(x, y, g.cmp);
    compared++;
    assert.deepEqual(
      nx,
      ny,
      `step ${i} (seed ${SEED}): ${g.args.join(' ')}\npithos: ${JSON.stringify(x)}\nredis:  ${JSON.stringify(y)}\nlast commands:\n${history.slice(-15).join('\n')}`,
    );
  }
  assert.equal(compared, COUNT);
}

type Side = (g: Gen) => Promise<unknown>;
const viaResp =
  (r: Redis): Side =>
  (g) =>
    g.block === undefined ? reply(r, g.args) : block(r, g.block);

test(`${COUNT} random commands over RESP answer as redis-server does (seed ${SEED})`, async () => {
  await compare(viaResp(a), viaResp(b));
});

test(`${COUNT} random commands over RESP2 answer as redis-server does (seed ${SEED})`, async () => {
  // The RESP2 encoder (flat pairs, no doubles or sets) on the wire, which the RESP3 run above does not reach.
  const opts = { host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, protocol: 2 as const, stringNumbers: true };
  const a2 = new Redis({ ...opts, port: a.options.port, password: TOKEN });
  try {
    await a2.connect();
    assert.equal(await a2.call('FLUSHALL'), 'OK');
    assert.equal(await c.call('FLUSHALL'), 'OK');
    await compare(viaResp(a2), viaResp(c));
  } finally {
    a2.disconnect();
  }
});

test(`${COUNT} random commands over Upstash REST answer as redis-server does (seed ${SEED})`, async () => {
  // From empty on both sides, so that a failure above does not carry over.
  assert.equal(await a.call('FLUSHALL'), 'OK');
  assert.equal(await b.call('FLUSHALL'), 'OK');
  await compare((g) => (g.block === undefined ? rest.send(g.args) : rest.block(g.block)), viaResp(c), asJson);
});
