/**
 * The log's files for an online backup (docs/operations.md, "Backup and
 * restore"), taken in one synchronous step.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { storageError } from './errors.js';
import type { Segment } from './segment.js';

export interface BackupFile {
  name: string;
  fd: number;
  size: number;
}

/**
 * The log as it stands now, for an online backup (docs/operations.md,
 * "Backup and restore"): every segment file, opened now and cut at its
 * current length, which is always a batch boundary (a group's length is
 * recorded only once all of it is in the log under the configured
 * durability, writer.ts: so not while its fsync may still fail and undo it).
 * Every batch acknowledged before this call is inside; none queued after it
 * is. Runs synchronously,
 * so no write or compaction step can fall between two files; an open
 * descriptor keeps a file readable even if compaction unlinks it later.
 * A compaction output that is already in the list repeats batches of its
 * inputs with their own sequence numbers, which replay to the same state.
 * The caller reads the descriptors and closes them.
 */
export function snapshotFiles(segments: readonly Segment[]): BackupFile[] {
  const out: BackupFile[] = [];
  try {
    for (const s of segments) {
      if (s.retired) continue;
      const f: BackupFile = { name: path.basename(s.path), fd: fs.openSync(s.path, 'r'), size: s.size };
      out.push(f);
      f.size = sizeOf(s, f.fd);
    }
  } catch (err) {
    for (const f of out) fs.closeSync(f.fd);
    throw storageError('open for backup', err);
  }
  return out;
}

/**
 * How much of the file opened as `fd` to copy: the segment's size, unless the
 * name already holds the segment's compressed rewrite (recode.ts renames it
 * into place a moment before the list shows it), which is whole: all of it.
 */
function sizeOf(s: Segment, fd: number): number {
  if (s.fd < 0) return s.size;
  const opened = fs.fstatSync(fd);
  const own = fs.fstatSync(s.fd);
  return opened.ino === own.ino && opened.dev === own.dev ? s.size : opened.size;
}
