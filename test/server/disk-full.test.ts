/**
 * A full disk, black-box (docs/operations.md, "When the disk fills up"): the
 * data directory sits on a small tmpfs, writes fill it, and the refused write
 * gets 507 with the one wording every store uses; reads go on, and writes
 * resume once space is freed, without a restart. Mounting needs root: where
 * it is refused the test says so and skips.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { DISK_FULL_MESSAGE } from '../../src/store/errors.js';
import { PithosServer, STORE, expectError, expectSuccess } from '../helpers/server.js';

function mountTmpfs(dir: string, size: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return `cannot mount a tmpfs here (${String((err as Error).message).split('\n')[0]})`;
  }
}

const mnt = mkdtempSync(path.join(os.tmpdir(), 'pithos-full-'));
const why = STORE === 'postgres' ? "the shared store's disk is the database's" : mountTmpfs(mnt, '6m');
if (why !== undefined && STORE !== 'postgres') process.stdout.write(`# disk-full test skipped: ${why}\n`);

test('a full disk: 507 with the store-wide message, nothing half-written, reads go on, writes resume once space is freed', { skip: why ?? false }, async () => {
  const dir = path.join(mnt, 'data');
  const filler = path.join(mnt, 'filler');
  const s = await PithosServer.start({ dataDir: dir, args: ['--segment-mb', '1'] }).catch(async (err: unknown) => {
    execFileSync('umount', [mnt]);
    throw err;
  });
  try {
    expectSuccess(await s.req('PUT', '/records/small', { record: { a: 1 } }), 201, 'record created successfully');
    // Leave less room than one record needs.
    const free = Number(execFileSync('df', ['--output=avail', '-B1', mnt], { encoding: 'utf8' }).split('\n')[1]);
    writeFileSync(filler, Buffer.alloc(Math.max(0, free - 64 * 1024)));
    const big = { record: { s: 'x'.repeat(256 * 1024) } };
    // Write until one is refused rather than assume which one: what fits depends on how the
    // filesystem allocates; 6 MiB of disk ends well within 24 of these.
    const stored: string[] = [];
    let refused: string | undefined;
    for (let i = 0; i < 24 && refused === undefined; i++) {
      const r = await s.req('PUT', `/records/big${i}`, big);
      if (r.status === 201) stored.push(`big${i}`);
      else {
        expectError(r, 507, DISK_FULL_MESSAGE);
        refused = `big${i}`;
      }
    }
    assert.ok(refused !== undefined, `no write was refused: ${stored.length} stored`);
    expectError(await s.req('GET', `/records/${refused}`), 404);
    for (const k of stored) assert.equal((await s.req('GET', `/records/${k}`)).status, 200, k);
    expectSuccess(await s.req('GET', '/records/small'), 200, 'record queried successfully', { a: 1 });
    assert.equal((await s.req('GET', '/health')).status, 200);
    rmSync(filler);
    expectSuccess(await s.req('PUT', '/records/big', big), 201, 'record created successfully');
    assert.equal((await s.req('GET', '/records/big')).status, 200);
  } finally {
    await s.close();
    execFileSync('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  }
});
