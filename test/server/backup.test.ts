/**
 * Online backup (docs/operations.md, "Backup and restore"): taken under a
 * concurrent write load, restored into a new data directory, it holds every
 * write acknowledged before the backup began and none sent after its answer
 * started; restore refuses damaged files and non-empty directories.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { nodeFileOps } from '../../src/engine/index.js';
import { restoreBackup } from '../../src/store/log/log-store.js';
import { fetchBackup } from '../helpers/backup.js';
import { PithosServer, STORE, expectError, expectSuccess, rawRequest, runCli, uniq, untilCount } from '../helpers/server.js';

let srv: PithosServer;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-backup-'));

before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

test(
  'a backup under concurrent writes holds exactly what was acknowledged before it began',
  { skip: STORE === 'postgres' ? "the shared store is backed up with the database's own tools (docs/scaling.md); see the next test" : false },
  async () => {
    const prefix = uniq('bk');
    const table = uniq('bkt');
    expectSuccess(await srv.req('PUT', `/tables/${table}`), 201, 'table created successfully');
    // Some data before the load, so the backup spans more than the load.
    for (let i = 0; i < 200; i++)
      expectSuccess(await srv.req('PUT', `/records/${prefix}-pre-${i}`, { record: { i, pad: 'p'.repeat(500) } }), 201, 'record created successfully');

    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    interface W {
      name: string;
      sentAt: number;
      ackedAt: number | undefined;
    }
    const writes: W[] = [];
    let stop = false;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (!stop) {
        const w: W = { name: `${prefix}-${next++}`, sentAt: performance.now(), ackedAt: undefined };
        writes.push(w);
        const r = await rawRequest({
          port: srv.port,
          method: 'PUT',
          path: `/records/${w.name}`,
          agent,
          headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json' },
          body: Buffer.from(JSON.stringify({ record: { n: w.name } })),
        });
        assert.equal(r.status, 201, r.raw);
        w.ackedAt = performance.now();
      }
    };
    const workers = Array.from({ length: 12 }, worker);
    // Enough writes on each side of the backup to judge it by, however long a busy machine takes.
    const ended = Promise.all(workers);
    await untilCount('writes acknowledged before the backup', () => writes.filter((w) => w.ackedAt !== undefined).length, 60, { ended });
    const began = performance.now();
    const b = await fetchBackup(srv);
    await untilCount('writes sent after the backup answered', () => writes.filter((w) => w.sentAt > b.headersAt).length, 60, { ended });
    stop = true;
    await Promise.all(workers);
    agent.destroy();
    assert.equal(b.status, 200, b.body.toString('utf8', 0, 300));
    assert.equal(b.type, 'application/octet-stream');

    const file = path.join(tmp, 'load.backup');
    writeFileSync(file, b.body);
    const dir = path.join(tmp, 'restored');
    const r = await runCli(['restore', '--from', file, '--data-dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^restored \d+ segment file\(s\)/);

    const restored = await PithosServer.start({ dataDir: dir, testClock: false });
    try {
      const mustHave = writes.filter((w) => w.ackedAt !== undefined && w.ackedAt < began);
      const mustLack = writes.filter((w) => w.sentAt > b.headersAt);
      assert.ok(mustHave.length > 50 && mustLack.length > 50, `load too small to judge: ${mustHave.length} before, ${mustLack.length} after`);
      for (const w of mustHave) {
        expectSuccess(await restored.req('GET', `/records/${w.name}`), 200, 'record queried successfully', { n: w.name });
      }
      for (const w of mustLack) expectError(await restored.req('GET', `/records/${w.name}`), 404);
      for (let i = 0; i < 200; i += 37) {
        expectSuccess(await restored.req('GET', `/records/${prefix}-pre-${i}`), 200, 'record queried successfully', { i, pad: 'p'.repeat(500) });
      }
      expectSuccess(await restored.req('GET', `/tables/${table}`), 200, 'table queried successfully', {});
      process.stdout.write(
        `# backup: ${b.body.length} bytes; ${mustHave.length} writes acknowledged before it, all present; ${mustLack.length} sent after its answer began, all absent; ${writes.length - mustHave.length - mustLack.length} in between\n`,
      );
    } finally {
      await restored.close();
    }
  },
);

test(
  'restore refuses a damaged or truncated file and a non-empty directory; the CLI backup writes a whole file or none',
  { skip: STORE === 'postgres' ? 'the shared store has no GET /backup' : false },
  async () => {
    expectSuccess(await srv.req('PUT', `/records/${uniq('one')}`, { record: { a: 1 } }), 201, 'record created successfully');
    const out = path.join(tmp, 'cli.backup');
    const b = await runCli(['backup', '--out', out, '--url', `http://127.0.0.1:${srv.port}`, '--token', srv.token]);
    assert.equal(b.code, 0, b.stderr);
    const bytes = readFileSync(out);
    assert.match(bytes.subarray(-80).toString('latin1'), /\ncrc32 [0-9a-f]{8}\n$/);

    const damaged = Buffer.from(bytes);
    damaged[Math.floor(damaged.length / 2)] ^= 0xff;
    writeFileSync(path.join(tmp, 'damaged.backup'), damaged);
    let r = await runCli(['restore', '--from', path.join(tmp, 'damaged.backup'), '--data-dir', path.join(tmp, 'd1')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /checksum does not match|not valid JSON|invalid file/);

    writeFileSync(path.join(tmp, 'cut.backup'), bytes.subarray(0, bytes.length - 100));
    r = await runCli(['restore', '--from', path.join(tmp, 'cut.backup'), '--data-dir', path.join(tmp, 'd2')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /truncated/);

    r = await runCli(['restore', '--from', out, '--data-dir', path.join(tmp, 'd3')]);
    assert.equal(r.code, 0, r.stderr);
    r = await runCli(['restore', '--from', out, '--data-dir', path.join(tmp, 'd3')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not empty/);
    assert.equal((await runCli(['restore', '--from', out])).code, 2, 'usage');
  },
);

/** contents(dir) once two reads 100 ms apart agree. */
async function settledContents(dir: string): Promise<Record<string, string>> {
  let last = contents(dir);
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = contents(dir);
    if (JSON.stringify(now) === JSON.stringify(last)) return now;
    last = now;
  }
  throw new Error(`the files of ${dir} kept changing`);
}

/** Every file of `dir` (recursively) with its bytes, for "nothing changed" checks. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = path.join(dir, name);
    if (statSync(p).isFile()) out[name] = readFileSync(p).toString('base64');
  }
  return out;
}

/** A backup of `srv` written by the CLI, holding record `id`. */
async function cliBackup(id: string, file: string): Promise<void> {
  expectSuccess(await srv.req('PUT', `/records/${id}`, { record: { a: 1 } }), 201, 'record created successfully');
  const b = await runCli(['backup', '--out', file, '--url', `http://127.0.0.1:${srv.port}`, '--token', srv.token]);
  assert.equal(b.code, 0, b.stderr);
}

test(
  'restore refuses a data directory a running server holds, naming it and the server, and changes nothing there',
  { skip: STORE === 'postgres' ? 'restore writes the log store' : false },
  async () => {
    const file = path.join(tmp, 'held.backup');
    await cliBackup(uniq('held'), file);
    const other = await PithosServer.start({ testClock: false });
    try {
      const mine = uniq('mine');
      expectSuccess(await other.req('PUT', `/records/${mine}`, { record: { b: 2 } }), 201, 'record created successfully');
      // Start from files at rest: only then is any change the restore's doing, not the server's own background work.
      const before = await settledContents(other.dataDir);
      const r = await runCli(['restore', '--from', file, '--data-dir', other.dataDir]);
      assert.equal(r.code, 1, r.stderr);
      const dir = path.resolve(other.dataDir);
      assert.ok(r.stderr.includes(`data directory ${dir} is in use by process ${other.child?.pid}`), r.stderr);
      assert.deepEqual(contents(other.dataDir), before);
      expectSuccess(await other.req('GET', `/records/${mine}`), 200, 'record queried successfully', { b: 2 });
    } finally {
      await other.close();
    }
  },
);

test(
  'a server starting on a directory while restore writes it is refused, and the restore completes',
  { skip: STORE === 'postgres' ? 'restore writes the log store' : false },
  async () => {
    const file = path.join(tmp, 'race.backup');
    const id = uniq('race');
    await cliBackup(id, file);
    const dir = path.join(tmp, 'race');
    // A server starts on the directory the moment restore begins writing its first segment file.
    const open = nodeFileOps.open;
    let starting: Promise<PithosServer | Error> | undefined;
    nodeFileOps.open = async (p, flags, mode) => {
      if (starting === undefined && p.startsWith(dir + path.sep) && p.endsWith('.log.tmp')) {
        starting = PithosServer.start({ dataDir: dir, testClock: false }).catch((err: Error) => err);
        await starting;
      }
      return open(p, flags, mode);
    };
    let restored: string | Error;
    try {
      restored = await restoreBackup(file, dir, () => {}).catch((err: Error) => err);
    } finally {
      nodeFileOps.open = open;
    }
    const started = await starting;
    assert.ok(started !== undefined, 'restore wrote no segment file');
    if (started instanceof PithosServer) await started.close();
    // Never both: a server serving the directory while restore replaced its segments.
    assert.ok(started instanceof Error, `a server started on ${dir} while restore was writing it (restore: ${String(restored)})`);
    assert.match(started.message, new RegExp(`is in use by process ${process.pid}`));
    assert.ok(typeof restored === 'string', String(restored));
    const s = await PithosServer.start({ dataDir: dir, testClock: false });
    try {
      expectSuccess(await s.req('GET', `/records/${id}`), 200, 'record queried successfully', { a: 1 });
    } finally {
      await s.close();
    }
  },
);

test('GET /backup needs an admin token; on the shared store it is a 503 naming the database tools', async () => {
  if (STORE === 'postgres') {
    expectError(await srv.req('GET', '/backup'), 503, "this store is backed up with its database's own tools (docs/scaling.md)");
  }
  expectError(await srv.req('GET', '/backup', undefined, { 'Auth-Token': 'nope' }), 401);
  expectError(await srv.req('POST', '/backup'), 405);
});
