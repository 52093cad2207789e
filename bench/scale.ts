/**
 * `node dist/bench/scale.js [--duration S] [--connections C] [--nodes 1,2,3]`:
 * throughput of GET variant, durable increment and a 4-mutation transaction
 * for 1, 2 and 3 Pithos nodes over one throw-away PostgreSQL cluster, beside
 * one log-store node (--fsync always). A closed loop of C concurrent
 * keep-alive clients spread round-robin over the nodes, in this process: on
 * a small machine the load generator, the nodes and PostgreSQL share the
 * CPUs, so the numbers say how the pieces compare here, not what a cluster
 * of machines does. The load average is printed with every row.
 */
import http from 'node:http';
import os from 'node:os';
import { PgCluster, freshSchema } from '../test/helpers/postgres.js';
import { PithosServer } from '../test/helpers/server.js';

const arg = (name: string, def: string): string => {
  const i = process.argv.indexOf(name);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : def;
};
const DURATION_S = Number(arg('--duration', '5'));
const CONNECTIONS = Number(arg('--connections', '32'));
const NODES = arg('--nodes', '1,2,3').split(',').map(Number);

interface Op {
  name: string;
  setup(s: PithosServer): Promise<void>;
  req(i: number): [string, string, unknown];
}

const OPS: Op[] = [
  {
    name: 'GET variant',
    async setup(s) {
      await s.req('PUT', '/variants/bench-get', { variant: 42 });
    },
    req: () => ['GET', '/variants/bench-get', undefined],
  },
  {
    name: 'increment (+1)',
    async setup(s) {
      for (let k = 0; k < 64; k++) await s.req('PUT', `/variants/bench-inc-${k}`, { variant: 0 });
    },
    // 64 counters: contention on one row would measure the row lock only.
    req: (i) => ['POST', `/variants/bench-inc-${i % 64}`, { delta: 1 }],
  },
  {
    name: 'txn, 4 mutations',
    async setup(s) {
      await s.req('PUT', '/tables/bench-t');
      for (let k = 0; k < 64; k++) await s.req('PUT', `/variants/bench-acct-${k}`, { variant: 1000000 });
    },
    req: (i) => [
      'POST',
      '/txns',
      {
        mutations: [
          { kind: 'variant', name: `bench-acct-${i % 64}`, operation: 'ADD', delta: -1 },
          { kind: 'variant', name: `bench-acct-${(i + 1) % 64}`, operation: 'ADD', delta: 1 },
          { name: 'bench-t', operation: 'INSERT', values: { i } },
          { kind: 'record', name: `bench-r-${i % 1000}`, operation: 'PUT', values: { i } },
        ],
      },
    ],
  },
];

async function measure(nodes: PithosServer[], op: Op): Promise<{ rps: number; p50: number; p99: number; errors: number; load: string }> {
  for (const n of nodes) {
    n.agent.destroy();
    n.agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  }
  let stop = false;
  let count = 0;
  let errors = 0;
  const lat: number[] = [];
  let measuring = false;
  let seq = 0;
  const worker = async (w: number): Promise<void> => {
    const node = nodes[w % nodes.length];
    while (!stop) {
      const [m, p, b] = op.req(seq++);
      const t0 = performance.now();
      const r = await node.req(m, p, b);
      if (!measuring) continue;
      if (r.status >= 300) errors++;
      else {
        count++;
        lat.push(performance.now() - t0);
      }
    }
  };
  const workers = Array.from({ length: CONNECTIONS }, (_, w) => worker(w));
  await new Promise((r) => setTimeout(r, 1000)); // warm-up
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, DURATION_S * 1000));
  measuring = false;
  const secs = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(workers);
  lat.sort((a, b) => a - b);
  const pct = (q: number): number => (lat.length === 0 ? NaN : lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]);
  return {
    rps: count / secs,
    p50: pct(0.5),
    p99: pct(0.99),
    errors,
    load: os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' '),
  };
}

async function main(): Promise<void> {
  const rows: string[] = [];
  const report = (store: string, n: number, op: string, r: Awaited<ReturnType<typeof measure>>): void => {
    const line = `| ${store} | ${n} | ${op} | ${Math.round(r.rps)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.errors} | ${r.load} |`;
    rows.push(line);
    process.stdout.write(line + '\n');
  };
  process.stdout.write(`# ${os.cpus().length} CPUs, ${CONNECTIONS} connections, ${DURATION_S} s per row after 1 s warm-up\n`);
  process.stdout.write('| store | nodes | operation | req/s | p50 ms | p99 ms | errors | load avg 1/5/15 min |\n|---|---|---|---|---|---|---|---|\n');
  const log = await PithosServer.start({ testClock: false });
  for (const op of OPS) {
    await op.setup(log);
    report('log', 1, op.name, await measure([log], op));
  }
  await log.close();
  const cluster = await PgCluster.create();
  try {
    for (const n of NODES) {
      const url = await freshSchema(cluster.url, `bench${n}`);
      const nodes = await Promise.all(Array.from({ length: n }, () => PithosServer.start({ store: url, testClock: false })));
      try {
        for (const op of OPS) {
          await op.setup(nodes[0]);
          report('postgres', n, op.name, await measure(nodes, op));
        }
      } finally {
        await Promise.all(nodes.map((s) => s.close()));
      }
    }
  } finally {
    cluster.destroy();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
