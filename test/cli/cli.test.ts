/**
 * Black-box tests of the `pithos` command-line client: every subcommand run as a real
 * process against a real server, human and `-o json` output, exit codes (0 ok, 1 not
 * found / refused, 2 usage). Part-two commands are checked where the server answers them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { BIN, PithosServer, ROOT, childEnv } from '../helpers/server.js';

let server: PithosServer;
let tmp: string;

before(async () => {
  server = await PithosServer.start();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-cli-client-'));
});
after(async () => {
  await server?.close();
  rmSync(tmp, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `pithos <args>` with PITHOS_URL/PITHOS_TOKEN pointing at the test server. */
function cli(args: string[], o: { input?: string; env?: Record<string, string | undefined> } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: childEnv({ PITHOS_URL: server.base, PITHOS_TOKEN: server.token, ...(o.env ?? {}) }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(o.input ?? '');
  });
}

function ok(r: Run, label: string): void {
  assert.equal(r.code, 0, `${label}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}
function exits(r: Run, code: number, label: string, stderr?: RegExp): void {
  assert.equal(r.code, code, `${label}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  if (stderr) assert.match(r.stderr, stderr, label);
}
/** The single JSON line `-o json` printed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes of every command
function json(r: Run): { status: string; message: string; data?: any; http_status?: number; version?: number } {
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 1, `one JSON line expected:\n${r.stdout}`);
  return JSON.parse(lines[0]!);
}
async function served(method: string, p: string, body?: unknown): Promise<boolean> {
  const r = await server.req(method, p, body);
  return !(r.status === 405 || (r.status === 404 && /^no endpoint at /.test(r.body?.message ?? '')));
}

test('help, version and usage errors (exit 2, nothing on stdout)', async () => {
  const [help, helpGet, helpNope, version, serveHelp, unknown] = await Promise.all([
    cli(['help']),
    cli(['help', 'get']),
    cli(['help', 'nope']),
    cli(['version']),
    cli(['serve', '--help']),
    cli(['frobnicate', 'x']),
  ]);
  exits(unknown, 2, 'unknown command', /^pithos: unknown command 'frobnicate' \(see pithos help\)\n$/);
  ok(help, 'help');
  for (const c of [
    'get',
    'put',
    'del',
    'incr',
    'append',
    'push',
    'pop',
    'add',
    'remove',
    'combine',
    'query',
    'insert',
    'patch',
    'lock',
    'unlock',
    'txn',
    'ls',
    'watch',
    'health',
    'serve',
  ]) {
    assert.match(help.stdout, new RegExp(`\\b${c}\\b`), `help lists ${c}`);
  }
  ok(helpGet, 'help get');
  const helpServe = await cli(['help', 'serve']);
  ok(helpServe, 'help serve');
  assert.match(helpServe.stdout, /^usage: pithos \[serve\]/);
  assert.match(helpGet.stdout, /^usage: pithos get <kind> <name>/);
  exits(helpNope, 2, 'help nope', /no help for 'nope'/);
  // Names of Object.prototype's members are no topics either.
  for (const topic of ['constructor', '__proto__', 'toString']) exits(await cli(['help', topic]), 2, `help ${topic}`, new RegExp(`no help for '${topic}'`));
  ok(version, 'version');
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.equal(version.stdout, `pithos ${pkg.version}\n`);
  ok(serveHelp, 'serve --help');
  assert.match(serveHelp.stdout, /--port/, 'serve --help is the server usage');

  const bad: string[][] = [
    ['get'],
    ['get', 'thing', 'x'],
    ['get', 'record', 'a', 'b'],
    ['query', 't', '--limit', 'abc'],
    ['query', 't', '{not json'],
    ['query', 't', '[1]'],
    ['put', 'record', 'r', '{bad'],
    ['get', 'record', 'x', '-o', 'yaml'],
    ['get', 'record', 'x', '--frobnicate'],
    ['get', 'variant', 'x', '--ttl', '5'],
    ['incr', 'n', 'abc'],
    ['lock', 'L'],
    ['insert', 't', '[1,2]'],
    ['get', 'record', 'x', '--url', 'localhost:1'],
  ];
  const runs = await Promise.all(bad.map((a) => cli(a)));
  runs.forEach((r, i) => {
    const label = bad[i]!.join(' ');
    exits(r, 2, label, /^pithos \w+: .+/);
    assert.equal(r.stdout, '', `${label}: stdout must stay empty`);
    assert.equal(r.stderr.trim().split('\n').length, 1, `${label}: one line on stderr`);
  });
});

test('tables: put table, insert (args and stdin), query, get table, patch, del rows, del table', async () => {
  assert.deepEqual(json(await cli(['put', 'table', 'users', '-o', 'json'])), { status: 'success', message: 'table created successfully' });
  const again = await cli(['put', 'table', 'users', '-o', 'json']);
  exits(again, 1, 'put table twice', /409 table 'users' already exists/);
  assert.deepEqual(json(again), { status: 'error', message: "table 'users' already exists", http_status: 409 });

  const ins = await cli(['insert', 'users', '{"name":"ann","age":31}', '{"name":"bob","age":25}']);
  ok(ins, 'insert');
  assert.equal(ins.stdout, 't_id 1\nt_id 2\n');
  const fromStdin = await cli(['insert', 'users', '-', '-o', 'json'], { input: '[{"name":"cy","age":40}]' });
  ok(fromStdin, 'insert -');
  assert.deepEqual(json(fromStdin).data, { t_id: 3 });
  const file = path.join(tmp, 'row.json');
  writeFileSync(file, '{"name":"dee","age":19}');
  ok(await cli(['insert', 'users', `@${file}`]), 'insert @file');

  // Reads in parallel: each is its own process.
  const [q, human, none, g, gj] = await Promise.all([
    cli(['query', 'users', '{"age":{"$gt":26}}', '-o', 'json']),
    cli(['query', 'users', '{"age":{"$gt":26}}']),
    cli(['query', 'users', '{"name":"zed"}']),
    cli(['get', 'table', 'users']),
    cli(['get', 'table', 'users', '-o', 'json']),
  ]);
  ok(q, 'query -o json');
  assert.deepEqual(json(q).data, [
    { name: 'ann', age: 31 },
    { name: 'cy', age: 40 },
  ]);
  assert.equal(json(q).message, 'table queried rows successfully');
  ok(human, 'query');
  assert.deepEqual(
    human.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/\s+/)),
    [
      ['name', 'age'],
      ['----', '---'],
      ['ann', '31'],
      ['cy', '40'],
    ],
  );
  ok(none, 'query no match');
  assert.equal(none.stdout, '', 'no rows: nothing on stdout');
  assert.equal(none.stderr, '(no rows)\n');

  ok(g, 'get table');
  assert.match(g.stdout, /^t_id\s+name\s+age\n/);
  assert.match(g.stdout, /\n4\s+dee\s+19\n?$/);
  assert.deepEqual(Object.keys(json(gj).data), ['1', '2', '3', '4']);

  ok(await cli(['patch', 'users', '{"name":"bob"}', '{"age":26,"role":"ops"}']), 'patch');
  assert.deepEqual((await server.req('GET', '/tables/users')).body.data['2'], { name: 'bob', age: 26, role: 'ops' });
  ok(await cli(['del', 'rows', 'users', '{"age":{"$lt":20}}']), 'del rows');
  assert.deepEqual(Object.keys((await server.req('GET', '/tables/users')).body.data), ['1', '2', '3']);
  const [pg, qg] = await Promise.all([cli(['patch', 'ghost', '{}', '{}']), cli(['query', 'ghost'])]);
  exits(pg, 1, 'patch missing table', /404 table 'ghost' does not exist/);
  exits(qg, 1, 'query missing table', /does not exist/);

  ok(await cli(['del', 'table', 'users']), 'del table');
  exits(await cli(['get', 'table', 'users']), 1, 'get dropped table', /404/);
});

test('one row by t_id: get row, put row, patch --row (--unset), del row, --if-version', async () => {
  ok(await cli(['put', 'table', 'twins']), 'put table');
  ok(await cli(['insert', 'twins', '{"a":1,"b":2}', '{"a":1,"b":2}']), 'insert');
  const g = await cli(['get', 'row', 'twins', '1', '-o', 'json']);
  ok(g, 'get row');
  const v = json(g).version as number;
  assert.ok(Number.isInteger(v), g.stdout);
  assert.deepEqual(json(g), { status: 'success', message: 'table row queried successfully', data: { a: 1, b: 2 }, version: v });
  const human = await cli(['get', 'row', 'twins', '1']);
  assert.equal(human.stdout, `{\n  "a": 1,\n  "b": 2\n}\n(version ${v})\n`);

  exits(
    await cli(['patch', '--row', 'twins', '1', '{"c":3}', '--if-version', String(v + 1)]),
    1,
    'stale patch',
    new RegExp(`412 row 1 of table 'twins' changed \\(version ${v}\\)`),
  );
  ok(await cli(['patch', '--row', 'twins', '1', '{"c":3}', '--unset', 'a', '--unset', 'b', '--if-version', String(v)]), 'patch --row');
  ok(await cli(['patch', '--row', 'twins', '2', '--unset', 'b']), 'patch --row with only --unset');
  exits(await cli(['patch', '--row', 'twins', '2']), 2, 'patch --row without sets or --unset', /give sets or --unset/);
  ok(await cli(['put', 'row', 'twins', '2', '{"z":true}']), 'put row');
  exits(await cli(['put', 'row', 'twins', '3', '{"z":true}']), 1, 'put row never creates', /404 row 3 of table 'twins' does not exist/);
  exits(await cli(['get', 'row', 'twins', 'abc']), 1, 'bad t_id', /400 t_id must be a positive integer in decimal, not 'abc'/);
  assert.deepEqual((await server.req('GET', '/tables/twins')).body.data, { 1: { c: 3 }, 2: { z: true } });
  ok(await cli(['del', 'row', 'twins', '1']), 'del row');
  assert.deepEqual((await server.req('GET', '/tables/twins')).body.data, { 2: { z: true } });
  exits(await cli(['del', 'row', 'twins', '1']), 1, 'del row twice', /404 row 1 of table 'twins' does not exist/);
});

test('records: put (created/replaced), get, --column, del, not found exits 1', async () => {
  const p1 = await cli(['put', 'record', 'doc', '{"a":1,"b":{"c":[1,2]}}']);
  ok(p1, 'put record');
  assert.equal(p1.stdout, 'created\n');
  const p2 = await cli(['put', 'record', 'doc', '{"a":2,"b":{"c":[1,2]}}', '--ttl', '600']);
  assert.equal(p2.stdout, 'replaced\n');
  const [g, human, colB, colZ] = await Promise.all([
    cli(['get', 'record', 'doc', '-o', 'json']),
    cli(['get', 'record', 'doc']),
    cli(['get', 'record', 'doc', '--column', 'b']),
    cli(['get', 'record', 'doc', '--column', 'zz']),
  ]);
  assert.deepEqual(json(g).data, { a: 2, b: { c: [1, 2] } });
  // The record alone on stdout (a script may redirect it to a file); the version is a note for people.
  assert.deepEqual(JSON.parse(human.stdout), { a: 2, b: { c: [1, 2] } });
  assert.match(human.stderr, /^\(version \d+\)\n$/);
  assert.equal(colB.stdout, '{"c":[1,2]}\n');
  assert.equal(colZ.stdout, '');
  assert.equal(colZ.stderr, '(no such field)\n');
  ok(await cli(['del', 'record', 'doc']), 'del record');
  const missing = await cli(['get', 'record', 'doc', '-o', 'json']);
  exits(missing, 1, 'get missing record', /404 record 'doc' does not exist/);
  assert.equal(json(missing).http_status, 404);
  exits(await cli(['del', 'record', 'doc']), 1, 'del missing record');
});

test('variants: put, incr (default 1, negative, float), --string, get, del', async () => {
  assert.equal((await cli(['put', 'variant', 'n', '5'])).stdout, '5\n');
  assert.equal((await cli(['incr', 'n'])).stdout, '6\n');
  assert.equal((await cli(['incr', 'n', '-10'])).stdout, '-4\n');
  assert.deepEqual(json(await cli(['get', 'variant', 'n', '-o', 'json'])).data, { variant: -4 });
  exits(await cli(['incr', 'n', '0.5']), 1, 'float delta on an integer', /409/);
  exits(await cli(['incr', 'n', '1.0']), 1, 'a 1.0 delta is a double, as over HTTP', /409/);
  exits(await cli(['incr', 'n', '0x10']), 2, 'a delta that is not a JSON number', /delta must be a number/);
  // Doubles keep their fraction going in and coming out, in both output forms.
  assert.equal((await cli(['put', 'variant', 'd', '3.0'])).stdout, '3.0\n');
  assert.ok((await server.req('GET', '/variants/d')).raw.includes('"variant":3.0'), 'stored as a double');
  assert.equal((await cli(['incr', 'd', '1'])).stdout, '4.0\n');
  assert.equal((await cli(['get', 'variant', 'd'])).stdout, '4.0\n');
  const dj = await cli(['get', 'variant', 'd', '-o', 'json']);
  assert.ok(dj.stdout.includes('"data":{"variant":4.0}'), dj.stdout);
  assert.ok(dj.stdout.includes('"version":'), 'version from the ETag');
  ok(await cli(['put', 'variant', 'd', '2.5', '--if-version', String((json(dj) as { version?: number }).version)]), 'a double with a condition');
  ok(await cli(['put', 'variant', 's', '42', '--string']), 'put --string');
  assert.deepEqual((await server.req('GET', '/variants/s')).body.data, { variant: '42' });
  ok(await cli(['put', 'variant', 'w', 'hello world']), 'put text');
  assert.equal((await cli(['get', 'variant', 'w'])).stdout, 'hello world\n');
  assert.equal((await cli(['append', 'w', ', é'])).stdout, `${Buffer.byteLength('hello world, é')}\n`);
  assert.equal((await cli(['get', 'variant', 'w'])).stdout, 'hello world, é\n');
  exits(await cli(['append', 'w', '!', '--if-version', '1']), 1, 'append with a stale version', /412/);
  exits(await cli(['append', 'n', 'x']), 1, 'append to a number', /409/);
  exits(await cli(['append', 'w']), 2, 'append without text', /append/);
  ok(await cli(['del', 'variant', 'n']), 'del variant');
  exits(await cli(['incr', 'n']), 1, 'incr missing', /404 variant 'n' does not exist/);
});

test('locks: lock, held (exit 1), get lock, renew, wrong token (exit 1), unlock', async () => {
  const a = await cli(['lock', 'L', '--ttl', '30', '--holder', 'me', '-o', 'json']);
  ok(a, 'lock');
  const { token, fence } = json(a).data as { token: string; fence: number };
  exits(await cli(['lock', 'L', '--ttl', '30']), 1, 'held', /423 lock 'L' is held/);
  const g = await cli(['get', 'lock', 'L']);
  ok(g, 'get lock');
  assert.match(g.stdout, new RegExp(`^held by me, fence ${fence}, expires in (2\\d|30)\\.\\d s \\(lease 30 s`));
  const r = await cli(['lock', 'L', '--renew', token, '--ttl', '60']);
  ok(r, 'renew');
  const newToken = /^token (\S+)\nfence \d+\n$/.exec(r.stdout)?.[1];
  assert.ok(newToken && newToken !== token, r.stdout);
  exits(await cli(['unlock', 'L', token]), 1, 'old token', /403/);
  ok(await cli(['unlock', 'L', newToken]), 'unlock');
  exits(await cli(['get', 'lock', 'L']), 1, 'released', /404/);
});

test('health; auth failures and unreachable servers exit 1; --url/--token beat the environment', async () => {
  const [h, hj, wrong, flagWins, fallback, unreachable, urlWins] = await Promise.all([
    cli(['health']),
    cli(['health', '-o', 'json']),
    cli(['health'], { env: { PITHOS_TOKEN: 'wrong' } }),
    cli(['health', '--token', server.token], { env: { PITHOS_TOKEN: 'wrong' } }),
    cli(['health'], { env: { PITHOS_TOKEN: undefined, PITHOS_AUTH_TOKEN: server.token } }),
    cli(['health'], { env: { PITHOS_URL: 'http://127.0.0.1:9' } }),
    cli(['health', '--url', server.base], { env: { PITHOS_URL: 'http://127.0.0.1:9' } }),
  ]);
  ok(h, 'health');
  assert.match(h.stdout, /^key_count\s+\d+$/m);
  assert.match(h.stdout, /^disk_total\s+\d+\.\d\dGB$/m);
  assert.ok(Number.isInteger(json(hj).data.key_count));
  // space_total in a unit that shows the figure (a test database is far below 0.01 GB), from space_bytes.
  const bytes = json(hj).data.space_bytes as number;
  assert.ok(Number.isSafeInteger(bytes) && bytes > 0, `space_bytes ${bytes}`);
  const m = /^space_total\s+(\d+(?:\.\d\d)?) (B|KiB|MiB)$/m.exec(h.stdout);
  assert.ok(m, h.stdout);
  const scale = { B: 1, KiB: 1024, MiB: 1024 ** 2 }[m[2] as 'B' | 'KiB' | 'MiB'];
  assert.ok(Number(m[1]) >= 1 && Number(m[1]) < 1024 && Math.abs(Number(m[1]) * scale - bytes) <= scale * 0.05, `${m[0]} for ${bytes} bytes`);
  assert.doesNotMatch(h.stdout, /^space_bytes/m, 'space_bytes is shown as space_total');
  exits(wrong, 1, 'wrong token', /401 .*check --token/);
  ok(flagWins, '--token wins');
  ok(fallback, 'PITHOS_AUTH_TOKEN as fallback');
  exits(unreachable, 1, 'unreachable', /cannot reach http:\/\/127\.0\.0\.1:9/);
  ok(urlWins, '--url wins');
});

test('connection options before or after the command; options anywhere; negative numbers stay arguments', async () => {
  // The environment points nowhere, so only the flags can reach the server.
  const nowhere = { env: { PITHOS_URL: 'http://127.0.0.1:9', PITHOS_TOKEN: 'wrong' } };
  const conn = ['--url', server.base, '--token', server.token];
  ok(await cli(['put', 'variant', 'lead-n', '5', ...conn]), 'setup');
  // Four processes at a time: each has a 15 s bound, and the test machine is shared.
  const [before, beforeEq, after, between] = await Promise.all([
    cli([...conn, 'health'], nowhere),
    cli([`--url=${server.base}`, `--token=${server.token}`, '-o', 'json', 'get', 'variant', 'lead-n'], nowhere),
    cli(['health', ...conn], nowhere),
    cli(['--url', server.base, 'get', '--token', server.token, 'variant', '-o', 'json', 'lead-n'], nowhere),
  ]);
  const [json1, neg, unknownCmd, unknownOpt] = await Promise.all([
    cli(['-o', 'json', '--timeout', '5', '--retries', '1', ...conn, 'health'], nowhere),
    cli([...conn, 'incr', 'lead-n', '-7'], nowhere),
    cli([...conn, 'frobnicate'], nowhere),
    cli([...conn, 'health', '--frobnicate'], nowhere),
  ]);
  ok(before, '--url --token health');
  assert.match(before.stdout, /^key_count\s+\d+$/m);
  assert.doesNotMatch(before.stderr, /unknown option/);
  ok(beforeEq, '--url=… --token=… -o json get');
  assert.equal(json(beforeEq).data.variant, 5);
  ok(after, 'health --url --token');
  assert.match(after.stdout, /^key_count\s+\d+$/m);
  ok(between, 'options between arguments');
  assert.equal(json(between).data.variant, 5);
  ok(json1, '-o json --timeout --retries first');
  assert.ok(Number.isInteger(json(json1).data.key_count));
  ok(neg, 'incr with a negative delta after leading options');
  assert.equal(neg.stdout, '-2\n');
  exits(unknownCmd, 2, 'unknown command after connection options', /^pithos: unknown command 'frobnicate' \(see pithos help\)\n$/);
  exits(unknownOpt, 2, 'unknown option', /^pithos health: unknown option '--frobnicate' \(see pithos help health\)\n$/);
  for (const r of [unknownCmd, unknownOpt]) assert.equal(r.stdout, '');
});

test('ls, txn and watch: checked where the server answers them, else exit 1 naming the missing endpoint', async () => {
  for (const r of await Promise.all([cli(['put', 'table', 'ls-a']), cli(['put', 'table', 'ls-b'])])) ok(r, 'setup');
  if (await served('GET', '/tables')) {
    const r = await cli(['ls', 'tables', '--prefix', 'ls-', '--limit', '1', '--all']);
    ok(r, 'ls --all');
    assert.deepEqual(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t')[0]),
      ['ls-a', 'ls-b'],
    );
    // Row counts read as English: 0 rows, 1 row, 2 rows.
    ok(await cli(['insert', 'ls-b', '{"x":1}']), 'insert');
    ok(await cli(['put', 'table', 'ls-c']), 'put table');
    for (const x of [1, 2]) ok(await cli(['insert', 'ls-c', `{"x":${x}}`]), 'insert');
    const counted = await cli(['ls', 'tables', '--prefix', 'ls-']);
    ok(counted, 'ls');
    assert.deepEqual(
      counted.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t')),
      [
        ['ls-a', '0 rows'],
        ['ls-b', '1 row'],
        ['ls-c', '2 rows'],
      ],
    );
  } else {
    exits(await cli(['ls']), 1, 'ls', /404 no endpoint at GET \/tables .*does not offer/);
  }
  const txn = '{"mutations":[{"name":"ls-a","operation":"INSERT","values":{"x":1}}]}';
  if (await served('POST', '/txns', { mutations: [] })) {
    const r = await cli(['txn', txn, '-o', 'json']);
    ok(r, 'txn');
    assert.deepEqual(json(r).data, { results: [{ t_id: 1 }] });
  } else {
    exits(await cli(['txn', txn]), 1, 'txn', /404 no endpoint at POST \/txns/);
  }
  // watch: without /watch, exit 1 at once; with it, --since 0 replays the write made first.
  if ((await watchStatus()) === 404) {
    exits(await cli(['watch', '--kind', 'record']), 1, 'watch', /404 no endpoint at GET \/watch/);
  } else {
    ok(await cli(['put', 'record', 'watched-1', '{}']), 'write for watch');
    const r = await cli(['watch', '--kind', 'record', '--prefix', 'watched-', '--since', '0', '--count-events', '1', '-o', 'json']);
    ok(r, 'watch');
    const ev = JSON.parse(r.stdout.trim().split('\n')[0]!);
    assert.equal(ev.event, 'put');
    assert.equal(ev.data.name, 'watched-1');
  }
});

/** Status of GET /watch from its headers alone (an event stream never ends). */
function watchStatus(): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = http.get({ host: '127.0.0.1', port: server.port, path: '/watch', headers: { 'Auth-Token': server.token } }, (res) => {
      resolve(res.statusCode ?? 0);
      res.destroy();
    });
    r.on('error', reject);
  });
}

test('`pithos serve` and server flags still start the server', async () => {
  const s = await PithosServer.start({ bare: true, args: ['serve', '--host', '127.0.0.1', '--port', '0'], env: { PITHOS_AUTH_TOKEN: 'serve-token' } });
  try {
    ok(await cli(['health', '--url', s.base, '--token', 'serve-token']), 'health of pithos serve');
  } finally {
    await s.close();
  }
});

test('lists: push (right, --left), pop (--right, --count, --pop-count, --to, --wait), ls lists', async () => {
  assert.equal((await cli(['push', 'q', '1', '"two"', 'three'])).stdout, 'length 3\n');
  assert.equal((await cli(['push', 'q', '0', '--left'])).stdout, 'length 4\n');
  assert.equal((await cli(['pop', 'q'])).stdout, '0\n');
  assert.equal((await cli(['pop', 'q', '--right', '--pop-count', '2', '--to', 'done'])).stdout, 'three\ntwo\n');
  assert.deepEqual((await server.req('GET', '/lists/done')).body.data, { items: ['two', 'three'], length: 2 });
  assert.deepEqual(json(await cli(['pop', 'q', '-o', 'json'])).data, { items: [1] });
  assert.equal((await cli(['pop', 'q', '--wait', '50'])).stdout, '(nothing to pop)\n');
  assert.match((await cli(['ls', 'lists'])).stdout, /^done\t2 items\nq\t0 items\n$/);
  exits(await cli(['pop', 'missing']), 1, 'pop of a missing list', /404 list 'missing' does not exist/);
  exits(await cli(['pop', 'q', '--pop-count', '0']), 2, 'bad count', /--pop-count must be an integer ≥ 1/);
  // --count is the one count of pop (and of patch --list --remove), beside the long names.
  assert.equal((await cli(['push', 'c', 'a', 'b', 'c', 'd'])).stdout, 'length 4\n');
  assert.equal((await cli(['pop', 'c', '--count', '2'])).stdout, 'a\nb\n');
  assert.equal((await cli(['pop', 'c', '--right', '--pop-count', '1'])).stdout, 'd\n');
  exits(await cli(['pop', 'c', '--count', '0']), 2, 'bad --count', /--count must be an integer ≥ 1/);
  exits(await cli(['pop', 'c', '--count', '1', '--pop-count', '1']), 2, 'both spellings', /--count and --pop-count are the same option/);
  assert.equal((await cli(['push', 'c', 'x', 'c', 'x'])).stdout, 'length 4\n');
  assert.equal((await cli(['patch', '--list', 'c', '--remove', 'x', '--count', '1'])).stdout, 'length 3\n');
  assert.equal((await cli(['patch', '--list', 'c', '--remove', 'x', '--remove-count', '1'])).stdout, 'length 2\n');
  assert.deepEqual((await server.req('GET', '/lists/c')).body.data.items, ['c', 'c']);
  // query's --count stays a switch.
  assert.match((await cli(['query', 'no-such-table', '{}', '--count'])).stderr, /table 'no-such-table' does not exist/);
  exits(await cli(['push', 'q']), 2, 'push without values', /missing argument/);
});

test('backup into a missing directory: exit 1 and one message, no stack trace', async () => {
  const missing = path.join(tmp, 'no-such-dir', 'x.backup');
  const r1 = await cli(['backup', '--out', missing]);
  exits(r1, 1, 'backup into a missing directory', /^pithos backup: cannot write .*no-such-dir.*does not exist\n$/);
});

test('backup onto a directory: refused before streaming anything, exit 1, nothing left; a file still works', async () => {
  const dir = path.join(tmp, 'backup-dir');
  mkdirSync(dir);
  const r2 = await cli(['backup', '--out', dir]);
  exits(r2, 1, 'backup onto a directory', /^pithos backup: cannot write .*backup-dir: it is a directory/);
  assert.equal(r2.stderr.trim().split('\n').length, 1, 'one line, no stack trace');
  assert.equal(existsSync(`${dir}.partial`), false, 'no temporary file left next to the directory');
  const file = path.join(tmp, 'ok.backup');
  ok(await cli(['backup', '--out', file]), 'backup to a file');
  assert.match(readFileSync(file, 'latin1'), /\ncrc32 [0-9a-f]{8}\n$/);
});

test('watch --kind list is accepted', async () => {
  ok(await cli(['push', 'watched-list', '1']), 'push');
  const lists = await cli(['watch', '--kind', 'list', '--prefix', 'watched-', '--since', '0', '--count-events', '1']);
  ok(lists, 'watch --kind list');
  assert.match(lists.stdout, /^\d+\tput\tlist watched-list\n$/);
});

test('watch: an expire line shows - for its id (it has none), not the id of the event before it', async () => {
  // Follows from the start of the log: the put is replayed or seen live, then the sweep expires it.
  const watching = cli(['watch', '--kind', 'variant', '--prefix', 'expiring-', '--since', '0', '--count-events', '2']);
  const watchingJson = cli(['watch', '--kind', 'variant', '--prefix', 'expiring-', '--since', '0', '--count-events', '2', '-o', 'json']);
  await new Promise((r) => setTimeout(r, 300));
  ok(await cli(['put', 'variant', 'expiring-1', '7', '--ttl', '1']), 'put with ttl');
  const [w, wj] = await Promise.all([watching, watchingJson]);
  ok(w, 'watch');
  assert.match(w.stdout, /^\d+\tput\tvariant expiring-1\n-\texpire\tvariant expiring-1\n$/);
  const events = wj.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id?: string; event: string });
  assert.deepEqual(
    events.map((e) => [e.event, e.id === undefined]),
    [
      ['put', false],
      ['expire', true],
    ],
  );
});

test('help ls names lists; help watch names list', async () => {
  const [ls, watch, overview] = await Promise.all([cli(['help', 'ls']), cli(['help', 'watch']), cli(['help'])]);
  assert.match(ls.stdout, /\blists\b/);
  assert.match(watch.stdout, /--kind [a-z|]*\blist\b/);
  assert.match(overview.stdout, /ls \[[a-z|]*\blists\b/);
});

test('lists: put list, get list (whole, a range, empty), del list; a missing list and another kind exit 1', async () => {
  assert.equal((await cli(['put', 'list', 'gl', '1', 'two', '"3"', '{"a":1}'])).stdout, 'created\n');
  assert.equal((await cli(['put', 'list', 'gl', '1', 'two', '"3"', '{"a":1}', '--ttl', '600'])).stdout, 'replaced\n');
  const [whole, range, past, j] = await Promise.all([
    cli(['get', 'list', 'gl']),
    cli(['get', 'list', 'gl', '--start', '-2', '--stop=-1']),
    cli(['get', 'list', 'gl', '--start', '9']),
    cli(['get', 'list', 'gl', '-o', 'json']),
  ]);
  assert.equal(whole.stdout, '1\ntwo\n3\n{"a":1}\n');
  assert.equal(range.stdout, '3\n{"a":1}\n');
  ok(past, 'a range past the end');
  assert.equal(past.stdout, '');
  assert.equal(past.stderr, '(no items)\n');
  assert.deepEqual(json(j).data, { items: [1, 'two', '3', { a: 1 }], length: 4 });
  assert.ok(Number.isInteger(json(j).version), j.stdout);
  exits(await cli(['put', 'list', 'gl', 'x', '--if-absent']), 1, 'put --if-absent on an existing list', /^pithos put: 412 /);
  // Each kind is its own namespace (docs/api.md): a set named gl is not the list gl.
  exits(await cli(['get', 'set', 'gl']), 1, 'a list read as a set', /^pithos get: 404 set 'gl' does not exist\n$/);
  ok(await cli(['del', 'list', 'gl']), 'del list');
  const missing = await cli(['get', 'list', 'gl', '-o', 'json']);
  exits(missing, 1, 'get missing list', /^pithos get: 404 list 'gl' does not exist\n$/);
  assert.deepEqual(json(missing), { status: 'error', message: "list 'gl' does not exist", http_status: 404 });
  exits(await cli(['get', 'list', 'gl', '--start', 'x']), 2, 'a start that is not an integer', /--start must be an integer/);
});

test('sets: put set, add, remove, get set (all, a page), get set --member, del set; missing exits 1', async () => {
  assert.equal((await cli(['put', 'set', 'tags', 'b', 'a'])).stdout, 'created\n');
  assert.equal((await cli(['add', 'set', 'tags', 'c', 'a'])).stdout, 'added 1, count 3\n');
  assert.equal((await cli(['remove', 'set', 'tags', 'b', 'zz'])).stdout, 'removed 1, count 2\n');
  assert.equal((await cli(['add', 'set', 'tags', 'd', 'e'])).stdout, 'added 2, count 4\n');
  const [all, page, member, j] = await Promise.all([
    cli(['get', 'set', 'tags']),
    cli(['get', 'set', 'tags', '--limit', '2']),
    cli(['get', 'set', 'tags', '--member', 'a', '--member', 'b']),
    cli(['get', 'set', 'tags', '--member', 'c', '-o', 'json']),
  ]);
  assert.equal(all.stdout, 'a\nc\nd\ne\n');
  assert.equal(page.stdout, 'a\nc\n');
  assert.equal(page.stderr, '(more: --after c)\n');
  assert.equal((await cli(['get', 'set', 'tags', '--limit', '2', '--after', 'c'])).stdout, 'd\ne\n');
  assert.equal(member.stdout, 'a\ttrue\nb\tfalse\n');
  assert.deepEqual(json(j).data, { contains: [true] });
  ok(await cli(['del', 'set', 'tags']), 'del set');
  const [g, rm, cont] = await Promise.all([cli(['get', 'set', 'tags']), cli(['remove', 'set', 'tags', 'a']), cli(['get', 'set', 'tags', '--member', 'a'])]);
  for (const [r, label] of [
    [g, 'get'],
    [rm, 'remove'],
    [cont, 'get'],
  ] as const) {
    exits(r, 1, `${label} of a missing set`, new RegExp(`^pithos ${label}: 404 set 'tags' does not exist\\n$`));
  }
  exits(await cli(['add', 'set', 'tags']), 2, 'add without members', /missing argument/);
  exits(await cli(['add', 'list', 'tags', 'a']), 2, 'add to a list', /must be set or zset, got 'list'/);
  exits(await cli(['add', 'set', 'tags', 'a', '--mode', 'nx']), 2, '--mode is for zsets', /add set does not take --mode/);
});

test('sorted sets: put zset, add (--mode), incr --zset, get zset by rank and by score, --member, remove, del', async () => {
  assert.equal((await cli(['put', 'zset', 'board', 'ann', '10', 'bob', '7.5', 'cy', '12'])).stdout, 'created\n');
  assert.equal((await cli(['add', 'zset', 'board', 'dee', '1', 'ann', '5', '--mode', 'gt'])).stdout, 'added 1, updated 0, count 4\n');
  assert.equal((await cli(['incr', '--zset', 'board', 'bob', '2.5'])).stdout, '10\n');
  assert.equal((await cli(['incr', '--zset', 'board', 'eve'])).stdout, '1\n');
  assert.equal((await cli(['remove', 'zset', 'board', 'eve'])).stdout, 'removed 1, count 4\n');
  const [all, top2, byScore, page, member, j] = await Promise.all([
    cli(['get', 'zset', 'board']),
    cli(['get', 'zset', 'board', '--rev', '--stop', '1']),
    cli(['get', 'zset', 'board', '--min', '(1', '--max', '+inf']),
    cli(['get', 'zset', 'board', '--offset', '1', '--limit', '2']),
    cli(['get', 'zset', 'board', '--member', 'bob']),
    cli(['get', 'zset', 'board', '--start', '0', '--stop', '0', '-o', 'json']),
  ]);
  assert.equal(all.stdout, 'dee\t1\nann\t10\nbob\t10\ncy\t12\n');
  assert.equal(top2.stdout, 'cy\t12\nbob\t10\n');
  assert.equal(byScore.stdout, 'ann\t10\nbob\t10\ncy\t12\n');
  assert.equal(page.stdout, 'ann\t10\nbob\t10\n');
  assert.equal(member.stdout, 'score 10\nrank 2\nrev_rank 1\n');
  assert.deepEqual(json(j).data, { items: [{ member: 'dee', score: 1 }], count: 4 });
  exits(await cli(['get', 'zset', 'board', '--member', 'zed']), 1, 'not a member', /^pithos get: 404 "zed" is not a member of zset 'board'\n$/);
  // A score that would no longer be finite is refused and nothing changes.
  ok(await cli(['incr', '--zset', 'board', 'big', '1e308']), 'a large score');
  exits(await cli(['incr', '--zset', 'board', 'big', '1e308']), 1, 'a non-finite score', /^pithos incr: 409 /);
  exits(await cli(['add', 'zset', 'board', 'ann']), 2, 'a member without a score', /give members and scores in pairs/);
  exits(await cli(['add', 'zset', 'board', 'ann', 'ten']), 2, 'a score that is not a number', /a score must be a number/);
  exits(await cli(['get', 'zset', 'board', '--start', '0', '--min', '1']), 2, 'rank and score ranges mixed', /not both/);
  ok(await cli(['del', 'zset', 'board']), 'del zset');
  for (const args of [
    ['get', 'zset', 'board'],
    ['get', 'zset', 'board', '--member', 'ann'],
    ['remove', 'zset', 'board', 'ann'],
  ]) {
    exits(await cli(args), 1, `${args.join(' ')} of a missing zset`, /: 404 zset 'board' does not exist\n$/);
  }
});

test('combine: union, inter, diff (a missing set is empty), --store; usage errors exit 2', async () => {
  ok(await cli(['put', 'set', 'ca', 'c', 'a', 'b']), 'put set ca');
  ok(await cli(['put', 'set', 'cb', 'b', 'd']), 'put set cb');
  const [union, inter, diff, none, j] = await Promise.all([
    cli(['combine', 'ca', 'union', 'cb']),
    cli(['combine', 'ca', 'inter', 'cb']),
    cli(['combine', 'ca', 'diff', 'cb', 'c-missing']),
    cli(['combine', 'ca', 'inter', 'c-missing']),
    cli(['combine', 'ca', 'union', 'cb', '-o', 'json']),
  ]);
  assert.equal(union.stdout, 'a\nb\nc\nd\n');
  assert.equal(inter.stdout, 'b\n');
  assert.equal(diff.stdout, 'a\nc\n');
  ok(none, 'an empty result');
  assert.deepEqual([none.stdout, none.stderr], ['', '(no members)\n']);
  assert.deepEqual(json(j).data, { members: ['a', 'b', 'c', 'd'], count: 4 });
  assert.equal((await cli(['combine', 'ca', 'diff', 'cb', '--store', 'cd'])).stdout, 'count 2\n');
  assert.equal((await cli(['get', 'set', 'cd'])).stdout, 'a\nc\n');
  assert.deepEqual(json(await cli(['combine', 'ca', 'inter', 'cb', '--store', 'cd', '-o', 'json'])).data, { count: 1 });
  assert.equal((await cli(['get', 'set', 'cd'])).stdout, 'b\n', 'the store replaced its target');
  exits(await cli(['combine', 'ca', 'xor', 'cb']), 2, 'an unknown op', /^pithos combine: the second argument must be union, inter or diff, got 'xor'/);
  exits(await cli(['combine', 'ca', 'union']), 2, 'no other set', /missing argument/);
  exits(await cli(['combine', 'ca', 'union', 'cb', '--ttl', '5']), 2, 'a flag combine does not take', /combine does not take --ttl/);
  const help = await cli(['help', 'combine']);
  ok(help, 'help combine');
  assert.match(help.stdout, /^usage: pithos combine <set> union\|inter\|diff/);
});

test('patch --list: set an item (--index), trim (--start/--stop), remove by value, --ttl; --if-version; usage errors', async () => {
  ok(await cli(['put', 'list', 'pl', 'a', 'b', 'c', 'd', 'e']), 'put list');
  assert.equal((await cli(['patch', '--list', 'pl', '--index', '1', 'B'])).stdout, 'length 5\n');
  assert.equal((await cli(['patch', '--list', 'pl', '--index', '-1', '{"x":1}'])).stdout, 'length 5\n');
  assert.deepEqual((await server.req('GET', '/lists/pl')).body.data, { items: ['a', 'B', 'c', 'd', { x: 1 }], length: 5 });
  assert.equal((await cli(['patch', '--list', 'pl', '--start', '1', '--stop', '-2'])).stdout, 'length 3\n');
  assert.deepEqual((await server.req('GET', '/lists/pl')).body.data.items, ['B', 'c', 'd']);
  ok(await cli(['push', 'pl', 'c', 'd', 'd']), 'push');
  assert.equal((await cli(['patch', '--list', 'pl', '--remove', 'c'])).stdout, 'length 4\n', 'every c (count 0 by default)');
  assert.equal((await cli(['patch', '--list', 'pl', '--remove', 'd', '--remove-count', '-1'])).stdout, 'length 3\n');
  assert.deepEqual((await server.req('GET', '/lists/pl')).body.data.items, ['B', 'd', 'd'], 'the last d went (negative: from the right)');
  assert.equal((await cli(['patch', '--list', 'pl', '--ttl', '600'])).stdout, 'length 3\n');
  const ttl = (await server.req('GET', '/lists?prefix=pl')).body.data.items[0].ttl_ms as number;
  assert.ok(ttl > 590_000 && ttl <= 600_000, `ttl_ms ${ttl}`);
  const v = json(await cli(['get', 'list', 'pl', '-o', 'json'])).version!;
  exits(
    await cli(['patch', '--list', 'pl', '--ttl', '0', '--if-version', String(v + 1)]),
    1,
    'a stale version',
    /^pithos patch: 412 list 'pl' changed \(version \d+\)\n$/,
  );
  assert.equal((await cli(['patch', '--list', 'pl', '--ttl', '0', '--if-version', String(v)])).stdout, 'length 3\n');
  assert.equal((await server.req('GET', '/lists?prefix=pl')).body.data.items[0].ttl_ms, null);
  exits(await cli(['patch', '--list', 'pl-missing', '--ttl', '5']), 1, 'a missing list', /^pithos patch: 404 list 'pl-missing' does not exist\n$/);
  for (const [args, re] of [
    [['patch', '--list', 'pl'], /give --index i <value>, --start\/--stop, --remove <value> or --ttl s/],
    [['patch', '--list', 'pl', '--index', '0'], /give the new value after the name/],
    [['patch', '--list', 'pl', 'x'], /unexpected argument 'x'/],
    [['patch', '--list', 'pl', '--index', '0', 'x', '--remove', 'y'], /give one of --index, --start\/--stop or --remove, not --index and --remove/],
    [['patch', '--list', 'pl', '--remove-count', '1'], /--remove-count goes with --remove/],
    [['patch', '--list', 'pl', '--index', 'one', 'x'], /--index must be an integer/],
  ] as const) {
    const r = await cli([...args]);
    exits(r, 2, args.join(' '), re);
    assert.equal(r.stdout, '', `${args.join(' ')}: stdout must stay empty`);
  }
  assert.match((await cli(['help', 'patch'])).stdout, /patch --list <list> --index i <value>/);
});

test('patch --set / --zset --ttl sets the lifetime (with --if-version); del list|set|zset --if-version', async () => {
  ok(await cli(['put', 'set', 'ps', 'a']), 'put set');
  ok(await cli(['put', 'zset', 'pz', 'a', '1']), 'put zset');
  assert.equal((await cli(['patch', '--set', 'ps', '--ttl', '600'])).stdout, 'set patched successfully\n');
  assert.equal((await cli(['patch', '--zset', 'pz', '--ttl', '600'])).stdout, 'zset patched successfully\n');
  for (const [kind, name] of [
    ['sets', 'ps'],
    ['zsets', 'pz'],
  ]) {
    const ttl = (await server.req('GET', `/${kind}?prefix=${name}`)).body.data.items[0].ttl_ms as number;
    assert.ok(ttl > 590_000 && ttl <= 600_000, `${kind}: ttl_ms ${ttl}`);
  }
  const vs = json(await cli(['get', 'set', 'ps', '-o', 'json'])).version!;
  const vz = json(await cli(['get', 'zset', 'pz', '-o', 'json'])).version!;
  exits(
    await cli(['patch', '--set', 'ps', '--ttl', '0', '--if-version', String(vs + 1)]),
    1,
    'stale set',
    /^pithos patch: 412 set 'ps' changed \(version \d+\)\n$/,
  );
  exits(
    await cli(['patch', '--zset', 'pz', '--ttl', '0', '--if-version', String(vz + 1)]),
    1,
    'stale zset',
    /^pithos patch: 412 zset 'pz' changed \(version \d+\)\n$/,
  );
  ok(await cli(['patch', '--set', 'ps', '--ttl', '0', '--if-version', String(vs)]), 'current set version');
  assert.equal((await server.req('GET', '/sets?prefix=ps')).body.data.items[0].ttl_ms, null);
  exits(await cli(['patch', '--set', 'ps']), 2, 'no --ttl', /patch --set: give --ttl <seconds>/);
  exits(await cli(['patch', '--zset', 'pz', '--index', '0']), 2, 'a list flag on a zset', /patch --zset does not take --index/);
  exits(await cli(['patch', '--set', 'ps-missing', '--ttl', '5']), 1, 'a missing set', /^pithos patch: 404 set 'ps-missing' does not exist\n$/);

  ok(await cli(['put', 'list', 'pdl', 'x']), 'put list');
  for (const [kind, name] of [
    ['set', 'ps'],
    ['zset', 'pz'],
    ['list', 'pdl'],
  ] as const) {
    const v = json(await cli(['get', kind, name, '-o', 'json'])).version!;
    exits(await cli(['del', kind, name, '--if-version', String(v + 1)]), 1, `del ${kind}: stale`, new RegExp(`^pithos del: 412 ${kind} '${name}' changed`));
    ok(await cli(['get', kind, name]), `the refused delete left the ${kind}`);
    ok(await cli(['del', kind, name, '--if-version', String(v)]), `del ${kind}: current version`);
    exits(await cli(['get', kind, name]), 1, `the ${kind} is gone`, /404/);
  }
  exits(await cli(['del', 'table', 'pt', '--if-version', '1']), 2, 'del table takes no condition', /del table does not take --if-version/);
});

test('--no-create: push, add and incr --zset refuse a missing object (exit 1, 404) and create nothing', async () => {
  for (const [args, kind, name] of [
    [['push', 'nc-list', 'x', '--no-create'], 'list', 'nc-list'],
    [['add', 'set', 'nc-set', 'a', '--no-create'], 'set', 'nc-set'],
    [['add', 'zset', 'nc-zset', 'a', '1', '--no-create'], 'zset', 'nc-zset'],
    [['incr', '--zset', 'nc-zset', 'a', '--no-create'], 'zset', 'nc-zset'],
  ] as const) {
    exits(await cli([...args]), 1, args.join(' '), new RegExp(`: 404 ${kind} '${name}' does not exist\n$`));
    exits(await cli(['get', kind, name]), 1, `${args.join(' ')} created nothing`, /404/);
  }
  // On an existing object it writes as without the flag.
  ok(await cli(['put', 'list', 'nc-list']), 'put list');
  ok(await cli(['put', 'zset', 'nc-zset']), 'put zset');
  ok(await cli(['put', 'set', 'nc-set']), 'put set');
  assert.equal((await cli(['push', 'nc-list', 'x', '--no-create'])).stdout, 'length 1\n');
  assert.equal((await cli(['add', 'set', 'nc-set', 'a', '--no-create'])).stdout, 'added 1, count 1\n');
  assert.equal((await cli(['add', 'zset', 'nc-zset', 'a', '1', '--no-create'])).stdout, 'added 1, updated 0, count 1\n');
  assert.equal((await cli(['incr', '--zset', 'nc-zset', 'a', '2', '--no-create'])).stdout, '3\n');
  exits(await cli(['pop', 'nc-list', '--no-create']), 2, 'pop never creates', /pop does not take --no-create/);
});
