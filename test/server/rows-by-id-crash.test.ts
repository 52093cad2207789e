/**
 * Writes to single rows by t_id under SIGKILL: each is one batch, so after
 * a restart every acknowledged PATCH, PUT and DELETE is there, a write that
 * was in flight is wholly there or wholly absent, no row was touched that no
 * request named, and an index on the written field answers as a scan does.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, expectSuccess, rawRequest, sleep, uniq, untilCount } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

const WORKERS = 12;

test('SIGKILL during streams of PATCH, PUT and DELETE by t_id: acknowledged writes survive, none is half there', async (ctx) => {
  for (let round = 0; round < 3; round++) {
    const t = uniq('crash');
    expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
    // Rows 1..WORKERS are written by one worker each; rows above are bystanders no request names.
    for (let i = 1; i <= WORKERS * 2; i++) await srv.req('POST', `/tables/${t}/rows`, { rows: { w: i, n: 0 } });
    expectSuccess(await srv.req('PUT', `/tables/${t}/indexes/n`), 201, 'index created successfully');
    const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS });
    const acked = new Array<number>(WORKERS + 1).fill(0);
    const sent = new Array<number>(WORKERS + 1).fill(0);
    const deleted = new Array<'no' | 'sent' | 'acked'>(WORKERS + 1).fill('no');
    let stop = false;
    let acks = 0;
    const pad = 'p'.repeat(1000);
    const worker = async (id: number): Promise<void> => {
      for (let k = 1; !stop; k++) {
        // Every fifth row ends with a DELETE after a few writes; the others alternate PATCH (with unset) and PUT.
        const del = id % 5 === 0 && k > 3;
        const method = del ? 'DELETE' : k % 2 === 0 ? 'PUT' : 'PATCH';
        const body = del ? {} : method === 'PUT' ? { rows: { w: id, n: k, pad } } : { sets: { n: k }, unset: ['pad'] };
        if (del) deleted[id] = 'sent';
        else sent[id] = k;
        try {
          const r = await rawRequest({
            port: srv.port,
            method,
            path: `/tables/${t}/rows/${id}`,
            agent,
            headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json' },
            body: Buffer.from(JSON.stringify(body)),
          });
          assert.equal(r.status, 200, `${method} row ${id}: ${r.raw.slice(0, 200)}`);
          acks++;
          if (del) {
            deleted[id] = 'acked';
            return;
          }
          acked[id] = k;
        } catch (err) {
          if (err instanceof assert.AssertionError) throw err;
          return; // the server is gone
        }
      }
    };
    const workers = Array.from({ length: WORKERS }, (_, i) => worker(i + 1));
    // Kill once writes are flowing (however long a busy machine takes), at a random moment after.
    await untilCount(`round ${round}: writes acknowledged before the kill`, () => acks, 3 * WORKERS, { ended: Promise.all(workers) });
    await sleep(Math.floor(Math.random() * 200));
    await srv.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    agent.destroy();
    await srv.spawn();

    ctx.diagnostic(`round ${round}: ${acks} writes acknowledged before the kill`);
    assert.ok(acks > 0, `round ${round}: nothing was acknowledged before the kill: the round tested nothing`);
    const all = (await srv.req('GET', `/tables/${t}`)).body.data as Record<string, { w: number; n: number; pad?: string }>;
    for (let id = 1; id <= WORKERS; id++) {
      const row = all[id];
      const label = `round ${round}, row ${id}`;
      if (deleted[id] === 'acked') {
        assert.equal(row, undefined, `${label}: an acknowledged DELETE came back`);
        continue;
      }
      if (row === undefined) {
        assert.equal(deleted[id], 'sent', `${label}: the row is gone, but no DELETE of it was sent`);
        continue;
      }
      assert.ok(row.n >= acked[id] && row.n <= sent[id], `${label}: n = ${row.n}, acknowledged ${acked[id]}, sent ${sent[id]}`);
      // The whole write or none of it: a PUT (even n) carries pad, a PATCH (odd n) removed it.
      if (row.n > 0) assert.equal(row.pad !== undefined, row.n % 2 === 0, `${label}: half a write (${JSON.stringify(row).slice(0, 80)})`);
      assert.equal(row.w, id, label);
    }
    for (let id = WORKERS + 1; id <= WORKERS * 2; id++) assert.deepEqual(all[id], { w: id, n: 0 }, `round ${round}: bystander row ${id}`);
    // The index on n agrees with the rows (it is maintained in the same batches).
    for (const n of new Set(Object.values(all).map((r) => r.n))) {
      const q = await srv.req('POST', `/tables/${t}/query`, { wheres: { n }, with_ids: true });
      const want = Object.keys(all)
        .map(Number)
        .filter((id) => all[id]!.n === n)
        .sort((x, y) => x - y);
      assert.deepEqual(
        (q.body.data as Array<{ t_id: number }>).map((r) => r.t_id),
        want,
        `round ${round}: index answer for n = ${n}`,
      );
    }
  }
});
