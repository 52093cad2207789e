/**
 * Keyspace notifications (docs/redis-rest.md, "Keyspace notifications"):
 * off by default; after CONFIG SET notify-keyspace-events, a subscriber
 * hears every write the change feed records, over RESP, REST and the HTTP
 * API alike, on both channels, in order; switched off, it hears nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { PithosServer } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let srv: PithosServer;
let port: number;

before(async () => {
  srv = await PithosServer.start({ args: ['--resp-port', '0'] });
  port = Number(/Redis protocol on redis:\/\/127\.0\.0\.1:(\d+)/.exec(srv.stdout + srv.stderr)?.[1]);
  assert.ok(port > 0);
});
after(async () => {
  await srv?.close();
});

async function rest(...words: Array<string | number>): Promise<unknown> {
  const r = await fetch(`${srv.base}/redis`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` }, body: JSON.stringify(words) });
  const b = (await r.json()) as { result?: unknown; error?: string };
  assert.equal(r.status, 200, b.error);
  return b.result;
}

async function until(what: string, f: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('every write the change feed records, on __keyevent@0__ and __keyspace@0__, whichever door it came through', async () => {
  const sub = new Redis({ port, password: srv.token });
  const cmd = new Redis({ port, password: srv.token });
  try {
    const events: string[] = [];
    const spaces: string[] = [];
    sub.on('pmessage', (_p: string, ch: string, m: string) => {
      if (ch.startsWith('__keyevent@0__:')) events.push(`${ch.slice(15)} ${m}`);
      else spaces.push(`${ch.slice(15)} ${m}`);
    });
    await sub.psubscribe('__keyevent@0__:*', '__keyspace@0__:ks:*');
    // The change feed itself, to compare with.
    const feed = watch({ port: srv.port, token: srv.token, query: 'prefix=ks:' });
    await feed.opened;
    // Off by default: nothing is heard. (The feed has it before notifications go on: the shared store's feed publishes a little after commit.)
    await cmd.set('ks:off', 'v');
    await until('the feed has ks:off', () => feed.events.length >= 1);
    assert.deepEqual(await cmd.config('GET', 'notify-keyspace-events'), ['notify-keyspace-events', '']);
    assert.equal(await rest('CONFIG', 'SET', 'notify-keyspace-events', 'KEA'), 'OK');
    // Shown as Redis shows it (notify.c): A for every class, the classes in Redis's order, then K, E, m.
    assert.deepEqual(await cmd.config('GET', 'notify-keyspace-events'), ['notify-keyspace-events', 'AKE']);
    await cmd.set('ks:k', 'v'); // RESP
    await rest('HSET', 'ks:h', 'f', '1'); // REST
    const put = await srv.req('PUT', '/variants/ks:http', { variant: 5 }); // the HTTP API
    assert.equal(put.status, 201, put.raw);
    await cmd.rpush('ks:l', 'a', 'b');
    await cmd.lpop('ks:l');
    await rest('SADD', 'ks:s', 'm');
    await rest('ZADD', 'ks:z', 1, 'm');
    await cmd.del('ks:k');
    // An expiry, on the test clock: the store reports it once it notices (here: the read).
    await cmd.set('ks:e', 'v', 'EX', 1);
    await srv.advance(3000);
    assert.equal(await cmd.get('ks:e'), null);
    const want = ['set ks:k', 'hset ks:h', 'set ks:http', 'rpush ks:l', 'lpop ks:l', 'sadd ks:s', 'zadd ks:z', 'del ks:k', 'set ks:e', 'expired ks:e'];
    await until(`${want.length} events`, () => events.length >= want.length);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(events, want);
    // Event for event what the change feed records.
    await until('the feed has them all', () => feed.events.length >= 1 + want.length);
    assert.deepEqual(
      feed.events.slice(1, 1 + want.length).map((e) => JSON.parse(e.data).name as string),
      want.map((w) => w.split(' ')[1]),
    );
    feed.close();
    assert.deepEqual(
      spaces,
      want.map((w) => `${w.split(' ')[1]} ${w.split(' ')[0]}`),
    );
    // Off again: nothing more, whether the setting is empty or names classes without K or E (kept, shown, silent).
    for (const [set, shown] of [
      ['Ag', 'A'],
      ['', ''],
    ]) {
      await rest('CONFIG', 'SET', 'notify-keyspace-events', set);
      assert.deepEqual(await cmd.config('GET', 'notify-keyspace-events'), ['notify-keyspace-events', shown]);
      await cmd.set('ks:after', set);
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(events.length, want.length);
    for (const [set, shown] of [
      ['Kx', 'xK'],
      ['E$', '$E'],
      ['KEn', 'nKE'],
      ['nAKEm', 'AKEm'],
      ['g$lshzxet', 'g$lshzxet'],
    ]) {
      await rest('CONFIG', 'SET', 'notify-keyspace-events', set);
      assert.deepEqual(await cmd.config('GET', 'notify-keyspace-events'), ['notify-keyspace-events', shown], set);
    }
    await rest('CONFIG', 'SET', 'notify-keyspace-events', '');
    // Redis's letters only.
    const bad = await fetch(`${srv.base}/redis`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${srv.token}` },
      body: '["CONFIG","SET","notify-keyspace-events","Q"]',
    });
    assert.equal(bad.status, 400);
  } finally {
    sub.disconnect();
    cmd.disconnect();
  }
});
