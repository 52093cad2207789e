/** Black-box tests of the lock namespace (docs/api.md, "Locks"). */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, rawRequest, uniq, type Res } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

const L = (n: string) => `/locks/${encodeURIComponent(n)}`;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface Grant {
  token: string;
  fence: number;
}

function expectGrant(r: Res, status: number, message: string): Grant {
  expectSuccess(r, status, message, r.body?.data);
  const d = r.body.data;
  assert.deepEqual(Object.keys(d).sort(), ['fence', 'token'], `grant data keys: ${r.raw}`);
  assert.equal(typeof d.token, 'string', r.raw);
  assert.ok(d.token.length > 0, r.raw);
  assert.ok(Number.isInteger(d.fence), `fence must be an integer: ${r.raw}`);
  return d as Grant;
}

async function acquire(n: string, body: Record<string, unknown> = { ttl: 60 }): Promise<Grant> {
  return expectGrant(await srv.req('PUT', L(n), body), 201, 'lock created successfully');
}

async function state(n: string): Promise<Record<string, unknown>> {
  const r = await srv.req('GET', L(n));
  expectSuccess(r, 200, 'lock queried successfully', r.body?.data);
  return r.body.data;
}

// ---- tests that depend on the real clock and on restart come first (before the test clock moves) ----

test('acquire 201 {token, fence}; GET shape; held → 423 "lock \'<name>\' is held"', async () => {
  const n = uniq('shape');
  const t0 = Date.now();
  const g = await acquire(n, { ttl: 30, holder: 'worker-1' });
  const s = await state(n);
  assert.deepEqual(Object.keys(s).sort(), ['acquired_at', 'expires_in_ms', 'fence', 'held', 'holder', 'ttl']);
  assert.equal(s.held, true);
  assert.equal(s.holder, 'worker-1');
  assert.equal(s.ttl, 30);
  assert.equal(s.fence, g.fence);
  assert.ok(Number.isInteger(s.expires_in_ms), `expires_in_ms must be an integer: ${JSON.stringify(s)}`);
  assert.ok((s.expires_in_ms as number) > 25000 && (s.expires_in_ms as number) <= 30000, `expires_in_ms ${s.expires_in_ms}`);
  assert.match(String(s.acquired_at), ISO);
  const at = Date.parse(String(s.acquired_at));
  assert.ok(Math.abs(at - t0) < 5000, `acquired_at ${s.acquired_at} far from now`);

  const r = await srv.req('PUT', L(n), { ttl: 30, holder: 'worker-2' });
  expectError(r, 423, `lock '${n}' is held`);
  // the failed acquire changed nothing
  const s2 = await state(n);
  assert.equal(s2.holder, 'worker-1');
  assert.equal(s2.fence, g.fence);
  assert.equal(s2.acquired_at, s.acquired_at);
});

test('holder omitted → null', async () => {
  const n = uniq('nohold');
  await acquire(n, { ttl: 10 });
  const s = await state(n);
  assert.equal(s.holder, null);
  assert.equal(s.ttl, 10);
});

test('renew returns a new token; only the newest token renews or releases', async () => {
  const n = uniq('renew');
  const g1 = await acquire(n, { ttl: 20 });
  const r = await srv.req('PATCH', L(n), { token: g1.token });
  const g2 = expectGrant(r, 200, 'lease acquired successfully');
  assert.notEqual(g2.token, g1.token);
  assert.ok(g2.fence >= g1.fence, 'renewal must not lower the fence');
  // old token → 403, no effect
  expectError(await srv.req('PATCH', L(n), { token: g1.token }), 403);
  expectError(await srv.req('DELETE', L(n), { token: g1.token }), 403);
  // wrong token → 403
  expectError(await srv.req('PATCH', L(n), { token: 'not-the-token' }), 403);
  expectError(await srv.req('DELETE', L(n), { token: 'not-the-token' }), 403);
  const s = await state(n);
  assert.equal(s.held, true);
  assert.equal(s.ttl, 20, 'renewal without ttl keeps the original lease length');
  // renew again with a new ttl
  const g3 = expectGrant(await srv.req('PATCH', L(n), { token: g2.token, ttl: 100 }), 200, 'lease acquired successfully');
  assert.notEqual(g3.token, g2.token);
  assert.notEqual(g3.token, g1.token);
  const s3 = await state(n);
  assert.equal(s3.ttl, 100);
  assert.ok((s3.expires_in_ms as number) > 95000 && (s3.expires_in_ms as number) <= 100000, `expires_in_ms ${s3.expires_in_ms}`);
  expectError(await srv.req('DELETE', L(n), { token: g2.token }), 403);
  // release with the newest token
  expectSuccess(await srv.req('DELETE', L(n), { token: g3.token }), 200, 'lock deleted successfully');
  expectError(await srv.req('GET', L(n)), 404);
  // now not held: every operation → 404
  expectError(await srv.req('PATCH', L(n), { token: g3.token }), 404);
  expectError(await srv.req('DELETE', L(n), { token: g3.token }), 404);
});

test('never-created lock → 404 on GET, PATCH, DELETE', async () => {
  const n = uniq('ghost');
  expectError(await srv.req('GET', L(n)), 404);
  expectError(await srv.req('PATCH', L(n), { token: 'x' }), 404);
  expectError(await srv.req('DELETE', L(n), { token: 'x' }), 404);
});

test('PATCH/DELETE: missing or non-string token → 400, no effect', async () => {
  const n = uniq('notok');
  const g = await acquire(n, { ttl: 30 });
  for (const body of [undefined, {}, { token: null }, { token: 1 }, { token: [g.token] }, { token: { t: g.token } }]) {
    expectError(await srv.req('PATCH', L(n), body), 400);
    expectError(await srv.req('DELETE', L(n), body), 400);
  }
  assert.equal((await state(n)).held, true);
  // the original token still works
  expectSuccess(await srv.req('DELETE', L(n), { token: g.token }), 200, 'lock deleted successfully');
});

test('PATCH with an invalid ttl → 400, lease unchanged, token still valid', async () => {
  const n = uniq('badrenew');
  const g = await acquire(n, { ttl: 30 });
  for (const ttl of [0, -1, 1.5, '10', true, null, 2147483648]) {
    expectError(await srv.req('PATCH', L(n), { token: g.token, ttl }), 400);
  }
  assert.equal((await state(n)).ttl, 30);
  expectGrant(await srv.req('PATCH', L(n), { token: g.token }), 200, 'lease acquired successfully');
});

test('ttl is required, integer ≥ 1 → otherwise 400 and nothing acquired', async () => {
  const n = uniq('ttl');
  for (const body of [
    undefined,
    {},
    { ttl: 0 },
    { ttl: -1 },
    { ttl: 1.5 },
    { ttl: '10' },
    { ttl: true },
    { ttl: null },
    { ttl: [5] },
    { ttl: 2147483648 },
    { holder: 'x' },
  ]) {
    expectError(await srv.req('PUT', L(n), body), 400);
  }
  expectError(await srv.req('GET', L(n)), 404);
  await acquire(n, { ttl: 1 });
});

test('holder must be a string of at most 255 bytes', async () => {
  const ok = uniq('h255');
  await acquire(ok, { ttl: 10, holder: 'h'.repeat(255) });
  assert.equal((await state(ok)).holder, 'h'.repeat(255));
  const ok2 = uniq('h255u');
  const multi = 'é'.repeat(127) + 'x'; // 255 bytes
  await acquire(ok2, { ttl: 10, holder: multi });
  assert.equal((await state(ok2)).holder, multi);
  const n = uniq('hbad');
  for (const holder of ['h'.repeat(256), 'é'.repeat(128) /* 128 chars, 256 bytes */, 5, true, ['x'], { h: 1 }]) {
    expectError(await srv.req('PUT', L(n), { ttl: 10, holder }), 400);
  }
  expectError(await srv.req('GET', L(n)), 404);
});

test('fence strictly increases across acquires of one name', async () => {
  const n = uniq('fence');
  const fences: number[] = [];
  for (let i = 0; i < 4; i++) {
    const g = await acquire(n, { ttl: 60 });
    fences.push(g.fence);
    expectSuccess(await srv.req('DELETE', L(n), { token: g.token }), 200, 'lock deleted successfully');
  }
  for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences}`);
});

test('200 concurrent acquisitions: exactly one 201, the rest 423', async () => {
  const n = uniq('race');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
  try {
    const body = Buffer.from(JSON.stringify({ ttl: 60 }));
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        rawRequest({
          port: srv.port,
          method: 'PUT',
          path: L(n),
          headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Content-Length': body.length },
          body,
          agent,
        }),
      ),
    );
    const won = results.filter((r) => r.status === 201);
    const lost = results.filter((r) => r.status === 423);
    const other = results.filter((r) => r.status !== 201 && r.status !== 423);
    assert.equal(
      other.length,
      0,
      `unexpected answers: ${other
        .slice(0, 3)
        .map((r) => `${r.status} ${r.raw}`)
        .join('; ')}`,
    );
    assert.equal(won.length, 1, `${won.length} winners`);
    assert.equal(lost.length, 199);
    for (const r of lost) expectError(r, 423, `lock '${n}' is held`);
    assert.equal((await state(n)).fence, won[0]!.body.data.fence);
  } finally {
    agent.destroy();
  }
});

test('lock names are ordinary (__proto__)', async () => {
  const g = await acquire('__proto__', { ttl: 5 });
  expectError(await srv.req('PUT', L('__proto__'), { ttl: 5 }), 423, "lock '__proto__' is held");
  expectSuccess(await srv.req('DELETE', L('__proto__'), { token: g.token }), 200, 'lock deleted successfully');
});

test('held lock survives restart with original expiry, token, holder and fence; fence keeps increasing', async () => {
  const held = uniq('keep');
  const g = await acquire(held, { ttl: 120, holder: 'me' });
  const before = await state(held);
  const tBefore = Date.now();

  const rel = uniq('rel');
  const gr = await acquire(rel, { ttl: 60 });
  expectSuccess(await srv.req('DELETE', L(rel), { token: gr.token }), 200, 'lock deleted successfully');

  const info = await srv.restart('SIGTERM');
  assert.equal(info.code, 0);
  const after = await state(held);
  const elapsed = Date.now() - tBefore;
  assert.equal(after.held, true);
  assert.equal(after.holder, 'me');
  assert.equal(after.ttl, 120);
  assert.equal(after.fence, before.fence);
  assert.equal(after.acquired_at, before.acquired_at);
  const eb = before.expires_in_ms as number;
  const ea = after.expires_in_ms as number;
  assert.ok(ea <= eb, `expiry moved later across restart: ${eb} → ${ea}`);
  assert.ok(ea >= eb - elapsed - 1000, `expiry moved earlier across restart: ${eb} → ${ea} (elapsed ${elapsed} ms)`);
  expectError(await srv.req('PUT', L(held), { ttl: 5 }), 423, `lock '${held}' is held`);

  // fence after restart is above every fence issued before it
  const g2 = await acquire(rel, { ttl: 60 });
  assert.ok(g2.fence > gr.fence, `fence after restart ${g2.fence} ≤ ${gr.fence}`);

  // the pre-restart token still releases; a SIGKILL restart keeps fences increasing too
  expectSuccess(await srv.req('DELETE', L(held), { token: g.token }), 200, 'lock deleted successfully');
  expectSuccess(await srv.req('DELETE', L(rel), { token: g2.token }), 200, 'lock deleted successfully');
  await srv.restart('SIGKILL');
  const g3 = await acquire(rel, { ttl: 60 });
  assert.ok(g3.fence > g2.fence, `fence after SIGKILL restart ${g3.fence} ≤ ${g2.fence}`);
  expectError(await srv.req('GET', L(held)), 404);
});

// ---- tests that move the test clock ----

test('lease expiry via the test clock → 404 and acquirable again with a higher fence', async () => {
  const n = uniq('exp');
  const g = await acquire(n, { ttl: 5 });
  await srv.advance(4000);
  const s = await state(n);
  assert.equal(s.held, true);
  assert.ok((s.expires_in_ms as number) <= 1000 && (s.expires_in_ms as number) > 0, `expires_in_ms ${s.expires_in_ms}`);
  expectError(await srv.req('PUT', L(n), { ttl: 5 }), 423);
  await srv.advance(1500);
  expectError(await srv.req('GET', L(n)), 404);
  expectError(await srv.req('PATCH', L(n), { token: g.token }), 404);
  expectError(await srv.req('DELETE', L(n), { token: g.token }), 404);
  const g2 = await acquire(n, { ttl: 5 });
  assert.ok(g2.fence > g.fence);
  assert.notEqual(g2.token, g.token);
  // the expired holder's token does not work on the new lease
  expectError(await srv.req('DELETE', L(n), { token: g.token }), 403);
});

test('renewal extends the lease to ttl seconds from now', async () => {
  const n = uniq('ext');
  const g = await acquire(n, { ttl: 10 });
  await srv.advance(8000);
  const g2 = expectGrant(await srv.req('PATCH', L(n), { token: g.token }), 200, 'lease acquired successfully');
  const s = await state(n);
  assert.ok((s.expires_in_ms as number) > 9000 && (s.expires_in_ms as number) <= 10000, `expires_in_ms after renewal ${s.expires_in_ms}`);
  await srv.advance(9000); // 17 s after acquire: without renewal it would be gone
  assert.equal((await state(n)).held, true);
  await srv.advance(1500);
  expectError(await srv.req('GET', L(n)), 404);
  expectError(await srv.req('PATCH', L(n), { token: g2.token }), 404);
});

test('a renewal without ttl lasts the original lease length, even after a renewal with its own ttl', async () => {
  const n = uniq('orig');
  const g = await acquire(n, { ttl: 10 });
  const g2 = expectGrant(await srv.req('PATCH', L(n), { token: g.token, ttl: 60 }), 200, 'lease acquired successfully');
  let s = await state(n);
  assert.equal(s.ttl, 60);
  assert.ok((s.expires_in_ms as number) > 59000, `expires_in_ms after a 60 s renewal ${s.expires_in_ms}`);
  const g3 = expectGrant(await srv.req('PATCH', L(n), { token: g2.token }), 200, 'lease acquired successfully');
  s = await state(n);
  assert.equal(s.ttl, 10, 'back to the length given at acquire');
  assert.ok((s.expires_in_ms as number) > 9000 && (s.expires_in_ms as number) <= 10000, `expires_in_ms ${s.expires_in_ms}`);
  assert.equal(g3.fence, g.fence, 'a renewal is not a new acquire: same fence');
  await srv.advance(10500);
  expectError(await srv.req('GET', L(n)), 404);
});

test('held locks count in health key_count; expired ones do not', async () => {
  await srv.advance(300_000); // let every earlier lease of this file expire first
  const h0 = await srv.req('GET', '/health');
  assert.equal(h0.status, 200, h0.raw);
  const k0 = h0.body.data.key_count as number;
  const n = uniq('kc');
  await acquire(n, { ttl: 3 });
  const h1 = await srv.req('GET', '/health');
  assert.equal(h1.body.data.key_count, k0 + 1);
  await srv.advance(3500);
  const h2 = await srv.req('GET', '/health');
  assert.equal(h2.body.data.key_count, k0);
});
