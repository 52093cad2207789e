/**
 * The fuzzer's adversarial modes in the normal suite (adversaries.ts): about
 * 15 s each, seeded (FUZZ_SEED reproduces a run; the seed is printed either way).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { PithosServer, STORE } from '../helpers/server.js';
import { noTokenBodies, rssMiB, selfSigned, serverSockets, tlsAttack } from './adversaries.js';
import { fuzz } from './fuzzer.js';

function seedOf(t: { diagnostic: (s: string) => void }): number {
  const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
  t.diagnostic(`seed ${seed} (rerun with FUZZ_SEED=${seed})`);
  return seed;
}

test('fuzz, TLS: stalled and garbage handshakes and plain HTTP stay under the cap and are closed in time; HTTPS clients and the HTTP fuzzer over TLS are served', async (t) => {
  const seed = seedOf(t);
  const [cert, key, ca, dir] = selfSigned();
  const max = 40;
  const s = await PithosServer.start({ testClock: false, fsync: 'never', args: ['--tls-cert', cert, '--tls-key', key, '--max-connections', String(max)] });
  try {
    const pid = s.child!.pid!;
    const [attack, fuzzed] = await Promise.all([
      tlsAttack({
        port: s.port,
        token: s.token,
        ca,
        seed,
        durationMs: 8_000,
        maxConnections: max,
        sockets: () => serverSockets(pid),
        socketSlack: 3 + (STORE === 'postgres' ? 10 : 0),
      }),
      fuzz({ port: s.port, token: s.token, requests: 100_000, seed, workers: 2, timeLimitMs: 8_000, tlsCa: ca }),
    ]);
    t.diagnostic(
      `TLS attack: opened ${JSON.stringify(attack.opened)}, ${attack.httpsChecks} HTTPS checks, peak ${attack.peakSockets} sockets ` +
        `(cap ${max}), ${attack.ms} ms; HTTP fuzz over TLS: ${fuzzed.requests} requests, ${fuzzed.checkedRefusals} refusals checked, ${fuzzed.timeouts} timeouts, statuses ${JSON.stringify(fuzzed.byStatus)}`,
    );
    assert.deepEqual(attack.violations, []);
    assert.deepEqual(fuzzed.violations, []);
    assert.ok(attack.httpsChecks >= 5 && fuzzed.requests >= 20, `too little done: ${attack.httpsChecks} checks, ${fuzzed.requests} requests`);
    assert.equal(s.child?.exitCode, null, `server died: ${s.stderr}`);
    assert.doesNotMatch(s.stdout + s.stderr, /request failed|ERROR/, 'no internal error was logged');
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("fuzz, bodies without a token: public paths refuse them with 400, others answer 401, and the server's memory stays bounded", async (t) => {
  const seed = seedOf(t);
  const s = await PithosServer.start({ testClock: false, fsync: 'never' });
  try {
    const pid = s.child!.pid!;
    // A fresh process allocates on its first answers: settle before measuring.
    for (const p of ['/openapi.json', '/livez', '/console/', '/health']) await s.req('GET', p, undefined, { 'Auth-Token': null });
    const before = rssMiB(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 50);
    const report = await noTokenBodies({ port: s.port, token: s.token, seed, durationMs: 12_000, workers: 6 });
    clearInterval(sampler);
    t.diagnostic(
      `${report.requests} requests, ${(report.sentBytes / 2 ** 20).toFixed(0)} MiB of bodies sent, statuses ${JSON.stringify(report.byStatus)}; ` +
        `server RSS ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB`,
    );
    assert.deepEqual(report.violations, []);
    assert.ok(report.requests >= 50, `only ${report.requests} requests`);
    // Six clients at a time; a server that buffered their bodies would hold up to 6 x 16 MiB and more.
    assert.ok(peak - before < 80, `RSS went from ${before.toFixed(0)} to a peak of ${peak.toFixed(0)} MiB`);
    assert.equal((await s.req('GET', '/health')).status, 200);
    assert.doesNotMatch(s.stdout + s.stderr, /request failed|ERROR/, 'no internal error was logged');
  } finally {
    await s.close();
  }
});
