/** Black-box tests of the variant namespace (docs/api.md, "Variants"). */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, rawRequest, uniq } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

const V = (n: string) => `/variants/${encodeURIComponent(n)}`;
const MAX = Number.MAX_SAFE_INTEGER; // 2^53 − 1

async function get(n: string): Promise<unknown> {
  const r = await srv.req('GET', V(n));
  expectSuccess(r, 200, 'variant queried successfully', r.body?.data);
  return r.body.data.variant;
}

test('variant lifecycle: create 201, replace 200, increment, get, delete', async () => {
  const n = uniq('life');
  expectSuccess(await srv.req('PUT', V(n), { variant: 5 }), 201, 'variant created successfully', { variant: 5 });
  expectSuccess(await srv.req('GET', V(n)), 200, 'variant queried successfully', { variant: 5 });
  expectSuccess(await srv.req('PUT', V(n), { variant: 7 }), 200, 'variant created successfully', { variant: 7 });
  expectSuccess(await srv.req('POST', V(n), { delta: 3 }), 200, 'variant incremented successfully', { variant: 10 });
  expectSuccess(await srv.req('POST', V(n), { delta: -15 }), 200, 'variant incremented successfully', { variant: -5 });
  expectSuccess(await srv.req('POST', V(n), { delta: 0 }), 200, 'variant incremented successfully', { variant: -5 });
  expectSuccess(await srv.req('GET', V(n)), 200, 'variant queried successfully', { variant: -5 });
  expectSuccess(await srv.req('DELETE', V(n)), 200, 'variant deleted successfully');
  expectError(await srv.req('GET', V(n)), 404);
  expectError(await srv.req('DELETE', V(n)), 404);
  // after delete a new type may be chosen
  expectSuccess(await srv.req('PUT', V(n), { variant: 'now a string' }), 201, 'variant created successfully', { variant: 'now a string' });
});

test('string, boolean and double variants', async () => {
  const s = uniq('str');
  expectSuccess(await srv.req('PUT', V(s), { variant: 'héllo 😀' }), 201, 'variant created successfully', { variant: 'héllo 😀' });
  expectSuccess(await srv.req('PUT', V(s), { variant: '' }), 200, 'variant created successfully', { variant: '' });
  assert.equal(await get(s), '');

  const b = uniq('bool');
  expectSuccess(await srv.req('PUT', V(b), { variant: false }), 201, 'variant created successfully', { variant: false });
  expectSuccess(await srv.req('PUT', V(b), { variant: true }), 200, 'variant created successfully', { variant: true });
  assert.equal(await get(b), true);

  const d = uniq('dbl');
  expectSuccess(await srv.req('PUT', V(d), { variant: 1.5 }), 201, 'variant created successfully', { variant: 1.5 });
  expectSuccess(await srv.req('POST', V(d), { delta: 0.25 }), 200, 'variant incremented successfully', { variant: 1.75 });
  // a double variant takes any number, integers included
  expectSuccess(await srv.req('POST', V(d), { delta: 1 }), 200, 'variant incremented successfully', { variant: 2.75 });
  expectSuccess(await srv.req('POST', V(d), { delta: -0.75 }), 200, 'variant incremented successfully', { variant: 2 });
  // its value is now integral, but the type stays double: fractional deltas and double PUTs still work
  expectSuccess(await srv.req('POST', V(d), { delta: 0.5 }), 200, 'variant incremented successfully', { variant: 2.5 });
  expectSuccess(await srv.req('PUT', V(d), { variant: -3.125 }), 200, 'variant created successfully', { variant: -3.125 });
  assert.equal(await get(d), -3.125);
});

test('type is fixed by the first value: mismatching PUT → 409, nothing changes', async () => {
  const cases: [unknown, unknown[]][] = [
    [5, [1.5, 's', true, false, '5']],
    [2.5, ['2.5', true, 's']],
    ['str', [1, 1.5, true]],
    [true, [1, 0, 1.5, 'true']],
  ];
  for (const [first, others] of cases) {
    const n = uniq('type');
    expectSuccess(await srv.req('PUT', V(n), { variant: first }), 201, 'variant created successfully', { variant: first });
    for (const o of others) {
      const r = await srv.req('PUT', V(n), { variant: o });
      expectError(r, 409);
      assert.deepEqual(await get(n), first, `PUT ${JSON.stringify(o)} onto ${JSON.stringify(first)} changed the value`);
    }
  }
});

test('an integral number onto a double variant is an integer → 409 (literal reading of docs/api.md, Variants)', async () => {
  const n = uniq('dblint');
  expectSuccess(await srv.req('PUT', V(n), { variant: 0.5 }), 201, 'variant created successfully', { variant: 0.5 });
  expectError(await srv.req('PUT', V(n), { variant: 3 }), 409);
  assert.equal(await get(n), 0.5);
});

test('increment of a string or boolean variant → 409 type mismatch, no effect', async () => {
  const s = uniq('incs');
  expectSuccess(await srv.req('PUT', V(s), { variant: 'abc' }), 201, 'variant created successfully', { variant: 'abc' });
  const r = await srv.req('POST', V(s), { delta: 1 });
  expectError(r, 409);
  // "an error reporting a type mismatch": the message names the variant and its (non-numeric) type
  assert.ok(r.body.message.includes(s), `message should name the variant: ${r.body.message}`);
  assert.match(r.body.message, /type|string/i, 'message should report the type mismatch');
  assert.equal(await get(s), 'abc');
  const b = uniq('incb');
  expectSuccess(await srv.req('PUT', V(b), { variant: true }), 201, 'variant created successfully', { variant: true });
  expectError(await srv.req('POST', V(b), { delta: 1 }), 409);
  assert.equal(await get(b), true);
});

test('integer variant takes only an integer delta (fractional → 4xx, no effect)', async () => {
  const n = uniq('intd');
  expectSuccess(await srv.req('PUT', V(n), { variant: 10 }), 201, 'variant created successfully', { variant: 10 });
  const r = await srv.req('POST', V(n), { delta: 0.5 });
  // the contract does not say 400 or 409 here; either is an error, and nothing may change
  assert.ok(r.status === 400 || r.status === 409, `fractional delta on integer variant: ${r.status} ${r.raw}`);
  expectError(r, r.status);
  assert.equal(await get(n), 10);
});

test('a delta is typed by how it is written, like a PUT value: 1.0 on an integer variant → 409', async () => {
  const n = uniq('intlit');
  expectSuccess(await srv.req('PUT', V(n), '{"variant":10}'), 201, 'variant created successfully', { variant: 10 });
  for (const text of ['1.0', '1.50', '15e-1', '-2.0e0']) {
    expectError(await srv.req('POST', V(n), `{"delta":${text}}`), 409, `variant '${n}' holds an integer; delta must be an integer`);
  }
  assert.equal(await get(n), 10, 'nothing changed');
  expectSuccess(await srv.req('POST', V(n), '{"delta":1e1}'), 200, 'variant incremented successfully', { variant: 20 });
  expectSuccess(await srv.req('POST', V(n), '{"delta":-2E0}'), 200, 'variant incremented successfully', { variant: 18 });
});

test('an integer delta beyond 2^53 is added exactly as written: only a result out of range is refused', async () => {
  const n = uniq('bigdelta');
  const put = async (v: string): Promise<void> => {
    const r = await srv.req('PUT', V(n), `{"variant":${v}}`);
    assert.ok(r.status === 200 || r.status === 201, r.raw);
  };
  const inc = (d: string) => srv.req('POST', V(n), `{"delta":${d}}`);
  // JSON.parse rounds 9007199254740993 to ...992; the sum must still be exact.
  await put('-2');
  expectSuccess(await inc('9007199254740993'), 200, 'variant incremented successfully', { variant: MAX });
  await put('-2');
  expectSuccess(await inc('9007199254740992'), 200, 'variant incremented successfully', { variant: MAX - 1 });
  await put('5');
  expectSuccess(await inc('-9007199254740993'), 200, 'variant incremented successfully', { variant: -9007199254740988 });
  await put('-2');
  expectSuccess(await inc('900719925474099300e-2'), 200, 'variant incremented successfully', { variant: MAX }); // = 9007199254740993
  // Beyond 2^53 the value itself is exact, digit for digit, up to the signed 64-bit range.
  await put('9007199254740991');
  assert.equal((await inc('2')).status, 200);
  assert.match((await srv.req('GET', V(n))).raw, /"data":\{"variant":9007199254740993\}/);
  await put('9223372036854775806');
  const top = await inc('1');
  assert.match(top.raw, /"data":\{"variant":9223372036854775807\}/, top.raw);
  // Results out of range: 409, nothing changes.
  for (const d of ['1', '9223372036854775807', '1e300', '36028797018963968e3']) {
    expectError(await inc(d), 409, `variant '${n}' would overflow: the result is outside the signed 64-bit range (−2^63 to 2^63−1)`);
  }
  assert.match((await srv.req('GET', V(n))).raw, /"data":\{"variant":9223372036854775807\}/, 'nothing changed');
  await put('-9223372036854775807');
  const bottom = await inc('-1');
  assert.match(bottom.raw, /"data":\{"variant":-9223372036854775808\}/, bottom.raw);
  expectError(await inc('-1'), 409, `variant '${n}' would overflow: the result is outside the signed 64-bit range (−2^63 to 2^63−1)`);
  assert.match((await srv.req('GET', V(n))).raw, /"data":\{"variant":-9223372036854775808\}/, 'nothing changed');
  // Back from the far end to exact small numbers.
  expectSuccess(await inc('9223372036854775807'), 200, 'variant incremented successfully', { variant: -1 });
  // A delta outside 64 bits is refused whatever the value.
  expectError(await inc('9223372036854775808'), 409);
  expectSuccess(await inc('1'), 200, 'variant incremented successfully', { variant: 0 });
});

test('an integer outside 64 bits cannot be stored; one inside is kept exactly', async () => {
  const n = uniq('int64');
  for (const v of ['9223372036854775808', '-9223372036854775809', '1e19', '1e300', '123456789012345678901234567890']) {
    expectError(await srv.req('PUT', V(n), `{"variant":${v}}`), 400, "field 'variant' is an integer outside the signed 64-bit range (−2^63 to 2^63−1)");
  }
  expectError(await srv.req('GET', V(n)), 404);
  const r = await srv.req('PUT', V(n), '{"variant":9223372036854775807}');
  assert.equal(r.status, 201, r.raw);
  assert.match(r.raw, /"data":\{"variant":9223372036854775807\}/);
  const e = await srv.req('PUT', V(n), '{"variant":12e17}');
  assert.match(e.raw, /"data":\{"variant":1200000000000000000\}/, e.raw);
});

test('integer or double is decided exactly from the text: 1e-400 is a double, 100e-2 an integer', async () => {
  const d = uniq('tiny');
  expectSuccess(await srv.req('PUT', V(d), '{"variant":1e-400}'), 201, 'variant created successfully', { variant: 0 });
  assert.match((await srv.req('GET', V(d))).raw, /"data":\{"variant":0\.0\}/, 'a double (JSON.parse made it 0)');
  const i = uniq('exact');
  expectSuccess(await srv.req('PUT', V(i), '{"variant":100e-2}'), 201, 'variant created successfully', { variant: 1 });
  assert.match((await srv.req('GET', V(i))).raw, /"data":\{"variant":1\}/, 'an integer');
  expectError(await srv.req('POST', V(i), '{"delta":1e-400}'), 409, `variant '${i}' holds an integer; delta must be an integer`);
  expectError(await srv.req('POST', V(i), '{"delta":5e-1}'), 409, `variant '${i}' holds an integer; delta must be an integer`);
  expectSuccess(await srv.req('POST', V(i), '{"delta":2000e-3}'), 200, 'variant incremented successfully', { variant: 3 });
  expectSuccess(await srv.req('POST', V(i), '{"delta":0e-7}'), 200, 'variant incremented successfully', { variant: 3 });
});

test('a double prints with a fraction in every form, so it reads back (and writes back) as a double', async () => {
  const n = uniq('bigdbl');
  const r = await srv.req('PUT', V(n), '{"variant":1.0e300}');
  expectSuccess(r, 201, 'variant created successfully', { variant: 1e300 });
  assert.match(r.raw, /"data":\{"variant":1\.0e\+300\}/);
  const g = await srv.req('GET', V(n));
  assert.match(g.raw, /"data":\{"variant":1\.0e\+300\}/);
  // Writing the printed text back keeps it a double (an integer would be 400 here: out of range).
  expectSuccess(await srv.req('PUT', V(n), '{"variant":1.0e+300}'), 200, 'variant created successfully', { variant: 1e300 });
  const small = uniq('tinydbl');
  const t = await srv.req('PUT', V(small), '{"variant":1.0e-7}');
  assert.match(t.raw, /"data":\{"variant":1\.0e-7\}/);
});

test('overflow beyond the signed 64-bit range → 409, no effect', async () => {
  const n = uniq('ovf');
  const raw = async (name: string): Promise<string> => /"data":\{"variant":(-?\d+)\}/.exec((await srv.req('GET', V(name))).raw)?.[1] ?? '';
  assert.equal((await srv.req('PUT', V(n), '{"variant":9223372036854775806}')).status, 201);
  assert.equal((await srv.req('POST', V(n), { delta: 1 })).status, 200);
  assert.equal(await raw(n), '9223372036854775807');
  let r = await srv.req('POST', V(n), { delta: 1 });
  expectError(r, 409);
  assert.equal(await raw(n), '9223372036854775807');
  r = await srv.req('POST', V(n), { delta: MAX });
  expectError(r, 409);
  assert.equal(await raw(n), '9223372036854775807');

  const m = uniq('ovfneg');
  assert.equal((await srv.req('PUT', V(m), '{"variant":-9223372036854775808}')).status, 201);
  expectError(await srv.req('POST', V(m), { delta: -1 }), 409);
  assert.equal(await raw(m), '-9223372036854775808');
  expectSuccess(await srv.req('POST', V(m), '{"delta":9223372036854775807}'), 200, 'variant incremented successfully', { variant: -1 });

  // a delta itself beyond 64 bits
  const k = uniq('ovfdelta');
  expectSuccess(await srv.req('PUT', V(k), { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  expectError(await srv.req('POST', V(k), '{"delta":9223372036854775808}'), 409);
  assert.equal(await get(k), 0);

  // a double's result must be finite
  const d = uniq('ovfdbl');
  expectSuccess(await srv.req('PUT', V(d), '{"variant":1.0e308}'), 201, 'variant created successfully', { variant: 1e308 });
  expectError(await srv.req('POST', V(d), { delta: 1e308 }), 409, `variant '${d}' would overflow: the result is not a finite double`);
  assert.equal(await get(d), 1e308);
  expectSuccess(await srv.req('POST', V(d), { delta: MAX }), 200, 'variant incremented successfully', { variant: 1e308 + MAX });
});

test('null, object, array or missing variant → 400, nothing created or changed', async () => {
  const n = uniq('badv');
  for (const body of [undefined, {}, { variant: null }, { variant: {} }, { variant: { a: 1 } }, { variant: [] }, { variant: [1] }, { value: 1 }]) {
    expectError(await srv.req('PUT', V(n), body), 400);
  }
  expectError(await srv.req('GET', V(n)), 404);
  expectSuccess(await srv.req('PUT', V(n), { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  for (const body of [undefined, { variant: null }, { variant: [2] }, { variant: { v: 2 } }]) {
    expectError(await srv.req('PUT', V(n), body), 400);
  }
  assert.equal(await get(n), 1);
});

test('missing or non-number delta → 400, no effect', async () => {
  const n = uniq('badd');
  expectSuccess(await srv.req('PUT', V(n), { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  for (const body of [undefined, {}, { delta: null }, { delta: '1' }, { delta: true }, { delta: [1] }, { delta: { n: 1 } }, { inc: 1 }]) {
    expectError(await srv.req('POST', V(n), body), 400);
  }
  assert.equal(await get(n), 1);
});

test('missing variant → 404 for GET, POST (no implicit creation), DELETE', async () => {
  const n = uniq('ghost');
  expectError(await srv.req('GET', V(n)), 404);
  expectError(await srv.req('POST', V(n), { delta: 1 }), 404);
  expectError(await srv.req('GET', V(n)), 404);
  expectError(await srv.req('DELETE', V(n)), 404);
});

test('variant names __proto__ / constructor are ordinary', async () => {
  for (const n of ['__proto__', 'constructor']) {
    expectError(await srv.req('GET', V(n)), 404);
    expectSuccess(await srv.req('PUT', V(n), { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
    expectSuccess(await srv.req('POST', V(n), { delta: 1 }), 200, 'variant incremented successfully', { variant: 2 });
    expectSuccess(await srv.req('DELETE', V(n)), 200, 'variant deleted successfully');
  }
});

test('1,000 concurrent +1 increments over 50 keep-alive connections end exactly 1,000 higher', async () => {
  const n = uniq('conc');
  expectSuccess(await srv.req('PUT', V(n), { variant: 100 }), 201, 'variant created successfully', { variant: 100 });
  const agents = Array.from({ length: 50 }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    const body = Buffer.from(JSON.stringify({ delta: 1 }));
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        rawRequest({
          port: srv.port,
          method: 'POST',
          path: V(n),
          headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Content-Length': body.length },
          body,
          agent: agents[i % agents.length]!,
        }),
      ),
    );
    const bad = results.filter((r) => r.status !== 200);
    assert.equal(
      bad.length,
      0,
      `non-200 answers: ${bad
        .slice(0, 3)
        .map((r) => `${r.status} ${r.raw}`)
        .join('; ')}`,
    );
    const values = results.map((r) => r.body.data.variant as number).sort((a, b) => a - b);
    // every increment saw a distinct intermediate value: 101..1100
    assert.deepEqual(
      values,
      Array.from({ length: 1000 }, (_, i) => 101 + i),
    );
    assert.equal(await get(n), 1100);
  } finally {
    for (const a of agents) a.destroy();
  }
});

test('variants (type included) survive a restart', async () => {
  const i = uniq('pi');
  const d = uniq('pd');
  expectSuccess(await srv.req('PUT', V(i), { variant: 41 }), 201, 'variant created successfully', { variant: 41 });
  expectSuccess(await srv.req('POST', V(i), { delta: 1 }), 200, 'variant incremented successfully', { variant: 42 });
  expectSuccess(await srv.req('PUT', V(d), { variant: 0.5 }), 201, 'variant created successfully', { variant: 0.5 });
  expectSuccess(await srv.req('POST', V(d), { delta: 0.5 }), 200, 'variant incremented successfully', { variant: 1 });
  const big = uniq('pbig');
  assert.equal((await srv.req('PUT', V(big), '{"variant":-9223372036854775807}')).status, 201);
  assert.equal((await srv.req('POST', V(big), '{"delta":-1}')).status, 200);
  await srv.restart('SIGKILL');
  assert.equal(await get(i), 42);
  assert.equal(await get(d), 1);
  assert.match((await srv.req('GET', V(big))).raw, /"data":\{"variant":-9223372036854775808\}/, 'exact after a restart');
  expectSuccess(await srv.req('POST', V(big), '{"delta":9223372036854775807}'), 200, 'variant incremented successfully', { variant: -1 });
  // the double stayed a double (integral value), the integer stayed an integer
  expectSuccess(await srv.req('POST', V(d), { delta: 0.25 }), 200, 'variant incremented successfully', { variant: 1.25 });
  const r = await srv.req('POST', V(i), { delta: 0.5 });
  assert.ok(r.status === 400 || r.status === 409, `${r.status} ${r.raw}`);
  assert.equal(await get(i), 42);
});
