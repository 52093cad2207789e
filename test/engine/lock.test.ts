/**
 * The data-directory lock (src/engine/lockfile.ts): of many processes
 * opening one directory at the same instant exactly one wins, with or without
 * a stale LOCK to take over; a zombie's LOCK is stale; a live owner's LOCK is
 * refused with a message that says how to tell whether it is stale.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DirectoryLockedError } from '../../src/engine/index.js';
import { open, rmDir, tmpDir } from './helpers.js';

const RACER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lock-racer.js');
const RACERS = 8;
const ROUNDS = 24;

class Racer {
  private lines: string[] = [];
  private waiting: Array<(l: string) => void> = [];
  constructor(readonly child: ChildProcessWithoutNullStreams) {
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      const parts = (partial + d).split('\n');
      partial = parts.pop() as string;
      for (const l of parts) {
        const w = this.waiting.shift();
        if (w !== undefined) w(l);
        else this.lines.push(l);
      }
    });
  }
  next(): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('racer did not answer')), 20_000);
      this.waiting.push((line) => {
        clearTimeout(t);
        resolve(line);
      });
    });
  }
  send(cmd: string): void {
    this.child.stdin.write(`${cmd}\n`);
  }
}

/** A pid that is certainly not running: a child that has exited and been reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test(`${RACERS} processes opening one directory at once: exactly one wins, every round`, async () => {
  const racers = Array.from({ length: RACERS }, () => new Racer(spawn(process.execPath, [RACER, 'child'], { stdio: ['pipe', 'pipe', 'pipe'] })));
  const base = tmpDir('lockrace');
  try {
    for (const r of racers) assert.equal(await r.next(), 'ready');
    for (let round = 0; round < ROUNDS; round++) {
      const dir = path.join(base, `r${round}`);
      fs.mkdirSync(dir);
      // Every other round starts from a stale LOCK, so the takeover path races too,
      // and some of those also from a guard left by a process that died holding
      // it (with its pid, or empty and old), so its removal races as well.
      const stale = round % 2 === 1;
      if (stale) fs.writeFileSync(path.join(dir, 'LOCK'), `${deadPid()}\n`);
      const guard = path.join(dir, 'LOCK.takeover');
      if (round % 6 === 3) fs.writeFileSync(guard, `${deadPid()}\n`);
      if (round % 6 === 5) {
        fs.writeFileSync(guard, '');
        fs.utimesSync(guard, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
      }
      for (const r of racers) r.send(`open ${dir}`);
      const results = await Promise.all(racers.map((r) => r.next()));
      const winners = results.filter((x) => x === 'won').length;
      assert.equal(winners, 1, `round ${round} (${stale ? 'stale LOCK' : 'no LOCK'}): ${winners} winners: ${results.join(', ')}`);
      for (const x of results) if (x !== 'won') assert.equal(x, 'lost DIR_LOCKED', `round ${round}`);
      const winner = racers[results.indexOf('won')];
      assert.equal(fs.readFileSync(path.join(dir, 'LOCK'), 'utf8'), `${winner.child.pid}\n`, 'LOCK names the winner');
      assert.deepEqual(
        fs.readdirSync(dir).filter((n) => n.startsWith('LOCK.')),
        [],
        'the takeover guard (or a file set aside) was left behind',
      );
      for (const r of racers) r.send('close');
      for (const r of racers) assert.equal(await r.next(), 'closed');
      assert.equal(fs.existsSync(path.join(dir, 'LOCK')), false, 'the winner released the lock');
    }
  } finally {
    for (const r of racers) r.child.stdin.end();
    await Promise.all(racers.map((r) => new Promise((res) => (r.child.exitCode !== null ? res(null) : r.child.on('exit', res)))));
    rmDir(base);
  }
});

test('a live owner is refused with a message that says the lock may be stale and how to check', async () => {
  const d = tmpDir('lock-live');
  const owner = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    fs.writeFileSync(path.join(d, 'LOCK'), `${owner.pid}\n`);
    await assert.rejects(open(d), (err: unknown) => {
      assert.ok(err instanceof DirectoryLockedError);
      assert.equal(err.pid, owner.pid);
      assert.match(err.message, new RegExp(`in use by process ${owner.pid}\\b`));
      assert.match(err.message, /may be stale/);
      assert.match(err.message, new RegExp(`ps -p ${owner.pid}\\b`));
      assert.ok(err.message.includes(path.join(d, 'LOCK')), err.message);
      return true;
    });
    assert.equal(fs.readFileSync(path.join(d, 'LOCK'), 'utf8'), `${owner.pid}\n`, "a live owner's LOCK is left alone");
  } finally {
    owner.kill('SIGKILL');
    rmDir(d);
  }
});

test('the LOCK of a zombie (killed, never reaped) is taken over', { skip: !fs.existsSync('/proc/self/stat') }, async () => {
  const d = tmpDir('lock-zombie');
  // The shell execs `sleep 30`, which never reaps its child `sleep 1` once that exits. The child
  // must outlive the exec: one that exited before it (`sleep 0` on an idle machine) could be
  // reaped by the shell itself, and there would be no zombie.
  const parent = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const zombie = Number(await new Promise<string>((resolve) => parent.stdout.setEncoding('utf8').once('data', resolve)));
    const state = (): string => {
      const s = fs.readFileSync(`/proc/${zombie}/stat`, 'utf8');
      return s.slice(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3);
    };
    for (let i = 0; i < 1000 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(state(), 'Z', 'no zombie to test with');
    fs.writeFileSync(path.join(d, 'LOCK'), `${zombie}\n`);
    const e = await open(d);
    assert.equal(fs.readFileSync(path.join(d, 'LOCK'), 'utf8'), `${process.pid}\n`);
    await e.close();
  } finally {
    parent.kill('SIGKILL');
    rmDir(d);
  }
});

test('a LOCK with no pid is waited for briefly, then taken over once old', async () => {
  const d = tmpDir('lock-empty');
  try {
    const file = path.join(d, 'LOCK');
    fs.writeFileSync(file, '');
    // Fresh: another starter may be between its create and its write.
    const started = Date.now();
    const old = new Date(Date.now() - 60_000);
    setTimeout(() => fs.utimesSync(file, old, old), 300);
    const e = await open(d);
    assert.ok(Date.now() - started >= 250, 'a fresh empty LOCK was taken over at once');
    assert.equal(fs.readFileSync(file, 'utf8'), `${process.pid}\n`);
    await e.close();
  } finally {
    rmDir(d);
  }
});
