/**
 * Online backup and restore of the log store (docs/operations.md, "Backup
 * and restore"). A backup is the log itself, cut at one instant
 * (Engine.snapshotFiles), in one stream:
 *
 *   PITHOS-BACKUP 1\n
 *   {"created":"<ISO time>","seq":<last sequence number>,"files":[{"name","size"},…]}\n
 *   <the files' bytes, in that order>
 *   \ncrc32 <8 hex digits: CRC-32 of every byte before this line>\n
 *
 * Restoring writes the files into an empty data directory and opens it, so
 * the log's own recovery checks every batch's checksum; the header's sizes
 * and the trailer catch a truncated or damaged download before anything is
 * written. CRC-32 rather than a cryptographic hash: it guards against
 * accidents (the batches carry their own CRCs too) and costs the event loop
 * a tenth of SHA-256 (bench/backup.ts; docs/operations.md).
 */
import { crc32 } from 'node:zlib';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  Engine,
  type Keyring,
  KeyMismatchError,
  LOCK_FILE,
  lockDirectory,
  makeDirectory,
  nodeFileOps,
  unlockDirectory,
  writeFileDurably,
} from '../../engine/index.js';
import type { Logger } from '../../log.js';
import { groupNoun } from './keys.js';

const MAGIC = 'PITHOS-BACKUP 1\n';
/**
 * Slice size. Hashing and handing over a slice runs on the event loop, so a
 * slice is kept small enough (~0.2 ms of work) for requests to interleave;
 * bench/backup.ts measured write p99 8 → 28 ms during a 1 GiB backup with
 * 1 MiB slices and no yield.
 */
const CHUNK = 256 << 10;
const yieldToRequests = (): Promise<void> => new Promise((r) => setImmediate(r));

const hex = (crc: number): string => (crc >>> 0).toString(16).padStart(8, '0');

const readAt = (fd: number, buf: Buffer, len: number, pos: number): Promise<number> =>
  new Promise((resolve, reject) => fs.read(fd, buf, 0, len, pos, (err, n) => (err ? reject(err) : resolve(n))));

/** The backup stream of `engine` as it stands at the call (see Engine.snapshotFiles). */
export async function* backupStream(engine: Engine): AsyncGenerator<Buffer> {
  const seq = engine.upcomingSeq - 1;
  const files = engine.snapshotFiles();
  try {
    let crc = 0;
    const head = Buffer.from(
      MAGIC +
        JSON.stringify({
          created: new Date().toISOString(),
          seq,
          files: files.map((f) => ({ name: f.name, size: f.size })),
        }) +
        '\n',
    );
    crc = crc32(head, crc);
    yield head;
    for (const f of files) {
      for (let pos = 0; pos < f.size;) {
        // A fresh buffer per chunk: the consumer may still hold the previous one.
        const buf = Buffer.allocUnsafe(Math.min(CHUNK, f.size - pos));
        const n = await readAt(f.fd, buf, buf.length, pos);
        if (n === 0) throw new Error(`${f.name} ended at ${pos} of ${f.size} bytes while it was backed up`);
        const part = n === buf.length ? buf : buf.subarray(0, n);
        crc = crc32(part, crc);
        yield part;
        pos += n;
        await yieldToRequests();
      }
    }
    yield Buffer.from(`\ncrc32 ${hex(crc)}\n`);
  } finally {
    for (const f of files) fs.closeSync(f.fd);
  }
}

export class BackupError extends Error {}

interface Header {
  seq: number;
  created: string;
  files: Array<{ name: string; size: number }>;
}

const SEGMENT_NAME = /^[0-9]{16}\.log$/;

/** Checks a backup file and returns its header and where the files' bytes start. */
function parse(bytes: Buffer): { header: Header; start: number } {
  if (bytes.subarray(0, MAGIC.length).toString('latin1') !== MAGIC) throw new BackupError('not a Pithos backup (bad first line)');
  const nl = bytes.indexOf(10, MAGIC.length);
  if (nl < 0) throw new BackupError('backup header is cut off');
  let header: Header;
  try {
    header = JSON.parse(bytes.subarray(MAGIC.length, nl).toString('utf8')) as Header;
  } catch {
    throw new BackupError('backup header is not valid JSON');
  }
  if (
    !Array.isArray(header.files) ||
    header.files.some((f) => typeof f.name !== 'string' || !SEGMENT_NAME.test(f.name) || !Number.isSafeInteger(f.size) || f.size < 0)
  ) {
    throw new BackupError('backup header lists an invalid file');
  }
  const start = nl + 1;
  const end = start + header.files.reduce((a, f) => a + f.size, 0);
  const trailer = bytes.subarray(end).toString('latin1');
  const m = /^\ncrc32 ([0-9a-f]{8})\n$/.exec(trailer);
  if (m === null) throw new BackupError(`backup is truncated or has extra bytes (${bytes.length} bytes; the header lists ${end - start} bytes of files)`);
  if (hex(crc32(bytes.subarray(0, end))) !== m[1]) throw new BackupError('backup checksum does not match: the file was altered or damaged');
  return { header, start };
}

/**
 * Restores a backup into `dataDir`, which must not exist or be empty, then
 * opens it once so recovery verifies every batch. Resolves to a summary.
 * A backup of an encrypted store is as encrypted as the store (its files are
 * the segments): restoring it needs the key; without it the files written
 * are removed again and the error names the key needed.
 *
 * The directory's lock (lockfile.ts) is held from before the emptiness check
 * until the restored store is closed, as a server holds it: a server running
 * there refuses the restore (DirectoryLockedError, naming the directory and
 * its pid) and one starting while the files are written refuses to start, so
 * no server ever appends to a segment the restore then replaces.
 */
export async function restoreBackup(file: string, dataDir: string, log: Logger, keyring?: Keyring): Promise<string> {
  const bytes = fs.readFileSync(file);
  const { header, start } = parse(bytes);
  await makeDirectory(dataDir, 0o700);
  await lockDirectory(dataDir);
  try {
    // The lock's own files (ours, or a takeover's) are not contents.
    if (fs.readdirSync(dataDir).some((n) => !n.startsWith(LOCK_FILE))) {
      throw new BackupError(`data directory ${dataDir} is not empty: restore only into a new or empty directory`);
    }
    let pos = start;
    for (const f of header.files) {
      await writeFileDurably(nodeFileOps, path.join(dataDir, f.name), bytes.subarray(pos, pos + f.size), 0o600);
      pos += f.size;
    }
    let engine: Engine;
    try {
      // Takes the lock this process already holds (lockDirectory allows that).
      engine = await Engine.open({ dir: dataDir, log, sweepIntervalMs: 0, compactIntervalMs: 0, keyring, groupNoun });
    } catch (err) {
      if (err instanceof KeyMismatchError) {
        // The failed open released the lock: hold it again while removing what this restore wrote.
        await lockDirectory(dataDir);
        for (const f of header.files) fs.rmSync(path.join(dataDir, f.name), { force: true });
        throw new BackupError(`${err.message.replace(/; nothing was opened or written$/, '')}; nothing was restored`);
      }
      throw err;
    }
    const keys = engine.describeKeys();
    await engine.close();
    return `restored ${header.files.length} segment file(s) (${pos - start} bytes, up to sequence ${header.seq}, taken ${header.created}) into ${dataDir}: ${keys}`;
  } finally {
    // A no-op once the engine's close released it, and for a lock another process holds.
    unlockDirectory(dataDir);
  }
}
