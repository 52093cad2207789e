/**
 * Data at rest: what encryption and compression cost the engine
 * (docs/benchmarks-history.md, "Encryption and compression at rest"). Variants are
 * run alternately (plain, sealed, compressed, sealed + compressed, and again)
 * so a machine whose load drifts hurts all of them alike:
 *   - durable batches (one 1 KiB put each, 64 writers, fdatasync): batches/s,
 *     the process CPU per batch, on the write path and with the background
 *     compression of the segments filled included;
 *   - recovery of N keys (100-byte values, every segment scanned): Engine.open
 *     time, in a fresh child process each.
 *
 *   node dist/bench/rest.js [--keys 1000000 (0: no recovery)] [--seconds 3] [--rounds 2]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataKey, Engine, Keyring, Op, type EngineOptions } from '../src/engine/index.js';
import { jsonDocument } from './compression.js';
import { rng } from '../test/helpers/rng.js';

const KEY = new Keyring(new DataKey(Buffer.alloc(32, 0x5c)));
type Variant = 'plain' | 'sealed' | 'compressed' | 'sealed+compressed';
const VARIANTS: Variant[] = ['plain', 'sealed', 'compressed', 'sealed+compressed'];
const opts = (v: Variant): Partial<EngineOptions> => ({
  keyring: v.startsWith('sealed') ? KEY : undefined,
  compression: v.endsWith('compressed'),
});

/**
 * Durable 1 KiB puts from 64 writers for `seconds`, in 4 MiB segments so that
 * segments fill during the run: CPU per batch on the write path, then with
 * the background rewrite of every filled segment (compression, recode.ts,
 * started once the writers stop) included, and the bytes of log left on disk.
 */
async function durable(v: Variant, seconds: number, json: boolean): Promise<{ rate: number; cpuUs: number; allUs: number; bytesPerBatch: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-rest-'));
  // Filled segments wait out the hint delay (longer than the run) before they are compressed, as in the server.
  const e = await Engine.open({
    dir,
    durability: 'always',
    sweepIntervalMs: 0,
    compactIntervalMs: 0,
    segmentBytes: 4 * 1024 * 1024,
    hintDelayMs: 3_600_000,
    ...opts(v),
  });
  const r = rng(1);
  const docs = Array.from({ length: 256 }, (_, i) => (json ? jsonDocument(r, i).subarray(0, 1024) : Buffer.alloc(1024, 97 + (i % 26))));
  let n = 0;
  let stop = false;
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      await e.write([{ op: Op.Put, key: `R/k${w}-${i % 1000}`, value: docs[(w + i) % docs.length], expiresAt: 0 }]);
      n++;
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const ws = Array.from({ length: 64 }, (_, w) => writer(w));
  await new Promise((res) => setTimeout(res, seconds * 1000));
  stop = true;
  await Promise.all(ws);
  const dt = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(cpu0);
  await e.recodesDone();
  const all = process.cpuUsage(cpu0);
  await e.close();
  const bytes = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .reduce((a, f) => a + statSync(join(dir, f)).size, 0);
  rmSync(dir, { recursive: true, force: true });
  return { rate: n / dt, cpuUs: (c.user + c.system) / n, allUs: (all.user + all.system) / n, bytesPerBatch: bytes / n };
}

async function fill(v: Variant, keys: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-rest-rec-'));
  const e = await Engine.open({ dir, durability: 'never', sweepIntervalMs: 0, compactIntervalMs: 0, hintDelayMs: 3_600_000, ...opts(v) });
  const val = Buffer.alloc(100, 120);
  for (let i = 0; i < keys; i += 1000) {
    const ops = [];
    for (let j = i; j < Math.min(keys, i + 1000); j++) ops.push({ op: Op.Put, key: `R/key${String(j).padStart(9, '0')}`, value: val, expiresAt: 0 });
    await e.write(ops.map((o) => ({ ...o, op: Op.Put as Op })));
  }
  await e.close();
  return dir;
}

function recoverMs(v: Variant, dir: string): number {
  const r = spawnSync(process.execPath, [process.argv[1], '--recover', dir, v], { encoding: 'utf8' });
  const m = /recovered in ([\d.]+) ms/.exec(r.stdout);
  if (m === null) throw new Error(`recovery child failed: ${r.stdout}${r.stderr}`);
  return Number(m[1]);
}

async function main(): Promise<void> {
  const a = process.argv.slice(2);
  if (a[0] === '--recover') {
    const t0 = performance.now();
    const e = await Engine.open({ dir: a[1], sweepIntervalMs: 0, compactIntervalMs: 0, hintDelayMs: 3_600_000, ...opts(a[2] as Variant) });
    const ms = performance.now() - t0;
    console.log(`recovered in ${ms.toFixed(0)} ms, ${e.stats().keys} keys`);
    await e.close();
    return;
  }
  const arg = (n: string, d: number): number => (a.includes(n) ? Number(a[a.indexOf(n) + 1]) : d);
  const keys = arg('--keys', 1_000_000);
  const seconds = arg('--seconds', 3);
  const rounds = arg('--rounds', 2);
  console.log('CPU µs per batch: on the write path / with the background compression of the filled segments included; bytes of log left per batch');
  console.log(
    `| round | variant | durable 1 KiB batches/s (64 writers) | CPU µs per batch | durable 1 KiB JSON batches/s | CPU µs per batch | JSON log, bytes per batch |`,
  );
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (let r = 1; r <= rounds; r++) {
    for (const v of VARIANTS) {
      const x = await durable(v, seconds, false);
      const j = await durable(v, seconds, true);
      const us = (d: { cpuUs: number; allUs: number }): string => `${d.cpuUs.toFixed(1)} / ${d.allUs.toFixed(1)}`;
      console.log(`| ${r} | ${v} | ${x.rate.toFixed(0)} | ${us(x)} | ${j.rate.toFixed(0)} | ${us(j)} | ${j.bytesPerBatch.toFixed(0)} |`);
    }
  }
  if (keys === 0) return;
  console.log(`\n| round | variant | recovery of ${keys} keys, all scanned (ms) |`);
  console.log('|---|---|---:|');
  const dirs = new Map<Variant, string>();
  for (const v of ['plain', 'sealed'] as Variant[]) dirs.set(v, await fill(v, keys));
  for (let r = 1; r <= rounds; r++) {
    for (const v of ['plain', 'sealed'] as Variant[]) console.log(`| ${r} | ${v} | ${recoverMs(v, dirs.get(v) as string)} |`);
  }
  for (const d of dirs.values()) rmSync(d, { recursive: true, force: true });
}

void main();
