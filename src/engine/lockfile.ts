/**
 * One process per data directory: `<dir>/LOCK` holds the owner's pid.
 *
 * The file is taken with an exclusive create (O_EXCL), so of any number of
 * processes starting at the same instant exactly one creates it. A LOCK whose
 * process is gone (SIGKILL, power loss) is stale and is taken over, but never
 * by deleting it directly: two starters that both judged it stale could then
 * delete each other's fresh lock. A starter first takes `<dir>/LOCK.takeover`
 * (also O_EXCL), removes LOCK if it is still stale (removeIfStale), drops the
 * guard and competes for LOCK again with O_EXCL.
 *
 * The guard can itself be left behind: by a process killed while holding it,
 * or, before a failed pid write removed its own file, by one whose disk was
 * full. A guard no live process holds (its pid is gone, or it has no pid and
 * is older than EMPTY_GRACE_MS) is removed by removeIfStale too.
 *
 * removeIfStale never unlinks by name, since a file judged stale may have been
 * replaced by a fresh one before the unlink: it renames the file to a name of
 * this process's own, judges what it moved (a file nobody else can reach any
 * more), and deletes it if stale, else links it back under its name (link
 * fails rather than replace a file created meanwhile). Two starters A and B,
 * both judging the same stale guard: whichever renames first moves the stale
 * one and deletes it; if A then creates its guard before B's rename, B moves
 * A's guard, finds it live (or without pid and young) and puts it back. A
 * stays the only holder: B holds a guard only after its own O_EXCL create,
 * which cannot succeed while A's file is in place, and B creates nothing
 * while A's file is aside with B. A releasing its guard while B has it aside
 * waits for it to come back (release); should B take longer than that, the
 * guard B puts back names A, and is judged stale once A has exited (A holds
 * LOCK until then, so nobody needs the guard meanwhile). Three or more
 * starters over a guard left by a dead process could make two holders (a third
 * creating a guard in the microseconds A's is aside); LOCK itself is then still
 * removed through removeIfStale, which moves back a fresh LOCK, so a double
 * win needs a second such coincidence in the microseconds that LOCK is aside.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DataDirError, DirectoryLockedError } from './errors.js';

export const LOCK_FILE = 'LOCK';
const GUARD_FILE = 'LOCK.takeover';
/** A LOCK or guard set aside by removeIfStale, named after the process that moved it. */
const ASIDE = /^LOCK(?:\.takeover)?\.stale-(\d+)$/;
/**
 * How long a start keeps trying before it gives up. It must exceed
 * EMPTY_GRACE_MS, so that a file left without a pid is outwaited.
 */
const MAX_WAIT_MS = 5000;
const RETRY_MS = 20;
/**
 * A LOCK (or guard) with no pid in it yet is normally a starter between its
 * create and its write (microseconds apart); one this old was left by a
 * process that died in between, or by an older version whose pid write failed.
 */
const EMPTY_GRACE_MS = 2000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Takes the lock on `dir` or throws DirectoryLockedError (or DataDirError when the disk is full). */
export async function lockDirectory(dir: string): Promise<void> {
  const file = path.join(dir, LOCK_FILE);
  const deadline = Date.now() + MAX_WAIT_MS;
  for (;;) {
    if (tryCreate(file)) {
      clearAside(dir);
      return;
    }
    const held = readLock(file);
    if (held !== undefined) {
      if (held.pid === process.pid) return; // this process already holds it (reopened without close)
      const verdict = judge(held);
      if (verdict === 'live') throw new DirectoryLockedError(dir, held.pid);
      if (verdict === 'stale' && (await takeOver(dir, file))) continue;
    } // else: released between our create and our read: try again
    if (Date.now() >= deadline) {
      throw new DirectoryLockedError(
        dir,
        0,
        `could not take the lock on ${dir} within ${MAX_WAIT_MS / 1000} s: other processes kept taking over ` +
          `${file} (or the guard ${path.join(dir, GUARD_FILE)}) without finishing; if no Pithos server is starting there, remove both and start again`,
      );
    }
    if (held !== undefined) await sleep(RETRY_MS);
  }
}

/**
 * Removes files set aside by removeIfStale whose remover died before deleting
 * them (their name carries its pid). Called by the lock's holder: a remover
 * still alive may be about to judge its file, so those stay.
 */
function clearAside(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) {
    const m = ASIDE.exec(n);
    if (m === null || processAlive(Number(m[1]))) continue;
    try {
      fs.unlinkSync(path.join(dir, n));
    } catch {
      // Gone already.
    }
  }
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

/**
 * Creates `file` exclusively with this process's pid in it; false if it exists.
 * If the pid cannot be written (a full disk), the file this call created is
 * removed before the error goes up: left empty, it would block every later
 * start for EMPTY_GRACE_MS (or for good, under a guard that never expired it).
 */
function tryCreate(file: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw startError(file, err);
  }
  try {
    fs.writeSync(fd, `${process.pid}\n`);
    fs.closeSync(fd);
  } catch (err) {
    // Still ours: a file without a pid is judged young for EMPTY_GRACE_MS,
    // so no other starter has removed or replaced it in these microseconds.
    try {
      fs.closeSync(fd);
    } catch {
      // Closing after a failed write may fail too; the unlink is what matters.
    }
    try {
      fs.unlinkSync(file);
    } catch {
      // Gone already, or aside with a starter that will put it back: it has no pid, and is judged stale once old.
    }
    throw startError(file, err);
  }
  return true;
}

/** A full disk is the one failure here an operator must act on: say what to free. */
function startError(file: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT') return err;
  const dir = path.dirname(file);
  return new DataDirError(
    `cannot start: the file system holding ${dir} is full (${code} while writing ${file}). ` +
      `Free space on that file system, outside ${dir} (deleting files inside it loses data), or grow it, then start again`,
    { cause: err },
  );
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
 * another process holds the guard (it is doing the same; the caller waits),
 * after removing the guard if no live process holds it.
 */
async function takeOver(dir: string, file: string): Promise<boolean> {
  const guard = path.join(dir, GUARD_FILE);
  if (!tryCreate(guard)) {
    removeIfStale(guard);
    return false;
  }
  try {
    // Judged again under the guard, on the file itself once it is aside:
    // since we looked, another starter may have removed the stale file and
    // created its own (possibly with the same inode number, which file
    // systems reuse at once).
    removeIfStale(file);
  } finally {
    await release(guard);
  }
  return true;
}

/**
 * Removes this process's guard. Absent, it is aside with a starter that found
 * it live and is putting it back: wait for that (microseconds, or a little
 * more on a busy machine), so that no guard is left behind.
 */
async function release(guard: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const held = readLock(guard);
    if (held !== undefined) {
      if (held.pid === process.pid) fs.unlinkSync(guard);
      return;
    }
    await sleep(1);
  }
}

/**
 * Removes `file` if no live process holds it, without ever removing a file
 * created after the judgement (see the header comment for why this order).
 */
function removeIfStale(file: string): void {
  const seen = readLock(file);
  if (seen === undefined || judge(seen) !== 'stale') return;
  const aside = `${file}.stale-${process.pid}`;
  try {
    fs.renameSync(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // another starter removed it
    throw err;
  }
  try {
    const moved = readLock(aside);
    if (moved !== undefined && judge(moved) !== 'stale') {
      try {
        fs.linkSync(aside, file);
      } catch (err) {
        // A file created meanwhile keeps the name (see the header comment).
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
  } finally {
    fs.unlinkSync(aside);
  }
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
