/**
 * Blocking pops at shutdown (docs/operations.md, "Graceful shutdown";
 * docs/api.md, "Lists"): a pop still waiting when SIGTERM arrives is
 * answered 503 at once, having popped nothing, and does not hold the
 * shutdown for its wait_ms nor for the 10 s drain limit. Every item pushed
 * is, after a restart, either in exactly one 200 answer or still in the
 * list, never both, never neither, including when a push races with the
 * signal (on the shared store: a push on another node that wakes the waiters
 * of the node stopping).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, test } from 'node:test';
import { tcpQueues } from '../helpers/proc.js';
import { PithosServer, STORE, poster, rawRequest, untilTrue, uniq } from '../helpers/server.js';

/** Far beyond the bounds below: a pop still waiting out its wait_ms fails the test. */
const WAIT_MS = 25_000;
/** A waiting pop's answer after the signal: far below wait_ms and the 10 s drain limit. */
const ANSWER_BOUND_MS = 2_000;
/** The process's exit after the signal: well before the 10 s drain limit. */
const EXIT_BOUND_MS = 6_000;

const servers: PithosServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

interface Answer {
  status: number;
  message?: string;
  items?: unknown[];
  connection?: string;
  /** When the answer (or the failure) arrived (Date.now()). */
  at: number;
  error?: string;
}

/**
 * A blocking pop on a connection of its own; `read` resolves once the server
 * has read the whole request (nothing of it queued on either end), so it is
 * waiting there, however busy the machine.
 */
function waitingPop(srv: PithosServer, list: string): { answer: Promise<Answer>; read: Promise<void> } {
  const body = Buffer.from(JSON.stringify({ wait_ms: WAIT_MS }));
  const req = http.request({
    host: '127.0.0.1',
    port: srv.port,
    method: 'POST',
    path: `/lists/${list}/pop`,
    agent: false,
    headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Content-Length': body.length },
  });
  const answer = new Promise<Answer>((resolve) => {
    req.on('response', (res) => {
      let raw = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (raw += d));
      res.on('end', () => {
        const b = JSON.parse(raw) as { message?: string; data?: { items?: unknown[] } };
        resolve({ status: res.statusCode ?? 0, message: b.message, items: b.data?.items, connection: res.headers.connection, at: Date.now() });
      });
    });
    req.on('error', (e) => resolve({ status: -1, error: String(e), at: Date.now() }));
  });
  const connected = new Promise<number>((r) => req.once('socket', (s: net.Socket) => s.once('connect', () => r(s.localPort as number))));
  const written = new Promise<void>((r) => req.end(body, () => r()));
  const read = (async () => {
    const port = await connected;
    await written;
    await untilTrue(`the server reading the pop sent from port ${port}`, () => {
      const [client, server] = [tcpQueues(port, srv.port), tcpQueues(srv.port, port)];
      return client !== undefined && server !== undefined && client.tx === 0 && server.rx === 0;
    });
  })();
  return { answer, read };
}

async function post(srv: PithosServer, path: string, body: unknown, agent?: http.Agent): Promise<Answer> {
  try {
    const r = await poster(srv, agent)(path, body);
    return { status: r.status, message: r.body?.message, items: r.body?.data?.items, connection: r.headers.connection, at: Date.now() };
  } catch (e) {
    return { status: -1, error: String(e), at: Date.now() };
  }
}

/**
 * A waiter's answer: its items when 200, else the refusal shutdown gives (nothing popped).
 * `unread`: the request may still have been unread when shutdown closed the connections (sent
 * just before the signal on an idle connection), so a failed connection is allowed, and it
 * popped nothing: the server reads every request it answers, and waits for every one it read.
 */
function checkAnswer(a: Answer, sentAt: number, who: string, unread = false): unknown[] {
  assert.ok(a.at - sentAt <= ANSWER_BOUND_MS, `${who}: answered ${a.at - sentAt} ms after SIGTERM (${a.status} ${a.error ?? ''})`);
  if (a.status === -1 && unread) return [];
  assert.ok(a.status !== -1, `${who}: no answer, the connection failed: ${a.error}`);
  if (a.status === 200) {
    assert.ok(a.items !== undefined && a.items.length > 0, `${who}: 200 with no items (its wait_ms is ${WAIT_MS} ms): ${JSON.stringify(a)}`);
    return a.items;
  }
  assert.equal(a.status, 503, `${who}: ${JSON.stringify(a)}`);
  assert.equal(a.message, 'server is shutting down', who);
  assert.equal(a.connection, 'close', `${who}: the 503 closes its connection`);
  return [];
}

/** Every item pushed for sure is in exactly one place; one whose push is in doubt in at most one. */
function account(sure: string[], doubtful: string[], answered: unknown[], left: unknown[]): void {
  const where = new Map<unknown, string>();
  for (const [place, items] of [
    ['a 200 answer', answered],
    ['the list', left],
  ] as const) {
    for (const v of items) {
      assert.ok(!where.has(v), `${String(v)} is in ${where.get(v)} and in ${place}`);
      assert.ok(sure.includes(v as string) || doubtful.includes(v as string), `${String(v)} was never pushed`);
      where.set(v, place);
    }
  }
  const lost = sure.filter((v) => !where.has(v));
  assert.deepEqual(lost, [], `acknowledged pushes neither answered nor left in the list`);
}

test('SIGTERM answers every waiting pop 503 at once, exits well before the drain limit, and no item is lost or given twice', async () => {
  const srv = await PithosServer.start({ testClock: false });
  servers.push(srv);
  const list = uniq('q');
  const WAITERS = 5;
  const waiters = Array.from({ length: WAITERS }, () => waitingPop(srv, list));
  await Promise.all(waiters.map((w) => w.read));
  // Fewer items than waiters: two are served, the others are still waiting at the signal.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const first = await post(srv, `/lists/${list}/push`, { values: ['a', 'b'] }, agent);
  assert.equal(first.status, 200, JSON.stringify(first));
  // A push on an open connection racing with the signal: it lands before (a waiter gets it),
  // during the drain (it stays in the list) or after (503, nothing pushed).
  const racing = post(srv, `/lists/${list}/push`, { values: ['c'] }, agent);
  const sentAt = Date.now();
  srv.signal('SIGTERM');
  const answers = await Promise.all(waiters.map((w) => w.answer));
  const info = await srv.waitExit(15_000);
  const exitMs = Date.now() - sentAt;
  agent.destroy();
  const answered = answers.flatMap((a, i) => checkAnswer(a, sentAt, `waiter ${i}`));
  assert.deepEqual(info, { code: 0, signal: null }, `exit after SIGTERM: ${JSON.stringify(info)}\nstderr: ${srv.history.at(-1)?.stderr}`);
  assert.ok(exitMs <= EXIT_BOUND_MS, `the process exited ${exitMs} ms after SIGTERM`);
  assert.ok(answers.filter((a) => a.status === 503).length >= WAITERS - 3, `at most three items to pop: ${JSON.stringify(answers)}`);
  const r = await racing;
  assert.ok([200, 503, -1].includes(r.status), `the racing push: ${JSON.stringify(r)}`);

  await srv.spawn();
  const g = await srv.req('GET', `/lists/${list}`);
  const left: unknown[] = g.status === 404 ? [] : g.body.data.items;
  assert.ok(g.status === 200 || g.status === 404, g.raw.slice(0, 200));
  account(r.status === 200 ? ['a', 'b', 'c'] : ['a', 'b'], r.status === -1 ? ['c'] : [], answered, left);
  process.stdout.write(`# waiters ${answers.map((x) => x.status).join(' ')}, racing push ${r.status}, left in the list ${JSON.stringify(left)}\n`);
  await srv.kill('SIGTERM');
});

test(
  'shared store: pushes on another node racing with SIGTERM: the stopping node answers its waiters at once, each item goes to one popper or stays',
  { skip: STORE === 'log' ? 'several nodes share only the PostgreSQL store' : false },
  async () => {
    const a = await PithosServer.start({ testClock: false });
    servers.push(a);
    const b = await PithosServer.start({ testClock: false, store: a.storeUrl });
    servers.push(b);
    const list = uniq('q');
    const WORKERS = 8;
    let signalled = false;
    let sentAt = 0;
    const answered: unknown[] = [];
    const stopA = (): void => {
      if (signalled) return;
      sentAt = Date.now();
      signalled = true;
      a.signal('SIGTERM');
    };
    /** The first item of the burst the signal interrupts: A's waiters are taking the others. */
    const TRIGGER = 'v6-0';
    // Workers on node A pop with a long wait, again and again, until the signal, each on a
    // connection of its own that the server has accepted (a round trip) before the signal.
    let ready = 0;
    const agents = Array.from({ length: WORKERS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    const workers = agents.map(async (agent, i) => {
      const probe = await rawRequest({ port: a.port, method: 'GET', path: '/livez', agent });
      assert.equal(probe.status, 200);
      ready++;
      for (;;) {
        const ans = await post(a, `/lists/${list}/pop`, { wait_ms: WAIT_MS }, agent);
        if (!signalled) {
          assert.ok(ans.status === 200 && (ans.items ?? []).length > 0, `worker ${i} before the signal: ${JSON.stringify(ans)}`);
          answered.push(...(ans.items ?? []));
          if (ans.items?.includes(TRIGGER) === true) {
            stopA();
            return;
          }
          continue;
        }
        answered.push(...checkAnswer(ans, sentAt, `worker ${i}`, true));
        return;
      }
    });
    await untilTrue('every worker connected to node A', () => ready === WORKERS);
    // Node B pushes bursts of fewer items than A has waiters, each popped before the next, so
    // some of A's waiters are always waiting. The signal follows the first answer of burst 6 at
    // once, while A's waiters are taking its other items; one more burst races with A's drain.
    // At least two of A's waiters have nothing to pop after the signal.
    const BURST = 3;
    const sure: string[] = [];
    const doubtful: string[] = [];
    const agentB = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const pusher = (async () => {
      try {
        for (let i = 0; i <= 7; i++) {
          const values = Array.from({ length: BURST }, (_, j) => `v${i}-${j}`);
          const r = await post(b, `/lists/${list}/push`, { values }, agentB);
          (r.status === 200 ? sure : doubtful).push(...values);
          if (!signalled) await untilTrue(`node A popping burst ${i}`, () => signalled || answered.length >= sure.length);
        }
      } finally {
        // A failed pusher still lets the workers finish, and the test report its failure.
        stopA();
      }
    })();
    const done = await Promise.allSettled(workers);
    const info = await a.waitExit(15_000);
    const exitMs = Date.now() - sentAt;
    await pusher;
    agentB.destroy();
    for (const ag of agents) ag.destroy();
    for (const d of done) if (d.status === 'rejected') throw d.reason;
    assert.deepEqual(info, { code: 0, signal: null }, `exit after SIGTERM: ${JSON.stringify(info)}\nstderr: ${a.history.at(-1)?.stderr}`);
    assert.ok(exitMs <= EXIT_BOUND_MS, `node A exited ${exitMs} ms after SIGTERM`);
    const g = await b.req('GET', `/lists/${list}`);
    assert.equal(g.status, 200, g.raw.slice(0, 200));
    account(sure, doubtful, answered, g.body.data.items);
    process.stdout.write(`# pushed ${sure.length}, popped on A ${answered.length}, left in the list ${g.body.data.items.length}\n`);
    await b.kill('SIGTERM');
  },
);
