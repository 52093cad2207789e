/**
 * The kinds table (src/store/kinds.ts) says which fields a listing item of
 * each kind has beside `name` and `ttl_ms`; this holds each store's listing
 * (GET /<kind>s) to it, on whichever store the suite runs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Kind, KIND_NAMES, KINDS } from '../../src/store/kinds.js';
import { PithosServer, uniq } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

/** One write that creates an object of each kind: its method and body. */
const CREATE: Record<Kind, [string, unknown]> = {
  table: ['PUT', undefined],
  record: ['PUT', { record: { a: 1 } }],
  variant: ['PUT', { variant: 1 }],
  lock: ['PUT', { ttl: 60 }],
  list: ['PUT', { list: [1, 2] }],
  set: ['PUT', { set: ['a'] }],
  zset: ['PUT', { zset: { a: 1 } }],
};

test("every kind's listing items have name, ttl_ms and the kinds table's listing fields, no more", async () => {
  const name = uniq('kinds');
  for (const k of KIND_NAMES) {
    const plural = KINDS[k].plural;
    const [method, body] = CREATE[k];
    const made = await srv.req(method, `/${plural}/${name}`, body);
    assert.ok(made.status === 200 || made.status === 201, `${method} /${plural}/${name}: ${made.status} ${made.raw}`);
    const r = await srv.req('GET', `/${plural}?prefix=${name}`);
    assert.equal(r.status, 200, r.raw);
    const items = r.body.data.items as Array<Record<string, unknown>>;
    assert.equal(items.length, 1, `${plural}: ${r.raw}`);
    assert.deepEqual(Object.keys(items[0]).sort(), ['name', 'ttl_ms', ...KINDS[k].listing].sort(), `${plural}: ${r.raw}`);
  }
});
