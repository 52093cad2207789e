/**
 * Pub/sub over Upstash's REST protocol (docs/redis-rest.md, "Pub/sub"),
 * driven by @upstash/redis: subscribe() and psubscribe() stream the messages
 * that PUBLISH sends, every one, in order, with exact counts; PUBSUB reports
 * the subscribers; a stream that ends takes its subscriptions with it; a read
 * token may subscribe but not publish.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Redis } from '@upstash/redis';
import { PithosServer } from '../helpers/server.js';

const READER = 'reader-token-pubsub-123456';
let srv: PithosServer;
let dir: string;
let redis: Redis;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-pubsub-'));
  writeFileSync(path.join(dir, 'tokens'), `dash read ${READER}\n`);
  srv = await PithosServer.start({ args: ['--tokens-file', path.join(dir, 'tokens')] });
  redis = new Redis({ url: `${srv.base}/redis`, token: srv.token });
});
after(async () => {
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function until(what: string, f: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A command the client has no method for, sent as curl would. */
async function command(...words: string[]): Promise<unknown> {
  const r = await fetch(`${srv.base}/redis`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` }, body: JSON.stringify(words) });
  assert.equal(r.status, 200);
  return ((await r.json()) as { result: unknown }).result;
}

const numsub = async (ch: string): Promise<number> => ((await command('PUBSUB', 'NUMSUB', ch)) as [string, number])[1];
const numpat = async (): Promise<number> => (await command('PUBSUB', 'NUMPAT')) as number;

test('subscribe(): every published message arrives, in order; PUBLISH counts the subscribers', async () => {
  const sub = redis.subscribe<{ n: number }>(['news']);
  const got: Array<{ channel: string; message: { n: number } }> = [];
  sub.on('message', (m) => got.push(m as { channel: string; message: { n: number } }));
  await until('the subscription', async () => (await numsub('news')) === 1);
  const other = redis.subscribe(['news']);
  await until('the second subscription', async () => (await numsub('news')) === 2);
  const counts: number[] = [];
  for (let n = 0; n < 50; n++) counts.push(await redis.publish('news', { n }));
  assert.deepEqual(counts, Array(50).fill(2));
  await until('50 messages', async () => got.length >= 50);
  assert.deepEqual(
    got.map((m) => m.message.n),
    [...Array(50).keys()],
  );
  assert.ok(got.every((m) => m.channel === 'news'));
  assert.equal(await redis.publish('nobody-listens', 'x'), 0);
  const channels = await command('PUBSUB', 'CHANNELS');
  assert.deepEqual(channels, ['news']);
  await sub.unsubscribe();
  await other.unsubscribe();
  // The stream's end is the unsubscription.
  await until('both streams gone', async () => (await numsub('news')) === 0);
  assert.equal(await redis.publish('news', { n: 99 }), 0);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(got.length, 50);
});

test('psubscribe(): glob patterns, pmessage with the pattern and the channel', async () => {
  // JSON messages: @upstash/redis 1.39 parses a pattern message with JSON.parse and reports a plain string as an error.
  const sub = redis.psubscribe(['log.*']);
  const got: Array<{ pattern: string; channel: string; message: unknown }> = [];
  sub.on('pmessage', (m) => got.push(m as { pattern: string; channel: string; message: unknown }));
  await until('the pattern', async () => (await numpat()) === 1);
  assert.equal(await redis.publish('log.error', { text: 'disk' }), 1);
  assert.equal(await redis.publish('logs', { text: 'no match' }), 0);
  assert.equal(await redis.publish('log.info', { text: 'hello' }), 1);
  await until('2 messages', async () => got.length >= 2);
  assert.deepEqual(got, [
    { pattern: 'log.*', channel: 'log.error', message: { text: 'disk' } },
    { pattern: 'log.*', channel: 'log.info', message: { text: 'hello' } },
  ]);
  await sub.unsubscribe();
  await until('the pattern gone', async () => (await numpat()) === 0);
});

test('the stream on the wire; a read token subscribes but may not publish', async () => {
  const ctl = new AbortController();
  const r = await fetch(`${srv.base}/redis/subscribe/wire`, { method: 'POST', headers: { Authorization: `Bearer ${READER}` }, signal: ctl.signal });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const reader = r.body!.getReader();
  let text = '';
  const read = async (want: string): Promise<void> => {
    while (!text.includes(want)) {
      const { value, done } = await reader.read();
      assert.ok(!done, `stream ended before ${want}: ${text}`);
      text += Buffer.from(value).toString('utf8');
    }
  };
  await read('data: subscribe,wire,1\n\n');
  const refused = await fetch(`${srv.base}/redis`, { method: 'POST', headers: { Authorization: `Bearer ${READER}` }, body: '["PUBLISH","wire","x"]' });
  assert.equal(refused.status, 403);
  assert.deepEqual(await fetch(`${srv.base}/redis/publish/wire/two%0Alines`, { headers: { Authorization: `Bearer ${srv.token}` } }).then((x) => x.json()), {
    result: 1,
  });
  await read('data: message,wire,two\ndata: lines\n\n');
  assert.ok(!text.includes('data: message,wire,x'), text);
  ctl.abort();
  await until('the stream gone', async () => (await numsub('wire')) === 0);
  // Subscribing is a stream of its own, not a command of the JSON form.
  const s = await fetch(`${srv.base}/redis`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` }, body: '["SUBSCRIBE","x"]' });
  assert.equal(s.status, 400);
  assert.match(((await s.json()) as { error: string }).error, /POST \/redis\/subscribe\/<channel>/);
});
