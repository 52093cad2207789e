/**
 * Versions and conditional writes (docs/api.md, "Versions and conditional
 * writes"), black-box: ETag, if_version / if_absent / If-Match /
 * If-None-Match on records and variants, PATCH of records (sets, ttl),
 * ttl-only PATCH of variants and tables, the record check's `version`, and
 * read-modify-write loops that must lose no increment.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, pool, uniq, onlyLog, etag } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

test('GET of a record and a variant carries ETag "<version>"; every write moves it forward', async () => {
  const r = uniq('r');
  await srv.req('PUT', `/records/${r}`, { record: { a: 1 } });
  const v1 = etag(await srv.req('GET', `/records/${r}`));
  assert.equal(etag(await srv.req('GET', `/records/${r}`)), v1, 'a read does not change the version');
  await srv.req('PUT', `/records/${r}`, { record: { a: 2 } });
  const v2 = etag(await srv.req('GET', `/records/${r}`));
  assert.ok(v2 > v1);
  const v = uniq('v');
  await srv.req('PUT', `/variants/${v}`, { variant: 1 });
  const w1 = etag(await srv.req('GET', `/variants/${v}`));
  assert.ok(w1 > v2, 'versions are unique across objects');
  await srv.req('POST', `/variants/${v}`, { delta: 1 });
  assert.ok(etag(await srv.req('GET', `/variants/${v}`)) > w1, 'an increment is a write');
  // The quick-start spelling reads the same record, with the same version.
  assert.equal(etag(await srv.req('GET', `/table/${r}`)), v2);
});

test('conditional PUT of a record: every form, its status, and nothing written on 412', async () => {
  const r = uniq('r');
  const get = () => srv.req('GET', `/records/${r}`);
  // Absent record.
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 1 }, if_version: 7 }), 412, `record '${r}' does not exist (expected version 7)`);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 1 } }, { 'If-Match': '"7"' }), 412, `record '${r}' does not exist (expected version 7)`);
  expectError(await get(), 404);
  expectSuccess(await srv.req('PUT', `/records/${r}`, { record: { x: 1 }, if_absent: true }), 201, 'record created successfully');
  const v1 = etag(await get());
  // Existing record.
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 2 }, if_absent: true }), 412, `record '${r}' already exists (version ${v1})`);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 2 } }, { 'If-None-Match': '*' }), 412, `record '${r}' already exists (version ${v1})`);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 2 }, if_version: v1 - 1 }), 412, `record '${r}' changed (version ${v1})`);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 2 } }, { 'If-Match': `"${v1 + 1}"` }), 412, `record '${r}' changed (version ${v1})`);
  let g = await get();
  expectSuccess(g, 200, 'record queried successfully', { x: 1 });
  assert.equal(etag(g), v1, 'a failed condition wrote nothing');
  expectSuccess(await srv.req('PUT', `/records/${r}`, { record: { x: 2 }, if_version: v1 }), 200, 'record created successfully');
  const v2 = etag(await get());
  expectSuccess(await srv.req('PUT', `/records/${r}`, { record: { x: 3 } }, { 'If-Match': `"${v2}"` }), 200, 'record created successfully');
  g = await get();
  expectSuccess(g, 200, 'record queried successfully', { x: 3 });
  // if_absent: false is no condition.
  expectSuccess(await srv.req('PUT', `/records/${r}`, { record: { x: 4 }, if_absent: false }), 200, 'record created successfully');
  // Malformed conditions are 400 and write nothing.
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 }, if_version: 1.5 }), 400, "field 'if_version' must be an integer ≥ 0 (a version)");
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 }, if_version: '3' }), 400, /if_version/);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 }, if_absent: 'yes' }), 400, /if_absent/);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 } }, { 'If-Match': '3' }), 400, /If-Match/);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 } }, { 'If-None-Match': '"3"' }), 400, /If-None-Match/);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 }, if_version: 1, if_absent: true }), 400, /at most one condition/);
  expectError(await srv.req('PUT', `/records/${r}`, { record: { x: 9 }, if_version: 1 }, { 'If-Match': '"1"' }), 400, /at most one condition/);
  expectSuccess(await get(), 200, 'record queried successfully', { x: 4 });
});

test('conditional PUT of a variant: every form, its status, and nothing written on 412', async () => {
  const v = uniq('v');
  const get = () => srv.req('GET', `/variants/${v}`);
  expectError(await srv.req('PUT', `/variants/${v}`, { variant: 1, if_version: 3 }), 412, `variant '${v}' does not exist (expected version 3)`);
  expectSuccess(await srv.req('PUT', `/variants/${v}`, { variant: 1 }, { 'If-None-Match': '*' }), 201, 'variant created successfully', { variant: 1 });
  const v1 = etag(await get());
  expectError(await srv.req('PUT', `/variants/${v}`, { variant: 2, if_absent: true }), 412, `variant '${v}' already exists (version ${v1})`);
  expectError(await srv.req('PUT', `/variants/${v}`, { variant: 2, if_version: v1 + 5 }), 412, `variant '${v}' changed (version ${v1})`);
  expectError(await srv.req('PUT', `/variants/${v}`, { variant: 2 }, { 'If-Match': `"${v1 - 1}"` }), 412, `variant '${v}' changed (version ${v1})`);
  expectSuccess(await get(), 200, 'variant queried successfully', { variant: 1 });
  expectSuccess(await srv.req('PUT', `/variants/${v}`, { variant: 2, if_version: v1 }), 200, 'variant created successfully', { variant: 2 });
  const v2 = etag(await get());
  expectSuccess(await srv.req('PUT', `/variants/${v}`, { variant: 3 }, { 'If-Match': `"${v2}"` }), 200, 'variant created successfully', { variant: 3 });
  // The type rule still applies under a matching condition.
  expectError(await srv.req('PUT', `/variants/${v}`, { variant: 'x', if_version: etag(await get()) }), 409);
});

test('PATCH /records: sets merges and null deletes, keeps the ttl, honours if_version; ttl alone sets the lifetime', async () => {
  const r = uniq('r');
  expectError(await srv.req('PATCH', `/records/${r}`, { sets: { a: 1 } }), 404, `record '${r}' does not exist`);
  expectError(await srv.req('PATCH', `/records/${r}`, { ttl: 5 }), 404, `record '${r}' does not exist`);
  await srv.req('PUT', `/records/${r}`, { record: { a: 1, b: { c: 2 }, d: 'x' }, ttl: 100 });
  const v1 = etag(await srv.req('GET', `/records/${r}`));
  expectSuccess(await srv.req('PATCH', `/records/${r}`, { sets: { a: 5, b: null, e: [1] } }), 200, 'record patched successfully');
  let g = await srv.req('GET', `/records/${r}`);
  expectSuccess(g, 200, 'record queried successfully', { a: 5, d: 'x', e: [1] });
  const v2 = etag(g);
  assert.ok(v2 > v1);
  expectError(await srv.req('PATCH', `/records/${r}`, { sets: { a: 6 }, if_version: v1 }), 412, `record '${r}' changed (version ${v2})`);
  expectError(await srv.req('PATCH', `/records/${r}`, { sets: { a: 6 } }, { 'If-Match': `"${v1}"` }), 412, `record '${r}' changed (version ${v2})`);
  expectSuccess(await srv.req('PATCH', `/records/${r}`, { sets: { a: 6 }, if_version: v2 }), 200, 'record patched successfully');
  // Strict body, and something to do.
  expectError(await srv.req('PATCH', `/records/${r}`, { sets: {}, extra: 1 }), 400, /unknown field 'extra'/);
  expectError(await srv.req('PATCH', `/records/${r}`, {}), 400, "PATCH of a record needs 'sets' or 'ttl'");
  expectError(await srv.req('PATCH', `/records/${r}`, { sets: [] }), 400, "field 'sets' must be an object");
  // sets kept the ttl of 100 s.
  await srv.advance(101_000);
  expectError(await srv.req('GET', `/records/${r}`), 404);

  const q = uniq('r');
  await srv.req('PUT', `/records/${q}`, { record: { k: 1 } });
  expectSuccess(await srv.req('PATCH', `/records/${q}`, { ttl: 10 }), 200, 'record patched successfully');
  expectSuccess(await srv.req('GET', `/records/${q}`), 200, 'record queried successfully', { k: 1 });
  expectSuccess(await srv.req('PATCH', `/records/${q}`, { ttl: 0 }), 200, 'record patched successfully'); // PERSIST
  await srv.advance(11_000);
  expectSuccess(await srv.req('GET', `/records/${q}`), 200, 'record queried successfully', { k: 1 });
  expectSuccess(await srv.req('PATCH', `/records/${q}`, { ttl: 10 }), 200, 'record patched successfully'); // EXPIRE
  await srv.advance(11_000);
  expectError(await srv.req('GET', `/records/${q}`), 404);
});

test('PATCH /records with sets and ttl is one write: one change and one version, and a failed precondition changes neither', async () => {
  const r = uniq('r');
  await srv.req('PUT', `/records/${r}`, { record: { a: 1 } });
  const v1 = etag(await srv.req('GET', `/records/${r}`));
  expectError(await srv.req('PATCH', `/records/${r}`, { sets: { a: 2 }, ttl: 5, if_version: v1 + 1000 }), 412, `record '${r}' changed (version ${v1})`);
  await srv.advance(6_000);
  expectSuccess(await srv.req('GET', `/records/${r}`), 200, 'record queried successfully', { a: 1 });

  const w = watch({ port: srv.port, token: srv.token, query: `prefix=${r}` });
  await w.opened;
  expectSuccess(await srv.req('PATCH', `/records/${r}`, { sets: { a: 2 }, ttl: 5, if_version: v1 }), 200, 'record patched successfully');
  const g = await srv.req('GET', `/records/${r}`);
  expectSuccess(g, 200, 'record queried successfully', { a: 2 });
  const v2 = etag(g);
  await srv.req('PUT', `/records/${r}-end`, { record: {} });
  await w.until(() => w.events.some((e) => e.event === 'put' && JSON.parse(e.data).name === `${r}-end`), 10_000, 'the marker');
  w.close();
  // A feed that opens without `since` may still hand over the PUT before it (the shared store polls): only later changes count.
  const mine = w.events.filter((e) => e.event === 'put' && JSON.parse(e.data).name === r).map((e) => JSON.parse(e.data).version as number);
  assert.deepEqual(
    mine.filter((v) => v > v1),
    [v2],
    'the PATCH is one change with the version GET reports',
  );
  await srv.advance(6_000);
  expectError(await srv.req('GET', `/records/${r}`), 404);
});

test('30 concurrent PATCHes of one record, each setting its own field, three rounds: every field is there, no merge is lost', async () => {
  const r = uniq('r');
  await srv.req('PUT', `/records/${r}`, { record: { base: 1 } });
  const want: Record<string, number> = { base: 1 };
  for (let round = 0; round < 3; round++) {
    const res = await pool([...Array(30).keys()], 30, (i) => srv.req('PATCH', `/records/${r}`, { sets: { [`f${round}_${i}`]: i } }));
    for (const x of res) expectSuccess(x, 200, 'record patched successfully');
    for (let i = 0; i < 30; i++) want[`f${round}_${i}`] = i;
    const got = (await srv.req('GET', `/records/${r}`)).body.data as Record<string, number>;
    assert.deepEqual(
      Object.keys(want).filter((k) => got[k] !== want[k]),
      [],
      `round ${round}: fields lost`,
    );
  }
});

test("PATCH /variants and /tables with ttl alone set the lifetime; a table's rows follow; mixing forms is 400", async () => {
  const v = uniq('v');
  expectError(await srv.req('PATCH', `/variants/${v}`, { ttl: 5 }), 404);
  await srv.req('PUT', `/variants/${v}`, { variant: 2.5, ttl: 5 });
  expectSuccess(await srv.req('PATCH', `/variants/${v}`, { ttl: 0 }), 200, 'variant patched successfully');
  expectError(await srv.req('PATCH', `/variants/${v}`, {}), 400, "field 'ttl' is required (an integer ≥ 0)");
  expectError(await srv.req('PATCH', `/variants/${v}`, { ttl: 1, delta: 1 }), 400, /unknown field 'delta'/);
  await srv.advance(6_000);
  expectSuccess(await srv.req('GET', `/variants/${v}`), 200, 'variant queried successfully', { variant: 2.5 });
  expectSuccess(await srv.req('PATCH', `/variants/${v}`, { ttl: 3 }), 200, 'variant patched successfully');
  await srv.advance(4_000);
  expectError(await srv.req('GET', `/variants/${v}`), 404);

  const t = uniq('t');
  await srv.req('PUT', `/tables/${t}`);
  for (let i = 0; i < 5; i++) await srv.req('POST', `/tables/${t}/rows`, { rows: { i } });
  expectError(await srv.req('PATCH', `/tables/${t}`, { ttl: 5, wheres: {} }), 400, /cannot be combined/);
  expectError(await srv.req('PATCH', `/tables/${t}`, { ttl: 5, sets: {} }), 400, /cannot be combined/);
  expectError(await srv.req('PATCH', `/tables/${t}`, { wheres: {} }), 400, "field 'sets' is required (an object)");
  expectError(await srv.req('PATCH', `/tables/${t}`, { sets: {} }), 400, "field 'wheres' is required (an object)");
  expectSuccess(await srv.req('PATCH', `/tables/${t}`, { ttl: 10 }), 200, 'table patched successfully');
  // The old form still patches rows.
  expectSuccess(await srv.req('PATCH', `/tables/${t}`, { wheres: { i: 1 }, sets: { j: 1 } }), 200, 'table rows patched successfully');
  expectSuccess(await srv.req('GET', `/tables/${t}/rows`, { wheres: { j: 1 } }), 200, 'table queried rows successfully', [{ i: 1, j: 1 }]);
  await srv.advance(11_000);
  expectError(await srv.req('GET', `/tables/${t}`), 404);
  expectError(await srv.req('PATCH', `/tables/${t}`, { ttl: 10 }), 404);
});

test('a transaction record check takes version', async () => {
  const r = uniq('r');
  await srv.req('PUT', `/records/${r}`, { record: { n: 1 } });
  const v = etag(await srv.req('GET', `/records/${r}`));
  const txn = (version: number) =>
    srv.req('POST', '/txns', {
      checks: [{ kind: 'record', name: r, version }],
      mutations: [{ kind: 'record', name: r, operation: 'PUT', values: { n: version } }],
    });
  expectError(await txn(v + 1), 409, `transaction check 0 failed: record '${r}' has version ${v}, not ${v + 1}`);
  expectSuccess(await txn(v), 200, 'transaction execute successfully', { results: [{}] });
  expectError(await srv.req('POST', '/txns', { checks: [{ kind: 'record', name: uniq('none'), version: 1 }], mutations: [] }), 409, /does not exist/);
  expectError(await srv.req('POST', '/txns', { checks: [{ kind: 'record', name: r, version: -1 }], mutations: [] }), 400, /version/);
});

test('40 concurrent transactions checking one record version and writing it (with a counter add, then alone): one wins per round, the rest 409 and change nothing', async () => {
  const r = uniq('r');
  const c = uniq('c');
  await srv.req('PUT', `/records/${r}`, { record: { n: 0 } });
  expectSuccess(await srv.req('PUT', `/variants/${c}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  for (let round = 1; round <= 6; round++) {
    // Rounds 4 to 6 write the checked record alone: one object, still locked before its check.
    const add = round <= 3;
    const v = etag(await srv.req('GET', `/records/${r}`));
    const res = await pool([...Array(40).keys()], 40, (i) =>
      srv.req('POST', '/txns', {
        checks: [{ kind: 'record', name: r, version: v }],
        mutations: [
          { kind: 'record', name: r, operation: 'PUT', values: { n: round, by: i } },
          ...(add ? [{ kind: 'variant', name: c, operation: 'ADD', delta: 1 }] : []),
        ],
      }),
    );
    assert.equal(res.filter((x) => x.status === 200).length, 1, `round ${round}: ${res.map((x) => x.status).join(',')}`);
    for (const x of res)
      if (x.status !== 200)
        expectError(x, 409, `transaction check 0 failed: record '${r}' has version ${etag(await srv.req('GET', `/records/${r}`))}, not ${v}`);
    expectSuccess(await srv.req('GET', `/variants/${c}`), 200, 'variant queried successfully', { variant: Math.min(round, 3) });
  }
});

test('100 concurrent read-modify-write loops with if_version retries apply every increment exactly once', async () => {
  const r = uniq('counter');
  await srv.req('PUT', `/records/${r}`, { record: { n: 0 } });
  const loops = 100;
  const perLoop = 3;
  let conflicts = 0;
  await pool(
    Array.from({ length: loops }, (_, i) => i),
    loops,
    async () => {
      for (let k = 0; k < perLoop; k++) {
        for (;;) {
          const g = await srv.req('GET', `/records/${r}`);
          const n = (g.body.data as { n: number }).n;
          const w = await srv.req('PUT', `/records/${r}`, { record: { n: n + 1 } }, { 'If-Match': String(g.headers.etag) });
          if (w.status === 200) break;
          assert.equal(w.status, 412, w.raw);
          conflicts++;
        }
      }
    },
  );
  const final = await srv.req('GET', `/records/${r}`);
  assert.equal(final.body.data.n, loops * perLoop);
  assert.ok(conflicts > 0, 'the loops never collided, so the test proved nothing');
  console.log(`rmw: ${loops} loops x ${perLoop} increments, ${conflicts} retries after 412`);
});

test('50 concurrent if_absent creates of one new record and one new variant: exactly one wins each, the rest are 412', async () => {
  const r = uniq('r');
  const v = uniq('v');
  const n = 50;
  const rs = await Promise.all(Array.from({ length: n }, (_, i) => srv.req('PUT', `/records/${r}`, { record: { i }, if_absent: true })));
  const vs = await Promise.all(Array.from({ length: n }, (_, i) => srv.req('PUT', `/variants/${v}`, { variant: i }, { 'If-None-Match': '*' })));
  for (const [what, all] of [
    ['record', rs],
    ['variant', vs],
  ] as const) {
    const won = all.filter((x) => x.status === 201);
    assert.equal(won.length, 1, `${what}: ${all.map((x) => x.status).join(',')}`);
    for (const x of all) if (x.status !== 201) assert.equal(x.status, 412, x.raw);
  }
  // The winner's value is the one stored, and every 412 named its version.
  const g = await srv.req('GET', `/records/${r}`);
  const winner = rs.findIndex((x) => x.status === 201);
  expectSuccess(g, 200, 'record queried successfully', { i: winner });
  for (const x of rs) if (x.status === 412) expectError(x, 412, `record '${r}' already exists (version ${etag(g)})`);
  const gv = await srv.req('GET', `/variants/${v}`);
  expectSuccess(gv, 200, 'variant queried successfully', { variant: vs.findIndex((x) => x.status === 201) });
});

test('versions survive a restart', async () => {
  const r = uniq('r');
  const v = uniq('v');
  await srv.req('PUT', `/records/${r}`, { record: { a: 1 } });
  await srv.req('PUT', `/variants/${v}`, { variant: 'x' });
  const vr = etag(await srv.req('GET', `/records/${r}`));
  const vv = etag(await srv.req('GET', `/variants/${v}`));
  await srv.restart();
  assert.equal(etag(await srv.req('GET', `/records/${r}`)), vr);
  assert.equal(etag(await srv.req('GET', `/variants/${v}`)), vv);
  expectSuccess(await srv.req('PUT', `/records/${r}`, { record: { a: 2 }, if_version: vr }), 200, 'record created successfully');
});

test(
  'versions survive compaction (and a restart after it); the feed then answers an older since with reset',
  { skip: onlyLog("compaction of the log's segment files and the log's change feed") },
  async () => {
    // Small segments and enough overwritten data for the 10-second compaction timer to act.
    const s = await PithosServer.start({ fsync: 'never', args: ['--segment-mb', '1'] });
    try {
      const keep = Array.from({ length: 20 }, (_, i) => `keep${i}`);
      for (const k of keep) await s.req('PUT', `/records/${k}`, { record: { k } });
      await s.req('PUT', '/variants/v', { variant: 1.5 });
      const before = new Map<string, number>();
      for (const k of keep) before.set(k, etag(await s.req('GET', `/records/${k}`)));
      const vv = etag(await s.req('GET', '/variants/v'));
      const big = 'x'.repeat(100_000);
      await pool(
        Array.from({ length: 400 }, (_, i) => i),
        4,
        async (i) => {
          assert.ok((await s.req('PUT', `/records/hot${i % 4}`, { record: { big, i } })).status < 300);
        },
      );
      const deadline = Date.now() + 40_000;
      while (!/compacted \d+ segment/.test(s.stdout + s.stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.match(s.stdout + s.stderr, /compacted \d+ segment/, 'no compaction ran');
      for (const k of keep) assert.equal(etag(await s.req('GET', `/records/${k}`)), before.get(k), `${k} after compaction`);
      assert.equal(etag(await s.req('GET', '/variants/v')), vv);
      await s.restart();
      for (const k of keep) assert.equal(etag(await s.req('GET', `/records/${k}`)), before.get(k), `${k} after compaction and restart`);
      assert.equal(etag(await s.req('GET', '/variants/v')), vv);
      // The log no longer holds the first batches exactly: resuming from 0 is a reset.
      const w = watch({ port: s.port, token: s.token, query: 'since=0' });
      await w.until(() => w.events.length >= 1, 10_000, 'reset');
      w.close();
      assert.equal(w.events[0].event, 'reset');
    } finally {
      await s.close();
    }
  },
);
