/**
 * kill -9 at random moments: a child process writes numbered batches with
 * durability 'always' and prints each id once acknowledged; the parent
 * SIGKILLs it (during writes, rotations, hint writes, compactions, or its own
 * recovery), reopens the directory and proves that
 *   - every acknowledged batch is present,
 *   - the state is exactly the one after some batch V (no half batch, no
 *     batch after a missing one), and
 *   - the directory opens without repair.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataKey, Engine, Keyring, segmentKeys } from '../../src/engine/index.js';
import { DEL_LAG, DROP_LAG, SLOTS, valueFor } from './crash-writer.js';
import { logFiles, rmDir, str, tmpDir } from './helpers.js';

const WRITER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crash-writer.js');
const BUDGET_MS = Number(process.env.PITHOS_CRASH_MS ?? 35_000);

interface Life {
  acked: number;
  stderr: string;
  killedAfterAck: boolean;
}

/** The key of the encrypted run (crash-writer.ts reads it from PITHOS_CRASH_KEY; PITHOS_CRASH_COMPRESS turns compression on). */
const KEY_HEX = 'c3'.repeat(32);

/**
 * One life of the writer, SIGKILLed `killDelay` ms after it starts (beforeFirstAck) or after its
 * first acknowledged batch; in the second case not before it has acknowledged `minAcks` batches
 * either, so that on a busy machine each life still moves the log on (the checks after the loop
 * need compactions, which need enough batches written).
 */
function runAndKill(
  dir: string,
  seg: number,
  writers: number,
  killDelay: number,
  beforeFirstAck: boolean,
  sealed: boolean,
  compressed: boolean,
  minAcks: number,
): Promise<Life> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (sealed) env.PITHOS_CRASH_KEY = KEY_HEX;
    if (compressed) env.PITHOS_CRASH_COMPRESS = '1';
    const child = spawn(process.execPath, [WRITER, dir, String(seg), '50', String(writers)], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let acked = 0;
    let acks = 0;
    let partial = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    let sawAck = false;
    let due = false;
    const kill = (): void => {
      child.kill('SIGKILL');
    };
    const whenAcked = (): void => {
      due = true;
      if (acks >= minAcks) kill();
    };
    if (beforeFirstAck) timer = setTimeout(kill, killDelay);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() as string;
      for (const l of lines) {
        const id = Number(l);
        if (Number.isInteger(id) && id > acked) acked = id;
      }
      acks += lines.length;
      if (!sawAck && lines.length > 0) {
        sawAck = true;
        if (!beforeFirstAck) timer = setTimeout(whenAcked, killDelay);
      }
      if (due && acks >= minAcks) kill();
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => {
      stderr += c;
    });
    // A writer that never acks within 15 s is stuck: fail rather than hang.
    const guard = setTimeout(kill, 15_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      if (timer !== undefined) clearTimeout(timer);
      if (signal !== 'SIGKILL') reject(new Error(`writer exited by itself (code ${code}): ${stderr}`));
      else resolve({ acked, stderr, killedAfterAck: sawAck });
    });
  });
}

/** Checks that the state is exactly the one after batch V (the value of the slots); returns V. */
async function verify(e: Engine, acked: number, where: string): Promise<number> {
  const slots: Array<string | undefined> = [];
  for (let s = 0; s < SLOTS; s++) slots.push(await e.read(`s${s}`, str));
  const V = slots[0] === undefined ? 0 : Number(slots[0]);
  for (let s = 1; s < SLOTS; s++) assert.equal(slots[s], slots[0], `${where}: slots disagree (half a batch): ${slots.join(',')}`);
  assert.ok(V >= acked, `${where}: acknowledged batch ${acked} lost (state is after batch ${V})`);
  let expected = V > 0 ? SLOTS : 0;
  for (let i = Math.max(1, V - 200); i <= V + 50; i++) {
    const uWant = i <= V && i > V - DEL_LAG;
    const gWant = i <= V && i > V - DROP_LAG;
    for (let j = 0; j < 3; j++) assert.equal(e.has(`u${i}:${j}`), uWant, `${where}: u${i}:${j} (V=${V})`);
    assert.equal(e.has(`g${i}\u0000a`), gWant, `${where}: g${i}\\0a (V=${V})`);
    assert.equal(e.has(`g${i}\u0000b`), gWant, `${where}: g${i}\\0b (V=${V})`);
    if (uWant) expected += 3;
    if (gWant) expected += 2;
  }
  // Nothing older than the window survived either.
  assert.equal(e.stats().keys, expected, `${where}: key count (V=${V})`);
  // Values are intact (these come from disk: recovery caches nothing).
  for (let i = Math.max(1, V - DROP_LAG + 1); i <= V; i++) {
    assert.equal(await e.read(`g${i}\u0000b`, str), valueFor(`g${i}\u0000b`, i));
    assert.equal(await e.read(`u${i}:2`, str), valueFor(`u${i}:2`, i));
  }
  assert.deepEqual(await e.scan(`g${V}\u0000`, str), V > 0 ? [valueFor(`g${V}\u0000a`, V), valueFor(`g${V}\u0000b`, V)] : []);
  return V;
}

for (const [sealed, compressed] of [
  [false, false],
  [false, true],
  [true, true],
])
  test(`SIGKILL at random moments never loses an acknowledged batch nor leaves half of one${sealed ? ' (encrypted and compressed)' : compressed ? ' (compressed)' : ''}`, async () => {
    const dir = tmpDir('crash');
    const keyring = sealed ? new Keyring(new DataKey(Buffer.from(KEY_HEX, 'hex'))) : undefined;
    const started = Date.now();
    let lives = 0;
    let killsAfterAck = 0;
    let maxSegments = 0;
    let lastV = 0;
    let compactions = 0;
    let livesWithCompaction = 0;
    let maxV = 0;
    let recodes = 0;
    const seed = Number(process.env.PITHOS_CRASH_SEED ?? Date.now() % 1_000_000);
    let s = seed;
    const rand = (): number => {
      s = (s * 1103515245 + 12345) % 2147483648;
      return s / 2147483648;
    };
    // What the checks after the loop need: lives that spanned a compaction and kills after
    // acknowledged batches. On a busy machine a life takes longer, so the loop goes on past
    // its budget (60 s at most) until they have happened, rather than stopping short of them.
    const enough = (): boolean => compactions > 0 && lives >= 10 && killsAfterAck >= 5 && maxV > 100;
    const going = (): boolean => Date.now() - started < BUDGET_MS || (!enough() && Date.now() - started < BUDGET_MS + 60_000);
    try {
      while (going()) {
        // Lives of a few hundred ms on a loaded machine can all end before the writer's first
        // compaction, and every life then reopens more segments than the last, so fewer get that
        // far: once 20 lives have gone by without one, a life lasts 1-3 s after its first ack.
        const starved = compactions === 0 && lives >= 20;
        const early = !starved && rand() < 0.2;
        const delay = starved ? 1000 + Math.floor(rand() * 2000) : early ? Math.floor(rand() * 250) : Math.floor(rand() * 300);
        const seg = rand() < 0.5 ? 16 * 1024 : 64 * 1024;
        const writers = rand() < 0.3 ? 1 : 8;
        const minAcks = Math.floor(rand() * 40);
        const life = await runAndKill(dir, seg, writers, delay, early, sealed, compressed, minAcks);
        recodes += (life.stderr.match(/compressed \d{16}\.log:/g) ?? []).length;
        lives++;
        compactions += (life.stderr.match(/compacted \d+ segment/g) ?? []).length;
        if (/compacted/.test(life.stderr)) livesWithCompaction++;
        if (life.killedAfterAck) killsAfterAck++;
        assert.ok(!/writer failed|CorruptionError|corrupt data/.test(life.stderr), life.stderr);
        const where = `life ${lives} (seed ${seed}, acked ${life.acked}, kill ${early ? 'early' : `after first ack +${delay} ms and ${minAcks} acks`})`;
        let e: Engine;
        try {
          e = await Engine.open({ dir, sweepIntervalMs: 0, compactIntervalMs: 0, keyring });
        } catch (err) {
          assert.fail(`${where}: reopen failed: ${String(err)}\nwriter stderr:\n${life.stderr.slice(-3000)}`);
        }
        try {
          const V = await verify(e, life.acked, where);
          assert.ok(V >= lastV, `${where}: state went back from ${lastV} to ${V}`);
          lastV = V;
          maxV = Math.max(maxV, V);
        } finally {
          await e.close();
        }
        maxSegments = Math.max(maxSegments, logFiles(dir).length);
        assert.deepEqual(
          fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')),
          [],
        );
      }
      console.log(
        `crash test${sealed ? ' (encrypted)' : ''}${compressed ? ' (compressed)' : ''}: ${lives} kills (${killsAfterAck} after the first ack), ${maxV} batches, ` +
          `up to ${maxSegments} segments, ${compactions} compactions in ${livesWithCompaction} lives, ${recodes} segments compressed, seed ${seed}`,
      );
      assert.ok(compactions > 0, 'the writer never compacted');
      assert.ok(lives >= 10, `only ${lives} kills`);
      assert.ok(killsAfterAck >= 5);
      assert.ok(maxV > 100, 'the writer hardly wrote anything');
      // Kills can land inside the compression rewrites only if there were some.
      assert.equal(recodes > 0, compressed, `${recodes} segments compressed`);
      if (keyring !== undefined) {
        const keys = await segmentKeys(dir);
        assert.ok(
          keys.every((k) => k.keyId === keyring.current.idHex),
          `a segment not sealed: ${JSON.stringify(keys)}`,
        );
      }
    } finally {
      rmDir(dir);
    }
  });
