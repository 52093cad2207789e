/**
 * The RESP listener, black-box (docs/redis.md): the real server with
 * `--resp-port`, driven by ioredis and Debian's redis-cli, on the log store
 * and on PostgreSQL. What the differential test cannot compare with Redis is
 * here: authentication and roles, RESP3, pipelining, blocking pops, the
 * change feed and versions seen over HTTP, malformed frames.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { PithosServer, STORE, TOKEN, etag, sleep } from '../helpers/server.js';
import { rawExchange, respPort, startWithResp } from '../helpers/redis.js';

let srv: PithosServer;
let port: number;
const clients: Redis[] = [];

function client(opts: { password?: string; username?: string; protocol?: 2 | 3; stringNumbers?: boolean } = {}): Redis {
  const r = new Redis({
    stringNumbers: opts.stringNumbers ?? false,
    port,
    host: '127.0.0.1',
    password: opts.password ?? TOKEN,
    username: opts.username,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  clients.push(r);
  return r;
}

before(async () => {
  ({ srv, port } = await startWithResp());
});

after(async () => {
  for (const c of clients) c.disconnect();
  await srv?.close();
});

test('a command before AUTH answers NOAUTH; a wrong token WRONGPASS; the main secret works', async () => {
  const raw = await rawExchange(port, '*2\r\n$3\r\nGET\r\n$1\r\nx\r\n*2\r\n$4\r\nAUTH\r\n$5\r\nwrong\r\n', 500);
  assert.equal(raw.data, '-NOAUTH Authentication required.\r\n-WRONGPASS invalid username-password pair or user is disabled.\r\n');
  const r = client();
  await r.connect();
  assert.equal(await r.ping(), 'PONG');
  const named = client({ username: 'default' });
  await named.connect();
  assert.equal(await named.set('auth:k', 'v'), 'OK');
});

test('inline commands typed into telnet work, and a malformed frame closes only that connection', async () => {
  const inline = await rawExchange(port, `AUTH ${TOKEN}\r\nPING\r\nECHO "a b"\r\n`, 500);
  assert.equal(inline.data, '+OK\r\n+PONG\r\n$3\r\na b\r\n');
  for (const bad of ['*1\r\n$-5\r\n', '*2\r\n$3\r\nGETxx', '*abc\r\n', '*3000000\r\n', '*1\r\n$999999999999\r\n']) {
    const r = await rawExchange(port, bad, 2000);
    assert.match(r.data, /^-ERR Protocol error: /, JSON.stringify(bad));
    assert.equal(r.closed, true, `connection closed after ${JSON.stringify(bad)}`);
  }
  const r = client();
  await r.connect();
  assert.equal(await r.ping(), 'PONG', 'the server still answers others');
});

test('pipelined commands are all answered, in order', async () => {
  const r = client();
  await r.connect();
  const p = r.pipeline();
  for (let i = 0; i < 500; i++) p.incr('pipe:n');
  for (let i = 0; i < 10; i++) p.get('pipe:n');
  const out = (await p.exec()) as Array<[Error | null, unknown]>;
  assert.equal(out.length, 510);
  for (let i = 0; i < 500; i++) assert.deepEqual(out[i], [null, i + 1]);
  for (let i = 500; i < 510; i++) assert.deepEqual(out[i], [null, '500']);
});

test('RESP3 after HELLO 3: maps, doubles and sets come typed', async () => {
  const raw = await rawExchange(port, `HELLO 3 AUTH default ${TOKEN}\r\nZADD z3 1.5 m\r\nZSCORE z3 m\r\nHSET h3 f v\r\nHGETALL h3\r\nGET nothing3\r\n`, 800);
  assert.match(raw.data, /^%7\r\n/);
  assert.ok(raw.data.endsWith(':1\r\n,1.5\r\n:1\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n_\r\n'), raw.data);
});

test('writes over RESP are versioned objects the HTTP API reads, and HTTP writes show in RESP', async () => {
  const r = client();
  await r.connect();
  await r.set('both:n', '41');
  await r.incr('both:n');
  const v = await srv.req('GET', '/variants/both:n');
  assert.equal(v.status, 200);
  assert.equal(v.body.data.variant, 42);
  await r.rpush('both:l', 'a', 'b');
  const l = await srv.req('GET', '/lists/both:l');
  assert.deepEqual(l.body.data.items, ['a', 'b']);
  await r.hset('both:h', 'f', 'v');
  const h = await srv.req('GET', '/records/both:h');
  assert.deepEqual(h.body.data, { f: 'v' });
  const put = await srv.req('PUT', '/records/both:r', { record: { n: 1, s: 'x' } });
  assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
  assert.deepEqual(await r.hgetall('both:r'), { n: '1', s: 'x' });
  assert.equal(await r.type('both:r'), 'hash');
});

test('a name the HTTP API put into a string and a collection is a string: ZADD and ZINCRBY (and on the log store SADD and the pushes) answer WRONGTYPE and change nothing', async () => {
  const r = client();
  await r.connect();
  assert.equal((await srv.req('PUT', '/variants/two:k', { variant: 'text' })).status, 201);
  assert.equal((await srv.req('PUT', '/zsets/two:k', { zset: { a: 1 } })).status, 201);
  assert.equal(await r.type('two:k'), 'string');
  await assert.rejects(r.zadd('two:k', 2, 'b'), /WRONGTYPE/);
  await assert.rejects(r.zadd('two:k', 'CH', 5, 'a'), /WRONGTYPE/);
  await assert.rejects(r.zincrby('two:k', 1, 'a'), /WRONGTYPE/);
  // Pipelined, the decided-at-once path is the one taken: still refused.
  const p = await r.pipeline().zadd('two:k', 3, 'c').zincrby('two:k', 1, 'a').exec();
  assert.deepEqual(
    p!.map(([e]) => /WRONGTYPE/.test(String(e))),
    [true, true],
  );
  const z = await srv.req('GET', '/zsets/two:k');
  assert.deepEqual(z.body.data.items, [{ member: 'a', score: 1 }]);
  // The same for a set and a list under a string's name, on the log store: the shared store's adds
  // do not ask the key's type first (docs/redis.md, "Deliberate differences").
  if (STORE !== 'log') return;
  assert.equal((await srv.req('PUT', '/sets/two:k', { set: ['m'] })).status, 201);
  assert.equal((await srv.req('PUT', '/lists/two:k', { list: ['i'] })).status, 201);
  await assert.rejects(r.sadd('two:k', 'n'), /WRONGTYPE/);
  await assert.rejects(r.lpush('two:k', 'j'), /WRONGTYPE/);
  await assert.rejects(r.rpush('two:k', 'j'), /WRONGTYPE/);
  const q = await r.pipeline().sadd('two:k', 'o').rpush('two:k', 'k').exec();
  assert.deepEqual(
    q!.map(([e]) => /WRONGTYPE/.test(String(e))),
    [true, true],
  );
  assert.deepEqual((await srv.req('GET', '/sets/two:k')).body.data.members, ['m']);
  assert.deepEqual((await srv.req('GET', '/lists/two:k')).body.data.items, ['i']);
});

test('integers are signed 64-bit: INCR is exact past 2^53 up to 2^63−1 and refuses to overflow; HTTP reads them digit for digit', async () => {
  // Integer replies as strings: a JS number would round them past 2^53.
  const r = client({ stringNumbers: true });
  await r.connect();
  await r.set('i64:a', '9007199254740992');
  assert.equal(await r.call('INCR', 'i64:a'), '9007199254740993');
  assert.equal(await r.get('i64:a'), '9007199254740993');
  assert.match((await srv.req('GET', '/variants/i64:a')).raw, /"data":\{"variant":9007199254740993\}/);
  await r.set('i64:b', '9223372036854775806');
  assert.equal(await r.call('INCR', 'i64:b'), '9223372036854775807');
  await assert.rejects(r.call('INCR', 'i64:b'), /ERR increment or decrement would overflow/);
  await assert.rejects(r.call('INCRBY', 'i64:b', '9223372036854775808'), /ERR value is not an integer or out of range/);
  assert.equal(await r.get('i64:b'), '9223372036854775807');
  await r.set('i64:c', '-9223372036854775807');
  assert.equal(await r.call('DECRBY', 'i64:c', '1'), '-9223372036854775808');
  await assert.rejects(r.call('DECR', 'i64:c'), /ERR increment or decrement would overflow/);
  assert.equal(await r.get('i64:c'), '-9223372036854775808');
  // Over HTTP the same counter is an integer variant that takes 64-bit deltas exactly.
  const inc = await srv.req('POST', '/variants/i64:c', '{"delta":9223372036854775807}');
  assert.match(inc.raw, /"data":\{"variant":-1\}/, inc.raw);
  // Inside MULTI too, as one Store transaction (writes only) and one command at a time (with a read): replies exact.
  await r.set('i64:d', '9007199254740990');
  assert.deepEqual(await r.multi().incrby('i64:d', 2).incr('i64:d').exec(), [
    [null, '9007199254740992'],
    [null, '9007199254740993'],
  ]);
  assert.deepEqual(await r.multi().incrby('i64:d', 2).get('i64:d').exec(), [
    [null, '9007199254740995'],
    [null, '9007199254740995'],
  ]);
  const cli = (...args: string[]): string =>
    execFileSync('redis-cli', ['-p', String(port), '-a', TOKEN, '--no-auth-warning', ...args], { encoding: 'utf8' }).trim();
  assert.match(cli('INCRBY', 'i64:d', '9223372036854775000'), /ERR increment or decrement would overflow/);
  assert.equal(cli('INCRBY', 'i64:d', '9214364837600034000'), '9223372036854774995');
  assert.equal(cli('GET', 'i64:d'), '9223372036854774995');
});

test('a blocking pop waits for a push from another connection, and times out with nil', async () => {
  const waiter = client();
  const pusher = client();
  await waiter.connect();
  await pusher.connect();
  const started = Date.now();
  const timedOut = await waiter.blpop('block:none', 0.2);
  assert.equal(timedOut, null);
  assert.ok(Date.now() - started >= 150, 'waited about its timeout');
  const pending = waiter.blpop('block:q', 5);
  await sleep(200);
  assert.equal(await pusher.rpush('block:q', 'job'), 1);
  assert.deepEqual(await pending, ['block:q', 'job']);
  assert.equal(await pusher.llen('block:q'), 0);
});

test('MULTI/EXEC answers every queued reply; WATCH aborts EXEC when another client changed the key', async () => {
  const a = client();
  const b = client();
  await a.connect();
  await b.connect();
  const ok = await a.multi().set('tx:k', '1').incr('tx:k').get('tx:k').exec();
  assert.deepEqual(ok, [
    [null, 'OK'],
    [null, 2],
    [null, '2'],
  ]);
  await a.watch('tx:k');
  await b.set('tx:k', '100');
  const aborted = await a.multi().set('tx:k', 'mine').exec();
  assert.equal(aborted, null);
  assert.equal(await a.get('tx:k'), '100');
  const bad = await a
    .multi()
    .set('tx:j', '1')
    .call('NOSUCHCOMMAND')
    .exec()
    .catch((e: Error) => e);
  assert.ok(bad instanceof Error && /EXECABORT/.test(bad.message), String(bad));
  assert.equal(await a.exists('tx:j'), 0, 'nothing of a discarded transaction applies');
});

test('WATCH of a list, a set, a sorted set, a hash, a string and an absent key: a write by another client aborts an EXEC of writes', async () => {
  const a = client();
  const b = client();
  await a.connect();
  await b.connect();
  await a.rpush('w:l', 'x');
  await a.sadd('w:s', 'x');
  await a.zadd('w:z', 1, 'x');
  await a.hset('w:h', 'f', 'x');
  await a.set('w:n', '5');
  const writes: Array<[string, () => Promise<unknown>]> = [
    ['w:l', () => b.rpush('w:l', 'y')],
    ['w:s', () => b.sadd('w:s', 'y')],
    ['w:z', () => b.zincrby('w:z', 1, 'x')],
    ['w:h', () => b.hset('w:h', 'g', 'y')],
    ['w:n', () => b.incr('w:n')],
    ['w:absent', () => b.rpush('w:absent', 'y')],
  ];
  for (const [key, write] of writes) {
    await a.watch(key);
    await write();
    // A queue of writes only: one Store transaction, whose checks carry what WATCH saw.
    assert.equal(await a.multi().incr('w:count').sadd('w:log', key).exec(), null, `EXEC after a write to the watched ${key}`);
    assert.equal(await a.exists('w:count'), 0, `nothing ran after ${key} changed`);
  }
  // Unchanged, the same transaction runs.
  await a.watch('w:l', 'w:s', 'w:z', 'w:h', 'w:n', 'w:absent', 'w:other');
  assert.deepEqual(await a.multi().incr('w:count').sadd('w:log', 'ok').exec(), [
    [null, 1],
    [null, 1],
  ]);
});

test('GETSET, GETDEL and MSETNX are atomic under concurrent clients: each old value answered once, one MSETNX wins', async () => {
  const cs = Array.from({ length: 8 }, () => client());
  await Promise.all(cs.map((x) => x.connect()));
  await cs[0]!.set('atom:g', 'start');
  // Every GETSET answers the value it replaced: the values form one chain, none answered twice.
  const olds = await Promise.all(cs.flatMap((x, i) => Array.from({ length: 10 }, (_, j) => x.getset('atom:g', `v${i}-${j}`))));
  const final = await cs[0]!.get('atom:g');
  const seen = [...olds, final];
  assert.equal(new Set(seen).size, seen.length, `a value answered twice: ${JSON.stringify(seen)}`);
  assert.ok(seen.includes('start'));
  // GETDEL: of concurrent ones, exactly one gets the value.
  for (let round = 0; round < 5; round++) {
    await cs[0]!.set('atom:d', `x${round}`);
    const got = await Promise.all(cs.map((x) => x.getdel('atom:d')));
    assert.deepEqual(
      got.filter((v) => v !== null),
      [`x${round}`],
      `round ${round}: ${JSON.stringify(got)}`,
    );
  }
  // MSETNX over overlapping keys: one wins each round, and both its values are there.
  for (let round = 0; round < 5; round++) {
    const keys = ['atom:m1', 'atom:m2', 'atom:m3'].map((k) => `${k}:${round}`);
    const won = await Promise.all(cs.map((x, i) => x.msetnx(keys[i % 3]!, `c${i}`, keys[(i + 1) % 3]!, `c${i}`)));
    // Any two of these key pairs share a key: exactly one may win.
    assert.equal(won.filter((w) => w === 1).length, 1, `round ${round}: ${JSON.stringify(won)}`);
    const winners = won.flatMap((w, i) => (w === 1 ? [i] : []));
    const values = await cs[0]!.mget(...keys);
    for (const i of winners) {
      assert.equal(values[i % 3], `c${i}`, `round ${round}: winner ${i} holds ${keys[i % 3]}: ${JSON.stringify(values)}`);
      assert.equal(values[(i + 1) % 3], `c${i}`, `round ${round}: winner ${i} holds ${keys[(i + 1) % 3]}: ${JSON.stringify(values)}`);
    }
  }
});

test('read-then-write commands retry a lost race: HINCRBY, ZADD GT, SPOP, LSET and INCR on a new key stay exact under concurrent clients', async () => {
  const cs = Array.from({ length: 8 }, () => client());
  await Promise.all(cs.map((x) => x.connect()));
  // HINCRBY reads the field and writes it under the version read: every increment counts once.
  await Promise.all(cs.flatMap((x) => Array.from({ length: 10 }, () => x.hincrby('race:h', 'n', 1))));
  assert.equal(await cs[0]!.hget('race:h', 'n'), '80');
  // ZADD GT keeps the greatest score whatever order the writes land in.
  await Promise.all(cs.flatMap((x, i) => Array.from({ length: 5 }, (_, j) => x.zadd('race:z', 'GT', String(i * 5 + j), 'm'))));
  assert.equal(await cs[0]!.zscore('race:z', 'm'), '39');
  // SPOP: every member popped exactly once across the clients.
  await cs[0]!.sadd('race:s', ...Array.from({ length: 40 }, (_, i) => `e${i}`));
  const popped = (await Promise.all(cs.flatMap((x) => Array.from({ length: 5 }, () => x.spop('race:s'))))).filter((v) => v !== null);
  assert.equal(popped.length, 40);
  assert.equal(new Set(popped).size, 40, 'a member popped twice');
  assert.equal(await cs[0]!.exists('race:s'), 0, 'the emptied set is gone');
  // LSET on one index: the list keeps its length and ends holding one of the values written.
  await cs[0]!.rpush('race:l', 'a', 'b', 'c');
  await Promise.all(cs.map((x, i) => x.lset('race:l', 1, `w${i}`)));
  const l = await cs[0]!.lrange('race:l', 0, -1);
  assert.equal(l.length, 3);
  assert.match(l[1]!, /^w[0-7]$/);
  // INCR racing on a key none of them saw: one creates it, the others increment it.
  const got = await Promise.all(cs.map((x) => x.incr('race:new')));
  assert.deepEqual(
    got.map(Number).sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
});

test("INCRBYFLOAT prints as Redis does past a double's exponent form: every integer digit, 17 decimals, no -0", async () => {
  const c = client();
  await c.connect();
  // What redis-server 7.0.15 answered for each, one new key apiece.
  for (const [by, want] of [
    ['1e22', '10000000000000000000000'],
    ['4.5e21', '4500000000000000000000'],
    ['1e-7', '0.0000001'],
    ['1.5e-10', '0.00000000015'],
    ['1e-20', '0'],
    ['-1e-20', '0'],
    ['-1e-7', '-0.0000001'],
  ] as const) {
    assert.equal(await c.incrbyfloat(`ibf:${by}`, by), want, by);
    assert.equal(await c.hincrbyfloat('ibf:h', by, by), want, `HINCRBYFLOAT ${by}`);
  }
});

test('server commands answer bad arguments as Redis does, and change nothing', async () => {
  const c = client();
  await c.connect();
  await c.set('srv:k', 'v');
  // A FLUSHDB with an argument it does not know flushes nothing.
  await assert.rejects(c.call('flushdb', 'BAD'), /^ReplyError: ERR syntax error/);
  await assert.rejects(c.call('flushall', 'SYNC', 'x'), /^ReplyError: ERR syntax error/);
  assert.equal(await c.get('srv:k'), 'v');
  await assert.rejects(c.call('hello', 'abc'), /^ReplyError: ERR Protocol version is not an integer or out of range/);
  await assert.rejects(c.call('hello', '4'), /^ReplyError: NOPROTO unsupported protocol version/);
  await assert.rejects(c.call('client', 'id', 'x'), /^ReplyError: ERR wrong number of arguments for 'client\|id' command/);
  await assert.rejects(c.call('client', 'kill', '1.2.3.4:5'), /^ReplyError: ERR No such client/);
  await assert.rejects(c.call('command', 'count', 'x'), /^ReplyError: ERR wrong number of arguments for 'command\|count' command/);
  assert.deepEqual(((await c.call('command', 'list', 'filterby', 'pattern', 'ZS*')) as string[]).sort(), ['zscan', 'zscore']);
  assert.deepEqual(await c.call('command', 'list', 'filterby', 'pattern', 'xyz*'), []);
  await assert.rejects(c.call('command', 'list', 'filterby', 'foo', 'x'), /^ReplyError: ERR syntax error/);
  await assert.rejects(c.call('config', 'get'), /^ReplyError: ERR wrong number of arguments for 'config\|get' command/);
  await assert.rejects(c.call('config', 'resetstat', 'x'), /^ReplyError: ERR wrong number of arguments for 'config\|resetstat' command/);
  // A name without a wildcard comes back as asked, once.
  assert.deepEqual(await c.call('config', 'get', 'Appendonly', 'APPENDONLY'), ['Appendonly', 'yes']);
  // EXPIRETIME and PEXPIRETIME: when the lifetime ends; -1 without one, -2 without the key.
  await c.set('srv:e', 'v', 'EX', 100);
  const at = Number(await c.call('pexpiretime', 'srv:e'));
  assert.ok(Math.abs(at - (Date.now() + 100_000)) < 2_000, `${at}`);
  // Read again a moment later: the same second, or the next one when the two readings straddle it.
  assert.ok(Math.abs(Number(await c.call('expiretime', 'srv:e')) - Math.floor(at / 1000)) <= 1);
  assert.equal(await c.call('expiretime', 'srv:k'), -1);
  assert.equal(await c.call('pexpiretime', 'srv:none'), -2);
});

test('a lifetime past 2,147,483,647 s is refused by every command that sets one, and changes nothing', async () => {
  const c = client();
  await c.connect();
  await c.set('life:k', 'v', 'EX', 100);
  const far = String(2147483648);
  for (const [cmd, ...args] of [
    ['set', 'life:k', 'w', 'EX', far],
    ['setex', 'life:k', far, 'w'],
    ['getex', 'life:k', 'EX', far],
    ['expire', 'life:k', far],
    ['pexpire', 'life:k', `${far}000`],
  ] as const) {
    await assert.rejects(c.call(cmd, ...args), new RegExp(`^ReplyError: ERR invalid expire time in '${cmd}' command`), cmd);
  }
  assert.equal(await c.get('life:k'), 'v');
  assert.ok((await c.ttl('life:k')) <= 100);
  assert.equal(await c.call('getex', 'life:k', 'EX', '2147483647'), 'v');
  assert.equal(await c.ttl('life:k'), 2147483647);
});

test('RENAME and RENAMENX move every type with its lifetime; a push racing the rename is never lost', async () => {
  const c = client();
  await c.connect();
  await assert.rejects(c.rename('ren:none', 'ren:x'), /ERR no such key/);
  await assert.rejects(c.renamenx('ren:none', 'ren:x'), /ERR no such key/);
  await c.set('ren:s', 'v', 'EX', 100);
  await c.rpush('ren:l', 'a', 'b');
  await c.sadd('ren:set', 'x', 'y');
  await c.zadd('ren:z', 1, 'a', 2.5, 'b');
  await c.hset('ren:h', 'f', '1', 'g', '2');
  assert.equal(await c.rename('ren:s', 'ren:s'), 'OK');
  assert.equal(await c.renamenx('ren:s', 'ren:s'), 0);
  assert.equal(await c.rename('ren:s', 'ren:s2'), 'OK');
  assert.equal(await c.get('ren:s2'), 'v');
  assert.ok((await c.ttl('ren:s2')) > 90, 'the lifetime moves with the value');
  assert.equal(await c.exists('ren:s'), 0);
  // Onto a name of another type: it is replaced.
  assert.equal(await c.rename('ren:l', 'ren:s2'), 'OK');
  assert.equal(await c.type('ren:s2'), 'list');
  assert.deepEqual(await c.lrange('ren:s2', 0, -1), ['a', 'b']);
  assert.equal(await c.ttl('ren:s2'), -1);
  assert.equal(await c.renamenx('ren:set', 'ren:h'), 0);
  assert.equal(await c.renamenx('ren:set', 'ren:set2'), 1);
  assert.deepEqual((await c.smembers('ren:set2')).sort(), ['x', 'y']);
  assert.equal(await c.rename('ren:h', 'ren:set2'), 'OK');
  assert.deepEqual(await c.hgetall('ren:set2'), { f: '1', g: '2' });
  assert.equal(await c.renamenx('ren:z', 'ren:z2'), 1);
  assert.deepEqual(await c.zrange('ren:z2', '0', '-1', 'WITHSCORES'), ['a', '1', 'b', '2.5']);
  // Pushes while the list is renamed: each item ends in the new name or, pushed after the move, in a new list at the old one.
  const ps = Array.from({ length: 4 }, () => client());
  await Promise.all(ps.map((x) => x.connect()));
  await c.rpush('ren:q', 'seed');
  let pushed = 1;
  const pushing = Promise.all(
    ps.map(async (x, w) => {
      for (let i = 0; i < 50; i++) {
        await x.rpush('ren:q', `${w}-${i}`);
        pushed++;
      }
    }),
  );
  await sleep(5);
  assert.equal(await c.rename('ren:q', 'ren:q2'), 'OK');
  await pushing;
  const moved = await c.lrange('ren:q2', 0, -1);
  const after = await c.lrange('ren:q', 0, -1);
  assert.equal(moved.length + after.length, pushed, `${moved.length} moved and ${after.length} after the move, of ${pushed} pushed`);
  assert.equal(new Set([...moved, ...after]).size, pushed, 'an item is in both names');
});

test('EXEC of writes a Store transaction holds is all or nothing', async () => {
  const r = client();
  await r.connect();
  await r.set('aon:max', '9223372036854775807');
  const failed = await r
    .multi()
    .incr('aon:a')
    .rpush('aon:b', 'x')
    .hset('aon:h', 'f', 'v')
    .incr('aon:max')
    .exec()
    .catch((e: Error) => e);
  assert.ok(failed instanceof Error && /EXECABORT/.test(failed.message), String(failed));
  assert.equal(await r.exists('aon:a', 'aon:b', 'aon:h'), 0, 'none of the writes before the failing one applied');
  const done = await r.multi().incr('aon:a').rpush('aon:b', 'x', 'y').sadd('aon:s', 'm').zincrby('aon:z', 2, 'm').hset('aon:h', 'f', 'v').exec();
  assert.deepEqual(done, [
    [null, 1],
    [null, 2],
    [null, 1],
    [null, '2'],
    [null, 1],
  ]);
  const feed = await srv.req('GET', '/variants/aon:a');
  assert.equal(feed.body.data.variant, 1);
});

test('SUNIONSTORE and friends are the store combine with store: large results stored whole, replies as Redis gives them, the input limit refused', async () => {
  const r = client();
  await r.connect();
  const many = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `m${String(from + i).padStart(7, '0')}`);
  // 30,000 + 30,000 members (half shared): a staged combine on the log store.
  assert.equal((await srv.req('PUT', '/sets/st:a', { set: many(0, 30_000) })).status, 201);
  assert.equal((await srv.req('PUT', '/sets/st:b', { set: many(15_000, 30_000) })).status, 201);
  await r.rpush('st:dest', 'was a list');
  assert.equal(await r.sunionstore('st:dest', 'st:a', 'st:b'), 45_000);
  assert.equal(await r.type('st:dest'), 'set');
  assert.equal(await r.scard('st:dest'), 45_000);
  assert.equal(await r.sinterstore('st:i', 'st:a', 'st:b', 'st:missing'), 0);
  assert.equal(await r.exists('st:i'), 0);
  assert.equal(await r.sdiffstore('st:d', 'st:a', 'st:b'), 15_000);
  assert.deepEqual((await r.smembers('st:d')).sort(), many(0, 15_000));
  await r.set('st:str', 'x');
  await assert.rejects(r.sunionstore('st:d', 'st:a', 'st:str'), /WRONGTYPE/);
  assert.equal(await r.scard('st:d'), 15_000);
  // 4 × 60,000 named: over the 200,000 the store's combine with store reads at most.
  await assert.rejects(
    r.sunionstore('st:d', 'st:a', 'st:b', 'st:a', 'st:b', 'st:a', 'st:b', 'st:a', 'st:b'),
    /ERR combine with 'store' reads at most 200000 members in all/,
  );
  assert.equal(await r.scard('st:d'), 15_000);
});

test('a read token may run read commands only', async () => {
  const file = path.join(srv.dataDir, 'tokens');
  writeFileSync(file, 'reader read READ-ONLY-token-1\nwriter write WRITE-token-22\n');
  const s = await startWithResp({ args: ['--tokens-file', file] });
  try {
    const rd = new Redis({ port: s.port, host: '127.0.0.1', username: 'reader', password: 'READ-ONLY-token-1', lazyConnect: true, maxRetriesPerRequest: 0 });
    clients.push(rd);
    await rd.connect();
    assert.equal(await rd.get('ro:x'), null);
    await assert.rejects(rd.set('ro:x', '1'), /NOPERM/);
    const wr = new Redis({ port: s.port, host: '127.0.0.1', password: 'WRITE-token-22', lazyConnect: true, maxRetriesPerRequest: 0 });
    clients.push(wr);
    await wr.connect();
    assert.equal(await wr.set('ro:x', '1'), 'OK');
    await assert.rejects(wr.flushdb(), /NOPERM/);
  } finally {
    await s.srv.close();
  }
});

test('a reload of the tokens file (SIGHUP) reaches open connections: a demoted token loses its writes and its view of others, a removed one is NOAUTH', async () => {
  const file = path.join(srv.dataDir, 'tokens-reload');
  writeFileSync(file, 'demoted admin DEMOTED-token-333\nremoved write REMOVED-token-44\nother write OTHER-token-5555\n');
  const s = await startWithResp({ args: ['--tokens-file', file] });
  try {
    const open = async (password: string): Promise<Redis> => {
      const r = new Redis({ port: s.port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
      clients.push(r);
      await r.connect();
      return r;
    };
    const demoted = await open('DEMOTED-token-333');
    const removed = await open('REMOVED-token-44');
    const other = await open('OTHER-token-5555');
    assert.equal(await other.ping(), 'PONG');
    assert.equal(await demoted.incr('reload:n'), 1);
    assert.equal(await removed.incr('reload:n'), 2);
    // An admin token sees every connection in CLIENT LIST; a read token only its own.
    assert.match((await demoted.call('client', 'list')) as string, /user=other/);
    writeFileSync(file, 'demoted read DEMOTED-token-333\nother write OTHER-token-5555\n');
    s.srv.signal('SIGHUP');
    const deadline = Date.now() + 10_000;
    // The reload has happened once the removed token's next command is refused.
    for (;;) {
      const err = await removed.get('reload:n').then(
        () => undefined,
        (e: Error) => e,
      );
      if (err !== undefined) {
        assert.match(err.message, /NOAUTH/);
        break;
      }
      assert.ok(Date.now() < deadline, 'the reload did not reach the open connection');
      await sleep(50);
    }
    await assert.rejects(demoted.incr('reload:n'), /NOPERM/);
    assert.equal(await demoted.get('reload:n'), '2');
    assert.doesNotMatch((await demoted.call('client', 'list')) as string, /user=other/);
    assert.match((await demoted.call('client', 'list')) as string, /user=demoted/);
    // Still refused: the connection is no longer authenticated.
    await assert.rejects(removed.incr('reload:n'), /NOAUTH/);
    assert.equal(await demoted.get('reload:n'), '2');
  } finally {
    await s.srv.close();
  }
});

test("/metrics counts RESP commands and errors by the table's names, and open connections", async () => {
  const r = client();
  await r.connect();
  for (let i = 0; i < 7; i++) await r.incr('metrics:n');
  await r.set('metrics:s', 'x');
  await assert.rejects(r.incr('metrics:s'), /not an integer/);
  const m = await srv.req('GET', '/metrics');
  assert.equal(m.status, 200);
  const value = (re: RegExp): number => Number(re.exec(m.raw)?.[1] ?? NaN);
  assert.ok(value(/^pithos_redis_commands_total\{command="incr"\} (\d+)$/m) >= 8, m.raw.slice(0, 200));
  assert.ok(value(/^pithos_redis_command_errors_total\{command="incr"\} (\d+)$/m) >= 1);
  assert.ok(value(/^pithos_redis_connections (\d+)$/m) >= 1);
});

test('redis-cli works against it', async () => {
  const cli = (...args: string[]): string =>
    execFileSync('redis-cli', ['-p', String(port), '-a', TOKEN, '--no-auth-warning', ...args], { encoding: 'utf8' }).trim();
  assert.equal(cli('SET', 'cli:k', 'hello'), 'OK');
  assert.equal(cli('GET', 'cli:k'), 'hello');
  assert.equal(cli('RPUSH', 'cli:l', 'a', 'b', 'c'), '3');
  assert.equal(cli('LRANGE', 'cli:l', '0', '-1'), 'a\nb\nc');
  assert.equal(cli('TYPE', 'cli:l'), 'list');
  assert.match(cli('INFO', 'server'), /redis_version:/);
  assert.ok(Number(cli('COMMAND', 'COUNT')) > 120);
});

test('values that are not UTF-8 are refused and change nothing; ECHO and PING answer any bytes as sent', async () => {
  const r = client();
  await r.connect();
  await assert.rejects(r.set('bin:k', Buffer.from([0xff, 0xfe, 0x00])), /not valid UTF-8/);
  assert.equal(await r.exists('bin:k'), 0);
  const bytes = Buffer.from([0xaf, 0xc2, 0x06, 0xca, 0xb9, 0xe1, 0x00, 0xff, 0x80]);
  assert.deepEqual(await r.echoBuffer(bytes), bytes);
  assert.deepEqual(await r.pingBuffer(bytes), bytes);
  // Inside MULTI only text is queued: the bytes are refused there, and EXEC fails as for any refused command.
  const m = r.multi();
  m.echo(bytes);
  await assert.rejects(m.exec(), /EXECABORT/);
});

test('redis-cli --pipe (mass insertion) runs every command and finds the end of its replies', async () => {
  // redis-cli ends the input with an ECHO of 20 random bytes and waits for them to come back.
  const input = Array.from({ length: 500 }, (_, i) => `SET mass:${i} v${i}\r\nINCR mass:n\r\n`).join('');
  const out = execFileSync('redis-cli', ['-p', String(port), '-a', TOKEN, '--no-auth-warning', '--pipe', '--pipe-timeout', '20'], {
    input,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.match(out, /errors: 0, replies: 1000/);
  const r = client();
  await r.connect();
  assert.equal(await r.get('mass:499'), 'v499');
  assert.equal(await r.get('mass:n'), '500');
});

test('the RESP port is in the start-up log and --resp-port is off by default', async () => {
  assert.equal(respPort(srv), port);
  const plain = await PithosServer.start();
  try {
    assert.doesNotMatch(plain.stdout + plain.stderr, /Redis protocol/);
  } finally {
    await plain.close();
  }
});

test(
  "a pipeline's writes (RESP and /redis/pipeline) share a batch of the log on the log store, never one key's two writes",
  { skip: STORE === 'postgres' ? 'log store only: the shared store has no batches of the log' : false },
  async () => {
    const r = client();
    await r.connect();
    const version = async (k: string): Promise<number> => etag(await srv.req('GET', `/variants/${k}`));
    await r.mset('bv:a', '1', 'bv:b', '1', 'bv:c', '1');
    // Sent in one write, decided in one synchronous run: one batch, so one version for its keys.
    const res = await r.pipeline().incr('bv:a').incr('bv:b').incr('bv:a').incr('bv:c').exec();
    assert.deepEqual(
      res?.map(([err, v]) => [err, v]),
      [
        [null, 2],
        [null, 2],
        [null, 3],
        [null, 2],
      ],
    );
    const [a, b, c] = [await version('bv:a'), await version('bv:b'), await version('bv:c')];
    // a's second INCR cannot join the batch that holds its first: it starts the next, which c joins.
    assert.equal(c, a, "c joined the batch of a's second write");
    assert.equal(a, b + 1, "a's second write took a batch after the one it shares with b");
    // The same over REST: one /redis/pipeline request's writes share a batch, a repeated key takes the next.
    const rest = await srv.req(
      'POST',
      '/redis/pipeline',
      [
        ['INCR', 'bv:x'],
        ['INCR', 'bv:y'],
        ['INCR', 'bv:x'],
        ['INCR', 'bv:z'],
      ],
      { authorization: `Bearer ${TOKEN}` },
    );
    assert.equal(rest.status, 200, rest.raw);
    assert.equal(rest.raw, '[{"result":1},{"result":1},{"result":2},{"result":1}]');
    const [x, y, z] = [await version('bv:x'), await version('bv:y'), await version('bv:z')];
    assert.equal(z, x, "z joined the batch of x's second write");
    assert.equal(x, y + 1, "x's second write took a batch after the one it shares with y");
  },
);
