/**
 * The fuzzer in the normal suite (docs/fuzzing.md): bounded to about 40 s, seeded
 * (FUZZ_SEED reproduces a run; the seed is printed either way).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PithosServer } from '../helpers/server.js';
import { fuzz } from './fuzzer.js';

test('fuzz: random requests never kill the server, every answer is the envelope, no 5xx but 507, refusals change nothing, no inherited fields', async (t) => {
  const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
  t.diagnostic(`fuzz seed ${seed} (rerun with FUZZ_SEED=${seed})`);
  process.stdout.write(`# fuzz seed ${seed}\n`);
  const s = await PithosServer.start({ testClock: false, fsync: 'never' });
  try {
    const report = await fuzz({ port: s.port, token: s.token, requests: 20_000, seed, workers: 4, timeLimitMs: 35_000 });
    t.diagnostic(
      `fuzz: ${report.requests} requests (${report.pipelined} pipelined, ${report.chunked} chunked), ${report.answers} answers, ` +
        `${report.checkedRefusals} refusals checked, in ${report.ms} ms; statuses ${JSON.stringify(report.byStatus)}`,
    );
    assert.deepEqual(report.violations, [], `seed ${seed}`);
    assert.ok(report.requests >= 1000, `only ${report.requests} requests`);
    assert.equal(s.child?.exitCode, null, `server died: ${s.stderr}`);
    assert.equal((await s.req('GET', '/health')).status, 200);
    assert.doesNotMatch(s.stdout + s.stderr, /request failed|ERROR/, 'no internal error was logged');
  } finally {
    await s.close();
  }
});
