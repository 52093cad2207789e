/**
 * Lists, sets and sorted sets through the log's own maintenance
 * (docs/operations.md "Online backup and restore", docs/engine.md "Compaction"):
 * compaction rewrites the segments holding their elements and drops the dead
 * ones, and an online backup restored into a new directory holds them
 * exactly. Both are about the log's segment files: log store only.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fetchBackup } from '../helpers/backup.js';
import { PithosServer, expectError, expectSuccess, onlyLog, rawRequest, runCli, uniq, untilCount, untilTrue, type Res } from '../helpers/server.js';
import { byteOrder } from '../helpers/order.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-coll-'));
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/** The log's segment files in a data directory, oldest first. */
function segments(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /^\d{16}\.log$/.test(f))
    .sort();
}

/** What a client sees of a collection: the whole answer of its GET and the version. */
async function snapshot(s: PithosServer, p: string): Promise<{ status: number; data: unknown; etag: unknown }> {
  const r = await s.req('GET', p);
  return { status: r.status, data: r.body?.data, etag: r.headers.etag };
}

test(
  'compaction of segments holding list, set and sorted-set elements keeps exactly the live ones, before and after a restart',
  { skip: onlyLog("compaction of the log's segment files") },
  async () => {
    // Small segments, and far more than the 16 MiB of dead data the compaction timer (every 10 s) waits for.
    const s = await PithosServer.start({ fsync: 'never', testClock: false, args: ['--segment-mb', '1'] });
    try {
      const [l, st, z, gone, big] = [uniq('cl'), uniq('cs'), uniq('cz'), uniq('cg'), uniq('cb')];
      // The model of what must be left: element writes below update it as the server should.
      const list: unknown[] = Array.from({ length: 60 }, (_, k) => ({ k }));
      expectSuccess(await s.req('PUT', `/lists/${l}`, { list }), 201, 'list created successfully');
      // A replaced set: its first incarnation's elements are dead from here on and must not come back.
      expectSuccess(await s.req('PUT', `/sets/${st}`, { set: Array.from({ length: 200 }, (_, k) => `old${k}`) }), 201, 'set created successfully');
      const set = new Set(Array.from({ length: 300 }, (_, k) => `s${k}`));
      expectSuccess(await s.req('PUT', `/sets/${st}`, { set: [...set] }), 200, 'set created successfully');
      const zset = new Map(Array.from({ length: 300 }, (_, k) => [`z${k}`, k * 1.5]));
      expectSuccess(await s.req('PUT', `/zsets/${z}`, { zset: Object.fromEntries(zset) }), 201, 'zset created successfully');
      // Deleted collections of each kind: their elements and tombstones are compacted, the names stay missing.
      expectSuccess(await s.req('PUT', `/lists/${gone}`, { list: [1, 2, 3] }), 201, 'list created successfully');
      expectSuccess(await s.req('PUT', `/sets/${gone}`, { set: ['x', 'y'] }), 201, 'set created successfully');
      expectSuccess(await s.req('PUT', `/zsets/${gone}`, { zset: { x: 1 } }), 201, 'zset created successfully');
      for (const kind of ['lists', 'sets', 'zsets']) expectSuccess(await s.req('DELETE', `/${kind}/${gone}`), 200, `${kind.slice(0, -1)} deleted successfully`);
      const first = segments(s.dataDir)[0];

      const bigValue = 'b'.repeat(100_000);
      const wideMember = (i: number): string => `w${i}-${'m'.repeat(4000)}`;
      const ok = (r: Res): void => assert.equal(r.status, 200, r.raw.slice(0, 300));
      for (let i = 0; i < 240; i++) {
        // Dead data: a large item pushed and popped again, a wide member added and removed the next round.
        ok(await s.req('POST', `/lists/${big}/push`, { values: [{ i, bigValue }] }));
        ok(await s.req('POST', `/lists/${big}/pop`, { side: 'left' }));
        ok(await s.req('POST', `/sets/${st}/add`, { members: [wideMember(i)] }));
        if (i > 0) ok(await s.req('POST', `/sets/${st}/remove`, { members: [wideMember(i - 1)] }));
        ok(await s.req('POST', `/zsets/${z}/add`, { members: { [wideMember(i)]: i } }));
        if (i > 0) ok(await s.req('POST', `/zsets/${z}/remove`, { members: [wideMember(i - 1)] }));
        // Element writes that leave live data spread over every segment.
        if (i % 3 === 0) {
          ok(await s.req('POST', `/lists/${l}/push`, { values: [{ right: i }] }));
          list.push({ right: i });
        }
        if (i % 5 === 0) {
          ok(await s.req('POST', `/lists/${l}/push`, { values: [{ left: i }], side: 'left' }));
          list.unshift({ left: i });
        }
        if (i % 7 === 0) {
          ok(await s.req('PATCH', `/lists/${l}`, { set: { index: 10, value: { set: i } } }));
          list[10] = { set: i };
        }
        if (i % 11 === 0) {
          const popped = (await s.req('POST', `/lists/${l}/pop`, { side: 'right' })).body.data.items;
          assert.deepEqual(popped, [list.pop()]);
        }
        if (i % 4 === 0) {
          ok(await s.req('POST', `/sets/${st}/remove`, { members: [`s${i}`] }));
          set.delete(`s${i}`);
          ok(await s.req('POST', `/sets/${st}/add`, { members: [`n${i}`] }));
          set.add(`n${i}`);
        }
        if (i % 2 === 0) {
          ok(await s.req('POST', `/zsets/${z}/incr`, { member: `z${i}`, delta: 1000 }));
          zset.set(`z${i}`, zset.get(`z${i}`)! + 1000);
        }
        if (i % 6 === 0) {
          ok(await s.req('POST', `/zsets/${z}/remove`, { members: [`z${i + 1}`] }));
          zset.delete(`z${i + 1}`);
        }
      }
      set.add(wideMember(239));
      zset.set(wideMember(239), 239);
      const segs = segments(s.dataDir).length;
      assert.ok(segs >= 20, `only ${segs} segment file(s) written`);

      const check = async (when: string): Promise<void> => {
        expectSuccess(await s.req('GET', `/lists/${l}`), 200, 'list queried successfully', { items: list, length: list.length });
        const members = [...set].sort(byteOrder);
        expectSuccess(await s.req('GET', `/sets/${st}`), 200, 'set queried successfully', { members, count: members.length, next: null });
        const items = [...zset].sort((a, b) => a[1] - b[1] || byteOrder(a[0], b[0])).map(([member, score]) => ({ member, score }));
        expectSuccess(await s.req('GET', `/zsets/${z}`), 200, 'zset queried successfully', { items, count: items.length });
        expectSuccess(await s.req('GET', `/zsets/${z}/members/z2`), 200, 'zset member queried successfully', {
          score: 1003,
          rank: items.findIndex((x) => x.member === 'z2'),
          rev_rank: items.length - 1 - items.findIndex((x) => x.member === 'z2'),
        });
        expectSuccess(await s.req('GET', `/lists/${big}`), 200, 'list queried successfully', { items: [], length: 0 });
        for (const kind of ['lists', 'sets', 'zsets']) expectError(await s.req('GET', `/${kind}/${gone}`), 404);
        process.stdout.write(`# ${when}: list ${list.length} items, set ${members.length} members, zset ${items.length} members, exact\n`);
      };
      await check('before compaction');
      const versions = await Promise.all([`/lists/${l}`, `/sets/${st}`, `/zsets/${z}`].map((p) => snapshot(s, p)));

      await untilTrue('a compaction pass', () => /compacted \d+ segment/.test(s.stdout + s.stderr), { timeoutMs: 40_000 });
      const now = segments(s.dataDir);
      assert.ok(!now.includes(first), `the first segment ${first}, holding the collections' first elements, is still there: ${now.join(' ')}`);
      process.stdout.write(`# ${(/compacted \d+ segment[^\n]*/.exec(s.stdout + s.stderr) ?? [''])[0]}; ${segs} segment files before, ${now.length} after\n`);
      await check('after compaction');
      await s.restart('SIGKILL');
      await check('after compaction and a restart');
      assert.deepEqual(await Promise.all([`/lists/${l}`, `/sets/${st}`, `/zsets/${z}`].map((p) => snapshot(s, p))), versions);
      // The collections keep working on the compacted log.
      expectSuccess(await s.req('POST', `/zsets/${z}/incr`, { member: 'z2', delta: 1 }), 200, 'zset member incremented successfully', { score: 1004 });
      expectSuccess(await s.req('POST', `/sets/${st}/contains`, { members: ['old1', 's1', 's4', 'n4'] }), 200, 'set queried successfully', {
        contains: [false, true, false, true],
      });
    } finally {
      await s.close();
    }
  },
);

test(
  'an online backup taken under transactions holds lists, sets and sorted sets exactly, and one point in time of the load',
  { skip: onlyLog('GET /backup streams the log; the shared store is backed up with the database tools') },
  async () => {
    const s = await PithosServer.start({ testClock: false });
    try {
      const [l, st, z, zl, gone] = [uniq('bl'), uniq('bs'), uniq('bz'), uniq('bzl'), uniq('bg')];
      expectSuccess(await s.req('PUT', `/lists/${l}`, { list: [1, 'two', { three: [3] }, null] }), 201, 'list created successfully');
      expectSuccess(await s.req('POST', `/lists/${l}/push`, { values: ['a', 'b'], side: 'left' }), 200, 'list pushed successfully', { length: 6 });
      expectSuccess(await s.req('POST', `/lists/${l}/push`, { values: [true, 2.5] }), 200, 'list pushed successfully', { length: 8 });
      expectSuccess(await s.req('POST', `/lists/${l}/pop`, { side: 'right' }), 200, 'list popped successfully', { items: [2.5] });
      expectSuccess(await s.req('PATCH', `/lists/${l}`, { set: { index: 1, value: 'A' } }), 200, 'list patched successfully', { length: 7 });
      const list = ['b', 'A', 1, 'two', { three: [3] }, null, true];
      expectSuccess(await s.req('PUT', `/sets/${st}`, { set: ['gone1', 'gone2'] }), 201, 'set created successfully');
      expectSuccess(await s.req('PUT', `/sets/${st}`, { set: ['é', 'b', 'a'], ttl: 3600 }), 200, 'set created successfully');
      expectSuccess(await s.req('POST', `/sets/${st}/add`, { members: ['c', ''] }), 200, 'set members added successfully', { added: 2, count: 5 });
      expectSuccess(await s.req('POST', `/sets/${st}/remove`, { members: ['b'] }), 200, 'set members removed successfully', { removed: 1, count: 4 });
      expectSuccess(await s.req('PUT', `/zsets/${z}`, { zset: { a: 1, b: 2, c: -3.25 } }), 201, 'zset created successfully');
      expectSuccess(await s.req('POST', `/zsets/${z}/add`, { members: { a: 0, d: 2 }, mode: 'gt' }), 200, 'zset members added successfully', {
        added: 1,
        updated: 0,
        count: 4,
      });
      expectSuccess(await s.req('POST', `/zsets/${z}/incr`, { member: 'c', delta: 10 }), 200, 'zset member incremented successfully', { score: 6.75 });
      expectSuccess(await s.req('POST', `/zsets/${z}/remove`, { members: ['b'] }), 200, 'zset members removed successfully', { removed: 1, count: 3 });
      const zitems = [
        { member: 'a', score: 1 },
        { member: 'd', score: 2 },
        { member: 'c', score: 6.75 },
      ];
      // A larger sorted set, whose rank order the restored server builds from the restored elements.
      expectSuccess(
        await s.req('PUT', `/zsets/${zl}`, { zset: Object.fromEntries(Array.from({ length: 3000 }, (_, k) => [`m${k}`, (k * 7919) % 3001])) }),
        201,
        'zset created successfully',
      );
      for (const kind of ['lists', 'sets', 'zsets']) {
        const body = kind === 'lists' ? { list: [1] } : kind === 'sets' ? { set: ['x'] } : { zset: { x: 1 } };
        assert.equal((await s.req('PUT', `/${kind}/${gone}`, body)).status, 201);
        assert.equal((await s.req('DELETE', `/${kind}/${gone}`)).status, 200);
      }
      const fixed = [`/lists/${l}`, `/sets/${st}`, `/zsets/${z}`, `/zsets/${zl}?by=score&min=1000&max=1010`, `/zsets/${zl}/members/m17`];
      const want = await Promise.all(fixed.map((p) => snapshot(s, p)));

      // The load: transactions each pushing i, adding member i and giving member i the score i.
      const [ll, ls, lz] = [uniq('ll'), uniq('ls'), uniq('lz')];
      const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
      const sentAt = new Map<number, number>();
      const ackedAt = new Map<number, number>();
      let next = 0;
      let stop = false;
      const worker = async (): Promise<void> => {
        while (!stop) {
          const i = next++;
          sentAt.set(i, performance.now());
          const r = await rawRequest({
            port: s.port,
            method: 'POST',
            path: '/txns',
            agent,
            headers: { 'Auth-Token': s.token, 'Content-Type': 'application/json' },
            body: Buffer.from(
              JSON.stringify({
                mutations: [
                  { kind: 'list', name: ll, operation: 'PUSH', values: [i] },
                  { kind: 'set', name: ls, operation: 'ADD', members: [`${i}`] },
                  { kind: 'zset', name: lz, operation: 'ADD', members: { [`${i}`]: i } },
                ],
              }),
            ),
          });
          assert.equal(r.status, 200, r.raw.slice(0, 300));
          ackedAt.set(i, performance.now());
        }
      };
      const workers = Array.from({ length: 6 }, worker);
      const ended = Promise.all(workers);
      await untilCount('transactions acknowledged before the backup', () => ackedAt.size, 40, { ended });
      // GET /backup itself (the CLI wraps it; backup.test.ts runs that): the moment its answer began bounds the snapshot closely.
      const began = performance.now();
      const b = await fetchBackup(s);
      const sentAfter = (): number => [...sentAt.values()].filter((t) => t > b.headersAt).length;
      await untilCount('transactions sent after the backup answered', sentAfter, 40, { ended });
      stop = true;
      await ended;
      agent.destroy();
      assert.equal(b.status, 200, b.body.toString('utf8', 0, 300));
      const file = path.join(tmp, 'collections.backup');
      writeFileSync(file, b.body);

      const dir = path.join(tmp, 'restored');
      const r = await runCli(['restore', '--from', file, '--data-dir', dir]);
      assert.equal(r.code, 0, r.stderr);
      const restored = await PithosServer.start({ dataDir: dir, testClock: false });
      try {
        expectSuccess(await restored.req('GET', `/lists/${l}`), 200, 'list queried successfully', { items: list, length: list.length });
        expectSuccess(await restored.req('GET', `/sets/${st}`), 200, 'set queried successfully', { members: ['', 'a', 'c', 'é'], count: 4, next: null });
        expectSuccess(await restored.req('GET', `/zsets/${z}`), 200, 'zset queried successfully', { items: zitems, count: 3 });
        assert.deepEqual(
          await Promise.all(fixed.map((p) => snapshot(restored, p))),
          want,
          'the restored collections (answers and versions) differ from the originals',
        );
        const ttl = (await restored.req('GET', `/sets?prefix=${st}`)).body.data.items[0].ttl_ms as number;
        assert.ok(ttl > 0 && ttl <= 3_600_000, `the set's lifetime after the restore: ${ttl} ms`);
        for (const kind of ['lists', 'sets', 'zsets']) expectError(await restored.req('GET', `/${kind}/${gone}`), 404);

        // The load: one point in time, every transaction acknowledged before the backup began, none sent after its answer began.
        const lr = await restored.req('GET', `/lists/${ll}`);
        assert.equal(lr.status, 200, lr.raw.slice(0, 200));
        const inList = [...(lr.body.data.items as number[])].sort((a, c) => a - c);
        const inSet = (await restored.req('GET', `/sets/${ls}`)).body.data.members.map(Number).sort((a: number, c: number) => a - c);
        const zr = (await restored.req('GET', `/zsets/${lz}`)).body.data.items as Array<{ member: string; score: number }>;
        for (const x of zr) assert.equal(x.score, Number(x.member));
        const inZset = zr.map((x) => x.score).sort((a, c) => a - c);
        assert.deepEqual(inSet, inList, 'the restored set and list disagree: not one point in time');
        assert.deepEqual(inZset, inList, 'the restored sorted set and list disagree: not one point in time');
        const present = new Set(inList);
        const mustHave = [...ackedAt].filter(([, t]) => t < began).map(([i]) => i);
        const mustLack = [...sentAt].filter(([, t]) => t > b.headersAt).map(([i]) => i);
        for (const i of mustHave) assert.ok(present.has(i), `transaction ${i}, acknowledged before the backup began, is not in it`);
        for (const i of mustLack) assert.ok(!present.has(i), `transaction ${i}, sent after the backup's answer began, is in it`);
        assert.ok(mustHave.length >= 40 && mustLack.length >= 40, `load too small to judge: ${mustHave.length} before, ${mustLack.length} after`);
        process.stdout.write(
          `# backup: ${present.size} of ${sentAt.size} transactions in it; ${mustHave.length} acknowledged before it, all present; ${mustLack.length} sent after it, all absent\n`,
        );
      } finally {
        await restored.close();
      }
    } finally {
      await s.close();
    }
  },
);
