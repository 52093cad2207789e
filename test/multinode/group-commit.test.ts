/**
 * Group commit on the shared store under faults: 64 writers over two nodes
 * increment counters and sorted-set scores, push to lists, put records and
 * add and remove set members while the nodes' database connections are
 * terminated and PostgreSQL is restarted. Every acknowledged increment is
 * counted once, none answered "nothing was changed" is counted at all, every
 * acknowledged push is popped exactly once, no push is applied twice, and a
 * set holds exactly the members whose add was acknowledged and whose remove
 * was not (unknown outcomes either way). The nodes' /metrics prove the writes went in
 * batches. Uses a PostgreSQL cluster of its own, since it restarts it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { PgCluster, freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, expectSuccess, sleep, uniq, type Res } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
const WRITERS = 64;
const COUNTERS = 4;
const LISTS = 2;
let cluster: PgCluster | undefined;
let storeUrl = '';
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  cluster = await PgCluster.create();
  // Commit timestamps tell which changes one transaction made (feedTransactions); a server setting, read at start.
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query('ALTER SYSTEM SET track_commit_timestamp = on');
  await admin.end();
  cluster.stop();
  cluster.start();
  const url = await freshSchema(cluster.url, 'gcommit');
  storeUrl = url;
  nodes = await Promise.all([0, 1].map(() => PithosServer.start({ store: url, testClock: false, args: ['--pg-statement-timeout-ms', '2000'] })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  cluster?.destroy();
});

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Ends every client session but this one's: the nodes' pooled connections, mid-batch. */
async function terminateBackends(c: PgCluster): Promise<number> {
  const client = new pg.Client({ connectionString: c.url });
  await client.connect();
  try {
    const r = await client.query(
      "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
    );
    return Number(r.rows[0].n);
  } finally {
    await client.end();
  }
}

/** What one answer says of its write: applied, not applied, or unknown (a 503 saying it may or may not have been). */
type Outcome = 'applied' | 'not applied' | 'unknown';

class Load {
  readonly counters = Array.from({ length: COUNTERS }, () => uniq('gc'));
  readonly lists = Array.from({ length: LISTS }, () => uniq('gcl'));
  /** Per counter: acknowledged and unknown increments. */
  readonly incs = this.counters.map(() => ({ acked: 0, unknown: 0 }));
  /** Per pushed value: its list and outcome. */
  readonly pushes = new Map<string, { list: string; outcome: Outcome }>();
  readonly zset = uniq('gcz');
  /** Per zset member (one per counter): acknowledged and unknown increments. */
  readonly zincs = this.counters.map(() => ({ acked: 0, unknown: 0 }));
  readonly set = uniq('gcs');
  /** Per member added to the set: the add's outcome, and the remove's (every other member is removed again). */
  readonly members = new Map<string, { add: Outcome; remove?: Outcome }>();
  readonly statuses = new Map<number, number>();
  readonly bad: string[] = [];
  private stop = false;
  private running: Promise<void>[] = [];

  private outcome(r: Res, ok: number): Outcome {
    this.statuses.set(r.status, (this.statuses.get(r.status) ?? 0) + 1);
    if (r.status === ok) return 'applied';
    if (r.status !== 503) {
      this.bad.push(`${r.status}: ${r.raw}`);
      return 'unknown';
    }
    if (r.headers['retry-after'] !== '1') this.bad.push(`503 without Retry-After: ${r.raw}`);
    return /may or may not/.test(String(r.body?.message)) ? 'unknown' : 'not applied';
  }

  get acked(): number {
    return this.incs.reduce((s, x) => s + x.acked, 0);
  }

  start(): void {
    this.running = Array.from({ length: WRITERS }, async (_, w) => {
      const n = nodes[w % nodes.length];
      for (let k = 0; !this.stop; k++) {
        const c = (w + k) % COUNTERS;
        const i = this.outcome(await n.req('POST', `/variants/${this.counters[c]}`, { delta: 1 }), 200);
        if (i === 'applied') this.incs[c].acked++;
        else if (i === 'unknown') this.incs[c].unknown++;
        const value = `w${w}-${k}`;
        const list = this.lists[k % LISTS];
        const p = this.outcome(await n.req('POST', `/lists/${list}/push`, { values: [value] }), 200);
        this.pushes.set(value, { list, outcome: p });
        const rec = this.outcome(await n.req('PUT', `/records/${value}`, { record: { k } }), 201);
        const z = this.outcome(await n.req('POST', `/zsets/${this.zset}/incr`, { member: `m${c}`, delta: 1 }), 200);
        if (z === 'applied') this.zincs[c].acked++;
        else if (z === 'unknown') this.zincs[c].unknown++;
        const m: { add: Outcome; remove?: Outcome } = { add: this.outcome(await n.req('POST', `/sets/${this.set}/add`, { members: [value] }), 200) };
        this.members.set(value, m);
        if (k % 2 === 1) m.remove = this.outcome(await n.req('POST', `/sets/${this.set}/remove`, { members: [value] }), 200);
        if ([i, p, rec, z, m.add, m.remove].some((x) => x !== undefined && x !== 'applied')) await sleep(50);
      }
    });
  }

  async end(): Promise<void> {
    this.stop = true;
    await Promise.all(this.running);
  }
}

/** Batches of more than one write a node sent, from its /metrics. */
async function batchesOfMany(n: PithosServer): Promise<number> {
  const m = (await n.req('GET', '/metrics')).raw;
  const one = Number(/^pithos_store_batch_writes_bucket\{le="1"\} (\d+)$/m.exec(m)?.[1]);
  const all = Number(/^pithos_store_batch_writes_count (\d+)$/m.exec(m)?.[1]);
  assert.ok(Number.isFinite(one) && Number.isFinite(all), `no batch histogram in /metrics:\n${m.slice(0, 2000)}`);
  return all - one;
}

/** The set holds the members whose add was acknowledged and remove was not; none answered "not applied" (or removed for sure). */
async function checkSet(load: Load): Promise<void> {
  const r = await nodes[1].req('GET', `/sets/${load.set}`);
  assert.equal(r.status, 200, r.raw);
  const held = new Set(r.body.data.members as string[]);
  assert.equal(r.body.data.count, held.size, 'the set header counts its members');
  let removed = 0;
  for (const [x, m] of load.members) {
    const there = held.has(x);
    if (m.remove === 'applied') removed++;
    if (m.remove === 'applied' || m.add === 'not applied') assert.ok(!there, `${x}: add ${m.add}, remove ${m.remove}, still there`);
    else if (m.add === 'applied' && (m.remove === undefined || m.remove === 'not applied')) assert.ok(there, `${x}: add ${m.add}, remove ${m.remove}, missing`);
  }
  assert.ok(removed > 0, 'no set remove was acknowledged');
}

test(
  '64 writers over two nodes, backends terminated and PostgreSQL restarted: counters and zset scores exact, every acknowledged push popped once, set members exact',
  { skip },
  async () => {
    const c = cluster as PgCluster;
    const load = new Load();
    for (const ctr of load.counters)
      expectSuccess(await nodes[0].req('PUT', `/variants/${ctr}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
    // The set exists before any remove (a remove from no set is a 404).
    assert.equal((await nodes[0].req('PUT', `/sets/${load.set}`, { set: ['seed'] })).status, 201);
    load.start();
    // Progress, not time, marks each phase: the machine may be busy.
    await until(() => load.acked >= 300, 60_000, 'increments before the faults');
    const killed = await terminateBackends(c);
    assert.ok(killed > 0, 'no backend was terminated');
    const mid = load.acked;
    await until(() => load.acked >= mid + 300, 60_000, 'increments after the backends were terminated');
    c.stop();
    await sleep(1500);
    c.start();
    const restarted = load.acked;
    await until(() => load.acked >= restarted + 300, 60_000, 'increments after PostgreSQL restarted');
    await load.end();

    assert.deepEqual(load.bad, [], 'answers other than success or 503 with Retry-After');
    assert.ok((load.statuses.get(503) ?? 0) > 0, `the faults were not seen: ${JSON.stringify([...load.statuses])}`);
    // Writes went in batches, on both nodes.
    for (const n of nodes) assert.ok((await batchesOfMany(n)) > 0, 'a node sent no batch of several writes');

    for (let i = 0; i < COUNTERS; i++) {
      const v = (await nodes[1].req('GET', `/variants/${load.counters[i]}`)).body.data.variant as number;
      const { acked, unknown } = load.incs[i];
      assert.ok(v >= acked && v <= acked + unknown, `counter ${i}: ${v}, acknowledged ${acked}, unknown ${unknown}`);
    }
    const zs = (await nodes[0].req('GET', `/zsets/${load.zset}`)).body.data.items as { member: string; score: number }[];
    for (let i = 0; i < COUNTERS; i++) {
      const v = zs.find((x) => x.member === `m${i}`)?.score ?? 0;
      const { acked, unknown } = load.zincs[i];
      assert.ok(acked > 0, `no increment of zset member m${i} was acknowledged`);
      assert.ok(v >= acked && v <= acked + unknown, `zset member m${i}: ${v}, acknowledged ${acked}, unknown ${unknown}`);
    }
    await checkSet(load);
    const popped = new Map<string, number>();
    for (const list of load.lists) {
      for (;;) {
        const r = await nodes[0].req('POST', `/lists/${list}/pop`, { count: 500 });
        assert.equal(r.status, 200, r.raw);
        const items = r.body.data.items as string[];
        if (items.length === 0) break;
        for (const x of items) {
          popped.set(x, (popped.get(x) ?? 0) + 1);
          assert.equal(load.pushes.get(x)?.list, list, `${x} popped from ${list}, pushed elsewhere or never`);
        }
      }
    }
    for (const [x, times] of popped) assert.equal(times, 1, `${x} popped ${times} times`);
    for (const [x, p] of load.pushes) {
      if (p.outcome === 'applied') assert.equal(popped.get(x), 1, `acknowledged push ${x} not popped`);
      if (p.outcome === 'not applied') assert.equal(popped.get(x), undefined, `push ${x} answered "nothing was changed" but was applied`);
    }
    for (const n of nodes) assert.equal(n.child?.exitCode ?? null, null);
  },
);

test('writes refused on their own terms inside batches fail alone with the answer they get alone; the others commit', { skip }, async () => {
  const ctr = uniq('gcok');
  const str = uniq('gcstr');
  const none = uniq('gcnone');
  const big = uniq('gcbig');
  const top = uniq('gctop');
  const set = uniq('gcset');
  expectSuccess(await nodes[0].req('PUT', `/variants/${ctr}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  expectSuccess(await nodes[0].req('PUT', `/variants/${str}`, { variant: 'abc' }), 201, 'variant created successfully', { variant: 'abc' });
  // 64-bit integers: a sum past 2^53 stays exact in a batch; one past 2^63 - 1 is refused alone.
  const put = async (name: string, digits: string): Promise<void> => {
    const r = await nodes[0].req('PUT', `/variants/${name}`, `{"variant":${digits}}`, { 'content-type': 'application/json' });
    assert.equal(r.status, 201, r.raw);
  };
  await put(big, '9223372036854775000');
  await put(top, '9223372036854775807');
  // The answers each refused write gets when it is alone (a lone write takes the general path).
  const alone = {
    over: await nodes[0].req('POST', `/variants/${top}`, { delta: 1 }),
    incr: await nodes[0].req('POST', `/variants/${str}`, { delta: 1 }),
    push: await nodes[0].req('POST', `/lists/${none}/push`, { values: [1], create: false }),
    del: await nodes[0].req('DELETE', `/records/${none}`),
  };
  assert.deepEqual([alone.over.status, alone.incr.status, alone.push.status, alone.del.status], [409, 409, 404, 404]);
  const before = (await batchesOfMany(nodes[0])) + (await batchesOfMany(nodes[1]));
  const answers = await Promise.all(
    Array.from({ length: 520 }, async (_, i) => {
      const n = nodes[i % 2];
      if (i >= 480) {
        // Overlapping members, one with U+0000, some repeated within the request.
        const members = [`m${i % 7}`, `x${i}`, `x${i}`, `z\u0000${i % 3}`];
        return { kind: 'sadd' as const, r: await n.req('POST', `/sets/${set}/add`, { members }) };
      }
      if (i >= 400) {
        if (i % 2 === 0) return { kind: 'big' as const, r: await n.req('POST', `/variants/${big}`, { delta: 1 }) };
        return { kind: 'over' as const, r: await n.req('POST', `/variants/${top}`, { delta: 1 }) };
      }
      switch (i % 5) {
        case 0:
          return { kind: 'incr' as const, r: await n.req('POST', `/variants/${str}`, { delta: 1 }) };
        case 1:
          return { kind: 'push' as const, r: await n.req('POST', `/lists/${none}/push`, { values: [i], create: false }) };
        case 2:
          return { kind: 'del' as const, r: await n.req('DELETE', `/records/${none}`) };
        case 3:
          return { kind: 'put' as const, r: await n.req('PUT', `/records/${ctr}-${i}`, { record: { i } }) };
        default:
          return { kind: 'ok' as const, r: await n.req('POST', `/variants/${ctr}`, { delta: 1 }) };
      }
    }),
  );
  const after = (await batchesOfMany(nodes[0])) + (await batchesOfMany(nodes[1]));
  assert.ok(after > before, 'no batch of several writes was sent during the burst');
  let ok = 0;
  let added = 0;
  for (const { kind, r } of answers) {
    if (kind === 'ok') {
      assert.equal(r.status, 200, r.raw);
      ok++;
    } else if (kind === 'sadd') {
      assert.equal(r.status, 200, r.raw);
      added += r.body.data.added as number;
    } else if (kind === 'big') {
      assert.equal(r.status, 200, r.raw);
    } else if (kind === 'put') {
      assert.equal(r.status, 201, r.raw);
    } else {
      assert.equal(r.status, alone[kind].status, r.raw);
      assert.equal(r.body.message, alone[kind].body.message);
    }
  }
  expectSuccess(await nodes[1].req('GET', `/variants/${ctr}`), 200, 'variant queried successfully', { variant: ok });
  // 40 adds: 7 shared members, 40 of their own, 3 with U+0000; each added once.
  assert.equal(added, 50);
  assert.equal((await nodes[0].req('GET', `/sets/${set}`)).body.data.count, 50);
  // 40 increments of 9223372036854775000, digit for digit.
  assert.match((await nodes[1].req('GET', `/variants/${big}`)).raw, /"variant":9223372036854775040\b/);
  assert.match((await nodes[1].req('GET', `/variants/${top}`)).raw, /"variant":9223372036854775807\b/);
  expectSuccess(await nodes[1].req('GET', `/variants/${str}`), 200, 'variant queried successfully', { variant: 'abc' });
  assert.equal((await nodes[1].req('GET', `/lists/${none}`)).status, 404);
  for (let i = 3; i < 400; i += 5) assert.equal((await nodes[(i + 1) % 2].req('GET', `/records/${ctr}-${i}`)).body.data.i, i);
});

async function query(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: storeUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** A header's change-feed data as the database holds it (what /watch publishes). */
const opData = async (table: string, name: string): Promise<string> =>
  (await query(`SELECT op_data FROM ${table} WHERE name = $1`, [name]))[0].op_data as string;

/**
 * The change-feed events of the objects named `like` and the transactions
 * that wrote them, told apart by their commit timestamps (xmin is a batch
 * op's subtransaction): a write alone is one transaction per event, writes
 * sharing a batch share one.
 */
async function feedTransactions(like: string): Promise<{ events: number; transactions: number }> {
  const r = await query('SELECT count(*)::int AS n, count(DISTINCT pg_xact_commit_timestamp(xmin))::int AS x FROM pithos_changes WHERE name LIKE $1', [like]);
  return { events: r[0].n as number, transactions: r[0].x as number };
}

test('set remove, zset add/incr/remove and record PATCH in batches: answers, scores and feed data as alone', { skip }, async () => {
  const [zf, zg, zr, zbig, sr, rec, none] = ['gczf', 'gczg', 'gczr', 'gczbig', 'gcsr', 'gcrec', 'gcnone2'].map(uniq);
  const ok = async (r: Promise<Res>, status = 201): Promise<void> => assert.equal((await r).status, status, (await r).raw);
  const forty = Array.from({ length: 40 }, (_, i) => `r${i}`);
  await ok(nodes[0].req('PUT', `/zsets/${zr}`, { zset: Object.fromEntries([...forty, 'keep'].map((m, i) => [m, i])) }));
  await ok(nodes[0].req('PUT', `/sets/${sr}`, { set: [...forty, 'keep'] }));
  await ok(nodes[0].req('PUT', `/zsets/${zbig}`, { zset: { a: 1.7e308 } }));
  await ok(nodes[0].req('PUT', `/records/${rec}`, { record: { base: true } }));
  for (let j = 1; j < 40; j += 2) await ok(nodes[0].req('PUT', `/records/${rec}-${j}`, { record: { base: true } }));
  // The answers each refused write gets when it is alone (a lone write takes the general path).
  const alone = {
    zover: await nodes[0].req('POST', `/zsets/${zbig}/incr`, { member: 'a', delta: 1e308 }),
    zrem: await nodes[0].req('POST', `/zsets/${none}/remove`, { members: ['a'] }),
    srem: await nodes[0].req('POST', `/sets/${none}/remove`, { members: ['a'] }),
    zadd: await nodes[0].req('POST', `/zsets/${none}/add`, { members: { a: 1 }, create: false }),
    zincr: await nodes[0].req('POST', `/zsets/${none}/incr`, { member: 'a', delta: 1, create: false }),
    patch: await nodes[0].req('PATCH', `/records/${none}`, { sets: { a: 1 } }),
  };
  assert.deepEqual(
    Object.values(alone).map((r) => r.status),
    [409, 404, 404, 404, 404, 404],
  );
  const refused = Object.keys(alone) as (keyof typeof alone)[];
  const before = (await batchesOfMany(nodes[0])) + (await batchesOfMany(nodes[1]));
  const answers = await Promise.all(
    Array.from({ length: 400 }, async (_, i) => {
      const n = nodes[i % 2];
      const j = Math.floor(i / 10);
      switch (i % 10) {
        case 0:
        case 1:
          return { kind: 'zi' as const, r: await n.req('POST', `/zsets/${zf}/incr`, { member: 'f', delta: 0.1 }) };
        case 2:
        case 3:
          return { kind: 'za' as const, i, r: await n.req('POST', `/zsets/${zg}/add`, { members: { top: i, [`u${i}`]: i }, mode: 'gt' }) };
        case 4:
          return { kind: 'zr' as const, r: await n.req('POST', `/zsets/${zr}/remove`, { members: [`r${j}`, `r${(j + 1) % 40}`] }) };
        case 5:
          return { kind: 'sr' as const, r: await n.req('POST', `/sets/${sr}/remove`, { members: [`r${j}`, `r${(j + 1) % 40}`] }) };
        case 6:
          // Half on one record (a batch's PATCHes of one record read the same version: one wins, the others go alone), half on records of their own.
          if (j % 2 === 0) return { kind: 'patch' as const, r: await n.req('PATCH', `/records/${rec}`, { sets: { [`f${j}`]: j } }) };
          return { kind: 'patch' as const, r: await n.req('PATCH', `/records/${rec}-${j}`, { sets: { j } }) };
        default: {
          const kind = refused[(i + j) % refused.length];
          const a = alone[kind];
          const again = {
            zover: () => n.req('POST', `/zsets/${zbig}/incr`, { member: 'a', delta: 1e308 }),
            zrem: () => n.req('POST', `/zsets/${none}/remove`, { members: ['a'] }),
            srem: () => n.req('POST', `/sets/${none}/remove`, { members: ['a'] }),
            zadd: () => n.req('POST', `/zsets/${none}/add`, { members: { a: 1 }, create: false }),
            zincr: () => n.req('POST', `/zsets/${none}/incr`, { member: 'a', delta: 1, create: false }),
            patch: () => n.req('PATCH', `/records/${none}`, { sets: { a: 1 } }),
          }[kind];
          return { kind: 'refused' as const, a, r: await again() };
        }
      }
    }),
  );
  const after = (await batchesOfMany(nodes[0])) + (await batchesOfMany(nodes[1]));
  assert.ok(after > before, 'no batch of several writes was sent during the burst');
  let zadded = 0;
  let zremoved = 0;
  let sremoved = 0;
  for (const x of answers) {
    if (x.kind === 'refused') {
      assert.equal(x.r.status, x.a.status, x.r.raw);
      assert.equal(x.r.body.message, x.a.body.message);
      continue;
    }
    assert.equal(x.r.status, 200, x.r.raw);
    if (x.kind === 'za') zadded += x.r.body.data.added as number;
    if (x.kind === 'zr') zremoved += x.r.body.data.removed as number;
    if (x.kind === 'sr') sremoved += x.r.body.data.removed as number;
  }
  // 80 increments by 0.1: the same float sum in any order.
  let f = 0;
  for (let i = 0; i < 80; i++) f += 0.1;
  const score = (await nodes[1].req('GET', `/zsets/${zf}/members/f`)).body.data.score as number;
  assert.equal(score, f);
  assert.equal(await opData('pithos_zsets', zf), `{"member":"f","delta":0.1,"score":${String(f)}}`);
  // gt: every u<i> added once, top added once and ends at the greatest score.
  assert.equal(zadded, 81);
  const zgot = (await nodes[1].req('GET', `/zsets/${zg}/members/top`)).body.data;
  assert.equal(zgot.score, 393);
  assert.equal((await nodes[1].req('GET', `/zsets/${zg}`)).body.data.count, 81);
  assert.match(await opData('pithos_zsets', zg), /^\{"members":\{"top":\d+,"u\d+":\d+\},"mode":"gt","added":1,"updated":[01],"count":\d+\}$/);
  // Overlapping removes: each member removed once.
  assert.equal(zremoved, 40);
  assert.equal(sremoved, 40);
  assert.deepEqual((await nodes[0].req('GET', `/zsets/${zr}`)).body.data, { items: [{ member: 'keep', score: 40 }], count: 1 });
  assert.deepEqual((await nodes[0].req('GET', `/sets/${sr}`)).body.data, { members: ['keep'], count: 1, next: null });
  assert.match(await opData('pithos_sets', sr), /^\{"members":\["r\d+","r\d+"\],"removed":[12],"count":\d+\}$/);
  // 20 PATCHes of one record, each its own field: none lost; 20 of records of their own.
  const body = (await nodes[1].req('GET', `/records/${rec}`)).body.data as Record<string, unknown>;
  assert.deepEqual(body, { base: true, ...Object.fromEntries(Array.from({ length: 20 }, (_, j) => [`f${2 * j}`, 2 * j])) });
  for (let j = 1; j < 40; j += 2) assert.deepEqual((await nodes[j % 2].req('GET', `/records/${rec}-${j}`)).body.data, { base: true, j });
  // The writes of each kind shared transactions (alone, each event would have one of its own).
  const shared: [string, number][] = [
    [zf, 80],
    [zg, 80],
    [zr, -1],
    [sr, -1],
    [`${rec}-%`, 40],
  ];
  for (const [like, events] of shared) {
    const t = await feedTransactions(like);
    if (events >= 0) assert.equal(t.events, events, `${like}: change-feed events`);
    assert.ok(t.transactions < t.events, `${like}: ${t.events} changes in ${t.transactions} transactions`);
  }
  assert.match((await nodes[0].req('GET', `/zsets/${zbig}/members/a`)).raw, /"score":1\.7e\+308/);
});

test(
  "pithos_group's increments of distinct counters go in one statement, with each refused one answered as alone and one feed event each",
  { skip },
  async () => {
    const p = uniq('gcset-inc');
    const name = (s: string): string => `${p}-${s}`;
    const put = async (s: string, body: string): Promise<void> => {
      const r = await nodes[0].req('PUT', `/variants/${name(s)}`, body, { 'content-type': 'application/json' });
      assert.equal(r.status, 201, r.raw);
    };
    await put('a', '{"variant":1}');
    await put('b', '{"variant":10}');
    await put('top', '{"variant":9223372036854775806}');
    await put('str', '{"variant":"text"}');
    await put('gone', '{"variant":5,"ttl":1}');
    await sleep(1100);
    // pithos_group directly: the increments of distinct counters (the set-based path), with a record write beside them.
    const ops = [
      { k: 'i', n: name('b'), d: 3 },
      { k: 'i', n: name('a'), d: 2 },
      { k: 'i', n: name('top'), d: 5 },
      { k: 'i', n: name('str'), d: 1 },
      { k: 'i', n: name('gone'), d: 1 },
      { k: 'i', n: name('none'), d: 1 },
      { k: 'd', n: name('no-record') },
    ];
    const before = (await query('SELECT coalesce(max(pos), 0)::int8 AS p FROM pithos_changes'))[0].p as string;
    const r = (await query('SELECT pithos_group($1::jsonb, 0::int8) AS r', [JSON.stringify(ops)]))[0].r as Array<{ i: number; r?: unknown; f?: true }>;
    const byOp = new Map(r.map((x) => [x.i, x.f === true ? 'f' : x.r]));
    assert.deepEqual(
      [...byOp].sort((x, y) => x[0] - y[0]),
      [
        [1, '13'],
        [2, '3'],
        [3, 'f'],
        [4, 'f'],
        [5, 'f'],
        [6, 'f'],
        [7, 'f'],
      ],
    );
    const feed = await query('SELECT name, value FROM pithos_changes WHERE pos > $1 ORDER BY name', [before]);
    assert.deepEqual(
      feed.map((e) => [e.name, e.value]),
      [
        [name('a'), 'i3'],
        [name('b'), 'i13'],
      ],
    );
    // Through the nodes: 300 distinct counters, each incremented once at the same time, beside the refused ones.
    const counters = Array.from({ length: 300 }, (_, i) => name(`c${i}`));
    await Promise.all(counters.map((c, i) => nodes[i % 2].req('PUT', `/variants/${c}`, { variant: i })));
    const aloneOver = await nodes[0].req('POST', `/variants/${name('top')}`, { delta: 5 });
    const aloneStr = await nodes[0].req('POST', `/variants/${name('str')}`, { delta: 1 });
    assert.deepEqual([aloneOver.status, aloneStr.status], [409, 409]);
    const manyBefore = (await batchesOfMany(nodes[0])) + (await batchesOfMany(nodes[1]));
    const answers = await Promise.all([
      ...counters.map((c, i) => nodes[i % 2].req('POST', `/variants/${c}`, { delta: 1000 })),
      ...Array.from({ length: 20 }, (_, i) => nodes[i % 2].req('POST', `/variants/${name('top')}`, { delta: 5 })),
      ...Array.from({ length: 20 }, (_, i) => nodes[i % 2].req('POST', `/variants/${name('str')}`, { delta: 1 })),
    ]);
    assert.ok((await batchesOfMany(nodes[0])) + (await batchesOfMany(nodes[1])) > manyBefore, 'no batch of several writes was sent');
    counters.forEach((_, i) => expectSuccess(answers[i], 200, 'variant incremented successfully', { variant: i + 1000 }));
    for (const a of answers.slice(300, 320)) assert.deepEqual([a.status, a.body.message], [409, aloneOver.body.message]);
    for (const a of answers.slice(320)) assert.deepEqual([a.status, a.body.message], [409, aloneStr.body.message]);
    // One event per write: a put and an increment per counter, the increment's carrying its new value.
    const events = await query('SELECT name, value FROM pithos_changes WHERE pos > $1 AND name LIKE $2', [before, `${p}-c%`]);
    assert.equal(events.length, 600);
    const values = new Set(events.map((e) => `${e.name as string}=${e.value as string}`));
    counters.forEach((c, i) => assert.ok(values.has(`${c}=i${i + 1000}`), `no feed event of ${c}'s increment`));
    for (let i = 0; i < 300; i += 37)
      expectSuccess(await nodes[(i + 1) % 2].req('GET', `/variants/${counters[i]}`), 200, 'variant queried successfully', { variant: i + 1000 });
  },
);

/** Each batch function as a session calls it with increments by 1, answering [op, value or 'f'] for every op, in op order. */
const BATCH_CALLS: Array<[string, (c: pg.Client, names: string[]) => Promise<Array<[number, unknown]>>]> = [
  [
    'pithos_group',
    async (c, names) => {
      const r = (await c.query('SELECT pithos_group($1::jsonb, 0::int8) AS r', [JSON.stringify(names.map((n) => ({ k: 'i', n, d: 1 })))])).rows[0].r as Array<{
        i: number;
        r?: unknown;
        f?: true;
      }>;
      return r.map((x): [number, unknown] => [x.i, x.f === true ? 'f' : x.r]).sort((x, y) => x[0] - y[0]);
    },
  ],
  [
    'pithos_group_counters',
    async (c, names) => {
      const rows = (await c.query('SELECT op, val FROM pithos_group_counters($1::text[], $2::int8[], 0::int8)', [names, names.map(() => 1)])).rows;
      const got = new Map(rows.map((r) => [Number(r.op), r.val as unknown]));
      return names.map((_, i): [number, unknown] => [i + 1, got.get(i + 1) ?? 'f']);
    },
  ],
];

for (const [fn, call] of BATCH_CALLS) {
  test(`${fn}: increments keep the global lock order when a counter is created while the batch waits for a lock`, { skip }, async () => {
    const p = uniq(`gclock-${fn.length}`);
    const a = `${p}-a`;
    const b = `${p}-b`;
    expectSuccess(await nodes[0].req('PUT', `/variants/${b}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
    const session = async (): Promise<pg.Client> => {
      const c = new pg.Client({ connectionString: storeUrl });
      await c.connect();
      return c;
    };
    const [holder, s1, s2] = await Promise.all([session(), session(), session()]);
    try {
      // The holder keeps b locked; s1's batch waits for it, having found no a; a is created; s2's batch locks a, then waits for b.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM pithos_variants WHERE name = $1 FOR UPDATE', [b]);
      const first = call(s1, [a, b]);
      await sleep(300);
      expectSuccess(await nodes[1].req('PUT', `/variants/${a}`, { variant: 100 }), 201, 'variant created successfully', { variant: 100 });
      // pithos_group_counters also gets a counter named twice (its second round).
      const second = call(s2, fn === 'pithos_group' ? [a, b] : [a, b, a]);
      await sleep(300);
      await holder.query('COMMIT');
      // Neither batch may fail (a deadlock is found only after deadlock_timeout and fails one of them).
      const [r1, r2] = await Promise.all([first, second]);
      // s1 did not lock a (it did not exist yet): that increment is its "run it alone"; s2 increments both after s1.
      assert.deepEqual(r1, [
        [1, 'f'],
        [2, '1'],
      ]);
      assert.deepEqual(r2, [[1, '101'], [2, '2'], ...(fn === 'pithos_group' ? [] : [[3, '102']])]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await Promise.all([holder.end(), s1.end(), s2.end()]);
    }
  });
}

test(
  'a batch of increments only goes to pithos_group_counters: a counter named twice in arrival order, refused ones as alone, one feed event each',
  { skip },
  async () => {
    const p = uniq('gccount');
    const name = (s: string): string => `${p}-${s}`;
    for (const [s, v] of [
      ['a', 1],
      ['b', 10],
      ['top', '9223372036854775806'],
      ['str', '"text"'],
    ] as const) {
      const r = await nodes[0].req('PUT', `/variants/${name(s)}`, `{"variant":${v}}`, { 'content-type': 'application/json' });
      assert.equal(r.status, 201, r.raw);
    }
    const before = (await query('SELECT coalesce(max(pos), 0)::int8 AS p FROM pithos_changes'))[0].p as string;
    // a three times (the middle one negative), b once, top past int8 then back under it, str and a missing one refused.
    const ops: Array<[string, number]> = [
      ['a', 2],
      ['top', 5],
      ['b', 3],
      ['a', -10],
      ['str', 1],
      ['none', 1],
      ['top', -6],
      ['a', 100],
    ];
    const rows = await query('SELECT op, val FROM pithos_group_counters($1::text[], $2::int8[], 0::int8)', [ops.map(([s]) => name(s)), ops.map(([, d]) => d)]);
    assert.deepEqual(
      rows.map((r) => [Number(r.op), r.val]).sort((x, y) => (x[0] as number) - (y[0] as number)),
      [
        [1, '3'],
        [3, '13'],
        [4, '-7'],
        [7, '9223372036854775800'],
        [8, '93'],
      ],
    );
    const feed = await query('SELECT name, value FROM pithos_changes WHERE pos > $1 ORDER BY pos', [before]);
    assert.deepEqual(
      feed.filter((e) => e.name === name('a')).map((e) => e.value),
      ['i3', 'i-7', 'i93'],
      'one event per increment of a, in arrival order',
    );
    assert.equal(feed.length, 5);
    // Through the nodes: increments only, many per counter at once, so batches of them name counters twice.
    const counters = [name('c0'), name('c1'), name('c2')];
    for (const c of counters) expectSuccess(await nodes[0].req('PUT', `/variants/${c}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
    const metric = async (): Promise<number> => {
      let n = 0;
      for (const node of nodes) n += await batchesOfMany(node);
      return n;
    };
    // The batches must have gone to pithos_group_counters: counted by the server's function statistics.
    await query("ALTER SYSTEM SET track_functions = 'pl'");
    await query('SELECT pg_reload_conf()');
    let answers: Res[];
    try {
      await sleep(300);
      const calls = async (): Promise<number> =>
        Number((await query("SELECT coalesce(sum(calls), 0)::int8 AS n FROM pg_stat_user_functions WHERE funcname = 'pithos_group_counters'"))[0].n);
      const callsBefore = await calls();
      const manyBefore = await metric();
      answers = await Promise.all(Array.from({ length: 300 }, (_, i) => nodes[i % 2].req('POST', `/variants/${counters[i % 3]}`, { delta: 1 })));
      assert.ok((await metric()) > manyBefore, 'no batch of several writes was sent');
      // Backends report their statistics when idle, at most once a second.
      let counted = 0;
      for (let i = 0; i < 30 && counted <= callsBefore; i++, await sleep(200)) counted = await calls();
      assert.ok(counted > callsBefore, 'no batch went to pithos_group_counters');
    } finally {
      await query('ALTER SYSTEM RESET track_functions');
      await query('SELECT pg_reload_conf()');
    }
    for (const [k, c] of counters.entries()) {
      const got = answers
        .filter((_, i) => i % 3 === k)
        .map((a) => {
          assert.equal(a.status, 200, JSON.stringify(a.body));
          return a.body.data.variant as number;
        })
        .sort((x, y) => x - y);
      assert.deepEqual(
        got,
        Array.from({ length: 100 }, (_, i) => i + 1),
        `${c}: every increment answered its own value`,
      );
      expectSuccess(await nodes[1].req('GET', `/variants/${c}`), 200, 'variant queried successfully', { variant: 100 });
    }
    const events = await query('SELECT count(*)::int AS n FROM pithos_changes WHERE pos > $1 AND name LIKE $2', [before, `${p}-c%`]);
    assert.equal(events[0].n, 303, 'a put and 100 increments per counter');
  },
);
