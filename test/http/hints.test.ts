/** Unit test of the hint for a query sent to the insert path (docs/api.md). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rowsHint } from '../../src/http/hints.js';

test('rowsHint: wheres without rows names the query paths; otherwise nothing', () => {
  assert.equal(
    rowsHint({ wheres: { a: 1 } }, 'users'),
    " (the body has 'wheres': to query rows use GET /tables/users/rows or POST /tables/users/query; POST /tables/users/rows inserts)",
  );
  assert.equal(rowsHint({ rows: { a: 1 }, wheres: {} }, 'users'), '');
  assert.equal(rowsHint({}, 'users'), '');
  assert.equal(rowsHint({ row: {} }, 'users'), '');
  assert.match(rowsHint({ wheres: {} }), /GET \/tables\/<name>\/rows or POST \/tables\/<name>\/query/);
  // the name is shown as it goes in a path
  assert.match(rowsHint({ wheres: {} }, 'a b/c'), /GET \/tables\/a%20b%2Fc\/rows/);
  // an inherited 'wheres' is not the client's
  const proto = Object.create({ wheres: {} }) as Record<string, unknown>;
  assert.equal(rowsHint(proto, 't'), '');
  const bare = Object.create(null) as Record<string, unknown>;
  bare.wheres = {};
  assert.notEqual(rowsHint(bare, 't'), '');
});
