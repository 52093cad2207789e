/** Black-box tests of lifetimes (docs/api.md, "Lifetimes (ttl)") on tables, records and variants, driven by the test clock. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, uniq } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start({ testClock: true });
});
after(async () => {
  await srv?.close();
});

const T = (n: string) => `/tables/${encodeURIComponent(n)}`;
const R = (n: string) => `/records/${encodeURIComponent(n)}`;
const Q = (n: string) => `/table/${encodeURIComponent(n)}`;
const V = (n: string) => `/variants/${encodeURIComponent(n)}`;

async function keyCount(): Promise<number> {
  const r = await srv.req('GET', '/health');
  assert.equal(r.status, 200, r.raw);
  return r.body.data.key_count as number;
}

// ---- restart-related ttl tests first, before this file moves the test clock ----

test('a ttl survives a restart: still visible after restart, gone once its time has passed', async () => {
  const id = uniq('rttl');
  const v = uniq('vttl');
  const t = uniq('tttl');
  expectSuccess(await srv.req('PUT', R(id), { record: { a: 1 }, ttl: 60 }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', V(v), { variant: 1, ttl: 60 }), 201, 'variant created successfully', { variant: 1 });
  expectSuccess(await srv.req('PUT', T(t), { ttl: 60 }), 201, 'table created successfully');
  await srv.restart('SIGKILL');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { a: 1 });
  expectSuccess(await srv.req('GET', V(v)), 200, 'variant queried successfully', { variant: 1 });
  expectSuccess(await srv.req('GET', T(t)), 200, 'table queried successfully', {});
  await srv.advance(61_000);
  expectError(await srv.req('GET', R(id)), 404);
  expectError(await srv.req('GET', V(v)), 404);
  expectError(await srv.req('GET', T(t)), 404);
});

test('an object expired in real time stays gone after a restart', async () => {
  // real clock here (a restart resets any test-clock offset), so this costs ~1.1 s
  await srv.restart('SIGTERM');
  const id = uniq('rgone');
  const v = uniq('vgone');
  expectSuccess(await srv.req('PUT', R(id), { record: { a: 1 }, ttl: 1 }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', V(v), { variant: 'x', ttl: 1 }), 201, 'variant created successfully', { variant: 'x' });
  await new Promise((r) => setTimeout(r, 1100));
  expectError(await srv.req('GET', R(id)), 404);
  expectError(await srv.req('GET', V(v)), 404);
  await srv.restart('SIGKILL');
  expectError(await srv.req('GET', R(id)), 404);
  expectError(await srv.req('GET', V(v)), 404);
  expectSuccess(await srv.req('PUT', R(id), { record: { b: 2 } }), 201, 'record created successfully');
});

test('the test clock endpoint answers 200 with the envelope', async () => {
  const r = await srv.req('POST', '/_test/clock', { advance_ms: 0 });
  assert.equal(r.status, 200, r.raw);
  assert.equal(r.body.status, 'success');
  assert.equal(typeof r.body.message, 'string');
});

test('table ttl: visible before, 404 right after expiry, recreatable empty', async () => {
  const t = uniq('tt');
  const keep = uniq('tkeep');
  expectSuccess(await srv.req('PUT', T(t), { ttl: 10 }), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', T(keep)), 201, 'table created successfully');
  expectSuccess(await srv.req('POST', `${T(t)}/rows`, { rows: { a: 1 } }), 201, 'table rows insert successfully', { t_id: 1 });
  await srv.advance(9000);
  expectSuccess(await srv.req('GET', T(t)), 200, 'table queried successfully', { '1': { a: 1 } });
  expectSuccess(await srv.req('POST', `${T(t)}/rows`, { rows: { a: 2 } }), 201, 'table rows insert successfully', { t_id: 2 });
  await srv.advance(1500);
  expectError(await srv.req('GET', T(t)), 404);
  expectError(await srv.req('GET', `${T(t)}/rows`, { wheres: {} }), 404);
  expectError(await srv.req('POST', `${T(t)}/query`, { wheres: {} }), 404);
  expectError(await srv.req('POST', `${T(t)}/rows`, { rows: { a: 3 } }), 404);
  expectError(await srv.req('PATCH', T(t), { wheres: {}, sets: { a: 0 } }), 404);
  expectError(await srv.req('DELETE', `${T(t)}/rows`, { wheres: {} }), 404);
  expectError(await srv.req('DELETE', T(t)), 404);
  // the table without ttl is still there
  expectSuccess(await srv.req('GET', T(keep)), 200, 'table queried successfully', {});
  // the name is free again: PUT creates (not 409), empty, t_id from 1
  expectSuccess(await srv.req('PUT', T(t)), 201, 'table created successfully');
  expectSuccess(await srv.req('GET', T(t)), 200, 'table queried successfully', {});
  expectSuccess(await srv.req('POST', `${T(t)}/rows`, { rows: { b: 1 } }), 201, 'table rows insert successfully', { t_id: 1 });
});

test('record ttl: visible before, 404 right after expiry on both spellings; PUT afterwards is 201', async () => {
  const id = uniq('rt');
  expectSuccess(await srv.req('PUT', R(id), { record: { a: 1 }, ttl: 5 }), 201, 'record created successfully');
  const k = uniq('qt');
  expectSuccess(await srv.req('PUT', Q(k), { table: { q: 1 }, ttl: 5 }), 201, 'record created successfully');
  // 500 ms of real time left for the three reads: a loaded machine (or a
  // shared store, one more process per request) can take more than 100.
  await srv.advance(4500);
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { a: 1 });
  expectSuccess(await srv.req('POST', R(id), { column: 'a' }), 200, 'search completed successfully', [1]);
  expectSuccess(await srv.req('GET', Q(k)), 200, 'record queried successfully', { q: 1 });
  await srv.advance(600);
  expectError(await srv.req('GET', R(id)), 404);
  expectError(await srv.req('GET', Q(id)), 404);
  expectError(await srv.req('POST', R(id), { column: 'a' }), 404);
  expectError(await srv.req('DELETE', R(id)), 404);
  expectError(await srv.req('GET', R(k)), 404);
  expectError(await srv.req('DELETE', Q(k)), 404);
  expectSuccess(await srv.req('PUT', R(id), { record: { a: 2 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { a: 2 });
});

test('record replace takes the new ttl (none → no expiry; new ttl → that ttl)', async () => {
  const id = uniq('rr');
  expectSuccess(await srv.req('PUT', R(id), { record: { v: 1 }, ttl: 5 }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', R(id), { record: { v: 2 } }), 200, 'record created successfully');
  await srv.advance(10_000);
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { v: 2 });

  const id2 = uniq('rr2');
  expectSuccess(await srv.req('PUT', R(id2), { record: { v: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', R(id2), { record: { v: 2 }, ttl: 3 }), 200, 'record created successfully');
  await srv.advance(3500);
  expectError(await srv.req('GET', R(id2)), 404);
});

test('variant ttl: visible before, 404 right after expiry; PUT afterwards is 201 with any type', async () => {
  const n = uniq('vt');
  expectSuccess(await srv.req('PUT', V(n), { variant: 1, ttl: 5 }), 201, 'variant created successfully', { variant: 1 });
  await srv.advance(4000);
  expectSuccess(await srv.req('POST', V(n), { delta: 1 }), 200, 'variant incremented successfully', { variant: 2 });
  expectSuccess(await srv.req('GET', V(n)), 200, 'variant queried successfully', { variant: 2 });
  await srv.advance(1500);
  expectError(await srv.req('GET', V(n)), 404);
  expectError(await srv.req('POST', V(n), { delta: 1 }), 404);
  expectError(await srv.req('DELETE', V(n)), 404);
  expectSuccess(await srv.req('PUT', V(n), { variant: 'new type' }), 201, 'variant created successfully', { variant: 'new type' });
});

test('variant replace of the same type takes the new ttl', async () => {
  const n = uniq('vr');
  expectSuccess(await srv.req('PUT', V(n), { variant: 1, ttl: 3 }), 201, 'variant created successfully', { variant: 1 });
  expectSuccess(await srv.req('PUT', V(n), { variant: 2 }), 200, 'variant created successfully', { variant: 2 });
  await srv.advance(5000);
  expectSuccess(await srv.req('GET', V(n)), 200, 'variant queried successfully', { variant: 2 });
  expectSuccess(await srv.req('PUT', V(n), { variant: 3, ttl: 2 }), 200, 'variant created successfully', { variant: 3 });
  await srv.advance(2500);
  expectError(await srv.req('GET', V(n)), 404);
});

test('a rejected (409) variant PUT does not change the ttl', async () => {
  const n = uniq('v409');
  expectSuccess(await srv.req('PUT', V(n), { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expectError(await srv.req('PUT', V(n), { variant: 'x', ttl: 1 }), 409);
  await srv.advance(2000);
  expectSuccess(await srv.req('GET', V(n)), 200, 'variant queried successfully', { variant: 1 });
});

test('a rejected (409) table PUT does not change the ttl', async () => {
  const t = uniq('t409');
  expectSuccess(await srv.req('PUT', T(t)), 201, 'table created successfully');
  expectError(await srv.req('PUT', T(t), { ttl: 1 }), 409);
  await srv.advance(2000);
  expectSuccess(await srv.req('GET', T(t)), 200, 'table queried successfully', {});
});

test('ttl 0 or omitted → no expiry; 2147483647 accepted', async () => {
  const names = {
    t0: uniq('t0'),
    tn: uniq('tn'),
    tmax: uniq('tmax'),
    r0: uniq('r0'),
    rn: uniq('rn'),
    v0: uniq('v0'),
    vn: uniq('vn'),
    rmax: uniq('rmax'),
    vmax: uniq('vmax'),
  };
  expectSuccess(await srv.req('PUT', T(names.t0), { ttl: 0 }), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', T(names.tn), {}), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', T(names.tmax), { ttl: 2147483647 }), 201, 'table created successfully');
  expectSuccess(await srv.req('PUT', R(names.r0), { record: { a: 1 }, ttl: 0 }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', R(names.rn), { record: { a: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', R(names.rmax), { record: { a: 1 }, ttl: 2147483647 }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', V(names.v0), { variant: 1, ttl: 0 }), 201, 'variant created successfully', { variant: 1 });
  expectSuccess(await srv.req('PUT', V(names.vn), { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expectSuccess(await srv.req('PUT', V(names.vmax), { variant: 1, ttl: 2147483647 }), 201, 'variant created successfully', { variant: 1 });
  await srv.advance(1000 * 86400 * 400); // 400 days
  for (const n of [names.t0, names.tn, names.tmax]) expectSuccess(await srv.req('GET', T(n)), 200, 'table queried successfully', {});
  for (const n of [names.r0, names.rn, names.rmax]) expectSuccess(await srv.req('GET', R(n)), 200, 'record queried successfully', { a: 1 });
  for (const n of [names.v0, names.vn, names.vmax]) expectSuccess(await srv.req('GET', V(n)), 200, 'variant queried successfully', { variant: 1 });
});

test('bad ttl (negative, fractional, string, boolean, null, > 2147483647) → 400 and nothing created', async () => {
  const bad: unknown[] = [-1, -0.5, 1.5, '10', '0', true, false, null, [1], { s: 1 }, 2147483648, 1e12];
  for (const ttl of bad) {
    const t = uniq('bt');
    const tr = await srv.req('PUT', T(t), { ttl });
    assert.equal(tr.status, 400, `PUT table ttl ${JSON.stringify(ttl)}: ${tr.status} ${tr.raw}`);
    expectError(tr, 400);
    expectError(await srv.req('GET', T(t)), 404);

    const r = uniq('br');
    const rr = await srv.req('PUT', R(r), { record: { a: 1 }, ttl });
    assert.equal(rr.status, 400, `PUT record ttl ${JSON.stringify(ttl)}: ${rr.status} ${rr.raw}`);
    expectError(rr, 400);
    expectError(await srv.req('PUT', Q(r), { table: { a: 1 }, ttl }), 400);
    expectError(await srv.req('GET', R(r)), 404);

    const v = uniq('bv');
    const vr = await srv.req('PUT', V(v), { variant: 1, ttl });
    assert.equal(vr.status, 400, `PUT variant ttl ${JSON.stringify(ttl)}: ${vr.status} ${vr.raw}`);
    expectError(vr, 400);
    expectError(await srv.req('GET', V(v)), 404);
  }
});

test('a bad ttl on a replace → 400 and the old value stays', async () => {
  const r = uniq('brr');
  expectSuccess(await srv.req('PUT', R(r), { record: { a: 1 } }), 201, 'record created successfully');
  expectError(await srv.req('PUT', R(r), { record: { a: 2 }, ttl: -5 }), 400);
  expectSuccess(await srv.req('GET', R(r)), 200, 'record queried successfully', { a: 1 });
  const v = uniq('bvr');
  expectSuccess(await srv.req('PUT', V(v), { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expectError(await srv.req('PUT', V(v), { variant: 2, ttl: 'x' }), 400);
  expectSuccess(await srv.req('GET', V(v)), 200, 'variant queried successfully', { variant: 1 });
});

test('expired objects leave key_count at once', async () => {
  await srv.advance(1000 * 86400 * 30); // flush any earlier ttl of this file
  const k0 = await keyCount();
  const t = uniq('kt');
  const r = uniq('kr');
  const v = uniq('kv');
  expectSuccess(await srv.req('PUT', T(t), { ttl: 2 }), 201, 'table created successfully');
  expectSuccess(await srv.req('POST', `${T(t)}/rows`, { rows: { a: 1 } }), 201, 'table rows insert successfully', { t_id: 1 });
  expectSuccess(await srv.req('PUT', R(r), { record: {}, ttl: 2 }), 201, 'record created successfully');
  expectSuccess(await srv.req('PUT', V(v), { variant: true, ttl: 2 }), 201, 'variant created successfully', { variant: true });
  assert.equal(await keyCount(), k0 + 3, 'a table counts once, not per row');
  await srv.advance(2500);
  assert.equal(await keyCount(), k0);
});
