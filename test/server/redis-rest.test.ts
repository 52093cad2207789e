/**
 * Upstash's REST protocol under /redis (docs/redis-rest.md), driven by the
 * real @upstash/redis client with nothing changed but `url` and `token`, and
 * by raw requests where the wire format itself is the point: every family,
 * pipeline(), multi(), JSON values, base64 answers, roles, the path form,
 * and the route table's reach (OpenAPI, metrics). Runs on both stores.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Redis } from '@upstash/redis';
import { onlyLog, PithosServer } from '../helpers/server.js';

const READER = 'reader-token-abcdef123456';
const WRITER = 'writer-token-abcdef123456';
let srv: PithosServer;
let dir: string;
let redis: Redis;
let url: string;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-upstash-'));
  writeFileSync(path.join(dir, 'tokens'), `dash read ${READER}\nimporter write ${WRITER}\n`);
  srv = await PithosServer.start({ args: ['--tokens-file', path.join(dir, 'tokens')] });
  url = `${srv.base}/redis`;
  redis = new Redis({ url, token: srv.token });
});
after(async () => {
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A raw POST with a Bearer token: the wire format as curl sees it. */
async function post(p: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown; text: string; type: string }> {
  const r = await fetch(`${url}${p}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${srv.token}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, json, text, type: r.headers.get('content-type') ?? '' };
}

test('strings, with the client auto-pipelining and (de)serialising JSON', async () => {
  assert.equal(await redis.set('s:ex', 'hello', { ex: 100 }), 'OK');
  assert.equal(await redis.get('s:ex'), 'hello');
  const ttl = await redis.ttl('s:ex');
  assert.equal(await redis.set('s:a', 'hello'), 'OK');
  assert.ok(ttl > 90 && ttl <= 100, String(ttl));
  assert.equal(await redis.incr('s:n'), 1);
  assert.equal(await redis.incrby('s:n', 41), 42);
  assert.equal(await redis.decr('s:n'), 41);
  assert.equal(await redis.incrbyfloat('s:f', 1.5), 1.5);
  assert.equal(await redis.append('s:a', ' world'), 11);
  assert.equal(await redis.strlen('s:a'), 11);
  assert.equal(await redis.getrange('s:a', 0, 4), 'hello');
  assert.equal(await redis.mset({ 's:m1': 'x', 's:m2': 'y' }), 'OK');
  assert.deepEqual(await redis.mget('s:m1', 's:m2', 's:none'), ['x', 'y', null]);
  assert.equal(await redis.setnx('s:m1', 'z'), 0);
  assert.equal(await redis.getdel('s:m2'), 'y');
  assert.equal(await redis.get('s:m2'), null);
  // JSON values: the client stringifies objects and parses what comes back.
  const obj = { name: 'Ada', tags: ['x', 'y'], n: 3, nested: { ok: true } };
  await redis.set('s:json', obj);
  assert.deepEqual(await redis.get('s:json'), obj);
  // Text beyond ASCII survives base64 both ways.
  await redis.set('s:utf8', 'héllo ✓ 𝄞');
  assert.equal(await redis.get('s:utf8'), 'héllo ✓ 𝄞');
  // A SET over HTTP is the same object the PQL API sees.
  const v = await srv.req('GET', '/variants/s:a');
  assert.equal(v.status, 200, v.raw);
  assert.equal(v.body.data.variant, 'hello world');
});

test('keys: exists, type, expire, persist, del, keys, scan', async () => {
  await redis.set('k:1', 'v');
  await redis.rpush('k:2', 'a');
  assert.equal(await redis.exists('k:1', 'k:2', 'k:none'), 2);
  assert.equal(await redis.type('k:1'), 'string');
  assert.equal(await redis.type('k:2'), 'list');
  assert.equal(await redis.type('k:none'), 'none');
  assert.equal(await redis.expire('k:1', 50), 1);
  assert.ok((await redis.pttl('k:1')) > 40_000);
  assert.equal(await redis.persist('k:1'), 1);
  assert.equal(await redis.ttl('k:1'), -1);
  assert.deepEqual((await redis.keys('k:*')).sort(), ['k:1', 'k:2']);
  const seen: string[] = [];
  let cursor: string | number = 0;
  do {
    const [next, keys]: [string | number, string[]] = await redis.scan(cursor, { match: 'k:*', count: 1 });
    seen.push(...keys);
    cursor = next;
  } while (String(cursor) !== '0');
  assert.deepEqual([...new Set(seen)].sort(), ['k:1', 'k:2']);
  assert.equal(await redis.del('k:1', 'k:2', 'k:none'), 2);
  assert.equal(await redis.exists('k:1'), 0);
});

test('lists', async () => {
  assert.equal(await redis.rpush('l', 'a', 'b', 'c'), 3);
  assert.equal(await redis.lpush('l', 'z'), 4);
  assert.deepEqual(await redis.lrange('l', 0, -1), ['z', 'a', 'b', 'c']);
  assert.equal(await redis.llen('l'), 4);
  assert.equal(await redis.lpop('l'), 'z');
  assert.equal(await redis.rpop('l'), 'c');
  assert.equal(await redis.lindex('l', 1), 'b');
  assert.equal(await redis.lset('l', 0, 'A'), 'OK');
  assert.deepEqual(await redis.lrange('l', 0, -1), ['A', 'b']);
  // A list of JSON objects comes back parsed.
  await redis.rpush('l:json', { id: 1 }, { id: 2 });
  assert.deepEqual(await redis.lrange('l:json', 0, -1), [{ id: 1 }, { id: 2 }]);
});

test('sets', async () => {
  assert.equal(await redis.sadd('set', 'a', 'b', 'c'), 3);
  assert.equal(await redis.sadd('set', 'a'), 0);
  assert.deepEqual((await redis.smembers('set')).sort(), ['a', 'b', 'c']);
  assert.equal(await redis.sismember('set', 'b'), 1);
  assert.equal(await redis.sismember('set', 'x'), 0);
  assert.equal(await redis.scard('set'), 3);
  assert.equal(await redis.srem('set', 'a', 'x'), 1);
  await redis.sadd('set2', 'b', 'q');
  assert.deepEqual(await redis.sinter('set', 'set2'), ['b']);
});

test('sorted sets', async () => {
  assert.equal(await redis.zadd('z', { score: 1, member: 'one' }, { score: 2, member: 'two' }, { score: 3, member: 'three' }), 3);
  assert.deepEqual(await redis.zrange('z', 0, -1), ['one', 'two', 'three']);
  assert.deepEqual(await redis.zrange('z', 0, 1, { withScores: true }), ['one', 1, 'two', 2]);
  assert.equal(await redis.zscore('z', 'two'), 2);
  assert.equal(await redis.zincrby('z', 10, 'one'), 11);
  assert.equal(await redis.zrank('z', 'one'), 2);
  assert.equal(await redis.zcard('z'), 3);
  assert.deepEqual(await redis.zrange('z', 2, 3, { byScore: true }), ['two', 'three']);
  assert.equal(await redis.zrem('z', 'two'), 1);
});

test('hashes: a hash comes back as the flat RESP2 array, which the client makes an object', async () => {
  assert.equal(await redis.hset('h', { a: 'x', b: 2, c: { deep: [1] } }), 3);
  assert.deepEqual(await redis.hgetall('h'), { a: 'x', b: 2, c: { deep: [1] } });
  assert.equal(await redis.hget('h', 'a'), 'x');
  assert.equal(await redis.hincrby('h', 'b', 5), 7);
  assert.equal(await redis.hexists('h', 'a'), 1);
  assert.equal(await redis.hlen('h'), 3);
  assert.equal(await redis.hdel('h', 'a', 'zz'), 1);
  assert.deepEqual((await redis.hkeys('h')).sort(), ['b', 'c']);
  const raw = await post('', ['HGETALL', 'h']);
  assert.equal(raw.status, 200);
  const flat = (raw.json as { result: string[] }).result;
  assert.ok(Array.isArray(flat) && flat.length === 4, raw.text);
  // The PQL API sees the hash as the record it is.
  const rec = await srv.req('GET', '/records/h');
  assert.equal(rec.status, 200, rec.raw);
});

test('pipeline(): each command on its own, answers in order, one failure does not stop the rest', async () => {
  const p = redis.pipeline();
  p.set('p:a', 1);
  p.incr('p:a');
  p.get('p:a');
  p.rpush('p:a', 'x'); // WRONGTYPE
  p.incr('p:a');
  const out = await p.exec({ keepErrors: true });
  assert.equal(out.length, 5);
  assert.deepEqual(
    out.slice(0, 3).map((e) => e.result),
    ['OK', 2, 2],
  );
  assert.match(String(out[3]!.error), /^WRONGTYPE /);
  assert.equal(out[4]!.result, 3);
  // Without keepErrors the client turns the failed entry into a thrown error.
  const q = redis.pipeline();
  q.incr('p:a');
  q.lpush('p:a', 'y');
  await assert.rejects(q.exec(), /WRONGTYPE/);
  assert.equal(await redis.get('p:a'), 4);
});

test('/pipeline: each command sees the effects of those before it, whether it waited for them or not', async () => {
  // INCR and SET of a plain string take the fast path (their store work issued at once); APPEND and
  // the refused LPUSH do not; the answers are in order and every later command sees the earlier ones.
  const r = await post('/pipeline', [
    ['SET', 'q:a', '10'],
    ['INCR', 'q:a'],
    ['APPEND', 'q:a', '0'],
    ['INCR', 'q:a'],
    ['GET', 'q:a'],
    ['LPUSH', 'q:a', 'x'],
    ['INCRBY', 'q:a', '5'],
    ['DEL', 'q:a'],
    ['INCR', 'q:a'],
    ['GET', 'q:a'],
  ]);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, [
    { result: 'OK' },
    { result: 11 },
    { result: 3 },
    { result: 111 },
    { result: '111' },
    { error: 'WRONGTYPE Operation against a key holding the wrong kind of value' },
    { result: 116 },
    { result: 1 },
    { result: 1 },
    { result: '1' },
  ]);
});

test('/pipeline: a pipeline longer than the writes it may have pending at once answers every command in order', async () => {
  // 1,024 commands may wait for their durable write at once; the rest start as the oldest settle.
  const cmds = Array.from({ length: 1100 }, (_, i) => ['INCR', `long:${i % 10}`]);
  const r = await post('/pipeline', cmds);
  assert.equal(r.status, 200, r.text.slice(0, 200));
  assert.deepEqual(
    r.json,
    cmds.map((_, i) => ({ result: Math.floor(i / 10) + 1 })),
  );
});

test('/pipeline: durable writes share group commits', { skip: onlyLog('counts the fdatasyncs of the log') }, async () => {
  const fsyncs = async (): Promise<number> => {
    const m = await srv.req('GET', '/metrics');
    const hit = /^pithos_log_fsync_duration_seconds_count (\d+)$/m.exec(m.raw);
    assert.ok(hit !== null, 'no fsync count in /metrics');
    return Number(hit[1]);
  };
  /** Runs the pipeline, checks each command's answer, and checks that its writes took a few fdatasyncs, not one each. */
  const shared = async (cmds: string[][], results: number[], what: string): Promise<void> => {
    const before = await fsyncs();
    const r = await post('/pipeline', cmds);
    const used = (await fsyncs()) - before;
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.json,
      results.map((result) => ({ result })),
    );
    // One fdatasync per command when each waited for the one before; a few when they share commits.
    assert.ok(used >= 1 && used <= 8, `${used} fdatasyncs for ${what}`);
  };
  const incrs = Array.from({ length: 64 }, (_, i) => ['INCR', `gc:${i % 32}`]);
  await shared(
    incrs,
    incrs.map((_, i) => (i < 32 ? 1 : 2)),
    '64 INCRs',
  );
  // Adds to and removes from sets that exist share them too; the answers are each command's own.
  assert.equal(
    (
      await post('/pipeline', [
        ['SADD', 'gc:s1', 'x'],
        ['SADD', 'gc:s2', 'x'],
      ])
    ).status,
    200,
  );
  const sets = Array.from({ length: 64 }, (_, i) =>
    i % 4 === 3 ? ['SREM', `gc:s${((i - 1) % 2) + 1}`, `m${i - 1}`] : ['SADD', `gc:s${(i % 2) + 1}`, `m${i}`, 'x'],
  );
  await shared(
    sets,
    sets.map(() => 1),
    '64 SADDs and SREMs',
  );
});

test('multi(): one block; a command that cannot be queued aborts it whole', async () => {
  const tx = redis.multi();
  tx.set('t:a', 'x');
  tx.incr('t:n');
  tx.incr('t:n');
  tx.get('t:a');
  assert.deepEqual(await tx.exec(), ['OK', 1, 2, 'x']);
  // An unknown command in the block: EXECABORT, nothing of it applied.
  const r = await post('/multi-exec', [
    ['INCR', 't:n'],
    ['NOSUCH', 'x'],
  ]);
  assert.equal(r.status, 400, r.text);
  assert.match((r.json as { error: string }).error, /^EXECABORT .*command 2: ERR unknown command 'NOSUCH'/);
  assert.equal(await redis.get('t:n'), 2);
  // A command that fails as it runs is that entry's error, as in Redis's EXEC.
  const e = await post('/multi-exec', [
    ['SET', 't:s', 'text'],
    ['INCR', 't:s'],
    ['GET', 't:s'],
  ]);
  assert.equal(e.status, 200, e.text);
  assert.deepEqual(e.json, [{ result: 'OK' }, { error: 'ERR value is not an integer or out of range' }, { result: 'text' }]);
});

test('base64: every string of the answer but the status OK, errors as they are', async () => {
  await redis.set('b:k', 'v✓');
  await redis.rpush('b:l', 'OK', 'x');
  const h = { 'Upstash-Encoding': 'base64' };
  const enc = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
  assert.deepEqual((await post('', ['GET', 'b:k'], h)).json, { result: enc('v✓') });
  assert.deepEqual((await post('', ['SET', 'b:k2', 'v'], h)).json, { result: 'OK' });
  // A bulk string that reads OK is data, so it is encoded; so is any status but OK.
  assert.deepEqual((await post('', ['LRANGE', 'b:l', '0', '-1'], h)).json, { result: [enc('OK'), enc('x')] });
  assert.deepEqual((await post('', ['PING'], h)).json, { result: enc('PONG') });
  assert.deepEqual((await post('', ['TYPE', 'b:k'], h)).json, { result: enc('string') });
  assert.deepEqual((await post('', ['INCR', 'b:n'], h)).json, { result: 1 });
  assert.deepEqual((await post('', ['GET', 'b:none'], h)).json, { result: null });
  assert.deepEqual(
    (
      await post(
        '/pipeline',
        [
          ['GET', 'b:k'],
          ['INCR', 'b:k'],
        ],
        h,
      )
    ).json,
    [{ result: enc('v✓') }, { error: 'ERR value is not an integer or out of range' }],
  );
  // Without the header, plain text.
  assert.deepEqual((await post('', ['GET', 'b:k'])).json, { result: 'v✓' });
  // What the client does not ask for is refused plainly.
  const bad = await post('', ['GET', 'b:k'], { 'Upstash-Encoding': 'hex' });
  assert.equal(bad.status, 400);
  assert.match((bad.json as { error: string }).error, /Upstash-Encoding 'hex' is not supported/);
});

test('Upstash-Response-Format: resp2 answers the RESP2 bytes', async () => {
  await redis.hset('r2', { f: 'v' });
  const r = await post('', ['HGETALL', 'r2'], { 'Upstash-Response-Format': 'resp2' });
  assert.equal(r.status, 200);
  assert.equal(r.type, 'application/octet-stream');
  assert.equal(r.text, '*2\r\n$1\r\nf\r\n$1\r\nv\r\n');
  const bad = await post('', ['PING'], { 'Upstash-Response-Format': 'xml' });
  assert.equal(bad.status, 400);
});

test('errors: 400 {"error"} with Redis text, which the client throws', async () => {
  await redis.set('e:s', 'x');
  const r = await post('', ['LPUSH', 'e:s', 'a']);
  assert.equal(r.status, 400);
  assert.match((r.json as { error: string }).error, /^WRONGTYPE Operation against a key holding the wrong kind of value/);
  await assert.rejects(redis.lpush('e:s', 'a'), /WRONGTYPE/);
  for (const [body, msg] of [
    ['{"a":1}', /must be a JSON array/],
    ['[]', /empty command/],
    ['["GET", {"x":1}]', /argument 1 must be a string or a number/],
    ['[not json', /not valid JSON/],
    ['["GET"]', /wrong number of arguments for 'get' command/],
    ['["MULTI"]', /not available over REST: send the block to \/redis\/multi-exec/],
    // Names an object's prototype holds are no commands either.
    ['["__proto__","x"]', /^ERR unknown command '__proto__', with args beginning with: 'x' $/],
    ['["constructor"]', /^ERR unknown command 'constructor', with args beginning with: $/],
  ] as const) {
    const e = await post('', body);
    assert.equal(e.status, 400, body);
    assert.match((e.json as { error: string }).error, msg, body);
  }
  // Numbers come as JSON numbers.
  assert.deepEqual((await post('', ['SET', 'e:n', 5, 'EX', 100])).json, { result: 'OK' });
  assert.deepEqual((await post('', ['INCRBY', 'e:n', 10])).json, { result: 15 });
});

test('tokens: Bearer or Auth-Token; a wrong one 401 {"error"}; a read token runs reads only', async () => {
  const none = await fetch(url, { method: 'POST', body: '["PING"]' });
  assert.equal(none.status, 401);
  assert.match(((await none.json()) as { error: string }).error, /missing token/);
  const wrong = await post('', ['PING'], { Authorization: 'Bearer nope' });
  assert.equal(wrong.status, 401);
  assert.deepEqual(wrong.json, { error: 'wrong token' });
  await assert.rejects(new Redis({ url, token: 'nope', retry: false }).get('x'), /wrong token/);
  const viaAuthToken = await fetch(url, { method: 'POST', headers: { 'Auth-Token': srv.token }, body: '["PING"]' });
  assert.deepEqual(await viaAuthToken.json(), { result: 'PONG' });

  await redis.set('tok:k', 'v');
  const reader = new Redis({ url, token: READER });
  assert.equal(await reader.get('tok:k'), 'v');
  await assert.rejects(reader.set('tok:k', 'w'), /NOPERM this token may not run the 'set' command/);
  assert.equal(await redis.get('tok:k'), 'v');
  const refused = await post('', ['SET', 'tok:k', 'w'], { Authorization: `Bearer ${READER}` });
  assert.equal(refused.status, 403);
  // In a pipeline, the write is refused and the read beside it answered.
  const p = await post(
    '/pipeline',
    [
      ['GET', 'tok:k'],
      ['DEL', 'tok:k'],
    ],
    { Authorization: `Bearer ${READER}` },
  );
  assert.deepEqual(p.json, [{ result: 'v' }, { error: "NOPERM this token may not run the 'del' command (it needs a write token)" }]);
  // In a block, it aborts the block.
  const m = await post(
    '/multi-exec',
    [
      ['GET', 'tok:k'],
      ['DEL', 'tok:k'],
    ],
    { Authorization: `Bearer ${READER}` },
  );
  assert.equal(m.status, 403, m.text);
  assert.equal(await redis.get('tok:k'), 'v');
  // A write token writes; an admin command needs admin.
  const writer = new Redis({ url, token: WRITER });
  assert.equal(await writer.set('tok:k', 'w'), 'OK');
  assert.equal(await redis.get('tok:k'), 'w');
  const cfg = await post('', ['CONFIG', 'GET', 'appendonly'], { Authorization: `Bearer ${WRITER}` });
  assert.equal(cfg.status, 403, cfg.text);
});

test('the path form: GET|POST /redis/<command>/<arg>…, a POST body as the last argument', async () => {
  const get = (p: string): Promise<Response> => fetch(`${url}/${p}`, { headers: { Authorization: `Bearer ${srv.token}` } });
  assert.deepEqual(await (await get('set/path:k/v%2Fwith%20slash')).json(), { result: 'OK' });
  assert.deepEqual(await (await get('get/path:k')).json(), { result: 'v/with slash' });
  assert.deepEqual(await (await get('GET/path%3Ak')).json(), { result: 'v/with slash' });
  const body = 'a body with "quotes" and\nnewlines';
  const posted = await fetch(`${url}/set/path:b`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` }, body });
  assert.deepEqual(await posted.json(), { result: 'OK' });
  assert.equal(await redis.get('path:b'), body);
  assert.deepEqual(await (await get('lpush/path:l/a/b/c')).json(), { result: 3 });
  assert.deepEqual(await (await get('lrange/path:l/0/-1')).json(), { result: ['c', 'b', 'a'] });
  const bad = await get('nosuch/x');
  assert.equal(bad.status, 400);
  // A read token cannot write through the path form either.
  const r = await fetch(`${url}/set/path:k/x`, { headers: { Authorization: `Bearer ${READER}` } });
  assert.equal(r.status, 403);
});

test('the routes are in the route table: OpenAPI documents them, metrics count them by template', async () => {
  const doc = (await srv.req('GET', '/openapi.json')).body;
  for (const p of ['/redis', '/redis/pipeline', '/redis/multi-exec', '/redis/{command}']) assert.ok(doc.paths[p], p);
  assert.equal(doc.paths['/redis/{command}'].get.parameters[0].name, 'command');
  // The client's typed calls arrive as POST /redis/pipeline (auto-pipelining), and without it as POST /redis.
  await new Redis({ url, token: srv.token, enableAutoPipelining: false }).get('m:x');
  const m = await srv.req('GET', '/metrics');
  assert.equal(m.status, 200);
  for (const route of ['/redis', '/redis/pipeline', '/redis/multi-exec', '/redis/{command}'])
    assert.match(m.raw, new RegExp(`pithos_http_requests_total\\{route="${route.replace(/[{}]/g, '\\$&')}",method="(POST|GET)",status="200"\\} [1-9]`), route);
  // Never labelled by the raw path: a path-form command is the template.
  assert.doesNotMatch(m.raw, /route="\/redis\/get/);
});
