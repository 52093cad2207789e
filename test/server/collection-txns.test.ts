/**
 * Sets and sorted sets in POST /txns (docs/api.md, "Transactions"): set
 * ADD / REMOVE, zset ADD / INCR / REMOVE with the single operations'
 * results, checks (set `contains` and `count`, zset `score` of a member and
 * `count`, `exists`), all or nothing, and bad shapes naming the mutation.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, uniq } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ fsync: 'never' });
});
after(async () => {
  await srv?.close();
});

const DONE = 'transaction execute successfully';

test('mutations on sets and sorted sets apply in order and answer as the single operations do', async () => {
  const [s, z, v] = [uniq('s'), uniq('z'), uniq('v')];
  const r = await srv.req('POST', '/txns', {
    mutations: [
      { kind: 'set', name: s, operation: 'ADD', members: ['a', 'b', 'a'] },
      { kind: 'set', name: s, operation: 'REMOVE', members: ['a', 'q'] },
      { kind: 'zset', name: z, operation: 'ADD', members: { x: 1, y: 2 } },
      { kind: 'zset', name: z, operation: 'INCR', member: 'x', delta: 5 },
      { kind: 'zset', name: z, operation: 'ADD', members: { y: 1, w: 0 }, mode: 'gt' },
      { kind: 'zset', name: z, operation: 'REMOVE', members: ['w'] },
      { kind: 'variant', name: v, operation: 'SET', variant: 1 },
    ],
  });
  expectSuccess(r, 200, DONE, {
    results: [
      { added: 2, count: 2 },
      { removed: 1, count: 1 },
      { added: 2, updated: 0, count: 2 },
      { score: 6 },
      { added: 1, updated: 0, count: 3 },
      { removed: 1, count: 2 },
      {},
    ],
  });
  expectSuccess(await srv.req('GET', `/set/${s}`), 200, 'set queried successfully', { set: ['b'] });
  expectSuccess(await srv.req('GET', `/zset/${z}`), 200, 'zset queried successfully', { zset: { y: 2, x: 6 } });
  expectSuccess(await srv.req('GET', `/zsets/${z}/members/x`), 200, 'zset member queried successfully', { score: 6, rank: 1, rev_rank: 0 });
});

test('checks: set contains and count, zset score and count, exists; a failed check changes nothing', async () => {
  const [s, z] = [uniq('s'), uniq('z')];
  await srv.req('PUT', `/sets/${s}`, { set: ['a', 'b'] });
  await srv.req('PUT', `/zsets/${z}`, { zset: { m: 10, n: 3 } });
  const add = { kind: 'zset', name: z, operation: 'INCR', member: 'm', delta: -10 };
  const ok = [
    { kind: 'set', name: s, contains: 'a', count: 2 },
    { kind: 'set', name: s, count: { $gte: 2 } },
    { kind: 'zset', name: z, member: 'm', score: { $gte: 10 }, count: 2 },
    { kind: 'zset', name: uniq('none'), exists: false },
  ];
  expectSuccess(await srv.req('POST', '/txns', { checks: ok, mutations: [add] }), 200, DONE, { results: [{ score: 0 }] });
  const fails: Array<[unknown, string]> = [
    [{ kind: 'set', name: s, contains: 'zz' }, `transaction check 0 failed: set '${s}' does not contain "zz"`],
    [{ kind: 'set', name: s, count: 3 }, `transaction check 0 failed: set '${s}' has 2 member(s), which does not match 3`],
    [{ kind: 'set', name: s, exists: false }, `transaction check 0 failed: set '${s}' exists`],
    [
      { kind: 'zset', name: z, member: 'm', score: { $gte: 10 } },
      `transaction check 0 failed: zset '${z}' member "m" has score 0, which does not match {"$gte":10}`,
    ],
    [{ kind: 'zset', name: z, member: 'q', score: 1 }, `transaction check 0 failed: "q" is not a member of zset '${z}'`],
    [{ kind: 'zset', name: 'nozset', count: 0 }, `transaction check 0 failed: zset 'nozset' does not exist`],
  ];
  for (const [c, msg] of fails) expectError(await srv.req('POST', '/txns', { checks: [c], mutations: [add] }), 409, msg);
  expectSuccess(await srv.req('GET', `/zsets/${z}/members/m`), 200, 'zset member queried successfully', { score: 0, rank: 0, rev_rank: 1 });
});

test('all or nothing: a failing later mutation leaves earlier set and zset mutations unapplied', async () => {
  const [s, z] = [uniq('s'), uniq('z')];
  await srv.req('PUT', `/zsets/${z}`, { zset: { big: 1e308 } });
  const v = (await srv.req('GET', `/zsets/${z}`)).headers.etag;
  expectError(
    await srv.req('POST', '/txns', {
      mutations: [
        { kind: 'set', name: s, operation: 'ADD', members: ['a'] },
        { kind: 'zset', name: z, operation: 'ADD', members: { other: 1 } },
        { kind: 'zset', name: z, operation: 'INCR', member: 'big', delta: 1e308 },
      ],
    }),
    409,
    /^mutation 2: zset '.*' member "big": score 1e\+308 \+ 1e\+308 is not a finite number$/,
  );
  expectError(await srv.req('GET', `/sets/${s}`), 404);
  const g = await srv.req('GET', `/zsets/${z}`);
  expectSuccess(g, 200, 'zset queried successfully', { items: [{ member: 'big', score: 1e308 }], count: 1 });
  assert.equal(g.headers.etag, v);
  expectError(
    await srv.req('POST', '/txns', {
      mutations: [
        { kind: 'set', name: s, operation: 'ADD', members: ['a'] },
        { kind: 'set', name: uniq('missing'), operation: 'REMOVE', members: ['a'] },
      ],
    }),
    404,
    /^mutation 1: set '.*' does not exist$/,
  );
  expectError(await srv.req('GET', `/sets/${s}`), 404);
});

test('bad mutations and checks are 400 naming their index and field', async () => {
  const cases: Array<[unknown, unknown, string | RegExp]> = [
    [{ kind: 'set', name: 's', operation: 'INCR' }, undefined, "mutation 0: field 'operation' must be one of ADD, REMOVE for a set, not 'INCR'"],
    [{ kind: 'set', name: 's', operation: 'ADD', members: [] }, undefined, "mutation 0: field 'members' must not be empty"],
    [{ kind: 'set', name: 's', operation: 'ADD', members: [1] }, undefined, "mutation 0: field 'members' item 0 must be a string"],
    [{ kind: 'set', name: 's', operation: 'ADD', members: ['a'], extra: 1 }, undefined, /^mutation 0: unknown field 'extra'/],
    [{ kind: 'zset', name: 'z', operation: 'ADD', members: { a: 'x' } }, undefined, `mutation 0: field 'members' member "a" must be a finite number`],
    [{ kind: 'zset', name: 'z', operation: 'ADD', members: { a: 1 }, mode: 'ch' }, undefined, "mutation 0: field 'mode' must be upsert, nx, xx, gt or lt"],
    [{ kind: 'zset', name: 'z', operation: 'INCR', member: 'a' }, undefined, "mutation 0: field 'delta' (required) must be a finite number"],
    [
      { kind: 'zset', name: 'z', operation: 'INCR', member: 'x'.repeat(4097), delta: 1 },
      undefined,
      "mutation 0: field 'member' must be at most 4096 bytes of UTF-8",
    ],
    [{ kind: 'set', name: 's', operation: 'ADD', members: ['a'] }, { kind: 'set', name: 's' }, "check 0: a set check needs 'exists', 'contains' or 'count'"],
    [
      { kind: 'set', name: 's', operation: 'ADD', members: ['a'] },
      { kind: 'zset', name: 'z', member: 'a' },
      "check 0: a zset check takes 'member' and 'score' together",
    ],
    [{ kind: 'set', name: 's', operation: 'ADD', members: ['a'] }, { kind: 'list', name: 'z' }, "check 0: a list check needs 'length' or 'exists'"],
    [
      { kind: 'set', name: 's', operation: 'ADD', members: ['a'] },
      { kind: 'lock', name: 'z' },
      "check 0: field 'kind' must be 'table', 'variant', 'record', 'list', 'set' or 'zset'",
    ],
  ];
  for (const [m, c, msg] of cases) {
    expectError(await srv.req('POST', '/txns', c === undefined ? { mutations: [m] } : { mutations: [m], checks: [c] }), 400, msg);
  }
  expectError(await srv.req('GET', '/sets/s'), 404);
});
