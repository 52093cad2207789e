/**
 * Storage faults injected through the engine's `fileOps`: ENOSPC / EIO on
 * write and on fdatasync, a failing rotation, and a failing truncate after
 * a failed write. The failing batch and every batch queued behind it must
 * reject with a typed error and leave no trace, in memory or on disk.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Engine, type FileOps, nodeFileOps, StorageFullError, StorageIOError } from '../../src/engine/index.js';
import { backupStream, restoreBackup } from '../../src/store/log/backup.js';
import { Clock, del, drop, LogSink, logFiles, newestLog, open, put, str, scratchDirs } from './helpers.js';

const dir = scratchDirs();

type Call = 'writeAll' | 'fdatasync' | 'ftruncate' | 'open';

/** node fs with switchable faults; `gate` holds a faulting call until released. */
class Faulty {
  fail = new Map<Call, string>();
  /** Only fault calls on files whose path matches (by fd, for fd calls). */
  only: RegExp = /\.log$/;
  calls = 0;
  private paths = new Map<number, string>();
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  entered: (() => void) | undefined;

  hold(): Promise<void> {
    this.gate = new Promise((r) => {
      this.openGate = r;
    });
    return new Promise((r) => {
      this.entered = r;
    });
  }
  release(): void {
    this.openGate?.();
    this.gate = undefined;
  }

  private async maybeFail(call: Call, p: string | undefined): Promise<void> {
    const code = this.fail.get(call);
    if (code === undefined || p === undefined || !this.only.test(p)) return;
    this.calls++;
    if (this.gate !== undefined) {
      this.entered?.();
      await this.gate;
    }
    throw Object.assign(new Error(`${code}: injected ${call} failure`), { code });
  }

  readonly ops: FileOps = {
    ...nodeFileOps,
    open: async (p, flags, mode) => {
      await this.maybeFail('open', p);
      const fd = await nodeFileOps.open(p, flags, mode);
      this.paths.set(fd, p);
      return fd;
    },
    writeAll: async (fd, buf, off, len, pos) => {
      await this.maybeFail('writeAll', this.paths.get(fd));
      // A failed write may still have put some bytes in the file: write half first.
      return nodeFileOps.writeAll(fd, buf, off, len, pos);
    },
    fdatasync: async (fd) => {
      await this.maybeFail('fdatasync', this.paths.get(fd));
      return nodeFileOps.fdatasync(fd);
    },
    ftruncate: async (fd, len) => {
      await this.maybeFail('ftruncate', this.paths.get(fd));
      return nodeFileOps.ftruncate(fd, len);
    },
  };
}

const settle = <T>(p: Promise<T>): Promise<{ ok: true; v: T } | { ok: false; err: unknown }> =>
  p.then(
    (v) => ({ ok: true as const, v }),
    (err: unknown) => ({ ok: false as const, err }),
  );

async function seed(e: Engine): Promise<void> {
  await e.write([put('k1', 'one'), put('k2', 'two'), put('g\u0000a', 'ga'), put('g\u0000b', 'gb')]);
  await e.write([put('k3', 'three')]);
}

async function assertSeeded(e: Engine, where: string): Promise<void> {
  assert.equal(await e.read('k1', str), 'one', where);
  assert.equal(await e.read('k2', str), 'two', where);
  assert.equal(await e.read('k3', str), 'three', where);
  assert.equal(await e.read('new', str), undefined, where);
  assert.deepEqual(await e.scan('g\u0000', str), ['ga', 'gb'], where);
}

for (const [call, code, Err] of [
  ['writeAll', 'ENOSPC', StorageFullError],
  ['writeAll', 'EIO', StorageIOError],
  ['fdatasync', 'EIO', StorageIOError],
  ['fdatasync', 'ENOSPC', StorageFullError],
] as const) {
  test(`${code} on ${call}: the group and everything queued behind it roll back`, async () => {
    const d = dir(`fault-${call}-${code}`);
    const faulty = new Faulty();
    const log = new LogSink();
    const e = await open(d, { fileOps: faulty.ops, log: log.fn });
    await seed(e);
    const sizeBefore = fs.statSync(newestLog(d)).size;

    faulty.fail.set(call, code);
    const entered = faulty.hold();
    // One group of three batches...
    const group = [settle(e.write([put('k1', 'ONE'), del('k2')])), settle(e.write([put('new', 'x'), drop('g\u0000')])), settle(e.write([put('k3', 'THREE')]))];
    // ...which the directory reflects at once.
    assert.equal(e.peek('k1', str), 'ONE');
    assert.equal(e.has('k2'), false);
    await entered; // the group's write (or sync) is now in progress and will fail
    // Batches that arrive meanwhile are queued behind it.
    const queued = [settle(e.write([put('k1', 'queued'), put('new', 'queued')])), settle(e.write([del('k3')]))];
    // Reads keep working while the log is stuck.
    assert.equal(await e.read('k1', str), 'queued');
    faulty.release();
    for (const r of [...group, ...queued]) {
      const s = await r;
      assert.equal(s.ok, false, 'a batch of the failed group resolved');
      if (!s.ok) {
        assert.ok(s.err instanceof Err, `expected ${Err.name}, got ${String(s.err)}`);
      }
    }
    // Nothing of them is visible; the previous values are back.
    await assertSeeded(e, 'after the failure');
    assert.ok(log.has(/log write failed/), log.lines.join('\n'));
    // While the fault lasts, writes keep failing, reads keep working.
    await assert.rejects(e.write([put('k1', 'still failing')]), Err);
    await assertSeeded(e, 'during the fault');
    // Once the fault clears, writes work again.
    faulty.fail.clear();
    await e.write([put('k1', 'after'), put('new', 'after')]);
    assert.equal(await e.read('k1', str), 'after');
    await e.close();
    assert.equal(fs.statSync(newestLog(d)).size > sizeBefore, true);

    const e2 = await open(d);
    assert.equal(await e2.read('k1', str), 'after');
    assert.equal(await e2.read('new', str), 'after');
    assert.equal(await e2.read('k2', str), 'two');
    assert.equal(await e2.read('k3', str), 'three');
    assert.deepEqual(await e2.scan('g\u0000', str), ['ga', 'gb']);
    assert.equal(e2.stats().keys, 6);
    await e2.close();
  });
}

test('a failed fdatasync whose truncate also fails does not resurrect the batch (next write, or close)', async () => {
  for (const then of ['write', 'close'] as const) {
    const d = dir(`tail-${then}`);
    const faulty = new Faulty();
    const log = new LogSink();
    const e = await open(d, { fileOps: faulty.ops, log: log.fn });
    await seed(e);
    const good = fs.statSync(newestLog(d)).size;
    faulty.fail.set('fdatasync', 'EIO');
    faulty.fail.set('ftruncate', 'EIO');
    await assert.rejects(e.write([put('k1', 'ghost'), put('ghost', 'boo')]), StorageIOError);
    // The bytes were written before the sync failed and could not be cut off.
    assert.ok(fs.statSync(newestLog(d)).size > good);
    assert.ok(log.has(/could not truncate/), log.lines.join('\n'));
    faulty.fail.clear();
    if (then === 'write') {
      await e.write([put('k2', 'TWO')]);
      assert.equal(await e.read('k1', str), 'one');
    }
    await e.close();
    const e2 = await open(d);
    assert.equal(await e2.read('ghost', str), undefined, `the rejected batch came back (then ${then})`);
    assert.equal(await e2.read('k1', str), 'one');
    assert.equal(await e2.read('k2', str), then === 'write' ? 'TWO' : 'two');
    await e2.close();
  }
});

test('a failed rotation rejects the batch and leaves the log usable', async () => {
  const d = dir('rotate');
  const faulty = new Faulty();
  const e = await open(d, { fileOps: faulty.ops, segmentBytes: 300 });
  await seed(e);
  const logs = logFiles(d).length;
  faulty.fail.set('writeAll', 'ENOSPC'); // the new segment's header cannot be written
  await assert.rejects(e.write([put('big', 'x'.repeat(400))]), StorageFullError);
  assert.equal(logFiles(d).length, logs, 'a half-created segment was left behind');
  await assertSeeded(e, 'after the failed rotation');
  faulty.fail.set('open', 'EIO');
  faulty.fail.delete('writeAll');
  await assert.rejects(e.write([put('big', 'x'.repeat(400))]), StorageIOError);
  faulty.fail.clear();
  await e.write([put('big', 'y'.repeat(400))]);
  await e.close();
  const e2 = await open(d);
  assert.equal(await e2.read('big', str), 'y'.repeat(400));
  await assertSeeded(e2, 'after reopen');
  await e2.close();
});

test('a write that fails while compaction copies the run does not lose the restored version', async () => {
  const d = dir('gcfault');
  const faulty = new Faulty();
  const clock = new Clock();
  const e = await open(d, { fileOps: faulty.ops, segmentBytes: 4096, now: clock.now });
  // Many versions, so the immutable segments hold plenty of dead data.
  for (let r = 0; r < 20; r++) {
    const ops = [];
    for (let i = 0; i < 10; i++) ops.push(put(`k${i}`, `r${r}:`.padEnd(100, '.')));
    await e.write(ops);
  }
  const want = new Map<string, string>();
  for (let i = 0; i < 10; i++) want.set(`k${i}`, `r19:`.padEnd(100, '.'));
  // Hold a failing write (overwriting every key) while compaction runs.
  faulty.fail.set('writeAll', 'EIO');
  const entered = faulty.hold();
  const failing = settle(e.write(Array.from({ length: 10 }, (_, i) => put(`k${i}`, 'doomed'))));
  await entered;
  const gc = e.compact(true);
  await new Promise((r) => setTimeout(r, 20));
  faulty.release();
  const r = await failing;
  assert.equal(r.ok, false);
  faulty.fail.clear();
  await gc;
  await e.compact(true);
  for (const [k, v] of want) assert.equal(await e.read(k, str), v, k);
  await e.close();
  const e2 = await open(d, { segmentBytes: 4096 });
  for (const [k, v] of want) assert.equal(await e2.read(k, str), v, `${k} after reopen`);
  await e2.close();
});

test('errors from the directory lock and from a closed engine are typed', async () => {
  const d = dir('closed');
  const e = await open(d);
  await e.write([put('a', 'b')]);
  await e.close();
  await assert.rejects(e.write([put('a', 'c')]), { code: 'ENGINE_CLOSED' });
  // A LOCK file of a live process (our parent, say) refuses a second opener.
  fs.writeFileSync(path.join(d, 'LOCK'), `${process.ppid}\n`);
  await assert.rejects(open(d), { code: 'DIR_LOCKED' });
  // A stale one (no such process) is taken over.
  fs.writeFileSync(path.join(d, 'LOCK'), '2147483646\n');
  const e2 = await open(d);
  assert.equal(await e2.read('a', str), 'b');
  await e2.close();
});

test('a snapshot holding a version whose fsync failed finds it gone, not bytes past the cut tail', async () => {
  // The version's bytes were written (so it pointed into the segment and kept
  // only its decoded form), then fdatasync failed: the batch is undone and the
  // tail cut. A snapshot taken meanwhile still holds that version; reading it
  // with another decoder must say it is gone (try again), not read the cut tail.
  const d = dir('fault-snapshot-fsync');
  const faulty = new Faulty();
  const e = await open(d, { fileOps: faulty.ops, durability: 'always' });
  await e.write([put('g\u0000a', 'A')]);
  const json = (b: Buffer): unknown => JSON.parse(b.toString());
  faulty.fail.set('fdatasync', 'EIO');
  const entered = faulty.hold();
  const w = e.write([{ ...put('g\u0000b', '{"v":1}'), memo: { v: 1 }, decoder: json as never }]);
  w.catch(() => {});
  await entered; // written, its fsync held
  const snap = e.snapshot('g\u0000', str);
  assert.equal(snap.length, 2);
  faulty.release();
  await assert.rejects(w, StorageIOError);
  faulty.fail.delete('fdatasync');
  await assert.rejects(
    Promise.resolve().then(() => snap.read(0, 2)),
    (err: unknown) => err instanceof StorageIOError && /try again/.test((err as Error).message),
  );
  snap.release();
  assert.deepEqual(await e.scan('g\u0000', str), ['A']);
  await e.close();
});

test('an online backup taken while a batch waits for its fsync leaves that batch out when the fsync fails', async () => {
  // The batch's bytes are in the file, its fdatasync is held and then fails:
  // the write is rejected and undone. A backup taken meanwhile must hold what
  // was acknowledged, not the rejected batch (restoring it would bring back a
  // write its client was told changed nothing), and must not fail for a tail
  // cut off after it began.
  const d = dir('fault-backup-fsync');
  const faulty = new Faulty();
  const e = await open(d, { fileOps: faulty.ops, durability: 'always' });
  await seed(e);
  faulty.fail.set('fdatasync', 'EIO');
  const entered = faulty.hold();
  const w = settle(e.write([put('k1', 'ghost'), put('ghost', 'boo')]));
  await entered; // written, its fsync held
  const parts: Buffer[] = [];
  for await (const part of backupStream(e)) parts.push(part);
  faulty.release();
  const r = await w;
  assert.equal(r.ok, false, 'the batch whose fsync failed was acknowledged');
  faulty.fail.clear();
  await assertSeeded(e, 'after the failed fsync');
  await e.close();
  const file = path.join(dir('fault-backup-fsync-file'), 'b.pithos');
  fs.writeFileSync(file, Buffer.concat(parts));
  const target = path.join(dir('fault-backup-fsync-restore'), 'data');
  await restoreBackup(file, target, () => {});
  const e2 = await open(target);
  assert.equal(await e2.read('ghost', str), undefined, 'the backup holds the batch that was rolled back');
  await assertSeeded(e2, 'restored');
  await e2.close();
});
