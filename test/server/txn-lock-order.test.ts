/**
 * POST /txns over lists, sets and sorted sets that do not exist yet, run
 * concurrently with transactions that find them created (docs/scaling.md,
 * "Transactions"): every object written is locked in name order, a
 * collection still to be created included, so such transactions queue and
 * all of them answer 200. On the PostgreSQL pass the server's sessions get a
 * deadlock_timeout far beyond the request's deadline: a deadlock between two
 * of them is then not broken by the database, and shows as a 503 here
 * instead of as a second's wait and a silent retry. Checks see a collection
 * the transaction is about to create as absent, as on the log store.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, PithosServer, expectError, expectSuccess, poster, uniq, type Res } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  let store: string | undefined;
  if (PG_URL !== undefined) {
    const u = new URL(await freshSchema(PG_URL, `lockorder${process.pid}`));
    u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c deadlock_timeout=600s`);
    store = u.toString();
  }
  srv = await PithosServer.start({ fsync: 'never', store });
});
after(async () => {
  await srv?.close();
});

const DONE = 'transaction execute successfully';

test('concurrent transactions creating a list, a set and a sorted set and popping an existing list all answer 200', async () => {
  const workers = 12;
  const each = 3;
  const agent = new http.Agent({ keepAlive: true, maxSockets: workers });
  const post = poster(srv, agent);
  try {
    for (let round = 0; round < 3; round++) {
      const [l, s, z, q] = [uniq('ol'), uniq('os'), uniq('oz'), uniq('oq')];
      const queue = Array.from({ length: workers * each }, (_, k) => `q${k}`);
      expectSuccess(await srv.req('PUT', `/lists/${q}`, { list: queue }), 201, 'list created successfully');
      const failed: string[] = [];
      const worker = async (w: number): Promise<void> => {
        for (let k = 0; k < each && failed.length === 0; k++) {
          const i = `${w}-${k}`;
          // l, s and z sort before q, which exists: the order the locks are taken in is not the order of creation.
          const r: Res = await post('/txns', {
            mutations: [
              { kind: 'list', name: l, operation: 'PUSH', values: [i], side: 'right' },
              { kind: 'set', name: s, operation: 'ADD', members: [i] },
              { kind: 'zset', name: z, operation: 'INCR', member: 'total', delta: 1 },
              { kind: 'list', name: q, operation: 'POP', side: 'left', count: 1 },
            ],
          });
          if (r.status !== 200) failed.push(`${r.status} ${r.raw.slice(0, 300)}`);
        }
      };
      await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
      assert.deepEqual(failed, [], `round ${round}: transactions that did not answer 200`);
      const n = workers * each;
      const lr = await srv.req('GET', `/lists/${l}`);
      assert.equal(lr.status, 200, lr.raw.slice(0, 200));
      assert.equal(lr.body.data.items.length, n, `round ${round}: items pushed`);
      const sr = await srv.req('GET', `/sets/${s}`);
      assert.equal(sr.status, 200, sr.raw.slice(0, 200));
      assert.equal(sr.body.data.count, n, `round ${round}: members added`);
      expectSuccess(await srv.req('GET', `/zsets/${z}/members/total`), 200, 'zset member queried successfully', { score: n, rank: 0, rev_rank: 0 });
      expectSuccess(await srv.req('GET', `/lists/${q}`), 200, 'list queried successfully', { items: [], length: 0 });
    }
  } finally {
    agent.destroy();
  }
});

test('checks on a collection the transaction creates see it absent; a pop or remove of a missing one creates nothing', async () => {
  const [l, s, z] = [uniq('cl'), uniq('cs'), uniq('cz')];
  const writes = [
    { kind: 'list', name: l, operation: 'PUSH', values: [1], side: 'right' },
    { kind: 'set', name: s, operation: 'ADD', members: ['a'] },
    { kind: 'zset', name: z, operation: 'INCR', member: 'm', delta: 2 },
  ];
  expectError(
    await srv.req('POST', '/txns', { checks: [{ kind: 'set', name: s, exists: true }], mutations: writes }),
    409,
    `transaction check 0 failed: set '${s}' does not exist`,
  );
  expectError(
    await srv.req('POST', '/txns', { checks: [{ kind: 'zset', name: z, count: 0 }], mutations: writes }),
    409,
    `transaction check 0 failed: zset '${z}' does not exist`,
  );
  expectError(
    await srv.req('POST', '/txns', { checks: [{ kind: 'list', name: l, length: 0 }], mutations: writes }),
    409,
    `transaction check 0 failed: list '${l}' does not exist`,
  );
  for (const [m, what] of [
    [{ kind: 'list', name: l, operation: 'POP', side: 'left', count: 1 }, `list '${l}'`],
    [{ kind: 'set', name: s, operation: 'REMOVE', members: ['a'] }, `set '${s}'`],
    [{ kind: 'zset', name: z, operation: 'REMOVE', members: ['m'] }, `zset '${z}'`],
  ] as const) {
    expectError(await srv.req('POST', '/txns', { mutations: [m, ...writes] }), 404, `mutation 0: ${what} does not exist`);
  }
  for (const p of [`/lists/${l}`, `/sets/${s}`, `/zsets/${z}`]) expectError(await srv.req('GET', p), 404);
  const checks = [
    { kind: 'list', name: l, exists: false },
    { kind: 'set', name: s, exists: false },
    { kind: 'zset', name: z, exists: false },
  ];
  expectSuccess(await srv.req('POST', '/txns', { checks, mutations: writes }), 200, DONE, {
    results: [{ length: 1 }, { added: 1, count: 1 }, { score: 2 }],
  });
  expectSuccess(await srv.req('GET', `/zsets/${z}/members/m`), 200, 'zset member queried successfully', { score: 2, rank: 0, rev_rank: 0 });
});
