/**
 * The change feed's handoff from replay to live, black-box (docs/api.md,
 * "Change feed"): a watcher that opens with `since` while writers keep
 * writing gets exactly the changes after `since`, each once, in version
 * order. On the shared store the feed publishes a little after commit and a
 * resuming watcher first waits for it to reach `since`; the batches it
 * publishes meanwhile, some of them older than `since`, must not move the
 * watcher's position back.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, etag, pool, sleep, uniq } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

/**
 * A value large enough that the shared store's feed publishes a backlog of
 * these in several batches (it reads its change table in pages of a bounded
 * size), as it does any backlog of many changes.
 */
const BULK = 'x'.repeat(40_000);

/** Writers that each PUT fresh variants under `tag` until stopped (bounded in time and count). */
function writers(tag: string, n: number, maxMs: number, maxWrites: number): { count: () => number; stop: () => Promise<string[]> } {
  const names: string[] = [];
  let stopped = false;
  const deadline = Date.now() + maxMs;
  const loops = Array.from({ length: n }, async (_, i) => {
    for (let j = 0; !stopped && Date.now() < deadline && names.length < maxWrites; j++) {
      const name = `${tag}-${i}-${j}`;
      const r = await srv.req('PUT', `/variants/${name}`, { variant: `${j}:${BULK}` });
      assert.equal(r.status, 201, r.raw);
      names.push(name);
    }
  });
  return {
    count: () => names.length,
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      return names;
    },
  };
}

/** Waits (at most 10 s) until the writers have written `n` variants in all. */
async function untilWrites(load: { count: () => number }, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (load.count() < n && Date.now() < deadline) await sleep(20);
  assert.ok(load.count() >= n, `only ${load.count()} of ${n} writes within 10 s`);
}

test('a watcher opening with since amid concurrent writes gets every later change once, in order, none at or below since', async () => {
  // Several rounds: each opens the server's only watcher while the feed has none, the moment a
  // shared-store feed lags most (it polls rarely without watchers).
  for (let round = 0; round < 3; round++) {
    const tag = uniq('wh');
    // Fresh connections: the last round may have left its keep-alive sockets idle for about the
    // server's keep-alive timeout, and a request on one the server is just closing is reset.
    srv.agent.destroy();
    srv.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const load = writers(tag, 8, 15_000, 3000);
    // Gated by counts, not by time: on a fast machine 1.2 s of writing reached the count bound
    // before the marker, and no write came after it.
    await untilWrites(load, 40);
    const marker = `${tag}-m`;
    assert.equal((await srv.req('PUT', `/variants/${marker}`, { variant: 0 })).status, 201);
    const since = etag(await srv.req('GET', `/variants/${marker}`));
    const w = watch({ port: srv.port, token: srv.token, query: `kind=variant&prefix=${tag}&since=${since}` });
    await w.opened;
    await untilWrites(load, load.count() + 100);
    const names = await load.stop();
    assert.ok(names.length > 20, `only ${names.length} writes in a round`);
    const versions = await pool(names, 8, async (name) => etag(await srv.req('GET', `/variants/${name}`)));
    const want = versions.filter((v) => v > since).sort((a, b) => a - b);
    assert.ok(want.length > 0, 'no write after since');
    const top = want[want.length - 1];
    await w.until(() => w.events.some((e) => Number(e.id) >= top), 30_000, `the change at ${top}`);
    // Whatever else was already on its way arrives too, so a late duplicate is seen.
    await sleep(300);
    w.close();
    const ids = w.events.map((e) => Number(e.id));
    assert.ok(
      w.events.every((e) => e.event === 'put'),
      `round ${round}: ${JSON.stringify(w.events.filter((e) => e.event !== 'put'))}`,
    );
    const below = ids.filter((id) => id <= since);
    assert.deepEqual(below, [], `round ${round}: events at or below since=${since}`);
    for (let i = 1; i < ids.length; i++) {
      assert.ok(ids[i] > ids[i - 1], `round ${round}: event ${ids[i]} after ${ids[i - 1]} (since=${since})`);
    }
    const got = new Set(ids);
    const missing = want.filter((v) => !got.has(v));
    assert.deepEqual(missing, [], `round ${round}: changes after since=${since} never delivered (${ids.length} delivered, ${want.length} wanted)`);
    assert.equal(ids.length, want.length, `round ${round}: delivered more than the changes after since=${since}`);
  }
});
