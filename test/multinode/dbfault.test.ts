/**
 * The database goes away under load and comes back: requests fail with 503
 * meanwhile (never a crash, never a 500), no acknowledged write is lost,
 * and service resumes without restarting Pithos. Uses a PostgreSQL cluster
 * of its own, since it stops it (other test files run at the same time).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgCluster, freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, expectSuccess, sleep, uniq } from '../helpers/server.js';

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;
let cluster: PgCluster | undefined;
let nodes: PithosServer[] = [];

before(async () => {
  if (skip) return;
  cluster = await PgCluster.create();
  const url = await freshSchema(cluster.url, 'fault');
  nodes = await Promise.all([0, 1].map(() => PithosServer.start({
    store: url, testClock: false, args: ['--pg-statement-timeout-ms', '2000'],
  })));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  cluster?.destroy();
});

test('PostgreSQL stopped mid-load: 503 meanwhile, no acknowledged write lost, service resumes without restart', { skip }, async () => {
  const ctr = uniq('ctr');
  expectSuccess(await nodes[0].req('PUT', `/variants/${ctr}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  const acked: string[] = [];
  let ackedIncrements = 0;
  let unknownIncrements = 0;
  const statuses = new Map<number, number>();
  let stop = false;
  const writer = async (w: number): Promise<void> => {
    const n = nodes[w % nodes.length];
    for (let k = 0; !stop; k++) {
      const r = await n.req('PUT', `/records/f${w}-${k}`, { record: { k } });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 201) acked.push(`f${w}-${k}`);
      const i = await n.req('POST', `/variants/${ctr}`, { delta: 1 });
      statuses.set(i.status, (statuses.get(i.status) ?? 0) + 1);
      if (i.status === 200) ackedIncrements++;
      else unknownIncrements++;
      if (r.status !== 201) await sleep(50);
    }
  };
  const writers = Array.from({ length: 8 }, (_, w) => writer(w));
  // Load first (waiting on progress, not on time: the machine may be busy).
  await until(() => acked.length >= 40, 30_000, 'writes before the fault');
  const before = acked.length;
  (cluster as PgCluster).stop();
  await sleep(2500);
  const during = new Map(statuses);
  // While it is down, answers are 503 with a message saying why.
  const down = await nodes[1].req('GET', `/variants/${ctr}`);
  assert.equal(down.status, 503, down.raw);
  assert.match(down.body.message, /database/);
  (cluster as PgCluster).start();
  // Service resumes by itself.
  const deadline = Date.now() + 20_000;
  let back = false;
  while (Date.now() < deadline && !back) {
    back = (await nodes[0].req('GET', `/variants/${ctr}`)).status === 200 && (await nodes[1].req('GET', `/variants/${ctr}`)).status === 200;
    if (!back) await sleep(200);
  }
  assert.ok(back, 'service did not resume within 20 s of the database coming back');
  await until(() => acked.length >= before + 40, 30_000, 'writes after the database came back');
  stop = true;
  await Promise.all(writers);
  assert.ok((during.get(503) ?? 0) > 0, `no 503 while the database was down: ${JSON.stringify([...during])}`);
  assert.equal(statuses.get(500) ?? 0, 0, `500s: ${JSON.stringify([...statuses])}`);
  assert.ok(acked.length > before, 'no write acknowledged after the database came back');
  for (const id of acked) {
    assert.equal((await nodes[1].req('GET', `/records/${id}`)).status, 200, `acknowledged record ${id} lost`);
  }
  // Every acknowledged +1 is there; an unanswered one may or may not have committed.
  const v = (await nodes[0].req('GET', `/variants/${ctr}`)).body.data.variant as number;
  assert.ok(v >= ackedIncrements && v <= ackedIncrements + unknownIncrements, `counter ${v}, acked ${ackedIncrements}, unknown ${unknownIncrements}`);
  // Both nodes still alive (no crash).
  for (const n of nodes) assert.equal(n.child?.exitCode ?? null, null);
});

test('a node started while PostgreSQL is down waits for it, then serves (no crash, no restart)', { skip }, async () => {
  const c = cluster as PgCluster;
  c.stop();
  let late: PithosServer | undefined;
  try {
    const url = schemaUrl(c);
    const starting = PithosServer.start({ store: url, testClock: false, startTimeoutMs: 60_000 });
    await sleep(2000);
    c.start();
    late = await starting;
    assert.match(late.stderr, /shared store: cannot migrate the schema/, 'the wait was logged');
    expectSuccess(await late.req('PUT', '/variants/late', { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
    expectSuccess(await nodes[0].req('GET', '/variants/late'), 200, 'variant queried successfully', { variant: 1 });
  } finally {
    await late?.close();
  }
});

/** The URL of the schema the other nodes use; the schema exists already, so this needs no connection. */
function schemaUrl(c: PgCluster): string {
  const u = new URL(c.url);
  u.searchParams.set('options', '-c search_path=fault');
  return u.toString();
}
