/**
 * Pub/sub fan-out beside the real Redis (docs/benchmarks.md, "Pub/sub
 * fan-out"): one publisher and 100 subscribers of one channel over RESP,
 * against Pithos (log store) and against `redis-server`, alternated round by
 * round in one run. A round publishes a fixed count of 100-byte messages, 64
 * in flight, and ends when every subscriber holds every message; its figure
 * is messages delivered per second (published × subscribers ÷ seconds).
 * Pub/sub keeps nothing, so neither side touches its disk.
 *
 *   npm run bench:pubsub [-- --rounds 3 --messages 2000 --subscribers 100]
 *
 * Bounded: each round gives up after 60 s.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRespPair } from './resp-pair.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, def: number): number => {
  const i = process.argv.indexOf(name);
  return i < 0 ? def : Number(process.argv[i + 1]);
};

/** One round against the server on `port`: messages delivered per second. */
async function round(port: number, password: string | undefined, subscribers: number, messages: number): Promise<number> {
  const opts = { port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0 };
  const subs = Array.from({ length: subscribers }, () => new Redis(opts));
  const pub = new Redis(opts);
  try {
    await Promise.all([...subs, pub].map((c) => c.connect()));
    let delivered = 0;
    const want = subscribers * messages;
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    for (const s of subs) {
      s.on('message', () => {
        if (++delivered === want) done();
      });
      await s.subscribe('fanout');
    }
    const body = 'x'.repeat(100);
    const t0 = performance.now();
    for (let i = 0; i < messages; i += 64) {
      const n = Math.min(64, messages - i);
      await Promise.all(Array.from({ length: n }, () => pub.publish('fanout', body)));
    }
    const timeout = new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`${delivered} of ${want} delivered in 60 s`)), 60_000).unref());
    await Promise.race([all, timeout]);
    return want / ((performance.now() - t0) / 1000);
  } finally {
    for (const c of [...subs, pub]) c.disconnect();
  }
}

export interface PubsubRates {
  subscribers: number;
  messages: number;
  pithos: number[];
  redis: number[];
}

/** `rounds` rounds on each side, alternated; a string says why it could not run. */
export async function pubsubRates(o: {
  server: string;
  rounds: number;
  messages: number;
  subscribers: number;
  log: (s: string) => void;
}): Promise<PubsubRates | string> {
  if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) return 'redis-server not installed (Debian package redis-server)';
  const pair = await startRespPair({ server: o.server, redisArgs: [], pithosArgs: [] });
  const { pithosPort: pport, redisPort: rport, token } = pair;
  const rates: PubsubRates = { subscribers: o.subscribers, messages: o.messages, pithos: [], redis: [] };
  try {
    for (let r = 0; r < o.rounds; r++) {
      // Alternate which side goes first, so neither always runs on a warmer machine.
      for (const side of r % 2 === 0 ? (['pithos', 'redis'] as const) : (['redis', 'pithos'] as const)) {
        rates[side].push(await round(side === 'pithos' ? pport : rport, side === 'pithos' ? token : undefined, o.subscribers, o.messages));
      }
      o.log(
        `  pub/sub round ${r + 1}: Pithos ${rates.pithos.at(-1)!.toFixed(0)}/s, Redis ${rates.redis.at(-1)!.toFixed(0)}/s delivered (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    await pair.stop();
  }
  return rates;
}

export function pubsubTable(r: PubsubRates): string {
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const per = r.pithos.map((p, i) => (p / r.redis[i]!).toFixed(2)).join(', ');
  return [
    '| subscribers | messages | Pithos (median/s) | Redis (median/s) | ratio per round | ratio (medians) |',
    '|---:|---:|---:|---:|---|---:|',
    `| ${r.subscribers} | ${r.messages} | ${median(r.pithos).toFixed(0)} | ${median(r.redis).toFixed(0)} | ${per} | ${(median(r.pithos) / median(r.redis)).toFixed(2)}× |`,
  ].join('\n');
}

async function main(): Promise<void> {
  const r = await pubsubRates({
    server: join(ROOT, 'bin', 'pithos'),
    rounds: arg('--rounds', 3),
    messages: arg('--messages', 2000),
    subscribers: arg('--subscribers', 100),
    log: (s) => console.log(s),
  });
  if (typeof r === 'string') throw new Error(r);
  console.log('\n' + pubsubTable(r));
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main();
