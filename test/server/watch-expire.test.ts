/**
 * Black-box, on both stores: an expired table is one `expire` event of the
 * table (no t_id, the version of its create), with no event for its rows, as
 * docs/api.md ("Change feed") says; the same as a drop, which is one delete.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, onlyLog, pool, uniq } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

/**
 * Creates a table with ttl 5 and three rows on `srv` (after `between`, if
 * given), lets it expire, and checks the table's events on a watcher.
 */
async function expireAndCheck(srv: PithosServer, between?: () => Promise<void>): Promise<void> {
  const table = uniq('exp');
  const w = watch({ port: srv.port, token: srv.token, query: `prefix=${table}` });
  try {
    await w.opened;
    assert.equal((await srv.req('PUT', `/tables/${table}`, { ttl: 5 })).status, 201);
    for (let i = 0; i < 3; i++) assert.equal((await srv.req('POST', `/tables/${table}/rows`, { rows: { i } })).status, 201);
    await w.until(() => w.events.length >= 4, 20_000, 'the create and the three inserts');
    await between?.();
    await srv.advance(6_000);
    await w.until(() => w.events.some((e) => e.event === 'expire'), 20_000, 'an expire');
    // Written after the sweep reported the table: every expire of that sweep comes before it.
    const marker = `${table}-end`;
    assert.equal((await srv.req('PUT', `/records/${marker}`, { record: {} })).status, 201);
    await w.until(() => w.events.some((e) => JSON.parse(e.data).name === marker), 20_000, 'the marker');
    const seen = w.events.filter((e) => JSON.parse(e.data).name === table).map((e) => ({ event: e.event, id: e.id, ...JSON.parse(e.data) }));
    const [create, ...rest] = seen;
    assert.equal(create.event, 'put');
    assert.equal(create.t_id, undefined, 'the first event is the create');
    assert.deepEqual(
      rest.slice(0, 3).map((e) => [e.event, e.t_id]),
      [
        ['put', 1],
        ['put', 2],
        ['put', 3],
      ],
    );
    assert.deepEqual(
      rest.slice(3),
      [{ event: 'expire', id: undefined, kind: 'table', name: table, version: create.version }],
      `after the inserts, exactly one expire of the table with the version of its create; got ${JSON.stringify(rest.slice(3))}`,
    );
  } finally {
    w.close();
  }
}

test('an expired table is one expire of the table, carrying the version of its create; its rows send none', async () => {
  await expireAndCheck(srv);
});

test("the same when the table's metadata is no longer cached when it expires", { skip: onlyLog("the value cache is the log store's") }, async () => {
  const small = await PithosServer.start({ args: ['--cache-mb', '1'] });
  try {
    // 4 MiB of other values through a 1 MiB cache push the table's metadata out.
    const big = 'x'.repeat(64 * 1024);
    await expireAndCheck(small, async () => {
      await pool(
        Array.from({ length: 64 }, (_, i) => i),
        4,
        async (i) => {
          const r = await small.req('PUT', `/records/${uniq(`filler${i}`)}`, { record: { big } });
          if (r.status !== 201) throw new Error(`filler write: ${r.status} ${r.raw}`);
        },
      );
    });
  } finally {
    await small.close();
  }
});
