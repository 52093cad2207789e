/**
 * GET /metrics: a scrape parsed by a strict Prometheus text-format (0.0.4)
 * parser written here; the families of API.md section 17 with their types and
 * labels; route labels are templates from the route table, never raw paths;
 * counters and histograms move by exactly what the requests did; auth by
 * Auth-Token or by the --metrics-token bearer, on /metrics only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROUTES } from '../../src/http/routes.js';
import { PithosServer, STORE, expectError, uniq } from '../helpers/server.js';

/** Families the log store's engine feeds; the shared store has no log, cache or compactor (docs/operations.md, "Metrics"). */
const LOG_FAMILIES = new Set([
  'pithos_log_write_duration_seconds',
  'pithos_log_fsync_duration_seconds',
  'pithos_group_commit_batches',
  'pithos_log_written_bytes_total',
  'pithos_keys',
  'pithos_objects',
  'pithos_live_bytes',
  'pithos_dead_bytes',
  'pithos_segments',
  'pithos_compaction_runs_total',
  'pithos_compaction_read_bytes_total',
  'pithos_compaction_written_bytes_total',
  'pithos_cache_hits_total',
  'pithos_cache_misses_total',
  'pithos_cache_bytes',
]);
const logOnly = STORE === 'log' ? false : "the log store's value cache (the shared store has none)";

// ---------------------------------------------------------------- parser

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function parseValue(s: string, line: number): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  // Prometheus reads values with Go's strconv.ParseFloat, which takes NaN in any case;
  // prom-client 15 writes 'Nan' (e.g. nodejs_eventloop_lag_stddev_seconds just after start).
  if (/^nan$/i.test(s)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`line ${line}: bad value '${s}'`);
  return Number(s);
}

/** Strict: every sample belongs to a family declared by # TYPE before it; histograms are well-formed. */
export function parsePrometheus(text: string): Map<string, Family> {
  const fams = new Map<string, Family>();
  const lines = text.split('\n');
  if (lines[lines.length - 1] !== '') throw new Error('exposition must end with a newline');
  lines.pop();
  let current: Family | undefined;
  lines.forEach((raw, i) => {
    const ln = i + 1;
    if (raw === '') return;
    if (raw.startsWith('#')) {
      const m = /^# (HELP|TYPE) ([^ ]+) (.*)$/.exec(raw);
      if (m === null) return; // a plain comment
      const [, kind, name, rest] = m;
      if (!NAME.test(name)) throw new Error(`line ${ln}: bad metric name '${name}'`);
      let f = fams.get(name);
      if (f === undefined) {
        f = { name, type: 'untyped', help: '', samples: [] };
        fams.set(name, f);
      }
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`line ${ln}: bad type '${rest}'`);
        if (f.samples.length > 0) throw new Error(`line ${ln}: TYPE after samples of ${name}`);
        f.type = rest as Family['type'];
      } else {
        f.help = rest;
      }
      current = f;
      return;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? ([^ ]+)( -?\d+)?$/.exec(raw);
    if (m === null) throw new Error(`line ${ln}: not a sample: ${raw}`);
    const [, name, labelText, valueText] = m;
    const labels: Record<string, string> = {};
    if (labelText !== undefined) {
      let s = labelText.slice(1, -1);
      while (s.length > 0) {
        const lm = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)/.exec(s);
        if (lm === null) throw new Error(`line ${ln}: bad labels ${labelText}`);
        if (!LABEL.test(lm[1]) || lm[1] in labels) throw new Error(`line ${ln}: bad or duplicate label ${lm[1]}`);
        labels[lm[1]] = lm[2].replace(/\\(["\\n])/g, (_x, c: string) => (c === 'n' ? '\n' : c));
        s = s.slice(lm[0].length);
      }
    }
    const value = parseValue(valueText, ln);
    const f = current;
    if (f === undefined) throw new Error(`line ${ln}: sample before any TYPE`);
    const suffixes = f.type === 'histogram' ? ['_bucket', '_sum', '_count'] : f.type === 'summary' ? ['', '_sum', '_count'] : [''];
    if (!suffixes.some((x) => name === f.name + x)) throw new Error(`line ${ln}: sample ${name} outside its family ${f.name}`);
    if (name.endsWith('_bucket') && labels.le === undefined) throw new Error(`line ${ln}: bucket without le`);
    f.samples.push({ name, labels, value });
  });
  for (const f of fams.values()) {
    if (f.type === 'counter') for (const s of f.samples) if (!(s.value >= 0)) throw new Error(`${f.name}: negative counter`);
    if (f.type !== 'histogram') continue;
    // Per label set: buckets ascend in le and in count, +Inf equals _count.
    const groups = new Map<string, Sample[]>();
    for (const s of f.samples) {
      const { le: _le, ...rest } = s.labels;
      const k = JSON.stringify(Object.entries(rest).sort());
      let g = groups.get(k);
      if (g === undefined) groups.set(k, (g = []));
      g.push(s);
    }
    for (const [k, g] of groups) {
      const buckets = g.filter((s) => s.name.endsWith('_bucket'));
      const count = g.find((s) => s.name.endsWith('_count'));
      if (count === undefined || g.find((s) => s.name.endsWith('_sum')) === undefined) throw new Error(`${f.name}${k}: no _sum/_count`);
      for (let i = 1; i < buckets.length; i++) {
        if (!(Number(buckets[i].labels.le.replace('+Inf', 'Infinity')) > Number(buckets[i - 1].labels.le.replace('+Inf', 'Infinity')))) {
          throw new Error(`${f.name}${k}: le out of order`);
        }
        if (buckets[i].value < buckets[i - 1].value) throw new Error(`${f.name}${k}: bucket counts decrease`);
      }
      const inf = buckets[buckets.length - 1];
      if (inf?.labels.le !== '+Inf' || inf.value !== count.value) throw new Error(`${f.name}${k}: +Inf bucket != _count`);
    }
  }
  return fams;
}

function value(fams: Map<string, Family>, sample: string, labels: Record<string, string> = {}): number {
  const famName = sample.replace(/_(bucket|sum|count)$/, '');
  const f = fams.get(sample) ?? fams.get(famName);
  if (f === undefined) return 0;
  const s = f.samples.find(
    (x) => x.name === sample && Object.entries(labels).every(([k, v]) => x.labels[k] === v) && Object.keys(x.labels).length === Object.keys(labels).length,
  );
  return s?.value ?? 0;
}

// ---------------------------------------------------------------- tests

const MT = 'metrics-secret-1';
let srv: PithosServer;

const READER = 'reader-token-123456';
let dir: string;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-metrics-'));
  writeFileSync(path.join(dir, 'tokens'), `dash read ${READER}\n`);
  srv = await PithosServer.start({ args: ['--metrics-token', MT, '--cache-mb', '1', '--tokens-file', path.join(dir, 'tokens')] });
});
after(async () => {
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function scrape(): Promise<Map<string, Family>> {
  const r = await srv.req('GET', '/metrics');
  assert.equal(r.status, 200, r.raw.slice(0, 300));
  assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return parsePrometheus(r.raw);
}

test('the parser is strict: malformed expositions are refused', () => {
  assert.throws(() => parsePrometheus('x 1\n'), /before any TYPE/);
  assert.throws(() => parsePrometheus('# TYPE a counter\na{b="1} 1\n'), /not a sample|bad labels/);
  assert.throws(() => parsePrometheus('# TYPE a counter\nb 1\n'), /outside its family/);
  assert.throws(() => parsePrometheus('# TYPE a counter\na one\n'), /bad value/);
  assert.throws(() => parsePrometheus('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'), /decrease/);
  assert.throws(() => parsePrometheus('# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n'), /_count/);
  assert.throws(() => parsePrometheus('# TYPE a counter\na 1'), /newline/);
  assert.equal(parsePrometheus('# HELP a x\n# TYPE a gauge\na{l="q\\"\\\\"} -1.5e3\n').get('a')?.samples[0].labels.l, 'q"\\');
});

test('the families of API.md section 17, with their types, base units and _total counters', async () => {
  const fams = await scrape();
  const want: Record<string, Family['type']> = {
    pithos_http_requests_total: 'counter',
    pithos_http_request_duration_seconds: 'histogram',
    pithos_log_write_duration_seconds: 'histogram',
    pithos_log_fsync_duration_seconds: 'histogram',
    pithos_group_commit_batches: 'histogram',
    pithos_log_written_bytes_total: 'counter',
    pithos_keys: 'gauge',
    pithos_objects: 'gauge',
    pithos_live_bytes: 'gauge',
    pithos_dead_bytes: 'gauge',
    pithos_segments: 'gauge',
    pithos_compaction_runs_total: 'counter',
    pithos_compaction_read_bytes_total: 'counter',
    pithos_compaction_written_bytes_total: 'counter',
    pithos_cache_hits_total: 'counter',
    pithos_cache_misses_total: 'counter',
    pithos_cache_bytes: 'gauge',
    pithos_watchers: 'gauge',
    pithos_event_loop_lag_seconds: 'summary',
    // process defaults (prom-client)
    process_cpu_seconds_total: 'counter',
    process_resident_memory_bytes: 'gauge',
    process_start_time_seconds: 'gauge',
    nodejs_heap_size_used_bytes: 'gauge',
    nodejs_eventloop_lag_seconds: 'gauge',
  };
  for (const [n, t] of Object.entries(want)) {
    if (STORE !== 'log' && LOG_FAMILIES.has(n)) {
      assert.equal(fams.get(n), undefined, `${n}: not exported by the ${STORE} store`);
      continue;
    }
    assert.equal(fams.get(n)?.type, t, `${n} should be a ${t}`);
    assert.ok((fams.get(n)?.help ?? '').length > 0, `${n} has help`);
  }
  for (const f of fams.values()) {
    if (!f.name.startsWith('pithos_')) continue;
    if (f.type === 'counter') assert.match(f.name, /_total$/, f.name);
    else assert.doesNotMatch(f.name, /_total$/, f.name);
    assert.doesNotMatch(f.name, /_(ms|milliseconds|kb|mb)(_|$)/, `${f.name}: base units`);
  }
  if (STORE === 'log') assert.equal(value(fams, 'pithos_segments'), 1);
  assert.equal(value(fams, 'pithos_watchers'), 0);
  const lag = fams.get('pithos_event_loop_lag_seconds')!;
  assert.deepEqual(
    lag.samples.map((s) => [s.name, s.labels.quantile]),
    [
      ['pithos_event_loop_lag_seconds', '0.5'],
      ['pithos_event_loop_lag_seconds', '0.99'],
      ['pithos_event_loop_lag_seconds', '1'],
      ['pithos_event_loop_lag_seconds_sum', undefined],
      ['pithos_event_loop_lag_seconds_count', undefined],
    ],
  );
  for (const s of lag.samples) assert.ok(s.value >= 0, `${s.name} ${s.value}`);
});

test('pithos_event_loop_lag_seconds: _count and _sum add up every sample since start; the quantiles cover one scrape', async () => {
  const count = (f: Map<string, Family>): number => value(f, 'pithos_event_loop_lag_seconds_count');
  const sum = (f: Map<string, Family>): number => value(f, 'pithos_event_loop_lag_seconds_sum');
  // The server samples its event loop every 10 ms and counts the samples at each scrape; a
  // server short of CPU (a busy machine), scraped a moment ago, may have taken none yet.
  // So: scrapes until some are counted, then until more are (each bounded, 60 s).
  let before = await scrape();
  for (const end = Date.now() + 60_000; count(before) === 0 && Date.now() < end;) {
    await new Promise((r) => setTimeout(r, 50));
    before = await scrape();
  }
  let after = before;
  for (const end = Date.now() + 60_000; count(after) <= count(before) && Date.now() < end;) {
    await new Promise((r) => setTimeout(r, 50));
    after = await scrape();
  }
  assert.ok(count(before) > 0, 'samples were counted');
  assert.ok(count(after) > count(before), `_count grows: ${count(before)} -> ${count(after)}`);
  assert.ok(sum(after) >= sum(before), `_sum never goes down: ${sum(before)} -> ${sum(after)}`);
  const q = (f: Map<string, Family>, p: string): number => value(f, 'pithos_event_loop_lag_seconds', { quantile: p });
  assert.ok(q(after, '0.5') <= q(after, '0.99') && q(after, '0.99') <= q(after, '1'), 'quantiles ascend');
});

/**
 * Debian's `prometheus` package ships promtool, and .ci/run installs it. Without it
 * the check is skipped, saying why, except under CI (CI set), where it fails.
 */
const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
const noPromtool =
  promtool.error === undefined
    ? false
    : `promtool not found (${(promtool.error as NodeJS.ErrnoException).code}): install Debian's prometheus package to run this check`;
if (noPromtool) console.log(`# ${noPromtool}`);

test('promtool check metrics finds no problem in a scrape', { skip: process.env.CI === undefined ? noPromtool : false }, async () => {
  assert.equal(noPromtool, false, `${noPromtool}; under CI this check must run (.ci/run installs it)`);
  // Traffic first, so labelled request families and histograms are in the scrape.
  const id = uniq('promtool-');
  assert.equal((await srv.req('PUT', `/records/${id}`, { record: { id } })).status, 201);
  assert.equal((await srv.req('GET', `/records/${id}`)).status, 200);
  expectError(await srv.req('GET', '/records/promtool-missing'), 404);
  const r = await srv.req('GET', '/metrics');
  assert.equal(r.status, 200);
  const check = spawnSync('promtool', ['check', 'metrics'], { input: r.raw, encoding: 'utf8' });
  assert.equal(check.error, undefined);
  assert.equal(check.status, 0, `promtool check metrics exited ${check.status}:\n${check.stdout}${check.stderr}`);
  assert.equal(`${check.stdout}${check.stderr}`.trim(), '', 'promtool reported problems');
});

test('requests are labelled by route template, method and status; counters move by exactly what was done', async () => {
  const before = await scrape();
  const ids = [uniq('raw-path-'), uniq('raw-path-'), uniq('raw-path-')];
  for (const id of ids) assert.equal((await srv.req('PUT', `/records/${id}`, { record: { id } })).status, 201);
  for (let i = 0; i < 5; i++) assert.equal((await srv.req('GET', `/records/${ids[i % 3]}`)).status, 200);
  expectError(await srv.req('GET', '/records/missing-one'), 404);
  expectError(await srv.req('GET', `/no/such/${ids[0]}`), 404);
  expectError(await srv.req('COPY', '/records/x'), 405);
  expectError(await srv.req('GET', '/records/x', undefined, { 'Auth-Token': 'wrong' }), 401);
  assert.equal((await srv.req('GET', '/readyz', undefined, { 'Auth-Token': null })).status, 200);
  const after = await scrape();

  const d = (sample: string, labels: Record<string, string> = {}): number => value(after, sample, labels) - value(before, sample, labels);
  const rec = { route: '/records/{name}' };
  assert.equal(d('pithos_http_requests_total', { ...rec, method: 'PUT', status: '201' }), 3);
  assert.equal(d('pithos_http_requests_total', { ...rec, method: 'GET', status: '200' }), 5);
  assert.equal(d('pithos_http_requests_total', { ...rec, method: 'GET', status: '404' }), 1);
  assert.equal(d('pithos_http_request_duration_seconds_count', { ...rec, method: 'GET', status: '200' }), 5);
  assert.equal(d('pithos_http_request_duration_seconds_bucket', { ...rec, method: 'PUT', status: '201', le: '+Inf' }), 3);
  assert.ok(d('pithos_http_request_duration_seconds_sum', { ...rec, method: 'PUT', status: '201' }) > 0);
  assert.equal(d('pithos_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }), 1);
  assert.equal(d('pithos_http_requests_total', { route: 'unmatched', method: 'other', status: '405' }), 1);
  assert.equal(d('pithos_http_requests_total', { route: 'unmatched', method: 'GET', status: '401' }), 1);
  assert.equal(d('pithos_http_requests_total', { route: '/readyz', method: 'GET', status: '200' }), 1);
  // the previous scrape itself is counted once it has been sent
  assert.ok(value(after, 'pithos_http_requests_total', { route: '/metrics', method: 'GET', status: '200' }) >= 2);

  // Labels come from the table, never from the raw path.
  const templates = new Set([...ROUTES.map((r) => r.path), '/livez', '/readyz', 'unmatched']);
  for (const s of after.get('pithos_http_requests_total')!.samples) {
    assert.ok(templates.has(s.labels.route), `route label ${s.labels.route}`);
    assert.deepEqual(Object.keys(s.labels).sort(), ['method', 'route', 'status']);
  }
  assert.ok(!/raw-path-|no\/such|missing-one/.test((await srv.req('GET', '/metrics')).raw), 'a raw path leaked into a label');

  // Storage: three durable writes went through group commit, write and fdatasync; the keys are there; reads hit the cache.
  if (STORE !== 'log') return;
  assert.ok(d('pithos_group_commit_batches_sum') >= 3 && d('pithos_group_commit_batches_count') >= 1);
  assert.ok(d('pithos_log_write_duration_seconds_count') >= 1);
  assert.ok(d('pithos_log_fsync_duration_seconds_count') >= 1);
  assert.ok(d('pithos_log_written_bytes_total') > 3 * 10);
  assert.equal(d('pithos_keys'), 3);
  assert.equal(d('pithos_objects'), 3);
  assert.ok(d('pithos_live_bytes') > 0);
  assert.ok(d('pithos_cache_hits_total') >= 5);
});

test('lists, sets and sorted sets: their requests are counted under their route templates; on the log store each is one object, its elements keys', async () => {
  const before = await scrape();
  const [l, s, z] = [uniq('m-list-'), uniq('m-set-'), uniq('m-zset-')];
  assert.equal((await srv.req('PUT', `/lists/${l}`, { list: [1, 2] })).status, 201);
  assert.equal((await srv.req('POST', `/lists/${l}/push`, { values: [3] })).status, 200);
  assert.equal((await srv.req('PUT', `/sets/${s}`, { set: ['a', 'b'] })).status, 201);
  assert.equal((await srv.req('POST', `/sets/${s}/add`, { members: ['c'] })).status, 200);
  assert.equal((await srv.req('PUT', `/zsets/${z}`, { zset: { a: 1, b: 2 } })).status, 201);
  assert.equal((await srv.req('POST', `/zsets/${z}/incr`, { member: 'c', delta: 1 })).status, 200);
  assert.equal((await srv.req('GET', `/zsets/${z}`)).status, 200);
  expectError(await srv.req('GET', `/sets/${uniq('m-missing-')}`), 404);
  const after = await scrape();
  const d = (sample: string, labels: Record<string, string> = {}): number => value(after, sample, labels) - value(before, sample, labels);
  const counted: [string, string, string][] = [
    ['/lists/{name}', 'PUT', '201'],
    ['/lists/{name}/push', 'POST', '200'],
    ['/sets/{name}', 'PUT', '201'],
    ['/sets/{name}/add', 'POST', '200'],
    ['/sets/{name}', 'GET', '404'],
    ['/zsets/{name}', 'PUT', '201'],
    ['/zsets/{name}/incr', 'POST', '200'],
    ['/zsets/{name}', 'GET', '200'],
  ];
  for (const [route, method, status] of counted) {
    assert.equal(d('pithos_http_requests_total', { route, method, status }), 1, `${method} ${route} ${status}`);
    assert.equal(d('pithos_http_request_duration_seconds_count', { route, method, status }), 1, `${method} ${route} ${status}: duration`);
  }
  if (STORE !== 'log') return;
  // The help names every kind the gauges count, and the counts follow.
  assert.match(after.get('pithos_objects')!.help, /\blists, sets, sorted sets\b/);
  assert.match(after.get('pithos_keys')!.help, /list items, set and sorted-set members/);
  assert.equal(d('pithos_objects'), 3, 'a list, a set and a sorted set: three objects');
  assert.equal(d('pithos_keys'), 3 + 3 + 3 + 3, 'three headers, and three elements each');
});

test('requests carrying X-Pithos-Console are counted apart too, so a dashboard can leave the console out', async () => {
  const before = await scrape();
  for (let i = 0; i < 4; i++) assert.equal((await srv.req('GET', '/health', undefined, { 'X-Pithos-Console': '1' })).status, 200);
  assert.equal((await srv.req('GET', '/health')).status, 200);
  const after = await scrape();
  const d = (sample: string, labels: Record<string, string> = {}): number => value(after, sample, labels) - value(before, sample, labels);
  assert.equal(d('pithos_http_console_requests_total'), 4);
  assert.ok(d('pithos_http_console_request_seconds_total') > 0);
  // Still in the route families: the console's requests are requests.
  assert.equal(d('pithos_http_requests_total', { route: '/health', method: 'GET', status: '200' }), 5);
  assert.equal(after.get('pithos_http_console_requests_total')?.type, 'counter');
});

test('cache misses count reads that went to disk (1 MiB cache, 2 MB of records)', { skip: logOnly }, async () => {
  const blob = 'x'.repeat(100_000);
  const names = Array.from({ length: 20 }, () => uniq('big'));
  for (const n of names) assert.equal((await srv.req('PUT', `/records/${n}`, { record: { blob } })).status, 201);
  const before = await scrape();
  assert.equal((await srv.req('GET', `/records/${names[0]}`)).status, 200);
  const after = await scrape();
  assert.ok(value(after, 'pithos_cache_misses_total') - value(before, 'pithos_cache_misses_total') >= 1);
  assert.ok(value(after, 'pithos_cache_bytes') <= 1024 * 1024 * 1.5);
});

test('auth: Auth-Token, or the metrics token as a bearer on /metrics only', async () => {
  const bearer = { 'Auth-Token': null, Authorization: `Bearer ${MT}` };
  const ok = await srv.req('GET', '/metrics', undefined, bearer);
  assert.equal(ok.status, 200);
  parsePrometheus(ok.raw);
  expectError(await srv.req('GET', '/metrics', undefined, { 'Auth-Token': null }), 401, 'missing Auth-Token header');
  expectError(
    await srv.req('GET', '/metrics', undefined, { 'Auth-Token': null, Authorization: `Bearer ${MT}x` }),
    401,
    /wrong token in the Authorization header/,
  );
  // a named read token is refused (the route's role is admin), and the bearer does not lift a wrong Auth-Token's 403
  expectError(await srv.req('GET', '/metrics', undefined, { 'Auth-Token': READER }), 403);
  assert.equal((await srv.req('GET', '/metrics', undefined, { 'Auth-Token': READER, Authorization: `Bearer ${MT}` })).status, 200);
  assert.equal((await srv.req('GET', '/health', undefined, { 'Auth-Token': READER })).status, 200);
  expectError(await srv.req('GET', '/metrics', undefined, { 'Auth-Token': null, Authorization: `Bearer ${srv.token}` }), 401);
  // Elsewhere the bearer is no credential at all: the token is missing, and the answer says so (not "wrong token").
  expectError(await srv.req('GET', '/health', undefined, bearer), 401, 'missing Auth-Token header');
  expectError(await srv.req('PUT', '/records/a', { record: {} }, bearer), 401, 'missing Auth-Token header');
  expectError(await srv.req('POST', '/metrics', undefined, bearer), 401);
});

test('pithos_watchers counts open change-feed streams (GET /watch)', async () => {
  const before = await scrape();
  assert.equal(value(before, 'pithos_watchers'), 0);
  const req = http.get({ host: '127.0.0.1', port: srv.port, path: '/watch', headers: { 'Auth-Token': srv.token }, agent: false });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => req.on('response', resolve).on('error', reject));
  assert.equal(res.statusCode, 200);
  res.resume();
  assert.equal(value(await scrape(), 'pithos_watchers'), 1);
  req.destroy();
  // The server counts the stream gone once it sees the connection close: on a busy machine
  // that may take well over a second, so wait for it (bounded, 30 s).
  let n = 1;
  for (const end = Date.now() + 30_000; n !== 0 && Date.now() < end;) {
    await new Promise((r) => setTimeout(r, 20));
    n = value(await scrape(), 'pithos_watchers');
  }
  assert.equal(n, 0);
});
