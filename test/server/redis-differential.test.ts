/**
 * The differential test (docs/redis.md, "How it is checked"): the same
 * seeded random sequence of commands goes to Pithos's RESP listener and to a
 * real redis-server (appendonly yes, appendfsync always), one command at a
 * time, and every reply is compared. A mismatch fails the test with the seed,
 * the step and the commands that led to it, unless docs/redis.md lists it as
 * a deliberate difference (DIFFERENCES below, each with its reason).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import type { PithosServer } from '../helpers/server.js';
import { STORE, TOKEN } from '../helpers/server.js';
import { RedisServer, startWithResp } from '../helpers/redis.js';
import { rng } from '../helpers/rng.js';
import { generator, normalise } from '../redis/commands.js';

const COUNT = Number(process.env.PITHOS_REDIS_DIFF_COUNT ?? (STORE === 'log' ? 3000 : 1500));
const SEED = Number(process.env.PITHOS_REDIS_DIFF_SEED ?? 20261128);

let pithos: PithosServer;
let ref: RedisServer;
let a: Redis;
let b: Redis;

before(async () => {
  const started = await startWithResp();
  pithos = started.srv;
  ref = await RedisServer.start();
  a = new Redis({ port: started.port, host: '127.0.0.1', password: TOKEN, lazyConnect: true, maxRetriesPerRequest: 0 });
  b = new Redis({ port: ref.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  await a.connect();
  await b.connect();
});

after(async () => {
  a?.disconnect();
  b?.disconnect();
  await ref?.close();
  await pithos?.close();
});

async function reply(r: Redis, args: string[]): Promise<unknown> {
  try {
    return await r.call(args[0]!, ...args.slice(1));
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** MULTI, the queued commands (each must answer QUEUED), EXEC: EXEC's reply. */
async function block(r: Redis, cmds: string[][]): Promise<unknown> {
  await reply(r, ['MULTI']);
  for (const c of cmds) {
    const q = await reply(r, c);
    if (q !== 'QUEUED') return { queued: q };
  }
  return reply(r, ['EXEC']);
}

test(`${COUNT} random commands answer as redis-server does (seed ${SEED})`, async () => {
  const next = generator(rng(SEED));
  const history: string[] = [];
  let compared = 0;
  for (let i = 0; i < COUNT; i++) {
    const g = next();
    history.push(g.args.join(' '));
    const [x, y] = g.block === undefined ? await Promise.all([reply(a, g.args), reply(b, g.args)]) : await Promise.all([block(a, g.block), block(b, g.block)]);
    if (g.block !== undefined) history.push(...g.block.map((w) => `  ${w.join(' ')}`), 'EXEC');
    const nx = normalise(x, g.cmp);
    const ny = normalise(y, g.cmp);
    compared++;
    assert.deepEqual(
      nx,
      ny,
      `step ${i} (seed ${SEED}): ${g.args.join(' ')}\npithos: ${JSON.stringify(x)}\nredis:  ${JSON.stringify(y)}\nlast commands:\n${history.slice(-15).join('\n')}`,
    );
  }
  assert.equal(compared, COUNT);
});
