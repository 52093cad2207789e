/**
 * `npm run bench` — Pithos against a bare node:http baseline, same load generator.
 *
 *   node dist/bench/run.js [--quick] [--ops a,b,c] [--modes always,never]
 *                          [--connections N] [--duration S] [--warmup S] [--rounds R]
 *                          [--threads T] [--server bin/pithos] [--cpu-prof DIR] [--json FILE]
 *                          [--fresh] [--node-flags "…"] [--server-log FILE]
 *                          [--compare redis,postgres|none]
 *
 * For every durability mode a fresh Pithos is started on a temporary data directory.
 * For every operation: set-up data is written, Pithos is warmed up, its real answer to
 * the operation is captured, a baseline process is started that replays exactly those
 * bytes (status, headers, body), the baseline is warmed up, then measured runs
 * alternate between the two (P B, then B P, …) with identical wrk settings.
 * One table is printed at the end; see docs/benchmarks.md. Then the comparisons
 * of bench/compare.ts (webdis + Redis, Pithos on PostgreSQL beside pgbench),
 * measured in the same run with the same wrk settings, in a second table.
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { cpus, tmpdir, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CaptureError, OPS, type Ctx, type Fsync, type OpSpec } from './ops.js';
import { destroyAgent, startServer, type Server } from './proc.js';
import { ensureWrk, errorSummary, mergeResults, okCount, percentile, runWrk, type WrkResult } from './wrk.js';
import { summarizeProfiles } from './cpuprofile.js';
import { comparisonTable, postgresLines, redisLines, type Comparison } from './compare.js';
import { respLines, respTable, type RespLine } from './resp.js';
import { pubsubRates, pubsubTable, type PubsubRates } from './pubsub.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LUA = join(ROOT, 'bench', 'wrk', 'bench.lua');
const TOKEN = 'SECRET';
const CACHE_MB = 1024;

interface Options {
  quick: boolean;
  ops: string[];
  modes: Fsync[];
  connections: number;
  durationS: number;
  warmupS: number;
  rounds: number;
  threads: number;
  server: string;
  cpuProf: string | null;
  json: string | null;
  /** Extra node flags for the Pithos process (e.g. --trace-gc). */
  nodeFlags: string[];
  /** File that receives Pithos's stdout and stderr. */
  serverLog: string | null;
  /** A fresh Pithos (new data directory) for every operation instead of one per durability mode. */
  fresh: boolean;
  /** duration, warm-up or rounds set by hand */
  custom: boolean;
  /** The other systems measured beside Pithos (bench/compare.ts). */
  compare: Set<'redis' | 'postgres'>;
  /** The collection lines (bench/collections.ts, bench/lists.ts) after the table: on unless --ops picks operations. */
  collections: boolean;
}

function usage(): never {
  process.stderr.write(
    `usage: node dist/bench/run.js [--quick] [--ops ${OPS.map((o) => o.id).join(',')}]\n` +
      '       [--modes always,never] [--connections 32] [--duration S] [--warmup S] [--rounds R]\n' +
      '       [--threads 1] [--server bin/pithos] [--cpu-prof DIR] [--json FILE]\n' +
      '       [--fresh] [--node-flags "--trace-gc …"] [--server-log FILE]\n' +
      '       [--compare redis,postgres|none] [--collections|--no-collections]\n',
  );
  process.exit(2);
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    quick: false,
    ops: OPS.map((x) => x.id),
    modes: ['always', 'never'],
    connections: 32,
    durationS: NaN,
    warmupS: NaN,
    rounds: NaN,
    threads: 1,
    server: join(ROOT, 'bin', 'pithos'),
    cpuProf: null,
    json: null,
    custom: false,
    nodeFlags: [],
    serverLog: null,
    fresh: false,
    compare: new Set(['redis', 'postgres']),
    collections: true,
  };
  let collections: boolean | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) usage();
      return v;
    };
    const num = (min: number): number => {
      const v = Number(value());
      if (!Number.isFinite(v) || v < min) usage();
      return v;
    };
    switch (flag) {
      case '--quick':
        o.quick = true;
        break;
      case '--ops':
        o.ops = value()
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        break;
      case '--modes':
        o.modes = value()
          .split(',')
          .map((s) => s.trim()) as Fsync[];
        break;
      case '--connections':
        o.connections = Math.round(num(1));
        break;
      case '--duration':
        o.durationS = Math.round(num(1));
        break;
      case '--warmup':
        o.warmupS = Math.round(num(0));
        break;
      case '--rounds':
        o.rounds = Math.round(num(1));
        break;
      case '--threads':
        o.threads = Math.round(num(1));
        break;
      case '--server':
        o.server = resolve(value());
        break;
      case '--cpu-prof':
        o.cpuProf = resolve(value());
        break;
      case '--json':
        o.json = resolve(value());
        break;
      case '--node-flags':
        o.nodeFlags = value().split(/\s+/).filter(Boolean);
        break;
      case '--server-log':
        o.serverLog = resolve(value());
        break;
      case '--fresh':
        o.fresh = true;
        break;
      case '--collections':
        collections = true;
        break;
      case '--no-collections':
        collections = false;
        break;
      case '--compare': {
        const v = value()
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
        if (v.some((x) => x !== 'redis' && x !== 'postgres' && x !== 'none')) usage();
        o.compare = new Set(v.filter((x): x is 'redis' | 'postgres' => x !== 'none'));
        break;
      }
      case '-h':
      case '--help':
        usage();
        break;
      default:
        process.stderr.write(`unknown option ${a}\n`);
        usage();
    }
  }
  for (const id of o.ops)
    if (!OPS.some((x) => x.id === id)) {
      process.stderr.write(`unknown operation ${id}\n`);
      usage();
    }
  for (const m of o.modes) if (!['always', 'everysec', 'never'].includes(m)) usage();
  o.collections = collections ?? !argv.some((a) => a === '--ops' || a.startsWith('--ops='));
  o.custom = !Number.isNaN(o.durationS) || !Number.isNaN(o.warmupS) || !Number.isNaN(o.rounds);
  // quick: < 1 minute in all; full: a few minutes
  if (Number.isNaN(o.durationS)) o.durationS = o.quick ? 1 : 8;
  if (Number.isNaN(o.warmupS)) o.warmupS = o.quick ? 1 : 3;
  if (Number.isNaN(o.rounds)) o.rounds = o.quick ? 1 : 2;
  o.threads = Math.min(o.threads, o.connections);
  return o;
}

interface Side {
  result: WrkResult;
  perSec: number;
  /** Percentiles of the real responses (wrk's synthetic samples removed, see bench/wrk.ts). */
  p50Ms: number;
  p99Ms: number;
  /** p99 of wrk's coordinated-omission-corrected histogram. */
  p99CorrectedMs: number;
  /** Server process CPU time (user + system, all threads) per counted operation, µs. */
  cpuUsPerOp: number;
  /** Worst outside load seen during this side's measured runs, in cores. */
  otherCores: number;
}

interface Measured {
  result: WrkResult;
  cpuUs: number;
  /** CPU used by everything else on the machine (not the server, wrk or this runner), in cores. */
  otherCores: number;
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/**
 * utime + stime of a process in µs (Linux /proc), NaN when unreadable. With
 * `children`, adds the CPU time of its exited and reaped children (for this
 * runner: the wrk runs).
 */
function processCpuUs(pid: number | 'self' | undefined, children = false): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let ticks = Number(f[11]) + Number(f[12]);
    if (children) ticks += Number(f[13]) + Number(f[14]);
    return (ticks * 1e6) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** CPU time spent by all processes on the machine (user, nice, system, steal), µs. */
function machineBusyUs(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    return ((f[0]! + f[1]! + f[2]! + (f[7] ?? 0)) * 1e6) / CLK_TCK;
  } catch {
    return NaN;
  }
}

interface Row {
  op: OpSpec;
  mode: Fsync;
  pithos?: Side;
  baseline?: Side;
  ratio?: number;
  failure?: string;
  responseBytes?: number;
}

function side(op: OpSpec, runs: Measured[]): Side {
  const r = mergeResults(runs.map((m) => m.result));
  const good = op.unit === 'pairs/s' ? r.pairs : okCount(r);
  const cpuUs = runs.reduce((a, m) => a + m.cpuUs, 0);
  return {
    result: r,
    perSec: r.durationUs > 0 ? good / (r.durationUs / 1e6) : 0,
    p50Ms: percentile(r.latency, 50) / 1000,
    p99Ms: percentile(r.latency, 99) / 1000,
    p99CorrectedMs: percentile(r.latencyCorrected, 99) / 1000,
    cpuUsPerOp: good > 0 ? cpuUs / good : NaN,
    otherCores: Math.max(...runs.map((m) => m.otherCores)),
  };
}

const T0 = Date.now();
const log = (s: string): void => {
  process.stderr.write(`[bench ${((Date.now() - T0) / 1000).toFixed(1).padStart(5)}s] ${s}\n`);
};

let runCounter = 0;
const newRunId = (): string => `${Date.now().toString(36)}${(runCounter++).toString(36)}`;

function luaArgs(op: OpSpec, expect: string): string[] {
  return [op.lua.mode, op.lua.method, op.lua.path, op.lua.body, String(op.lua.keys), newRunId(), TOKEN, expect];
}

async function measure(op: OpSpec, server: Server, o: Options, durationS: number, expect: string): Promise<Measured> {
  const connections = op.connections ?? o.connections;
  const threads = op.threadsPerConnection ? connections : Math.min(o.threads, connections);
  const before = processCpuUs(server.child.pid);
  const selfBefore = processCpuUs('self', true);
  const busyBefore = machineBusyUs();
  const t0 = process.hrtime.bigint();
  const result = await runWrk({
    url: server.url,
    threads,
    connections,
    durationS,
    script: LUA,
    scriptArgs: luaArgs(op, expect),
  });
  const cpuUs = processCpuUs(server.child.pid) - before;
  // Undoing wrk's correction must give back one sample per response (minus wrk's own timeouts).
  const lost = result.requests - result.latencySamples;
  if (lost < 0 || lost > result.socketErrors.timeout) {
    log(`WARNING ${op.id}: ${result.latencySamples} latency samples for ${result.requests} responses after undoing wrk's correction`);
  }
  const elapsedUs = Number(process.hrtime.bigint() - t0) / 1000;
  const other = machineBusyUs() - busyBefore - cpuUs - (processCpuUs('self', true) - selfBefore);
  return { result, cpuUs, otherCores: Math.max(0, other / elapsedUs) };
}

async function runRow(op: OpSpec, mode: Fsync, pithos: Server, o: Options, work: string, prepared: Set<string>): Promise<Row> {
  const row: Row = { op, mode };
  const ctx: Ctx = { server: pithos, token: TOKEN };
  let baseline: Server | null = null;
  try {
    if (!prepared.has(op.id)) {
      log(`${op.id} (${mode}): preparing data`);
      await op.prepare(ctx);
      prepared.add(op.id);
    }
    if (o.warmupS > 0) {
      log(`${op.id} (${mode}): warming up Pithos ${o.warmupS}s`);
      await measure(op, pithos, o, o.warmupS, '');
    }
    const config = await op.capture(ctx, newRunId());
    row.responseBytes = Buffer.byteLength(config.default.body);
    const ct = config.default.headers.find(([k]) => k.toLowerCase() === 'content-type')?.[1];
    if (ct !== 'application/json; charset=utf-8') {
      log(`WARNING ${op.id}: Pithos answered Content-Type ${JSON.stringify(ct)}, the contract says application/json; charset=utf-8`);
    }
    let expect = '';
    if (op.expect !== undefined && config.default.body.includes(op.expect)) expect = op.expect;
    else if (config.default.body.includes('"status":"success"')) expect = '"status":"success"';
    if (op.expect !== undefined && expect !== op.expect) log(`${op.id}: answer lacks ${op.expect}; checking only ${expect || 'status codes'}`);
    const cfgFile = join(work, `baseline-${op.id}-${mode}.json`);
    writeFileSync(cfgFile, JSON.stringify(config));
    const profArgs = o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(o.cpuProf, `baseline-${op.id}-${mode}`)}`] : [];
    baseline = await startServer('baseline', process.execPath, [
      ...profArgs,
      join(ROOT, 'dist', 'bench', 'baseline.js'),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--config',
      cfgFile,
    ]);
    if (o.warmupS > 0) {
      log(`${op.id} (${mode}): warming up baseline ${o.warmupS}s`);
      await measure(op, baseline, o, o.warmupS, expect);
    }
    const p: Measured[] = [];
    const b: Measured[] = [];
    for (let round = 0; round < o.rounds; round++) {
      const order: Array<[Server, Measured[]]> =
        round % 2 === 0
          ? [
              [pithos, p],
              [baseline, b],
            ]
          : [
              [baseline, b],
              [pithos, p],
            ];
      for (const [srv, into] of order) {
        const m = await measure(op, srv, o, o.durationS, expect);
        into.push(m);
        const one = side(op, [m]);
        log(
          `${op.id} (${mode}): round ${round + 1}/${o.rounds} ${srv === pithos ? 'Pithos  ' : 'baseline'} ` +
            `${fmtRate(one.perSec)} ${op.unit}, p50 ${one.p50Ms.toFixed(2)} ms, p99 ${one.p99Ms.toFixed(2)} ms ` +
            `(wrk-corrected ${one.p99CorrectedMs.toFixed(2)}), ` +
            `errors ${errorSummary(m.result).text}, other load ${m.otherCores.toFixed(2)} cores`,
        );
      }
    }
    row.pithos = side(op, p);
    row.baseline = side(op, b);
    row.ratio = row.baseline.perSec > 0 ? row.pithos.perSec / row.baseline.perSec : NaN;
  } catch (e) {
    row.failure = e instanceof CaptureError ? `server answer rejected: ${e.message}` : (e as Error).message;
    log(`${op.id} (${mode}) FAILED: ${row.failure}`);
  } finally {
    if (baseline) await baseline.stop();
  }
  return row;
}

/**
 * The bare node:http server doing the REST lines' durable INCRs
 * (bench/rest-baseline.ts), measured with the same wrk scripts for as many
 * rounds, single and pipelined alternated: the ceiling of the pipeline's
 * ratio. Runs when both REST lines ran with --fsync always.
 */
async function restBaseline(ops: OpSpec[], rows: Row[], o: Options, work: string): Promise<{ single: number; pipeline: number } | undefined> {
  const single = ops.find((op) => op.id === 'redis-incr');
  const pipeline = ops.find((op) => op.id === 'redis-pipeline');
  const ran = (id: string): boolean => rows.some((r) => r.op.id === id && r.mode === 'always' && r.pithos !== undefined);
  if (single === undefined || pipeline === undefined || !ran(single.id) || !ran(pipeline.id)) return undefined;
  log('Upstash REST: the bare node:http server doing the same durable INCRs (bench/rest-baseline.ts)');
  const srv = await startServer('rest-baseline', process.execPath, [
    join(ROOT, 'dist', 'bench', 'rest-baseline.js'),
    '--port',
    '0',
    '--file',
    join(work, 'rest-baseline.log'),
  ]);
  try {
    const s: Measured[] = [];
    const p: Measured[] = [];
    if (o.warmupS > 0) await measure(single, srv, o, o.warmupS, '{"result":');
    for (let round = 0; round < o.rounds; round++) {
      const order: Array<[OpSpec, Measured[], string]> = [
        [single, s, '{"result":'],
        [pipeline, p, '[{"result":'],
      ];
      if (round % 2 === 1) order.reverse();
      for (const [op, into, expect] of order) {
        const m = await measure(op, srv, o, o.durationS, expect);
        into.push(m);
        log(`rest-baseline ${op.id}: round ${round + 1}/${o.rounds} ${fmtRate(side(op, [m]).perSec)} req/s`);
      }
    }
    return { single: side(single, s).perSec, pipeline: side(pipeline, p).perSec };
  } finally {
    await srv.stop();
  }
}

/** The REST targets of docs/redis-rest.md beside the table: /redis against the PQL increment, and the pipeline's commands per second against /redis. */
function restRatios(rows: Row[], modes: Fsync[], base: { single: number; pipeline: number } | undefined): string {
  let out = '';
  for (const mode of modes) {
    const rate = (id: string): number | undefined => rows.find((r) => r.op.id === id && r.mode === mode)?.pithos?.perSec;
    const pql = rate('incr-variant');
    const single = rate('redis-incr');
    const pipe = rate('redis-pipeline');
    if (single !== undefined && pql !== undefined) {
      const r = single / pql;
      out += `- ${mode}: POST /redis ["INCR",k] ${fmtRate(single)} req/s ÷ POST /variants/<k> {"delta":1} ${fmtRate(pql)} req/s = ${r.toFixed(2)}× (target ≥ 0.95×: ${r >= 0.95 ? 'met' : 'not met'})\n`;
    }
    if (single !== undefined && pipe !== undefined) {
      const r = (16 * pipe) / single;
      out += `- ${mode}: POST /redis/pipeline of 16 INCRs ${fmtRate(pipe)} req/s = ${fmtRate(16 * pipe)} commands/s ÷ POST /redis ${fmtRate(single)} req/s = ${r.toFixed(1)}× (target ≥ 8×: ${r >= 8 ? 'met' : 'not met'})\n`;
      if (mode === 'always' && base !== undefined) {
        out += `  bare node:http doing the same durable INCRs (bench/rest-baseline.ts), same scripts: /redis ${fmtRate(base.single)} req/s, pipeline ${fmtRate(base.pipeline)} req/s = ${((16 * base.pipeline) / base.single).toFixed(1)}× (the ceiling of this ratio)\n`;
      }
    }
  }
  return out;
}

const fmtRate = (n: number | undefined): string => (n === undefined || Number.isNaN(n) ? '—' : Math.round(n).toLocaleString('en-US'));
const fmtMs = (s?: Side): string => (s ? `${s.p50Ms.toFixed(2)} / ${s.p99Ms.toFixed(2)}` : '—');

function targetText(row: Row): { text: string; met: string } {
  const parts: string[] = [];
  const verdicts: boolean[] = [];
  const ratioTarget = row.op.ratioTarget[row.mode];
  if (ratioTarget !== undefined) {
    parts.push(`ratio ≥ ${ratioTarget.toFixed(2)}`);
    if (row.ratio !== undefined) verdicts.push(row.ratio >= ratioTarget);
  }
  parts.push(`p99 ≤ ${row.op.p99TargetMs} ms`);
  if (row.pithos) verdicts.push(row.pithos.p99Ms <= row.op.p99TargetMs);
  if (row.pithos) {
    const errs = errorSummary(row.pithos.result).total;
    verdicts.push(errs === 0);
  }
  const met = row.failure ? 'NO (failed)' : verdicts.length && verdicts.every(Boolean) ? 'yes' : 'NO';
  return { text: parts.join(', '), met };
}

function table(rows: Row[]): string {
  const head = [
    'operation',
    'durability',
    'Pithos req/s',
    'baseline req/s',
    'ratio',
    'Pithos p50 / p99 ms',
    'baseline p50 / p99 ms',
    'p99 wrk-corrected ms (P / B)',
    'errors (Pithos; baseline)',
    'target',
    'met',
    'server CPU µs/op (P / B)',
    'other load (cores)',
  ];
  const lines = [head, head.map(() => '---')];
  for (const r of rows) {
    const t = targetText(r);
    const errs = r.failure ? 'run failed' : `${errorSummary(r.pithos!.result).text}; ${errorSummary(r.baseline!.result).text}`;
    lines.push([
      r.op.label + (r.op.unit === 'pairs/s' ? ' (pairs/s)' : ''),
      r.mode,
      fmtRate(r.pithos?.perSec),
      fmtRate(r.baseline?.perSec),
      r.ratio === undefined ? '—' : r.ratio.toFixed(2),
      fmtMs(r.pithos),
      fmtMs(r.baseline),
      r.pithos && r.baseline ? `${r.pithos.p99CorrectedMs.toFixed(2)} / ${r.baseline.p99CorrectedMs.toFixed(2)}` : '—',
      errs,
      t.text,
      t.met,
      r.pithos && r.baseline ? `${r.pithos.cpuUsPerOp.toFixed(0)} / ${r.baseline.cpuUsPerOp.toFixed(0)}` : '—',
      r.pithos && r.baseline ? Math.max(r.pithos.otherCores, r.baseline.otherCores).toFixed(2) : '—',
    ]);
  }
  const widths = head.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l, li) => '| ' + l.map((c, i) => (li === 1 ? '-'.repeat(widths[i]!) : c.padEnd(widths[i]!))).join(' | ') + ' |').join('\n');
}

/** Latency of one 4 KiB append + fdatasync in `dir` (the data volume), p50 / p99 ms. */
function fsyncLatency(dir: string, n = 200): { p50: number; p99: number } {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'a');
  const block = Buffer.alloc(4096, 120);
  const times: number[] = [];
  const deadline = Date.now() + 3000;
  try {
    for (let i = 0; i < n && Date.now() < deadline; i++) {
      const t = process.hrtime.bigint();
      writeSync(fd, block);
      fdatasyncSync(fd);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  times.sort((a, b) => a - b);
  const at = (p: number): number => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)] ?? NaN;
  return { p50: at(50), p99: at(99) };
}

/**
 * The collection figures after the table, each measured by its own script on
 * its own server of the same build: sorted sets and sets at a million members
 * (bench/collections.ts; 100,000 with --quick) and list pairs and wake-ups
 * (bench/lists.ts, --fsync always).
 */
function collectionLines(o: Options, server: string): void {
  const env = { ...process.env, PITHOS_BENCH_SERVER: server, PITHOS_BENCH_MEMBERS: String(o.quick ? 100_000 : 1_000_000) };
  const scripts: [string, string[]][] = [
    ['collections.js', ['--expose-gc']],
    ['lists.js', []],
  ];
  for (const [script, flags] of scripts) {
    log(`collection figures: node ${flags.join(' ')} dist/bench/${script}`);
    const args = script === 'lists.js' ? ['--modes', 'always', '--seconds', o.quick ? '2' : '5', '--wakeups', o.quick ? '200' : '1000'] : [];
    const r = spawnSync(process.execPath, [...flags, join(ROOT, 'dist', 'bench', script), ...args], { encoding: 'utf8', env });
    process.stdout.write('\n' + (r.stdout || '') + (r.status === 0 ? '' : `${script} failed (exit ${r.status ?? r.signal}): ${r.stderr}\n`));
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const wrkVersion = ensureWrk(ROOT);
  const work = mkdtempSync(join(tmpdir(), 'pithos-bench-'));
  const fsync = fsyncLatency(work);
  const rows: Row[] = [];
  const comparisons: Comparison[] = [];
  let resp: RespLine[] | string | undefined;
  let pubsub: PubsubRates | string | undefined;
  let restBase: { single: number; pipeline: number } | undefined;
  const ops = OPS.filter((op) => o.ops.includes(op.id));
  let stopping = false;
  let current: Server | null = null;
  const onSignal = (): void => {
    stopping = true;
    void current?.stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    for (const mode of o.modes) {
      const modeOps = ops.filter((op) => op.modes.includes(mode));
      // one server per durability mode, or (--fresh) one per operation
      const groups = o.fresh ? modeOps.map((op) => [op]) : modeOps.length ? [modeOps] : [];
      for (const group of groups) {
        if (stopping) break;
        const dataDir = mkdtempSync(join(work, `data-${mode}-`));
        const profDir = join(o.cpuProf ?? '', o.fresh ? `pithos-${mode}-${group[0]!.id}` : `pithos-${mode}`);
        const nodeArgs = o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
        log(`starting Pithos --fsync ${mode} (data ${dataDir})`);
        const pithos = await startServer(
          'Pithos',
          process.execPath,
          [
            ...nodeArgs,
            ...o.nodeFlags,
            o.server,
            '--host',
            '127.0.0.1',
            '--port',
            '0',
            '--data-dir',
            dataDir,
            '--auth-token',
            TOKEN,
            '--fsync',
            mode,
            // Room for the million-row table of the query lines in cache (docs/benchmarks-history.md, "Listing and indexes").
            '--cache-mb',
            String(CACHE_MB),
          ],
          { cwd: ROOT, logFile: o.serverLog ?? undefined },
        );
        current = pithos;
        const prepared = new Set<string>();
        try {
          for (const op of group) {
            if (stopping) break;
            rows.push(await runRow(op, mode, pithos, o, work, prepared));
            if (pithos.child.exitCode !== null || pithos.child.signalCode !== null) {
              log(`Pithos exited during ${op.id}:\n${pithos.tail()}`);
              break;
            }
          }
        } finally {
          const code = await pithos.stop();
          current = null;
          if (code !== 0) log(`Pithos (--fsync ${mode}) exit code ${code} after SIGTERM`);
          rmSync(dataDir, { recursive: true, force: true });
        }
      }
    }
    if (!stopping) restBase = await restBaseline(ops, rows, o, work);
    const copts = {
      root: ROOT,
      server: o.server,
      token: TOKEN,
      connections: o.connections,
      threads: o.threads,
      durationS: o.durationS,
      warmupS: o.warmupS,
      rounds: o.rounds,
      which: o.compare,
      log,
    };
    if (o.compare.has('redis') && !stopping) {
      const rate = (id: string): number | undefined => rows.find((r) => r.op.id === id && r.mode === 'always')?.pithos?.perSec;
      log('comparison: webdis + Redis (appendfsync always)');
      comparisons.push(...(await redisLines(copts, rate('incr-variant'), rate('put-small'))));
    }
    if (o.compare.has('redis') && !stopping) {
      log('comparison: redis-benchmark against the RESP port, redis-server and the node:net baseline');
      resp = await respLines({ root: ROOT, server: o.server, rounds: Math.max(o.rounds, 3), requests: 20000, log });
      log('comparison: pub/sub fan-out beside redis-server');
      pubsub = await pubsubRates({ server: resolve(ROOT, o.server), rounds: Math.max(o.rounds, 3), messages: 2000, subscribers: 100, log });
    }
    if (o.compare.has('postgres') && !stopping) {
      log('comparison: Pithos on PostgreSQL beside pgbench');
      comparisons.push(...(await postgresLines(copts)));
    }
  } finally {
    destroyAgent();
    rmSync(work, { recursive: true, force: true });
  }

  const elapsed = (Date.now() - started) / 1000;
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const header = [
    `Pithos vs node:http baseline — ${o.custom ? 'custom' : o.quick ? 'quick' : 'full'} mode, ${o.connections} connections, keep-alive, ` +
      `${o.durationS}s × ${o.rounds} round(s) per side after ${o.warmupS}s warm-up, load generator ${wrkVersion} ` +
      `(${o.threads} thread(s); lock pairs: 1 thread per connection)`,
    `Pithos --cache-mb ${CACHE_MB}; machine: ${cpus().length} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, Linux ${release()}; ` +
      `4 KiB append + fdatasync on the data volume: p50 ${fsync.p50.toFixed(2)} ms, p99 ${fsync.p99.toFixed(2)} ms; bench took ${elapsed.toFixed(0)}s`,
  ];
  process.stdout.write('\n' + header.join('\n') + '\n\n' + table(rows) + '\n');
  if (comparisons.length > 0) {
    process.stdout.write(
      `\nIn the same run (docs/benchmarks.md, "Comparisons"; ${o.connections} wrk connections for Pithos and webdis, ` +
        `the rounds of each line alternate between the two sides):\n\n${comparisonTable(comparisons)}\n`,
    );
  }
  if (resp !== undefined)
    process.stdout.write(
      `\nThe Redis protocol (docs/benchmarks.md, "Redis protocol"; redis-benchmark -c 32 -r 100000, the three sides alternated):\n\n${typeof resp === 'string' ? `skipped: ${resp}` : respTable(resp)}\n`,
    );
  if (pubsub !== undefined)
    process.stdout.write(
      `\nPub/sub fan-out (docs/benchmarks.md, "Pub/sub fan-out"):\n\n${typeof pubsub === 'string' ? `skipped: ${pubsub}` : pubsubTable(pubsub)}\n`,
    );
  const rest = restRatios(rows, o.modes, restBase);
  if (rest !== '') process.stdout.write(`\nUpstash REST (docs/benchmarks.md, "Upstash REST"):\n${rest}`);
  const noisy = rows.filter((r) => r.pithos && r.baseline && Math.max(r.pithos.otherCores, r.baseline.otherCores) > 0.15);
  if (noisy.length) {
    process.stdout.write(
      `\nWARNING: other processes used CPU during ${noisy.map((r) => `${r.op.id} (${r.mode})`).join(', ')} ` +
        '(column "other load"): on 2 cores that skews throughput and p99; rerun on an idle machine.\n',
    );
  }
  // The targets of docs/query.md beside the table: indexed query vs GET variant in the same run, and the index figures.
  for (const mode of o.modes) {
    const gv = rows.find((r) => r.op.id === 'get-variant' && r.mode === mode && r.pithos);
    const qi = rows.find((r) => r.op.id === 'query-indexed' && r.mode === mode && r.pithos);
    const lr = rows.find((r) => r.op.id === 'list-records' && r.mode === mode && r.pithos);
    if (qi?.pithos) {
      const share = gv?.pithos ? ` = ${((100 * qi.pithos.perSec) / gv.pithos.perSec).toFixed(0)} % of GET variant (target ≥ 50 %)` : '';
      process.stdout.write(`\nindexed query (${mode}): p50 ${qi.pithos.p50Ms.toFixed(2)} ms (target ≤ 1 ms), ${fmtRate(qi.pithos.perSec)} req/s${share}\n`);
    }
    if (lr?.pithos) process.stdout.write(`listing page of 100 among 1,000,000 records (${mode}): p50 ${lr.pithos.p50Ms.toFixed(2)} ms (target ≤ 1 ms)\n`);
  }
  if (ops.some((op) => op.id === 'query-indexed') && !stopping) {
    log('index figures: node --expose-gc dist/bench/query.js');
    const r = spawnSync(process.execPath, ['--expose-gc', join(ROOT, 'dist', 'bench', 'query.js'), String(o.quick ? 100_000 : 1_000_000)], {
      encoding: 'utf8',
    });
    process.stdout.write('\n' + (r.stdout || '') + (r.status === 0 ? '' : `index figures failed: ${r.stderr}\n`));
  }
  if (o.collections && !stopping) collectionLines(o, o.server);
  const failed = rows.filter((r) => r.failure);
  if (failed.length) {
    process.stdout.write('\nFailed runs:\n' + failed.map((r) => `- ${r.op.id} (${r.mode}): ${r.failure}`).join('\n') + '\n');
  }
  if (o.json) {
    writeFileSync(
      o.json,
      JSON.stringify(
        {
          options: { ...o, compare: [...o.compare] },
          wrk: wrkVersion,
          comparisons,
          node: process.version,
          fsyncMs: fsync,
          kernel: release(),
          cores: cpus().length,
          elapsedS: elapsed,
          rows: rows.map((r) => ({
            op: r.op.id,
            mode: r.mode,
            failure: r.failure,
            ratio: r.ratio,
            responseBytes: r.responseBytes,
            target: targetText(r),
            pithos: r.pithos && {
              perSec: r.pithos.perSec,
              cpuUsPerOp: r.pithos.cpuUsPerOp,
              otherCores: r.pithos.otherCores,
              p50Ms: r.pithos.p50Ms,
              p99Ms: r.pithos.p99Ms,
              p99CorrectedMs: r.pithos.p99CorrectedMs,
              errors: errorSummary(r.pithos.result).text,
              statuses: Object.fromEntries(r.pithos.result.statuses),
            },
            baseline: r.baseline && {
              perSec: r.baseline.perSec,
              cpuUsPerOp: r.baseline.cpuUsPerOp,
              otherCores: r.baseline.otherCores,
              p50Ms: r.baseline.p50Ms,
              p99Ms: r.baseline.p99Ms,
              p99CorrectedMs: r.baseline.p99CorrectedMs,
              errors: errorSummary(r.baseline.result).text,
              statuses: Object.fromEntries(r.baseline.result.statuses),
            },
          })),
        },
        null,
        2,
      ),
    );
  }
  if (o.cpuProf) {
    // Pithos's profile covers its whole life (set-up and warm-up included); compare with the baseline's
    for (const sub of readdirSync(o.cpuProf).sort()) {
      if (!sub.startsWith('pithos-') && !sub.startsWith('baseline-')) continue;
      if (readdirSync(join(o.cpuProf, sub)).length === 0) continue;
      process.stdout.write(`\nCPU profile ${join(o.cpuProf, sub)}:\n` + summarizeProfiles(join(o.cpuProf, sub), 25) + '\n');
    }
  }
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
