/**
 * History going backwards under the change feed (a restore to an earlier
 * point, or a failover that lost transactions), scripted: the changes past
 * a point are deleted and the sequence is set back, then writes go on. Live
 * watchers must get `reset`, and fences and versions must stay above
 * everything published before. Runs on its own schema of the PostgreSQL
 * pass's cluster.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { adminQuery, freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, etag, expectSuccess, sleep } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let node: PithosServer | undefined;
let url = '';

before(async () => {
  if (skip) return;
  url = await freshSchema(PG_URL as string, `rewind${process.pid}`);
  node = await PithosServer.start({ store: url, testClock: false });
});

after(async () => {
  await node?.close();
});

test(
  'history set back (changes deleted, sequence rewound): watchers get reset, versions and fences re-based above everything published',
  { skip },
  async () => {
    const n = node as PithosServer;
    const w = watch({ port: n.port, token: n.token });
    await w.opened;
    const versions: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await n.req('PUT', `/records/a${i}`, { record: { i } });
      assert.equal(r.status, 201, r.raw);
      versions.push(etag(await n.req('GET', `/records/a${i}`)));
    }
    const lock = await n.req('PUT', '/locks/L', { ttl: 30 });
    assert.equal(lock.status, 201, lock.raw);
    const fence = lock.body.data.fence as number;
    expectSuccess(await n.req('DELETE', '/locks/L', { token: lock.body.data.token }), 200, 'lock deleted successfully');
    const published = Math.max(fence, ...versions);
    // Published means on the feed: wait until the node has delivered everything up to the lock's changes.
    const delivered = (): number => Math.max(0, ...w.events.map((e) => Number((JSON.parse(e.data) as { version?: number }).version ?? 0)));
    await w.until(() => w.events.filter((e) => e.event === 'put').length >= 5 && delivered() >= published, 20_000, 'the writes and the lock on the feed');
    // The rewind: as a restore to before the second write would leave it.
    const back = versions[0];
    await adminQuery(url, `DELETE FROM pithos_changes WHERE pos > ${back}; SELECT setval('pithos_seq', ${back})`);
    // Writes go on; the first ones may draw positions that were published already.
    for (let i = 0; i < 3; i++) assert.equal((await n.req('PUT', `/records/b${i}`, { record: { i } })).status, 201);
    await w.until(() => w.events.some((e) => e.event === 'reset'), 20_000, 'reset on the feed');
    const reset = w.events.find((e) => e.event === 'reset');
    assert.ok(Number(JSON.parse(reset?.data ?? '{}').version) >= published, `reset at ${reset?.data}, published ${published}`);
    // After the reset: versions and fences above everything published, and the feed goes on.
    const c = await n.req('PUT', '/records/c', { record: { after: true } });
    assert.equal(c.status, 201, c.raw);
    const vc = etag(await n.req('GET', '/records/c'));
    assert.ok(vc > published, `version ${vc} after the rewind, ${published} published before`);
    const lock2 = await n.req('PUT', '/locks/L', { ttl: 30 });
    assert.equal(lock2.status, 201, lock2.raw);
    assert.ok((lock2.body.data.fence as number) > fence, `fence ${lock2.body.data.fence as number} after ${fence}`);
    const at = w.events.indexOf(reset!);
    await w.until(() => w.events.slice(at).some((e) => e.event === 'put' && e.data.includes('"c"')), 20_000, 'the put after the reset');
    await sleep(200);
    assert.match(n.stderr, /the database's history changed \(the sequence is at \d+, below \d+ already published\)/);
    w.close();
  },
);
