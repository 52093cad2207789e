/**
 * One process per data directory: `<dir>/LOCK` holds the owner's pid.
 *
 * The file is taken with an exclusive create (O_EXCL), so of any number of
 * processes starting at the same instant exactly one creates it. A LOCK whose
 * process is gone (SIGKILL, power loss) is stale and is taken over, but never
 * by deleting it directly: two starters that both judged it stale could then
 * delete each other's fresh lock. A starter first takes `<dir>/LOCK.takeover`
 * (also O_EXCL), judges LOCK again (still stale?), removes it,
 * drops the guard and competes for LOCK again with O_EXCL. Only the guard's
 * own creator ever removes the guard.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DirectoryLockedError } from './errors.js';

export const LOCK_FILE = 'LOCK';
const GUARD_FILE = 'LOCK.takeover';
/** Attempts before giving up; each waits a little, so this bounds the wait to about 2 s. */
const MAX_ATTEMPTS = 100;
const RETRY_MS = 20;
/**
 * A LOCK with no pid in it yet is normally a starter between its create and
 * its write (microseconds apart); one this old was left by a process that
 * died in between.
 */
const EMPTY_GRACE_MS = 2000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Takes the lock on `dir` or throws DirectoryLockedError. */
export async function lockDirectory(dir: string): Promise<void> {
  const file = path.join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (tryCreate(file)) return;
    const held = readLock(file);
    if (held === undefined) continue; // released between our create and our read: try again
    if (held.pid === process.pid) return; // this process already holds it (reopened without close)
    const verdict = judge(held);
    if (verdict === 'live') throw new DirectoryLockedError(dir, held.pid);
    if (verdict === 'young' || !takeOver(dir, file)) await sleep(RETRY_MS);
  }
  throw new DirectoryLockedError(dir, 0,
    `could not take the lock on ${dir} after ${MAX_ATTEMPTS} attempts; if no Pithos server is starting there, ` +
    `remove ${path.join(dir, GUARD_FILE)} (left by a process that died while taking over a stale lock)`);
}

/** Releases the lock if this process holds it. */
export function unlockDirectory(dir: string): void {
  const file = path.join(dir, LOCK_FILE);
  const held = readLock(file);
  if (held !== undefined && held.pid === process.pid) {
    try {
      fs.unlinkSync(file);
    } catch {
      // Already gone: nothing to release.
    }
  }
}

function tryCreate(file: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    fs.writeSync(fd, `${process.pid}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

interface Held {
  /** 0 when the file holds no pid (yet). */
  pid: number;
  mtimeMs: number;
}

/** 'young': no pid yet, but its creator may still be writing it. */
function judge(held: Held): 'live' | 'stale' | 'young' {
  if (held.pid !== 0) return processAlive(held.pid) ? 'live' : 'stale';
  return Date.now() - held.mtimeMs < EMPTY_GRACE_MS ? 'young' : 'stale';
}

function readLock(file: string): Held | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    const buf = Buffer.alloc(32);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    const text = buf.toString('utf8', 0, n);
    const pid = /^\d+\n$/.test(text) ? Number(text.trim()) : 0;
    return { pid: Number.isSafeInteger(pid) ? pid : 0, mtimeMs: st.mtimeMs };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Removes LOCK under the guard if it is (still) stale. Returns false when
 * another process holds the guard (it is doing the same; the caller waits).
 */
function takeOver(dir: string, file: string): boolean {
  const guard = path.join(dir, GUARD_FILE);
  if (!tryCreate(guard)) return false;
  try {
    // Judged again under the guard: since we looked, another starter may have
    // removed the stale file and created its own (possibly with the same
    // inode number, which file systems reuse at once). Only guard holders
    // remove a LOCK that is not their own, so this verdict holds until we act.
    const again = readLock(file);
    if (again !== undefined && again.pid !== process.pid && judge(again) === 'stale') fs.unlinkSync(file);
  } finally {
    fs.unlinkSync(guard);
  }
  return true;
}

/**
 * Whether `pid` is a running process. A zombie (exited, not yet reaped by its
 * parent: what a SIGKILLed server is for a moment, or for good under a parent
 * that never reaps) holds no files and counts as gone. Elsewhere than Linux
 * zombies cannot be told apart here; the error message says how to check.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after "pid (comm)"; comm may itself contain ") ".
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true;
  }
}
