/** Black-box tests of POST /txns (docs/api.md "Transactions"): every form, status and message, all-or-nothing. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { PithosServer, expectError, expectSuccess, pool, uniq } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

const OK = 'transaction execute successfully';
const txn = (body: unknown) => srv.req('POST', '/txns', body);
const variant = async (n: string): Promise<unknown> => {
  const r = await srv.req('GET', `/variants/${n}`);
  return r.status === 404 ? undefined : r.body.data.variant;
};
const rows = async (t: string): Promise<unknown> => (await srv.req('GET', `/tables/${t}`)).body.data;

async function setup(): Promise<{ a: string; b: string; log: string }> {
  const a = uniq('acct-a');
  const b = uniq('acct-b');
  const log = uniq('transfers');
  expectSuccess(await srv.req('PUT', `/variants/${a}`, { variant: 150 }), 201, 'variant created successfully', { variant: 150 });
  expectSuccess(await srv.req('PUT', `/variants/${b}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  expectSuccess(await srv.req('PUT', `/tables/${log}`), 201, 'table created successfully');
  return { a, b, log };
}

const transfer = (a: string, b: string, log: string, amount = 100) => ({
  checks: [{ kind: 'variant', name: a, value: { $gte: amount } }],
  mutations: [
    { kind: 'variant', name: a, operation: 'ADD', delta: -amount },
    { kind: 'variant', name: b, operation: 'ADD', delta: amount },
    { name: log, operation: 'INSERT', values: { from: a, to: b, amount } },
  ],
});

test('the canonical transfer: applied when the check holds, refused with 409 and nothing changed when not', async () => {
  const { a, b, log } = await setup();
  expectSuccess(await txn(transfer(a, b, log)), 200, OK, { results: [{ variant: 50 }, { variant: 100 }, { t_id: 1 }] });
  expectError(await txn(transfer(a, b, log)), 409, `transaction check 0 failed: variant '${a}' is 50, which does not match {"$gte":100}`);
  assert.equal(await variant(a), 50);
  assert.equal(await variant(b), 100);
  assert.deepEqual(await rows(log), { 1: { from: a, to: b, amount: 100 } });
});

test("UrnaDB's body works unchanged: empty where on INSERT, empty values on REMOVE, serializable and its alias", async () => {
  const t = uniq('users');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const body = {
    mutations: [
      { name: t, operation: 'INSERT', where: {}, values: { name: 'ann', age: 31 } },
      { name: t, operation: 'INSERT', where: {}, values: { name: 'bob', age: 12 } },
      { name: t, operation: 'UPDATE', where: { name: 'ann' }, values: { age: 32 } },
      { name: t, operation: 'REMOVE', where: { age: { $lt: 18 } }, values: {} },
    ],
    serializable: false,
  };
  expectSuccess(await txn(body), 200, OK, { results: [{ t_id: 1 }, { t_id: 2 }, { matched: 1 }, { matched: 1 }] });
  assert.deepEqual(await rows(t), { 1: { name: 'ann', age: 32 } });
  expectSuccess(await txn({ mutations: [{ name: t, operation: 'UPDATE', where: {}, values: { x: 1 } }], serialization: true }), 200, OK, {
    results: [{ matched: 1 }],
  });
  expectError(
    await txn({ mutations: [{ name: t, operation: 'INSERT', where: { a: 1 }, values: {} }] }),
    400,
    "mutation 0: field 'where' must be absent or {} (an INSERT matches no rows)",
  );
  expectError(
    await txn({ mutations: [{ name: t, operation: 'REMOVE', where: {}, values: { a: 1 } }] }),
    400,
    "mutation 0: field 'values' must be absent or {} (a REMOVE writes no values)",
  );
  assert.deepEqual(await rows(t), { 1: { name: 'ann', age: 32, x: 1 } });
});

test('later mutations see earlier ones; checks see the state before the first mutation', async () => {
  const t = uniq('t');
  const r = uniq('rec');
  const v = uniq('v');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  expectSuccess(
    await txn({
      checks: [
        { kind: 'record', name: r, exists: false },
        { kind: 'table', name: t, where: {}, count: 0 },
        { kind: 'variant', name: v, exists: false },
      ],
      mutations: [
        { kind: 'record', name: r, operation: 'PUT', values: { n: 1 } },
        { name: t, operation: 'INSERT', values: { k: 'a', n: 1 } },
        { name: t, operation: 'UPDATE', where: { k: 'a' }, values: { n: 2 } },
        { name: t, operation: 'INSERT', values: { k: 'b' } },
        { name: t, operation: 'REMOVE', where: { k: 'b' } },
        { kind: 'variant', name: v, operation: 'SET', variant: 10 },
        { kind: 'variant', name: v, operation: 'ADD', delta: 5 },
        { kind: 'record', name: r, operation: 'DELETE' },
        { kind: 'record', name: r, operation: 'PUT', values: { n: 2 }, ttl: 100 },
      ],
    }),
    200,
    OK,
    { results: [{}, { t_id: 1 }, { matched: 1 }, { t_id: 2 }, { matched: 1 }, {}, { variant: 15 }, {}, {}] },
  );
  assert.deepEqual(await rows(t), { 1: { k: 'a', n: 2 } });
  assert.equal(await variant(v), 15);
  expectSuccess(await srv.req('GET', `/records/${r}`), 200, 'record queried successfully', { n: 2 });
  // The record carries its ttl: it is gone once the clock passes it.
  await srv.advance(101_000);
  expectError(await srv.req('GET', `/records/${r}`), 404);
  // t_ids are never reused: the removed row's id 2 stays spent.
  expectSuccess(await txn({ mutations: [{ name: t, operation: 'INSERT', values: {} }] }), 200, OK, { results: [{ t_id: 3 }] });
});

test('every check kind, and the message of each failure', async () => {
  const { a, log } = await setup();
  const r = uniq('rec');
  expectSuccess(await srv.req('PUT', `/records/${r}`, { record: { x: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('POST', `/tables/${log}/rows`, { rows: { k: 1 } }), 201, 'table rows insert successfully', { t_id: 1 });
  const pass = [
    { kind: 'variant', name: a, value: 150 },
    { kind: 'variant', name: a, exists: true, value: { $gt: 149, $lt: 151 } },
    { kind: 'variant', name: uniq('none'), exists: false },
    { kind: 'record', name: r, exists: true },
    { kind: 'record', name: uniq('none'), exists: false },
    { kind: 'table', name: log, exists: true },
    { kind: 'table', name: uniq('none'), exists: false },
    { kind: 'table', name: log, where: { k: 1 }, count: 1 },
    { kind: 'table', name: log, where: { k: 2 }, count: { $eq: 0 } },
  ];
  expectSuccess(await txn({ checks: pass, mutations: [] }), 200, OK, { results: [] });
  const fails: Array<[unknown, string]> = [
    [{ kind: 'variant', name: a, value: { $lt: 100 } }, `variant '${a}' is 150, which does not match {"$lt":100}`],
    [{ kind: 'variant', name: a, exists: false }, `variant '${a}' exists`],
    [{ kind: 'variant', name: 'nope-v', value: 1 }, `variant 'nope-v' does not exist`],
    [{ kind: 'record', name: r, exists: false }, `record '${r}' exists`],
    [{ kind: 'record', name: 'nope-r', exists: true }, `record 'nope-r' does not exist`],
    [{ kind: 'table', name: 'nope-t', exists: true }, `table 'nope-t' does not exist`],
    [{ kind: 'table', name: log, where: {}, count: { $gt: 1 } }, `table '${log}' has 1 matching row(s), which does not match {"$gt":1}`],
    [{ kind: 'table', name: 'nope-t', where: {}, count: 0 }, `table 'nope-t' does not exist`],
  ];
  for (const [c, why] of fails) {
    expectError(
      await txn({ checks: [pass[0], c], mutations: [{ kind: 'variant', name: a, operation: 'ADD', delta: 1 }] }),
      409,
      `transaction check 1 failed: ${why}`,
    );
  }
  assert.equal(await variant(a), 150, 'no failed check changed anything');
});

test('a failing mutation names its index, keeps its status, and nothing of the transaction is written', async () => {
  const { a, b, log } = await setup();
  const s = uniq('str');
  expectSuccess(await srv.req('PUT', `/variants/${s}`, { variant: 'text' }), 201, 'variant created successfully', { variant: 'text' });
  const before = async () => [await variant(a), await variant(b), await rows(log), await variant(s)];
  const start = await before();
  const cases: Array<[unknown, number, string]> = [
    [{ name: 'no-such-table', operation: 'INSERT', values: {} }, 404, "mutation 3: table 'no-such-table' does not exist"],
    [{ kind: 'variant', name: 'no-such-v', operation: 'ADD', delta: 1 }, 404, "mutation 3: variant 'no-such-v' does not exist"],
    [{ kind: 'variant', name: s, operation: 'ADD', delta: 1 }, 409, `mutation 3: variant '${s}' holds a string; only numbers can be incremented`],
    [
      { kind: 'variant', name: s, operation: 'SET', variant: 1 },
      409,
      `mutation 3: variant '${s}' holds a string; cannot store an integer (delete it first to change its type)`,
    ],
    [
      { kind: 'variant', name: a, operation: 'ADD', delta: 2 ** 63 },
      409,
      `mutation 3: variant '${a}' would overflow: the result is outside the signed 64-bit range (−2^63 to 2^63−1)`,
    ],
    [{ kind: 'record', name: 'no-such-r', operation: 'DELETE' }, 404, "mutation 3: record 'no-such-r' does not exist"],
    [{ name: log, operation: 'UPDATE', where: { a: { $bogus: 1 } }, values: {} }, 400, "mutation 3: unknown operator '$bogus' in wheres field 'a'"],
    [{ name: log, operation: 'DROP' }, 400, "mutation 3: field 'operation' must be one of INSERT, UPDATE, REMOVE, REPLACE for a table, not 'DROP'"],
    [{ kind: 'lock', name: 'l', operation: 'PUT' }, 400, "mutation 3: field 'kind' must be 'table', 'variant', 'record', 'list', 'set' or 'zset', not 'lock'"],
    [{ name: log, operation: 'INSERT' }, 400, "mutation 3: field 'values' is required (an object)"],
    [{ name: log, operation: 'INSERT', values: {}, extra: 1 }, 400, "mutation 3: unknown field 'extra' (allowed: kind, name, operation, values, where)"],
    [{ name: '', operation: 'INSERT', values: {} }, 400, 'mutation 3: table name must not be empty'],
    [{ kind: 'variant', name: a, operation: 'ADD', delta: '1' }, 400, "mutation 3: field 'delta' must be a number"],
    [{ kind: 'record', name: 'r', operation: 'PUT', values: {}, ttl: -1 }, 400, "mutation 3: field 'ttl' must be an integer ≥ 0 and ≤ 2147483647"],
  ];
  for (const [bad, status, message] of cases) {
    const body = transfer(a, b, log);
    body.mutations.push(bad as (typeof body.mutations)[number]);
    expectError(await txn(body), status, message);
  }
  assert.deepEqual(await before(), start, 'no failed transaction changed anything');
});

test('bad bodies: missing or ill-typed fields, unknown fields, limits', async () => {
  expectError(await txn({}), 400, "field 'mutations' is required (an array)");
  expectError(await txn({ mutations: {} }), 400, "field 'mutations' must be an array");
  expectError(await txn({ mutations: [], checks: 1 }), 400, "field 'checks' must be an array");
  expectError(await txn({ mutations: [], serializable: 'yes' }), 400, "field 'serializable' must be true or false");
  expectError(await txn({ mutations: [], muations: [] }), 400, "unknown field 'muations' (allowed: mutations, checks, serializable, serialization)");
  expectError(await txn({ mutations: [1] }), 400, 'mutation 0 must be an object');
  expectError(await txn({ mutations: [], checks: [{ kind: 'record', name: 'x' }] }), 400, "check 0: a record check needs 'exists' or 'version'");
  expectError(
    await txn({ mutations: [], checks: [{ kind: 'table', name: 'x', where: {} }] }),
    400,
    "check 0: a table check takes 'where' and 'count' together",
  );
  const many = Array.from({ length: 1001 }, () => ({ kind: 'record', name: 'r', operation: 'DELETE' }));
  expectError(await txn({ mutations: many }), 400, "field 'mutations' holds 1001 mutations; at most 1000 are allowed");
  expectError(await srv.req('GET', '/txns'), 405);
});

test('1,000 mutations in one transaction are one atomic write', async () => {
  const t = uniq('big');
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const mutations = Array.from({ length: 1000 }, (_, i) => ({ name: t, operation: 'INSERT', values: { i } }));
  const r = await txn({ mutations });
  expectSuccess(r, 200, OK, { results: mutations.map((_, i) => ({ t_id: i + 1 })) });
  assert.equal(Object.keys((await rows(t)) as object).length, 1000);
});

test('200 concurrent transfers between 10 accounts with $gte checks conserve the total and never go negative', async () => {
  const accts = Array.from({ length: 10 }, () => uniq('acct'));
  const log = uniq('ledger');
  expectSuccess(await srv.req('PUT', `/tables/${log}`), 201, 'table created successfully');
  for (const a of accts) expectSuccess(await srv.req('PUT', `/variants/${a}`, { variant: 100 }), 201, 'variant created successfully', { variant: 100 });
  let seed = 7;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const plans = Array.from({ length: 200 }, () => {
    const from = accts[rnd(10)];
    let to = accts[rnd(10)];
    if (to === from) to = accts[(accts.indexOf(from) + 1) % 10];
    return { from, to, amount: 1 + rnd(80) };
  });
  const answers = await Promise.all(
    plans.map((p) =>
      txn({
        checks: [{ kind: 'variant', name: p.from, value: { $gte: p.amount } }],
        mutations: [
          { kind: 'variant', name: p.from, operation: 'ADD', delta: -p.amount },
          { kind: 'variant', name: p.to, operation: 'ADD', delta: p.amount },
          { name: log, operation: 'INSERT', values: p },
        ],
      }),
    ),
  );
  const ok = answers.filter((r) => r.status === 200).length;
  for (const r of answers) assert.ok(r.status === 200 || r.status === 409, `status ${r.status}: ${r.raw}`);
  const balances = await Promise.all(accts.map((a) => variant(a) as Promise<number>));
  assert.equal(
    balances.reduce((x, y) => x + y, 0),
    1000,
    'total conserved',
  );
  for (const b of balances) assert.ok(b >= 0, `balance ${b} went negative`);
  assert.equal(Object.keys((await rows(log)) as object).length, ok, 'one ledger row per applied transfer');
  assert.ok(ok > 0 && ok <= 200);
});

// ---- property: random transactions against a plain in-memory model ------------

type Val = { t: 'i' | 's'; v: number | string };
interface Model {
  tables: Map<string, { next: number; rows: Map<number, Record<string, unknown>> }>;
  variants: Map<string, Val>;
  records: Map<string, Record<string, unknown>>;
}

class Refused extends Error {
  constructor(readonly status: number) {
    super(String(status));
  }
}

const clone = (m: Model): Model => ({
  tables: new Map([...m.tables].map(([k, t]) => [k, { next: t.next, rows: new Map(t.rows) }])),
  variants: new Map(m.variants),
  records: new Map(m.records),
});

function matchesK(row: Record<string, unknown>, where: Record<string, unknown>): boolean {
  return Object.entries(where).every(([k, v]) => row[k] === v);
}

/** The model's answer: [status, results]; the model changes only on success. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the generated transactions of the property below
function applyModel(m: Model, t: { checks: any[]; mutations: any[] }): [number, unknown[]] {
  const n = clone(m);
  try {
    for (const c of t.checks) {
      if (c.kind === 'variant') {
        const cur = n.variants.get(c.name);
        if (cur === undefined || typeof cur.v !== 'number' || !(cur.v >= c.value.$gte)) return [409, []];
      } else if (c.kind === 'record') {
        if (n.records.has(c.name) !== c.exists) return [409, []];
      } else {
        const tb = n.tables.get(c.name);
        if (tb === undefined) return [409, []];
        const count = [...tb.rows.values()].filter((r) => matchesK(r, c.where)).length;
        if (!(count <= c.count.$lte)) return [409, []];
      }
    }
    const results: unknown[] = [];
    for (const mu of t.mutations) {
      const kind = mu.kind ?? 'table';
      if (kind === 'table') {
        const tb = n.tables.get(mu.name);
        if (tb === undefined) throw new Refused(404);
        if (mu.operation === 'INSERT') {
          tb.rows.set(tb.next, { ...mu.values });
          results.push({ t_id: tb.next++ });
        } else {
          let matched = 0;
          for (const [id, r] of [...tb.rows]) {
            if (!matchesK(r, mu.where)) continue;
            matched++;
            if (mu.operation === 'UPDATE') tb.rows.set(id, { ...r, ...mu.values });
            else tb.rows.delete(id);
          }
          results.push({ matched });
        }
      } else if (kind === 'variant') {
        const cur = n.variants.get(mu.name);
        if (mu.operation === 'ADD') {
          if (cur === undefined) throw new Refused(404);
          if (cur.t !== 'i') throw new Refused(409);
          const next = { t: 'i' as const, v: (cur.v as number) + mu.delta };
          n.variants.set(mu.name, next);
          results.push({ variant: next.v });
        } else {
          const t2 = typeof mu.variant === 'number' ? 'i' : 's';
          if (cur !== undefined && cur.t !== t2) throw new Refused(409);
          n.variants.set(mu.name, { t: t2, v: mu.variant });
          results.push({});
        }
      } else if (mu.operation === 'PUT') {
        n.records.set(mu.name, { ...mu.values });
        results.push({});
      } else {
        if (!n.records.delete(mu.name)) throw new Refused(404);
        results.push({});
      }
    }
    m.tables = n.tables;
    m.variants = n.variants;
    m.records = n.records;
    return [200, results];
  } catch (err) {
    if (err instanceof Refused) return [err.status, []];
    throw err;
  }
}

test('property: random transactions agree with an in-memory model; refused ones change nothing', async () => {
  const k = fc.integer({ min: 0, max: 3 });
  const tname = fc.constantFrom('ta', 'tb', 'tc');
  const vname = fc.constantFrom('v1', 'v2', 'v3');
  const rname = fc.constantFrom('r1', 'r2');
  const mutation = fc.oneof(
    fc.record({ name: tname, operation: fc.constant('INSERT'), values: fc.record({ k, s: fc.constantFrom('x', 'y') }) }),
    fc.record({
      name: tname,
      operation: fc.constant('UPDATE'),
      where: fc.oneof(fc.constant({}), fc.record({ k })),
      values: fc.record({ s: fc.constantFrom('p', 'q') }),
    }),
    fc.record({ name: tname, operation: fc.constant('REMOVE'), where: fc.record({ k }) }),
    fc.record({ kind: fc.constant('variant'), name: vname, operation: fc.constant('ADD'), delta: fc.integer({ min: -5, max: 5 }) }),
    fc.record({
      kind: fc.constant('variant'),
      name: vname,
      operation: fc.constant('SET'),
      variant: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constant('str')),
    }),
    fc.record({ kind: fc.constant('record'), name: rname, operation: fc.constant('PUT'), values: fc.record({ k }) }),
    fc.record({ kind: fc.constant('record'), name: rname, operation: fc.constant('DELETE') }),
  );
  const check = fc.oneof(
    fc.record({ kind: fc.constant('variant'), name: vname, value: fc.record({ $gte: fc.integer({ min: -3, max: 6 }) }) }),
    fc.record({ kind: fc.constant('record'), name: rname, exists: fc.boolean() }),
    fc.record({ kind: fc.constant('table'), name: tname, where: fc.record({ k }), count: fc.record({ $lte: fc.integer({ min: 0, max: 2 }) }) }),
  );
  const txnArb = fc.record({ checks: fc.array(check, { maxLength: 2 }), mutations: fc.array(mutation, { minLength: 1, maxLength: 5 }) });
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(txnArb, { minLength: 1, maxLength: 8 }), async (txns) => {
      const p = uniq(`p${runs++}-`);
      const ren = (x: { name: string }) => ({ ...x, name: p + x.name });
      const model: Model = {
        tables: new Map([
          ['ta', { next: 1, rows: new Map() }],
          ['tb', { next: 1, rows: new Map() }],
        ]),
        variants: new Map(),
        records: new Map(),
      };
      for (const t of ['ta', 'tb']) expectSuccess(await srv.req('PUT', `/tables/${p}${t}`), 201, 'table created successfully');
      for (const t of txns) {
        const [status, results] = applyModel(model, t);
        const r = await txn({ checks: t.checks.map(ren), mutations: t.mutations.map(ren) });
        assert.equal(r.status, status, `${JSON.stringify(t)} → ${r.raw}`);
        if (status === 200) assert.deepEqual(r.body.data, { results });
      }
      for (const t of ['ta', 'tb']) {
        const want = Object.fromEntries([...(model.tables.get(t)?.rows ?? [])].map(([id, row]) => [String(id), row]));
        assert.deepEqual(await rows(p + t), want, `table ${t}`);
      }
      for (const v of ['v1', 'v2', 'v3']) assert.deepEqual(await variant(p + v), model.variants.get(v)?.v, `variant ${v}`);
      for (const rn of ['r1', 'r2']) {
        const r = await srv.req('GET', `/records/${p}${rn}`);
        assert.deepEqual(r.status === 200 ? r.body.data : undefined, model.records.get(rn), `record ${rn}`);
      }
    }),
    { numRuns: 60, seed: 20261123 },
  );
});

test('1,000-way concurrent transactions on one counter add exactly once each (one writer)', async () => {
  const v = uniq('ctr');
  expectSuccess(await srv.req('PUT', `/variants/${v}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  const answers = await pool(Array.from({ length: 1000 }), 100, () => txn({ mutations: [{ kind: 'variant', name: v, operation: 'ADD', delta: 1 }] }));
  assert.ok(answers.every((r) => r.status === 200));
  assert.equal(await variant(v), 1000);
});

test('a name with a lone surrogate is a 400 naming it, not a 500', async () => {
  expectError(
    await txn({ mutations: [{ kind: 'record', name: '\ud800', operation: 'PUT', values: {} }] }),
    400,
    'mutation 0: record name must be well-formed Unicode (it holds a lone surrogate)',
  );
});

test('variant SET in a transaction types its number by its text, as PUT does: 3.0 is a double, 3 an integer', async () => {
  const d = uniq('dbl');
  const i = uniq('int');
  expectSuccess(await srv.req('PUT', `/variants/${d}`, '{"variant":2.5}'), 201, 'variant created successfully', { variant: 2.5 });
  // Whitespace, a nested object with its own "variant" key and a repeated key do not confuse it.
  const body =
    `{"mutations":[{"kind":"variant","name":"${d}","operation":"SET","variant" : 3.0},` +
    `{"kind":"record","name":"${d}-r","operation":"PUT","values":{"variant":7.0}},` +
    `{"kind":"variant","name":"${i}","operation":"SET","variant":1.5,"variant":4},` +
    `{"kind":"variant","name":"${i}-d","operation":"SET","variant":1.0e2}]}`;
  const r = await srv.req('POST', '/txns', body);
  assert.equal(r.status, 200, r.raw);
  assert.ok((await srv.req('GET', `/variants/${d}`)).raw.includes('"variant":3.0'));
  assert.ok((await srv.req('GET', `/variants/${i}`)).raw.includes('"variant":4}'));
  assert.ok((await srv.req('GET', `/variants/${i}-d`)).raw.includes('"variant":100.0'));
  // An integer SET on a double variant is still refused, naming the mutation.
  expectError(
    await srv.req('POST', '/txns', `{"mutations":[{"kind":"variant","name":"${d}","operation":"SET","variant":3}]}`),
    409,
    /mutation 0: variant '.*' holds a double; cannot store an integer/,
  );
});

test('variant ADD in a transaction types its delta by its text, as POST /variants does', async () => {
  const i = uniq('cnt');
  expectSuccess(await srv.req('PUT', `/variants/${i}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expectError(await srv.req('POST', `/variants/${i}`, '{"delta":1.0}'), 409, /integer/);
  expectError(await srv.req('POST', '/txns', `{"mutations":[{"kind":"variant","name":"${i}","operation":"ADD","delta":1.0}]}`), 409, /mutation 0: .*integer/);
  assert.equal((await srv.req('POST', '/txns', `{"mutations":[{"kind":"variant","name":"${i}","operation":"ADD","delta":2}]}`)).status, 200);
  expectSuccess(await srv.req('GET', `/variants/${i}`), 200, 'variant queried successfully', { variant: 3 });
});

test('messages name what the client wrote: a bad operator in a variant check names field value; a bad SET value has no stray brackets', async () => {
  const v = uniq('msg');
  expectSuccess(await srv.req('PUT', `/variants/${v}`, { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
  expectError(
    await srv.req('POST', '/txns', { checks: [{ kind: 'variant', name: v, value: { $foo: 1 } }], mutations: [] }),
    400,
    /transaction check 0: .*'\$foo'.*'value'/,
  );
  expectError(
    await srv.req('POST', '/txns', { mutations: [{ kind: 'variant', name: v, operation: 'SET', variant: null }] }),
    400,
    "mutation 0: field 'variant' must be a string, boolean or number",
  );
});

test('transactions without checks, serializable and not, under concurrency: every ADD, PUT and INSERT applies exactly once; a failing one changes nothing', async () => {
  const a = uniq('nc-a');
  const b = uniq('nc-b');
  const t = uniq('nc-t');
  expectSuccess(await srv.req('PUT', `/variants/${a}`, { variant: 1000 }), 201, 'variant created successfully', { variant: 1000 });
  expectSuccess(await srv.req('PUT', `/variants/${b}`, { variant: 0 }), 201, 'variant created successfully', { variant: 0 });
  expectSuccess(await srv.req('PUT', `/tables/${t}`), 201, 'table created successfully');
  const n = 40;
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      txn({
        serializable: i % 2 === 0,
        mutations: [
          // b before a in the body: the locks are taken in name order whatever the order here.
          { kind: 'variant', name: b, operation: 'ADD', delta: 1 },
          { kind: 'variant', name: a, operation: 'ADD', delta: -1 },
          { name: t, operation: 'INSERT', values: { i } },
          { kind: 'record', name: `${t}-r${i % 4}`, operation: 'PUT', values: { i } },
        ],
      }),
    ),
  );
  const ids = new Set<number>();
  for (const r of answers) {
    assert.equal(r.status, 200, r.raw);
    const res = r.body.data.results as Array<Record<string, number>>;
    ids.add(res[2].t_id);
  }
  assert.equal(ids.size, n, 'every INSERT got a t_id of its own');
  assert.equal(await variant(a), 1000 - n);
  assert.equal(await variant(b), n);
  assert.equal(Object.keys((await rows(t)) as object).length, n);
  // The last mutation fails (no such variant): the ADDs and the INSERT before it are rolled back.
  expectError(
    await txn({
      mutations: [
        { kind: 'variant', name: a, operation: 'ADD', delta: -1 },
        { name: t, operation: 'INSERT', values: { no: true } },
        { kind: 'variant', name: uniq('missing'), operation: 'ADD', delta: 1 },
      ],
    }),
    404,
    /^mutation 2: variant '.*' does not exist$/,
  );
  assert.equal(await variant(a), 1000 - n);
  assert.equal(Object.keys((await rows(t)) as object).length, n);
});
