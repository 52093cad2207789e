/**
 * The Redis protocol across two Pithos processes over one PostgreSQL
 * database (docs/redis.md): a blocking pop on one node is woken by a push
 * through the other; WATCH on one node sees a write through the other;
 * concurrent INCRs through both nodes are exact. Runs on the PostgreSQL
 * pass of `npm test`; skipped on the log store, which is one process.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, TOKEN, sleep } from '../helpers/server.js';
import { startWithResp } from '../helpers/redis.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let nodes: Array<{ srv: PithosServer; port: number }> = [];
const clients: Redis[] = [];

before(async () => {
  if (skip) return;
  const url = await freshSchema(PG_URL as string, `mredis${process.pid}`);
  nodes = await Promise.all(Array.from({ length: 2 }, () => startWithResp({ store: url, testClock: false })));
});

after(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all(nodes.map((n) => n.srv.close()));
});

async function on(i: number): Promise<Redis> {
  const r = new Redis({ port: nodes[i]!.port, host: '127.0.0.1', password: TOKEN, lazyConnect: true, maxRetriesPerRequest: 0 });
  clients.push(r);
  await r.connect();
  return r;
}

test('BLPOP on one node is woken by RPUSH through the other', { skip }, async () => {
  const a = await on(0);
  const b = await on(1);
  const waiting = a.blpop('mn:q', 10);
  await sleep(300);
  assert.equal(await b.rpush('mn:q', 'job-1'), 1);
  assert.deepEqual(await waiting, ['mn:q', 'job-1']);
  assert.equal(await b.llen('mn:q'), 0);
});

test('WATCH on one node aborts EXEC after a write through the other', { skip }, async () => {
  const a = await on(0);
  const b = await on(1);
  await a.set('mn:w', '1');
  await a.watch('mn:w');
  await b.set('mn:w', '2');
  assert.equal(await a.multi().set('mn:w', 'a').exec(), null);
  assert.equal(await b.get('mn:w'), '2');
});

test('INCR through both nodes, 8 connections each, counts every increment once', { skip }, async () => {
  const conns = await Promise.all(Array.from({ length: 16 }, (_, i) => on(i % 2)));
  const seen = await Promise.all(conns.map(async (r) => Promise.all(Array.from({ length: 25 }, () => r.incr('mn:n')))));
  const all = seen.flat().sort((x, y) => x - y);
  assert.deepEqual(
    all,
    Array.from({ length: 400 }, (_, i) => i + 1),
    'every value from 1 to 400 handed out exactly once',
  );
});
