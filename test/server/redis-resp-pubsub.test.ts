/**
 * Pub/sub on the RESP port (docs/redis-rest.md, "Pub/sub"): ioredis
 * subscribes and receives what is published over RESP and over REST alike;
 * RESP2's subscribed mode refuses other commands, RESP3 gets pushes and may
 * run anything; a closed connection takes its subscriptions with it.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { PithosServer } from '../helpers/server.js';

let srv: PithosServer;
let port: number;

before(async () => {
  srv = await PithosServer.start({ args: ['--resp-port', '0'] });
  const m = /Redis protocol on redis:\/\/127\.0\.0\.1:(\d+)/.exec(srv.stdout + srv.stderr);
  assert.ok(m, 'the RESP port is announced');
  port = Number(m[1]);
});
after(async () => {
  await srv?.close();
});

async function until(what: string, f: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A raw connection: send lines, read what has come. */
async function raw(): Promise<{ send: (s: string) => void; until: (want: string) => Promise<string>; close: () => void }> {
  const s = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => s.once('connect', () => r()));
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString('utf8')));
  return {
    send: (x) => s.write(x),
    until: async (want) => {
      await until(JSON.stringify(want), () => got.includes(want));
      return got;
    },
    close: () => s.destroy(),
  };
}

test('ioredis: messages published over RESP and over REST arrive, exactly, in order', async () => {
  const sub = new Redis({ port, password: srv.token, lazyConnect: true });
  const pub = new Redis({ port, password: srv.token, lazyConnect: true });
  await sub.connect();
  await pub.connect();
  try {
    const got: string[] = [];
    const pgot: string[] = [];
    sub.on('message', (ch: string, m: string) => got.push(`${ch}:${m}`));
    sub.on('pmessage', (p: string, ch: string, m: string) => pgot.push(`${p}|${ch}:${m}`));
    assert.equal(await sub.subscribe('a', 'b'), 2);
    assert.equal(await sub.psubscribe('a*'), 3);
    for (let i = 0; i < 30; i++) assert.equal(await pub.publish(i % 2 === 0 ? 'a' : 'b', `m${i}`), i % 2 === 0 ? 2 : 1);
    const rest = await fetch(`${srv.base}/redis`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` }, body: '["PUBLISH","b","from rest"]' });
    assert.deepEqual(await rest.json(), { result: 1 });
    await until('31 messages', () => got.length >= 31);
    assert.deepEqual(got, [...[...Array(30).keys()].map((i) => `${i % 2 === 0 ? 'a' : 'b'}:m${i}`), 'b:from rest']);
    await until('15 pattern messages', () => pgot.length >= 15);
    assert.deepEqual(
      pgot,
      [...Array(15).keys()].map((i) => `a*|a:m${i * 2}`),
    );
    assert.deepEqual(await pub.pubsub('NUMSUB', 'a', 'b', 'c'), ['a', 1, 'b', 1, 'c', 0]);
    assert.equal(await pub.pubsub('NUMPAT'), 1);
    assert.deepEqual(((await pub.pubsub('CHANNELS')) as string[]).sort(), ['a', 'b']);
    await sub.unsubscribe('a');
    assert.deepEqual(await pub.pubsub('NUMSUB', 'a'), ['a', 0]);
    sub.disconnect();
    await until('the closed connection unsubscribed', async () => Number(await pub.pubsub('NUMPAT')) === 0);
    assert.deepEqual(await pub.pubsub('NUMSUB', 'b'), ['b', 0]);
  } finally {
    sub.disconnect();
    pub.disconnect();
  }
});

test('RESP2: subscribed mode refuses other commands; RESP3: pushes, and any command', async () => {
  const c = await raw();
  c.send(`AUTH ${srv.token}\r\nSUBSCRIBE ch\r\n`);
  await c.until('*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n');
  c.send('GET x\r\n');
  await c.until("-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n");
  // A command with subcommands is named by both, as redis-server names it.
  c.send('PUBSUB NUMSUB ch\r\n');
  await c.until("-ERR Can't execute 'pubsub|numsub': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n");
  // PING answers as a message does, as redis-server 7 does in subscribed mode.
  c.send('PING\r\nPING hi\r\n');
  await c.until('*2\r\n$4\r\npong\r\n$0\r\n\r\n*2\r\n$4\r\npong\r\n$2\r\nhi\r\n');
  c.send('UNSUBSCRIBE\r\nGET x\r\n');
  await c.until('*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n$-1\r\n');
  c.close();

  const d = await raw();
  d.send(`HELLO 3 AUTH default ${srv.token}\r\nSUBSCRIBE ch3\r\n`);
  await d.until('>3\r\n$9\r\nsubscribe\r\n$3\r\nch3\r\n:1\r\n');
  d.send('SET k3 v\r\nGET k3\r\n');
  await d.until('+OK\r\n$1\r\nv\r\n');
  const r = await fetch(`${srv.base}/redis/publish/ch3/hi`, { headers: { Authorization: `Bearer ${srv.token}` } });
  assert.deepEqual(await r.json(), { result: 1 });
  await d.until('>3\r\n$7\r\nmessage\r\n$3\r\nch3\r\n$2\r\nhi\r\n');
  d.send('RESET\r\n');
  await d.until('+RESET\r\n');
  const n = await fetch(`${srv.base}/redis`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` }, body: '["PUBSUB","NUMSUB","ch3"]' });
  assert.deepEqual(await n.json(), { result: ['ch3', 0] });
  d.close();
});
