/**
 * Child process for lock.test.ts (not a test itself): waits for commands on
 * stdin so that several of them can be told to open the same directory at
 * the same instant.
 *   open <dir>  -> Engine.open; prints "won" or "lost <code>"
 *   close       -> closes the engine if this process opened it; prints "closed"
 * Prints "ready" once loaded, so the parent can start every racer first.
 */
import * as readline from 'node:readline';
import { Engine } from '../../src/engine/index.js';

async function main(): Promise<void> {
  let engine: Engine | undefined;
  const rl = readline.createInterface({ input: process.stdin });
  process.stdout.write('ready\n');
  for await (const line of rl) {
    const [cmd, arg] = line.split(' ');
    if (cmd === 'open') {
      try {
        engine = await Engine.open({ dir: arg, durability: 'never', sweepIntervalMs: 0, compactIntervalMs: 0 });
        process.stdout.write('won\n');
      } catch (err) {
        process.stdout.write(`lost ${String((err as { code?: string }).code ?? err)}\n`);
      }
    } else if (cmd === 'close') {
      await engine?.close();
      engine = undefined;
      process.stdout.write('closed\n');
    }
  }
  await engine?.close();
}

// Only when spawned by lock.test.ts: the test runner also loads this file.
if (process.argv[1]?.endsWith('lock-racer.js') && process.argv[2] === 'child') {
  main().catch((err) => {
    process.stderr.write(`racer failed: ${String(err)}\n`);
    process.exit(3);
  });
}
