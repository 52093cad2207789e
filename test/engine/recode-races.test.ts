/**
 * The compression rewrite (recode.ts) racing writes that fail and roll back,
 * and readers of the segment it replaces.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Engine, nodeFileOps } from '../../src/engine/index.js';
import type { FileOps } from '../../src/engine/fileops.js';
import { logFiles, open, put, scratchDirs, str } from './helpers.js';

const dir = scratchDirs();

/** The header flags of a segment file: 0 for a version 1 header. */
function segmentFlags(d: string, name: string): number {
  const b = fs.readFileSync(path.join(d, name));
  return b[4] === 1 ? 0 : b[6];
}

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

/** A change-feed replay that overlaps a compression rewrite: the log can still replay the range exactly. */
test('a change-feed replay running while its segments are rewritten compressed still replays the whole log', async () => {
  const d = dir('recode-feed');
  let block = false;
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  let blocked: () => void = () => {};
  const isBlocked = new Promise<void>((r) => (blocked = r));
  const fileOps: FileOps = {
    ...nodeFileOps,
    async read(fd, buf, off, len, pos) {
      if (block) {
        block = false;
        blocked();
        await gate;
      }
      return nodeFileOps.read(fd, buf, off, len, pos);
    },
  };
  const e = await open(d, { segmentBytes: 4096, compression: true, cacheBytes: 0, fileOps });
  for (let i = 0; logFiles(d).length < 4; i++) await e.write([put(`k${i}`, `${i}:${'z'.repeat(400)}`)]);
  const upto = e.upcomingSeq - 1;
  block = true;
  let n = 0;
  const whole = e.replay(0, upto, () => void n++);
  await isBlocked;
  await e.recodesDone();
  // The replay holds the list from before: every segment but the active one has been rewritten under it.
  for (const f of logFiles(d).slice(0, -1)) assert.equal(segmentFlags(d, f) & 2, 2, `${f} was not rewritten`);
  release();
  const ok = await whole;
  await e.close();
  assert.equal(ok, true, 'replay reported the log could not be replayed (watchers get a reset)');
  assert.equal(n, upto, 'every batch replayed once');
});

/** Rewrites queue up while one runs; a compaction asked for meanwhile runs after that one, not after the queue. */
test('a compaction waiting for a compression rewrite runs before the rewrites queued behind it', async () => {
  const d = dir('recode-queue');
  let gateRecode: () => void = () => {};
  const recodeMayGo = new Promise<void>((r) => (gateRecode = r));
  let gated = false;
  const events: string[] = [];
  const fileOps: FileOps = {
    ...nodeFileOps,
    async open(p, flags, mode) {
      if (p.endsWith('.log.tmp') && !gated) {
        gated = true;
        await recodeMayGo;
      }
      return nodeFileOps.open(p, flags, mode);
    },
  };
  const log = (_level: string, msg: string): void => {
    if (/^compressed /.test(msg)) events.push('compressed');
    else if (/^compacted /.test(msg)) events.push('compacted');
  };
  const e = await open(d, { segmentBytes: 4096, compression: true, cacheBytes: 0, fileOps, log });
  // Overwrites of a few keys: dead bytes for the compaction, and rotations that queue rewrites behind the gated one.
  for (let i = 0; logFiles(d).length < 6; i++) await e.write([put(`k${i % 3}`, `${i}:${'w'.repeat(500)}`)]);
  assert.ok(gated, 'no rewrite started');
  const compacted = e.compact(true);
  gateRecode();
  assert.equal(await compacted, true);
  await e.recodesDone();
  await e.close();
  assert.equal(events.indexOf('compacted'), 1, `order: ${events.join(', ')}`);
});
