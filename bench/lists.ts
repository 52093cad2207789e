/**
 * List figures (docs/benchmarks-history.md, "Lists"), a closed-loop load from this
 * process over keep-alive HTTP, not wrk: a push + pop pair against the
 * durable variant increment in the same run and mode, and the wake-up
 * latency of a blocking pop (push sent → pop answered).
 *
 *   node dist/bench/lists.js [--modes always,never] [--seconds 5] [--connections 16] [--wakeups 200]
 *
 * Each figure is one run on whatever machine runs it; the two throughputs are
 * measured on the same server after a second of warm-up each, twice each,
 * alternated, and averaged.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './proc.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TOKEN = 'SECRET';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt;
}

const modes = arg('modes', 'always,never').split(',');
const seconds = Number(arg('seconds', '5'));
const connections = Number(arg('connections', '16'));
const wakeups = Number(arg('wakeups', '200'));

function post(agent: Agent, port: number, path: string, body: string): Promise<string> {
  return new Promise((res, rej) => {
    const r = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        agent,
        headers: { 'Auth-Token': TOKEN, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
      },
      (m) => {
        let s = '';
        m.setEncoding('utf8');
        m.on('data', (c: string) => (s += c));
        m.on('end', () => (m.statusCode === 200 || m.statusCode === 201 ? res(s) : rej(new Error(`${path}: ${m.statusCode} ${s}`))));
      },
    );
    r.on('error', rej);
    r.end(body);
  });
}

/** Operations per second of `op` run by `connections` loops for `seconds`. */
async function closedLoop(op: (agent: Agent, c: number) => Promise<void>, forS = seconds): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const until = Date.now() + forS * 1000;
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async (_, c) => {
      while (Date.now() < until) {
        await op(agent, c);
        n++;
      }
    }),
  );
  const per = n / ((performance.now() - t0) / 1000);
  agent.destroy();
  return per;
}

const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

for (const mode of modes) {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-bench-lists-'));
  const s = await startServer(
    'Pithos',
    process.execPath,
    [
      process.env.PITHOS_BENCH_SERVER ?? join(ROOT, 'bin', 'pithos'),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--data-dir',
      dir,
      '--auth-token',
      TOKEN,
      '--fsync',
      mode,
    ],
    { cwd: ROOT },
  );
  try {
    const setup = new Agent({ keepAlive: true });
    for (let c = 0; c < connections; c++) {
      await new Promise<void>((res, rej) => {
        const body = '{"variant":0}';
        const r = request(
          {
            host: '127.0.0.1',
            port: s.port,
            method: 'PUT',
            path: `/variants/v${c}`,
            agent: setup,
            headers: { 'Auth-Token': TOKEN, 'Content-Type': 'application/json', 'Content-Length': body.length },
          },
          (m) => {
            m.resume();
            m.on('end', () => (m.statusCode === 201 ? res() : rej(new Error(`PUT variant: ${m.statusCode}`))));
          },
        );
        r.on('error', rej);
        r.end(body);
      });
    }
    setup.destroy();
    const increment = async (a: Agent, c: number): Promise<void> => {
      await post(a, s.port, `/variants/v${c}`, '{"delta":1}');
    };
    const pair = async (a: Agent, c: number): Promise<void> => {
      await post(a, s.port, `/lists/q${c}/push`, '{"values":["0123456789abcdef"]}');
      await post(a, s.port, `/lists/q${c}/pop`, '{}');
    };
    // Both warmed up first (the JIT), then measured twice each, alternated, as the machine's own speed drifts.
    await closedLoop(increment, 1);
    await closedLoop(pair, 1);
    let incr = 0;
    let pairs = 0;
    for (let round = 0; round < 2; round++) {
      incr += (await closedLoop(increment)) / 2;
      pairs += (await closedLoop(pair)) / 2;
    }
    // Wake-up: one waiter, then a push on another connection; time from sending the push to the pop's answer.
    const lat: number[] = [];
    const wa = new Agent({ keepAlive: true, maxSockets: 1 });
    const pa = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < wakeups; i++) {
      const waiting = post(wa, s.port, '/lists/wake/pop', '{"wait_ms":10000}');
      await new Promise((r) => setTimeout(r, 5));
      const t0 = performance.now();
      void post(pa, s.port, '/lists/wake/push', `{"values":[${i}]}`);
      const got = await waiting;
      lat.push(performance.now() - t0);
      if (!got.includes(`"items":[${i}]`)) throw new Error(`wake-up ${i} answered ${got}`);
    }
    wa.destroy();
    pa.destroy();
    lat.sort((x, y) => x - y);
    process.stdout.write(
      `fsync=${mode}: variant increment ${incr.toFixed(0)} req/s; list push+pop ${pairs.toFixed(0)} pairs/s ` +
        `(${(pairs / incr).toFixed(2)}x, target ≥ 0.8x; a pair is two requests: ${((2 * pairs) / incr).toFixed(2)}x per request); ` +
        `blocking-pop wake-up p50 ${pct(lat, 50).toFixed(2)} ms, p99 ${pct(lat, 99).toFixed(2)} ms (target p99 ≤ 5 ms), max ${(lat[lat.length - 1] ?? NaN).toFixed(2)} ms ` +
        `(${wakeups} wake-ups, ${connections} connections, ${seconds} s each)\n`,
    );
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
