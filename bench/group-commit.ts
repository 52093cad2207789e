/**
 * The shared store's single-object writes, A/B and beside pgbench
 * (docs/benchmarks.md, "Group commit on the shared store"):
 *
 *   npm run bench:group -- [--base OTHER/bin/pithos] [--connections 32]
 *        [--duration 8] [--rounds 2] [--pool 10] [--pgbench-clients 10]
 *        [--work increment,put,push,zincr,txns,lone]
 *
 * One throw-away PostgreSQL cluster; this build's server and, with --base,
 * another build's, both over the same database (the older one ignores
 * pithos_group). For each write (the increment over 64 counters, a 100-byte
 * record PUT, a list push of one value, a sorted-set increment, the
 * 3-mutation /txns of two counter adds and a record put) wrk drives each
 * server and pgbench runs the statements one such write costs without group
 * commit (the increment's UPDATE prepared; the record PUT's statement; the
 * push's and zset increment's transactions; the /txns as one statement, a
 * CTE of its three writes), alternately (a b c, c b a, …), so a busy
 * machine's drift falls on all of them. Then the latency of a lone request
 * (the increment and the record PUT at 1 connection), each server in turn.
 * The increment has one more side: a bare node:http server doing the same
 * database work (bench/pg-baseline.ts), the ceiling for any Node server here.
 * Every run is bounded: wrk and pgbench get a duration and are killed 30 s
 * past it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { http, parallel, startServer, type Server } from './proc.js';
import { SMALL_RECORD } from './ops.js';
import { okCount, percentile, runWrk, errorSummary, type WrkResult } from './wrk.js';
import { PgCluster, pgBinDir } from '../test/helpers/postgres.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TOKEN = 'bench-token-group-commit';
const KEYS = 64;

interface Options {
  base?: string;
  connections: number;
  durationS: number;
  rounds: number;
  pool: number;
  pgbenchClients: number;
  /** The works to run (WORK's names, and `lone` for the 1-connection latency). */
  work: string[];
}

function options(argv: string[]): Options {
  const o: Options = { connections: 32, durationS: 8, rounds: 2, pool: 10, pgbenchClients: 10, work: [...Object.keys(WORK), 'lone'] };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    const num = (): number => {
      const n = Number(v);
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${argv[i]} needs a positive integer, got ${String(v)}`);
      i++;
      return n;
    };
    switch (argv[i]) {
      case '--base':
        if (v === undefined) throw new Error('--base needs a path');
        o.base = v;
        i++;
        break;
      case '--connections':
        o.connections = num();
        break;
      case '--duration':
        o.durationS = num();
        break;
      case '--rounds':
        o.rounds = num();
        break;
      case '--pool':
        o.pool = num();
        break;
      case '--pgbench-clients':
        o.pgbenchClients = num();
        break;
      case '--work':
        o.work = (v ?? '').split(',');
        for (const w of o.work) if (w !== 'lone' && !(w in WORK)) throw new Error(`--work: unknown work ${w}`);
        i++;
        break;
      default:
        throw new Error(`unknown option ${argv[i]}`);
    }
  }
  return o;
}

/** The statements of one write without group commit, as pgbench scripts (:k a counter, record or list of 64). */
const NOW = '(floor(extract(epoch from now()) * 1000)::int8 + 0)';
const KEY = (prefix: string): string => `'${prefix}' || lpad(:k::text, 6, '0')`;
const BODY = SMALL_RECORD.replace('{{k}}', "' || lpad(:k::text, 6, '0') || '");
const SCRIPTS: Record<string, string> = {
  increment: `\\set k random(0, ${KEYS - 1})
UPDATE pithos_variants SET v = (v::int8 + 1::int8)::text, version = nextval('pithos_seq')
  WHERE name = ${KEY('gc-inc-')} AND t = 'i' AND (expires_at IS NULL OR expires_at > ${NOW})
    AND abs(v::int8 + 1::int8) <= 9007199254740991 RETURNING v;
`,
  put: `\\set k random(0, ${KEYS - 1})
WITH u AS (UPDATE pithos_records SET body = '${BODY}', expires_at = NULL, version = nextval('pithos_seq') WHERE id = ${KEY('gc-r-')} AND (expires_at IS NULL OR expires_at > ${NOW}) RETURNING 1),
 c AS (INSERT INTO pithos_records AS x (id, body, expires_at, version) SELECT ${KEY('gc-r-')}, '${BODY}', NULL, nextval('pithos_seq') WHERE NOT EXISTS (SELECT 1 FROM u)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at, version = nextval('pithos_seq')
       WHERE x.expires_at IS NOT NULL AND x.expires_at <= ${NOW} RETURNING 1)
SELECT (SELECT count(*) FROM u) AS replaced, (SELECT count(*) FROM c) AS created;
`,
  // pushItems (src/store/postgres/lists.ts) on an existing list: lock, insert, new tail, NOTIFY.
  push: `\\set k random(0, ${KEYS - 1})
BEGIN;
SELECT head, tail, version FROM pithos_lists WHERE name = ${KEY('gc-l-')} FOR UPDATE;
INSERT INTO pithos_list_items (name, pos, v) SELECT ${KEY('gc-l-')}, tail, '"v"' FROM pithos_lists WHERE name = ${KEY('gc-l-')};
UPDATE pithos_lists SET tail = tail + 1, version = nextval('pithos_seq'), op = 'push', op_data = '{}' WHERE name = ${KEY('gc-l-')};
SELECT pg_notify('pithos_lists', ${KEY('gc-l-')});
COMMIT;
`,
  // zsetIncr (src/store/postgres/zsets.ts) of an existing member: lock the header, read the score, write member and header.
  zincr: `\\set k random(0, ${KEYS - 1})
BEGIN;
SELECT count, version FROM pithos_zsets WHERE name = ${KEY('gc-z-')} FOR UPDATE;
SELECT score FROM pithos_zset_members WHERE name = ${KEY('gc-z-')} AND member = '\\x6d'::bytea;
WITH m AS (INSERT INTO pithos_zset_members (name, member, score) VALUES (${KEY('gc-z-')}, '\\x6d'::bytea, 1)
    ON CONFLICT (name, member) DO UPDATE SET score = pithos_zset_members.score + 1)
  UPDATE pithos_zsets SET version = nextval('pithos_seq'), op = 'incr', op_data = '{}' WHERE name = ${KEY('gc-z-')};
COMMIT;
`,
  // The 3-mutation /txns as one statement: a CTE of its two counter adds and its record put.
  txns: `\\set k random(0, ${KEYS - 1})
\\set n random(1, 1000000000)
WITH a AS (UPDATE pithos_variants SET v = (v::int8 + -1::int8)::text, version = nextval('pithos_seq')
    WHERE name = ${KEY('gc-a-')} AND t = 'i' AND (expires_at IS NULL OR expires_at > ${NOW}) AND abs(v::int8 + -1::int8) <= 9007199254740991 RETURNING v),
  b AS (UPDATE pithos_variants SET v = (v::int8 + 1::int8)::text, version = nextval('pithos_seq')
    WHERE name = ${KEY('gc-b-')} AND t = 'i' AND (expires_at IS NULL OR expires_at > ${NOW}) AND abs(v::int8 + 1::int8) <= 9007199254740991 RETURNING v),
  r AS (UPDATE pithos_records SET body = '{"last":' || :n || ',"amount":1}', expires_at = NULL, version = nextval('pithos_seq')
    WHERE id = ${KEY('gc-t-')} AND (expires_at IS NULL OR expires_at > ${NOW}) RETURNING 1)
SELECT (SELECT v FROM a) AS a, (SELECT v FROM b) AS b, (SELECT count(*) FROM r) AS r;
`,
};

const WORK: Record<string, { method: string; path: string; body: string; expect: string }> = {
  increment: { method: 'POST', path: '/variants/gc-inc-{{k}}', body: '{"delta":1}', expect: '"data":{"variant":' },
  put: { method: 'PUT', path: '/records/gc-r-{{k}}', body: `{"record":${SMALL_RECORD}}`, expect: '' },
  push: { method: 'POST', path: '/lists/gc-l-{{k}}/push', body: '{"values":["v"]}', expect: '"data":{"length":' },
  zincr: { method: 'POST', path: '/zsets/gc-z-{{k}}/incr', body: '{"member":"m","delta":1}', expect: '"data":{"score":' },
  txns: {
    method: 'POST',
    path: '/txns',
    body:
      '{"mutations":[{"kind":"variant","name":"gc-a-{{k}}","operation":"ADD","delta":-1},' +
      '{"kind":"variant","name":"gc-b-{{k}}","operation":"ADD","delta":1},' +
      '{"kind":"record","name":"gc-t-{{k}}","operation":"PUT","values":{"last":{{n}},"amount":1}}]}',
    expect: '"data"',
  },
};

/** The lone request's latency: the increment and the record PUT at 1 connection. */
const LONE = ['increment', 'put'];

function pgbench(bin: string, c: PgCluster, script: string, o: Options, prepared: boolean): Promise<number> {
  const args = ['-M', prepared ? 'prepared' : 'extended', '-h', '127.0.0.1', '-p', String(c.port), '-U', 'postgres', '-n'];
  args.push('-c', String(o.pgbenchClients), '-j', String(Math.min(o.pgbenchClients, cpus().length)), '-T', String(o.durationS), '-f', script, 'postgres');
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
    const killer = setTimeout(() => child.kill('SIGKILL'), (o.durationS + 30) * 1000);
    child.on('exit', (code) => {
      clearTimeout(killer);
      const tps = /tps = ([0-9.]+) \(without initial connection time\)/.exec(out);
      if (code !== 0 || tps === null) return reject(new Error(`pgbench exited ${code}: ${out.slice(-800)}`));
      resolve(Number(tps[1]));
    });
  });
}

let runs = 0;
async function wrk(s: Server, w: (typeof WORK)[string], o: Options): Promise<number> {
  const r = await drive(s, w, o, o.connections);
  return r.durationUs > 0 ? okCount(r) / (r.durationUs / 1e6) : 0;
}

async function drive(s: Server, w: (typeof WORK)[string], o: Options, connections: number): Promise<WrkResult> {
  const r = await runWrk({
    url: s.url,
    threads: Math.min(2, connections),
    connections,
    durationS: o.durationS,
    script: join(ROOT, 'bench', 'wrk', 'bench.lua'),
    scriptArgs: ['template', w.method, w.path, w.body, String(KEYS), `g${runs++}`, TOKEN, w.expect],
  });
  const e = errorSummary(r);
  if (e.total > 0) console.log(`  ${s.name}: errors ${e.text}`);
  return r;
}

/** Each server's lone-request latency (p50, p99, mean of wrk's uncorrected histogram, µs), in turns alternating per round. */
async function loneLatency(servers: Server[], o: Options): Promise<void> {
  for (const work of LONE) {
    const got = new Map<string, WrkResult[]>();
    for (let r = 0; r < o.rounds; r++) {
      for (const s of r % 2 === 0 ? servers : [...servers].reverse()) got.set(s.name, [...(got.get(s.name) ?? []), await drive(s, WORK[work], o, 1)]);
    }
    const cells = [...got].map(([name, rs]) => {
      const all = new Map<number, number>();
      let n = 0;
      let sum = 0;
      for (const x of rs)
        for (const [us, c] of x.latency) {
          all.set(us, (all.get(us) ?? 0) + c);
          n += c;
          sum += us * c;
        }
      return `${name} p50 ${percentile(all, 50)} µs, p99 ${percentile(all, 99)} µs, mean ${Math.round(sum / n)} µs (${n} requests)`;
    });
    console.log(`${work} at 1 connection: ${cells.join('; ')}; load ${loadavg()[0].toFixed(2)}`);
  }
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const bin = pgBinDir();
  if (bin === undefined) throw new Error('PostgreSQL is not installed');
  const cluster = await PgCluster.create();
  const dir = mkdtempSync(join(tmpdir(), 'pithos-gc-bench-'));
  const servers: Server[] = [];
  let bare: Server | undefined;
  try {
    const start = (name: string, cmd: string): Promise<Server> =>
      startServer(name, process.execPath, [
        cmd,
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--store',
        cluster.url,
        '--auth-token',
        TOKEN,
        '--pg-pool-size',
        String(o.pool),
      ]);
    servers.push(await start('this build', join(ROOT, 'bin', 'pithos')));
    if (o.base !== undefined) servers.push(await start('base', o.base));
    const s0 = servers[0];
    await parallel([...Array(KEYS).keys()], 8, async (i) => {
      const k = String(i).padStart(6, '0');
      for (const [p, b] of [
        [`/variants/gc-inc-${k}`, '{"variant":0}'],
        [`/lists/gc-l-${k}`, '{"list":[]}'],
        [`/zsets/gc-z-${k}`, '{"zset":{"m":0}}'],
        [`/variants/gc-a-${k}`, '{"variant":1000000000}'],
        [`/variants/gc-b-${k}`, '{"variant":0}'],
        [`/records/gc-t-${k}`, '{"record":{"last":0,"amount":1}}'],
      ]) {
        const a = await http(s0, TOKEN, 'PUT', p, b);
        if (a.status !== 201 && a.status !== 200) throw new Error(`set-up PUT ${p}: ${a.status} ${a.body}`);
      }
    });
    console.log(
      `busy machine: ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}; wrk ${o.connections} connections, pool ${o.pool}, pgbench ${o.pgbenchClients} clients, ${o.durationS} s × ${o.rounds} rounds each`,
    );
    // The increment's ceiling: the same database work from a bare node:http server (bench/pg-baseline.ts).
    if (o.work.includes('increment')) {
      bare = await startServer('bare node:http + pg', process.execPath, [
        join(ROOT, 'dist', 'bench', 'pg-baseline.js'),
        '--port',
        '0',
        '--store',
        cluster.url,
        '--pool',
        String(o.pool),
      ]);
    }
    for (const work of Object.keys(WORK).filter((w) => o.work.includes(w))) {
      const script = join(dir, `${work}.sql`);
      writeFileSync(script, SCRIPTS[work]);
      const runners: Array<[string, () => Promise<number>]> = [
        ...[...servers, ...(work === 'increment' && bare !== undefined ? [bare] : [])].map((s): [string, () => Promise<number>] => [
          s.name,
          () => wrk(s, WORK[work], o),
        ]),
        ['pgbench', () => pgbench(join(bin, 'pgbench'), cluster, script, o, work === 'increment')],
      ];
      const got = new Map<string, number[]>();
      for (let r = 0; r < o.rounds; r++) {
        for (const [name, f] of r % 2 === 0 ? runners : [...runners].reverse()) {
          const v = await f();
          got.set(name, [...(got.get(name) ?? []), v]);
        }
      }
      const pgb = got.get('pgbench') ?? [];
      const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
      const cells = [...got].map(([name, xs]) => `${name} ${xs.map((x) => Math.round(x)).join(' / ')} (${(mean(xs) / mean(pgb)).toFixed(2)}× pgbench)`);
      console.log(`${work}: ${cells.join('; ')}; load ${loadavg()[0].toFixed(2)}`);
    }
    if (o.work.includes('lone')) await loneLatency(servers, o);
  } finally {
    for (const s of servers) await s.stop();
    await bare?.stop();
    cluster.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
