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

async function main(): Promise<void> {
  if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) throw new Error('redis-server not installed (Debian package redis-server)');
  const rounds = arg('--rounds', 3);
  const messages = arg('--messages', 2000);
  const subscribers = arg('--subscribers', 100);
  const pair = await startRespPair({ server: join(ROOT, 'bin', 'pithos'), redisArgs: [], pithosArgs: [] });
  const { pithosPort: pport, redisPort: rport, token } = pair;
  const rates = { pithos: [] as number[], redis: [] as number[] };
  try {
    for (let r = 0; r < rounds; r++) {
      // Alternate which side goes first, so neither always runs on a warmer machine.
      for (const side of r % 2 === 0 ? (['pithos', 'redis'] as const) : (['redis', 'pithos'] as const)) {
        rates[side].push(await round(side === 'pithos' ? pport : rport, side === 'pithos' ? token : undefined, subscribers, messages));
      }
      console.log(
        `round ${r + 1}: Pithos ${rates.pithos.at(-1)!.toFixed(0)}/s, Redis ${rates.redis.at(-1)!.toFixed(0)}/s delivered (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    await pair.stop();
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`\n| subscribers | messages | Pithos (median/s) | Redis (median/s) | ratio per round | ratio (medians) |`);
  console.log(`|---:|---:|---:|---:|---|---:|`);
  const per = rates.pithos.map((p, i) => (p / rates.redis[i]!).toFixed(2)).join(', ');
  console.log(
    `| ${subscribers} | ${messages} | ${median(rates.pithos).toFixed(0)} | ${median(rates.redis).toFixed(0)} | ${per} | ${(median(rates.pithos) / median(rates.redis)).toFixed(2)}× |`,
  );
}

await main();
