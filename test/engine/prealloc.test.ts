/**
 * Zeros written ahead of the active segment's end (prealloc.ts): the live
 * file carries them, a clean close and a rotation cut them off, a crash
 * leaves them and the next open drops them, and neither a failed zeroing nor
 * a failed group write loses or resurrects anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CorruptionError, type FileOps, nodeFileOps } from '../../src/engine/index.js';
import { LogSink, logFiles, newestLog, open, put, scratchDirs, str } from './helpers.js';

const dir = scratchDirs();
const CHUNK = 64 * 1024;

/** The state a SIGKILL leaves: every byte written so far is in the page cache, so a copy of the files sees it. */
function crashCopy(from: string, tag: string): string {
  const to = dir(tag);
  fs.rmSync(to, { recursive: true, force: true });
  fs.mkdirSync(to, { recursive: true });
  for (const f of fs.readdirSync(from)) if (f.endsWith('.log') || f.endsWith('.hint')) fs.copyFileSync(path.join(from, f), path.join(to, f));
  return to;
}

function tailIsZero(file: string, from: number): boolean {
  const b = fs.readFileSync(file);
  return b.length > from && b.subarray(from).every((x) => x === 0);
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('the live segment ends in zeros; a clean close cuts them off; a crash copy drops them at open and keeps every write', async () => {
  const d = dir('prealloc-live');
  const e = await open(d, { preallocBytes: CHUNK });
  for (let i = 0; i < 200; i++) await e.write([put(`k${i}`, `value ${i}`)]);
  const file = newestLog(d);
  await until(() => fs.statSync(file).size > 4096);
  const crashed = crashCopy(d, 'prealloc-live-crash');
  await e.close();
  const written = fs.statSync(file).size;
  const copy = path.join(crashed, path.basename(file));
  assert.ok(fs.statSync(copy).size > written, 'the live file was longer than its written bytes');
  assert.ok(tailIsZero(copy, written), 'past the written bytes, only zeros');

  const log = new LogSink();
  const e2 = await open(crashed, { preallocBytes: CHUNK, log: log.fn });
  for (let i = 0; i < 200; i++) assert.equal(await e2.read(`k${i}`, str), `value ${i}`);
  assert.ok(log.has(/dropped \d+ byte\(s\) of zeros/), log.lines.join(' | '));
  assert.ok(!log.has(/torn tail/), log.lines.join(' | '));
  // Writes go on after the dropped zeros, and survive a clean reopen.
  await e2.write([put('after', 'crash')]);
  await e2.close();
  const e3 = await open(crashed, { preallocBytes: CHUNK });
  assert.equal(await e3.read('after', str), 'crash');
  assert.equal(await e3.read('k199', str), 'value 199');
  await e3.close();
});

test('a rotated segment is cut to its written bytes before the next one starts: a crash copy opens with every older segment whole', async () => {
  const d = dir('prealloc-rotate');
  const e = await open(d, { preallocBytes: CHUNK, segmentBytes: 256 * 1024 });
  const v = 'x'.repeat(700);
  for (let i = 0; i < 1500; i++) await e.write([put(`k${i % 400}`, `${i}:${v}`)]);
  assert.ok(logFiles(d).length >= 3, `${logFiles(d).length} segments`);
  const crashed = crashCopy(d, 'prealloc-rotate-crash');
  await e.close();
  // An older segment ending in zeros would refuse to open: only the newest may have a torn or zeroed tail.
  const e2 = await open(crashed, { preallocBytes: CHUNK, segmentBytes: 256 * 1024 });
  for (let i = 1100; i < 1500; i++) assert.equal(await e2.read(`k${i % 400}`, str), `${i}:${v}`);
  await e2.close();
  const older = logFiles(d).slice(0, -1);
  for (const f of older) assert.equal(tailIsZero(path.join(d, f), fs.statSync(path.join(d, f)).size - 64), false, `${f} ends in zeros`);
});

test('zeros in the middle of the newest segment, with a batch after them, are damage, not a tail', async () => {
  const d = dir('prealloc-middle');
  const e = await open(d, { preallocBytes: 0 });
  for (let i = 0; i < 50; i++) await e.write([put(`k${i}`, `v${i}`.repeat(20))]);
  await e.close();
  const file = newestLog(d);
  const b = fs.readFileSync(file);
  const at = Math.floor(b.length / 2);
  b.fill(0, at, at + 200);
  fs.writeFileSync(file, b);
  await assert.rejects(open(d, { preallocBytes: 0 }), (err: unknown) => err instanceof CorruptionError);
});

/** node fs whose writes of a whole zeroing chunk, or whose fdatasync of the log, fail while switched on. */
interface Faulty {
  ops: FileOps;
  failZeroing: boolean;
  failSync: boolean;
}
function faulty(): Faulty {
  const f: Faulty = {
    failZeroing: false,
    failSync: false,
    ops: {
      ...nodeFileOps,
      writeAll: (fd: number, buf: Buffer, off: number, len: number, pos: number) =>
        f.failZeroing && len === CHUNK && buf.subarray(off, off + len).every((x) => x === 0)
          ? Promise.reject(Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' }))
          : nodeFileOps.writeAll(fd, buf, off, len, pos),
      fdatasync: (fd: number) => (f.failSync ? Promise.reject(Object.assign(new Error('EIO: injected'), { code: 'EIO' })) : nodeFileOps.fdatasync(fd)),
    },
  };
  return f;
}

test('a zeroing that fails costs only speed: writes are acknowledged and read back, and zeroing resumes later', async () => {
  const d = dir('prealloc-fail');
  const f = faulty();
  const log = new LogSink();
  f.failZeroing = true;
  const e = await open(d, { preallocBytes: CHUNK, fileOps: f.ops, log: log.fn });
  for (let i = 0; i < 50; i++) await e.write([put(`a${i}`, `v${i}`)]);
  await until(() => log.has(/could not write zeros ahead/));
  for (let i = 50; i < 100; i++) await e.write([put(`a${i}`, `v${i}`)]);
  const file = newestLog(d);
  f.failZeroing = false;
  // The next attempt comes a chunk of log later.
  const big = 'y'.repeat(2000);
  for (let i = 0; i < 60; i++) await e.write([put(`b${i}`, big)]);
  await until(() => tailIsZero(file, fs.statSync(file).size - 1024));
  for (let i = 0; i < 100; i++) assert.equal(await e.read(`a${i}`, str), `v${i}`);
  await e.close();
  const e2 = await open(d, { preallocBytes: CHUNK });
  for (let i = 0; i < 100; i++) assert.equal(await e2.read(`a${i}`, str), `v${i}`);
  assert.equal(await e2.read('b59', str), big);
  await e2.close();
});

test('a group whose sync fails over zeros is rolled back and never comes back after a crash', async () => {
  const d = dir('prealloc-rollback');
  const f = faulty();
  const e = await open(d, { preallocBytes: CHUNK, fileOps: f.ops });
  for (let i = 0; i < 20; i++) await e.write([put(`k${i}`, `v${i}`)]);
  const file = newestLog(d);
  await until(() => fs.statSync(file).size >= CHUNK);
  f.failSync = true;
  await assert.rejects(e.write([put('k1', 'LOST'), put('ghost', 'boo')]));
  f.failSync = false;
  await e.write([put('k2', 'kept')]);
  const crashed = crashCopy(d, 'prealloc-rollback-crash');
  await e.close();
  for (const at of [d, crashed]) {
    const x = await open(at, { preallocBytes: CHUNK });
    assert.equal(await x.read('k1', str), 'v1', at);
    assert.equal(await x.read('ghost', str), undefined, at);
    assert.equal(await x.read('k2', str), 'kept', at);
    await x.close();
  }
});
