/**
 * Large PUTs of lists, sets and sorted sets (docs/query.md, "Large
 * writes"): bodies over 1 MiB take the sliced parse and, on the log store,
 * the staged write. What they store is what a small PUT stores; what is
 * refused is refused with the one-step path's message and changes nothing,
 * a refused condition included, which the staged write checks again at its
 * switch.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, STORE, uniq } from '../helpers/server.js';

/** Members per PUT: bodies of about 1.6 MB (over the 1 MiB sliced-parse threshold) and 20 staged slices. */
const N = 40_000;
const member = (i: number): string => `member-${String(i).padStart(7, '0')}-${'x'.repeat(16)}`;
const members = Array.from({ length: N }, (_, i) => member(i));

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ args: STORE === 'postgres' ? ['--pg-statement-timeout-ms', '60000'] : [] });
});
after(async () => {
  await srv?.close();
});

async function setMembers(name: string): Promise<string[]> {
  const r = await srv.req('GET', `/sets/${name}`);
  assert.equal(r.status, 200, r.raw.slice(0, 200));
  return (r.body as { data: { members: string[] } }).data.members;
}

test('a large set PUT stores each member once, in byte order; a repeated member and the object form count once', async () => {
  const s = uniq('ls');
  const shuffled = members.map((_, i) => members[(i * 7919) % N]).concat(members.slice(0, 100));
  assert.equal((await srv.req('PUT', `/sets/${s}`, { set: shuffled })).status, 201);
  assert.deepEqual(await setMembers(s), members);
  const o = uniq('lo');
  assert.equal((await srv.req('PUT', `/sets/${o}`, { set: Object.fromEntries(members.map((m) => [m, true])) })).status, 201);
  assert.equal((await srv.req('GET', `/sets/${o}?limit=1`)).body.data.count, N);
});

test('a large sorted set PUT whose body repeats a member keeps its last score, as a small one does', async () => {
  const z = uniq('lz');
  const body = JSON.stringify({ zset: Object.fromEntries(members.map((m, i) => [m, i])) });
  // The first member again at the end, far from its first place (another slice).
  const repeated = `${body.slice(0, -2)},${JSON.stringify(member(0))}:-5}}`;
  const r = await srv.req('PUT', `/zsets/${z}`, repeated);
  assert.equal(r.status, 201, r.raw.slice(0, 200));
  const first = await srv.req('GET', `/zsets/${z}?start=0&stop=1`);
  assert.deepEqual(first.body.data.items[0], { member: member(0), score: -5 });
  assert.equal(first.body.data.count, N);
});

test('a large PUT with a bad member, bad JSON or a failed condition is refused as a small one is, and changes nothing', async () => {
  const s = uniq('lb');
  assert.equal((await srv.req('PUT', `/sets/${s}`, { set: ['keep'] })).status, 201);
  const bad: unknown[] = [...members];
  bad[35_000] = 7;
  let r = await srv.req('PUT', `/sets/${s}`, { set: bad });
  assert.equal(r.status, 400);
  assert.match(r.raw, /field 'set' item 35000 must be a string/);
  r = await srv.req('PUT', `/sets/${s}`, JSON.stringify({ set: members }).replace(`"${member(30_000)}"`, `"${member(30_000)}`));
  assert.equal(r.status, 400);
  assert.match(r.raw, /request body is not valid JSON/);
  const l = uniq('ll');
  assert.equal((await srv.req('PUT', `/lists/${l}`, { list: ['keep'] })).status, 201);
  r = await srv.req('PUT', `/lists/${l}`, { list: members, if_version: 1 });
  assert.equal(r.status, 412, r.raw.slice(0, 200));
  r = await srv.req('PUT', `/sets/${s}`, { set: members, if_absent: true });
  assert.equal(r.status, 412, r.raw.slice(0, 200));
  assert.deepEqual(await setMembers(s), ['keep']);
  assert.deepEqual((await srv.req('GET', `/lists/${l}`)).body.data.items, ['keep']);
  // A condition that holds: the write goes through.
  const v = (await srv.req('GET', `/lists/${l}`)).headers.etag;
  assert.equal((await srv.req('PUT', `/lists/${l}`, { list: members }, { 'If-Match': String(v) })).status, 200);
  assert.equal((await srv.req('GET', `/lists/${l}?start=-1&stop=-1`)).body.data.items[0], member(N - 1));
});
