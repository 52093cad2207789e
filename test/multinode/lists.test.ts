/**
 * Lists across three Pithos processes over one PostgreSQL database (API.md
 * section 25, "Both stores"): a blocking pop on one node is woken by a push
 * on another (LISTEN/NOTIFY, src/store/postgres/lists.ts), waiters on
 * several nodes take each item exactly once, and concurrent pushes and pops
 * through every node lose and duplicate nothing. Runs on the PostgreSQL pass
 * of `npm test`; skipped on the log store, which is one process by design.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, type Res, pool, sleep, uniq } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
const N = 3;
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  const url = await freshSchema(PG_URL as string, `mlists${process.pid}`);
  nodes = await Promise.all(Array.from({ length: N }, () => PithosServer.start({ store: url, testClock: false })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
});

const node = (i: number): PithosServer => nodes[i % nodes.length];

test('a blocking pop on one node is woken by a push on another; wake-up latency measured', { skip }, async () => {
  const n = uniq('x');
  const lat: number[] = [];
  for (let i = 0; i < 20; i++) {
    const waiting = node(0).req('POST', `/lists/${n}/pop`, { wait_ms: 10_000 });
    await sleep(100);
    const t0 = performance.now();
    const pushed = node(1 + (i % 2)).req('POST', `/lists/${n}/push`, { values: [i] });
    const r = await waiting;
    lat.push(performance.now() - t0);
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(r.body.data.items, [i]);
    assert.equal((await pushed).status, 200);
  }
  lat.sort((a, b) => a - b);
  // For scale: a push alone, in the same run (its commit is part of every wake-up above).
  const alone: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await node(1).req('POST', `/lists/${n}-alone/push`, { values: [i] });
    alone.push(performance.now() - t0);
  }
  alone.sort((a, b) => a - b);
  process.stdout.write(
    `# cross-node wake-up (push sent → pop answered): p50 ${lat[10].toFixed(1)} ms, max ${lat[19].toFixed(1)} ms; ` +
      `a push alone: p50 ${alone[10].toFixed(1)} ms\n`,
  );
  // Woken by the recheck alone, a waiter would answer ~500 ms after the push on average
  // (up to RECHECK_MS = 1 s): a median well below that says the notification woke it.
  assert.ok(lat[10] < 400, `median ${lat[10]} ms`);
});

test('waiters on three nodes and pushes through three nodes: every item to exactly one waiter', { skip }, async () => {
  const n = uniq('w');
  const waiters = Array.from({ length: 12 }, (_, i) => node(i).req('POST', `/lists/${n}/pop`, { wait_ms: 20_000 }));
  await sleep(200);
  await Promise.all(Array.from({ length: 12 }, (_, i) => node(i + 1).req('POST', `/lists/${n}/push`, { values: [`v${i}`] })));
  const got = (await Promise.all(waiters)).map((r: Res) => {
    assert.equal(r.status, 200, r.raw);
    return r.body.data.items as string[];
  });
  assert.ok(
    got.every((g) => g.length === 1),
    JSON.stringify(got),
  );
  assert.deepEqual(got.map((g) => g[0]).sort(), Array.from({ length: 12 }, (_, i) => `v${i}`).sort());
  assert.deepEqual((await node(0).req('GET', `/lists/${n}`)).body.data, { items: [], length: 0 });
});

test('concurrent pushes, pops and moves through three nodes: each item exactly once', { skip }, async () => {
  const n = uniq('c');
  const side = uniq('m');
  const COUNT = 300;
  const pushes = pool(
    Array.from({ length: COUNT }, (_, i) => i),
    12,
    (i) => node(i).req('POST', `/lists/${n}/push`, { values: [i], side: i % 2 === 0 ? 'left' : 'right' }),
  );
  const taken: number[] = [];
  const moved: number[] = [];
  const pops = pool(Array.from({ length: 120 }), 9, async (_, i) => {
    const r = await node(i).req('POST', `/lists/${n}/pop`, { count: 2, wait_ms: 200, ...(i % 3 === 0 ? { to: side } : {}) });
    assert.equal(r.status, 200, r.raw);
    (i % 3 === 0 ? moved : taken).push(...(r.body.data.items as number[]));
  });
  await Promise.all([pushes, pops]);
  const rest = (await node(0).req('GET', `/lists/${n}`)).body.data.items as number[];
  const inSide = ((await node(1).req('GET', `/lists/${side}`)).body.data?.items ?? []) as number[];
  assert.deepEqual(
    [...moved].sort((a, b) => a - b),
    [...inSide].sort((a, b) => a - b),
  );
  assert.deepEqual(
    [...taken, ...moved, ...rest].sort((a, b) => a - b),
    Array.from({ length: COUNT }, (_, i) => i),
  );
});
