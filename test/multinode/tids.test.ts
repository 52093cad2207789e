/**
 * t_ids on the shared store (docs/scaling.md, "Tables"; src/store/postgres/tids.ts):
 * taken from a sequence per table, so inserting transactions do not queue
 * on the table's row, and never reused: across two nodes inserting at once,
 * transactions that fail after inserting (their t_ids are taken next),
 * a node killed with SIGKILL mid-insert, PostgreSQL crashing
 * (`pg_ctl stop -m immediate`) mid-insert, and a table dropped and created
 * again (which starts at 1, as on the log store). Runs on the PostgreSQL
 * pass of `npm test` only.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { Db } from '../../src/store/postgres/sql.js';
import { insertRow } from '../../src/store/postgres/tables.js';
import { freshSchema, PgCluster } from '../helpers/postgres.js';
import { PG_URL, PithosServer, type Res, expectSuccess, sleep, uniq } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let url = '';
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  url = await freshSchema(PG_URL as string, `tids${process.pid}`);
  nodes = await Promise.all([0, 1].map(() => PithosServer.start({ store: url, testClock: false })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
});

beforeEach(() => {
  for (const n of nodes) {
    n.agent.destroy();
    n.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  }
});

interface Acked {
  tid: number;
  client: number;
  k: number;
}

/**
 * `clients` sequential inserters per node into `t`, each until `stop()`;
 * acknowledged t_ids with who inserted them. A request that fails (a node
 * killed, the database gone) acknowledged nothing.
 */
function inserters(t: string, clients: number, stop: () => boolean, acked: Acked[], on = nodes): { done: Promise<void>; failed: () => number } {
  let failed = 0;
  const one = async (client: number): Promise<void> => {
    for (let k = 0; !stop(); k++) {
      let r: Res;
      try {
        r = await on[client % on.length].req('POST', `/tables/${t}/rows`, { rows: { client, k } });
      } catch {
        failed++;
        await sleep(20);
        continue;
      }
      if (r.status === 201) acked.push({ tid: r.body.data.t_id as number, client, k });
      else {
        // 503 while the database or the node is away: nothing acknowledged.
        assert.equal(r.status, 503, r.raw);
        failed++;
        await sleep(20);
      }
    }
  };
  return { done: Promise.all(Array.from({ length: clients }, (_, c) => one(c))).then(() => undefined), failed: () => failed };
}

/** Every acknowledged t_id is distinct, increasing in each client's order, and its row is there with its content. */
async function checkAcked(t: string, acked: Acked[], on = nodes): Promise<void> {
  const ids = acked.map((a) => a.tid);
  assert.equal(new Set(ids).size, ids.length, 'a t_id was given twice');
  const last = new Map<number, number>();
  for (const a of acked) {
    assert.ok((last.get(a.client) ?? 0) < a.tid, `client ${a.client}: t_id ${a.tid} after ${last.get(a.client)}`);
    last.set(a.client, a.tid);
  }
  const rows = (await on[0].req('GET', `/tables/${t}`)).body.data as Record<string, { client: number; k: number }>;
  for (const a of acked) assert.deepEqual(rows[String(a.tid)], { client: a.client, k: a.k }, `acknowledged row ${a.tid}`);
  const listed = (await on[on.length - 1].req('GET', `/tables?prefix=${t}&limit=1`)).body.data.items[0] as { rows: number };
  assert.equal(listed.rows, Object.keys(rows).length, 'the listing counts the rows there are');
}

/** Waits (bounded) until `n` inserts were acknowledged: progress decides, not time. */
async function until(acked: Acked[], n: number): Promise<void> {
  const end = Date.now() + 60_000;
  while (acked.length < n && Date.now() < end) await sleep(20);
  assert.ok(acked.length >= n, `only ${acked.length} inserts acknowledged, waited for ${n}`);
}

test('two nodes, 16 clients inserting into one table at once: every t_id distinct, increasing per client', { skip }, async () => {
  const t = uniq('tid');
  expectSuccess(await nodes[0].req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const acked: Acked[] = [];
  let stop = false;
  const load = inserters(t, 16, () => stop, acked);
  await until(acked, 800);
  stop = true;
  await load.done;
  assert.equal(load.failed(), 0);
  // Both nodes inserted.
  assert.ok(acked.some((a) => a.client % 2 === 0) && acked.some((a) => a.client % 2 === 1));
  await checkAcked(t, acked);
});

test('an insert, alone or in a one-round-trip /txns, does not wait for another transaction inserting into the same table; a drop does', { skip }, async () => {
  const t = uniq('tid');
  expectSuccess(await nodes[0].req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const db = new Db({ url, poolSize: 2, statementTimeoutMs: 20_000, offsetMs: () => 0, log: () => {} });
  try {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let inserted = 0;
    // A transaction that inserted a row and stays open until the gate opens (at the latest after 8 s).
    const held = db.run(async (q) => {
      inserted = await insertRow(q, t, { held: true });
      await gate;
    });
    const opener = setTimeout(open, 8000);
    while (inserted === 0) await sleep(5);
    const started = Date.now();
    // Alone, and in one-round-trip /txns (one with another object too), on both nodes.
    const r = [
      await nodes[0].req('POST', `/tables/${t}/rows`, { rows: { n: 1 } }),
      await nodes[1].req('POST', '/txns', { mutations: [{ name: t, operation: 'INSERT', values: { n: 2 } }] }),
      await nodes[1].req('POST', '/txns', {
        mutations: [
          { name: t, operation: 'INSERT', values: { n: 3 } },
          { kind: 'record', name: `${t}-r`, operation: 'PUT', values: { n: 3 } },
        ],
      }),
    ];
    const waited = Date.now() - started;
    let dropped = 0;
    const drop = nodes[0].req('DELETE', `/tables/${t}`).then((x) => ((dropped = Date.now()), x));
    await sleep(300);
    const dropDone = dropped !== 0;
    open();
    clearTimeout(opener);
    await held;
    assert.deepEqual(
      r.map((x) => x.status),
      [201, 200, 200],
      r.map((x) => x.raw).join('\n'),
    );
    assert.ok(waited < 4000, `the inserts took ${waited} ms while the other transaction was open`);
    const ids = [inserted, r[0].body.data.t_id, r[1].body.data.results[0].t_id, r[2].body.data.results[0].t_id];
    assert.equal(new Set(ids).size, 4, `t_ids ${ids.join(', ')}`);
    assert.equal(dropDone, false, 'the drop did not wait for the open inserting transaction');
    expectSuccess(await drop, 200, 'table deleted successfully');
    // Created again: empty, t_ids from 1, as on the log store.
    expectSuccess(await nodes[1].req('PUT', `/tables/${t}`), 201, 'table created successfully');
    expectSuccess(await nodes[0].req('GET', `/tables/${t}`), 200, 'table queried successfully', {});
    expectSuccess(await nodes[0].req('POST', `/tables/${t}/rows`, { rows: { again: 1 } }), 201, 'table rows insert successfully', { t_id: 1 });
  } finally {
    await db.close();
  }
});

test('a node killed with SIGKILL mid-insert and started again: no t_id given twice, later ones above earlier ones', { skip }, async () => {
  const t = uniq('tid');
  expectSuccess(await nodes[0].req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const acked: Acked[] = [];
  let stop = false;
  const load = inserters(t, 8, () => stop, acked);
  await until(acked, 200);
  await nodes[1].kill('SIGKILL');
  const before = Math.max(...acked.map((a) => a.tid));
  const atKill = acked.length;
  await nodes[1].spawn();
  await until(acked, atKill + 200);
  stop = true;
  await load.done;
  assert.ok(load.failed() > 0, 'the load reached the killed node');
  // Inserts acknowledged after the restart (on either node) that were sent after it: all above what came before.
  const later = acked.slice(atKill + 16);
  assert.ok(later.length > 0);
  for (const a of later) assert.ok(a.tid > before, `t_id ${a.tid} after the restart, not above ${before}`);
  await checkAcked(t, acked);
});

test('PostgreSQL crashing mid-insert (stop -m immediate) and restarting: no t_id given twice', { skip }, async () => {
  // A cluster of its own: the other test files of the pass run against the shared one meanwhile.
  const cluster = await PgCluster.create();
  const store = await freshSchema(cluster.url, 'tidcrash');
  const own = await Promise.all([0, 1].map(() => PithosServer.start({ store, testClock: false })));
  try {
    const t = uniq('tid');
    expectSuccess(await own[0].req('PUT', `/tables/${t}`), 201, 'table created successfully');
    const acked: Acked[] = [];
    let stop = false;
    const load = inserters(t, 8, () => stop, acked, own);
    await until(acked, 200);
    cluster.crash();
    const atCrash = acked.length;
    const before = Math.max(...acked.map((a) => a.tid));
    await sleep(500);
    cluster.start();
    await until(acked, atCrash + 200);
    stop = true;
    await load.done;
    assert.ok(load.failed() > 0, 'the load met the crash');
    const later = acked.slice(atCrash + 16);
    for (const a of later) assert.ok(a.tid > before, `t_id ${a.tid} after the crash, not above ${before}`);
    await checkAcked(t, acked, own);
  } finally {
    await Promise.all(own.map((n) => n.close()));
    cluster.destroy();
  }
});

test('a /txns that fails after inserting takes no t_id, on both paths and with inserts going on from the other node', { skip }, async () => {
  const t = uniq('tid');
  expectSuccess(await nodes[0].req('PUT', `/tables/${t}`), 201, 'table created successfully');
  for (let i = 1; i <= 3; i++)
    expectSuccess(await nodes[0].req('POST', `/tables/${t}/rows`, { rows: { i } }), 201, 'table rows insert successfully', { t_id: i });
  // One round trip (an ADD of a missing variant fails it), then the general path (REPLACE of a missing row).
  const failing = [
    [
      { name: t, operation: 'INSERT', values: { lost: 1 } },
      { kind: 'variant', name: `${t}-missing`, operation: 'ADD', delta: 1 },
    ],
    [
      { name: t, operation: 'INSERT', values: { lost: 2 } },
      { name: t, operation: 'INSERT', values: { lost: 3 } },
      { name: t, operation: 'REPLACE', t_id: 1e9, values: {} },
    ],
  ];
  for (const mutations of failing) assert.equal((await nodes[1].req('POST', '/txns', { mutations })).status, 404);
  expectSuccess(await nodes[0].req('POST', `/tables/${t}/rows`, { rows: { i: 4 } }), 201, 'table rows insert successfully', { t_id: 4 });
  // Failing transactions beside concurrent inserts: no t_id given twice.
  const acked: Acked[] = [];
  let stop = false;
  const load = inserters(t, 4, () => stop, acked);
  for (let k = 0; k < 20; k++) assert.equal((await nodes[k % 2].req('POST', '/txns', { mutations: failing[k % 2] })).status, 404);
  await until(acked, 40);
  stop = true;
  await load.done;
  await checkAcked(t, acked);
  const rows = (await nodes[0].req('GET', `/tables/${t}`)).body.data as Record<string, Record<string, unknown>>;
  assert.ok(!Object.values(rows).some((r) => 'lost' in r), 'a row of a failed transaction is there');
});
