/**
 * Pub/sub across the nodes of the shared store (docs/redis-rest.md,
 * "Pub/sub"): a subscriber on each of two nodes receives every message
 * published on either node, exactly once, each publisher's in order; a
 * message NOTIFY cannot carry is refused and reaches no one.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from '@upstash/redis';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  const url = await freshSchema(PG_URL as string, `pubsub${process.pid}`);
  nodes = await Promise.all([0, 1].map(() => PithosServer.start({ store: url, testClock: false })));
});
after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
});

const client = (i: number): Redis => new Redis({ url: `${nodes[i]!.base}/redis`, token: nodes[i]!.token });

async function until(what: string, f: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a subscriber on each node gets every message published on either node, exactly once, in order', { skip }, async () => {
  const got: Array<Array<{ from: number; n: number }>> = [[], []];
  const subs = [0, 1].map((i) => {
    const s = client(i).subscribe<{ from: number; n: number }>(['orders']);
    s.on('message', (m) => got[i]!.push(m.message as { from: number; n: number }));
    return s;
  });
  const confirmed = [0, 0];
  subs.forEach((s, i) => s.on('subscribe', () => confirmed[i]++));
  await until('both subscriptions confirmed', () => confirmed[0] === 1 && confirmed[1] === 1);
  const pubs = [client(0), client(1)];
  const local: number[] = [];
  for (let n = 0; n < 20; n++) for (const from of [0, 1]) local.push(await pubs[from]!.publish('orders', { from, n }));
  // PUBLISH counts the subscribers of the node it ran on, as in a Redis cluster.
  assert.deepEqual(local, Array(40).fill(1));
  await until('40 messages on each node', () => got[0]!.length >= 40 && got[1]!.length >= 40);
  await new Promise((r) => setTimeout(r, 300));
  for (const i of [0, 1]) {
    assert.equal(got[i]!.length, 40, `node ${i}`);
    for (const from of [0, 1])
      assert.deepEqual(
        got[i]!.filter((m) => m.from === from).map((m) => m.n),
        [...Array(20).keys()],
        `node ${i}, publisher ${from}`,
      );
  }
  // Beyond NOTIFY's 8,000 bytes: refused before anything is sent.
  const big = await fetch(`${nodes[0]!.base}/redis`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${nodes[0]!.token}` },
    body: JSON.stringify(['PUBLISH', 'orders', 'x'.repeat(8000)]),
  });
  assert.equal(big.status, 400);
  assert.match(((await big.json()) as { error: string }).error, /^ERR message too large for the shared store/);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(
    got.map((g) => g.length),
    [40, 40],
  );
  await Promise.all(subs.map((s) => s.unsubscribe()));
});
