/**
 * The RESP parser under hostile input (docs/redis.md, "Limits"): random,
 * mutated, truncated and oversized frames and pipelined bursts, each on its
 * own connection. The server must never crash, must answer a healthy client
 * afterwards, must not apply anything to a key the fuzzer never names, and
 * must keep its memory bounded when a client sends commands without reading
 * the replies.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { PithosServer, TOKEN, sleep } from '../helpers/server.js';
import { rawExchange, startWithResp } from '../helpers/redis.js';
import { rssMiB } from '../helpers/proc.js';
import { rng } from '../helpers/rng.js';

const FRAMES = Number(process.env.PITHOS_RESP_FUZZ_FRAMES ?? 250);

let srv: PithosServer;
let port: number;
let healthy: Redis;

before(async () => {
  ({ srv, port } = await startWithResp());
  healthy = new Redis({ port, host: '127.0.0.1', password: TOKEN, lazyConnect: true, maxRetriesPerRequest: 0 });
  await healthy.connect();
  await healthy.set('canary', 'untouched');
});

after(async () => {
  healthy?.disconnect();
  await srv?.close();
});

const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
const cmd = (...a: string[]): string => `*${a.length}\r\n${a.map(bulk).join('')}`;

function frame(rand: () => number): Buffer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const auth = cmd('AUTH', TOKEN);
  const valid = pick([cmd('SET', 'fz', 'v'), cmd('GET', 'fz'), cmd('RPUSH', 'fzl', 'a', 'b'), cmd('PING'), 'PING\r\n', cmd('HSET', 'fzh', 'f', 'v')]);
  const kinds = [
    () => valid,
    () => valid.slice(0, Math.floor(rand() * valid.length)),
    () => {
      const b = Buffer.from(valid);
      for (let i = 0; i < 3; i++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
      return b.toString('latin1');
    },
    () => `*${pick(['-1', '0', '99999999999', 'x', '1048577', ''])}\r\n`,
    () => `*1\r\n$${pick(['-3', '99999999999', 'abc', '17000000', ''])}\r\n`,
    () => `*2\r\n$3\r\nGET\r\n$2\r\nfzXX\r\n`,
    () => valid.repeat(1 + Math.floor(rand() * 50)),
    () => Buffer.from(Array.from({ length: Math.floor(rand() * 200) }, () => Math.floor(rand() * 256))).toString('latin1'),
    () => 'x'.repeat(70 * 1024) + '\r\n',
    () => '"unbalanced quote\r\n',
  ];
  return Buffer.from(auth + pick(kinds)(), 'latin1');
}

test(`${FRAMES} malformed or random frames: no crash, the server answers, nothing outside the fuzzer's keys changes`, async () => {
  const rand = rng(77);
  let closed = 0;
  for (let i = 0; i < FRAMES; i++) {
    const r = await rawExchange(port, frame(rand), 80);
    if (r.closed) closed++;
  }
  assert.ok(closed > 0, 'some frames were malformed enough to close their connection');
  assert.equal(srv.child?.exitCode, null, 'the server is running');
  assert.equal(await healthy.ping(), 'PONG');
  assert.equal(await healthy.get('canary'), 'untouched');
  const again = await rawExchange(port, cmd('AUTH', TOKEN) + cmd('PING'), 500);
  assert.equal(again.data, '+OK\r\n+PONG\r\n');
});

test('a client that sends without reading is stopped from growing the server', async () => {
  const items = Array.from({ length: 5000 }, (_, i) => `item-${i}-${'x'.repeat(40)}`);
  for (let i = 0; i < items.length; i += 1000) await healthy.rpush('fat', ...items.slice(i, i + 1000));
  const pid = srv.child!.pid!;
  const before = rssMiB(pid);
  const s = net.connect(port, '127.0.0.1');
  await new Promise((r) => s.once('connect', r));
  s.pause(); // never read: replies pile up in the server's socket until its bounds act
  const one = cmd('LRANGE', 'fat', '0', '-1');
  s.write(cmd('AUTH', TOKEN));
  // About 250 KB of reply each: 2,000 would be 500 MB of replies if nothing held them back.
  for (let i = 0; i < 2000; i++) s.write(one);
  await sleep(3000);
  const during = rssMiB(pid);
  assert.equal(await healthy.ping(), 'PONG', 'others are still answered');
  s.destroy();
  assert.ok(during - before < 200, `RSS grew by ${during - before} MiB (from ${before}) for an unread client`);
});

test('a flood of empty commands before AUTH does not crash the server', async () => {
  const r = await rawExchange(port, Buffer.concat([Buffer.alloc(100_000, '\n'), Buffer.from('*0\r\n'.repeat(20_000)), Buffer.from('PING\r\n')]), 1500);
  assert.match(r.data, /NOAUTH/);
  assert.equal(srv.child?.exitCode, null, 'the server is running');
  assert.equal(await healthy.ping(), 'PONG');
});

test('a pattern made to backtrack answers at once (KEYS, SSCAN MATCH)', async () => {
  await healthy.set('a'.repeat(60), 'x');
  await healthy.sadd('globset', 'a'.repeat(60));
  const started = Date.now();
  assert.deepEqual(await healthy.keys('*a*a*a*a*a*a*a*a*a*a*a*a*b'), []);
  assert.deepEqual(await healthy.sscan('globset', 0, 'MATCH', '*a*a*a*a*a*a*a*a*a*a*a*a*b'), ['0', []]);
  assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
  assert.deepEqual(await healthy.keys('a*a'), ['a'.repeat(60)]);
});

test('huge counts and values are refused, not built: SRANDMEMBER -n, HRANDFIELD -n, SETRANGE, APPEND', async () => {
  await healthy.sadd('rs', 'a', 'b');
  await healthy.hset('rh', 'f', 'v');
  await assert.rejects(healthy.srandmember('rs', -2_000_000_000), /out of range/);
  await assert.rejects(healthy.hrandfield('rh', -2_000_000_000), /out of range/);
  await assert.rejects(healthy.setrange('rbig', 200_000_000, 'x'), /maximum allowed size/);
  assert.equal(await healthy.exists('rbig'), 0);
  assert.equal((await healthy.srandmember('rs', -5))?.length, 5);
});

test('a blocking command inside MULTI does not wait (as in Redis)', async () => {
  const started = Date.now();
  const out = await healthy.multi().blpop('nothing-here', 0).exec();
  assert.deepEqual(out, [[null, null]]);
  assert.ok(Date.now() - started < 2000);
});

test('an oversized bulk is refused before it is read', async () => {
  const r = await rawExchange(port, cmd('AUTH', TOKEN) + `*3\r\n$3\r\nSET\r\n$2\r\nfz\r\n$${64 * 1024 * 1024}\r\n`, 1000);
  assert.match(r.data, /-ERR Protocol error: invalid bulk length/);
  assert.equal(r.closed, true);
});
