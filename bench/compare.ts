/**
 * The comparisons `npm run bench` prints beside its table, measured in the same run:
 *
 * - webdis in front of Redis (`appendfsync always`): a durable INCR and a SET of
 *   the same 100 bytes, driven by the same wrk settings (bench/wrk/bench.lua) as
 *   Pithos's durable increment and 100-byte PUT of the main table;
 * - Pithos on a throw-away PostgreSQL cluster (increment over 64 counters, a
 *   3-mutation /txns), beside `pgbench` running the statements Pithos runs, in
 *   one round trip (bench/pgbench/*.sql), with the node's pool size (10) as
 *   its connection count, against the same tables (triggers included), and
 *   sent as Pithos sends them (PROTOCOL: the increment prepared, the /txns
 *   parsed every time). The same increment with the change feed's triggers
 *   disabled gives the feed's capture cost apart.
 *
 * A program that is not installed skips its lines with a note. Every run is
 * bounded: wrk and pgbench get a duration and are killed 30 s past it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { http, parallel, startServer, type Server } from './proc.js';
import { instantiate, SMALL_RECORD, type LuaRequest } from './ops.js';
import { mergeResults, okCount, errorSummary, percentile, runWrk, type WrkResult } from './wrk.js';
import { PgCluster, pgBinDir } from '../test/helpers/postgres.js';
import { freePort, waitPort } from '../test/helpers/net.js';

export interface CompareOptions {
  root: string;
  server: string;
  token: string;
  connections: number;
  threads: number;
  durationS: number;
  warmupS: number;
  rounds: number;
  which: Set<'redis' | 'postgres'>;
  log: (s: string) => void;
}

/** One comparison line: Pithos's figure (from the main table or measured here) beside the other system's. */
export interface Comparison {
  work: string;
  pithos?: number;
  pithosNote?: string;
  other: string;
  otherRate?: number;
  otherNote?: string;
  target?: number;
  /** Worst 1-minute load average seen while measuring the line. */
  load?: number;
}

const PG_POOL = 10;
const PG_KEYS = 64;

const onPath = (cmd: string): string | undefined => {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
};

function kill(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

let runs = 0;
async function wrk(o: CompareOptions, url: string, req: LuaRequest, durationS: number, expect = ''): Promise<WrkResult> {
  return runWrk({
    url,
    threads: Math.min(o.threads, o.connections),
    connections: o.connections,
    durationS,
    script: join(o.root, 'bench', 'wrk', 'bench.lua'),
    scriptArgs: ['template', req.method, req.path, req.body, String(req.keys), `c${Date.now().toString(36)}${runs++}`, o.token, expect],
  });
}

const rate = (r: WrkResult): number => (r.durationUs > 0 ? okCount(r) / (r.durationUs / 1e6) : 0);

/** Runs `a` and `b` alternately (a b, b a, …) for the run's rounds; returns their merged rates. */
async function interleave(o: CompareOptions, what: string, a: () => Promise<number>, b: () => Promise<number>): Promise<[number, number, number]> {
  const ra: number[] = [];
  const rb: number[] = [];
  let load = 0;
  for (let i = 0; i < o.rounds; i++) {
    const order: Array<[() => Promise<number>, number[], string]> =
      i % 2 === 0
        ? [
            [a, ra, 'Pithos'],
            [b, rb, 'other'],
          ]
        : [
            [b, rb, 'other'],
            [a, ra, 'Pithos'],
          ];
    for (const [f, into, name] of order) {
      const v = await f();
      into.push(v);
      load = Math.max(load, loadavg()[0]!);
      o.log(`${what}: round ${i + 1}/${o.rounds} ${name} ${Math.round(v).toLocaleString('en-US')}/s, load ${loadavg()[0]!.toFixed(2)}`);
    }
  }
  const mean = (x: number[]): number => x.reduce((s, v) => s + v, 0) / x.length;
  return [mean(ra), mean(rb), load];
}

/** webdis + Redis (`appendfsync always`): INCR and a 100-byte SET, rates per second. */
export async function redisLines(o: CompareOptions, pithosIncr: number | undefined, pithosSet: number | undefined): Promise<Comparison[]> {
  const redis = onPath('redis-server');
  const webdis = onPath('webdis');
  const lines: Comparison[] = [
    { work: 'durable increment (log store, --fsync always)', pithos: pithosIncr, other: 'webdis + Redis INCR (appendfsync always)', target: 1.3 },
    {
      work: 'durable 100-byte PUT (log store, --fsync always)',
      pithos: pithosSet,
      other: 'webdis + Redis SET, same 100 bytes (appendfsync always)',
      target: 1.3,
    },
  ];
  for (const l of lines) if (l.pithos === undefined) l.pithosNote = 'not measured in this run (--ops)';
  if (redis === undefined || webdis === undefined) {
    const missing = [redis === undefined ? 'redis-server' : '', webdis === undefined ? 'webdis' : ''].filter(Boolean).join(' and ');
    for (const l of lines) l.otherNote = `${missing} not installed (Debian packages redis-server, webdis)`;
    return lines;
  }
  const dir = mkdtempSync(join(tmpdir(), 'pithos-bench-redis-'));
  let rs: ChildProcess | undefined;
  let wd: ChildProcess | undefined;
  try {
    const rport = await freePort();
    rs = spawn(
      redis,
      [
        '--port',
        String(rport),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
        '--protected-mode',
        'no',
        '--logfile',
        join(dir, 'redis.log'),
      ],
      { stdio: 'ignore' },
    );
    await waitPort(rport, { ms: 10_000, child: rs, name: 'redis-server' });
    const wport = await freePort();
    writeFileSync(
      join(dir, 'webdis.json'),
      JSON.stringify({
        redis_host: '127.0.0.1',
        redis_port: rport,
        http_host: '127.0.0.1',
        http_port: wport,
        threads: cpus().length,
        pool_size: 20,
        daemonize: false,
        database: 0,
        verbosity: 1,
        logfile: join(dir, 'webdis.log'),
      }),
    );
    wd = spawn(webdis, [join(dir, 'webdis.json')], { stdio: 'ignore', cwd: dir });
    await waitPort(wport, { ms: 10_000, child: wd, name: 'webdis' });
    const url = `http://127.0.0.1:${wport}`;
    const incr: LuaRequest = { mode: 'template', method: 'GET', path: '/INCR/bench-{{k}}', body: '', keys: 1000 };
    const set: LuaRequest = { mode: 'template', method: 'PUT', path: '/SET/bs-{{k}}', body: SMALL_RECORD, keys: 1000 };
    // The answers must be Redis's, not webdis's errors.
    const a = await http({ host: '127.0.0.1', port: wport }, o.token, 'GET', '/INCR/bench-000000');
    if (a.status !== 200 || !/"INCR":\d+/.test(a.body)) throw new Error(`webdis INCR answered ${a.status} ${a.body.slice(0, 200)}`);
    const b = await http({ host: '127.0.0.1', port: wport }, o.token, 'PUT', '/SET/bs-000000', instantiate(SMALL_RECORD, 1000, 0, ''));
    if (b.status !== 200 || !b.body.includes('"SET"')) throw new Error(`webdis SET answered ${b.status} ${b.body.slice(0, 200)}`);
    for (const [line, req, expect] of [
      [lines[0]!, incr, '"INCR":'],
      [lines[1]!, set, '"SET":'],
    ] as const) {
      if (o.warmupS > 0) await wrk(o, url, req, o.warmupS, expect);
      const got: WrkResult[] = [];
      let load = 0;
      for (let i = 0; i < o.rounds; i++) {
        const r = await wrk(o, url, req, o.durationS, expect);
        got.push(r);
        load = Math.max(load, loadavg()[0]!);
        o.log(
          `webdis ${req.path}: round ${i + 1}/${o.rounds} ${Math.round(rate(r)).toLocaleString('en-US')}/s, errors ${errorSummary(r).text}, ` +
            `p99 ${(percentile(r.latency, 99) / 1000).toFixed(2)} ms, load ${loadavg()[0]!.toFixed(2)}`,
        );
      }
      const m = mergeResults(got);
      line.otherRate = rate(m);
      line.load = load;
      if (errorSummary(m).total > 0) line.otherNote = `errors: ${errorSummary(m).text}`;
    }
  } catch (e) {
    for (const l of lines) if (l.otherRate === undefined) l.otherNote = `failed: ${(e as Error).message.replace(/\s+/g, ' ').slice(0, 160)}`;
  } finally {
    await kill(wd);
    await kill(rs);
    rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}

/**
 * How pgbench sends a script, as Pithos sends the same work: the increment
 * is a statement Pithos prepares once per connection (-M prepared: parsed
 * and planned once, then bound and executed); a /txns is a simple-protocol
 * query of statements with their values inlined, parsed and planned every
 * time (-M extended: an unnamed statement each time; pgbench's pipeline, the
 * one round trip, needs the extended protocol).
 */
const PROTOCOL = (script: string): string[] => ['-M', script.endsWith('increment.sql') ? 'prepared' : 'extended'];

interface PgbenchResult {
  tps: number;
  failed: number;
}

/** Runs pgbench for `durationS` with `script`; its tps (initial connection time excluded) and failed transactions. */
function pgbench(bin: string, cluster: PgCluster, script: string, durationS: number, clients: number): Promise<PgbenchResult> {
  const args = [
    ...PROTOCOL(script),
    '-h',
    '127.0.0.1',
    '-p',
    String(cluster.port),
    '-U',
    'postgres',
    '-n',
    '-c',
    String(clients),
    '-j',
    String(Math.min(clients, cpus().length)),
    '-T',
    String(durationS),
    '-f',
    script,
    'postgres',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const killer = setTimeout(() => child.kill('SIGKILL'), (durationS + 30) * 1000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(killer);
      const tps = /tps = ([0-9.]+) \(without initial connection time\)/.exec(out);
      const failed = /number of failed transactions: (\d+)/.exec(out);
      // A run that completed no transaction at all (a machine that busy) prints no tps.
      const none = /number of transactions actually processed: 0\b/.test(out);
      if (code !== 0 || (tps === null && !none)) return reject(new Error(`pgbench ${args.join(' ')} exited ${code}: ${out.slice(-1500)}`));
      resolve({ tps: tps === null ? 0 : Number(tps[1]), failed: failed === null ? 0 : Number(failed[1]) });
    });
  });
}

/** Pithos on PostgreSQL beside pgbench on the same statements, in one round trip. */
export async function postgresLines(o: CompareOptions): Promise<Comparison[]> {
  const lines: Comparison[] = [
    { work: `increment over ${PG_KEYS} counters (PostgreSQL store)`, other: `pgbench, the same UPDATE prepared, ${PG_POOL} connections`, target: 0.7 },
    {
      work: '3-mutation /txns: two counter adds and a record put (PostgreSQL store)',
      other: `pgbench, the same statements in one pipeline (one round trip), ${PG_POOL} connections`,
      target: 0.5,
    },
    { work: "change feed capture: the increment's UPDATE, pgbench, triggers on ÷ off", other: 'pgbench, the same UPDATE, change triggers disabled' },
  ];
  const bin = pgBinDir();
  const pgb = bin !== undefined && existsSync(join(bin, 'pgbench')) ? join(bin, 'pgbench') : onPath('pgbench');
  if (bin === undefined || pgb === undefined) {
    for (const l of lines) {
      l.pithosNote = bin === undefined ? 'PostgreSQL not installed' : '';
      l.otherNote = 'PostgreSQL (initdb, pgbench) not installed';
    }
    return lines;
  }
  let cluster: PgCluster | undefined;
  let pithos: Server | undefined;
  try {
    o.log('PostgreSQL comparison: starting a throw-away cluster');
    cluster = await PgCluster.create();
    pithos = await startServer(
      'Pithos (postgres)',
      process.execPath,
      [o.server, '--host', '127.0.0.1', '--port', '0', '--store', cluster.url, '--auth-token', o.token, '--pg-pool-size', String(PG_POOL)],
      { cwd: o.root },
    );
    const srv = pithos;
    const put = async (path: string, body: string): Promise<void> => {
      const a = await http(srv, o.token, 'PUT', path, body);
      if (a.status !== 201 && a.status !== 200) throw new Error(`set-up PUT ${path} answered ${a.status} ${a.body.slice(0, 200)}`);
    };
    await parallel([...Array(PG_KEYS).keys()], 8, async (i) => {
      const k = String(i).padStart(6, '0');
      await put(`/variants/pg-inc-${k}`, '{"variant":0}');
      await put(`/variants/pg-a-${k}`, '{"variant":1000000000}');
      await put(`/variants/pg-b-${k}`, '{"variant":0}');
      await put(`/records/pg-r-${k}`, '{"record":{"last":0,"amount":1}}');
    });
    const incr: LuaRequest = { mode: 'template', method: 'POST', path: '/variants/pg-inc-{{k}}', body: '{"delta":1}', keys: PG_KEYS };
    const txn: LuaRequest = {
      mode: 'template',
      method: 'POST',
      path: '/txns',
      keys: PG_KEYS,
      body:
        '{"mutations":[{"kind":"variant","name":"pg-a-{{k}}","operation":"ADD","delta":-1},' +
        '{"kind":"variant","name":"pg-b-{{k}}","operation":"ADD","delta":1},' +
        '{"kind":"record","name":"pg-r-{{k}}","operation":"PUT","values":{"last":{{n}},"amount":1}}]}',
    };
    const scripts = join(o.root, 'bench', 'pgbench');
    const pg = cluster;
    const pair = async (line: Comparison, req: LuaRequest, expect: string, script: string): Promise<void> => {
      if (o.warmupS > 0) {
        await wrk(o, srv.url, req, o.warmupS, expect);
        await pgbench(pgb, pg, script, o.warmupS, PG_POOL);
      }
      let failed = 0;
      let errors = '';
      const [p, g, load] = await interleave(
        o,
        line.work,
        async () => {
          const r = await wrk(o, srv.url, req, o.durationS, expect);
          if (errorSummary(r).total > 0) errors = errorSummary(r).text;
          return rate(r);
        },
        async () => {
          const r = await pgbench(pgb, pg, script, o.durationS, PG_POOL);
          failed += r.failed;
          return r.tps;
        },
      );
      line.pithos = p;
      line.otherRate = g;
      line.load = load;
      if (errors) line.pithosNote = `errors: ${errors}`;
      if (failed > 0) line.otherNote = `${failed} failed transactions`;
    };
    await pair(lines[0]!, incr, '"data":{"variant":', join(scripts, 'increment.sql'));
    await pair(lines[1]!, txn, '"data":{"results":[{"variant":', join(scripts, 'txn.sql'));
    // The capture's cost apart: the same UPDATE with and without the change feed's triggers.
    const script = join(scripts, 'increment.sql');
    const triggers = async (on: boolean): Promise<void> => {
      const c = new (await import('pg')).default.Client({ connectionString: pg.url });
      await c.connect();
      try {
        await c.query(`ALTER TABLE pithos_variants ${on ? 'ENABLE' : 'DISABLE'} TRIGGER pithos_variants_change`);
      } finally {
        await c.end();
      }
    };
    const [withFeed, withoutFeed, load] = await interleave(
      o,
      lines[2]!.work,
      () => pgbench(pgb, pg, script, o.durationS, PG_POOL).then((r) => r.tps),
      async () => {
        await triggers(false);
        try {
          return (await pgbench(pgb, pg, script, o.durationS, PG_POOL)).tps;
        } finally {
          await triggers(true);
        }
      },
    );
    lines[2]!.pithos = withFeed;
    lines[2]!.otherRate = withoutFeed;
    lines[2]!.load = load;
  } catch (e) {
    for (const l of lines) if (l.otherRate === undefined) l.otherNote = `failed: ${(e as Error).message.replace(/\s+/g, ' ').slice(0, 160)}`;
  } finally {
    await pithos?.stop();
    cluster?.destroy();
  }
  return lines;
}

const fmt = (n: number | undefined): string => (n === undefined || Number.isNaN(n) ? '—' : Math.round(n).toLocaleString('en-US'));

export function comparisonTable(lines: Comparison[]): string {
  const head = ['work', 'Pithos /s', 'compared with', 'its /s', 'ratio', 'target', 'load (1 min, max)'];
  const rows = [head, head.map(() => '---')];
  for (const l of lines) {
    const ratio = l.pithos !== undefined && l.otherRate !== undefined && l.otherRate > 0 ? l.pithos / l.otherRate : undefined;
    rows.push([
      l.work,
      l.pithos !== undefined ? fmt(l.pithos) + (l.pithosNote ? ` (${l.pithosNote})` : '') : l.pithosNote || '—',
      l.other,
      l.otherRate !== undefined ? fmt(l.otherRate) + (l.otherNote ? ` (${l.otherNote})` : '') : l.otherNote || '—',
      ratio === undefined ? '—' : ratio.toFixed(2),
      l.target === undefined ? '' : `≥ ${l.target.toFixed(2)}${ratio === undefined ? '' : ratio >= l.target ? ' met' : ' NOT met'}`,
      l.load === undefined ? '—' : l.load.toFixed(2),
    ]);
  }
  const widths = head.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r, ri) => '| ' + r.map((c, i) => (ri === 1 ? '-'.repeat(widths[i]!) : c.padEnd(widths[i]!))).join(' | ') + ' |').join('\n');
}
