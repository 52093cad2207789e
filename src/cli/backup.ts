/**
 * `pithos backup` and `pithos restore` (docs/operations.md, "Backups"): a
 * backup is streamed from the server into a file that is whole or absent; a
 * restore writes a data directory from such a file, offline, through the log
 * store's public entry.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PithosError } from '../../client/index.js';
import { flag, onlyFlags, type Parsed, positionals, UsageError } from './args.js';
import type { Ctx, Io } from './main.js';

export async function cmdBackup(c: Ctx): Promise<void> {
  onlyFlags(c.p, 'backup', ['out']);
  positionals(c.p, 'backup', 0, 0);
  const out = flag(c.p, 'out');
  if (out === undefined) throw new UsageError('--out FILE is required');
  // Written under a temporary name, renamed only once the stream ended with
  // its checksum trailer: FILE is a whole backup or nothing.
  const tmp = `${out}.partial`;
  const fd = openOut(out, tmp);
  let bytes = 0;
  let tail = Buffer.alloc(0);
  try {
    const stream = await c.db.backup();
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      fs.writeSync(fd, chunk);
      bytes += chunk.length;
      tail = Buffer.concat([tail, Buffer.from(chunk)]).subarray(-80);
    }
    if (!/\ncrc32 [0-9a-f]{8}\n$/.test(tail.toString('latin1'))) {
      throw new PithosError(0, `the backup stream ended early (${bytes} bytes, no checksum): ${out} was not written`);
    }
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, out);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw new PithosError(0, `cannot write ${out}: ${(err as Error).message}`);
  }
  c.io.out(
    c.json
      ? JSON.stringify({ status: 'success', message: 'backup written', data: { file: out, bytes } }) + '\n'
      : `backup written to ${out} (${bytes} bytes)\n`,
  );
}

/**
 * Opens the temporary file, after checking FILE can become a backup: a
 * directory (or a missing parent) would only fail at the rename, after the
 * whole data set was streamed, and leave the temporary file behind.
 * A local failure exits 1, as a refusal by the server does.
 */
function openOut(out: string, tmp: string): number {
  let problem: string | undefined;
  if (fs.statSync(out, { throwIfNoEntry: false })?.isDirectory()) problem = 'it is a directory (give a file name)';
  else if (!fs.statSync(path.dirname(path.resolve(out)), { throwIfNoEntry: false })?.isDirectory()) {
    problem = `directory ${path.dirname(out)} does not exist`;
  }
  if (problem === undefined) {
    try {
      return fs.openSync(tmp, 'w', 0o600);
    } catch (err) {
      problem = (err as Error).message;
    }
  }
  throw new PithosError(0, `cannot write ${out}: ${problem}`);
}

export async function restore(p: Parsed, io: Io): Promise<number> {
  const from = flag(p, 'from');
  const dir = flag(p, 'data-dir');
  const keyFlags = ['encryption-key-file', 'encryption-old-key-files'];
  const extra = [...p.flags.keys()].filter((k) => k !== 'from' && k !== 'data-dir' && !keyFlags.includes(k));
  if (from === undefined || dir === undefined || extra.length > 0 || p.pos.length > 0) {
    io.err(`pithos restore: usage: pithos restore --from FILE --data-dir DIR [--encryption-key-file FILE] (see pithos help restore)\n`);
    return 2;
  }
  const { restoreBackup, loadKeyring } = await import('../store/log/log-store.js');
  try {
    // An encrypted backup needs the store's key, as the server would (docs/operations.md, "Encryption at rest").
    const keyring = loadKeyring({
      keyFile: flag(p, 'encryption-key-file') ?? io.env.PITHOS_ENCRYPTION_KEY_FILE,
      oldKeyFiles: (flag(p, 'encryption-old-key-files') ?? io.env.PITHOS_ENCRYPTION_OLD_KEY_FILES ?? '').split(',').filter((x) => x !== ''),
    });
    // The engine's info lines (keys recovered) repeat what the command prints; its warnings and errors go to stderr.
    const log = (level: 'info' | 'warn' | 'error', msg: string): void => {
      if (level !== 'info') io.err(`pithos restore: ${msg}\n`);
    };
    io.out((await restoreBackup(from, path.resolve(dir), log, keyring)) + '\n');
    return 0;
  } catch (err) {
    // A bad file, a non-empty directory, one a server holds, a batch that fails its checksum: say which, exit 1.
    io.err(`pithos restore: ${(err as Error).message}\n`);
    return 1;
  }
}
