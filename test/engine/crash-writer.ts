/**
 * Child process for crash.test.ts (not a test itself): opens the engine with
 * durability 'always' and writes numbered batches forever, printing each
 * batch id to stdout once its promise has resolved. The parent SIGKILLs it
 * at random moments and checks what survived.
 *
 * Batch `id` (ids are consecutive and written in order):
 *   - puts s0..s3 = id                          (overwritten by every batch: equal values prove atomicity)
 *   - puts u<id>:0..2, g<id>\0a, g<id>\0b       (values carry the id; sizes vary)
 *   - deletes u<id-30>:0..2                     (tombstones)
 *   - drops the group g<id-15>\0                (group drops)
 * So after recovery, with V = the value of s0, the state must be exactly the
 * one after batch V (see expectedKeys in crash.test.ts).
 */
import { DataKey, Engine, Keyring, Op, type WriteOp } from '../../src/engine/index.js';

export const SLOTS = 4;
export const DEL_LAG = 30;
export const DROP_LAG = 15;

/** Deterministic value for a key written by batch `id`. */
export function valueFor(key: string, id: number): string {
  const pad = 40 + ((id * 7919 + key.length * 104729) % 260);
  return `${id}|${key}|${'v'.repeat(pad)}`;
}

export function opsFor(id: number): WriteOp[] {
  const ops: WriteOp[] = [];
  const p = (key: string): void => {
    ops.push({ op: Op.Put, key, value: Buffer.from(valueFor(key, id)), expiresAt: 0 });
  };
  for (let s = 0; s < SLOTS; s++) ops.push({ op: Op.Put, key: `s${s}`, value: Buffer.from(String(id)), expiresAt: 0 });
  for (let j = 0; j < 3; j++) p(`u${id}:${j}`);
  p(`g${id}\u0000a`);
  p(`g${id}\u0000b`);
  if (id > DEL_LAG) for (let j = 0; j < 3; j++) ops.push({ op: Op.Del, key: `u${id - DEL_LAG}:${j}`, value: undefined, expiresAt: 0 });
  if (id > DROP_LAG) ops.push({ op: Op.DropGroup, key: `g${id - DROP_LAG}\u0000`, value: undefined, expiresAt: 0 });
  return ops;
}

async function main(): Promise<void> {
  const [dir, segmentBytes, compactIntervalMs, writers] = process.argv.slice(2);
  const e = await Engine.open({
    dir,
    durability: 'always',
    segmentBytes: Number(segmentBytes),
    compactIntervalMs: Number(compactIntervalMs),
    // Compressed values leave fewer dead bytes per overwrite: a lower bar keeps compactions (and kills during them) happening.
    compactMinDeadBytes: process.env.PITHOS_CRASH_COMPRESS === undefined ? 32 * 1024 : 8 * 1024,
    compactMinDeadRatio: 0.3,
    sweepIntervalMs: 0,
    // Hints built at once or soon after rotation, so kills land inside hint writes too.
    hintDelayMs: Math.floor(Math.random() * 50),
    log: (level, msg) => process.stderr.write(`${level}: ${msg}\n`),
    // Set by crash.test.ts for its encrypted run.
    keyring: process.env.PITHOS_CRASH_KEY === undefined ? undefined : new Keyring(new DataKey(Buffer.from(process.env.PITHOS_CRASH_KEY, 'hex'))),
    // Set by crash.test.ts for the encrypted run and one plain run: kills then land inside compression rewrites too.
    compression: process.env.PITHOS_CRASH_COMPRESS !== undefined,
  });
  const v = await e.read('s0', (b) => Number(b.toString()));
  let next = (v ?? 0) + 1;
  process.stderr.write(`ready at ${next}\n`);
  const writer = async (): Promise<void> => {
    for (;;) {
      const id = next++;
      await e.write(opsFor(id));
      process.stdout.write(`${id}\n`);
    }
  };
  await Promise.all(Array.from({ length: Number(writers) }, writer));
}

// Only run when executed by crash.test.ts with its arguments: the test runner
// also loads every file under dist/test/ (and crash.test.ts imports the
// helpers above), and then there is nothing to do.
if (process.argv[1]?.endsWith('crash-writer.js') && process.argv.length >= 6) {
  main().catch((err) => {
    process.stderr.write(`writer failed: ${String(err)}\n`);
    process.exit(3);
  });
}
