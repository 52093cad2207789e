/**
 * Whole-collection writes under SIGKILL (docs/query.md, "Large
 * collections"): a PUT of a large list, set or sorted set, and a combine
 * with `store`, are killed at delays spread over their own measured
 * duration; after the restart the target is its old whole value or the new
 * whole value, never a part. On the log store such a write fills a new
 * incarnation in slices before one batch switches to it: after the last
 * restart, once every target is deleted, the store holds exactly the keys
 * it held before the rounds, so no partial incarnation was left behind.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, STORE, TOKEN, uniq } from '../helpers/server.js';

/** Elements per write: 15 slices of 2,048 on the log, and bodies over the sliced-parse threshold (1 MiB). */
const N = 30_000;
const member = (i: number): string => `m-${String(i).padStart(7, '0')}-${'p'.repeat(32)}`;
const OLD = ['old-a', 'old-b', 'old-c'];

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ testClock: false, args: STORE === 'postgres' ? ['--pg-statement-timeout-ms', '60000'] : [] });
});
after(async () => {
  await srv?.close();
});

/** Sends a request on a connection of its own; resolves to its status, or 0 when the kill cut it off. */
function send(method: string, path: string, body: unknown): Promise<number> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve) => {
    const r = http.request(
      {
        host: '127.0.0.1',
        port: srv.port,
        method,
        path,
        agent: false,
        headers: { 'Auth-Token': TOKEN, 'Content-Type': 'application/json', 'Content-Length': payload.length },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    r.on('error', () => resolve(0));
    r.end(payload);
  });
}

interface Kind {
  what: string;
  /** Writes the old value of `t`. */
  old(t: string): Promise<void>;
  /** The large write whose effect on `t` is killed. */
  write(t: string): Promise<number>;
  /** `t`'s value after the restart: 'old', 'new', or what else it holds. */
  state(t: string): Promise<string>;
}

const newMembers = Array.from({ length: N }, (_, i) => member(i));
const setState = async (path: string, want: string[]): Promise<string> => {
  const r = await srv.req('GET', path);
  assert.equal(r.status, 200, r.raw.slice(0, 200));
  const got = (r.body as { data: { members: string[] } }).data.members;
  if (JSON.stringify(got) === JSON.stringify(OLD)) return 'old';
  if (got.length === want.length && JSON.stringify(got) === JSON.stringify(want)) return 'new';
  return `a part: ${got.length} members`;
};

/** Inputs of the combines: the second holds every other member of the first and N/2 of its own; their union is 1.5 N members. */
const inputA = uniq('inA');
const inputB = uniq('inB');
const union = Array.from({ length: N }, (_, i) => member(i))
  .concat(Array.from({ length: N / 2 }, (_, i) => member(N + i)))
  .sort();

const KINDS: Kind[] = [
  {
    what: 'PUT /sets',
    old: async (t) => assert.equal((await srv.req('PUT', `/sets/${t}`, { set: OLD })).status, 201),
    write: (t) => send('PUT', `/sets/${t}`, { set: newMembers }),
    state: (t) => setState(`/sets/${t}`, newMembers),
  },
  {
    what: 'PUT /zsets',
    old: async (t) => assert.equal((await srv.req('PUT', `/zsets/${t}`, { zset: Object.fromEntries(OLD.map((m, i) => [m, i])) })).status, 201),
    write: (t) => send('PUT', `/zsets/${t}`, { zset: Object.fromEntries(newMembers.map((m, i) => [m, i])) }),
    state: async (t) => {
      const r = await srv.req('GET', `/zsets/${t}`);
      assert.equal(r.status, 200, r.raw.slice(0, 200));
      const items = (r.body as { data: { items: Array<{ member: string; score: number }> } }).data.items;
      if (JSON.stringify(items.map((x) => x.member)) === JSON.stringify(OLD)) return 'old';
      if (items.length === N && items.every((x, i) => x.member === member(i) && x.score === i)) return 'new';
      return `a part: ${items.length} members`;
    },
  },
  {
    what: 'PUT /lists',
    old: async (t) => assert.equal((await srv.req('PUT', `/lists/${t}`, { list: OLD })).status, 201),
    write: (t) => send('PUT', `/lists/${t}`, { list: newMembers }),
    state: async (t) => {
      const r = await srv.req('GET', `/lists/${t}`);
      assert.equal(r.status, 200, r.raw.slice(0, 200));
      const items = (r.body as { data: { items: string[] } }).data.items;
      if (JSON.stringify(items) === JSON.stringify(OLD)) return 'old';
      if (JSON.stringify(items) === JSON.stringify(newMembers)) return 'new';
      return `a part: ${items.length} items`;
    },
  },
  {
    what: 'combine union with store',
    old: async (t) => assert.equal((await srv.req('PUT', `/sets/${t}`, { set: OLD })).status, 201),
    write: (t) => send('POST', `/sets/${inputA}/combine`, { op: 'union', with: [inputB], store: t }),
    state: (t) => setState(`/sets/${t}`, union),
  },
];

/** The store's keys, from /metrics (the log store's key directory; undefined on a store without one). */
async function keys(): Promise<number | undefined> {
  const r = await srv.req('GET', '/metrics');
  const m = /^pithos_keys (\d+)$/m.exec(r.raw);
  return m === null ? undefined : Number(m[1]);
}

test('SIGKILL during large PUTs and combines with store: after the restart each target is its old or its new whole value', async () => {
  const b = Array.from({ length: N }, (_, i) => member(i < N / 2 ? 2 * i : N / 2 + i));
  assert.equal((await srv.req('PUT', `/sets/${inputA}`, { set: newMembers })).status, 201);
  assert.equal((await srv.req('PUT', `/sets/${inputB}`, { set: b })).status, 201);
  const baseline = await keys();
  const targets: Array<[Kind, string]> = [];
  const seen: string[] = [];
  for (const kind of KINDS) {
    // The write's own duration, measured here: the kills fall at fractions of it.
    const probe = uniq('full');
    await kind.old(probe);
    const t0 = performance.now();
    assert.ok([200, 201].includes(await kind.write(probe)), `${kind.what} of ${N} elements`);
    const full = performance.now() - t0;
    assert.equal(await kind.state(probe), 'new');
    targets.push([kind, probe]);
    const outcomes: string[] = [];
    for (const frac of [0.2, 0.5, 0.8]) {
      const t = uniq('t');
      await kind.old(t);
      targets.push([kind, t]);
      const w = kind.write(t);
      await new Promise((r) => setTimeout(r, full * frac));
      await srv.kill('SIGKILL');
      const status = await w;
      await srv.spawn();
      const state = await kind.state(t);
      outcomes.push(`${Math.round(full * frac)} ms: ${status === 0 ? 'cut off' : status}, ${state}`);
      assert.ok(state === 'old' || state === 'new', `${kind.what} killed after ${Math.round(full * frac)} ms left ${state}`);
      // An acknowledged write is there after the kill.
      if (status === 200 || status === 201) assert.equal(state, 'new', `${kind.what} acknowledged, then lost`);
    }
    seen.push(`${kind.what} (${Math.round(full)} ms whole): ${outcomes.join('; ')}`);
  }
  console.log(`# ${STORE}:\n# ${seen.join('\n# ')}`);
  // Each kind was killed at least once before its switch.
  for (const line of seen) assert.match(line, /old/, line);
  if (STORE !== 'postgres') {
    // And some kill fell while a new incarnation was being filled: a restart found it and dropped it.
    const logs = srv.history.map((h) => h.stdout + h.stderr).join('');
    assert.match(logs, /dropped the partial elements of \d+ whole-collection write/);
  }
  if (baseline !== undefined) {
    for (const [kind, t] of targets) {
      const path = kind.what === 'PUT /zsets' ? `/zsets/${t}` : kind.what === 'PUT /lists' ? `/lists/${t}` : `/sets/${t}`;
      assert.equal((await srv.req('DELETE', path)).status, 200);
    }
    assert.equal(await keys(), baseline, 'every partial incarnation was dropped at a restart');
  }
});
