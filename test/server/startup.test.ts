/**
 * Black-box start-up: a takeover guard (`LOCK.takeover`) that no live process
 * holds does not block later starts; a full disk at start-up stops with a
 * message naming what to free and leaves nothing behind, and the server
 * starts once there is room; a start that fails leaves no new directory or
 * file behind.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { PG_URL, PithosServer, STORE, onlyLog, runCli } from '../helpers/server.js';

let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pithos-startup-'));
});
after(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A pid that is certainly not running: a child that has exited and been reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

/** A data directory with data, left as a SIGKILLed server leaves it (a stale LOCK). */
async function killedDir(dir: string): Promise<void> {
  const s = await PithosServer.start({ dataDir: dir });
  try {
    assert.equal((await s.req('PUT', '/records/kept', { record: { v: 1 } })).status, 201);
    await s.kill('SIGKILL');
  } finally {
    await s.close();
  }
  assert.ok(fs.existsSync(path.join(dir, 'LOCK')), 'a SIGKILLed server leaves its LOCK');
}

/** Starts a server on `dir`, checks it serves what was written, and stops it. */
async function startsAndServes(dir: string): Promise<PithosServer> {
  const s = await PithosServer.start({ dataDir: dir });
  const r = await s.req('GET', '/records/kept');
  assert.equal(r.status, 200, r.raw);
  assert.equal(fs.readFileSync(path.join(dir, 'LOCK'), 'utf8'), `${s.child?.pid}\n`, 'LOCK names the new server');
  return s;
}

function leftovers(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.startsWith('LOCK.'));
}

for (const [what, content, ageMs] of [
  ['empty, just written (what a full disk left)', '', 0],
  ['empty and old', '', 60_000],
  ['garbage', 'x\u0000\u0000 no pid', 60_000],
  ['naming a process that is gone', 'DEAD', 0],
] as const) {
  test(`a LOCK.takeover ${what}, over a stale LOCK: the server starts`, { skip: onlyLog('the data-directory lock belongs to the log store') }, async () => {
    const dir = path.join(tmp, `guard-${what.replace(/\W+/g, '-')}`);
    await killedDir(dir);
    const guard = path.join(dir, 'LOCK.takeover');
    fs.writeFileSync(guard, content === 'DEAD' ? `${deadPid()}\n` : content);
    if (ageMs > 0) {
      const old = new Date(Date.now() - ageMs);
      fs.utimesSync(guard, old, old);
    }
    const s = await startsAndServes(dir);
    try {
      assert.deepEqual(leftovers(dir), [], 'the stale guard (or a file set aside while removing it) was left');
    } finally {
      await s.close();
    }
  });
}

test(
  "files set aside by a remover that died are removed by the next server to take the lock; a live remover's stay",
  { skip: onlyLog('the data-directory lock belongs to the log store') },
  async () => {
    const dir = path.join(tmp, 'aside');
    await killedDir(dir);
    const dead = deadPid();
    for (const n of [`LOCK.stale-${dead}`, `LOCK.takeover.stale-${dead}`, `LOCK.stale-${process.pid}`]) fs.writeFileSync(path.join(dir, n), `${dead}\n`);
    const s = await startsAndServes(dir);
    try {
      assert.deepEqual(leftovers(dir), [`LOCK.stale-${process.pid}`]);
    } finally {
      await s.close();
    }
  },
);

/** Mounts a tmpfs of `bytes` at a new directory, or says why it cannot. */
function smallFs(bytes: number): string | { skip: string } {
  const at = fs.mkdtempSync(path.join(os.tmpdir(), 'pithos-tmpfs-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', at], { encoding: 'utf8' });
  if (r.status !== 0) {
    fs.rmdirSync(at);
    return { skip: `cannot mount a tmpfs here (${(r.stderr || r.error?.message || '').trim()}); needs root` };
  }
  return at;
}

/** Writes into `file` until the file system is full. */
function fill(file: string): void {
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) {
      try {
        fs.writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw err;
      }
    }
    // Partial pages: fill byte by byte in larger steps down to nothing.
    for (let n = 4096; n >= 1; n >>= 1) {
      for (;;) {
        try {
          if (fs.writeSync(fd, chunk, 0, n) < n) break;
        } catch {
          break;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

test(
  'killed, then started on a full disk: stops naming what to free, leaves no guard, and starts once there is room',
  { skip: onlyLog('the data-directory lock belongs to the log store') },
  async (t) => {
    const mounted = smallFs(8 * 1024 * 1024);
    if (typeof mounted !== 'string') {
      t.skip(mounted.skip);
      return;
    }
    try {
      const dir = path.join(mounted, 'data');
      await killedDir(dir);
      const filler = path.join(mounted, 'filler');
      fill(filler);
      const full = new PithosServer({ dataDir: dir });
      try {
        await assert.rejects(full.spawn(), /exited before listening \(code 1/);
        assert.ok(full.stderr.includes(`the file system holding ${dir} is full`), full.stderr);
        assert.ok(full.stderr.includes(`Free space on that file system, outside ${dir}`), full.stderr);
      } finally {
        await full.close();
      }
      assert.deepEqual(leftovers(dir), [], 'a file of the failed takeover was left behind');
      fs.unlinkSync(filler);
      const s = await startsAndServes(dir);
      await s.close();
    } finally {
      spawnSync('umount', [mounted]);
      fs.rmdirSync(mounted);
    }
  },
);

test(
  'a new data directory on a disk with room for the lock only: stops naming what to free, and leaves nothing',
  { skip: onlyLog('the log store writes its segments there') },
  async (t) => {
    const mounted = smallFs(4 * 1024 * 1024);
    if (typeof mounted !== 'string') {
      t.skip(mounted.skip);
      return;
    }
    try {
      const filler = path.join(mounted, 'filler');
      fill(filler);
      // One page free: LOCK fits, the first log segment does not.
      fs.truncateSync(filler, fs.statSync(filler).size - 4096);
      const dir = path.join(mounted, 'data');
      const out = await failedStart(['--port', '0', '--data-dir', dir, '--auth-token', 'x'], 1);
      assert.ok(out.includes(`cannot start: the file system holding ${dir} is full`), out);
      assert.ok(out.includes(`Free space on that file system, outside ${dir}`), out);
      assert.deepEqual(fs.readdirSync(mounted), ['filler'], 'the failed start left files behind');
    } finally {
      spawnSync('umount', [mounted]);
      fs.rmdirSync(mounted);
    }
  },
);

/** The store arguments of this pass: on PostgreSQL a schema of its own, so a start that opens the store touches nothing shared. */
async function storeArgs(): Promise<string[]> {
  if (STORE === 'log') return [];
  const { freshSchema } = await import('../helpers/postgres.js');
  return ['--store', await freshSchema(PG_URL as string, `startup${process.pid}_${Math.floor(Math.random() * 1e9)}`)];
}

/** Runs a start expected to fail; returns its output after checking the exit code. */
async function failedStart(args: string[], code: number): Promise<string> {
  const r = await runCli(['--host', '127.0.0.1', ...args], {}, 20_000);
  assert.equal(r.timedOut, false, 'the start hung instead of failing');
  assert.equal(r.code, code, `exit code ${r.code}; stdout: ${r.stdout}; stderr: ${r.stderr}`);
  assert.ok(!r.stdout.includes('listening on'), r.stdout);
  return r.stdout + r.stderr;
}

test('a port already in use: exit 1, and neither a new data directory nor a generated auth-token is left', async () => {
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as net.AddressInfo).port;
  try {
    const fresh = path.join(tmp, 'port-new');
    const out = await failedStart(['--port', String(port), '--data-dir', fresh, ...(await storeArgs())], 1);
    assert.match(out, new RegExp(`127\\.0\\.0\\.1:${port} is already in use; pick another port with --port`));
    assert.equal(fs.existsSync(fresh), false, 'the failed start created the data directory');
    // An existing, empty directory: no token was printed, so none may be kept.
    const empty = path.join(tmp, 'port-empty');
    fs.mkdirSync(empty);
    await failedStart(['--port', String(port), '--data-dir', empty, ...(await storeArgs())], 1);
    assert.deepEqual(fs.readdirSync(empty), [], 'the failed start left files in the directory');
  } finally {
    blocker.close();
  }
});

test('a tokens file or TLS file that cannot be read: exit 2, no data directory created', async () => {
  const fresh = path.join(tmp, 'files-new');
  const missing = path.join(tmp, 'no-such-file');
  let out = await failedStart(['--port', '0', '--data-dir', fresh, '--tokens-file', missing, ...(await storeArgs())], 2);
  assert.ok(out.includes(missing), out);
  assert.equal(fs.existsSync(fresh), false, 'a bad tokens file still created the data directory');
  out = await failedStart(['--port', '0', '--data-dir', fresh, '--tls-cert', missing, '--tls-key', missing, ...(await storeArgs())], 2);
  assert.ok(out.includes(missing), out);
  assert.equal(fs.existsSync(fresh), false, 'a bad TLS file still created the data directory');
});

test(
  'a shared store that refuses the connection for good: exit 1, no data directory created',
  { skip: STORE === 'log' ? 'needs the PostgreSQL pass' : false },
  async () => {
    const url = new URL(PG_URL as string);
    url.pathname = '/pithos_no_such_database';
    const fresh = path.join(tmp, 'store-new');
    await failedStart(['--port', '0', '--data-dir', fresh, '--store', url.toString()], 1);
    assert.equal(fs.existsSync(fresh), false, 'a failed store still created the data directory');
  },
);
