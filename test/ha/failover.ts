/**
 * Pithos on a real highly available PostgreSQL (test/ha/cluster.ts): two
 * nodes, writers, lockers and a watcher on each node, while the primary is
 * failed over four ways. Run by `npm run test:ha` (not part of `npm test`:
 * it needs Patroni, etcd and HAProxy, and takes minutes).
 *
 * Run 1 reaches the primary through HAProxy; run 2 names the three members
 * in a multi-host URL (target_session_attrs=read-write), with no proxy.
 * Prints, per failover kind, what clients saw: the table docs/scaling.md
 * quotes.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import os from 'node:os';
import pg from 'pg';
import { PithosServer } from '../helpers/server.js';
import { HaCluster, PATRONI, haproxyCheck, sleep, until } from './cluster.js';
import { Workload, expected, ok, unknownOutcome, type Sample } from './workload.js';

/** The nodes' --pg-statement-timeout-ms: the bound of a request's database work (the node gives up 500 ms after it). */
const STATEMENT_MS = 2000;
/**
 * The bound asserted: every request is answered within the configured bound
 * plus 1 s, whatever the database does. A request's database work has one
 * deadline, the bound + 0.5 s (docs/scaling.md, "Every wait is bounded").
 */
const LIMIT_MS = STATEMENT_MS + 1000;
const FREEZE_MS = 20_000;

type Kind = 'kill-postmaster' | 'switchover' | 'kill-patroni' | 'freeze';
const KINDS: Kind[] = ['kill-postmaster', 'switchover', 'kill-patroni', 'freeze'];

interface Figures {
  run: string;
  kind: Kind;
  /** Fault start → first write the database itself accepted on another member (the harness's own probe). */
  dbOutageMs: number | undefined;
  /** First failing write sent → first write acknowledged that was sent after the last failing one. */
  outageMs: number;
  /**
   * The longest time between two acknowledged writes (the writers never pause): the outage
   * users saw, which outageMs overstates when a single late write fails after writes had resumed.
   */
  gapMs: number;
  /** First write acknowledged after the probe's first accepted write, from it (multi-host resumption). */
  resumeAfterDbMs: number | undefined;
  n503: number;
  n500: number;
  unknown: number;
  longestMs: number;
  requests: number;
  /** Writes answered 201 whose record is not there afterwards. */
  lost: number;
  /** `reset` events the watchers got, and times a watcher's stream ended (it reconnects with Last-Event-ID). */
  resets: number;
  reconnects: number;
  /** The last write that failed: when it was sent (ms after the fault) and its answer, which explains a long write outage. */
  lastFailure: string;
}

let cluster: HaCluster | undefined;
const figures: Figures[] = [];
const load: string[] = [];

function cleanup(): void {
  cluster?.destroy();
  cluster = undefined;
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, () => {
    cleanup();
    process.exit(1);
  });

before(async () => {
  cluster = await HaCluster.create();
  await admin(cluster, 'CREATE TABLE IF NOT EXISTS ha_probe (at timestamptz)');
});

after(() => {
  const rows = figures.map(
    (f) =>
      `| ${f.run} | ${f.kind} | ${f.requests} | ${f.lost} | ${f.n500} | ${f.n503} (${f.unknown} unknown outcome) | ${f.longestMs} | ${(f.outageMs / 1000).toFixed(1)} s | ${(f.gapMs / 1000).toFixed(1)} s | ${f.dbOutageMs === undefined ? '-' : `${(f.dbOutageMs / 1000).toFixed(1)} s`} | ${f.resumeAfterDbMs === undefined ? '-' : `${(f.resumeAfterDbMs / 1000).toFixed(2)} s`} | ${f.resets} / ${f.reconnects} |`,
  );
  process.stdout.write(
    [
      `# Patroni ttl ${PATRONI.ttl} s, loop_wait ${PATRONI.loop_wait} s, retry_timeout ${PATRONI.retry_timeout} s, master_start_timeout 0, synchronous_mode; ` +
        `HAProxy check ${haproxyCheck()}; --pg-statement-timeout-ms ${STATEMENT_MS}, bound asserted ${LIMIT_MS} ms (the bound + 1 s)`,
      `# load during the runs (uptime): ${load.join(' / ')}`,
      `| run | failover | requests | acknowledged writes lost | 500 | 503 | longest request (ms) | write outage | longest span without an acknowledged write | database outage | writes after the new primary accepts | feed resets / reconnects (2 watchers) |`,
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      ...figures.map((f) => `# ${f.run} ${f.kind}: last failing write ${f.lastFailure}`),
      // HAProxy's own account of its checks (foreground mode logs each server going up or down, with the reason).
      ...(cluster?.log('haproxy') ?? '')
        .split('\n')
        .filter((l) => / is (UP|DOWN)/.test(l))
        .map((l) => `# haproxy: ${l.trim().slice(0, 200)}`),
      '',
    ].join('\n'),
  );
  cleanup();
});

/** Runs statements on the current leader directly (not through Pithos or HAProxy). */
async function admin(c: HaCluster, sql: string): Promise<void> {
  const leader = await until(() => c.leader(), 60_000, 'a leader');
  const client = new pg.Client({ host: '127.0.0.1', port: c.member(leader).pgPort, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * When a member other than `old` first commits a write after `since`:
 * the moment the new primary accepts writes, seen by the database's own
 * client (a fresh connection per try, each try bounded).
 */
function probeNewPrimary(c: HaCluster, old: string, since: number): { stop: () => void; first: () => number | undefined } {
  let first: number | undefined;
  let stopped = false;
  const tryOne = async (port: number): Promise<void> => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 1000 });
    client.on('error', () => undefined);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        (async () => {
          await client.connect();
          await client.query('INSERT INTO ha_probe VALUES (now())');
        })(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('probe timeout')), 1500);
        }),
      ]);
      const t = Date.now();
      if (first === undefined && t >= since) first = t;
    } catch {
      /* not (yet) a primary that commits */
    } finally {
      clearTimeout(timer);
      void client.end().catch(() => undefined);
    }
  };
  const loops = c.members
    .filter((m) => m.name !== old)
    .map(async (m) => {
      while (!stopped && first === undefined) {
        await tryOne(m.pgPort);
        await sleep(100);
      }
    });
  return {
    stop: () => {
      stopped = true;
      void Promise.all(loops);
    },
    first: () => first,
  };
}

/** Fails the primary over one way; resolves once writes go through again and the cluster is whole. */
async function fault(c: HaCluster, wl: Workload, kind: Kind): Promise<{ t0: number; tEnd: number; tDb: number | undefined }> {
  const { leader, sync } = await c.healthy(120_000);
  await until(() => (wl.ackedSince(Date.now() - 2000) >= 10 ? true : undefined), 30_000, 'steady writes before the fault');
  const old = c.member(leader);
  const t0 = Date.now();
  const probe = probeNewPrimary(c, leader, t0);
  const newLeader = (): Promise<string | undefined> =>
    until(
      async () => {
        const l = await c.leader();
        return l !== undefined && l !== leader ? l : undefined;
      },
      90_000,
      `a leader other than ${leader}`,
      250,
    );
  try {
    switch (kind) {
      case 'kill-postmaster':
        c.killPostmaster(old);
        await newLeader();
        break;
      case 'switchover': {
        const r = await c.switchover(leader, sync);
        assert.equal(r.status, 200, `switchover refused: ${r.body}`);
        await newLeader();
        break;
      }
      case 'kill-patroni':
        c.killPatroni(old);
        await newLeader();
        // A supervisor (systemd) starts Patroni again; it finds another leader and demotes its server.
        c.startPatroni(old);
        break;
      case 'freeze': {
        const pids = c.freeze(old);
        await sleep(FREEZE_MS);
        c.thaw(pids);
        await newLeader();
        break;
      }
    }
    const back = await until(() => probe.first(), 60_000, 'the new primary to accept a write');
    const resumed = Math.max(back, Date.now());
    await until(() => (wl.ackedSince(resumed) >= 10 ? true : undefined), 60_000, 'writes through Pithos after the failover');
    await c.healthy(120_000);
    return { t0, tEnd: Date.now(), tDb: probe.first() };
  } finally {
    probe.stop();
  }
}

function measure(
  run: string,
  kind: Kind,
  samples: Sample[],
  t0: number,
  tDb: number | undefined,
  feed: { resets: number; reconnects: number },
  lost: number,
): Figures {
  const writes = samples.filter((s) => s.op === 'put' || s.op === 'inc');
  const failed = writes.filter((s) => !ok(s)).sort((a, b) => a.start - b.start);
  let outageMs = 0;
  let lastFailure = 'none';
  if (failed.length > 0) {
    const last = failed[failed.length - 1];
    lastFailure = `sent ${((last.start - t0) / 1000).toFixed(1)} s after the fault: ${last.status} ${last.message.slice(0, 160)}`;
    const okAfter = writes.filter((s) => ok(s) && s.start >= last.start).sort((a, b) => a.end - b.end)[0];
    outageMs = (okAfter?.end ?? last.end) - failed[0].start;
  }
  const okEnds = writes
    .filter(ok)
    .map((s) => s.end)
    .sort((a, b) => a - b);
  let gapMs = 0;
  for (let i = 1; i < okEnds.length; i++) gapMs = Math.max(gapMs, okEnds[i] - okEnds[i - 1]);
  const firstAfterDb = tDb === undefined ? undefined : writes.filter((s) => ok(s) && s.end >= tDb).sort((a, b) => a.end - b.end)[0];
  return {
    run,
    kind,
    dbOutageMs: tDb === undefined ? undefined : tDb - t0,
    outageMs,
    gapMs,
    resumeAfterDbMs: tDb === undefined || firstAfterDb === undefined ? undefined : firstAfterDb.end - tDb,
    n503: samples.filter((s) => s.status === 503).length,
    n500: samples.filter((s) => s.status === 500).length,
    unknown: samples.filter(unknownOutcome).length,
    longestMs: Math.max(0, ...samples.map((s) => s.end - s.start)),
    requests: samples.length,
    lost,
    ...feed,
    lastFailure,
  };
}

/** Everything the run must guarantee, checked after the load stopped and the cluster is whole. */
type ReadBack = Map<string, { status: number; data: unknown }>;

/** Every record the writers tried, read back after the load stopped. */
async function readBack(wl: Workload, reader: PithosServer): Promise<ReadBack> {
  const back: ReadBack = new Map();
  for (const name of wl.puts.keys()) {
    const r = await reader.req('GET', `/records/${name}`);
    back.set(name, { status: r.status, data: r.body?.data });
  }
  return back;
}

async function verify(wl: Workload, reader: PithosServer, back: ReadBack): Promise<void> {
  const s = wl.samples;
  const noAnswer = s.filter((x) => x.status === 0);
  assert.equal(noAnswer.length, 0, `requests without an answer: ${JSON.stringify(noAnswer.slice(0, 3))}`);
  const e500 = s.filter((x) => x.status === 500);
  assert.equal(e500.length, 0, `500s: ${JSON.stringify(e500.slice(0, 3))}`);
  const odd = s.filter((x) => !expected(x) && x.status !== 503);
  assert.equal(odd.length, 0, `answers neither success nor 503: ${JSON.stringify(odd.slice(0, 3))}`);
  const noRetry = s.filter((x) => x.status === 503 && x.retryAfter === undefined);
  assert.equal(noRetry.length, 0, `503 without Retry-After: ${JSON.stringify(noRetry.slice(0, 3))}`);
  const slow = s.filter((x) => x.end - x.start > LIMIT_MS);
  assert.equal(slow.length, 0, `requests over the bound of ${LIMIT_MS} ms: ${JSON.stringify(slow.slice(0, 5).map((x) => ({ ...x, ms: x.end - x.start })))}`);

  // Every acknowledged record is there with its value; one refused with "nothing was changed" is not.
  for (const [name, put] of wl.puts) {
    const r = back.get(name);
    assert.ok(r !== undefined && (r.status === 200 || r.status === 404), `read back ${name}: ${JSON.stringify(r)}`);
    if (put.status === 201) {
      assert.equal(r.status, 200, `acknowledged record ${name} lost`);
      const [w, k] = name.slice(wl.tag.length).split('-').map(Number);
      assert.deepEqual(r.data, { w, k }, `record ${name} has another value`);
    } else if (put.status === 503 && !unknownOutcome(put)) {
      assert.equal(r.status, 404, `${name} answered 503 "${put.message}" but was written`);
    }
  }

  // The counter: every acknowledged +1 is there, and at most the unknown-outcome ones besides.
  const incs = s.filter((x) => x.op === 'inc');
  const acked = incs.filter(ok).length;
  const unknown = incs.filter(unknownOutcome).length;
  const v = (await reader.req('GET', `/variants/${wl.counter}`)).body.data.variant as number;
  assert.ok(v >= acked && v <= acked + unknown, `counter ${v}: ${acked} acknowledged, ${unknown} of unknown outcome`);

  // One holder at a time: what each holder surely held, never overlapping; fences increase.
  const holds = [...wl.holds].sort((a, b) => a.acked - b.acked);
  assert.ok(holds.length > 0, 'no lock was ever acquired');
  let held = holds[0];
  for (const h of holds.slice(1)) {
    assert.ok(held.until <= h.acked, `two lock holders at once: ${JSON.stringify(held)} and ${JSON.stringify(h)}`);
    assert.ok(h.fence > held.fence, `fences did not increase: ${JSON.stringify(held)} then ${JSON.stringify(h)}`);
    held = h;
  }

  // The feed: each acknowledged record once, or a reset after it told the watcher to re-read.
  for (const w of wl.watchers) {
    const seen = new Map<string, number[]>();
    const resets: number[] = [];
    w.events.forEach((e, i) => {
      if (e.event === 'reset') resets.push(i);
      else if (e.event === 'put' && e.name !== undefined) seen.set(e.name, [...(seen.get(e.name) ?? []), i]);
    });
    assert.ok(!w.events.some((e) => e.event === 'overflow'), 'a watcher overflowed');
    for (const [name, put] of wl.puts) {
      const at = seen.get(name) ?? [];
      if (put.status === 503 && !unknownOutcome(put)) assert.equal(at.length, 0, `feed delivered ${name}, which was answered "nothing was changed"`);
      if (put.status !== 201) continue;
      if (at.length === 0) {
        assert.ok(
          w.events.some((e) => e.event === 'reset' && e.at >= put.end),
          `acknowledged ${name} never delivered, and no reset after it`,
        );
      } else {
        for (let j = 1; j < at.length; j++) {
          assert.ok(
            resets.some((r) => r > at[j - 1] && r < at[j]),
            `${name} delivered twice without a reset between`,
          );
        }
      }
    }
  }
}

async function run(name: string, storeUrl: (schema: string) => string, schema: string, kinds: Kind[], multiHost: boolean): Promise<void> {
  const c = cluster as HaCluster;
  await admin(c, `CREATE SCHEMA IF NOT EXISTS ${schema}`);
  const nodes: PithosServer[] = [];
  let wl: Workload | undefined;
  try {
    for (let i = 0; i < 2; i++) {
      nodes.push(
        await PithosServer.start({
          store: storeUrl(schema),
          testClock: false,
          startTimeoutMs: 60_000,
          args: ['--pg-statement-timeout-ms', String(STATEMENT_MS)],
        }),
      );
    }
    wl = new Workload(nodes, `${schema}-`);
    await wl.prepare();
    wl.start();
    const windows: { kind: Kind; t0: number; tEnd: number; tDb: number | undefined; reconnects: number }[] = [];
    for (const kind of kinds) {
      const before = wl.watchers.reduce((a, x) => a + x.reconnects, 0);
      const w = await fault(c, wl, kind);
      windows.push({ kind, ...w, reconnects: wl.watchers.reduce((a, x) => a + x.reconnects, 0) - before });
      load.push(
        `${name} ${kind}: ${os
          .loadavg()
          .map((x) => x.toFixed(2))
          .join(' ')}`,
      );
    }
    await sleep(1000);
    await wl.stop();
    await sleep(1500); // the last changes reach the watchers (feed poll 50 ms with watchers)
    wl.closeWatchers();
    const back = await readBack(wl, nodes[0]);
    let from = 0;
    for (const w of windows) {
      // Each kind's window runs from the end of the previous one, so every answer is counted once.
      const samples = wl.samples.filter((s) => s.start >= from && s.start < w.tEnd);
      const events = wl.watchers.flatMap((x) => x.events).filter((e) => e.at >= from && e.at < w.tEnd);
      figures.push(
        measure(
          name,
          w.kind,
          samples,
          w.t0,
          w.tDb,
          { resets: events.filter((e) => e.event === 'reset').length, reconnects: w.reconnects },
          samples.filter((x) => x.op === 'put' && x.status === 201 && back.get(x.name ?? '')?.status !== 200).length,
        ),
      );
      from = w.tEnd;
    }
    await verify(wl, nodes[0], back);
    if (multiHost) {
      for (const f of figures.filter((x) => x.run === name && (x.kind === 'switchover' || x.kind === 'kill-postmaster'))) {
        assert.ok(
          f.resumeAfterDbMs !== undefined && f.resumeAfterDbMs <= 2000,
          `${f.kind}: writes resumed ${f.resumeAfterDbMs} ms after the new primary accepted writes (bound 2000 ms)`,
        );
      }
    }
    for (const n of nodes) assert.equal(n.child?.exitCode ?? null, null, 'a Pithos node exited');
  } catch (e) {
    for (const n of nodes) process.stderr.write(`--- pithos node ${n.port} stderr (tail)\n${n.stderr.slice(-4000)}\n`);
    for (const m of c.members) process.stderr.write(`--- ${m.name} (tail)\n${c.log(m.name).slice(-3000)}\n`);
    throw e;
  } finally {
    wl?.closeWatchers();
    await Promise.all(nodes.map((n) => n.close()));
  }
}

test('through HAProxy: four failovers, no acknowledged write lost, no 500, every request within the bound', async () => {
  const c = cluster as HaCluster;
  await run(
    'haproxy',
    (schema) => `postgres://postgres:postgres@127.0.0.1:${c.proxyPort}/postgres?options=-c%20search_path%3D${schema}`,
    'ha_proxy',
    KINDS,
    false,
  );
});

test('multi-host URL without a proxy: the same, and writes resume within 2 s of the new primary accepting writes', async () => {
  const c = cluster as HaCluster;
  const hosts = c.pgPorts.map((p) => `127.0.0.1:${p}`).join(',');
  await run(
    'multi-host',
    (schema) => `postgres://postgres:postgres@${hosts}/postgres?options=-c%20search_path%3D${schema}&target_session_attrs=read-write`,
    'ha_multi',
    KINDS,
    true,
  );
});
