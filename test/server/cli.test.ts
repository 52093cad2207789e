/** Black-box tests of the `pithos` command line: --help, bad flags, environment variables, signals, data-dir errors, repair, the lock. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fetchBackup } from '../helpers/backup.js';
import { PithosServer, expectError, expectSuccess, onlyLog, runCli } from '../helpers/server.js';

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-cli-'));
});
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

test('--help exits 0 and lists every flag', async () => {
  const r = await runCli(['--help']);
  assert.equal(r.timedOut, false, '--help did not exit');
  assert.equal(r.code, 0, `exit code ${r.code}; stderr: ${r.stderr}`);
  for (const flag of [
    '--host',
    '--port',
    '--data-dir',
    '--auth-token',
    '--fsync',
    '--max-body-bytes',
    '--store',
    '--pg-pool-size',
    '--pg-statement-timeout-ms',
    '--help',
  ]) {
    assert.ok(r.stdout.includes(flag), `--help output lacks ${flag}:\n${r.stdout}`);
  }
  for (const env of ['PITHOS_HOST', 'PITHOS_PORT', 'PITHOS_DATA_DIR', 'PITHOS_AUTH_TOKEN', 'PITHOS_FSYNC', 'PITHOS_MAX_BODY_BYTES']) {
    assert.ok(r.stdout.includes(env), `--help output lacks ${env}`);
  }
  assert.ok(!r.stdout.includes('listening on'), '--help must not start the server');
});

test('bad flag values exit non-zero with a one-line reason on stderr', async () => {
  const cases: string[][] = [
    ['--fsync', 'sometimes'],
    ['--port', '-1'],
    ['--port', '65536'],
    ['--port', 'abc'],
    ['--port', '1.5'],
    ['--port'],
    ['--max-body-bytes', '-5'],
    ['--max-body-bytes', 'lots'],
    ['--no-such-flag'],
  ];
  const results = await Promise.all(
    cases.map((args, i) => runCli(['--host', '127.0.0.1', '--data-dir', path.join(tmp, `bad${i}`), '--auth-token', 'x', ...args], {}, 8000)),
  );
  cases.forEach((args, i) => {
    const r = results[i]!;
    const label = args.join(' ');
    assert.equal(r.timedOut, false, `${label}: the server started instead of refusing (stdout: ${r.stdout.trim()})`);
    assert.notEqual(r.code, 0, `${label}: exit code 0`);
    assert.equal(r.signal, null, `${label}: died of signal ${r.signal}`);
    const err = r.stderr.trim();
    assert.ok(err.length > 0, `${label}: empty stderr`);
    assert.ok(!err.includes('\n'), `${label}: reason is not one line:\n${r.stderr}`);
    assert.ok(!/\bat .+:\d+:\d+\)?$/m.test(r.stderr), `${label}: stack trace on stderr:\n${r.stderr}`);
    assert.ok(!r.stdout.includes('listening on'), `${label}: started listening`);
  });
});

test('bad environment values exit non-zero with a one-line reason', async () => {
  const cases: Record<string, string>[] = [{ PITHOS_FSYNC: 'sometimes' }, { PITHOS_PORT: '-1' }, { PITHOS_PORT: 'http' }, { PITHOS_MAX_BODY_BYTES: 'x' }];
  const results = await Promise.all(
    cases.map((env, i) =>
      runCli([], { PITHOS_HOST: '127.0.0.1', PITHOS_PORT: '0', PITHOS_DATA_DIR: path.join(tmp, `badenv${i}`), PITHOS_AUTH_TOKEN: 'x', ...env }, 8000),
    ),
  );
  cases.forEach((env, i) => {
    const r = results[i]!;
    const label = JSON.stringify(env);
    assert.equal(r.timedOut, false, `${label}: the server started instead of refusing`);
    assert.notEqual(r.code, 0, `${label}: exit code 0`);
    const err = r.stderr.trim();
    assert.ok(err.length > 0 && !err.includes('\n'), `${label}: stderr must be one line:\n${r.stderr}`);
  });
});

test('bad --store and --pg-* values (flags and environment) exit 2 with a one-line reason, password hidden', async () => {
  const cases: [string[], Record<string, string>][] = [
    [['--store', 'mysql://u:hunter2@h/db'], {}],
    [['--store', ''], {}],
    [['--pg-pool-size', '0'], {}],
    [['--pg-statement-timeout-ms', 'soon'], {}],
    [[], { PITHOS_STORE: 'postgres:' }],
    [[], { PITHOS_PG_POOL_SIZE: '-3' }],
  ];
  const results = await Promise.all(
    cases.map(([args, env], i) => runCli(['--host', '127.0.0.1', '--data-dir', path.join(tmp, `badstore${i}`), '--auth-token', 'x', ...args], env, 15000)),
  );
  cases.forEach(([args, env], i) => {
    const r = results[i]!;
    const label = JSON.stringify([args, env]);
    assert.equal(r.timedOut, false, `${label}: the server started instead of refusing`);
    assert.equal(r.code, 2, `${label}: exit code ${r.code}`);
    const err = r.stderr.trim();
    assert.ok(err.length > 0 && !err.includes('\n'), `${label}: stderr must be one line:\n${r.stderr}`);
    assert.ok(!err.includes('hunter2'), `${label}: the password is printed: ${err}`);
  });
});

test('configuration by environment variables alone (PITHOS_PORT=0, PITHOS_AUTH_TOKEN=x, ...)', async () => {
  const s = await PithosServer.start({
    bare: true,
    testClock: false,
    env: { PITHOS_HOST: '127.0.0.1', PITHOS_PORT: '0', PITHOS_AUTH_TOKEN: 'x', PITHOS_FSYNC: 'everysec', PITHOS_MAX_BODY_BYTES: '200' },
  });
  try {
    assert.ok(s.port > 0);
    assert.ok(!s.stdout.includes('default password'), 'a configured env token must not trigger a generated one');
    assert.equal((await s.req('GET', '/health')).status, 200);
    assert.equal((await s.req('GET', '/health', undefined, { 'Auth-Token': 'y' })).status, 401);
    expectSuccess(await s.req('PUT', '/records/e', { record: { a: 1 } }), 201, 'record created successfully');
    // PITHOS_MAX_BODY_BYTES took effect
    expectError(await s.req('PUT', '/records/big', { record: { s: 'x'.repeat(300) } }, { Connection: 'close' }), 413);
    // PITHOS_DATA_DIR took effect: data survives a restart on the same directory
    await s.restart('SIGTERM');
    expectSuccess(await s.req('GET', '/records/e'), 200, 'record queried successfully', { a: 1 });
  } finally {
    await s.close();
  }
});

test('flags win over environment variables', async () => {
  const s = await PithosServer.start({
    testClock: false,
    args: ['--max-body-bytes', '100000'],
    env: { PITHOS_MAX_BODY_BYTES: '50', PITHOS_AUTH_TOKEN: 'env-token' },
  });
  try {
    expectSuccess(await s.req('PUT', '/records/f', { record: { s: 'x'.repeat(500) } }), 201, 'record created successfully');
    assert.equal((await s.req('GET', '/health', undefined, { 'Auth-Token': 'env-token' })).status, 401);
  } finally {
    await s.close();
  }
});

test("connection options before a client command run the client; any other flag first is the server's", async () => {
  const s = await PithosServer.start();
  try {
    // Generous bounds: one client process took 3 s on the loaded test machine. The last line
    // must be refused by the server; one that starts serving instead is caught by its bound.
    const [client, clientEq, server] = await Promise.all([
      runCli(['--url', s.base, '--token', s.token, 'health'], {}, 30_000),
      runCli([`--url=${s.base}`, '-o', 'json', `--token=${s.token}`, 'put', 'variant', 'lead', '7'], {}, 30_000),
      runCli(['--token', 'x', '--host', '127.0.0.1', '--port', '0', '--data-dir', path.join(tmp, 'lead-server')], {}, 20_000),
    ]);
    assert.equal(client.timedOut, false, 'the client did not finish');
    assert.equal(client.code, 0, `exit ${client.code}\nstdout: ${client.stdout}\nstderr: ${client.stderr}`);
    assert.match(client.stdout, /^key_count\s+\d+$/m);
    assert.equal(clientEq.code, 0, `exit ${clientEq.code}\nstderr: ${clientEq.stderr}`);
    assert.deepEqual(JSON.parse(clientEq.stdout).data, { variant: 7 });
    expectSuccess(await s.req('GET', '/variants/lead'), 200, 'variant queried successfully', { variant: 7 });
    // A server flag after a connection option: still the server, which refuses the client's option.
    assert.equal(server.timedOut, false, `the server started: ${server.stdout}`);
    assert.notEqual(server.code, 0);
    assert.match(server.stderr, /unknown option '--token'/);
  } finally {
    await s.close();
  }
});

test('--fsync everysec and never are accepted; SIGINT exits 0', async () => {
  for (const mode of ['everysec', 'never']) {
    const s = await PithosServer.start({ testClock: false, fsync: mode });
    try {
      expectSuccess(await s.req('PUT', '/variants/v', { variant: 1 }), 201, 'variant created successfully', { variant: 1 });
      const info = await s.kill(mode === 'never' ? 'SIGINT' : 'SIGTERM');
      assert.deepEqual(info, { code: 0, signal: null }, `${mode}: exit ${JSON.stringify(info)}`);
      // a graceful stop flushes, whatever the fsync mode
      await s.spawn();
      expectSuccess(await s.req('GET', '/variants/v'), 200, 'variant queried successfully', { variant: 1 });
    } finally {
      await s.close();
    }
  }
});

test('--allow-from: other client addresses get 403 before auth, listed ones are served', async () => {
  const denied = await PithosServer.start({ args: ['--allow-from', '10.0.0.0/8'] });
  try {
    expectError(await denied.req('GET', '/health'), 403, 'client address not allowed');
    expectError(await denied.req('PUT', '/records/r', { record: { a: 1 } }), 403);
  } finally {
    await denied.close();
  }
  const ok = await PithosServer.start({ env: { PITHOS_ALLOW_FROM: '127.0.0.0/8,::1' } });
  try {
    assert.equal((await ok.req('GET', '/health')).status, 200);
  } finally {
    await ok.close();
  }
});

test(
  'a port already in use: exit 1 with a hint naming --port, data directory left unlocked',
  { skip: onlyLog('inspects the log data directory LOCK file') },
  async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    const dir = path.join(tmp, 'busy-port');
    try {
      const r = await runCli(['--port', String(port), '--data-dir', dir, '--auth-token', 'x']);
      assert.equal(r.timedOut, false);
      assert.equal(r.code, 1, `exit code ${r.code}`);
      assert.match(r.stdout + r.stderr, new RegExp(`127\\.0\\.0\\.1:${port} is already in use; pick another port with --port \\(or PITHOS_PORT\\)`));
      assert.equal(existsSync(path.join(dir, 'LOCK')), false, 'the data directory was closed');
    } finally {
      blocker.close();
    }
  },
);

test('--data-dir that cannot be created (/proc/nope): exit 1 at once with a message naming the path', { skip: !existsSync('/proc/self') }, async () => {
  // Node's recursive mkdir loops forever here; the bounded timeout catches that.
  const r = await runCli(['--data-dir', '/proc/nope/data', '--auth-token', 'x', '--port', '0'], {}, 8000);
  assert.equal(r.timedOut, false, 'spun instead of failing');
  assert.equal(r.code, 1, `exit code ${r.code}; stderr: ${r.stderr}`);
  assert.match(r.stderr, /cannot create data directory \/proc\/nope\/data: \w+ on mkdir \/proc\/nope\b/);
  assert.ok(!r.stdout.includes('listening on'));
});

test('--data-dir that is a regular file: exit 1 saying so', async () => {
  const file = path.join(tmp, 'a-file');
  writeFileSync(file, 'not a directory\n');
  const r = await runCli(['--data-dir', file, '--auth-token', 'x', '--port', '0'], {}, 8000);
  assert.equal(r.timedOut, false);
  assert.equal(r.code, 1, `exit code ${r.code}; stderr: ${r.stderr}`);
  assert.ok(r.stderr.includes(`data directory ${file} exists but is not a directory (it is a regular file)`), r.stderr);
  const under = await runCli(['--data-dir', path.join(file, 'sub'), '--auth-token', 'x', '--port', '0'], {}, 8000);
  assert.equal(under.code, 1, `exit code ${under.code}; stderr: ${under.stderr}`);
  assert.ok(under.stderr.includes(`${file} is a regular file, not a directory`), under.stderr);
});

test('pithos repair on a directory without Pithos data: exit 1, nothing created', async () => {
  const typo = path.join(tmp, 'no-such-dir');
  const r = await runCli(['repair', '--data-dir', typo], {}, 8000);
  assert.equal(r.timedOut, false);
  assert.equal(r.code, 1, `exit code ${r.code}; stdout: ${r.stdout}; stderr: ${r.stderr}`);
  assert.match(r.stderr, /does not exist; nothing to repair/);
  assert.ok(!r.stdout.includes('repair of'), 'reported a repair');
  assert.equal(existsSync(typo), false, 'repair created the directory');
  const empty = path.join(tmp, 'empty-dir');
  mkdirSync(empty);
  writeFileSync(path.join(empty, 'notes.txt'), 'x');
  const r2 = await runCli(['repair', '--data-dir', empty], {}, 8000);
  assert.equal(r2.code, 1, `exit code ${r2.code}; stderr: ${r2.stderr}`);
  assert.match(r2.stderr, /holds no Pithos data/);
  assert.deepEqual(readdirSync(empty), ['notes.txt'], 'repair wrote into a directory that is not ours');
});

test('pithos repair on a real data directory still succeeds', { skip: onlyLog("repair works on the log's data directory") }, async () => {
  const s = await PithosServer.start({ testClock: false });
  try {
    expectSuccess(await s.req('PUT', '/records/kept', { record: { a: 1 } }), 201, 'record created successfully');
    await s.kill('SIGTERM');
    const r = await runCli(['repair', '--data-dir', s.dataDir], {}, 15000);
    assert.equal(r.code, 0, `exit code ${r.code}; stderr: ${r.stderr}`);
    assert.match(r.stdout, /repair of .* finished/);
    await s.spawn();
    expectSuccess(await s.req('GET', '/records/kept'), 200, 'record queried successfully', { a: 1 });
  } finally {
    await s.close();
  }
});

test('a data directory held by a live process: exit 1, the message says the lock may be stale and how to check', async () => {
  const dir = path.join(tmp, 'held');
  mkdirSync(dir);
  const owner = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    writeFileSync(path.join(dir, 'LOCK'), `${owner.pid}\n`);
    const r = await runCli(['--data-dir', dir, '--auth-token', 'x', '--port', '0'], {}, 8000);
    assert.equal(r.code, 1, `exit code ${r.code}; stderr: ${r.stderr}`);
    assert.ok(r.stderr.includes(`in use by process ${owner.pid}`), r.stderr);
    assert.match(r.stderr, /may be stale/);
    assert.ok(r.stderr.includes(`ps -p ${owner.pid}`) && r.stderr.includes(`remove ${dir}/LOCK`), r.stderr);
    assert.equal(readFileSync(path.join(dir, 'LOCK'), 'utf8'), `${owner.pid}\n`, "the owner's LOCK was touched");
  } finally {
    owner.kill('SIGKILL');
  }
});

test(
  'two servers started at the same instant on one data directory: exactly one serves',
  { skip: onlyLog('the data-directory lock belongs to the log store; many nodes share one database by design') },
  async () => {
    const dir = path.join(tmp, 'twins');
    const runs = Array.from({ length: 4 }, () => new PithosServer({ dataDir: dir, testClock: false }));
    const started = await Promise.allSettled(runs.map((s) => s.spawn()));
    try {
      const ok = started.filter((x) => x.status === 'fulfilled').length;
      assert.equal(ok, 1, `${ok} servers started: ${started.map((x) => x.status).join(', ')}`);
      for (let i = 0; i < runs.length; i++) {
        if (started[i].status === 'rejected') assert.match(runs[i].stderr, /is in use by process \d+/);
      }
    } finally {
      for (const s of runs) await s.close();
    }
  },
);

test(
  'a start that loses the lock on a data directory another server created meanwhile removes none of it',
  { skip: onlyLog('the data-directory lock belongs to the log store') },
  async () => {
    // The interleaving of two servers started together, made certain: the late one
    // finds the directory missing, the other creates it and takes its lock, then
    // the late one's mkdir finds it there and its lock is refused. Its failed
    // start must not remove the directory as its own, under the server using it.
    const dir = path.join(tmp, 'created-meanwhile');
    const hold = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'hold-mkdir.js');
    const late = new PithosServer({
      dataDir: dir,
      testClock: false,
      env: { NODE_OPTIONS: `--import=${hold}`, HOLD_MKDIR_UNTIL: path.join(dir, 'LOCK') },
    });
    const lateStart = late.spawn().then(
      () => 'started',
      (err: Error) => err.message,
    );
    let first: PithosServer | undefined;
    try {
      for (let i = 0; i < 400 && !late.stderr.includes('mkdir held'); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(late.stderr.includes('mkdir held'), `the late start never reached its mkdir: ${late.stderr}`);
      assert.equal(existsSync(dir), false, 'the directory existed before the late start looked');
      first = await PithosServer.start({ dataDir: dir, testClock: false });
      expectSuccess(await first.req('PUT', '/records/kept', { record: { v: 1 } }), 201, 'record created successfully');
      assert.match(await lateStart, /exited before listening \(code 1/);
      assert.match(late.stderr, new RegExp(`is in use by process ${first.child?.pid}\\b`));
      assert.equal(readFileSync(path.join(dir, 'LOCK'), 'utf8'), `${first.child?.pid}\n`, "the serving server's LOCK was removed");
      // Its log is still where it writes: the record comes back after a restart.
      await first.restart('SIGTERM');
      expectSuccess(await first.req('GET', '/records/kept'), 200, 'record queried successfully', { v: 1 });
    } finally {
      await late.close();
      await first?.close();
    }
  },
);

test(
  'the recovery log line counts keys with correct plurals, names the /health key_count among them and what the others are',
  { skip: onlyLog("the recovery line is the log's") },
  async () => {
    const s = await PithosServer.start({ testClock: false });
    try {
      expectSuccess(await s.req('PUT', '/records/only', { record: { a: 1 } }), 201, 'record created successfully');
      await s.restart('SIGTERM');
      assert.match(
        s.stdout,
        /recovered 1 segment in \d+ ms, holding 1 key: 1 top-level key, one per object \(what \/health reports as key_count\), and 0 inside groups\n/,
      );
      assert.equal((await s.req('GET', '/health')).body.data.key_count, 1);
      expectSuccess(await s.req('PUT', '/tables/people'), 201, 'table created successfully');
      for (const [i, name] of ['ann', 'bob'].entries()) {
        expectSuccess(await s.req('POST', '/tables/people/rows', { rows: { name } }), 201, 'table rows insert successfully', { t_id: i + 1 });
      }
      await s.restart('SIGTERM');
      const m =
        /recovered \d+ segments? in \d+ ms, holding (\d+) keys: (\d+) top-level keys, one per object \(what \/health reports as key_count\), and 2 inside groups \(2 table rows\)\n/.exec(
          s.stdout,
        );
      assert.ok(m, `no recovery line in:\n${s.stdout}`);
      const keyCount = (await s.req('GET', '/health')).body.data.key_count as number;
      assert.equal(Number(m[2]), keyCount, 'top-level count differs from /health key_count');
      assert.equal(Number(m[1]), keyCount + 2);
      // Lists and sets: their elements are named, most first; a restore of a backup says the same.
      expectSuccess(await s.req('PUT', '/lists/q', { list: [1, 2, 3] }), 201, 'list created successfully');
      expectSuccess(await s.req('PUT', '/sets/s', { set: ['a', 'b'] }), 201, 'set created successfully');
      await s.restart('SIGTERM');
      const held = `holding ${keyCount + 2 + 7} keys: ${keyCount + 2} top-level keys, one per object (what /health reports as key_count), and 7 inside groups (3 list items, 2 set members, 2 table rows)`;
      assert.ok(s.stdout.includes(`ms, ${held}\n`), `no recovery line with "${held}" in:\n${s.stdout}`);
      assert.equal((await s.req('GET', '/health')).body.data.key_count, keyCount + 2);
      const b = await fetchBackup(s);
      assert.equal(b.status, 200);
      const tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-restore-count-'));
      try {
        writeFileSync(path.join(tmp, 'b'), b.body);
        const r = await runCli(['restore', '--from', path.join(tmp, 'b'), '--data-dir', path.join(tmp, 'd')]);
        assert.equal(r.code, 0, r.stderr);
        assert.ok(r.stdout.endsWith(`: ${held.slice('holding '.length)}\n`), r.stdout);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    } finally {
      await s.close();
    }
  },
);
