/**
 * The Redis protocol beside the real Redis (docs/benchmarks.md, "Redis
 * protocol"): `redis-benchmark` (Debian's redis-tools) against Pithos's RESP
 * port (log store, --fsync always) and against `redis-server` with
 * `appendonly yes, appendfsync always`, the two alternated round by round in
 * one run, 32 connections, without and with 16 commands pipelined. Keys and
 * members are random (`-r`), so every write changes something and both sides
 * make it durable before answering.
 *
 * Run alone with `npm run bench:redis [-- --rounds N --requests N]`, or as
 * part of `npm run bench` (its comparisons). Every run is bounded by its
 * request count and killed after 120 s.
 */
import { spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRespPair } from './resp-pair.js';

export interface RespLine {
  test: string;
  pipeline: number;
  pithos: number[];
  redis: number[];
  /** The bare node:net baseline (bench/resp-baseline.ts): what Node itself reaches doing the same durably. */
  node: number[];
  target: number;
}

const TESTS: Array<{ t: string; p: number; target: number }> = [
  { t: 'incr', p: 1, target: 1.0 },
  { t: 'set', p: 1, target: 1.0 },
  { t: 'lpush', p: 1, target: 1.0 },
  { t: 'sadd', p: 1, target: 1.0 },
  { t: 'zadd', p: 1, target: 1.0 },
  { t: 'get', p: 1, target: 0.7 },
  { t: 'incr', p: 16, target: 0.5 },
  { t: 'get', p: 16, target: 0.5 },
];

/** One redis-benchmark run; resolves to requests per second. */
function bench(port: number, password: string | undefined, test: string, pipeline: number, requests: number): Promise<number> {
  const args = ['-h', '127.0.0.1', '-p', String(port), '-c', '32', '-n', String(requests), '-r', '100000', '-P', String(pipeline), '-t', test, '--csv'];
  if (password !== undefined) args.push('-a', password);
  return new Promise((resolve, reject) => {
    const child = spawn('redis-benchmark', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', () => {
      clearTimeout(timer);
      const m = /^"[^"]+","([\d.]+)"/m.exec(out);
      if (m === null) reject(new Error(`redis-benchmark ${test} gave no rate:\n${out.slice(-500)}`));
      else resolve(Number(m[1]));
    });
  });
}

export async function respLines(o: { root: string; server: string; rounds: number; requests: number; log: (s: string) => void }): Promise<RespLine[] | string> {
  if (spawnSync('sh', ['-c', 'command -v redis-benchmark && command -v redis-server']).status !== 0)
    return 'redis-benchmark or redis-server not installed (Debian packages redis-tools, redis-server)';
  const pair = await startRespPair({
    server: resolve(o.root, o.server),
    redisArgs: ['--appendonly', 'yes', '--appendfsync', 'always'],
    pithosArgs: ['--fsync', 'always'],
    baseline: true,
  });
  const { pithosPort: pport, redisPort: rport, token } = pair;
  const ports = { pithos: pport, redis: rport, node: pair.baselinePort! };
  try {
    const lines: RespLine[] = TESTS.map((x) => ({ test: x.t, pipeline: x.p, pithos: [], redis: [], node: [], target: x.target }));
    for (let round = 0; round < o.rounds; round++) {
      for (const line of lines) {
        // Alternate which side goes first, so neither always runs on a warmer machine.
        const sides: Array<'pithos' | 'redis' | 'node'> = round % 2 === 0 ? ['pithos', 'redis', 'node'] : ['node', 'redis', 'pithos'];
        for (const side of sides) {
          const rate = await bench(ports[side], side === 'pithos' ? token : undefined, line.test, line.pipeline, o.requests * line.pipeline);
          line[side].push(rate);
        }
        o.log(
          `  ${line.test.toUpperCase()} -P ${line.pipeline}: Pithos ${line.pithos.at(-1)?.toFixed(0)}/s, Redis ${line.redis.at(-1)?.toFixed(0)}/s, node:net ${line.node.at(-1)?.toFixed(0)}/s (load ${loadavg()[0]!.toFixed(1)})`,
        );
      }
    }
    return lines;
  } finally {
    await pair.stop();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export function respTable(lines: RespLine[]): string {
  const out = [
    '| command | pipeline | Pithos (median/s) | Redis appendfsync always (median/s) | node:net baseline (median/s) | ratio per round | ratio (medians) | baseline ÷ Redis | target |',
    '|---|---:|---:|---:|---:|---|---:|---:|---|',
  ];
  for (const l of lines) {
    const per = l.pithos.map((p, i) => (p / (l.redis[i] ?? NaN)).toFixed(2)).join(', ');
    const ratio = median(l.pithos) / median(l.redis);
    out.push(
      `| ${l.test.toUpperCase()} | ${l.pipeline} | ${median(l.pithos).toFixed(0)} | ${median(l.redis).toFixed(0)} | ${median(l.node).toFixed(0)} | ${per} | ${ratio.toFixed(2)}× | ${(median(l.node) / median(l.redis)).toFixed(2)}× | ≥ ${l.target}× ${ratio >= l.target ? 'met' : 'not met'} |`,
    );
  }
  return out.join('\n');
}

/** `npm run bench:redis [-- --rounds N --requests N]`: this section alone. */
async function main(): Promise<void> {
  const arg = (name: string, def: number): number => {
    const i = process.argv.indexOf(name);
    return i < 0 ? def : Number(process.argv[i + 1]);
  };
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const lines = await respLines({
    root,
    server: 'bin/pithos',
    rounds: arg('--rounds', 3),
    requests: arg('--requests', 20000),
    log: (s) => process.stderr.write(s + '\n'),
  });
  process.stdout.write(typeof lines === 'string' ? `skipped: ${lines}\n` : respTable(lines) + '\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`${String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  });
}
