/**
 * Lists under SIGKILL (docs/api.md, "Lists"): pushes, pops and moves with
 * `to` run concurrently while the server is killed; after the restart no
 * acknowledged item is lost, none is duplicated, and a moved item is in
 * exactly one of its lists (the reliable-queue pattern).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PithosServer, killRound, poster, sleep, uniq, untilCount } from '../helpers/server.js';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start({ testClock: false });
});
after(async () => {
  await srv?.close();
});

test('SIGKILL during pushes, pops and moves: no acknowledged item lost or duplicated, a moved item in exactly one list', async () => {
  const outcomes: string[] = [];
  for (let round = 0; round < 3; round++) {
    // Items flow src → mid → done by moves (pop with to), and leave done by plain pops.
    const src = uniq('src');
    const mid = uniq('mid');
    const done = uniq('done');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const post = poster(srv, agent);
    const pushed = new Set<string>();
    const sent = new Set<string>();
    /** Items an acknowledged move put into a list: they must not be back upstream. */
    const movedTo = new Map<string, string>();
    const popped = new Set<string>();
    let inFlightPops = 0;
    let stop = false;
    let next = 0;
    const pusher = async (): Promise<void> => {
      while (!stop) {
        const v = `r${round}-${next++}`;
        sent.add(v);
        try {
          const r = await post(`/lists/${src}/push`, { values: [v], side: next % 2 === 0 ? 'left' : 'right' });
          if (r.status === 200) pushed.add(v);
        } catch {
          return;
        }
      }
    };
    const mover = (from: string, to: string, toSide: 'left' | 'right') => async (): Promise<void> => {
      while (!stop) {
        try {
          const r = await post(`/lists/${from}/pop`, { side: 'left', count: 2, to, to_side: toSide, wait_ms: 50 });
          if (r.status === 200) for (const v of r.body.data.items as string[]) movedTo.set(v, to);
        } catch {
          return;
        }
      }
    };
    const popper = async (): Promise<void> => {
      while (!stop) {
        inFlightPops++;
        try {
          const r = await post(`/lists/${done}/pop`, { side: 'right', count: 1, wait_ms: 50 });
          inFlightPops--;
          if (r.status === 200) for (const v of r.body.data.items as string[]) popped.add(v);
        } catch {
          return; // still counted in inFlightPops: its pop may be durable without an answer
        }
      }
    };
    const workers = [
      ...Array.from({ length: 6 }, pusher),
      ...Array.from({ length: 3 }, mover(src, mid, 'right')),
      ...Array.from({ length: 3 }, mover(mid, done, 'left')),
      ...Array.from({ length: 2 }, popper),
    ];
    // Kill at a random moment once enough has been acknowledged (slower stores, and busy machines, take longer to get there).
    const ended = Promise.all(workers);
    await untilCount(`round ${round}: pushes acknowledged before the kill`, () => pushed.size, 40, { ended });
    await untilCount(`round ${round}: moves acknowledged before the kill`, () => movedTo.size, 20, { ended });
    await sleep(Math.floor(Math.random() * 500));
    await killRound(srv, Promise.all(workers), () => (stop = true), agent);

    const contents = async (n: string): Promise<string[]> => {
      const r = await srv.req('GET', `/lists/${n}`);
      if (r.status === 404) return [];
      assert.equal(r.status, 200, r.raw.slice(0, 200));
      return r.body.data.items;
    };
    const where = new Map<string, string>();
    for (const [name, items] of [
      [src, await contents(src)],
      [mid, await contents(mid)],
      [done, await contents(done)],
    ] as const) {
      for (const v of items) {
        assert.ok(!where.has(v), `round ${round}: ${v} is in ${where.get(v)} and in ${name}`);
        assert.ok(sent.has(v), `round ${round}: ${v} was never pushed`);
        assert.ok(!popped.has(v), `round ${round}: ${v} was popped (acknowledged) yet is in ${name}`);
        where.set(v, name);
      }
    }
    let missing = 0;
    for (const v of pushed) {
      if (where.has(v) || popped.has(v)) continue;
      missing++;
    }
    // Only a pop cut off by the kill may have removed an item durably without answering.
    assert.ok(missing <= inFlightPops, `round ${round}: ${missing} acknowledged items lost (${inFlightPops} pops were unanswered)`);
    for (const [v, to] of movedTo) {
      if (popped.has(v)) continue;
      const at = where.get(v);
      // Absent: taken by a pop the kill cut off (counted against inFlightPops above when it was pushed with an answer).
      if (at === undefined) continue;
      assert.ok(at === to || (to === mid && at === done), `round ${round}: ${v} was moved to ${to} (acknowledged) but is in ${at}`);
    }
    assert.ok(
      pushed.size > 0 && movedTo.size > 0,
      `round ${round}: nothing was acknowledged before the kill (${pushed.size} pushes, ${movedTo.size} moves of ${sent.size} sent)`,
    );
    outcomes.push(`${pushed.size} pushed, ${movedTo.size} moves, ${popped.size} popped, ${where.size} present`);
  }
  process.stdout.write(`# list crash rounds: ${outcomes.join('; ')}\n`);
});
