/**
 * t_ids on the shared store: taken from a sequence per table incarnation,
 * so inserts into one table wait for no lock another insert holds, and
 * never reused, across nodes and across a crash of the database. Runs a
 * cluster of its own (it crashes it).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { PgStore } from '../../src/store/postgres/index.js';
import { PgCluster, freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, sleep, uniq, untilCount } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let cluster: PgCluster | undefined;
let url = '';
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  cluster = await PgCluster.create();
  url = await freshSchema(cluster.url, 'tids');
  nodes = await Promise.all([0, 1].map(() => PithosServer.start({ store: url, testClock: false, args: ['--pg-statement-timeout-ms', '2000'] })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  cluster?.destroy();
});

test(
  'two nodes insert into one table across a crash of the database: every acknowledged row under its own t_id, none taken twice, the row count exact',
  { skip },
  async () => {
    const t = uniq('q');
    assert.equal((await nodes[0].req('PUT', `/tables/${t}`, {})).status, 201);
    const acked = new Map<number, string>();
    const removed = new Set<number>();
    // A DELETE answered 503 may or may not have happened (the database went away around its commit).
    const maybeRemoved = new Set<number>();
    const statuses = new Map<number, number>();
    let stop = false;
    const worker = async (w: number): Promise<void> => {
      const n = nodes[w % 2];
      for (let k = 0; !stop; k++) {
        const tag = `w${w}-${k}`;
        // Half the inserts as a /txns (its one-round-trip path), half as a plain insert.
        const r =
          k % 2 === 0
            ? await n.req('POST', `/tables/${t}/rows`, { rows: { tag } })
            : await n.req('POST', '/txns', { mutations: [{ kind: 'table', name: t, operation: 'INSERT', values: { tag } }] });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 201 || r.status === 200) {
          const id = (r.status === 201 ? r.body.data.t_id : r.body.data.results[0].t_id) as number;
          assert.ok(!acked.has(id), `t_id ${id} acknowledged twice (${acked.get(id)}, ${tag})`);
          acked.set(id, tag);
          // Every fifth acknowledged row is deleted again by its t_id, so the count moves both ways.
          if (k % 5 === 4) {
            const d = await n.req('DELETE', `/tables/${t}/rows/${id}`);
            if (d.status === 200) removed.add(id);
            else {
              assert.equal(d.status, 503, d.raw);
              maybeRemoved.add(id);
            }
          }
        } else {
          assert.equal(r.status, 503, r.raw);
          await sleep(50);
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    try {
      await untilCount('inserts before the crash', () => acked.size, 80, { timeoutMs: 60_000 });
      const before = acked.size;
      (cluster as PgCluster).crash();
      await sleep(1000);
      (cluster as PgCluster).start();
      await untilCount('inserts after the crash', () => acked.size, before + 80, { timeoutMs: 60_000 });
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    assert.ok((statuses.get(503) ?? 0) > 0, `no request failed while the database was down: ${JSON.stringify([...statuses])}`);
    const all = (await nodes[1].req('GET', `/tables/${t}`)).body.data as Record<string, { tag: string }>;
    for (const [id, tag] of acked) {
      if (removed.has(id)) assert.equal(all[id], undefined, `row ${id} deleted but still there`);
      else if (maybeRemoved.has(id) && all[id] === undefined) continue;
      else assert.equal(all[id]?.tag, tag, `acknowledged row ${id} (${tag}) lost or replaced: ${JSON.stringify(all[id])}`);
    }
    // A tag appears under one t_id at most (an insert whose answer was lost may be there once, never twice).
    const tags = Object.values(all).map((r) => r.tag);
    assert.equal(new Set(tags).size, tags.length, 'a row stored twice');
    const listed = (await nodes[0].req('GET', `/tables?prefix=${t}`)).body.data.items as { name: string; rows: number }[];
    assert.deepEqual(
      listed.map((x) => [x.name, x.rows]),
      [[t, Object.keys(all).length]],
    );
  },
);

test('an insert waits for no lock on its table: it passes a transaction holding the table exclusively, where a PATCH of its rows waits', { skip }, async () => {
  const t = uniq('s');
  assert.equal((await nodes[0].req('PUT', `/tables/${t}`, {})).status, 201);
  assert.equal((await nodes[0].req('POST', `/tables/${t}/rows`, { rows: { a: 1 } })).status, 201);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // As a PATCH, a row DELETE or a drop holds it until its commit.
    await c.query('BEGIN');
    await c.query('SELECT inc FROM pithos_tables WHERE name = $1 FOR UPDATE', [t]);
    const ins = await nodes[1].req('POST', `/tables/${t}/rows`, { rows: { a: 2 } });
    assert.equal(ins.status, 201, ins.raw);
    const txn = await nodes[0].req('POST', '/txns', {
      mutations: [
        { kind: 'table', name: t, operation: 'INSERT', values: { a: 3 } },
        { kind: 'variant', name: uniq('v'), operation: 'SET', variant: 1 },
      ],
    });
    assert.equal(txn.status, 200, txn.raw);
    const patch = await nodes[0].req('PATCH', `/tables/${t}`, { wheres: { a: 1 }, sets: { b: true } });
    assert.equal(patch.status, 503, patch.raw);
  } finally {
    await c.query('ROLLBACK');
    await c.end();
  }
  assert.equal((await nodes[0].req('PATCH', `/tables/${t}`, { wheres: { a: 1 }, sets: { b: true } })).status, 200);
  assert.deepEqual((await nodes[1].req('GET', `/tables/${t}`)).body.data, { 1: { a: 1, b: true }, 2: { a: 2 }, 3: { a: 3 } });
});

test('a table without its t_id sequence (made by an older node) gets one above every t_id it gave, at its first insert', { skip }, async () => {
  const t = uniq('o');
  assert.equal((await nodes[0].req('PUT', `/tables/${t}`, {})).status, 201);
  for (let i = 0; i < 3; i++) assert.equal((await nodes[0].req('POST', `/tables/${t}/rows`, { rows: { i } })).status, 201);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // As an older node leaves it: no sequence, its counter moved past its highest row.
    const inc = Number((await c.query('SELECT inc FROM pithos_tables WHERE name = $1', [t])).rows[0].inc);
    await c.query(`DROP SEQUENCE pithos_tid_${inc}`);
    await c.query('UPDATE pithos_tables SET next_id = 7 WHERE name = $1', [t]);
  } finally {
    await c.end();
  }
  const [a, b] = await Promise.all([
    nodes[1].req('POST', `/tables/${t}/rows`, { rows: { i: 'a' } }),
    nodes[0].req('POST', '/txns', { mutations: [{ kind: 'table', name: t, operation: 'INSERT', values: { i: 'b' } }] }),
  ]);
  assert.equal(a.status, 201, a.raw);
  assert.equal(b.status, 200, b.raw);
  assert.deepEqual([a.body.data.t_id, b.body.data.results[0].t_id].sort(), [7, 8]);
});

/** A new table with `n` rows, inserted through both nodes in turn. */
async function tableWithRows(prefix: string, n: number): Promise<string> {
  const t = uniq(prefix);
  assert.equal((await nodes[0].req('PUT', `/tables/${t}`, {})).status, 201);
  for (let i = 0; i < n; i++) assert.equal((await nodes[i % 2].req('POST', `/tables/${t}/rows`, { rows: { i } })).status, 201);
  return t;
}

test('a dropped table takes its t_id sequence and counts with it; a new table of that name starts at t_id 1', { skip }, async () => {
  const t = await tableWithRows('d', 3);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const seqs = async (): Promise<number> =>
      Number((await c.query("SELECT count(*) AS n FROM pg_class WHERE relkind = 'S' AND relname LIKE 'pithos_tid_%'")).rows[0].n);
    const before = await seqs();
    assert.equal((await nodes[1].req('DELETE', `/tables/${t}`)).status, 200);
    assert.equal(await seqs(), before - 1);
    assert.equal(Number((await c.query('SELECT count(*) AS n FROM pithos_row_counts WHERE tname = $1', [t])).rows[0].n), 0);
    assert.equal((await nodes[0].req('PUT', `/tables/${t}`, {})).status, 201);
    assert.equal(await seqs(), before);
    const r = await nodes[1].req('POST', `/tables/${t}/rows`, { rows: { again: true } });
    assert.deepEqual(r.body.data, { t_id: 1 });
  } finally {
    await c.end();
  }
});

test('the sweeper folds a table with many row-count slots into one, exactly, while inserts go on', { skip }, async () => {
  const t = await tableWithRows('f', 4);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const store = await PgStore.open({ url, poolSize: 2, statementTimeoutMs: 30_000, offsetMs: () => 0, log: () => undefined });
  try {
    // As if 40 backends long gone had inserted and deleted rows of it: +1 and -1 each, 0 in all.
    await c.query(
      `INSERT INTO pithos_row_counts (tname, inc, slot, n) SELECT $1, inc, 1000000 + g, CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END
       FROM pithos_tables, generate_series(1, 40) AS g WHERE name = $1`,
      [t],
    );
    const slots = async (): Promise<number> => Number((await c.query('SELECT count(*) AS n FROM pithos_row_counts WHERE tname = $1', [t])).rows[0].n);
    assert.ok((await slots()) > 40);
    let stop = false;
    let inserted = 4;
    const writer = (async () => {
      while (!stop) if ((await nodes[1].req('POST', `/tables/${t}/rows`, { rows: { more: true } })).status === 201) inserted++;
    })();
    await store.sweep();
    stop = true;
    await writer;
    assert.ok((await slots()) <= 3, `${await slots()} slots after the fold`);
    const listed = (await nodes[0].req('GET', `/tables?prefix=${t}`)).body.data.items as { rows: number }[];
    assert.equal(listed[0].rows, inserted);
  } finally {
    await store.close();
    await c.end();
  }
});

test('inserts racing drops and re-creations of their table: each answered 201 or 404 (never 500), and no row outlives its incarnation', { skip }, async () => {
  const t = uniq('r');
  assert.equal((await nodes[0].req('PUT', `/tables/${t}`, {})).status, 201);
  const statuses = new Map<number, number>();
  let stop = false;
  const inserter = async (w: number): Promise<void> => {
    for (let k = 0; !stop; k++) {
      const r =
        k % 2 === 0
          ? await nodes[w % 2].req('POST', `/tables/${t}/rows`, { rows: { w, k } })
          : await nodes[w % 2].req('POST', '/txns', { mutations: [{ kind: 'table', name: t, operation: 'INSERT', values: { w, k } }] });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  };
  const inserters = Array.from({ length: 6 }, (_, w) => inserter(w));
  try {
    for (let round = 0; round < 6; round++) {
      await sleep(150);
      assert.equal((await nodes[round % 2].req('DELETE', `/tables/${t}`)).status, 200);
      await sleep(50);
      assert.equal((await nodes[(round + 1) % 2].req('PUT', `/tables/${t}`, {})).status, 201);
    }
  } finally {
    stop = true;
    await Promise.all(inserters);
  }
  const seen = JSON.stringify([...statuses]);
  for (const code of statuses.keys()) assert.ok([200, 201, 404].includes(code), `answers: ${seen}`);
  assert.ok((statuses.get(201) ?? 0) > 0 && (statuses.get(404) ?? 0) > 0, `answers: ${seen}`);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const orphans = await c.query(
      'SELECT count(*) AS n FROM pithos_rows AS r WHERE r.tname = $1 AND NOT EXISTS (SELECT 1 FROM pithos_tables AS t WHERE t.name = r.tname AND t.inc = r.inc)',
      [t],
    );
    assert.equal(Number(orphans.rows[0].n), 0, 'rows of a dropped incarnation are left');
    const counts = await c.query(
      'SELECT count(*) AS n FROM pithos_row_counts AS c WHERE c.tname = $1 AND NOT EXISTS (SELECT 1 FROM pithos_tables AS t WHERE t.name = c.tname AND t.inc = c.inc)',
      [t],
    );
    assert.equal(Number(counts.rows[0].n), 0, 'counts of a dropped incarnation are left');
  } finally {
    await c.end();
  }
  const rows = Object.keys((await nodes[0].req('GET', `/tables/${t}`)).body.data as object).length;
  const listed = (await nodes[1].req('GET', `/tables?prefix=${t}`)).body.data.items as { rows: number }[];
  assert.equal(listed[0].rows, rows);
});
