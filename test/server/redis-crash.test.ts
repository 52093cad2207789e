/**
 * Redis protocol writers under SIGKILL (docs/redis.md): INCR, RPUSH, LMOVE,
 * ZINCRBY and HINCRBY run from several ioredis connections while the server
 * is killed; after the restart every acknowledged write is there, nothing
 * unsent is (each count lies between what was acknowledged and what was
 * sent), and every acknowledged move left its item in exactly one list.
 * Pipelined INCRs, over RESP and /redis/pipeline, share batches of the log
 * (docs/engine.md): the same bounds hold for each of their counters.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { etag, keepAliveAgent, PithosServer, STORE, TOKEN, untilCount } from '../helpers/server.js';
import { respPort, startWithResp } from '../helpers/redis.js';

let srv: PithosServer;
before(async () => {
  ({ srv } = await startWithResp({ testClock: false }));
});
after(async () => {
  await srv?.close();
});

const connect = async (port: number): Promise<Redis> => {
  const r = new Redis({
    port,
    host: '127.0.0.1',
    password: TOKEN,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  r.on('error', () => undefined);
  await r.connect();
  return r;
};

interface Tally {
  sent: number;
  acked: number;
}

test('SIGKILL during RESP writes: nothing acknowledged is lost, nothing unsent appears, a moved item is in one list', async () => {
  for (let round = 0; round < 3; round++) {
    const port = respPort(srv);
    const conns = await Promise.all(Array.from({ length: 8 }, () => connect(port)));
    const p = `r${round}`;
    const counters: Tally = { sent: 0, acked: 0 };
    const zs: Tally = { sent: 0, acked: 0 };
    const hs: Tally = { sent: 0, acked: 0 };
    const pushed = new Set<string>();
    const moved = new Set<string>();
    let stop = false;
    let n = 0;
    const loop = async (r: Redis, step: (r: Redis) => Promise<void>): Promise<void> => {
      while (!stop) {
        try {
          await step(r);
        } catch {
          return;
        }
      }
    };
    const workers = [
      loop(conns[0]!, async (r) => {
        counters.sent++;
        await r.incr(`${p}:n`);
        counters.acked++;
      }),
      loop(conns[1]!, async (r) => {
        counters.sent++;
        await r.incr(`${p}:n`);
        counters.acked++;
      }),
      loop(conns[2]!, async (r) => {
        const v = `${p}-${n++}`;
        await r.rpush(`${p}:src`, v);
        pushed.add(v);
      }),
      loop(conns[3]!, async (r) => {
        const v = `${p}-${n++}`;
        await r.rpush(`${p}:src`, v);
        pushed.add(v);
      }),
      loop(conns[4]!, async (r) => {
        const v = await r.lmove(`${p}:src`, `${p}:dst`, 'LEFT', 'RIGHT');
        if (v !== null) moved.add(v);
      }),
      loop(conns[5]!, async (r) => {
        zs.sent++;
        await r.zincrby(`${p}:z`, 1, 'm');
        zs.acked++;
      }),
      loop(conns[6]!, async (r) => {
        hs.sent++;
        await r.hincrby(`${p}:h`, 'f', 1);
        hs.acked++;
      }),
    ];
    const ended = Promise.all(workers);
    await untilCount(`round ${round}: increments acknowledged`, () => counters.acked, 30, { ended });
    await untilCount(`round ${round}: moves acknowledged`, () => moved.size, 10, { ended });
    await untilCount(`round ${round}: sorted-set increments acknowledged`, () => zs.acked, 10, { ended });
    await srv.kill('SIGKILL');
    stop = true;
    await ended;
    for (const c of conns) c.disconnect();
    await srv.spawn();
    const r = await connect(respPort(srv));
    try {
      const total = Number(await r.get(`${p}:n`));
      assert.ok(total >= counters.acked && total <= counters.sent, `INCR: ${total} not within acknowledged ${counters.acked} .. sent ${counters.sent}`);
      const z = Number(await r.zscore(`${p}:z`, 'm'));
      assert.ok(z >= zs.acked && z <= zs.sent, `ZINCRBY: ${z} not within ${zs.acked} .. ${zs.sent}`);
      const h = Number(await r.hget(`${p}:h`, 'f'));
      assert.ok(h >= hs.acked && h <= hs.sent, `HINCRBY: ${h} not within ${hs.acked} .. ${hs.sent}`);
      const src = new Set(await r.lrange(`${p}:src`, 0, -1));
      const dst = await r.lrange(`${p}:dst`, 0, -1);
      assert.equal(new Set(dst).size, dst.length, 'no item twice in the destination');
      for (const v of moved) {
        assert.ok(dst.includes(v), `moved item ${v} is in the destination`);
        assert.ok(!src.has(v), `moved item ${v} is not back in the source`);
      }
      for (const v of pushed) assert.ok(src.has(v) !== dst.includes(v), `pushed item ${v} is in exactly one list`);
    } finally {
      r.disconnect();
    }
  }
});

/** Loops 0..2 pipeline over RESP, the rest over /redis/pipeline. */
const REST_LOOPS_FROM = 3;

test('SIGKILL during pipelined writes (RESP and /redis/pipeline), whose commands share batches: every counter lies between the pipelines acknowledged and sent', async () => {
  for (let round = 0; round < 2; round++) {
    const port = respPort(srv);
    const conns = await Promise.all(Array.from({ length: 3 }, () => connect(port)));
    const p = `pp${round}`;
    const WIDTH = 16;
    // Per loop: pipelines sent and acknowledged; each pipeline adds 1 to each of the loop's WIDTH counters.
    const tallies: Tally[] = [];
    let stop = false;
    const respLoop = async (r: Redis, i: number): Promise<void> => {
      const t: Tally = (tallies[i] = { sent: 0, acked: 0 });
      while (!stop) {
        const pipe = r.pipeline();
        for (let j = 0; j < WIDTH; j++) pipe.incr(`${p}:l${i}:c${j}`);
        t.sent++;
        try {
          const res = await pipe.exec();
          if (res === null || res.some(([err]) => err !== null)) return;
        } catch {
          return;
        }
        t.acked++;
      }
    };
    const restLoop = async (i: number): Promise<void> => {
      const t: Tally = (tallies[i] = { sent: 0, acked: 0 });
      const body = JSON.stringify(Array.from({ length: WIDTH }, (_, j) => ['INCR', `${p}:l${i}:c${j}`]));
      while (!stop) {
        t.sent++;
        try {
          const r = await srv.req('POST', '/redis/pipeline', body, { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' });
          if (r.status !== 200) return;
          const entries = JSON.parse(r.raw) as Array<{ result?: unknown }>;
          if (entries.length !== WIDTH || entries.some((e) => typeof e.result !== 'number')) return;
        } catch {
          return;
        }
        t.acked++;
      }
    };
    const loops = [respLoop(conns[0]!, 0), respLoop(conns[1]!, 1), respLoop(conns[2]!, 2), restLoop(REST_LOOPS_FROM), restLoop(REST_LOOPS_FROM + 1)];
    const ended = Promise.all(loops);
    await untilCount(`round ${round}: pipelines acknowledged`, () => tallies.reduce((n, t) => n + t.acked, 0), 60, { ended });
    await srv.kill('SIGKILL');
    stop = true;
    await ended;
    for (const c of conns) c.disconnect();
    srv.agent.destroy();
    srv.agent = keepAliveAgent();
    await srv.spawn();
    const r = await connect(respPort(srv));
    try {
      for (let i = 0; i < tallies.length; i++) {
        const t = tallies[i]!;
        const values = (await r.mget(Array.from({ length: WIDTH }, (_, j) => `${p}:l${i}:c${j}`))).map(Number);
        for (let j = 0; j < WIDTH; j++) {
          assert.ok(values[j]! >= t.acked && values[j]! <= t.sent, `loop ${i} counter ${j}: ${values[j]} not within acknowledged ${t.acked} .. sent ${t.sent}`);
        }
        // On the log store a /redis/pipeline request is decided in one synchronous run, so its 16
        // INCRs went into one batch, which the log holds whole or not at all: after the kill its
        // counters are equal and carry that batch's number as their version.
        if (STORE === 'log' && i >= REST_LOOPS_FROM) {
          assert.equal(new Set(values).size, 1, `loop ${i}: the counters of one pipeline differ after the restart: ${values.join(',')}`);
          // A loop none of whose pipelines reached the log has no counters, so no versions.
          if (values[0] === 0) continue;
          const versions = new Set<number>();
          for (let j = 0; j < WIDTH; j++) versions.add(etag(await srv.req('GET', `/variants/${p}:l${i}:c${j}`)));
          assert.equal(versions.size, 1, `loop ${i}: the counters of one pipeline have versions ${[...versions].join(',')}`);
        }
      }
    } finally {
      r.disconnect();
    }
  }
});
