/**
 * A pipeline's writes on the log store (Store.together, GroupWriter.write
 * with an owner), through the command table as /redis/pipeline runs them:
 * INCRs and ZADDs on existing keys take one batch per pipeline, and what the
 * pipeline's commands read in between, and what later reads see (a sorted
 * set's order, kept beside the directory and patched at each commit), is
 * what running the same commands one by one gives.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LogStore } from '../../src/store/log/log-store.js';
import { type Caller, entryJson, RestRunner } from '../../src/redis/upstash.js';

const quiet = { sweepIntervalMs: 0, compactIntervalMs: 0, log: () => {} };
const caller: Caller = { name: 't', may: () => true, addr: 'test', gone: new AbortController().signal };

async function withStore(fn: (s: LogStore, r: RestRunner) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-pipebatch-'));
  const s = await LogStore.open({ dir, now: Date.now, durability: 'never', ...quiet });
  const r = new RestRunner({ store: s, version: 't', storeName: 'log', port: () => 0, log: () => {} });
  try {
    await fn(s, r);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const answers = async (r: RestRunner, cmds: string[][]): Promise<string> => (await r.pipeline(cmds, caller)).map((x) => entryJson(x, false)).join(',');

test('INCRs and ZADDs of existing keys in one pipeline are one batch; reads after them, in the pipeline and later, see every write', async () => {
  await withStore(async (s, r) => {
    const setup: string[][] = [];
    for (let i = 0; i < 8; i++) setup.push(['SET', `n${i}`, '0'], ['ZADD', `z${i}`, '1', 'a', '2', 'b', '3', 'c']);
    await r.pipeline(setup, caller);
    // Builds the sorted sets' orders, so the writes below patch them.
    for (let i = 0; i < 8; i++) await r.pipeline([['ZRANGE', `z${i}`, '0', '-1']], caller);
    const before = s.engine.upcomingSeq;
    const cmds: string[][] = [];
    for (let i = 0; i < 8; i++) cmds.push(['INCR', `n${i}`], ['ZADD', `z${i}`, '0', 'c']);
    // A read that waits (a sorted set's range) ends the run the writes shared: it comes last.
    for (let i = 0; i < 8; i++) cmds.push(['ZRANGE', `z${i}`, '0', '-1', 'WITHSCORES']);
    const got = await answers(r, cmds);
    assert.equal(s.engine.upcomingSeq, before + 1, 'one batch for the pipeline');
    const want: string[] = [];
    for (let i = 0; i < 8; i++) want.push('{"result":1}', '{"result":0}');
    for (let i = 0; i < 8; i++) want.push('{"result":["c","0","a","1","b","2"]}');
    assert.equal(got, want.join(','));
    // A second pipeline that writes one key twice: the second write takes a batch of its own.
    const mid = s.engine.upcomingSeq;
    const again = await answers(r, [
      ['ZINCRBY', 'z0', '10', 'c'],
      ['INCR', 'n1'],
      ['ZINCRBY', 'z0', '10', 'c'],
      ['ZRANK', 'z0', 'c'],
    ]);
    assert.equal(again, '{"result":"10"},{"result":2},{"result":"20"},{"result":2}');
    assert.equal(s.engine.upcomingSeq, mid + 2);
    // Read later, on their own: the orders patched at each commit hold.
    for (let i = 0; i < 8; i++) {
      const z = await answers(r, [['ZRANGE', `z${i}`, '0', '-1', 'WITHSCORES']]);
      assert.equal(z, i === 0 ? '{"result":["a","1","b","2","c","20"]}' : '{"result":["c","0","a","1","b","2"]}');
    }
  });
});
