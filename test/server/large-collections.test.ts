/**
 * Large collections (docs/query.md, "Large collections"): a whole-collection
 * read of a list, set or sorted set, by either spelling, and a combine
 * without `store`, is answered byte for byte as one string would be, from
 * one instant, while small requests sent every 10 ms keep being answered;
 * a combine with `store` over too many members is refused up front with
 * the figures.
 *
 * On the log store no absolute speed is asserted (the machine is shared):
 * the probes' worst latency is compared with the big answer's own duration,
 * measured in the same run; before streaming, every such read was one
 * synchronous step of most of its duration, and the probes waited for all
 * of it (277-1,460 ms of 292-1,529 ms measured). On PostgreSQL most of an
 * answer's time is the database's, during which probes were answered even
 * before, so the bound there is absolute: 250 ms, where the one string
 * built from all the rows held the probes for 240-270 ms at 60,000 members.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, STORE, TOKEN, uniq } from '../helpers/server.js';
import { bigRequest } from '../helpers/big.js';

/** Elements per collection: enough for a stall of hundreds of ms before streaming, few enough for the suite's time. */
const N = 150_000;
const FAST_MS = 50;
const PG_BOUND_MS = 250;
const member = (i: number): string => `member-${String(i).padStart(7, '0')}`;
const scoreOf = (i: number): number => (i * 7919) % 1000;

let srv: PithosServer;
const list = uniq('biglist');
const set = uniq('bigset');
const set2 = uniq('bigset2');
const zset = uniq('bigzset');
const variant = uniq('probe');

before(async () => {
  // Whole PUTs of 150,000 elements are one transaction each on PostgreSQL: in the full suite, beside
  // another test file on two cores, the sorted set's ran past the default 5 s statement timeout.
  srv = await PithosServer.start({ fsync: 'never', args: STORE === 'postgres' ? ['--pg-statement-timeout-ms', '60000'] : [] });
  assert.equal((await srv.req('PUT', `/variants/${variant}`, { variant: 1 })).status, 201);
  const items = Array.from({ length: N }, (_, i) => ({ i }));
  assert.equal((await srv.req('PUT', `/lists/${list}`, { list: items })).status, 201);
  assert.equal((await srv.req('PUT', `/sets/${set}`, { set: Array.from({ length: N }, (_, i) => member(i)) })).status, 201);
  // Every third member of the first, and as many of its own.
  const other = Array.from({ length: N / 3 }, (_, i) => member(3 * i)).concat(Array.from({ length: N / 3 }, (_, i) => `other-${i}`));
  assert.equal((await srv.req('PUT', `/sets/${set2}`, { set: other })).status, 201);
  const z: Record<string, number> = {};
  for (let i = 0; i < N; i++) z[member(i)] = scoreOf(i);
  assert.equal((await srv.req('PUT', `/zsets/${zset}`, { zset: z })).status, 201);
});

after(async () => {
  await srv?.close();
});

/** A request whose body is only collected, so the test's own event loop stays free for the probes (the body as text). */
const big = async (method: string, path: string, body?: unknown) => {
  const r = await bigRequest(srv, method, path, body);
  return { ...r, body: r.body.toString('utf8') };
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `work` while a small GET starts every 10 ms (one at a time, on its own connection); returns the latencies. */
async function probed<T>(work: () => Promise<T>): Promise<{ result: T; lat: number[] }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const one = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const t = performance.now();
      http
        .get({ host: '127.0.0.1', port: srv.port, path: `/variants/${variant}`, agent, headers: { 'Auth-Token': TOKEN } }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t) : reject(new Error(`probe: ${res.statusCode}`))));
        })
        .on('error', reject);
    });
  await one();
  let done = false;
  const lat: number[] = [];
  const loop = (async () => {
    while (!done) {
      const ms = await one();
      lat.push(ms);
      if (ms < 10) await sleep(10 - ms);
    }
  })();
  try {
    return { result: await work(), lat };
  } finally {
    done = true;
    await loop;
    agent.destroy();
  }
}

const envelope = (message: string, data: string): string => `{"status":"success","message":"${message}","data":${data}}`;
const members = Array.from({ length: N }, (_, i) => member(i));
const zorder = Array.from({ length: N }, (_, i) => i).sort((a, b) => scoreOf(a) - scoreOf(b) || (member(a) < member(b) ? -1 : 1));

const CASES: Array<{ what: string; method: string; path: () => string; body?: () => unknown; want: () => string }> = [
  {
    what: 'GET /lists/<name>',
    method: 'GET',
    path: () => `/lists/${list}`,
    want: () => envelope('list queried successfully', `{"items":[${Array.from({ length: N }, (_, i) => `{"i":${i}}`).join(',')}],"length":${N}}`),
  },
  {
    what: 'GET /list/<key>',
    method: 'GET',
    path: () => `/list/${list}`,
    want: () => envelope('list queried successfully', `{"list":[${Array.from({ length: N }, (_, i) => `{"i":${i}}`).join(',')}]}`),
  },
  {
    what: 'GET /sets/<name>',
    method: 'GET',
    path: () => `/sets/${set}`,
    want: () => envelope('set queried successfully', `{"members":${JSON.stringify(members)},"count":${N},"next":null}`),
  },
  {
    what: 'GET /set/<key>',
    method: 'GET',
    path: () => `/set/${set}`,
    want: () => envelope('set queried successfully', `{"set":${JSON.stringify(members)}}`),
  },
  {
    what: 'GET /zsets/<name>',
    method: 'GET',
    path: () => `/zsets/${zset}`,
    want: () =>
      envelope('zset queried successfully', `{"items":[${zorder.map((i) => `{"member":"${member(i)}","score":${scoreOf(i)}}`).join(',')}],"count":${N}}`),
  },
  {
    what: 'GET /zset/<key>',
    method: 'GET',
    path: () => `/zset/${zset}`,
    want: () => envelope('zset queried successfully', `{"zset":{${zorder.map((i) => `"${member(i)}":${scoreOf(i)}`).join(',')}}}`),
  },
  {
    what: 'POST /sets/<name>/combine union without store',
    method: 'POST',
    path: () => `/sets/${set}/combine`,
    body: () => ({ op: 'union', with: [set2] }),
    want: () => {
      const all = members.concat(Array.from({ length: N / 3 }, (_, i) => `other-${i}`)).sort();
      return envelope('set combined successfully', `{"members":${JSON.stringify(all)},"count":${all.length}}`);
    },
  },
  {
    what: 'POST /sets/<name>/combine diff without store',
    method: 'POST',
    path: () => `/sets/${set}/combine`,
    body: () => ({ op: 'diff', with: [set2] }),
    want: () => {
      const rest = members.filter((_, i) => i % 3 !== 0);
      return envelope('set combined successfully', `{"members":${JSON.stringify(rest)},"count":${rest.length}}`);
    },
  },
];

for (const c of CASES) {
  test(`${c.what} of ${N} elements: the one-string answer byte for byte, while probes every 10 ms keep being answered`, async () => {
    const want = c.want();
    const tries: string[] = [];
    // Up to three tries: a shared machine may deschedule the server in one of them.
    for (let attempt = 0; attempt < 3; attempt++) {
      const { result, lat } = await probed(() => big(c.method, c.path(), c.body?.()));
      assert.equal(result.status, 200, result.body.slice(0, 300));
      assert.equal(result.body.length, want.length);
      assert.ok(result.body === want, 'the streamed answer is the one-string answer, byte for byte');
      const max = Math.max(...lat);
      const sorted = [...lat].sort((a, b) => a - b);
      tries.push(
        `${c.what}: ${(result.body.length / 1e6).toFixed(1)} MB in ${result.ms.toFixed(0)} ms; ${lat.length} probes, ` +
          `median ${sorted[lat.length >> 1].toFixed(1)} ms, p99 ${sorted[Math.floor(lat.length * 0.99)].toFixed(1)} ms, max ${max.toFixed(1)} ms`,
      );
      console.log(`# ${STORE}: ${tries[tries.length - 1]}`);
      if (lat.length >= 5 && max < (STORE === 'postgres' ? PG_BOUND_MS : result.ms / 3)) return;
      // An answer done in under 50 ms leaves too few probes to measure by, and cannot have held one
      // longer than itself: it passes when no probe took 50 ms (the bench's p99 target) either.
      if (result.ms < FAST_MS && max < FAST_MS) return;
    }
    assert.fail(`small requests waited for a large part of the big answer:\n${tries.join('\n')}`);
  });
}

/**
 * Starts a GET and stops reading once the headers (the first slice) are in,
 * so the server waits for 'drain' with most of the answer still to come.
 */
function paused(path: string): Promise<{ res: http.IncomingMessage; chunks: Buffer[] }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const r = http.request({ host: '127.0.0.1', port: srv.port, method: 'GET', path, agent: false, headers: { 'Auth-Token': TOKEN } }, (res) => {
      res.pause();
      res.on('data', (c: Buffer) => chunks.push(c));
      resolve({ res, chunks });
    });
    r.on('error', reject);
    r.end();
  });
}

async function rest(p: { res: http.IncomingMessage; chunks: Buffer[] }): Promise<string> {
  const done = new Promise<void>((resolve, reject) => {
    p.res.on('end', resolve);
    p.res.on('error', reject);
  });
  p.res.resume();
  await done;
  return Buffer.concat(p.chunks).toString('utf8');
}

/**
 * Elements of the collections that are read while paused: 100,000 of about
 * 120 bytes, so each answer (12-15 MB) is far larger than what loopback's
 * socket buffers take (a 2.6 MB answer to a paused client was written whole:
 * about 2 MB in the server's send buffer, 0.35 MB in the client's).
 */
const W = 100_000;
const wide = (i: number): string => `${member(i)}-${'w'.repeat(100)}`;
const wideMembers = Array.from({ length: W }, (_, i) => wide(i));
/** A wide set the bound test below reads (the test here writes it first). */
let wideSet = '';

test('writes while large collection answers are being sent do not tear them: each is its collection of one instant', async () => {
  const l = uniq('tlist');
  const s = uniq('tset');
  const z = uniq('tzset');
  assert.equal((await srv.req('PUT', `/lists/${l}`, { list: wideMembers })).status, 201);
  assert.equal((await srv.req('PUT', `/sets/${s}`, { set: wideMembers })).status, 201);
  const zs: Record<string, number> = {};
  for (let i = 0; i < W; i++) zs[wide(i)] = i;
  assert.equal((await srv.req('PUT', `/zsets/${z}`, { zset: zs })).status, 201);
  wideSet = s;

  const pl = await paused(`/lists/${l}`);
  const ps = await paused(`/sets/${s}`);
  const pz = await paused(`/zsets/${z}`);
  // Changes all over each collection, while their answers wait on the clients.
  const last = wide(W - 1);
  assert.equal((await srv.req('POST', `/lists/${l}/push`, { values: ['new'], side: 'left' })).status, 200);
  assert.equal((await srv.req('PATCH', `/lists/${l}`, { set: { index: -1, value: 'changed' } })).status, 200);
  assert.equal((await srv.req('POST', `/sets/${s}/add`, { members: ['aaa-new', 'zzz-new'] })).status, 200);
  assert.equal((await srv.req('POST', `/sets/${s}/remove`, { members: [last, wide(1)] })).status, 200);
  assert.equal((await srv.req('POST', `/zsets/${z}/add`, { members: { 'aaa-new': -1, 'zzz-new': W + 5 } })).status, 200);
  assert.equal((await srv.req('POST', `/zsets/${z}/remove`, { members: [last, wide(1)] })).status, 200);
  assert.equal((await srv.req('POST', `/zsets/${z}/incr`, { member: wide(2), delta: W * 2 })).status, 200);

  const gl = JSON.parse(await rest(pl)) as { data: { items: unknown[]; length: number } };
  assert.equal(gl.data.length, W);
  assert.deepEqual(gl.data.items, wideMembers);
  const gs = JSON.parse(await rest(ps)) as { data: { members: string[]; count: number } };
  assert.equal(gs.data.count, W);
  assert.deepEqual(gs.data.members, wideMembers);
  const gz = JSON.parse(await rest(pz)) as { data: { items: Array<{ member: string; score: number }>; count: number } };
  assert.equal(gz.data.count, W);
  assert.deepEqual(
    gz.data.items.map((x) => x.member),
    wideMembers,
  );
  assert.ok(gz.data.items.every((x, i) => x.score === i));
  // The changes themselves are there for the next read.
  const after = JSON.parse((await big('GET', `/sets/${s}`)).body) as { data: { count: number; members: string[] } };
  assert.equal(after.data.count, W);
  assert.equal(after.data.members[0], 'aaa-new');
});

test('concurrent reads of one large list are each answered whole, from one copy or several; a read after a write sees it', async () => {
  const l = uniq('flist');
  assert.equal((await srv.req('PUT', `/lists/${l}`, { list: wideMembers })).status, 201);
  // Three readers of one instant (on the log store they share one copy of the item versions), each
  // paused with most of its answer still to come, so they finish one after another; five in all,
  // as PostgreSQL's default pool keeps five readers open at once.
  const first = await Promise.all([1, 2, 3].map(() => paused(`/lists/${l}`)));
  assert.equal((await srv.req('PATCH', `/lists/${l}`, { set: { index: 0, value: 'changed' } })).status, 200);
  const later = await Promise.all([1, 2].map(() => paused(`/lists/${l}`)));
  for (const p of first) {
    const got = JSON.parse(await rest(p)) as { data: { items: string[]; length: number } };
    assert.equal(got.data.length, W);
    assert.deepEqual(got.data.items, wideMembers);
  }
  for (const p of later) {
    const got = JSON.parse(await rest(p)) as { data: { items: string[]; length: number } };
    assert.equal(got.data.items.length, W);
    assert.equal(got.data.items[0], 'changed');
    assert.deepEqual(got.data.items.slice(1), wideMembers.slice(1));
  }
});

test('whole-set reads and combines while pairs of members are added are each one instant of the sets', async () => {
  const s = uniq('cset');
  assert.equal((await srv.req('PUT', `/sets/${s}`, { set: members })).status, 201);
  // Each add puts one member before every other and one after: a copy torn by an add shows one without the other.
  let stop = false;
  let k = 0;
  const writer = (async () => {
    while (!stop) {
      assert.equal((await srv.req('POST', `/sets/${s}/add`, { members: [`aaa-${k}`, `zzz-${k}`] })).status, 200);
      k++;
    }
  })();
  const seen: number[] = [];
  try {
    for (let r = 0; r < 6; r++) {
      const read = r % 2 === 0 ? await big('GET', `/sets/${s}`) : await big('POST', `/sets/${s}/combine`, { op: 'union', with: [s] });
      assert.equal(read.status, 200, read.body.slice(0, 200));
      const got = (JSON.parse(read.body) as { data: { members: string[]; count: number } }).data;
      assert.equal(got.count, got.members.length);
      const a = got.members.filter((m) => m.startsWith('aaa-')).map((m) => Number(m.slice(4)));
      const z = got.members.filter((m) => m.startsWith('zzz-')).map((m) => Number(m.slice(4)));
      a.sort((x, y) => x - y);
      z.sort((x, y) => x - y);
      assert.deepEqual(a, z, 'every pair whole or absent');
      assert.deepEqual(
        a,
        a.map((_, i) => i),
        'the adds up to one instant',
      );
      assert.equal(got.count, N + 2 * a.length);
      seen.push(a.length);
    }
  } finally {
    stop = true;
    await writer;
  }
  // The writes did land while the reads ran.
  assert.ok(k >= 3, `only ${k} adds during the reads`);
  console.log(`# ${STORE}: reads saw ${seen.join(', ')} of ${k} pairs`);
});

test('whole-list reads while both ends are rewritten are each one instant of the list', async () => {
  const l = uniq('elist');
  assert.equal((await srv.req('PUT', `/lists/${l}`, { list: Array.from({ length: N }, (_, i) => i) })).status, 201);
  // The first item, then the last, set to the same round number: one instant shows them equal, or the
  // first one round ahead; a copy torn across writes (its first items early, its last late) shows the last ahead.
  let stop = false;
  let k = 0;
  const writer = (async () => {
    while (!stop) {
      k++;
      assert.equal((await srv.req('PATCH', `/lists/${l}`, { set: { index: 0, value: k } })).status, 200);
      assert.equal((await srv.req('PATCH', `/lists/${l}`, { set: { index: -1, value: k } })).status, 200);
    }
  })();
  const seen: string[] = [];
  try {
    for (let r = 0; r < 6; r++) {
      const read = await big('GET', `/lists/${l}`);
      assert.equal(read.status, 200, read.body.slice(0, 200));
      const got = (JSON.parse(read.body) as { data: { items: number[]; length: number } }).data;
      assert.equal(got.length, N);
      assert.equal(got.items.length, N);
      const first = got.items[0];
      const last = got.items[N - 1] === N - 1 ? 0 : got.items[N - 1];
      assert.ok(first === last || first === last + 1, `first item ${first}, last ${last}: not one instant of the list`);
      for (let j = 1; j < N - 1; j++) if (got.items[j] !== j) assert.fail(`item ${j} is ${got.items[j]}`);
      seen.push(`${first}/${last}`);
    }
  } finally {
    stop = true;
    await writer;
  }
  assert.ok(k >= 3, `only ${k} rounds of writes during the reads`);
  console.log(`# ${STORE}: list reads saw first/last ${seen.join(', ')} of ${k} rounds`);
});

test('a client that goes away in the middle of a large answer stops it; the server answers on', async () => {
  assert.ok(wideSet !== '');
  const p = await paused(`/sets/${wideSet}`);
  p.res.destroy();
  await sleep(50);
  const r = await srv.req('GET', `/variants/${variant}`);
  assert.equal(r.status, 200);
  const whole = await big('GET', `/sets/${set}`);
  assert.equal(whole.status, 200);
  assert.equal((JSON.parse(whole.body) as { data: { count: number } }).data.count, N);
});

test('combine with store over more than 200,000 input members is refused up front with 413 and the figures; the target is untouched', async () => {
  const target = uniq('target');
  assert.equal((await srv.req('PUT', `/sets/${target}`, { set: ['keep'] })).status, 201);
  // 3N + N·2/3 members in all: over the limit on either store's N.
  const r = await srv.req('POST', `/sets/${set}/combine`, { op: 'union', with: [set, set, set2], store: target });
  assert.equal(r.status, 413, r.raw);
  const total = 3 * N + (2 * N) / 3;
  assert.ok(
    r.raw.includes(`at most 200000 members in all; these sets hold ${total} ('${set}' ${N}, '${set}' ${N}, '${set}' ${N}, '${set2}' ${(2 * N) / 3})`),
    r.raw,
  );
  const t = await srv.req('GET', `/sets/${target}`);
  assert.deepEqual((t.body as { data: { members: string[] } }).data.members, ['keep']);
  // Under the limit, a combine still stores.
  const small = uniq('small');
  assert.equal((await srv.req('PUT', `/sets/${small}`, { set: ['a', 'b'] })).status, 201);
  const ok = await srv.req('POST', `/sets/${small}/combine`, { op: 'union', with: [target], store: target });
  assert.equal(ok.status, 200, ok.raw);
  assert.deepEqual((ok.body as { data: unknown }).data, { count: 3 });
});

test('large answers under way are bounded server-wide: one more is answered 503 with Retry-After, and answers go on once they end', async () => {
  const open: Array<{ res: http.IncomingMessage; chunks: Buffer[] }> = [];
  let refused: { res: http.IncomingMessage; chunks: Buffer[] } | undefined;
  try {
    // 32 answers at once on the log store (envelope.ts); half the database pool on PostgreSQL (sql.ts).
    assert.ok(wideSet !== '');
    for (let i = 0; i < 40 && refused === undefined; i++) {
      const p = await paused(`/sets/${wideSet}`);
      if (p.res.statusCode === 503) refused = p;
      else {
        assert.equal(p.res.statusCode, 200);
        open.push(p);
      }
    }
    assert.ok(refused !== undefined, `40 large answers at once were all accepted`);
    assert.equal(refused.res.headers['retry-after'], '1');
    assert.match(await rest(refused), /large answers are being (sent|read from the database) already \(at most \d+/);
    assert.ok(open.length >= 1, 'at least one large answer is served');
    // Small requests are still served meanwhile.
    assert.equal((await srv.req('GET', `/variants/${variant}`)).status, 200);
  } finally {
    for (const p of open) p.res.destroy();
  }
  await sleep(200);
  const again = await big('GET', `/sets/${set}`);
  assert.equal(again.status, 200);
  assert.equal((JSON.parse(again.body) as { data: { count: number } }).data.count, N);
});
