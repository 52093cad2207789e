/**
 * A transaction is one batch in the log: SIGKILL during a stream of
 * multi-table transactions leaves each acknowledged one wholly present and
 * none half-present (docs/api.md "Transactions", docs/engine.md).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, expectSuccess, killRound, rawRequest, uniq, untilCount } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

test('SIGKILL during a stream of multi-table transactions: all or nothing, nothing acknowledged lost', async () => {
  const outcomes: string[] = [];
  for (let round = 0; round < 4; round++) {
    const a = uniq('ta');
    const b = uniq('tb');
    const c = uniq('count');
    const rec = uniq('rec');
    expectSuccess(await srv.req('PUT', `/tables/${a}`), 201, 'table created successfully');
    expectSuccess(await srv.req('PUT', `/tables/${b}`), 201, 'table created successfully');
    expectSuccess(await srv.req('PUT', `/variants/${c}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const acked = new Set<number>();
    const sent = new Set<number>();
    let next = 0;
    let stop = false;
    const pad = 'x'.repeat(2000);
    const worker = async (): Promise<void> => {
      while (!stop) {
        const i = next++;
        sent.add(i);
        const body = {
          mutations: [
            { name: a, operation: 'INSERT', values: { i, pad } },
            { name: b, operation: 'INSERT', values: { i, pad } },
            { kind: 'variant', name: c, operation: 'ADD', delta: 1 },
            { kind: 'record', name: `${rec}-${i}`, operation: 'PUT', values: { i } },
          ],
        };
        try {
          const r = await rawRequest({
            port: srv.port,
            method: 'POST',
            path: '/txns',
            agent,
            headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json' },
            body: Buffer.from(JSON.stringify(body)),
          });
          if (r.status === 200) acked.add(i);
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    // Killed once a number of transactions has been acknowledged (a different one each round,
    // so the kill lands at different points of the stream), however long a busy machine takes.
    const want = 5 + Math.floor(Math.random() * 60);
    await untilCount(`round ${round}: transactions acknowledged before the kill`, () => acked.size, want, { ended: Promise.all(workers) });
    await killRound(srv, Promise.all(workers), () => (stop = true), agent);

    const ids = async (t: string): Promise<number[]> => {
      const r = await srv.req('GET', `/tables/${t}`);
      assert.equal(r.status, 200, r.raw.slice(0, 200));
      return Object.values(r.body.data as Record<string, { i: number }>)
        .map((x) => x.i)
        .sort((x, y) => x - y);
    };
    const inA = await ids(a);
    const inB = await ids(b);
    assert.deepEqual(inB, inA, `round ${round}: the two tables disagree — a half-present transaction`);
    const counter = (await srv.req('GET', `/variants/${c}`)).body.data.variant;
    assert.equal(counter, inA.length, `round ${round}: the counter disagrees with the rows`);
    const present = new Set(inA);
    for (const i of sent) {
      const r = await srv.req('GET', `/records/${rec}-${i}`);
      assert.equal(r.status === 200, present.has(i), `round ${round}: record ${i} present=${r.status === 200} but rows present=${present.has(i)}`);
    }
    for (const i of acked) assert.ok(present.has(i), `round ${round}: acknowledged transaction ${i} lost`);
    assert.ok(acked.size > 0, `round ${round}: no transaction was acknowledged before the kill`);
    outcomes.push(`${acked.size} acked / ${present.size} present / ${sent.size} sent`);
  }
  process.stdout.write(`# txn crash rounds: ${outcomes.join('; ')}\n`);
});
