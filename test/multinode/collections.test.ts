/**
 * Sets and sorted sets across two Pithos processes over one PostgreSQL
 * database (API.md section 25, "Both stores"): concurrent zset increments
 * through both nodes are exact (every intermediate score handed to exactly
 * one request), concurrent set adds through both nodes count each member
 * once, and a change through one node is read back through the other at
 * once (nodes keep no state of their own). Runs on the PostgreSQL pass of
 * `npm test`; skipped on the log store, which is one process by design.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, pool, uniq } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  const url = await freshSchema(PG_URL as string, `mcoll${process.pid}`);
  nodes = await Promise.all(Array.from({ length: 2 }, () => PithosServer.start({ store: url, testClock: false })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
});

const node = (i: number): PithosServer => nodes[i % nodes.length];

test('concurrent zset increments through two nodes are exact', { skip }, async () => {
  const z = uniq('z');
  const N = 300;
  // Two members, each incremented N/2 times by 0.25 through alternating nodes, 12 at a time (writes
  // of one sorted set queue on its header row: each waits for those ahead of it, within the statement timeout).
  const rs = await pool(
    Array.from({ length: N }, (_, i) => i),
    12,
    (i) => node(i >> 1).req('POST', `/zsets/${z}/incr`, { member: i % 2 === 0 ? 'even' : 'odd', delta: 0.25 }),
  );
  for (const r of rs) assert.equal(r.status, 200, r.raw);
  for (const parity of [0, 1]) {
    const scores = rs
      .filter((_, i) => i % 2 === parity)
      .map((r) => r.body.data.score as number)
      .sort((a, b) => a - b);
    assert.deepEqual(
      scores,
      Array.from({ length: N / 2 }, (_, i) => (i + 1) * 0.25),
      'each intermediate score went to exactly one request',
    );
  }
  for (const n of nodes) {
    const g = await n.req('GET', `/zsets/${z}`);
    assert.deepEqual(g.body.data, {
      items: [
        { member: 'even', score: N / 8 },
        { member: 'odd', score: N / 8 },
      ],
      count: 2,
    });
  }
});

test('concurrent set adds of overlapping members through two nodes: the added counts sum to the final count', { skip }, async () => {
  const s = uniq('s');
  const batches = Array.from({ length: 60 }, (_, i) => Array.from({ length: 25 }, (_, j) => `m${(i * 11 + j * 7) % 400}`));
  const rs = await pool(batches, 20, (members, i) => node(i).req('POST', `/sets/${s}/add`, { members }));
  let sum = 0;
  for (const r of rs) {
    assert.equal(r.status, 200, r.raw);
    sum += r.body.data.added as number;
  }
  const all = new Set(batches.flat());
  assert.equal(sum, all.size, 'each member was added exactly once');
  for (const n of nodes) {
    const g = await n.req('GET', `/sets/${s}`);
    assert.equal(g.body.data.count, all.size);
    assert.deepEqual([...g.body.data.members].sort(), [...all].sort());
  }
});

test('concurrent zset adds through two nodes count each new member once; a write on one node is read on the other', { skip }, async () => {
  const z = uniq('za');
  const rs = await pool(
    Array.from({ length: 40 }, (_, i) => i),
    16,
    (i) => node(i).req('POST', `/zsets/${z}/add`, { members: Object.fromEntries(Array.from({ length: 10 }, (_, j) => [`m${(i * 3 + j) % 60}`, j])) }),
  );
  for (const r of rs) assert.equal(r.status, 200, r.raw);
  assert.equal(
    rs.reduce((a, r) => a + (r.body.data.added as number), 0),
    60,
  );
  assert.equal((await node(1).req('GET', `/zsets/${z}?start=0&stop=0`)).body.data.count, 60);
  await node(0).req('POST', `/zsets/${z}/incr`, { member: 'top', delta: 100 });
  assert.deepEqual((await node(1).req('GET', `/zsets/${z}/members/top`)).body.data, { score: 100, rank: 60, rev_rank: 0 });
});
