/**
 * The compression rewrite (recode.ts) racing writes that fail and roll back,
 * and readers of the segment it replaces.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Engine, nodeFileOps } from '../../src/engine/index.js';
import type { FileOps } from '../../src/engine/fileops.js';
import { logFiles, open, put, scratchDirs, str } from './helpers.js';

const dir = scratchDirs();

/**
 * P (k=v2) is in flight while the segment holding k=v1 is copied, and fails
 * after the rename, putting v1 back. While P's tail is being cut, a retry Q
 * (k=v3) is queued with v1 in its undo list; the old file is closed once P's
 * group has settled, and Q fails then. v1, acknowledged, must be put back
 * pointing at its copy in the new file, not into the closed old one, and so
 * stay readable and live through a compaction and a reopen.
 */
test('a version put back by a write failing after the rewrite replaced its segment points into the new file', async () => {
  const d = dir('recode-2fail');
  let gateRecode: () => void = () => {};
  const recodeMayStart = new Promise<void>((r) => (gateRecode = r));
  let releaseP: () => void = () => {};
  const pMayFail = new Promise<void>((r) => (releaseP = r));
  let releaseQ: () => void = () => {};
  const qMayFail = new Promise<void>((r) => (releaseQ = r));
  const gates: Array<Promise<void>> = [];
  const logFds = new Set<number>();
  let renamed = false;
  let released = false;
  let e: Engine | undefined;
  let q: Promise<unknown> | undefined;
  let pFailed = false;
  const fileOps: FileOps = {
    ...nodeFileOps,
    async open(p, flags, mode) {
      if (p.endsWith('.log.tmp')) await recodeMayStart;
      const fd = await nodeFileOps.open(p, flags, mode);
      if (p.endsWith('.log')) logFds.add(fd);
      return fd;
    },
    async writeAll(fd, buf, off, len, pos) {
      if (logFds.has(fd) && gates.length > 0) {
        const g = gates.shift() as Promise<void>;
        await g;
        if (g === pMayFail) pFailed = true;
        throw Object.assign(new Error('injected write failure'), { code: 'EIO' });
      }
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
    async close(fd) {
      // The fd number may next be handed to a hint file.
      logFds.delete(fd);
      return nodeFileOps.close(fd);
    },
    async rename(from, to) {
      await nodeFileOps.rename(from, to);
      if (from.endsWith('.log.tmp')) renamed = true;
    },
    async syncDir(p) {
      await nodeFileOps.syncDir(p);
      // After the rename's directory sync, with P still in flight.
      if (renamed && !released) {
        released = true;
        setImmediate(releaseP);
      }
    },
    async ftruncate(fd, len) {
      // P's failed tail is being cut: the client retries at once.
      if (pFailed && q === undefined) {
        q = (e as Engine).write([put('k', 'v3')]).then(
          () => assert.fail('Q should fail'),
          (err: Error) => assert.match(err.message, /EIO/),
        );
      }
      return nodeFileOps.ftruncate(fd, len);
    },
  };
  e = await open(d, { segmentBytes: 4096, compression: true, cacheBytes: 0, fileOps });
  const v1 = `v1:${'x'.repeat(600)}`;
  await e.write([put('k', v1)]);
  for (let i = 0; logFiles(d).length < 2; i++) await e.write([put(`f${i}`, 'y'.repeat(500))]);
  gates.push(pMayFail, qMayFail);
  const p = e.write([put('k', 'v2')]).then(
    () => assert.fail('P should fail'),
    (err: Error) => assert.match(err.message, /EIO/),
  );
  await new Promise((r) => setImmediate(r));
  gateRecode();
  await p;
  await e.recodesDone();
  assert.ok(q !== undefined, 'Q was not issued');
  releaseQ();
  await q;
  // Both writes failed: k must read v1, the acknowledged value.
  let got: string | undefined;
  let readErr: unknown;
  try {
    got = await e.read('k', str);
  } catch (err) {
    readErr = err;
  }
  // Compaction of the rewritten segment must see k's copy as live.
  await e.compact(true);
  await e.close();
  const e2 = await open(d, { cacheBytes: 0 });
  const after = await e2.read('k', str);
  await e2.close();
  assert.equal(readErr, undefined, `read of k failed: ${String(readErr)}`);
  assert.equal(got, v1);
  assert.equal(after, v1, 'k after compaction and reopen');
});
