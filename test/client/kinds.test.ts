/**
 * The kinds of named object are declared once on the server (src/store/kinds.ts); the
 * client and the console ship without src/ and so keep their own lists. These tests hold
 * those lists equal to the server's table, as client.test.ts holds the client's endpoints
 * equal to the route table.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KINDS as CLIENT_KINDS } from '../../client/index.js';
import { ROUTES } from '../../src/http/routes.js';
import { KIND_NAMES, KINDS } from '../../src/store/kinds.js';
import { FEED_KINDS, SECTIONS } from '../../web/lib/kinds.js';

test("the client's kinds are the server's, in the same order", () => {
  assert.deepEqual([...CLIENT_KINDS], KIND_NAMES);
});

test("the console's sections and feed filter are the server's kinds", () => {
  assert.deepEqual(
    Object.entries(SECTIONS).map(([section, s]) => [section, s.kind]),
    KIND_NAMES.map((k) => [KINDS[k].plural, k]),
  );
  assert.deepEqual([...FEED_KINDS], KIND_NAMES);
});

test('every kind has its listing at its plural path, and its routes name it', () => {
  for (const k of KIND_NAMES) {
    const plural = KINDS[k].plural;
    assert.ok(
      ROUTES.some((r) => r.method === 'GET' && r.path === `/${plural}`),
      `GET /${plural} is in the route table`,
    );
    const under = ROUTES.filter((r) => r.path.startsWith(`/${plural}/`));
    assert.ok(under.length > 0, `routes under /${plural}/`);
    for (const r of under) assert.equal(r.names, k, `${r.method} ${r.path} names a ${k}`);
  }
});
