/**
 * Round trips of Redis commands on the shared store (src/redis/strings.ts,
 * keyspace.ts `ifInMemory`): the fast paths that answer from memory on the
 * log store must not send a read to PostgreSQL only to throw its answer
 * away, and a write that replaces a key deletes only the kinds that hold
 * it. Each statement the pool's clients send is counted while one
 * command runs through the command table. Needs PostgreSQL: runs in the
 * PostgreSQL pass of `npm test`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { PgStore } from '../../src/store/postgres/index.js';
import { type Caller, replyJson, RestRunner } from '../../src/redis/upstash.js';
import { freshSchema } from '../helpers/postgres.js';

const PG_URL = process.env.PITHOS_TEST_STORE;
const skip = PG_URL === undefined ? 'needs PostgreSQL (runs in the PostgreSQL pass of npm test)' : false;
let store: PgStore | undefined;
let runner: RestRunner;

const caller: Caller = { name: 't', may: () => true, addr: 'test', gone: new AbortController().signal };

/** A command's reply as Upstash's JSON, for comparing. */
async function run(words: string[]): Promise<string> {
  return replyJson((await runner.run(words, caller)) ?? null, false);
}

/** Runs one command and counts the statements sent to PostgreSQL meanwhile (the pool's clients, the group commit's included). */
async function statements(words: string[]): Promise<{ reply: string; sent: string[] }> {
  const sent: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0];
    sent.push(typeof q === 'string' ? q : String((q as { text?: unknown } | null)?.text ?? q));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    return { reply: await run(words), sent };
  } finally {
    pg.Client.prototype.query = query;
  }
}

before(async () => {
  if (PG_URL === undefined) return;
  const url = await freshSchema(PG_URL, `pgrt_${process.pid}`);
  store = await PgStore.open({ url, poolSize: 4, statementTimeoutMs: 30_000, offsetMs: () => 0, log: () => undefined });
  runner = new RestRunner({ store, version: 'test', storeName: 'postgres', port: () => 0, log: () => undefined });
  assert.equal(await run(['SET', 's', 'text']), '"OK"');
  assert.equal(await run(['SET', 'n', '5']), '"OK"');
});
after(async () => {
  await store?.close();
});

test('GET, INCR and SET of an existing string are one statement each', { skip }, async () => {
  const get = await statements(['GET', 's']);
  assert.equal(get.reply, '"text"');
  assert.equal(get.sent.length, 1, get.sent.join('\n'));
  const incr = await statements(['INCR', 'n']);
  assert.equal(incr.reply, '6');
  assert.equal(incr.sent.length, 1, incr.sent.join('\n'));
  const set = await statements(['SET', 's', 'other']);
  assert.equal(set.reply, '"OK"');
  assert.equal(set.sent.length, 1, set.sent.join('\n'));
});

test('INCR of a missing key sends its add once, then creates the counter from the delta', { skip }, async () => {
  const incr = await statements(['INCR', 'fresh']);
  assert.equal(incr.reply, '1');
  // The add, refused for want of the counter, is not sent again before the create.
  assert.equal(incr.sent.filter((q) => /^\s*UPDATE pithos_variants/.test(q)).length, 1, incr.sent.join('\n'));
  assert.equal(incr.sent.filter((q) => /^\s*INSERT INTO pithos_variants/.test(q)).length, 1, incr.sent.join('\n'));
  assert.equal(await run(['GET', 'fresh']), '"1"');
});

test('a push onto an existing list reads nothing before it', { skip }, async () => {
  assert.equal(await run(['RPUSH', 'l', 'a']), '1');
  const before = await statements(['RPUSH', 'l', 'b']);
  assert.equal(before.reply, '2');
  assert.ok(!before.sent.some((q) => /^\s*SELECT/i.test(q) && /pithos_lists/.test(q) && !/FOR UPDATE/i.test(q)), before.sent.join('\n'));
});

test('SET of a new key and DEL of a string delete only the kinds that hold the key', { skip }, async () => {
  const set = await statements(['SET', 'new', 'v']);
  assert.equal(set.reply, '"OK"');
  const deletes = (sent: string[]): string[] => sent.filter((q) => /^\s*(DELETE|BEGIN)/i.test(q));
  // The create, and one question of which other kinds hold the name: none, so nothing is deleted.
  assert.deepEqual(deletes(set.sent), [], set.sent.join('\n'));
  assert.equal(set.sent.length, 2, set.sent.join('\n'));
  const del = await statements(['DEL', 'new']);
  assert.equal(del.reply, '1');
  assert.equal(deletes(del.sent).length, 1, del.sent.join('\n'));
  assert.equal(await run(['EXISTS', 'new']), '0');
});
