/**
 * The file operations the engine uses, behind one interface so tests can
 * inject ENOSPC / EIO at any call (test/engine/faults.test.ts). The default
 * implementation is node:fs's callback API wrapped in promises: it avoids the
 * FileHandle object per call that fs/promises would allocate on the hot path.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DataDirError } from './errors.js';

export interface FileOps {
  open(path: string, flags: string, mode?: number): Promise<number>;
  /** Writes all of `buf[off, off+len)` at `pos`, looping over short writes. */
  writeAll(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<void>;
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  ftruncate(fd: number, len: number): Promise<void>;
  fstatSize(fd: number): Promise<number>;
  close(fd: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  mkdir(path: string): Promise<void>;
  /** fsync on a directory, so a rename or unlink inside it is durable. */
  syncDir(path: string): Promise<void>;
}

function cbVoid(resolve: () => void, reject: (e: unknown) => void) {
  return (err: NodeJS.ErrnoException | null) => (err ? reject(err) : resolve());
}

/**
 * Writes up to this size are made on the calling thread. Such a write only
 * copies into the page cache, and costs less in place than the thread pool's
 * hand-off there and back (a wake-up of a worker, then of the event loop); a
 * group commit's append is almost always this small. Larger writes (a
 * compaction's or rewrite's copy) still go to the pool, so they never hold up
 * the event loop. Only fdatasync waits for the disk, and it stays in the pool.
 */
const IN_PLACE_WRITE_MAX = 64 * 1024;
const RESOLVED = Promise.resolve();

function writeAllNow(fd: number, buf: Buffer, off: number, len: number, pos: number): void {
  while (len > 0) {
    const n = fs.writeSync(fd, buf, off, len, pos);
    if (n === 0) throw Object.assign(new Error('write returned 0 bytes'), { code: 'EIO' });
    off += n;
    len -= n;
    pos += n;
  }
}

export const nodeFileOps: FileOps = {
  open: (path, flags, mode = 0o644) => new Promise((resolve, reject) => fs.open(path, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd)))),
  writeAll(fd, buf, off, len, pos) {
    if (len <= IN_PLACE_WRITE_MAX) {
      try {
        writeAllNow(fd, buf, off, len, pos);
      } catch (err) {
        return Promise.reject(err);
      }
      return RESOLVED;
    }
    return new Promise((resolve, reject) => {
      const step = (o: number, l: number, p: number): void => {
        fs.write(fd, buf, o, l, p, (err, n) => {
          if (err) return reject(err);
          if (n === l) return resolve();
          if (n === 0) return reject(Object.assign(new Error('write returned 0 bytes'), { code: 'EIO' }));
          step(o + n, l - n, p + n);
        });
      };
      step(off, len, pos);
    });
  },
  read: (fd, buf, off, len, pos) => new Promise((resolve, reject) => fs.read(fd, buf, off, len, pos, (err, n) => (err ? reject(err) : resolve(n)))),
  fdatasync: (fd) => new Promise((resolve, reject) => fs.fdatasync(fd, cbVoid(resolve, reject))),
  ftruncate: (fd, len) => new Promise((resolve, reject) => fs.ftruncate(fd, len, cbVoid(resolve, reject))),
  fstatSize: (fd) => new Promise((resolve, reject) => fs.fstat(fd, (err, st) => (err ? reject(err) : resolve(st.size)))),
  close: (fd) => new Promise((resolve, reject) => fs.close(fd, cbVoid(resolve, reject))),
  rename: (a, b) => fs.promises.rename(a, b),
  unlink: (p) => fs.promises.unlink(p),
  readdir: (p) => fs.promises.readdir(p),
  async mkdir(p) {
    await makeDirectory(p);
  },
  async syncDir(p) {
    const fd = await nodeFileOps.open(p, 'r');
    try {
      await nodeFileOps.fdatasync(fd);
    } finally {
      await nodeFileOps.close(fd);
    }
  },
};

/**
 * Writes `bytes` (one buffer, or chunks in order) to `final` through a temporary file, so a crash never leaves
 * half a file under the real name, then fsyncs the directory so the rename
 * survives too. `mode` applies when the temporary file is created.
 */
export async function writeFileDurably(f: FileOps, final: string, bytes: Buffer | readonly Buffer[], mode?: number): Promise<void> {
  const tmp = `${final}.tmp`;
  const fd = await f.open(tmp, 'w', mode);
  try {
    if (!Array.isArray(bytes)) await f.writeAll(fd, bytes as Buffer, 0, (bytes as Buffer).length, 0);
    else {
      let pos = 0;
      for (const b of bytes as readonly Buffer[]) {
        await f.writeAll(fd, b, 0, b.length, pos);
        pos += b.length;
      }
    }
    await f.fdatasync(fd);
  } finally {
    await f.close(fd);
  }
  await f.rename(tmp, final);
  await f.syncDir(path.dirname(final));
}

/**
 * Creates `dir` and any missing parents, one level at a time. Node's
 * recursive mkdir loops forever where a parent exists but refuses children
 * (`/proc/nope`: ENOENT, then EEXIST on the parent, again and again), and says
 * only "EEXIST" when `dir` is a regular file; this fails at once and names
 * the path at fault.
 *
 * Resolves to the outermost directory this call created, or undefined when
 * every level already existed or another process created it meanwhile: only
 * what this call created is a failed start's to remove again (main.ts).
 */
export async function makeDirectory(dir: string, mode?: number): Promise<string | undefined> {
  const abs = path.resolve(dir);
  const missing: string[] = [];
  let p = abs;
  for (;;) {
    let st: fs.Stats | undefined;
    try {
      st = await fs.promises.stat(p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // ENOTDIR: some ancestor is not a directory; the walk up finds and names it.
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new DataDirError(`cannot use data directory ${abs}: ${code ?? String(err)} on ${p}`);
    }
    if (st !== undefined) {
      if (!st.isDirectory()) {
        throw new DataDirError(
          p === abs
            ? `data directory ${abs} exists but is not a directory (it is a ${kindOf(st)}); pass a directory path to --data-dir`
            : `cannot create data directory ${abs}: ${p} is a ${kindOf(st)}, not a directory`,
        );
      }
      break;
    }
    const parent = path.dirname(p);
    missing.push(p);
    if (parent === p) break;
    p = parent;
  }
  let created: string | undefined;
  for (let i = missing.length - 1; i >= 0; i--) {
    try {
      await fs.promises.mkdir(missing[i], mode);
      created ??= missing[i];
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue; // created meanwhile (another server starting); checked below
      throw new DataDirError(
        `cannot create data directory ${abs}: ${code ?? String(err)} on mkdir ${missing[i]}` +
          (code === 'ENOENT' ? ` (${path.dirname(missing[i])} does not accept new directories)` : ''),
      );
    }
  }
  if (missing.length > 0 && !(await fs.promises.stat(abs)).isDirectory()) {
    throw new DataDirError(`data directory ${abs} exists but is not a directory`);
  }
  return created;
}

function kindOf(st: fs.Stats): string {
  if (st.isFile()) return 'regular file';
  if (st.isSymbolicLink()) return 'symbolic link';
  if (st.isSocket()) return 'socket';
  if (st.isFIFO()) return 'named pipe';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'device';
  return 'non-directory';
}

/**
 * Removes a file the engine no longer needs (a retired segment, a hint, an
 * unfinished `.tmp`). Already gone is success. Any other failure leaves the
 * file behind, which costs disk but never data: recovery removes orphaned
 * hints and `.tmp` files at the next open, and a retired segment's keys all
 * live elsewhere. So it is logged with its cause, not thrown; without a log
 * (a caller that reports failures itself) it is thrown.
 */
export async function removeFile(f: FileOps, p: string, log?: (level: 'warn', msg: string) => void): Promise<void> {
  try {
    await f.unlink(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    if (log === undefined) throw err;
    log('warn', `could not remove ${p}: ${String((err as Error).message ?? err)}`);
  }
}
