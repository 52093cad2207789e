/**
 * The shared store's change feed, driven on PgStore directly with a real
 * PostgreSQL (docs/scaling.md, "The change feed"): the watermark holds back a
 * change while a transaction that drew a lower version is still open, then
 * publishes both in version order; pruning raises the floor, and a replay
 * from below it answers "cannot" (the client gets reset). Runs on the
 * PostgreSQL pass of `npm test` only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { PgStore } from '../../src/store/postgres/index.js';
import { FEED_RETENTION_MS, type PgChanges } from '../../src/store/postgres/changes.js';
import type { Change } from '../../src/store/store.js';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL, sleep } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;

async function open(name: string): Promise<{ url: string; s: PgStore }> {
  const url = await freshSchema(PG_URL as string, `${name}${process.pid}`);
  const s = await PgStore.open({ url, poolSize: 10, statementTimeoutMs: 5000, offsetMs: () => 0, log: () => {} });
  assert.ok(s.changes !== undefined, 'PostgreSQL 13+ has the change feed');
  return { url, s };
}

/** A store, a subscription recording what it publishes (and gaps), and a second connection to hold transactions open on. */
async function watched(
  name: string,
): Promise<{ url: string; s: PgStore; feed: PgChanges; seen: Change[]; gaps: number[]; slow: pg.Client; done(): Promise<void> }> {
  const { url, s } = await open(name);
  const feed = s.changes as PgChanges;
  const seen: Change[] = [];
  const gaps: number[] = [];
  const off = feed.subscribe(
    (b) => seen.push(...b),
    (v) => gaps.push(v),
  );
  const slow = new pg.Client({ connectionString: url });
  await slow.connect();
  return {
    url,
    s,
    feed,
    seen,
    gaps,
    slow,
    done: async () => {
      off();
      await slow.end();
      await s.close();
    },
  };
}

/**
 * Waits until `done()` holds, polling, for at most 20 s, then returns either way: the
 * assertion after it says what is missing. The feed publishes within a poll or two
 * (50 ms), but on a busy machine its polls, and the commits they wait for, may take seconds.
 */
async function settled(done: () => boolean): Promise<void> {
  for (const end = Date.now() + 20_000; !done() && Date.now() < end;) await sleep(20);
}

/** An open transaction with an id (a psql session inside BEGIN after a write): the feed's watermark stays below it. */
async function holdOpen(c: pg.Client): Promise<void> {
  await c.query('BEGIN');
  await c.query('SELECT pg_current_xact_id()');
}

test('a change is not published while a transaction holding a lower version is open; then both, in version order', { skip }, async () => {
  const { s, feed, seen, slow, done } = await watched('feedwm');
  try {
    await slow.query('BEGIN');
    const held = await slow.query(`INSERT INTO pithos_records (id, body, version) VALUES ('slow', '{"a":1}', nextval('pithos_seq')) RETURNING version`);
    const low = Number(held.rows[0].version);
    await s.records.put('fast', { b: 2 }, 0);
    const out = { version: 0 };
    await s.records.get('fast', out);
    const high = out.version;
    assert.ok(high > low, `versions ${low} < ${high}`);
    // Many polls go by: nothing of either may be published (the higher one would be out of order).
    await sleep(600);
    assert.deepEqual(
      seen.map((c) => c.name),
      [],
      'nothing published while the lower version is uncommitted',
    );
    assert.ok(feed.lastVersion < low, `the feed stayed below ${low} (at ${feed.lastVersion})`);
    await slow.query('COMMIT');
    await settled(() => seen.length >= 2);
    assert.deepEqual(
      seen.map((c) => [c.type, c.name, c.version]),
      [
        ['put', 'slow', low],
        ['put', 'fast', high],
      ],
    );
    // A rolled-back writer holds the feed back too, and leaves no change.
    await slow.query('BEGIN');
    await slow.query(`UPDATE pithos_records SET body = '{"a":9}', version = nextval('pithos_seq') WHERE id = 'slow'`);
    await s.records.put('fast', { b: 3 }, 0);
    await sleep(300);
    assert.equal(seen.length, 2, 'held back behind the open transaction');
    await slow.query('ROLLBACK');
    await settled(() => seen.length >= 3);
    await sleep(200);
    assert.deepEqual(
      seen.slice(2).map((c) => [c.type, c.name, c.value]),
      [['put', 'fast', '{"b":3}']],
    );
  } finally {
    await done();
  }
});

test('pruning: changes older than the retention go, the floor rises, a replay from below it cannot be exact, above it is', { skip }, async () => {
  const { s } = await open('feedprune');
  const feed = s.changes!;
  try {
    await s.records.put('a', { n: 1 }, 0);
    const t0 = Date.now();
    await feed.prune(t0); // marks the sequence's position now
    const va = { version: 0 };
    await s.records.get('a', va);
    await s.records.put('b', { n: 2 }, 0);
    const vb = { version: 0 };
    await s.records.get('b', vb);
    await settled(() => feed.lastVersion >= vb.version);
    const upto = feed.lastVersion;
    const replayed = async (after: number): Promise<[boolean, string[]]> => {
      const names: string[] = [];
      const ok = await feed.replay(after, upto, (b) => names.push(...b.map((c) => c.name)));
      return [ok, names];
    };
    assert.deepEqual(await replayed(0), [true, ['a', 'b']], 'everything is still held');
    // An hour and a bit later: what was written before the first mark is pruned.
    await feed.prune(t0 + FEED_RETENTION_MS + 1000);
    assert.deepEqual((await replayed(0))[0], false, 'from before the floor: reset');
    assert.deepEqual(await replayed(vb.version - 1), [true, ['b']], 'from the floor on: exact');
  } finally {
    await s.close();
  }
});

test('pruning never deletes a change the feed has not published yet (a long transaction holds the watermark)', { skip }, async () => {
  const { s, feed, seen, slow, done } = await watched('feedprunehold');
  try {
    // An open transaction with an id (a psql session inside BEGIN after a write): the watermark stays below it.
    await holdOpen(slow);
    await s.records.put('early', { n: 1 }, 0);
    await sleep(300);
    assert.deepEqual(
      seen.map((c) => c.name),
      [],
      'held back behind the open transaction',
    );
    // More than the retention goes by while it stays open: the sweeper prunes.
    const t0 = Date.now();
    await feed.prune(t0);
    await feed.prune(t0 + FEED_RETENTION_MS + 1000);
    await slow.query('COMMIT');
    await settled(() => seen.length >= 1);
    await sleep(200);
    assert.deepEqual(
      seen.map((c) => [c.type, c.name]),
      [['put', 'early']],
      'the change held back is published, not lost',
    );
  } finally {
    await done();
  }
});

test('a change is held back while its transaction is open even when that transaction has the newest transaction id', { skip }, async () => {
  const { s, feed, seen, slow, done } = await watched('feednewest');
  try {
    await sleep(200);
    // No other transaction takes an id after this one's until it commits: a snapshot's xmax is then at
    // or below its id, and pg_current_snapshot() does not list it among the open ones.
    await slow.query('BEGIN');
    const held = await slow.query(`INSERT INTO pithos_records (id, body, version) VALUES ('alone', '{"a":1}', nextval('pithos_seq')) RETURNING version`);
    const v = Number(held.rows[0].version);
    await sleep(400);
    assert.ok(feed.lastVersion < v, `the feed stayed below ${v} while its transaction was open (at ${feed.lastVersion})`);
    await slow.query('COMMIT');
    await settled(() => seen.length >= 1);
    assert.deepEqual(
      seen.map((c) => [c.type, c.name, c.version]),
      [['put', 'alone', v]],
    );
  } finally {
    await done();
  }
});

test(
  'changes pruned before this node published them (another node pruned while it was cut off): its watchers are told to re-read, then follow on',
  { skip },
  async () => {
    const { url, s, seen, gaps, slow, done } = await watched('feedgap');
    try {
      // This node's watermark is held below the next change...
      await holdOpen(slow);
      await s.records.put('lost', { n: 1 }, 0);
      // ...and the change is pruned by someone else before it is published.
      const pos = Number((await slow.query("SELECT pos FROM pithos_changes WHERE name = 'lost'")).rows[0].pos);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query("DELETE FROM pithos_changes WHERE name = 'lost'");
      await admin.query('UPDATE pithos_feed SET floor = $1 WHERE id = 1', [pos]);
      await admin.end();
      await slow.query('COMMIT');
      await settled(() => gaps.length > 0);
      assert.equal(gaps.length, 1, 'one gap reported');
      assert.ok(gaps[0] >= pos, `the feed goes on from ${gaps[0]}, at or above the pruned ${pos}`);
      await s.records.put('after', { n: 2 }, 0);
      await settled(() => seen.length > 0);
      assert.deepEqual(
        seen.map((c) => c.name),
        ['after'],
        'the lost change is not invented, the next one follows',
      );
    } finally {
      await done();
    }
  },
);
