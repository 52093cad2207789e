/** Driving wrk (Debian's package) and reading what bench/wrk/bench.lua prints. */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

export interface WrkResult {
  durationUs: number;
  requests: number;
  bytes: number;
  socketErrors: { connect: number; read: number; write: number; timeout: number };
  /** wrk's own count of answers with status > 399. */
  statusErrors: number;
  statuses: Map<number, number>;
  pairs: number;
  badBodies: number;
  lockConflicts: number;
  /**
   * Latency histogram as wrk hands it to the script: microseconds → count,
   * after wrk's coordinated-omission correction (see `uncorrect`).
   */
  latencyCorrected: Map<number, number>;
  /** The same histogram with wrk's synthetic samples removed: one sample per real response. */
  latency: Map<number, number>;
  /** Samples in `latency`; equals the responses counted unless some exceeded wrk's timeout. */
  latencySamples: number;
}

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** Makes sure `wrk` is on PATH, installing it with bench/install-wrk.sh when it is not. */
export function ensureWrk(root: string): string {
  if (!onPath('wrk')) {
    process.stderr.write('bench: wrk not found, installing it (bench/install-wrk.sh)…\n');
    const r = spawnSync('sh', [join(root, 'bench', 'install-wrk.sh')], { stdio: ['ignore', 2, 2] });
    if (r.status !== 0 || !onPath('wrk')) {
      throw new Error('could not install wrk (bench/install-wrk.sh failed); install Debian package "wrk" and retry');
    }
  }
  const v = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  const line = `${v.stdout ?? ''}${v.stderr ?? ''}`.split('\n')[0] ?? 'wrk';
  return line.replace(/\s*Copyright.*$/, '').trim();
}

export interface WrkRun {
  url: string;
  threads: number;
  connections: number;
  durationS: number;
  script: string;
  scriptArgs: string[];
}

export function runWrk(run: WrkRun): Promise<WrkResult> {
  const args = [
    '-t',
    String(run.threads),
    '-c',
    String(run.connections),
    '-d',
    `${Math.max(1, Math.round(run.durationS))}s`,
    '--timeout',
    '10s',
    '-s',
    run.script,
    run.url,
    '--',
    ...run.scriptArgs,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const killer = setTimeout(() => child.kill('SIGKILL'), (run.durationS + 30) * 1000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(killer);
      try {
        if (code !== 0) throw new Error(`wrk exited with ${code}`);
        resolve(parseWrk(out, run.connections));
      } catch (e) {
        reject(new Error(`${(e as Error).message}\nwrk ${args.join(' ')}\n${err}${out.slice(-2000)}`));
      }
    });
  });
}

function fields(line: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const part of line.trim().split(/\s+/).slice(1)) {
    const [k, v] = part.split('=');
    if (k !== undefined && v !== undefined) m.set(k, Number(v));
  }
  return m;
}

/**
 * wrk (4.x, wrk.c) corrects its latency histogram for coordinated omission
 * before scripts see it: with `e = duration / (responses / connections)`, the
 * mean time between two requests on one connection, every recorded latency
 * n ≥ 2e adds synthetic samples at n − e, n − 2e, … while above e (stats.c,
 * `stats_correct`). A 40 ms stall then counts about 20 times per connection.
 *
 * The correction visits n in ascending order and only adds below n, so each
 * bucket's original count is its corrected count minus what higher buckets
 * added: walking down from the top undoes it exactly.
 */
export function uncorrect(corrected: Map<number, number>, durationUs: number, responses: number, connections: number): Map<number, number> {
  const perConnection = Math.floor(responses / connections);
  if (perConnection === 0) return new Map(corrected);
  const e = Math.floor(durationUs / perConnection);
  const added = new Map<number, number>();
  const raw = new Map<number, number>();
  let total = 0;
  let synthetic = 0;
  for (const n of [...corrected.keys()].sort((a, b) => b - a)) {
    total += corrected.get(n)!;
    const original = corrected.get(n)! - (added.get(n) ?? 0);
    if (original < 0) throw new Error(`wrk latency histogram is not one wrk's correction can produce (bucket ${n} µs)`);
    if (original === 0) continue;
    raw.set(n, original);
    if (e > 0 && n >= 2 * e) {
      for (let m = n - e; m > e; m -= e) {
        added.set(m, (added.get(m) ?? 0) + original);
        synthetic += original;
      }
    }
  }
  // Every synthetic sample must have been found in some bucket.
  let kept = 0;
  for (const c of raw.values()) kept += c;
  if (kept + synthetic !== total)
    throw new Error(`wrk latency histogram is not one wrk's correction can produce (${total - kept} synthetic samples found, ${synthetic} expected)`);
  return raw;
}

/** Applies wrk's correction (the inverse of `uncorrect`); used by its test. */
export function correct(raw: Map<number, number>, durationUs: number, responses: number, connections: number): Map<number, number> {
  const out = new Map(raw);
  const perConnection = Math.floor(responses / connections);
  if (perConnection === 0) return out;
  const e = Math.floor(durationUs / perConnection);
  if (e <= 0) return out;
  for (const n of [...raw.keys()].sort((a, b) => a - b)) {
    if (n < 2 * e) continue;
    const count = raw.get(n)!;
    for (let m = n - e; m > e; m -= e) out.set(m, (out.get(m) ?? 0) + count);
  }
  return out;
}

export function parseWrk(out: string, connections: number): WrkResult {
  const lines = out.split('\n');
  const find = (tag: string): string => {
    const l = lines.find((x) => x.startsWith(tag + ' ') || x === tag);
    if (l === undefined) throw new Error(`wrk output lacks ${tag} (script error?)`);
    return l;
  };
  const s = fields(find('BENCH_SUMMARY'));
  const c = fields(find('BENCH_COUNTS'));
  const statuses = new Map<number, number>();
  for (const [k, v] of fields(find('BENCH_STATUS'))) statuses.set(Number(k), v);
  const latency = new Map<number, number>();
  for (const part of find('BENCH_LATENCY').trim().split(/\s+/).slice(1)) {
    const [v, n] = part.split(':');
    latency.set(Number(v), (latency.get(Number(v)) ?? 0) + Number(n));
  }
  const num = (m: Map<string, number>, k: string): number => m.get(k) ?? 0;
  const raw = uncorrect(latency, num(s, 'duration_us'), num(s, 'requests'), connections);
  let samples = 0;
  for (const c of raw.values()) samples += c;
  return {
    durationUs: num(s, 'duration_us'),
    requests: num(s, 'requests'),
    bytes: num(s, 'bytes'),
    socketErrors: { connect: num(s, 'connect'), read: num(s, 'read'), write: num(s, 'write'), timeout: num(s, 'timeout') },
    statusErrors: num(s, 'status'),
    statuses,
    pairs: num(c, 'pairs'),
    badBodies: num(c, 'bad_bodies'),
    lockConflicts: num(c, 'lock_conflicts'),
    latencyCorrected: latency,
    latency: raw,
    latencySamples: samples,
  };
}

/** Sums several runs of the same side (rounds) into one result. */
export function mergeResults(results: WrkResult[]): WrkResult {
  const out: WrkResult = {
    durationUs: 0,
    requests: 0,
    bytes: 0,
    socketErrors: { connect: 0, read: 0, write: 0, timeout: 0 },
    statusErrors: 0,
    statuses: new Map(),
    pairs: 0,
    badBodies: 0,
    lockConflicts: 0,
    latencyCorrected: new Map(),
    latency: new Map(),
    latencySamples: 0,
  };
  for (const r of results) {
    out.durationUs += r.durationUs;
    out.requests += r.requests;
    out.bytes += r.bytes;
    out.socketErrors.connect += r.socketErrors.connect;
    out.socketErrors.read += r.socketErrors.read;
    out.socketErrors.write += r.socketErrors.write;
    out.socketErrors.timeout += r.socketErrors.timeout;
    out.statusErrors += r.statusErrors;
    out.pairs += r.pairs;
    out.badBodies += r.badBodies;
    out.lockConflicts += r.lockConflicts;
    for (const [k, v] of r.statuses) out.statuses.set(k, (out.statuses.get(k) ?? 0) + v);
    out.latencySamples += r.latencySamples;
    for (const [k, v] of r.latency) out.latency.set(k, (out.latency.get(k) ?? 0) + v);
    for (const [k, v] of r.latencyCorrected) out.latencyCorrected.set(k, (out.latencyCorrected.get(k) ?? 0) + v);
  }
  return out;
}

/** Percentile (0–100) of a latency histogram, in microseconds. */
export function percentile(hist: Map<number, number>, p: number): number {
  const keys = [...hist.keys()].sort((a, b) => a - b);
  let total = 0;
  for (const k of keys) total += hist.get(k)!;
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const k of keys) {
    seen += hist.get(k)!;
    if (seen >= rank) return k;
  }
  return keys[keys.length - 1]!;
}

/** Answers with a 2xx status. */
export function okCount(r: WrkResult): number {
  let n = 0;
  for (const [code, count] of r.statuses) if (code >= 200 && code < 300) n += count;
  return n;
}

/** Everything that is not a 2xx answer, plus socket errors and body-check failures. */
export function errorSummary(r: WrkResult): { total: number; text: string } {
  const parts: string[] = [];
  let total = 0;
  const codes = [...r.statuses.keys()].filter((c) => c < 200 || c >= 300).sort((a, b) => a - b);
  for (const code of codes) {
    const n = r.statuses.get(code)!;
    total += n;
    parts.push(`${code}×${n}`);
  }
  const se = r.socketErrors;
  for (const [name, n] of Object.entries(se)) {
    if (n > 0) {
      total += n;
      parts.push(`${name}×${n}`);
    }
  }
  if (r.badBodies > 0) {
    total += r.badBodies;
    parts.push(`bad-body×${r.badBodies}`);
  }
  return { total, text: parts.length ? parts.join(' ') : '0' };
}
