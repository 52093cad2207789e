/**
 * Model-based test: random command sequences against the engine and against
 * a plain Map. After every acknowledged batch the two must agree, including
 * across close/reopen, compaction, expiry and simulated crashes.
 *
 * A crash is simulated as a torn write: batches are written and awaited,
 * the engine is closed, and the newest segment is cut somewhere inside
 * those batches' bytes (possibly followed by garbage, as a torn page would
 * leave). Those batches count as never acknowledged; only the ones whose
 * bytes end before the cut may survive, and every earlier batch must.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import fc from 'fast-check';
import { type Durability, type Engine, type FileOps, MISS, nodeFileOps, Op, StorageFullError, StorageIOError, type WriteOp } from '../../src/engine/index.js';
import { decodeBatch, entrySize, BATCH_HEADER_SIZE } from '../../src/engine/format.js';
import { groupOf } from '../../src/engine/keydir.js';
import { Clock, newestLog, open, rmDir, str, tmpDir } from './helpers.js';

const KEYS = ['a', 'b', 'c', 'd', 'g\u0000x', 'g\u0000y', 'g\u0000z', 'g\u0000s\u0000p', 'g\u0000s\u0000q', 'h\u0000m'];
const GROUPS = ['g\u0000', 'g\u0000s\u0000', 'h\u0000', 'nothing\u0000'];

type OpSpec = { t: 'put'; k: number; len: number; ttl: number } | { t: 'del'; k: number } | { t: 'drop'; g: number };

type Cmd =
  | { t: 'write'; batches: OpSpec[][] }
  | { t: 'read'; k: number }
  | { t: 'advance'; ms: number }
  | { t: 'sweep' }
  | { t: 'compact'; force: boolean }
  | { t: 'compactDuring'; batches: OpSpec[][] }
  | { t: 'reopen' }
  | { t: 'crash'; batches: OpSpec[][]; frac: number; garbage: number[] }
  | { t: 'fail'; batches: OpSpec[][]; call: 'writeAll' | 'fdatasync'; code: 'ENOSPC' | 'EIO' };

const opArb: fc.Arbitrary<OpSpec> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('put' as const),
      k: fc.nat(KEYS.length - 1),
      len: fc.oneof(fc.nat(40), fc.integer({ min: 200, max: 1500 })),
      // 0: no expiry; negative: already expired when written.
      ttl: fc.oneof(
        { weight: 3, arbitrary: fc.constant(0) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 3000 }) },
        { weight: 1, arbitrary: fc.integer({ min: -50, max: 0 }) },
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('del' as const), k: fc.nat(KEYS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('drop' as const), g: fc.nat(GROUPS.length - 1) }) },
);
const batchesArb = fc.array(fc.array(opArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 });

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ t: fc.constant('write' as const), batches: batchesArb }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('read' as const), k: fc.nat(KEYS.length - 1) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 2500 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'sweep' as const }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('compact' as const), force: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('compactDuring' as const), batches: batchesArb }) },
  { weight: 2, arbitrary: fc.constant({ t: 'reopen' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('fail' as const),
      batches: batchesArb,
      call: fc.constantFrom('writeAll' as const, 'fdatasync' as const),
      code: fc.constantFrom('ENOSPC' as const, 'EIO' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('crash' as const),
      batches: batchesArb,
      frac: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      garbage: fc.oneof(fc.constant([] as number[]), fc.array(fc.nat(255), { minLength: 1, maxLength: 300 })),
    }),
  },
);

const configArb = fc.record({
  segmentBytes: fc.constantFrom(2048, 4096, 8192),
  cacheBytes: fc.constantFrom(0, 2048, 1 << 20),
  durability: fc.constantFrom<Durability>('always', 'never', 'everysec'),
});

interface ModelEntry {
  v: string;
  exp: number;
}

class Model {
  m = new Map<string, ModelEntry>();
  apply(ops: readonly WriteOp[]): void {
    for (const o of ops) {
      if (o.op === Op.Put) this.m.set(o.key, { v: (o.value as Buffer).toString(), exp: o.expiresAt });
      else if (o.op === Op.Del) this.m.delete(o.key);
      else for (const k of [...this.m.keys()]) if (groupOf(k) === o.key) this.m.delete(k);
    }
  }
  get(k: string, now: number): string | undefined {
    const e = this.m.get(k);
    if (e === undefined || (e.exp !== 0 && e.exp <= now)) return undefined;
    return e.v;
  }
  liveCount(now: number): number {
    let n = 0;
    for (const k of this.m.keys()) if (this.get(k, now) !== undefined) n++;
    return n;
  }
}

let counter = 0;
const stats: Record<string, number> = {};
function toOps(specs: OpSpec[], now: number): WriteOp[] {
  return specs.map((s): WriteOp => {
    if (s.t === 'put') {
      const key = KEYS[s.k];
      const head = `${++counter}:${key}:`;
      const value = Buffer.from(head + '.'.repeat(Math.max(0, s.len - head.length)));
      return { op: Op.Put, key, value, expiresAt: s.ttl === 0 ? 0 : now + s.ttl };
    }
    if (s.t === 'del') return { op: Op.Del, key: KEYS[s.k], value: undefined, expiresAt: 0 };
    return { op: Op.DropGroup, key: GROUPS[s.g], value: undefined, expiresAt: 0 };
  });
}

function encodedLength(ops: readonly WriteOp[]): number {
  return ops.reduce((a, o) => a + entrySize(Buffer.byteLength(o.key), o.value?.length ?? 0), BATCH_HEADER_SIZE);
}

async function check(e: Engine, model: Model, now: number, where: string): Promise<void> {
  for (const k of KEYS) {
    const want = model.get(k, now);
    assert.equal(await e.read(k, str), want, `${where}: read ${JSON.stringify(k)}`);
    const p = e.peek(k, str);
    if (p !== MISS) assert.equal(p, want, `${where}: peek ${JSON.stringify(k)}`);
    assert.equal(e.has(k), want !== undefined, `${where}: has ${JSON.stringify(k)}`);
  }
  for (const g of GROUPS) {
    const want = [...model.m.keys()]
      .filter((k) => groupOf(k) === g)
      .sort()
      .map((k) => model.get(k, now))
      .filter((v) => v !== undefined);
    assert.deepEqual(await e.scan(g, str), want, `${where}: scan ${JSON.stringify(g)}`);
  }
}

/** node fs whose write or fdatasync fails while `fault` is set (durability never/everysec have no fdatasync per write). */
function faultyOps(state: { fault: { call: string; code: string } | undefined }): FileOps {
  const fail = (call: string): void => {
    const f = state.fault;
    if (f !== undefined && f.call === call) throw Object.assign(new Error(`injected ${f.code}`), { code: f.code });
  };
  return {
    ...nodeFileOps,
    writeAll: async (fd, buf, off, len, pos) => {
      fail('writeAll');
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
    fdatasync: async (fd) => {
      fail('fdatasync');
      return nodeFileOps.fdatasync(fd);
    },
  };
}

async function run(config: { segmentBytes: number; cacheBytes: number; durability: Durability }, cmds: Cmd[]): Promise<void> {
  const dir = tmpDir('prop');
  const clock = new Clock();
  const faults: { fault: { call: string; code: string } | undefined } = { fault: undefined };
  const opts = { ...config, now: clock.now, compactMinDeadBytes: 0, compactMinDeadRatio: 0.3, fileOps: faultyOps(faults) };
  let e = await open(dir, opts);
  const model = new Model();
  try {
    for (let i = 0; i < cmds.length; i++) {
      const c = cmds[i];
      const where = `step ${i} (${c.t})`;
      stats[c.t] = (stats[c.t] ?? 0) + 1;
      switch (c.t) {
        case 'write': {
          const all = c.batches.map((b) => toOps(b, clock.t));
          await Promise.all(all.map((ops) => e.write(ops)));
          for (const ops of all) model.apply(ops);
          break;
        }
        case 'read': {
          const k = KEYS[c.k];
          assert.equal(await e.read(k, str), model.get(k, clock.t), `${where}: ${JSON.stringify(k)}`);
          break;
        }
        case 'advance':
          clock.advance(c.ms);
          break;
        case 'sweep':
          await e.sweep();
          assert.equal(e.stats().keys, model.liveCount(clock.t), `${where}: keys after sweep`);
          break;
        case 'compact':
          await e.compact(c.force);
          assert.equal(e.stats().gcState === 1, false);
          break;
        case 'compactDuring': {
          const gc = e.compact(true);
          const all = c.batches.map((b) => toOps(b, clock.t));
          for (const ops of all) {
            await e.write(ops);
            model.apply(ops);
            await check(e, model, clock.t, where);
          }
          await gc;
          break;
        }
        case 'reopen':
          await e.close();
          e = await open(dir, opts);
          break;
        case 'fail': {
          // Only 'always' syncs each group; elsewhere inject on the write.
          const call = config.durability === 'always' ? c.call : 'writeAll';
          faults.fault = { call, code: c.code };
          const all = c.batches.map((b) => toOps(b, clock.t));
          const results = await Promise.allSettled(all.map((ops) => e.write(ops)));
          faults.fault = undefined;
          for (const r of results) {
            assert.equal(r.status, 'rejected', `${where}: a batch of a failed group was acknowledged`);
            const want = c.code === 'ENOSPC' ? StorageFullError : StorageIOError;
            if (r.status === 'rejected') assert.ok(r.reason instanceof want, `${where}: ${String(r.reason)}`);
          }
          break;
        }
        case 'crash': {
          const all = c.batches.map((b) => toOps(b, clock.t));
          await Promise.all(all.map((ops) => e.write(ops)));
          await e.close();
          // The batches were written as one group at the end of the newest segment.
          const file = newestLog(dir);
          const size = fs.statSync(file).size;
          const lens = all.map(encodedLength);
          const total = lens.reduce((a, b) => a + b, 0);
          const start = size - total;
          assert.ok(start >= 16, `${where}: group not at the end of ${file}`);
          const bytes = fs.readFileSync(file);
          const first = decodeBatch(bytes, start, lens[0]);
          assert.equal(first.entries.length, all[0].length, `${where}: no batch at ${start}`);
          const cut = start + Math.floor(c.frac * total);
          fs.truncateSync(file, cut);
          if (c.garbage.length > 0) fs.appendFileSync(file, Buffer.from(c.garbage));
          let end = start;
          for (let b = 0; b < all.length; b++) {
            end += lens[b];
            if (end <= cut) model.apply(all[b]);
          }
          e = await open(dir, opts);
          break;
        }
      }
      await check(e, model, clock.t, where);
    }
    // Everything acknowledged survives a final clean reopen.
    await e.close();
    e = await open(dir, opts);
    await check(e, model, clock.t, 'final reopen');
  } finally {
    await e.close();
    rmDir(dir);
  }
}

test('the engine agrees with a Map model under random commands, reopens, compaction, expiry and torn writes', async () => {
  await fc.assert(fc.asyncProperty(configArb, fc.array(cmdArb, { minLength: 10, maxLength: 60, size: 'max' }), run), {
    numRuns: Number(process.env.PITHOS_PROPERTY_RUNS ?? 80),
  });
  console.log('commands run:', JSON.stringify(stats));
});
