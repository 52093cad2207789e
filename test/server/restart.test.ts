/** Black-box durability tests: graceful restarts, SIGKILL after acknowledged writes, atomic PATCH under SIGKILL. */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { tcpQueues } from '../helpers/proc.js';
import { PithosServer, expectError, expectSuccess, pool, rawRequest, sleep, uniq, untilCount, untilTrue, type Res } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

interface Snapshot {
  table: string;
  record: string;
  quick: string;
  variantInt: string;
  variantDbl: string;
  variantStr: string;
  variantBool: string;
  lock: string;
  lockToken: string;
  lockFence: number;
  lockAcquiredAt: string;
  dropped: string;
  recreated: string;
}

async function populate(): Promise<Snapshot> {
  const s: Snapshot = {
    table: uniq('t'),
    record: uniq('r'),
    quick: uniq('q'),
    variantInt: uniq('vi'),
    variantDbl: uniq('vd'),
    variantStr: uniq('vs'),
    variantBool: uniq('vb'),
    lock: uniq('l'),
    lockToken: '',
    lockFence: 0,
    lockAcquiredAt: '',
    dropped: uniq('gone'),
    recreated: uniq('again'),
  };
  expectSuccess(await srv.req('PUT', `/tables/${s.table}`), 201, 'table created successfully');
  for (let i = 1; i <= 5; i++) await srv.req('POST', `/tables/${s.table}/rows`, { rows: { i, nest: { k: [i] } } });
  expectSuccess(await srv.req('PATCH', `/tables/${s.table}`, { wheres: { i: { $gte: 4 } }, sets: { big: true } }), 200, 'table rows patched successfully');
  expectSuccess(await srv.req('DELETE', `/tables/${s.table}/rows`, { wheres: { i: 2 } }), 200, 'table rows remove successfully');
  expectSuccess(await srv.req('PUT', `/records/${s.record}`, { record: { v: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', `/records/${s.record}`, { record: { v: 2, __x: 'y' } }), 200, 'record created successfully');
  expectSuccess(await srv.req('PUT', `/table/${s.quick}`, { table: { q: 'quick' } }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', `/variants/${s.variantInt}`, { variant: 10 }), 201, 'variant created successfully', { variant: 10 });
  expectSuccess(await srv.req('POST', `/variants/${s.variantInt}`, { delta: 5 }), 200, 'variant incremented successfully', { variant: 15 });
  expectSuccess(await srv.req('PUT', `/variants/${s.variantDbl}`, { variant: 0.5 }), 201, 'variant created successfully', { variant: 0.5 });
  expectSuccess(await srv.req('PUT', `/variants/${s.variantStr}`, { variant: 'text' }), 201, 'variant created successfully', { variant: 'text' });
  expectSuccess(await srv.req('PUT', `/variants/${s.variantBool}`, { variant: false }), 201, 'variant created successfully', { variant: false });
  const lk = await srv.req('PUT', `/locks/${s.lock}`, { ttl: 600, holder: 'h' });
  assert.equal(lk.status, 201, lk.raw);
  s.lockToken = lk.body.data.token;
  s.lockFence = lk.body.data.fence;
  s.lockAcquiredAt = (await srv.req('GET', `/locks/${s.lock}`)).body.data.acquired_at;
  // things that must stay deleted
  expectSuccess(await srv.req('PUT', `/tables/${s.dropped}`), 201, 'table created successfully');
  await srv.req('POST', `/tables/${s.dropped}/rows`, { rows: { x: 1 } });
  expectSuccess(await srv.req('DELETE', `/tables/${s.dropped}`), 200, 'table deleted successfully');
  expectSuccess(await srv.req('PUT', `/records/${s.dropped}`, { record: {} }), 201, 'record created successfully');
  expectSuccess(await srv.req('DELETE', `/records/${s.dropped}`), 200, 'record deleted successfully');
  expectSuccess(await srv.req('PUT', `/variants/${s.dropped}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expectSuccess(await srv.req('DELETE', `/variants/${s.dropped}`), 200, 'variant deleted successfully');
  const dl = await srv.req('PUT', `/locks/${s.dropped}`, { ttl: 600 });
  expectSuccess(await srv.req('DELETE', `/locks/${s.dropped}`, { token: dl.body.data.token }), 200, 'lock deleted successfully');
  // a table dropped and recreated: only the new incarnation's rows remain
  expectSuccess(await srv.req('PUT', `/tables/${s.recreated}`), 201, 'table created successfully');
  for (let i = 0; i < 3; i++) await srv.req('POST', `/tables/${s.recreated}/rows`, { rows: { old: i } });
  expectSuccess(await srv.req('DELETE', `/tables/${s.recreated}`), 200, 'table deleted successfully');
  expectSuccess(await srv.req('PUT', `/tables/${s.recreated}`), 201, 'table created successfully');
  expectSuccess(await srv.req('POST', `/tables/${s.recreated}/rows`, { rows: { fresh: true } }), 201, 'table rows insert successfully', { t_id: 1 });
  return s;
}

async function verify(s: Snapshot): Promise<void> {
  expectSuccess(await srv.req('GET', `/tables/${s.table}`), 200, 'table queried successfully', {
    '1': { i: 1, nest: { k: [1] } },
    '3': { i: 3, nest: { k: [3] } },
    '4': { i: 4, nest: { k: [4] }, big: true },
    '5': { i: 5, nest: { k: [5] }, big: true },
  });
  expectSuccess(await srv.req('GET', `/records/${s.record}`), 200, 'record queried successfully', { v: 2, __x: 'y' });
  expectSuccess(await srv.req('GET', `/records/${s.quick}`), 200, 'record queried successfully', { q: 'quick' });
  expectSuccess(await srv.req('GET', `/variants/${s.variantInt}`), 200, 'variant queried successfully', { variant: 15 });
  expectSuccess(await srv.req('GET', `/variants/${s.variantDbl}`), 200, 'variant queried successfully', { variant: 0.5 });
  expectSuccess(await srv.req('GET', `/variants/${s.variantStr}`), 200, 'variant queried successfully', { variant: 'text' });
  expectSuccess(await srv.req('GET', `/variants/${s.variantBool}`), 200, 'variant queried successfully', { variant: false });
  const l = await srv.req('GET', `/locks/${s.lock}`);
  assert.equal(l.status, 200, l.raw);
  assert.equal(l.body.data.held, true);
  assert.equal(l.body.data.holder, 'h');
  assert.equal(l.body.data.fence, s.lockFence);
  assert.equal(l.body.data.acquired_at, s.lockAcquiredAt);
  expectError(await srv.req('PUT', `/locks/${s.lock}`, { ttl: 5 }), 423, `lock '${s.lock}' is held`);
  for (const ns of ['tables', 'records', 'variants', 'locks']) expectError(await srv.req('GET', `/${ns}/${s.dropped}`), 404);
  expectSuccess(await srv.req('GET', `/tables/${s.recreated}`), 200, 'table queried successfully', { '1': { fresh: true } });
  expectSuccess(await srv.req('POST', `/tables/${s.recreated}/rows`, { rows: { fresh: 2 } }), 201, 'table rows insert successfully', { t_id: 2 });
  expectSuccess(await srv.req('DELETE', `/tables/${s.recreated}/rows`, { wheres: { fresh: 2 } }), 200, 'table rows remove successfully');
  // t_id continues
  const r = await srv.req('POST', `/tables/${s.table}/rows`, { rows: { i: 6 } });
  expectSuccess(r, 201, 'table rows insert successfully', { t_id: 6 });
  expectSuccess(await srv.req('DELETE', `/tables/${s.table}/rows`, { wheres: { i: 6 } }), 200, 'table rows remove successfully');
}

test('all four namespaces persist across a graceful restart (SIGTERM → exit 0)', async () => {
  const s = await populate();
  const kc = (await srv.req('GET', '/health')).body.data.key_count;
  const info = await srv.restart('SIGTERM');
  assert.equal((await srv.req('GET', '/health')).body.data.key_count, kc, 'key_count changed across a restart');
  assert.deepEqual(info, { code: 0, signal: null }, `SIGTERM exit: ${JSON.stringify(info)}\nstderr: ${srv.history.at(-1)?.stderr}`);
  await verify(s);
  // the pre-restart lock token still releases the lock
  expectSuccess(await srv.req('DELETE', `/locks/${s.lock}`, { token: s.lockToken }), 200, 'lock deleted successfully');
});

test('acknowledged writes survive SIGKILL', async () => {
  const s = await populate();
  // and a burst of concurrent acknowledged writes right before the kill
  const burst = uniq('burst');
  expectSuccess(await srv.req('PUT', `/tables/${burst}`), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', `/variants/${burst}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  const ids = Array.from({ length: 150 }, (_, i) => i);
  const results = await pool(ids, 30, async (i) => {
    const [a, b, c] = await Promise.all([
      srv.req('PUT', `/records/${burst}-${i}`, { record: { i } }),
      srv.req('POST', `/tables/${burst}/rows`, { rows: { i } }),
      srv.req('POST', `/variants/${burst}`, { delta: 1 }),
    ]);
    return [a.status, b.status, c.status];
  });
  for (const r of results) assert.deepEqual(r, [201, 201, 200]);
  await srv.restart('SIGKILL');
  await verify(s);
  expectSuccess(await srv.req('GET', `/variants/${burst}`), 200, 'variant queried successfully', { variant: 150 });
  const t = await srv.req('GET', `/tables/${burst}`);
  assert.equal(t.status, 200);
  assert.equal(Object.keys(t.body.data).length, 150);
  assert.deepEqual(
    Object.values(t.body.data as Record<string, { i: number }>)
      .map((r) => r.i)
      .sort((a, b) => a - b),
    ids,
  );
  const missing: number[] = [];
  await pool(ids, 30, async (i) => {
    const r = await srv.req('GET', `/records/${burst}-${i}`);
    if (r.status !== 200 || r.body.data.i !== i) missing.push(i);
  });
  assert.deepEqual(missing, [], 'acknowledged records lost after SIGKILL');
});

test('PATCH of 2,000 rows interrupted by SIGKILL is all-or-nothing (and DELETE rows too)', async () => {
  const t = uniq('atomic');
  const N = 2000;
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const ins = await pool(
    Array.from({ length: N }, (_, i) => i),
    32,
    (i) =>
      rawRequest({
        port: srv.port,
        method: 'POST',
        path: `/tables/${t}/rows`,
        headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json' },
        body: Buffer.from(JSON.stringify({ rows: { i, v: -1, pad: 'p'.repeat(300) } })),
        agent,
      }),
  );
  agent.destroy();
  assert.ok(
    ins.every((r) => r.status === 201),
    `inserts failed: ${ins.find((r) => r.status !== 201)?.raw}`,
  );

  const check = async (label: string): Promise<number> => {
    const r = await srv.req('GET', `/tables/${t}`);
    assert.equal(r.status, 200, `${label}: ${r.raw.slice(0, 200)}`);
    const rows = Object.values(r.body.data as Record<string, { v: number; i: number }>);
    assert.equal(rows.length, N, `${label}: row count`);
    const vs = new Set(rows.map((x) => x.v));
    assert.equal(
      vs.size,
      1,
      `${label}: a half-applied PATCH — values ${[...vs].join(',')} (counts ${[...vs].map((v) => rows.filter((x) => x.v === v).length).join(',')})`,
    );
    return [...vs][0]!;
  };

  // a baseline PATCH, uninterrupted, to learn how long one takes
  let t0 = Date.now();
  expectSuccess(await srv.req('PATCH', `/tables/${t}`, { wheres: {}, sets: { v: 0 } }), 200, 'table rows patched successfully');
  const patchMs = Math.max(2, Date.now() - t0);
  assert.equal(await check('baseline'), 0);

  let current = 0;
  const outcomes: string[] = [];
  for (let round = 1; round <= 8; round++) {
    // aim mostly at the second half of the PATCH, where its batch is written and synced
    const delay = Math.floor(patchMs * (0.2 + Math.random() * 1.0));
    t0 = Date.now();
    let acked = false;
    const p = srv
      .req('PATCH', `/tables/${t}`, { wheres: {}, sets: { v: round } })
      .then((r: Res) => {
        if (r.status === 200) acked = true;
      })
      .catch(() => undefined);
    await sleep(delay);
    await srv.kill('SIGKILL');
    await p;
    await srv.spawn();
    const v = await check(`round ${round} (kill after ${delay} ms of ~${patchMs} ms)`);
    assert.ok(v === current || v === round, `round ${round}: value ${v}, expected ${current} or ${round}`);
    // Whether the kill came before or after the answer is chance; an answered PATCH must have been applied.
    assert.ok(!acked || v === round, `round ${round}: PATCH was acknowledged but lost`);
    outcomes.push(`${delay}ms:${v === round ? 'applied' : 'absent'}${acked ? '(acked)' : ''}`);
    current = v;
  }
  // The rounds above may all have been killed before their answer: one PATCH is answered, then killed at once.
  expectSuccess(await srv.req('PATCH', `/tables/${t}`, { wheres: {}, sets: { v: 100 } }), 200, 'table rows patched successfully');
  await srv.kill('SIGKILL');
  await srv.spawn();
  assert.equal(await check('PATCH answered, then SIGKILL'), 100, 'an acknowledged PATCH was lost');

  // DELETE rows is atomic too
  const rowCount = async (): Promise<number> => {
    const r = await srv.req('GET', `/tables/${t}`);
    assert.equal(r.status, 200, r.raw.slice(0, 200));
    return Object.keys(r.body.data as Record<string, unknown>).length;
  };
  let left = N;
  for (let round = 0; round < 2 && left > 0; round++) {
    const delay = Math.floor(Math.random() * patchMs);
    let acked = false;
    const p = srv
      .req('DELETE', `/tables/${t}/rows`, { wheres: { v: { $gte: -1 } } })
      .then((r: Res) => {
        if (r.status === 200) acked = true;
      })
      .catch(() => undefined);
    await sleep(delay);
    await srv.kill('SIGKILL');
    await p;
    await srv.spawn();
    left = await rowCount();
    assert.ok(left === 0 || left === N, `DELETE rows interrupted after ${delay} ms left ${left} of ${N} rows`);
    assert.ok(!acked || left === 0, 'acknowledged DELETE rows lost');
    outcomes.push(left === 0 ? 'deleted' : 'kept');
  }
  // As for PATCH: one DELETE is answered, then killed at once (on a few rows again if a round above took them all).
  if (left === 0) {
    const rows = Array.from({ length: 100 }, (_, i) => ({ kind: 'table', name: t, operation: 'INSERT', values: { i, v: 0 } }));
    const ins = await srv.req('POST', '/txns', { mutations: rows });
    assert.equal(ins.status, 200, ins.raw.slice(0, 200));
    assert.equal((ins.body.data as { results: unknown[] }).results.length, 100, ins.raw.slice(0, 200));
    assert.equal(await rowCount(), 100);
  }
  expectSuccess(await srv.req('DELETE', `/tables/${t}/rows`, { wheres: { v: { $gte: -1 } } }), 200, 'table rows remove successfully');
  await srv.kill('SIGKILL');
  await srv.spawn();
  assert.equal(await rowCount(), 0, 'an acknowledged DELETE rows was lost');
  // for the report: how the kills landed
  process.stdout.write(`# atomic PATCH: one PATCH of ${N} rows ≈ ${patchMs} ms; outcomes ${outcomes.join(', ')}\n`);
});

async function inFlight(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  const tag = uniq(`inflight${signal}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const N = 400;
  const settled: Promise<{ i: number; status: number }>[] = [];
  let acked = 0;
  for (let i = 0; i < N; i++) {
    settled.push(
      rawRequest({
        port: srv.port,
        method: 'PUT',
        path: `/records/${tag}-${i}`,
        headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json' },
        body: Buffer.from(JSON.stringify({ record: { i } })),
        agent,
      }).then(
        (r) => {
          if (r.status === 201) acked++;
          return { i, status: r.status };
        },
        () => ({ i, status: -1 }),
      ),
    );
  }
  // The signal lands while writes are being acknowledged, not before the first or after the last.
  const MIN_ACKED = 20;
  await untilCount(`writes acknowledged before the ${signal}`, () => acked, MIN_ACKED, { ended: Promise.all(settled) });
  const info = await srv.kill(signal);
  const results = await Promise.all(settled);
  agent.destroy();
  if (signal === 'SIGTERM') {
    assert.deepEqual(info, { code: 0, signal: null }, `exit after SIGTERM under load: ${JSON.stringify(info)}\nstderr: ${srv.history.at(-1)?.stderr}`);
  }
  const ok = results.filter((r) => r.status === 201);
  assert.ok(ok.length >= MIN_ACKED, `acknowledged before and during the ${signal}: ${ok.length}`);
  const statuses = new Map<number, number>();
  for (const r of results) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  const allowed = new Set([201, 503, -1]);
  assert.ok(
    results.every((r) => allowed.has(r.status)),
    `unexpected statuses during shutdown: ${JSON.stringify([...statuses])}`,
  );
  await srv.spawn();
  const lost: number[] = [];
  await pool(ok, 32, async ({ i }) => {
    const r = await srv.req('GET', `/records/${tag}-${i}`);
    if (r.status !== 200 || r.body?.data?.i !== i) lost.push(i);
  });
  assert.deepEqual(lost, [], `acknowledged writes lost over ${signal} (statuses ${JSON.stringify([...statuses])})`);
  process.stdout.write(`# in-flight ${signal}: statuses ${JSON.stringify([...statuses])}\n`);
}

test('SIGTERM with requests in flight: exit 0, and every acknowledged write is present after restart', async () => {
  await inFlight('SIGTERM');
});

test('SIGKILL with requests in flight: every acknowledged write is present after restart', async () => {
  await inFlight('SIGKILL');
});

test('SIGTERM while a request body is half-sent: that in-flight request still completes and is durable', async () => {
  const id = uniq('halfsent');
  const body = Buffer.from(JSON.stringify({ record: { s: 'y'.repeat(200_000) } }));
  const half = Math.floor(body.length / 2);
  let req!: http.ClientRequest;
  const response = new Promise<Res>((resolve, reject) => {
    req = http.request(
      {
        host: '127.0.0.1',
        port: srv.port,
        method: 'PUT',
        path: `/records/${id}`,
        agent: false,
        headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Content-Length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(raw);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, raw });
        });
      },
    );
    req.on('error', reject);
  });
  const connected = new Promise<net.Socket>((r) => req.once('socket', (s: net.Socket) => s.once('connect', () => r(s))));
  await new Promise<void>((r) => req.write(body.subarray(0, half), () => r()));
  const port = (await connected).localPort as number;
  // The server has read the headers and the half of the body sent (its request is in flight)
  // once none of it waits on either end of the connection, however busy the machine.
  await untilTrue('the server reading the half-sent body', () => {
    const [client, server] = [tcpQueues(port, srv.port), tcpQueues(srv.port, port)];
    return client !== undefined && server !== undefined && client.tx === 0 && server.rx === 0;
  });
  srv.signal('SIGTERM');
  await untilTrue('the server starting its shutdown', () => srv.stdout.includes('SIGTERM: draining requests'));
  req.end(body.subarray(half));
  const r = await response.catch((e: Error) => ({ status: -1, raw: String(e), headers: {}, body: undefined }) as Res);
  const info = await srv.waitExit();
  assert.deepEqual(info, { code: 0, signal: null }, `exit: ${JSON.stringify(info)}`);
  assert.equal(r.status, 201, `in-flight PUT during SIGTERM: ${r.status} ${r.raw.slice(0, 200)}`);
  await srv.spawn();
  const g = await srv.req('GET', `/records/${id}`);
  assert.equal(g.status, 200, g.raw.slice(0, 200));
  assert.equal(g.body.data.s.length, 200_000);
});

test('SIGTERM while a slow client is still reading a large response: it receives every byte', async () => {
  const id = uniq('slowread');
  const payload = 'z'.repeat(12 * 1024 * 1024); // more than the kernel buffers on both ends hold
  expectSuccess(await srv.req('PUT', `/records/${id}`, { record: { p: payload } }), 201, 'record created successfully');
  const sock = net.connect(srv.port, '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  const chunks: Buffer[] = [];
  const ended = new Promise<void>((r) => sock.once('close', () => r()));
  // The handler has answered once the first bytes arrive; reading then stops, the kernel
  // buffers fill and most of the answer waits inside the server.
  sock.on('data', (c: Buffer) => chunks.push(c));
  const answered = new Promise<void>((r) =>
    sock.once('data', () => {
      sock.pause();
      r();
    }),
  );
  sock.write(`GET /records/${id} HTTP/1.1\r\nHost: x\r\nAuth-Token: ${srv.token}\r\n\r\n`);
  await answered;
  srv.signal('SIGTERM');
  // The server is shutting down and must wait for this reader.
  await untilTrue('the server starting its shutdown', () => srv.stdout.includes('SIGTERM: draining requests'));
  sock.resume();
  await ended;
  const raw = Buffer.concat(chunks);
  const head = raw.subarray(0, raw.indexOf('\r\n\r\n')).toString('latin1');
  const declared = Number(/content-length: (\d+)/i.exec(head)?.[1]);
  const body = raw.subarray(head.length + 4);
  assert.equal(body.length, declared, `received ${body.length} of ${declared} body bytes`);
  assert.equal((JSON.parse(body.toString('utf8')) as { data: { p: string } }).data.p.length, payload.length);
  assert.deepEqual(await srv.waitExit(), { code: 0, signal: null });
  await srv.spawn();
});
