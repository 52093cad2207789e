/**
 * Sets, sorted sets and transactions over lists, sets and sorted sets under
 * SIGKILL (docs/api.md "Sets and sorted sets", "Transactions"): clients keep
 * writing while the server is killed; after the restart every acknowledged
 * write is there, a write cut off by the kill is there wholly or not at all,
 * and nothing that was never sent appears. Lists alone are lists-crash.test.ts.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, expectSuccess, killRound, poster, sleep, uniq, untilCount, type Res } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

/**
 * An answer that says the write did not happen: on a loaded machine the shared store's statement timeout can
 * cancel a write queued behind others on the same rows (503, "nothing was changed"). Such a write must be absent.
 */
const refused = (r: Res): boolean => r.status === 503 && /nothing was changed/.test(r.raw);

/** Every sum of a subset of `xs` (deltas cut off by the kill: each landed or not). */
function subsetSums(xs: number[]): Set<number> {
  let sums = new Set<number>([0]);
  for (const x of xs) sums = new Set([...sums, ...[...sums].map((s) => s + x)]);
  return sums;
}

test('SIGKILL during sorted-set increments and set adds and removes: acknowledged ones survive, cut-off ones land whole or not at all', async () => {
  const outcomes: string[] = [];
  for (let round = 0; round < 3; round++) {
    const z = uniq('zk');
    const s = uniq('sk');
    const hot = ['a', 'b', 'c', 'd'];
    expectSuccess(await srv.req('PUT', `/zsets/${z}`, { zset: { a: 0, b: 0, c: 0, d: 0, fixed: 7 } }), 201, 'zset created successfully');
    expectSuccess(await srv.req('PUT', `/sets/${s}`, { set: ['base'] }), 201, 'set created successfully');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const post = poster(srv, agent);
    // Deltas are multiples of 0.5, so every sum is exact and a score can be compared for equality.
    const deltas = [0.5, 1, 2, 3];
    const acked = new Map(hot.map((m) => [m, 0]));
    const cut = new Map<string, number[]>(hot.map((m) => [m, []]));
    let incrs = 0;
    let refusals = 0;
    const unexpected: string[] = [];
    let stop = false;
    const incrementer = async (): Promise<void> => {
      while (!stop) {
        const m = hot[Math.floor(Math.random() * hot.length)];
        const delta = deltas[Math.floor(Math.random() * deltas.length)];
        let r: Res;
        try {
          r = await post(`/zsets/${z}/incr`, { member: m, delta });
        } catch {
          cut.get(m)!.push(delta); // sent, never answered: it may or may not have landed
          return;
        }
        if (r.status === 200) {
          acked.set(m, acked.get(m)! + delta);
          incrs++;
        } else if (refused(r)) refusals++;
        else unexpected.push(`incr ${r.status} ${r.raw.slice(0, 200)}`);
      }
    };
    /** Per member: the state the last acknowledged write left, and the state a write cut off by the kill was asking for. */
    const members = new Map<string, { present: boolean; pending?: boolean }>();
    let setOps = 0;
    const setWorker = (w: number) => async (): Promise<void> => {
      // Each member is written by one worker only, one request at a time: its acknowledged order is its order.
      for (let j = 0; !stop; j++) {
        const ops: Array<[string, string[], boolean]> = [['add', [`w${w}-${2 * j}`, `w${w}-${2 * j + 1}`], true]];
        if (j > 0) ops.push(['remove', [`w${w}-${2 * j - 1}`], false]);
        for (const [op, ms, present] of ops) {
          const before = new Map(ms.map((m) => [m, members.get(m)?.present ?? false]));
          for (const m of ms) members.set(m, { present: before.get(m)!, pending: present });
          let r: Res;
          try {
            r = await post(`/sets/${s}/${op}`, { members: ms });
          } catch {
            return;
          }
          if (refused(r)) {
            for (const m of ms) members.set(m, { present: before.get(m)! });
            refusals++;
            continue;
          }
          if (r.status !== 200) {
            unexpected.push(`set ${op} ${r.status} ${r.raw.slice(0, 200)}`);
            return;
          }
          for (const m of ms) members.set(m, { present });
          setOps++;
        }
      }
    };
    const workers = [...Array.from({ length: 6 }, incrementer), ...Array.from({ length: 4 }, (_, w) => setWorker(w)())];
    const ended = Promise.all(workers);
    await untilCount(`round ${round}: increments acknowledged before the kill`, () => incrs, 60, { ended });
    await untilCount(`round ${round}: set writes acknowledged before the kill`, () => setOps, 40, { ended });
    await sleep(Math.floor(Math.random() * 300));
    await killRound(srv, ended, () => (stop = true), agent);
    assert.deepEqual(unexpected, [], `round ${round}: answers other than 200 before the kill`);

    const zr = await srv.req('GET', `/zsets/${z}`);
    assert.equal(zr.status, 200, zr.raw.slice(0, 200));
    const items = zr.body.data.items as Array<{ member: string; score: number }>;
    const scores = new Map(items.map((x) => [x.member, x.score]));
    assert.deepEqual([...scores.keys()].sort(), [...hot, 'fixed'].sort(), `round ${round}: members of the sorted set`);
    assert.equal(zr.body.data.count, hot.length + 1);
    assert.equal(scores.get('fixed'), 7);
    let inFlight = 0;
    for (const m of hot) {
      const score = scores.get(m)!;
      const lo = acked.get(m)!;
      const pending = cut.get(m)!;
      inFlight += pending.length;
      const hi = lo + pending.reduce((x, y) => x + y, 0);
      assert.ok(lo <= score && score <= hi, `round ${round}: ${m} has score ${score}, acknowledged ${lo}, at most ${hi} with the ${pending.length} cut off`);
      assert.ok(subsetSums(pending).has(score - lo), `round ${round}: ${m}: ${score} is ${lo} plus no subset of the cut-off deltas ${pending.join(', ')}`);
    }
    // The rank order rebuilt after the restart agrees with the scores.
    for (let i = 1; i < items.length; i++) {
      const [p, q] = [items[i - 1], items[i]];
      assert.ok(p.score < q.score || (p.score === q.score && p.member < q.member), `round ${round}: ${p.member} listed before ${q.member}`);
    }
    for (let rank = 0; rank < items.length; rank++) {
      const r = await srv.req('GET', `/zsets/${z}/members/${items[rank].member}`);
      expectSuccess(r, 200, 'zset member queried successfully', { score: items[rank].score, rank, rev_rank: items.length - 1 - rank });
    }

    const sr = await srv.req('GET', `/sets/${s}`);
    assert.equal(sr.status, 200, sr.raw.slice(0, 200));
    const present = new Set(sr.body.data.members as string[]);
    assert.equal(sr.body.data.count, present.size);
    assert.ok(present.has('base'), `round ${round}: the set lost 'base'`);
    let undecided = 0;
    for (const m of present) if (m !== 'base') assert.ok(members.has(m), `round ${round}: ${m} is in the set but was never sent`);
    for (const [m, st] of members) {
      const has = present.has(m);
      if (st.pending === undefined) assert.equal(has, st.present, `round ${round}: ${m} acknowledged ${st.present ? 'added' : 'removed'} but present=${has}`);
      else {
        undecided++;
        assert.ok(has === st.present || has === st.pending, `round ${round}: ${m} present=${has}`);
      }
    }
    outcomes.push(
      `${incrs} increments acknowledged, ${inFlight} cut off; ${setOps} set writes acknowledged, ${present.size} members present, ${undecided} cut off; ${refusals} refused`,
    );
  }
  process.stdout.write(`# zset/set crash rounds: ${outcomes.join('; ')}\n`);
});

test('SIGKILL during transactions over a list, a set and a sorted set: each is there wholly or not at all, every acknowledged one there', async () => {
  const outcomes: string[] = [];
  for (let round = 0; round < 4; round++) {
    const [l, s, z, q] = [uniq('tl'), uniq('ts'), uniq('tz'), uniq('tq')];
    // Each transaction pushes {i} onto l, adds member i to s, gives z member i the score i, counts itself in z's
    // member 'total', and pops one item off the queue q: from what survived, a half-applied transaction shows.
    const queue = Array.from({ length: 3000 }, (_, k) => `q${k}`);
    expectSuccess(await srv.req('PUT', `/lists/${q}`, { list: queue }), 201, 'list created successfully');
    expectSuccess(await srv.req('PUT', `/zsets/${z}`, { zset: { total: 0 } }), 201, 'zset created successfully');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const post = poster(srv, agent);
    const pad = 'x'.repeat(1500);
    const sent = new Set<number>();
    const acked = new Set<number>();
    const refusedTxns = new Set<number>();
    const poppedBy = new Map<number, string>();
    const unexpected: string[] = [];
    let next = 0;
    let stop = false;
    const worker = async (): Promise<void> => {
      while (!stop) {
        const i = next++;
        sent.add(i);
        const mutations = [
          { kind: 'list', name: l, operation: 'PUSH', values: [{ i, pad }], side: i % 2 === 0 ? 'right' : 'left' },
          { kind: 'set', name: s, operation: 'ADD', members: [`${i}`] },
          { kind: 'zset', name: z, operation: 'ADD', members: { [`${i}`]: i } },
          { kind: 'zset', name: z, operation: 'INCR', member: 'total', delta: 1 },
          { kind: 'list', name: q, operation: 'POP', side: 'left', count: 1 },
        ];
        let r: Res;
        try {
          r = await post('/txns', { mutations });
        } catch {
          return;
        }
        if (refused(r)) {
          refusedTxns.add(i);
          continue;
        }
        if (r.status !== 200) {
          unexpected.push(`${r.status} ${r.raw.slice(0, 200)}`);
          return;
        }
        acked.add(i);
        poppedBy.set(i, (r.body.data.results[4].items as string[]).join(','));
      }
    };
    const workers = Array.from({ length: 12 }, worker);
    // A different number acknowledged each round, so the kill lands at different points of the stream.
    const want = 10 + Math.floor(Math.random() * 60);
    await untilCount(`round ${round}: transactions acknowledged before the kill`, () => acked.size, want, { ended: Promise.all(workers) });
    await killRound(srv, Promise.all(workers), () => (stop = true), agent);
    assert.deepEqual(unexpected, [], `round ${round}: answers other than 200 before the kill`);

    const lr = await srv.req('GET', `/lists/${l}`);
    assert.equal(lr.status, 200, lr.raw.slice(0, 200));
    const inList = (lr.body.data.items as Array<{ i: number; pad: string }>).map((x) => {
      assert.equal(x.pad, pad);
      return x.i;
    });
    const sr = await srv.req('GET', `/sets/${s}`);
    assert.equal(sr.status, 200, sr.raw.slice(0, 200));
    const inSet = (sr.body.data.members as string[]).map(Number);
    const zr = await srv.req('GET', `/zsets/${z}`);
    assert.equal(zr.status, 200, zr.raw.slice(0, 200));
    const zitems = zr.body.data.items as Array<{ member: string; score: number }>;
    const total = zitems.find((x) => x.member === 'total')?.score;
    const inZset = zitems
      .filter((x) => x.member !== 'total')
      .map((x) => {
        assert.equal(x.score, Number(x.member), `round ${round}: member ${x.member} has score ${x.score}`);
        return x.score;
      });
    const byNumber = (a: number, b: number): number => a - b;
    const present = [...inList].sort(byNumber);
    assert.equal(new Set(present).size, present.length, `round ${round}: an item pushed twice`);
    assert.deepEqual([...inSet].sort(byNumber), present, `round ${round}: the set and the list disagree: a half-present transaction`);
    assert.deepEqual([...inZset].sort(byNumber), present, `round ${round}: the sorted set and the list disagree: a half-present transaction`);
    assert.equal(total, present.length, `round ${round}: 'total' disagrees with the transactions present`);
    const qr = await srv.req('GET', `/lists/${q}`);
    assert.equal(qr.status, 200, qr.raw.slice(0, 200));
    assert.deepEqual(qr.body.data.items, queue.slice(present.length), `round ${round}: the queue does not hold exactly what ${present.length} pops left`);
    const taken = new Set(queue.slice(0, present.length));
    const popped = new Set<string>();
    for (const [i, item] of poppedBy) {
      assert.ok(taken.has(item) && !popped.has(item), `round ${round}: transaction ${i} popped ${item}`);
      popped.add(item);
    }
    const inAll = new Set(present);
    for (const i of present) assert.ok(sent.has(i), `round ${round}: transaction ${i} present but never sent`);
    for (const i of acked) assert.ok(inAll.has(i), `round ${round}: acknowledged transaction ${i} lost`);
    for (const i of refusedTxns) assert.ok(!inAll.has(i), `round ${round}: transaction ${i} was refused ("nothing was changed") yet is present`);
    outcomes.push(`${acked.size} acked / ${present.length} present / ${sent.size} sent / ${refusedTxns.size} refused`);
  }
  process.stdout.write(`# collection txn crash rounds: ${outcomes.join('; ')}\n`);
});
