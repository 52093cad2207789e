/**
 * Three Pithos processes over one PostgreSQL database (API.md section 19):
 * the contract's concurrency promises must hold across nodes, and a node
 * killed with SIGKILL loses no acknowledged write. Runs on the PostgreSQL
 * pass of `npm test` (PITHOS_TEST_STORE); skipped on the log store, which is
 * one process by design.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, keepAliveAgent, type Res, expectSuccess, pool, sleep, uniq, untilCount } from '../helpers/server.js';
import { type Watch, watch } from '../helpers/sse.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
const N = 3;
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  const url = await freshSchema(PG_URL as string, `multi${process.pid}`);
  // All at once on an empty schema: the migrations must cope with each other.
  nodes = await Promise.all(Array.from({ length: N }, () => PithosServer.start({ store: url, testClock: false })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
});

// Sockets left idle by the previous test may be closed by the server just as
// they are reused (keep-alive race, ECONNRESET): every test starts with new ones.
beforeEach(() => {
  for (const n of nodes) {
    n.agent.destroy();
    n.agent = keepAliveAgent();
  }
});

const node = (i: number): PithosServer => nodes[i % nodes.length];

test('1,000 concurrent lock acquirers over 3 nodes: exactly one winner, 3 rounds, fences increase', { skip }, async () => {
  const name = uniq('lk');
  let lastFence = 0;
  for (let round = 0; round < 3; round++) {
    const res = await Promise.all(Array.from({ length: 1000 }, (_, i) => node(i).req('PUT', `/locks/${name}`, { ttl: 30, holder: `c${i}` })));
    const won = res.filter((r) => r.status === 201);
    const lost = res.filter((r) => r.status === 423);
    assert.equal(won.length, 1, `round ${round}: ${won.length} winners`);
    assert.equal(lost.length, 999, `round ${round}: statuses ${[...new Set(res.map((r) => r.status))].join(',')}`);
    const { token, fence } = won[0].body.data as { token: string; fence: number };
    assert.ok(fence > lastFence, `round ${round}: fence ${fence} after ${lastFence}`);
    lastFence = fence;
    // Every node sees the same holder.
    for (let i = 0; i < N; i++) assert.equal((await node(i).req('GET', `/locks/${name}`)).body.data.fence, fence);
    expectSuccess(await node(round + 1).req('DELETE', `/locks/${name}`, { token }), 200, 'lock deleted successfully');
  }
});

test('3,000 concurrent +1 over 3 nodes end exactly 3,000 higher, every answer distinct', { skip }, async () => {
  const name = uniq('ctr');
  expectSuccess(await node(0).req('PUT', `/variants/${name}`, { variant: 7 }), 201, 'variant created successfully', { variant: 7 });
  const res = await pool(
    Array.from({ length: 3000 }, (_, i) => i),
    300,
    (i) => node(i).req('POST', `/variants/${name}`, { delta: 1 }),
  );
  const bad = res.filter((r) => r.status !== 200);
  assert.equal(
    bad.length,
    0,
    `failed increments: ${bad
      .slice(0, 3)
      .map((r) => r.raw)
      .join(' ')}`,
  );
  const seen = new Set(res.map((r) => r.body.data.variant as number));
  assert.equal(seen.size, 3000, 'two increments returned the same value');
  for (let i = 0; i < N; i++) {
    expectSuccess(await node(i).req('GET', `/variants/${name}`), 200, 'variant queried successfully', { variant: 3007 });
  }
});

test('concurrent transfer transactions over 3 nodes conserve the total (serializable and not)', { skip }, async () => {
  const accts = Array.from({ length: 5 }, () => uniq('acct'));
  for (const a of accts) await node(0).req('PUT', `/variants/${a}`, { variant: 1000 });
  const statuses = new Map<number, number>();
  const res = await pool(
    Array.from({ length: 600 }, (_, i) => i),
    30,
    async (i) => {
      const from = accts[i % 5];
      const to = accts[(i * 7 + 1 + Math.floor(i / 5)) % 5 === i % 5 ? (i + 1) % 5 : (i * 7 + 1 + Math.floor(i / 5)) % 5];
      const amount = 1 + (i % 97);
      const serializable = i % 2 === 0;
      const r = await node(i).req('POST', '/txns', {
        serializable,
        checks: serializable ? [{ kind: 'variant', name: from, value: { $gte: amount } }] : [],
        mutations: [
          { kind: 'variant', name: from, operation: 'ADD', delta: -amount },
          { kind: 'variant', name: to, operation: 'ADD', delta: amount },
        ],
      });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      return r;
    },
  );
  // 200 done; 409 a check failed; 503 gave up after bounded retries. Nothing else.
  for (const r of res) assert.ok([200, 409, 503].includes(r.status), `unexpected ${r.status} ${r.raw}`);
  assert.ok((statuses.get(200) ?? 0) >= 200, `too few committed: ${JSON.stringify([...statuses])}`);
  let total = 0;
  for (const a of accts) total += (await node(2).req('GET', `/variants/${a}`)).body.data.variant as number;
  assert.equal(total, 5000, `statuses ${JSON.stringify([...statuses])}`);
});

test('a node killed with SIGKILL mid-load loses no acknowledged write; the others keep serving', { skip }, async () => {
  const t = uniq('tbl');
  expectSuccess(await node(0).req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const ackedRecords: string[] = [];
  const ackedRows = new Map<number, number>();
  let stop = false;
  let failedOnVictim = 0;
  const writer = async (w: number): Promise<void> => {
    for (let k = 0; !stop; k++) {
      const target = node(w);
      const id = `w${w}-${k}`;
      let r: Res;
      try {
        r = await target.req('PUT', `/records/${id}`, { record: { w, k } });
        if (r.status === 201) ackedRecords.push(id);
        r = await target.req('POST', `/tables/${t}/rows`, { rows: { w, k } });
        if (r.status === 201) ackedRows.set(r.body.data.t_id as number, w * 1e6 + k);
      } catch {
        // The killed node: the connection broke; nothing was acknowledged.
        failedOnVictim++;
        await sleep(20);
      }
    }
  };
  const writers = Array.from({ length: 12 }, (_, w) => writer(w));
  // Progress, not time, decides (the machine may be busy).
  await untilCount('writes acknowledged before the kill', () => ackedRecords.length, 60);
  const victim = nodes[1];
  await victim.kill('SIGKILL');
  await untilCount('writes acknowledged after the kill', () => ackedRecords.length, ackedRecords.length + 60);
  stop = true;
  await Promise.all(writers);
  assert.ok(failedOnVictim > 0, 'the load reached the killed node');
  assert.ok(ackedRecords.length >= 120, `only ${ackedRecords.length} writes acknowledged`);
  for (const id of ackedRecords) {
    const [w, k] = id.slice(1).split('-').map(Number);
    expectSuccess(await node(2).req('GET', `/records/${id}`), 200, 'record queried successfully', { w, k });
  }
  const all = (await node(0).req('GET', `/tables/${t}`)).body.data as Record<string, { w: number; k: number }>;
  for (const [id, wk] of ackedRows) {
    const row = all[String(id)];
    assert.ok(row !== undefined, `acknowledged row ${id} is missing`);
    assert.equal(row.w * 1e6 + row.k, wk);
  }
  // The killed node comes back on the same database and serves the same data.
  await victim.spawn();
  const [w0, k0] = ackedRecords[0].slice(1).split('-').map(Number);
  expectSuccess(await victim.req('GET', `/records/${ackedRecords[0]}`), 200, 'record queried successfully', { w: w0, k: k0 });
});

test('indexes and listing over 3 nodes: one create wins, every node answers alike, writes on any node are indexed', { skip }, async () => {
  const t = uniq('ixm');
  expectSuccess(await node(0).req('PUT', `/tables/${t}`), 201, 'table created successfully');
  await Promise.all(Array.from({ length: 60 }, (_, i) => node(i).req('POST', `/tables/${t}/rows`, { rows: { k: i % 6, s: `v${i % 7}` } })));
  // The same index declared on every node at once: exactly one 201.
  const res = await Promise.all(Array.from({ length: 9 }, (_, i) => node(i).req('PUT', `/tables/${t}/indexes/k`)));
  assert.deepEqual(res.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409, 409]);
  for (let i = 0; i < 500; i++) {
    const r = await node(i).req('GET', `/tables/${t}/indexes`);
    if (r.body.data?.[0]?.ready === true) break;
    await sleep(20);
  }
  for (let i = 0; i < N; i++)
    expectSuccess(await node(i).req('GET', `/tables/${t}/indexes`), 200, 'indexes listed successfully', [{ field: 'k', ready: true }]);
  // Rows written through every node after the build are found through the index from every node.
  await Promise.all(Array.from({ length: 30 }, (_, i) => node(i).req('POST', `/tables/${t}/rows`, { rows: { k: 3, n: i } })));
  await node(1).req('PATCH', `/tables/${t}`, { wheres: { s: 'v1' }, sets: { k: 3 } });
  const all = (await node(2).req('GET', `/tables/${t}/rows`, { wheres: { $or: [{}] }, with_ids: true })).body.data as Array<{
    t_id: number;
    row: { k: number };
  }>;
  const want = all.filter((r) => r.row.k === 3);
  for (let i = 0; i < N; i++) {
    const r = await node(i).req('GET', `/tables/${t}/rows`, { wheres: { k: 3 }, with_ids: true });
    expectSuccess(r, 200, 'table queried rows successfully', want);
    const o = await node(i).req('GET', `/tables/${t}/rows`, { wheres: {}, order: [{ field: 'k', dir: 'desc' }], limit: 5, with_ids: true });
    expectSuccess(o, 200, 'table queried rows successfully', [...all].sort((a, b) => b.row.k - a.row.k || a.t_id - b.t_id).slice(0, 5));
  }
  // Listing is the same from every node, and counts the rows written through all of them.
  const lists = await Promise.all(Array.from({ length: N }, (_, i) => node(i).req('GET', `/tables?prefix=${t}`)));
  for (const l of lists) assert.deepEqual(l.body.data, { items: [{ name: t, ttl_ms: null, rows: 90 }], next: null });
  // Dropped on one node: gone for all.
  expectSuccess(await node(2).req('DELETE', `/tables/${t}/indexes/k`), 200, 'index deleted successfully');
  for (let i = 0; i < N; i++) expectSuccess(await node(i).req('GET', `/tables/${t}/indexes`), 200, 'indexes listed successfully', []);
});

test(
  'the change feed over 3 nodes: a watcher on each sees every acknowledged change once, the same sequence, in commit order; resuming on another node continues it',
  { skip },
  async () => {
    const tag = uniq('feed');
    const open = async (i: number, headers: Record<string, string> = {}, extra: Partial<Parameters<typeof watch>[0]> = {}): Promise<Watch> => {
      const w = watch({ port: node(i).port, token: node(i).token, query: `prefix=${tag}&values=true`, headers, ...extra });
      await w.opened;
      return w;
    };
    const watchers = await Promise.all(Array.from({ length: N }, (_, i) => open(i)));
    const counters = [`${tag}-c0`, `${tag}-c1`];
    const table = `${tag}-t`;
    for (const c of counters) expectSuccess(await node(0).req('PUT', `/variants/${c}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
    expectSuccess(await node(1).req('PUT', `/tables/${table}`), 201, 'table created successfully');
    let changes = 3;
    const adds = new Map(counters.map((c) => [c, 0]));
    // Writes through every node at once: increments, record puts, row inserts, two-change transactions.
    await pool(
      Array.from({ length: 600 }, (_, i) => i),
      30,
      async (i) => {
        const c = counters[i % 2];
        const k = i % 4;
        const r =
          k === 0
            ? await node(i).req('POST', `/variants/${c}`, { delta: 1 })
            : k === 1
              ? await node(i).req('PUT', `/records/${tag}-r${i % 5}`, { record: { i } })
              : k === 2
                ? await node(i).req('POST', `/tables/${table}/rows`, { rows: { i } })
                : await node(i).req('POST', '/txns', {
                    mutations: [
                      { kind: 'variant', name: c, operation: 'ADD', delta: 1 },
                      { kind: 'record', name: `${tag}-r${i % 5}`, operation: 'PUT', values: { txn: i } },
                    ],
                  });
        assert.ok(r.status === 200 || r.status === 201, r.raw);
        changes += k === 3 ? 2 : 1;
        if (k === 0 || k === 3) adds.set(c, (adds.get(c) as number) + 1);
      },
    );
    await Promise.all(watchers.map((w, i) => w.until(() => w.events.length >= changes, 30_000, `node ${i}: ${changes} events`)));
    await sleep(300);
    for (const w of watchers) w.close();
    const seq = watchers[0].events;
    assert.equal(seq.length, changes, 'one event per acknowledged change');
    for (let i = 1; i < N; i++) assert.deepEqual(watchers[i].events, seq, `node ${i} published the same sequence as node 0`);
    for (let k = 1; k < seq.length; k++) assert.ok(Number(seq[k].id) > Number(seq[k - 1].id), `ids increase at ${k}`);
    // Commit order: each counter's values arrive 0, 1, 2, … and each record's last event is what every node reads.
    for (const c of counters) {
      const vals = seq.filter((e) => JSON.parse(e.data).name === c).map((e) => JSON.parse(e.data).value as number);
      assert.deepEqual(
        vals,
        Array.from({ length: (adds.get(c) as number) + 1 }, (_, i) => i),
        `values of ${c}`,
      );
    }
    for (let r = 0; r < 5; r++) {
      const mine = seq.filter((e) => JSON.parse(e.data).name === `${tag}-r${r}`);
      const last = JSON.parse(mine[mine.length - 1].data);
      for (let i = 0; i < N; i++) {
        const g = await node(i).req('GET', `/records/${tag}-r${r}`);
        assert.deepEqual(g.body.data, last.value);
        assert.equal(g.headers.etag, `"${last.version}"`);
      }
    }
    // Each row once. t_ids come from a sequence, not under a lock held to commit, so rows
    // inserted at once through different nodes may commit out of t_id order (docs/scaling.md, "Tables").
    const rows = seq.filter((e) => JSON.parse(e.data).t_id !== undefined).map((e) => JSON.parse(e.data).t_id as number);
    // Every insert here succeeded, so none left a gap: 1..n, each once.
    assert.deepEqual(
      [...rows].sort((a, b) => a - b),
      rows.map((_, i) => i + 1),
    );
    // A client that read part of the sequence on node 0 resumes on node 1 and on node 2.
    const cut = seq[Math.floor(seq.length / 3)].id as string;
    const rest1 = await open(1, { 'Last-Event-ID': cut });
    const rest2 = await open(2, { 'Last-Event-ID': cut });
    const want = seq.slice(Math.floor(seq.length / 3) + 1);
    await rest1.until(() => rest1.events.length >= want.length, 10_000, 'replay on node 1');
    await rest2.until(() => rest2.events.length >= want.length, 10_000, 'replay on node 2');
    rest1.close();
    rest2.close();
    assert.deepEqual(rest1.events, want);
    assert.deepEqual(rest2.events, want);
  },
);
