/**
 * The change feed, black-box (docs/api.md, "Change feed"): every change of a
 * random concurrent workload in commit order; resuming with Last-Event-ID
 * after disconnects at random points (also inside a batch) gives exactly the
 * uninterrupted sequence; filters; expire; reset; a watcher that never reads
 * is cut off with overflow while server memory stays bounded.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { MAX_BUFFERED } from '../../src/http/watch.js';
import { tcpQueues } from '../helpers/proc.js';
import { exchange, reqBytes } from '../helpers/raw.js';
import { PithosServer, STORE, expectError, pool, sleep, uniq } from '../helpers/server.js';
import { type SseEvent, type Watch, watch } from '../helpers/sse.js';
import { rng } from '../helpers/rng.js';
import pg from 'pg';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ args: ['--cache-mb', '4'] });
});
after(async () => {
  await srv?.close();
});

const open = async (query = '', headers: Record<string, string> = {}, extra: Partial<Parameters<typeof watch>[0]> = {}): Promise<Watch> => {
  const w = watch({ port: srv.port, token: srv.token, query, headers, ...extra });
  await w.opened;
  return w;
};

interface Workload {
  /** Changes the successful writes made. */
  changes: number;
  records: string[];
  counters: string[];
  /** +1 increments applied per counter. */
  increments: Map<string, number>;
}

/** A random concurrent workload: record puts and deletes, counter increments, row inserts, two-change transactions. */
async function workload(seed: number, ops: number, tag: string): Promise<Workload> {
  const rand = rng(seed);
  const records = Array.from({ length: 8 }, (_, i) => `${tag}-r${i}`);
  const counters = Array.from({ length: 3 }, (_, i) => `${tag}-c${i}`);
  const table = `${tag}-t`;
  const w: Workload = { changes: 0, records, counters, increments: new Map(counters.map((c) => [c, 0])) };
  for (const c of counters) {
    assert.equal((await srv.req('PUT', `/variants/${c}`, { variant: 0 })).status, 201);
    w.changes++;
  }
  assert.equal((await srv.req('PUT', `/tables/${table}`)).status, 201);
  w.changes++;
  const plan = Array.from({ length: ops }, () => rand());
  await pool(plan, 8, async (x, i) => {
    const r = records[Math.floor(x * 1000) % records.length];
    const c = counters[Math.floor(x * 10000) % counters.length];
    if (x < 0.35) {
      const res = await srv.req('PUT', `/records/${r}`, { record: { i, x } });
      assert.ok(res.status === 200 || res.status === 201, res.raw);
      w.changes++;
    } else if (x < 0.45) {
      const res = await srv.req('DELETE', `/records/${r}`);
      assert.ok(res.status === 200 || res.status === 404, res.raw);
      if (res.status === 200) w.changes++;
    } else if (x < 0.75) {
      const res = await srv.req('POST', `/variants/${c}`, { delta: 1 });
      assert.equal(res.status, 200, res.raw);
      w.changes++;
      w.increments.set(c, (w.increments.get(c) as number) + 1);
    } else if (x < 0.88) {
      const res = await srv.req('POST', `/tables/${table}/rows`, { rows: { i } });
      assert.equal(res.status, 201, res.raw);
      w.changes++;
    } else {
      const res = await srv.req('POST', '/txns', {
        mutations: [
          { kind: 'variant', name: c, operation: 'ADD', delta: 1 },
          { kind: 'record', name: r, operation: 'PUT', values: { txn: i } },
        ],
      });
      assert.equal(res.status, 200, res.raw);
      w.changes += 2;
      w.increments.set(c, (w.increments.get(c) as number) + 1);
    }
  });
  return w;
}

/** (version, index) of an event id, for ordering. */
function pos(id: string): [number, number] {
  const [v, i] = id.split(':');
  return [Number(v), i === undefined ? Infinity : Number(i)];
}

function assertCommitOrder(events: SseEvent[]): void {
  for (let k = 1; k < events.length; k++) {
    const [v0, i0] = pos(events[k - 1].id as string);
    const [v1, i1] = pos(events[k].id as string);
    assert.ok(v1 > v0 || (v1 === v0 && i1 > i0), `event ${k} (${events[k].id}) is not after ${events[k - 1].id}`);
  }
}

test('a watcher sees every change of a random concurrent workload once, in commit order', async () => {
  const tag = uniq('wl');
  const w = await open(`prefix=${tag}&values=true`);
  const load = await workload(0xc0ffee, 400, tag);
  await w.until(() => w.events.length >= load.changes, 30_000, `${load.changes} events`);
  await sleep(300);
  w.close();
  const evs = w.events;
  assert.equal(evs.length, load.changes, 'one event per change, no more');
  assertCommitOrder(evs);
  // Commit order, checked against the values: each counter's events count 1, 2, 3, ... with no gap.
  for (const c of load.counters) {
    const vals = evs.filter((e) => JSON.parse(e.data).name === c && e.event === 'put').map((e) => JSON.parse(e.data).value as number);
    assert.deepEqual(
      vals,
      Array.from({ length: (load.increments.get(c) as number) + 1 }, (_, i) => i),
      `values of ${c}`,
    );
  }
  // Each record's last event is its current state and version.
  for (const r of load.records) {
    const mine = evs.filter((e) => JSON.parse(e.data).kind === 'record' && JSON.parse(e.data).name === r);
    const g = await srv.req('GET', `/records/${r}`);
    if (mine.length === 0) {
      assert.equal(g.status, 404);
      continue;
    }
    const last = JSON.parse(mine[mine.length - 1].data);
    if (mine[mine.length - 1].event === 'delete') {
      assert.equal(g.status, 404, `${r} was deleted last`);
    } else {
      assert.deepEqual(last.value, g.body.data);
      assert.equal(g.headers.etag, `"${last.version}"`);
    }
  }
  // Rows carry t_id: on the log store 1, 2, 3, ... in commit order. The shared store takes
  // them from a sequence, not under a lock held to commit, so concurrent inserts may commit
  // out of t_id order (docs/scaling.md, "Tables"): there each is given once.
  const rows = evs.filter((e) => JSON.parse(e.data).kind === 'table' && JSON.parse(e.data).t_id !== undefined);
  const ids = rows.map((e) => JSON.parse(e.data).t_id as number);
  if (STORE === 'log')
    assert.deepEqual(
      ids,
      rows.map((_, i) => i + 1),
    );
  else assert.equal(new Set(ids).size, ids.length, `a t_id given twice: ${ids.join(',')}`);
});

test('disconnecting at random points and resuming with Last-Event-ID gives the full sequence: no gap, no duplicate', async () => {
  const tag = uniq('rs');
  const reference = await open(`prefix=${tag}`);
  const rand = rng(42);
  const got: SseEvent[] = [];
  let lastId: string | undefined;
  let reconnects = 0;
  let stop = false;
  let target = Infinity;
  // Its first connection has no Last-Event-ID: it sees only what comes after it is open.
  let firstOpen!: () => void;
  const firstOpened = new Promise<void>((r) => (firstOpen = r));
  // The resuming client: takes 1..12 events per connection, then drops it.
  const client = (async () => {
    while (!stop && got.length < target) {
      const n = 1 + Math.floor(rand() * 12);
      const w = await open(`prefix=${tag}`, lastId === undefined ? {} : { 'Last-Event-ID': lastId }, { stopAfter: n });
      firstOpen();
      await w.until(() => w.ended || stop || got.length + w.events.length >= target, 60_000, 'events').catch(() => {});
      w.close();
      got.push(...w.events);
      if (w.lastId !== undefined) lastId = w.lastId;
      reconnects++;
    }
  })();
  // The client's first connection is live before the workload starts (on a busy machine its
  // opening may take longer than any fixed pause; the events before it would never reach it).
  await Promise.race([firstOpened, client]);
  const load = await workload(7, 300, tag);
  target = load.changes;
  await reference.until(() => reference.events.length >= load.changes, 30_000, 'reference events');
  await Promise.race([client, new Promise((r) => setTimeout(r, 60_000).unref())]);
  stop = true;
  await client;
  reference.close();
  assert.ok(reconnects > 10, `only ${reconnects} reconnects`);
  // On the log store a transaction's changes share one version (ids <version>:<i>), so
  // resuming inside a batch is exercised; on the shared store each change has its own.
  if (STORE === 'log') {
    assert.ok(
      got.some((e) => e.id?.includes(':')) && got.some((e, i) => i > 0 && e.id?.includes(':') === false && got[i - 1].id?.startsWith(`${e.id}:`)),
      'the workload has multi-change batches',
    );
  }
  assert.equal(got.length, reference.events.length, 'same number of events as an uninterrupted watcher');
  assert.deepEqual(got, reference.events);
  console.log(`resume: ${got.length} events over ${reconnects} connections`);
});

test('filters: kind (repeatable) and prefix; since replays from the log, then follows live', async () => {
  const tag = uniq('f');
  await srv.req('PUT', `/records/${tag}-a`, { record: { a: 1 } });
  const start = Number(String((await srv.req('GET', `/records/${tag}-a`)).headers.etag).slice(1, -1));
  await srv.req('PUT', `/variants/${tag}-v`, { variant: 'x' });
  const vVersion = Number(String((await srv.req('GET', `/variants/${tag}-v`)).headers.etag).slice(1, -1));
  await srv.req('PUT', `/records/other-${tag}`, { record: {} });
  await srv.req('PUT', `/locks/${tag}-l`, { ttl: 30 });
  await srv.req('PUT', `/tables/${tag}-t`);
  const all = await open(`since=${start - 1}&prefix=${tag}`);
  const recVar = await open(`since=${start - 1}&prefix=${tag}&kind=record&kind=variant&values=true`);
  await srv.req('DELETE', `/records/${tag}-a`);
  await all.until(() => all.events.length >= 5, 10_000, 'all');
  await recVar.until(() => recVar.events.length >= 3, 10_000, 'record+variant');
  await sleep(200);
  all.close();
  recVar.close();
  const brief = (e: SseEvent) => `${e.event} ${JSON.parse(e.data).kind} ${JSON.parse(e.data).name}`;
  assert.deepEqual(all.events.map(brief), [`put record ${tag}-a`, `put variant ${tag}-v`, `put lock ${tag}-l`, `put table ${tag}-t`, `delete record ${tag}-a`]);
  assert.deepEqual(
    recVar.events.map((e) => JSON.parse(e.data)),
    [
      { kind: 'record', name: `${tag}-a`, version: start, value: { a: 1 } },
      { kind: 'variant', name: `${tag}-v`, version: vVersion, value: 'x' },
      { kind: 'record', name: `${tag}-a`, version: pos(recVar.events[2].id as string)[0] },
    ],
  );
  // Lock events never carry the lease token, even with values=true.
  const locks = await open(`since=${start - 1}&prefix=${tag}&kind=lock&values=true`);
  await locks.until(() => locks.events.length >= 1, 10_000, 'lock');
  locks.close();
  assert.equal(JSON.parse(locks.events[0].data).value, undefined);
});

test('values are sent as GET sends them: a double keeps its fraction, an integer has none', async () => {
  const tag = uniq('dbl');
  const w = await open(`prefix=${tag}&values=true`);
  await srv.req('PUT', `/variants/${tag}-d`, '{"variant":2.0}');
  await srv.req('POST', `/variants/${tag}-d`, { delta: 1.5 });
  await srv.req('PUT', `/variants/${tag}-i`, { variant: 2 });
  await w.until(() => w.events.length >= 3, 10_000, 'three events');
  w.close();
  assert.deepEqual(
    w.events.map((e) => /"value":([^,}]*)/.exec(e.data)?.[1]),
    ['2.0', '3.5', '2'],
  );
  assert.equal((await srv.req('GET', `/variants/${tag}-d`)).raw.includes('"variant":3.5'), true);
});

test('bad parameters are 400 naming them; an id the log cannot replay gives reset first', async () => {
  for (const [q, msg] of [
    ['foo=1', /unknown query parameter 'foo'/],
    ['kind=row', /'kind' must be table, record, variant, lock, list, set or zset/],
    ['since=-1', /'since' must be a version/],
    ['values=maybe', /'values' must be true or false/],
  ] as const) {
    expectError(await srv.req('GET', `/watch?${q}`), 400, msg);
  }
  expectError(await srv.req('GET', '/watch', { x: 1 }), 400, /unknown field 'x'/);
  expectError(await srv.req('GET', '/watch', undefined, { 'Last-Event-ID': 'abc' }), 400, /Last-Event-ID/);
  // An id from the future (another data directory, a restored backup): reset.
  const w = await open('since=999999999');
  await w.until(() => w.events.length >= 1, 10_000, 'reset');
  w.close();
  assert.equal(w.events[0].event, 'reset');
  assert.ok(Number(w.events[0].id) < 999999999);
});

test('a kind spelled like a member of every object (__proto__, constructor, toString) is a 400, not a watch of every kind', async () => {
  // A stream that started would never end: read only until the first answer or 3 s, and assert on the status line.
  for (const q of ['kind=__proto__', 'kind=constructor', 'kind=toString', 'kind=hasOwnProperty', 'kind=list&kind=valueOf']) {
    const x = await exchange(srv.port, reqBytes('GET', `/watch?${q}`, srv.token), { answers: 1, waitMs: 3000 });
    assert.match(x.data, /^HTTP\/1\.1 400 /, `${q}: ${x.data.slice(0, 200)}`);
    const body = x.answers[0]?.json as { status?: string; message?: string } | undefined;
    assert.equal(body?.status, 'error', q);
    assert.match(body?.message ?? '', /query parameter 'kind' must be table, record, variant, lock, list, set or zset, not '/, q);
  }
});

test('expire events when a ttl ends', async () => {
  const tag = uniq('x');
  const w = await open(`prefix=${tag}`);
  await srv.req('PUT', `/records/${tag}`, { record: {}, ttl: 5 });
  await srv.advance(6_000);
  await w.until(() => w.events.some((e) => e.event === 'expire'), 10_000, 'expire');
  w.close();
  const [put, exp] = w.events;
  assert.equal(put.event, 'put');
  assert.equal(exp.event, 'expire');
  assert.equal(exp.id, undefined, 'an expiry is not in the log and carries no id');
  assert.equal(JSON.parse(exp.data).version, JSON.parse(put.data).version, 'the version that expired');
});

function rssKb(pid: number, field = 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]);
}

test('a watcher that never reads gets overflow; other watchers and writers carry on; server memory stays bounded', async () => {
  const tag = uniq('ov');
  const pid = srv.child?.pid as number;
  const big = 'x'.repeat(100_000);
  const n = 300; // ~30 MB of values the stalled watcher would have to hold
  const writeAll = (prefix: string) =>
    pool(
      Array.from({ length: n }, (_, i) => i),
      4,
      async (i) => {
        const r = await srv.req('PUT', `/records/${prefix}-${i}`, { record: { big } });
        assert.equal(r.status, 201);
      },
    );
  // The same writes twice first, with the same two watchers as below but both reading: the
  // heap grows to what the writes, the feed's own reading (on the shared store, pages of
  // changes read from the database) and the two channels' text need, so what grows afterwards
  // is what the stalled watcher holds. (Once with one watcher left the baseline low in some
  // runs on PostgreSQL: +10 to +20 MB with nothing held, against at most +2 MB in 8 runs now.)
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets the peak RSS (VmHWM)
  for (const round of [1, 2]) {
    const warm = await open(`prefix=${tag}-warm${round}&values=true`);
    const warmNames = await open(`prefix=${tag}-warm${round}`);
    await writeAll(`${tag}-warm${round}`);
    await warm.until(() => warm.events.length >= n, 20_000, 'warm-up events');
    await warmNames.until(() => warmNames.events.length >= n, 20_000, 'warm-up events without values');
    warm.close();
    warmNames.close();
  }
  const stalled = await open(`prefix=${tag}&values=true`, {}, { paused: true });
  const healthy = await open(`prefix=${tag}`);
  // The baseline is the peak of the same writes read by healthy watchers: garbage collection
  // may shrink the heap just before this point, and a baseline taken then would count its
  // regrowth as the stalled watcher's.
  const rss0 = Math.max(rssKb(pid), rssKb(pid, 'VmHWM'));
  const t0 = Date.now();
  await writeAll(tag);
  const ms = Date.now() - t0;
  await healthy.until(() => healthy.events.length >= n, 20_000, 'healthy watcher events');
  // What the stalled watcher holds stays held until it reads, while garbage the writes left
  // may be collected at any moment: the least of a few samples is the held part, without the
  // garbage that happened to be there at one instant.
  let rss1 = rssKb(pid);
  for (let i = 0; i < 5; i++) {
    await sleep(100);
    rss1 = Math.min(rss1, rssKb(pid));
  }
  const growthMb = (rss1 - rss0) / 1024;
  // What the server itself still holds for the stalled watcher is what the watcher receives
  // once it reads, less what waits in the kernel on either end of its connection now: at
  // most MAX_BUFFERED and the last flush over it. (Unlike the RSS, this does not depend on
  // when garbage is collected: with the bound removed, the RSS grew by -7 to +8 MB in runs
  // on PostgreSQL, while this was the whole 25 MB the kernel did not hold.)
  const port = stalled.localPort as number;
  const [clientEnd, serverEnd] = [tcpQueues(port, srv.port), tcpQueues(srv.port, port)];
  const inKernel = (clientEnd?.rx ?? 0) + (serverEnd?.tx ?? 0);
  // The server lets an overflowed stream's last bytes wait 10 s (OVERFLOW_GRACE_MS) for the
  // reader, then drops them, overflow event included: how long the stalled watcher was left
  // unread is among the figures, printed whatever fails below.
  const resumedAfter = Date.now() - t0;
  stalled.resume();
  try {
    await stalled.until(() => stalled.ended, 20_000, 'the stalled stream to end');
  } finally {
    healthy.close();
    console.log(
      `overflow: ${n} x 100 kB writes in ${ms} ms with a stalled watcher, resumed ${resumedAfter} ms after they began; server RSS ${(rss0 / 1024).toFixed(0)} -> ` +
        `${(rss1 / 1024).toFixed(0)} MB (+${growthMb.toFixed(1)}); stalled watcher took ${stalled.events.length} events ` +
        `(the last ${stalled.events.at(-1)?.event}), ${(stalled.bytes / 1e6).toFixed(1)} MB, ${(inKernel / 1e6).toFixed(1)} MB of it from the kernel's queues`,
    );
  }
  const last = stalled.events[stalled.events.length - 1];
  assert.equal(last?.event, 'overflow', `last event ${last?.event}`);
  assert.ok(stalled.events.length < n, `the stalled watcher got ${stalled.events.length} events`);
  const held = stalled.bytes - inKernel;
  assert.ok(held < 2 * MAX_BUFFERED, `the server held ${(held / 1e6).toFixed(1)} MB for the stalled watcher`);
  assert.ok(growthMb < 20, `server RSS grew by ${growthMb.toFixed(1)} MB`);
});

test(
  'a change pruned before this node published it: live watchers get what came before, then reset, then what follows',
  {
    skip: STORE === 'postgres' ? false : 'shared store only: the log store publishes at commit and prunes only what it published',
  },
  async () => {
    const tag = uniq('gap');
    const w = await open(`prefix=${tag}`);
    await srv.req('PUT', `/records/${tag}-first`, { record: {} });
    await w.until(() => w.events.length >= 1, 10_000, 'first');
    const slow = new pg.Client({ connectionString: srv.storeUrl });
    const admin = new pg.Client({ connectionString: srv.storeUrl });
    await slow.connect();
    await admin.connect();
    try {
      // The node's watermark is held below the next change, which another node prunes first.
      await slow.query('BEGIN');
      await slow.query('SELECT pg_current_xact_id()');
      assert.equal((await srv.req('PUT', `/records/${tag}-lost`, { record: {} })).status, 201);
      const pos = Number((await admin.query('SELECT pos FROM pithos_changes WHERE name = $1', [`${tag}-lost`])).rows[0].pos);
      await admin.query('DELETE FROM pithos_changes WHERE name = $1', [`${tag}-lost`]);
      await admin.query('UPDATE pithos_feed SET floor = $1 WHERE id = 1', [pos]);
      await slow.query('COMMIT');
      await srv.req('PUT', `/records/${tag}-after`, { record: {} });
      await w.until(() => w.events.length >= 3, 10_000, 'reset and the next change');
    } finally {
      w.close();
      await slow.end();
      await admin.end();
    }
    assert.deepEqual(
      w.events.map((e) => `${e.event} ${e.event === 'reset' ? '' : JSON.parse(e.data).name}`),
      [`put ${tag}-first`, 'reset ', `put ${tag}-after`],
    );
    assert.ok(Number(w.events[1].id) >= Number(JSON.parse(w.events[0].data).version), 'the reset id is where the feed goes on');
  },
);
