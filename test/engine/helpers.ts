/**
 * Shared helpers for the engine tests (not a test file itself).
 */
import { after } from 'node:test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Engine, type EngineOptions, nodeFileOps, Op, type WriteOp } from '../../src/engine/index.js';
import { Probe, probeBatch, readSeq, SEALED_FORMAT_VERSION, SEALED_SEGMENT_HEADER_SIZE, SEGMENT_HEADER_SIZE } from '../../src/engine/format.js';
import { TAG_BYTES } from '../../src/engine/seal.js';
import { groupOf } from '../../src/engine/keydir.js';
import { deepEqual, equal } from 'node:assert/strict';
import { rng } from '../helpers/rng.js';
export { rng };

export const str = (b: Buffer): string => b.toString('utf8');

/** A fresh temporary directory, removed by the returned cleanup. */
export function tmpDir(tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `pithos-${tag}-`));
}

/** A maker of temporary directories that are all removed after the file's tests. */
export function scratchDirs(): (tag: string) => string {
  const dirs: string[] = [];
  after(() => dirs.forEach(rmDir));
  return (tag: string): string => {
    const d = tmpDir(tag);
    dirs.push(d);
    return d;
  };
}

export function rmDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Collects log lines so tests can assert on them. */
export class LogSink {
  lines: string[] = [];
  readonly fn = (level: 'info' | 'warn' | 'error', msg: string): void => {
    this.lines.push(`${level}: ${msg}`);
  };
  has(re: RegExp): boolean {
    return this.lines.some((l) => re.test(l));
  }
  clear(): void {
    this.lines = [];
  }
}

export async function open(dir: string, opts: Partial<EngineOptions> = {}): Promise<Engine> {
  // Hints at once: these tests check what recovery does with them (the delay has its own test).
  return Engine.open({ dir, sweepIntervalMs: 0, compactIntervalMs: 0, hintDelayMs: 0, ...opts });
}

export function put(key: string, value: string | Buffer, expiresAt = 0): WriteOp {
  return { op: Op.Put, key, value: typeof value === 'string' ? Buffer.from(value) : value, expiresAt };
}

export function del(key: string): WriteOp {
  return { op: Op.Del, key, value: undefined, expiresAt: 0 };
}

export function drop(group: string): WriteOp {
  return { op: Op.DropGroup, key: group, value: undefined, expiresAt: 0 };
}

/** Segment files (`*.log`) of a data directory, oldest first. */
export function logFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => /^\d{16}\.log$/.test(n))
    .sort();
}

export function hintFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => /^\d{16}\.hint$/.test(n))
    .sort();
}

/** The newest log segment (the one appended to). */
export function newestLog(dir: string): string {
  const logs = logFiles(dir).filter((n) => Number(n.slice(0, 16)) % 1024 === 0);
  return path.join(dir, logs[logs.length - 1]);
}

export function totalLogBytes(dir: string): number {
  let n = 0;
  for (const f of logFiles(dir)) n += fs.statSync(path.join(dir, f)).size;
  return n;
}

/** Start offsets and lengths of every batch in a segment file (which must be intact). */
export function batchOffsets(file: string): Array<[number, number]> {
  const buf = fs.readFileSync(file);
  const out: Array<[number, number]> = [];
  const o = [0];
  const sealed = buf[4] === SEALED_FORMAT_VERSION;
  let p = sealed ? SEALED_SEGMENT_HEADER_SIZE : SEGMENT_HEADER_SIZE;
  while (p < buf.length) {
    const r = probeBatch(buf, p, buf.length, o, sealed ? TAG_BYTES : 0);
    if (r !== Probe.Ok) throw new Error(`${file}: no valid batch at ${p} (${r})`);
    out.push([p, o[0]]);
    p += o[0];
  }
  return out;
}

/** Flips bits of one byte of a file in place. */
export function flipByte(file: string, pos: number, mask = 0xff): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, pos);
    b[0] ^= mask;
    fs.writeSync(fd, b, 0, 1, pos);
  } finally {
    fs.closeSync(fd);
  }
}

/** Waits until the engine has written hint files for every segment but the active one. */
export async function waitForHints(dir: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const logs = logFiles(dir);
    const hints = new Set(hintFiles(dir).map((h) => h.slice(0, 16)));
    const missing = logs.slice(0, -1).filter((l) => !hints.has(l.slice(0, 16)));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`hints still missing for ${missing.join(', ')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A mutable clock for `now`. */
export class Clock {
  t = 1_700_000_000_000;
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Bytes read per file path, counted through a FileOps wrapper. */
export function countingFileOps(): { ops: typeof nodeFileOps; readBytes: Map<string, number>; opened: string[] } {
  const byFd = new Map<number, string>();
  const readBytes = new Map<string, number>();
  const opened: string[] = [];
  const ops: typeof nodeFileOps = {
    ...nodeFileOps,
    async open(p, flags, mode) {
      const fd = await nodeFileOps.open(p, flags, mode);
      byFd.set(fd, p);
      opened.push(p);
      return fd;
    },
    async read(fd, buf, off, len, pos) {
      const n = await nodeFileOps.read(fd, buf, off, len, pos);
      const p = byFd.get(fd) ?? `fd${fd}`;
      readBytes.set(p, (readBytes.get(p) ?? 0) + n);
      return n;
    },
  };
  return { ops, readBytes, opened };
}

// ---- a replayable history of batches ---------------------------------------

export interface Batch {
  seq: number;
  ops: WriteOp[];
}

/** Applies batches in order to a plain Map, skipping the given sequence numbers. */
export function replay(batches: readonly Batch[], skip: ReadonlySet<number> = new Set()): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (const b of batches) {
    if (skip.has(b.seq)) continue;
    applyOps(m, b.ops);
  }
  return m;
}

export function applyOps(m: Map<string, Buffer>, ops: readonly WriteOp[]): void {
  for (const o of ops) {
    if (o.op === Op.Put) m.set(o.key, o.value as Buffer);
    else if (o.op === Op.Del) m.delete(o.key);
    else for (const k of [...m.keys()]) if (groupOf(k) === o.key) m.delete(k);
  }
}

export const KEYS = [
  ...Array.from({ length: 16 }, (_, i) => `key-${i}`),
  ...Array.from({ length: 8 }, (_, i) => `tbl\u0000row-${i}`),
  ...Array.from({ length: 4 }, (_, i) => `tbl\u0000sub\u0000${i}`),
  'ünï\u0000cødé',
];
export const GROUPS = ['tbl\u0000', 'tbl\u0000sub\u0000', 'ünï\u0000'];

/** Writes `n` random batches (awaiting each) and returns them with their sequence numbers. */
export async function writeHistory(e: Engine, n: number, seed: number, tag = 'v'): Promise<Batch[]> {
  const r = rng(seed);
  const out: Batch[] = [];
  for (let i = 0; i < n; i++) {
    const ops: WriteOp[] = [];
    const count = 1 + Math.floor(r() * 4);
    for (let j = 0; j < count; j++) {
      const x = r();
      if (x < 0.72) {
        const key = KEYS[Math.floor(r() * KEYS.length)];
        ops.push(put(key, `${tag}${i}.${j}:${key}:${'#'.repeat(Math.floor(r() * 300))}`));
      } else if (x < 0.93) {
        ops.push(del(KEYS[Math.floor(r() * KEYS.length)]));
      } else {
        ops.push(drop(GROUPS[Math.floor(r() * GROUPS.length)]));
      }
    }
    const seq = e.upcomingSeq;
    await e.write(ops);
    out.push({ seq, ops });
  }
  return out;
}

/** Asserts that the engine holds exactly `model` (for keys from `keys`, plus the key count). */
export async function assertState(e: Engine, model: Map<string, Buffer>, keys: Iterable<string> = KEYS, msg = ''): Promise<void> {
  for (const k of keys) {
    const got = await e.read(k, str);
    const want = model.get(k);
    equal(got, want === undefined ? undefined : want.toString('utf8'), `${msg} key ${JSON.stringify(k)}`);
  }
  equal(e.stats().keys, model.size, `${msg} key count`);
  for (const g of GROUPS) {
    const want = [...model.keys()]
      .filter((k) => groupOf(k) === g)
      .sort()
      .map((k) => (model.get(k) as Buffer).toString());
    deepEqual(await e.scan(g, str), want, `${msg} scan of ${JSON.stringify(g)}`);
  }
}

/** Sequence numbers of the batches stored in a segment file. */
export function seqsIn(file: string): Array<{ seq: number; pos: number; len: number }> {
  const buf = fs.readFileSync(file);
  return batchOffsets(file).map(([pos, len]) => ({ seq: readSeq(buf, pos + 8), pos, len }));
}
