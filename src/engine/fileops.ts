/**
 * The file operations the engine uses, behind one interface so tests can
 * inject ENOSPC / EIO at any call (test/engine/faults.test.ts). The default
 * implementation is node:fs's callback API wrapped in promises: it avoids the
 * FileHandle object per call that fs/promises would allocate on the hot path.
 */
import * as fs from 'node:fs';

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

export const nodeFileOps: FileOps = {
  open: (path, flags, mode = 0o644) =>
    new Promise((resolve, reject) => fs.open(path, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd)))),
  writeAll(fd, buf, off, len, pos) {
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
  read: (fd, buf, off, len, pos) =>
    new Promise((resolve, reject) => fs.read(fd, buf, off, len, pos, (err, n) => (err ? reject(err) : resolve(n)))),
  fdatasync: (fd) => new Promise((resolve, reject) => fs.fdatasync(fd, cbVoid(resolve, reject))),
  ftruncate: (fd, len) => new Promise((resolve, reject) => fs.ftruncate(fd, len, cbVoid(resolve, reject))),
  fstatSize: (fd) =>
    new Promise((resolve, reject) => fs.fstat(fd, (err, st) => (err ? reject(err) : resolve(st.size)))),
  close: (fd) => new Promise((resolve, reject) => fs.close(fd, cbVoid(resolve, reject))),
  rename: (a, b) => fs.promises.rename(a, b),
  unlink: (p) => fs.promises.unlink(p),
  readdir: (p) => fs.promises.readdir(p),
  mkdir: (p) => fs.promises.mkdir(p, { recursive: true }).then(() => undefined),
  async syncDir(p) {
    const fd = await nodeFileOps.open(p, 'r');
    try {
      await nodeFileOps.fdatasync(fd);
    } finally {
      await nodeFileOps.close(fd);
    }
  },
};
