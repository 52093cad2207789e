/**
 * Encryption at rest, black-box (docs/operations.md, "Encryption at rest"):
 * the real server with --encryption-key-file writes nothing readable, a
 * SIGKILL loses no acknowledged write, a start without the key or with a
 * wrong one fails at once and changes nothing, bad key files are refused
 * before anything is written, backups stay encrypted and restore needs the
 * key, and a key rotation (old key kept, `pithos rekey`, `pithos key-check`)
 * lets the old key go.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fetchBackup } from '../helpers/backup.js';
import { PithosServer, expectSuccess, onlyLog, runCli } from '../helpers/server.js';

const skip = onlyLog('encryption at rest is a feature of the log store; PostgreSQL encrypts with its own means (docs/scaling.md)');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pithos-enc-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function keyFile(name: string, mode = 0o600, text = randomBytes(32).toString('hex') + '\n'): string {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, text, { mode });
  fs.chmodSync(f, mode);
  return f;
}

/** A digest of every file of a data directory but LOCK (names and bytes). */
function digest(d: string): string {
  const h = createHash('sha256');
  for (const n of fs.readdirSync(d).sort()) if (n !== 'LOCK') h.update(n).update(fs.readFileSync(path.join(d, n)));
  return h.digest('hex');
}

function grepDir(d: string, needle: string): string[] {
  return fs.readdirSync(d).filter((n) => fs.statSync(path.join(d, n)).isFile() && fs.readFileSync(path.join(d, n)).includes(needle));
}

const MARKER = 'PLAINTEXT-MARKER-93217';

async function fill(srv: PithosServer, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    expectSuccess(
      await srv.req('PUT', `/records/enc-${i}`, { record: { secret: `${MARKER}-${i}`, pad: 'x'.repeat(900) } }),
      201,
      'record created successfully',
    );
  }
  assert.ok((await srv.req('PUT', '/variants/enc-counter', { variant: 0 })).status < 300);
  for (let i = 0; i < 20; i++) assert.equal((await srv.req('POST', '/variants/enc-counter', { delta: 1 })).status, 200);
}

async function check(srv: PithosServer, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await srv.req('GET', `/records/enc-${i}`);
    assert.equal(r.status, 200, `enc-${i}: ${r.raw}`);
    assert.equal(r.body.data.secret, `${MARKER}-${i}`);
  }
  const v = await srv.req('GET', '/variants/enc-counter');
  assert.equal(v.body.data.variant, 20, v.raw);
}

test('an encrypted store writes nothing readable, survives SIGKILL, and refuses to start without its key or with a wrong one', { skip }, async () => {
  const key = keyFile('a.key');
  const dataDir = fs.mkdtempSync(path.join(tmp, 'data-'));
  const srv = await PithosServer.start({ dataDir, args: ['--encryption-key-file', key] });
  try {
    await fill(srv, 60);
    await srv.kill('SIGKILL');
    assert.deepEqual(grepDir(dataDir, MARKER), [], 'the marker is readable in the data directory');
    assert.deepEqual(grepDir(dataDir, 'enc-counter'), [], 'a key name is readable in the data directory');
    await srv.spawn();
    await check(srv, 60);
    await srv.kill('SIGTERM');

    const before = digest(dataDir);
    const none = await runCli(['--data-dir', dataDir, '--port', '0', '--auth-token', 'SECRET-x']);
    assert.equal(none.timedOut, false, 'the server started without its key');
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /is encrypted and no key was given \(--encryption-key-file\)/);
    const wrong = await runCli(['--data-dir', dataDir, '--port', '0', '--auth-token', 'SECRET-x', '--encryption-key-file', keyFile('wrong.key')]);
    assert.equal(wrong.timedOut, false, 'the server started with a wrong key');
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /are not the one\(s\) it needs/);
    assert.equal(digest(dataDir), before, 'a refused start changed the data directory');

    // pithos repair says which key it needs, too.
    const repair = await runCli(['repair', '--data-dir', dataDir]);
    assert.notEqual(repair.code, 0);
    assert.match(repair.stderr, /no key was given/);
    assert.equal(digest(dataDir), before);
  } finally {
    await srv.close();
  }
});

test('bad key files are refused before anything is written', { skip }, async () => {
  const dataDir = path.join(tmp, 'never-created');
  const cases: Array<[string, string[], RegExp]> = [
    ['missing', ['--encryption-key-file', path.join(tmp, 'nope.key')], /encryption key file .*nope\.key: it does not exist/],
    ['short', ['--encryption-key-file', keyFile('short.key', 0o600, 'abcd\n')], /must hold one 32-byte key as 64 hex digits .* it holds 4 hex digits/],
    ['garbage', ['--encryption-key-file', keyFile('junk.key', 0o600, 'not a key at all')], /must hold one 32-byte key/],
    ['world-readable', ['--encryption-key-file', keyFile('open.key', 0o644)], /is accessible to other users \(mode 0644\); run `chmod 600/],
    ['old key without a current one', ['--encryption-old-key-files', keyFile('old.key')], /--encryption-old-key-files needs --encryption-key-file/],
  ];
  for (const [what, args, re] of cases) {
    const r = await runCli(['--data-dir', dataDir, '--port', '0', '--auth-token', 'SECRET-x', ...args]);
    assert.equal(r.code, 2, `${what}: exit ${r.code}, ${r.stderr}`);
    assert.match(r.stderr, re, what);
    assert.equal(fs.existsSync(dataDir), false, `${what}: the data directory was created`);
  }
  // The explicit override takes the world-readable file.
  const srv = await PithosServer.start({ args: ['--encryption-key-file', keyFile('open2.key', 0o644), '--allow-insecure-key-file'] });
  await srv.close();
});

test('the UrnaDB-style config keys encryptor.enable and encryptor.secret are accepted', { skip }, async () => {
  const dataDir = fs.mkdtempSync(path.join(tmp, 'alias-'));
  const conf = path.join(tmp, 'alias.json');
  fs.writeFileSync(conf, JSON.stringify({ encryptor: { enable: true, secret: randomBytes(32).toString('hex') } }), { mode: 0o600 });
  const srv = await PithosServer.start({ dataDir, args: ['--config', conf] });
  try {
    await fill(srv, 5);
    assert.deepEqual(grepDir(dataDir, MARKER), []);
    await srv.restart();
    await check(srv, 5);
  } finally {
    await srv.close();
  }
  const off = path.join(tmp, 'off.json');
  fs.writeFileSync(off, JSON.stringify({ 'encryptor.enable': false, 'encryptor.secret': 'ab'.repeat(32) }), { mode: 0o600 });
  const r = await runCli(['--config', off, '--print-config']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /'encryptor.enable' is false but a key is given/);
});

test('backups stay encrypted, restore needs the key, and a rotated key can be dropped after rekey', { skip }, async () => {
  const keyA = keyFile('rot-a.key');
  const keyB = keyFile('rot-b.key');
  const dataDir = fs.mkdtempSync(path.join(tmp, 'rot-'));
  const srv = await PithosServer.start({ dataDir, args: ['--encryption-key-file', keyA] });
  try {
    await fill(srv, 30);
    const fetched = await fetchBackup(srv);
    assert.equal(fetched.status, 200, fetched.body.toString('utf8', 0, 300));
    const backup = fetched.body;
    assert.equal(backup.includes(MARKER), false, 'the backup holds the marker in clear');
    const file = path.join(tmp, 'enc.backup');
    fs.writeFileSync(file, backup);
    const target = path.join(tmp, 'restored');
    const noKey = await runCli(['restore', '--from', file, '--data-dir', target]);
    assert.equal(noKey.code, 1, noKey.stderr);
    assert.match(noKey.stderr, /is encrypted and no key was given.*nothing was restored/);
    assert.deepEqual(
      fs.readdirSync(target).filter((n) => n !== 'LOCK'),
      [],
    );
    const ok = await runCli(['restore', '--from', file, '--data-dir', target, '--encryption-key-file', keyA]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /restored \d+ segment file/);

    // Rotate: B is current, A still readable; write more, then rekey offline.
    await srv.kill('SIGTERM');
    srv.opts.args = ['--encryption-key-file', keyB, '--encryption-old-key-files', keyA];
    await srv.spawn();
    for (let i = 0; i < 10; i++) await srv.req('PUT', `/records/after-${i}`, { record: { i } });
    await srv.kill('SIGTERM');
    const notYet = await runCli(['key-check', '--data-dir', dataDir, '--encryption-key-file', keyB]);
    assert.equal(notYet.code, 1, notYet.stdout);
    assert.match(notYet.stdout, /need another key or are plain/);
    const rk = await runCli(['rekey', '--data-dir', dataDir, '--encryption-key-file', keyB, '--encryption-old-key-files', keyA], {}, 60_000);
    assert.equal(rk.code, 0, rk.stderr);
    const done = await runCli(['key-check', '--data-dir', dataDir, '--encryption-key-file', keyB]);
    assert.equal(done.code, 0, done.stdout);
    assert.match(done.stdout, /are sealed under the current key/);
    // A is gone: B alone reads everything.
    srv.opts.args = ['--encryption-key-file', keyB];
    await srv.spawn();
    await check(srv, 30);
    for (let i = 0; i < 10; i++) assert.equal((await srv.req('GET', `/records/after-${i}`)).status, 200);
  } finally {
    await srv.close();
  }
});

test('a key rotated while writers run: compaction reseals online, then the old key can go', { skip, timeout: 180_000 }, async () => {
  const keyA = keyFile('live-a.key');
  const keyB = keyFile('live-b.key');
  const dataDir = fs.mkdtempSync(path.join(tmp, 'live-'));
  // 1 MiB segments, so that key A seals several of them before the rotation.
  const base = ['--segment-mb', '1'];
  const srv = await PithosServer.start({ dataDir, args: [...base, '--encryption-key-file', keyA] });
  const acked = new Map<string, number>();
  let stop = false;
  let failures = 0;
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      // New keys only: A's segments hold no dead data, so only the rotation makes compaction take them.
      const id = `live-${w}-${i}`;
      try {
        const r = await srv.req('PUT', `/records/${id}`, { record: { w, i, pad: `${MARKER}-${'y'.repeat(1000)}` } });
        if (r.status === 200 || r.status === 201) acked.set(id, i);
      } catch {
        // Refused or reset while the server restarts under the new key: not acknowledged.
        failures++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const writers = [0, 1, 2, 3].map((w) => writer(w));
  try {
    const segsUnderA = async (): Promise<number> => {
      const kc = await runCli(['key-check', '--data-dir', dataDir, '--encryption-key-file', keyB]);
      const m = /^(\d+) of \d+ segment\(s\) need another key/m.exec(kc.stdout);
      return kc.code === 0 ? 0 : m === null ? -1 : Number(m[1]);
    };
    // Write under A until several segments exist.
    const deadline = Date.now() + 60_000;
    while (fs.readdirSync(dataDir).filter((n) => n.endsWith('.log')).length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const sealedByA = await segsUnderA();
    assert.ok(sealedByA >= 3, `key A sealed ${sealedByA} segments before the rotation`);

    // Rotate while the writers keep going: B is current, A is still readable.
    await srv.kill('SIGTERM');
    srv.opts.args = [...base, '--encryption-key-file', keyB, '--encryption-old-key-files', keyA];
    await srv.spawn();
    // Compaction (every 10 s) rewrites A's segments under B with the writers running.
    let left = await segsUnderA();
    const until = Date.now() + 60_000;
    while (left !== 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 500));
      left = await segsUnderA();
    }
    assert.equal(left, 0, 'segments still sealed under key A a minute after the rotation');
    const ackedAfterReseal = acked.size;
    await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await Promise.all(writers);
    assert.ok(acked.size >= ackedAfterReseal && acked.size > 0);

    // A is destroyed: B alone opens the directory and reads every acknowledged write.
    await srv.kill('SIGTERM');
    fs.rmSync(keyA);
    srv.opts.args = [...base, '--encryption-key-file', keyB];
    await srv.spawn();
    for (const [id, i] of acked) {
      const r = await srv.req('GET', `/records/${id}`);
      assert.equal(r.status, 200, `${id}: ${r.raw}`);
      assert.equal(r.body.data.i, i, `${id}: ${r.raw.slice(0, 80)}`);
    }
    assert.deepEqual(grepDir(dataDir, MARKER), [], 'the marker is readable in the data directory');
  } finally {
    stop = true;
    await Promise.all(writers);
    await srv.close();
  }
});
