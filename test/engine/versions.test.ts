/**
 * Versions (docs/format.md, "Sequence numbers"): every key carries the
 * sequence number of the batch that last wrote it, unchanged by restarts
 * (with and without hints, and with hints of the previous version) and by
 * compaction; replay() gives the log's batches in order and refuses ranges
 * compaction has thinned.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Engine } from '../../src/engine/index.js';
import { del, hintFiles, open, put, str, waitForHints, scratchDirs } from './helpers.js';

const dir = scratchDirs();

/** Writes a history over `n` keys; returns each live key's expected version. */
async function history(e: Engine, rounds: number, n: number): Promise<Map<string, number>> {
  const want = new Map<string, number>();
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) {
      if ((i + r) % 5 === 0) continue;
      const k = `k${i}`;
      const seq = e.upcomingSeq;
      if ((i * 7 + r) % 11 === 0) {
        await e.write([del(k)]);
        want.delete(k);
      } else {
        // Two keys per batch: both get the batch's number.
        await e.write([put(k, `v${r}-${i}`.padEnd(200, '.')), put(`pair${i}`, `p${r}`)]);
        want.set(k, seq);
        want.set(`pair${i}`, seq);
      }
    }
  }
  return want;
}

function check(e: Engine, want: Map<string, number>, what: string): void {
  for (const [k, v] of want) assert.equal(e.versionOf(k), v, `${what}: version of ${k}`);
  assert.equal(e.versionOf('never-written'), undefined);
}

test('versions are batch sequence numbers and survive restart, hints, old hints and compaction', async () => {
  const d = dir('versions');
  const opts = { segmentBytes: 16 * 1024, compactMinDeadBytes: 1, compactMinDeadRatio: 0.1 };
  let e = await open(d, opts);
  const want = await history(e, 12, 60);
  check(e, want, 'live');
  await e.close();

  // Restart: immutable segments from their (version 3) hints, the tail by scanning.
  e = await open(d, opts);
  assert.ok(hintFiles(d).length > 2, 'hints were written');
  check(e, want, 'after restart with hints');
  await e.close();

  // Hints of the previous version (no seq per entry) are ignored: the segments are scanned.
  for (const h of hintFiles(d)) {
    const p = path.join(d, h);
    const b = fs.readFileSync(p);
    b[4] = 2;
    fs.writeFileSync(p, b);
  }
  e = await open(d, opts);
  check(e, want, 'after restart with old hints');
  await waitForHints(d);
  await e.close();

  // Compaction copies entries with their batch's number; so does replaying its output.
  e = await open(d, opts);
  const floorBefore = e.replayFloor();
  assert.equal(await e.compact(true), true, 'a compaction ran');
  assert.ok(e.replayFloor() > floorBefore, 'compaction raises the replay floor');
  check(e, want, 'after compaction');
  for (const k of want.keys()) assert.ok((await e.read(k, str)) !== undefined);
  await e.close();
  e = await open(d, opts);
  check(e, want, 'after compaction and restart (hints)');
  await e.close();
  for (const h of hintFiles(d)) fs.unlinkSync(path.join(d, h));
  e = await open(d, opts);
  check(e, want, 'after compaction and restart (scan)');
  await e.close();
});

test('replay gives every batch in (after, upto] in order, and refuses what compaction thinned', async () => {
  const d = dir('replay');
  const opts = { segmentBytes: 8 * 1024, compactMinDeadBytes: 1, compactMinDeadRatio: 0.1 };
  const e = await open(d, opts);
  const written: Array<[number, string[]]> = [];
  for (let i = 0; i < 300; i++) {
    const seq = e.upcomingSeq;
    const keys = i % 3 === 0 ? [`a${i % 20}`, `b${i % 7}`] : [`a${i % 20}`];
    await e.write(keys.map((k) => put(k, `x${i}`.padEnd(100, '-'))));
    written.push([seq, keys]);
  }
  assert.equal(e.committedSeq, written[written.length - 1][0]);
  const got: Array<[number, string[]]> = [];
  const after = written[100][0];
  const upto = written[250][0];
  assert.equal(await e.replay(after, upto, (seq, entries) => got.push([seq, entries.map((x) => x.key)])), true);
  assert.deepEqual(got, written.slice(101, 251));
  // Compaction of the oldest segments: ranges starting below its floor are refused.
  assert.equal(await e.compact(true), true);
  const floor = e.replayFloor();
  assert.ok(floor > 0);
  assert.equal(await e.replay(floor - 1, upto, () => {}), false);
  const tail: number[] = [];
  assert.equal(await e.replay(floor, e.committedSeq, (seq) => tail.push(seq)), true);
  assert.deepEqual(
    tail,
    written.filter(([s]) => s > floor).map(([s]) => s),
  );
  await e.close();
});
