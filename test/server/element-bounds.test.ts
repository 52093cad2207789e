/**
 * The one bound of element operations (docs/api.md, "Element bounds"),
 * black-box on either store: a list push, a pop, a set's add, remove and
 * contains, a sorted set's add and remove, and the same operations as
 * mutations of a transaction each take at most 1,000 elements, refuse more
 * with the same message and change nothing; a whole content (PUT) is not an
 * element operation and takes more.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, etag, expectError, expectSuccess, uniq } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

const BOUND = 1000;
const strings = (n: number, p = 'm'): string[] => Array.from({ length: n }, (_, i) => `${p}${i}`);
const scores = (n: number): Record<string, number> => Object.fromEntries(strings(n).map((m, i) => [m, i]));
const over = (field: string, n: number, asks = false) => `field '${field}' ${asks ? 'asks for' : 'holds'} ${n} elements; one request takes at most ${BOUND}`;

test('every element operation takes at most 1,000 elements a request and refuses more with one message, changing nothing', async () => {
  const [l, s, z] = [uniq('bl'), uniq('bs'), uniq('bz')];
  // A whole content is not bounded so: 1,500 in one PUT each.
  expectSuccess(await srv.req('PUT', `/lists/${l}`, { list: strings(1500) }), 201, 'list created successfully');
  expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: strings(1500) }), 201, 'set created successfully');
  expectSuccess(await srv.req('PUT', `/zsets/${z}`, { zset: scores(1500) }), 201, 'zset created successfully');
  const versions = async () => [
    etag(await srv.req('GET', `/lists/${l}`)),
    etag(await srv.req('GET', `/sets/${s}?limit=1`)),
    etag(await srv.req('GET', `/zsets/${z}`)),
  ];
  const before = await versions();

  const refused: Array<[string, string, unknown, string]> = [
    ['POST', `/lists/${l}/push`, { values: strings(BOUND + 1, 'v') }, over('values', BOUND + 1)],
    ['POST', `/lists/${l}/pop`, { count: BOUND + 1 }, over('count', BOUND + 1, true)],
    ['POST', `/sets/${s}/add`, { members: strings(BOUND + 1, 'n') }, over('members', BOUND + 1)],
    ['POST', `/sets/${s}/remove`, { members: strings(BOUND + 1) }, over('members', BOUND + 1)],
    ['POST', `/sets/${s}/contains`, { members: strings(BOUND + 7) }, over('members', BOUND + 7)],
    ['POST', `/zsets/${z}/add`, { members: scores(BOUND + 1) }, over('members', BOUND + 1)],
    ['POST', `/zsets/${z}/remove`, { members: strings(2 * BOUND) }, over('members', 2 * BOUND)],
    ['POST', '/txns', { mutations: [{ kind: 'list', name: l, operation: 'PUSH', values: strings(BOUND + 1) }] }, `mutation 0: ${over('values', BOUND + 1)}`],
    ['POST', '/txns', { mutations: [{ kind: 'list', name: l, operation: 'POP', count: BOUND + 1 }] }, `mutation 0: ${over('count', BOUND + 1, true)}`],
    [
      'POST',
      '/txns',
      { mutations: [{ kind: 'set', name: s, operation: 'ADD', members: strings(BOUND + 1, 'n') }] },
      `mutation 0: ${over('members', BOUND + 1)}`,
    ],
    ['POST', '/txns', { mutations: [{ kind: 'zset', name: z, operation: 'ADD', members: scores(BOUND + 1) }] }, `mutation 0: ${over('members', BOUND + 1)}`],
  ];
  for (const [m, p, body, message] of refused) expectError(await srv.req(m, p, body), 400, message);
  assert.deepEqual(await versions(), before, 'a refused element operation changed something');
  assert.equal((await srv.req('GET', `/lists/${l}`)).body.data.length, 1500);

  // Exactly the bound is taken, by each operation.
  expectSuccess(await srv.req('POST', `/lists/${l}/push`, { values: strings(BOUND, 'v') }), 200, 'list pushed successfully', { length: 1500 + BOUND });
  const popped = await srv.req('POST', `/lists/${l}/pop`, { count: BOUND });
  assert.equal(popped.status, 200);
  assert.equal(popped.body.data.items.length, BOUND);
  expectSuccess(await srv.req('POST', `/sets/${s}/add`, { members: strings(BOUND, 'n') }), 200, 'set members added successfully', {
    added: BOUND,
    count: 1500 + BOUND,
  });
  expectSuccess(await srv.req('POST', `/sets/${s}/remove`, { members: strings(BOUND, 'n') }), 200, 'set members removed successfully', {
    removed: BOUND,
    count: 1500,
  });
  const found = await srv.req('POST', `/sets/${s}/contains`, { members: strings(BOUND) });
  assert.equal(found.status, 200);
  expectSuccess(await srv.req('POST', `/zsets/${z}/remove`, { members: strings(BOUND) }), 200, 'zset members removed successfully', {
    removed: BOUND,
    count: 500,
  });
  const tx = await srv.req('POST', '/txns', { mutations: [{ kind: 'list', name: l, operation: 'PUSH', values: strings(BOUND) }] });
  assert.equal(tx.status, 200, JSON.stringify(tx.body));
});
