/**
 * Indexes across SIGKILL (docs/api.md "Secondary indexes"): inserts and patches run concurrently
 * on an indexed table, the server is killed mid-stream, restarted, and every
 * index (once rebuilt) must answer exactly as a full scan does.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectSuccess, sleep, uniq, untilCount, type Res } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

type IdRow = { t_id: number; row: { k: number; n?: { v: string }; i: number } };

async function data(r: Res): Promise<IdRow[]> {
  expectSuccess(r, 200, 'table queried rows successfully', r.body?.data);
  return r.body.data as IdRow[];
}

async function waitReady(t: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const r = await srv.req('GET', `/tables/${t}/indexes`);
    if (r.status === 200 && r.body.data.length === 2 && r.body.data.every((x: { ready: boolean }) => x.ready)) return;
    await sleep(10);
  }
  throw new Error('indexes never became ready');
}

/** Every index-served query against the same query forced to scan (a top-level `$or` never uses an index). */
async function agree(t: string): Promise<number> {
  const q = (body: unknown) => srv.req('GET', `/tables/${t}/rows`, body);
  const all = await data(await q({ wheres: { $or: [{}] }, with_ids: true }));
  for (let k = 0; k < 8; k++) {
    const viaIndex = await data(await q({ wheres: { k }, with_ids: true }));
    assert.deepEqual(
      viaIndex,
      all.filter((r) => r.row.k === k),
      `k = ${k}`,
    );
  }
  for (const v of ['a', 'c', 'e']) {
    const viaIndex = await data(await q({ wheres: { 'n.v': { $gte: v } }, with_ids: true }));
    assert.deepEqual(
      viaIndex,
      all.filter((r) => r.row.n !== undefined && r.row.n.v >= v),
      `n.v ≥ ${v}`,
    );
  }
  const ordered = await data(await q({ wheres: {}, order: [{ field: 'k', dir: 'asc' }], limit: 40, with_ids: true }));
  const want = [...all].sort((a, b) => a.row.k - b.row.k || a.t_id - b.t_id).slice(0, 40);
  assert.deepEqual(ordered, want, 'order by k');
  return all.length;
}

test('after SIGKILL during inserts and patches, every index agrees with a full scan', async () => {
  const t = uniq('crash');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', `/tables/${t}/indexes/k`), 201, 'index created successfully');
  expectSuccess(await srv.req('PUT', `/tables/${t}/indexes/n.v`), 201, 'index created successfully');
  let total = 0;
  const write = (stopped: () => boolean, counter: { n: number }) =>
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stopped(); i++) {
        const r =
          i % 3 === 2
            ? await srv
                .req('PATCH', `/tables/${t}`, { wheres: { k: (i + w) % 8 }, sets: { k: (i * 7 + w) % 8, n: { v: 'abcdef'[i % 6] } } })
                .catch(() => undefined)
            : await srv
                .req('POST', `/tables/${t}/rows`, { rows: { k: (i + w) % 8, i, ...(i % 4 === 0 ? {} : { n: { v: 'abcdef'[(i + w) % 6] } }) } })
                .catch(() => undefined);
        if (r === undefined || r.status >= 500 || r.status === 0) return;
        counter.n++;
      }
    });
  for (let round = 0; round < 3; round++) {
    // Maintained indexes: a quiet moment between bursts, no restart.
    let quiet = false;
    const c0 = { n: 0 };
    const burst = write(() => quiet, c0);
    await untilCount(`round ${round}: writes acknowledged in the burst`, () => c0.n, 40, { ended: Promise.all(burst) });
    quiet = true;
    await Promise.all(burst);
    await agree(t);
    // Rebuilt indexes: killed mid-burst.
    let stop = false;
    const c1 = { n: 0 };
    const writers = write(() => stop, c1);
    // Killed once writes are being acknowledged, later in each round, however long a busy machine takes.
    await untilCount(`round ${round}: writes acknowledged before the kill`, () => c1.n, 20 + round * 40, { ended: Promise.all(writers) });
    await srv.restart('SIGKILL');
    stop = true;
    await Promise.all(writers);
    assert.ok(c1.n > 0, 'some writes were acknowledged before the kill');
    await waitReady(t);
    const n = await agree(t);
    assert.ok(n >= total, 'acknowledged rows survive');
    total = n;
  }
  assert.ok(total > 0);
});
