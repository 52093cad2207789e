/**
 * The operations the benchmark measures: how each is prepared on a fresh server,
 * which request wrk sends (a template, see bench/wrk/bench.lua), how Pithos's real
 * answer is captured and checked for the baseline to replay, and its targets.
 */
import type { BaselineConfig, CannedResponse } from './baseline.js';
import { http, parallel, type HttpAnswer } from './proc.js';

export type Fsync = 'always' | 'everysec' | 'never';

export interface Ctx {
  server: { host: string; port: number };
  token: string;
}

export interface LuaRequest {
  mode: 'template' | 'lock';
  method: string;
  path: string;
  body: string;
  keys: number;
}

export interface OpSpec {
  id: string;
  label: string;
  kind: 'read' | 'write';
  modes: Fsync[];
  unit: 'req/s' | 'pairs/s';
  /** wrk connections when not the run's (a full scan per request would only queue behind 32). */
  connections?: number;
  /** wrk threads: 0 = the run's default; lock pairs need one connection per thread. */
  threadsPerConnection?: boolean;
  lua: LuaRequest;
  /**
   * Text every 2xx answer under load must contain (checked by bench.lua), when
   * Pithos's captured answer contains it; otherwise `"status":"success"` is used.
   */
  expect?: string;
  /** Minimum Pithos ÷ baseline throughput, per durability mode. */
  ratioTarget: Partial<Record<Fsync, number>>;
  /** Maximum Pithos p99 latency in ms. */
  p99TargetMs: number;
  prepare(ctx: Ctx): Promise<void>;
  /** Sends the operation's request once, checks the answer, returns what the baseline replays. */
  capture(ctx: Ctx, runId: string): Promise<BaselineConfig>;
}

export const KEYS = 1000;
export const CONTENT_TYPE = 'application/json; charset=utf-8';

/** Same substitution as bench/wrk/bench.lua, for index `i`. */
export function instantiate(template: string, keys: number, i: number, runId: string): string {
  return template.replace(/\{\{([a-z])\}\}/g, (_m, v: string) => {
    switch (v) {
      case 'k':
        return String(i % keys).padStart(6, '0');
      case 'i':
        return String(i % keys);
      case 'n':
        return String(i);
      case 'r':
        return runId;
      default:
        throw new Error(`unknown template variable {{${v}}}`);
    }
  });
}

export class CaptureError extends Error {
  constructor(
    message: string,
    readonly request: string,
    readonly answer?: HttpAnswer,
  ) {
    super(message);
  }
}

function describe(req: string, a?: HttpAnswer): string {
  return a ? `${req} → ${a.status} ${a.body.slice(0, 300)}` : req;
}

function parseEnvelope(req: string, a: HttpAnswer): { status?: unknown; message?: unknown; data?: unknown } {
  try {
    const v = JSON.parse(a.body) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as { status?: unknown; message?: unknown; data?: unknown };
  } catch {
    throw new CaptureError(`answer is not a JSON envelope: ${describe(req, a)}`, req, a);
  }
}

/** Issues one request and insists on one of the `ok` statuses and a success envelope. */
async function expectOk(ctx: Ctx, method: string, path: string, body: string, ok: number[]): Promise<HttpAnswer> {
  const req = `${method} ${path}${body ? ' ' + (body.length > 200 ? body.slice(0, 200) + '…' : body) : ''}`;
  const a = await http(ctx.server, ctx.token, method, path, body);
  if (!ok.includes(a.status)) {
    throw new CaptureError(`expected ${ok.join('/')}: ${describe(req, a)}`, req, a);
  }
  const env = parseEnvelope(req, a);
  if (env.status !== 'success') throw new CaptureError(`envelope status is not "success": ${describe(req, a)}`, req, a);
  return a;
}

/** Headers the baseline replays: everything Node would not set by itself. */
export function canned(a: HttpAnswer): CannedResponse {
  const skip = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);
  return { status: a.status, headers: a.headers.filter(([k]) => !skip.has(k.toLowerCase())), body: a.body };
}

function dataOf(a: HttpAnswer): unknown {
  return (JSON.parse(a.body) as { data?: unknown }).data;
}

function check(cond: boolean, what: string, req: string, a: HttpAnswer): void {
  if (!cond) throw new CaptureError(`${what}: ${describe(req, a)}`, req, a);
}

/** A 1 KiB record: its JSON text is exactly 1024 bytes for any 6-character key. */
export function recordTemplate(): string {
  const shell = (payload: string): string => `{"id":"{{k}}","kind":"bench","n":7,"payload":"${payload}"}`;
  const base = instantiate(shell(''), KEYS, 0, 'r').length;
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let payload = '';
  while (payload.length < 1024 - base) payload += alphabet[(payload.length * 7) % alphabet.length];
  return shell(payload);
}

const RECORD = recordTemplate();

/** A 100-byte record (its JSON text, for any 6-character key): the size webdis's SET is driven with. */
export function smallRecordTemplate(): string {
  const shell = (payload: string): string => `{"id":"{{k}}","kind":"bench","payload":"${payload}"}`;
  return shell('x'.repeat(100 - instantiate(shell(''), KEYS, 0, 'r').length));
}
export const SMALL_RECORD = smallRecordTemplate();

/** Runs `n` set-up requests, 16 at a time, each expected to succeed. */
async function fill(ctx: Ctx, n: number, make: (i: number) => [string, string, string], ok: number[]): Promise<void> {
  await parallel([...Array(n).keys()], 16, async (i) => {
    const [method, path, body] = make(i);
    await expectOk(ctx, method, path, body, ok);
  });
}

/** Default capture: the request wrk sends first, answered by Pithos, checked by `validate`. */
function captureTemplate(lua: LuaRequest, ok: number[], validate: (data: unknown) => string | null) {
  return async (ctx: Ctx, runId: string): Promise<BaselineConfig> => {
    const path = instantiate(lua.path, lua.keys, 0, runId);
    const body = instantiate(lua.body, lua.keys, 0, runId);
    const a = await expectOk(ctx, lua.method, path, body, ok);
    const problem = validate(dataOf(a));
    check(problem === null, problem ?? '', `${lua.method} ${path}`, a);
    return { default: canned(a) };
  };
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const L = {
  getVariant: { mode: 'template', method: 'GET', path: '/variants/bv-{{k}}', body: '', keys: KEYS },
  getRecord: { mode: 'template', method: 'GET', path: '/records/br-{{k}}', body: '', keys: KEYS },
  incr: { mode: 'template', method: 'POST', path: '/variants/bc-{{k}}', body: '{"delta":1}', keys: KEYS },
  putRecord: { mode: 'template', method: 'PUT', path: '/records/bw-{{k}}', body: `{"record":${RECORD}}`, keys: KEYS },
  putSmall: { mode: 'template', method: 'PUT', path: '/records/bs-{{k}}', body: `{"record":${SMALL_RECORD}}`, keys: KEYS },
  insertRow: {
    mode: 'template',
    method: 'POST',
    path: '/tables/bench_ins/rows',
    body: '{"rows":{"seq":{{n}},"name":"user-{{n}}","email":"user{{n}}@example.com","active":true,"score":42}}',
    keys: 1,
  },
  // 1,000 rows, `group` = seq % 250: each where matches exactly 4 rows
  queryRows: { mode: 'template', method: 'GET', path: '/tables/bench_q/rows', body: '{"wheres":{"group":{{i}}}}', keys: 250 },
  lock: { mode: 'lock', method: 'PUT', path: '/locks/bl-{{r}}-{{n}}', body: '{"ttl":60}', keys: 1 },
  health: { mode: 'template', method: 'GET', path: '/health', body: '', keys: 1 },
  redisIncr: { mode: 'template', method: 'POST', path: '/redis', body: '["INCR","bu-{{k}}"]', keys: KEYS },
  redisPipeline: {
    mode: 'template',
    method: 'POST',
    path: '/redis/pipeline',
    body: `[${[...Array(16).keys()].map((j) => `["INCR","bp-{{k}}-${j}"]`).join(',')}]`,
    keys: KEYS,
  },
  // BIG_ROWS rows, `grp` = seq % BIG_GROUPS (indexed) and `alt` = the same value (not indexed): 10 rows per value
  queryIndexed: { mode: 'template', method: 'GET', path: '/tables/bench_big/rows', body: '{"wheres":{"grp":{{i}}}}', keys: 100_000 },
  queryScan: { mode: 'template', method: 'GET', path: '/tables/bench_big/rows', body: '{"wheres":{"alt":{{i}}}}', keys: 100_000 },
  // a 100-name page of BIG_ROWS records, from a cursor spread over the whole namespace
  listRecords: { mode: 'template', method: 'GET', path: '/records?prefix=bl-&limit=100&after=bl-{{k}}', body: '', keys: 1000 },
  // Small collections, whole: 10 items / 10 members each (docs/query.md, "Large collections": the path that stays one string)
  getList: { mode: 'template', method: 'GET', path: '/lists/bq-{{k}}', body: '', keys: 1000 },
  getSet: { mode: 'template', method: 'GET', path: '/sets/bm-{{k}}', body: '', keys: 1000 },
  // A transfer between two counters of one pair, a ledger row and a receipt record: 4 mutations and a check.
  txn: {
    mode: 'template',
    method: 'POST',
    path: '/txns',
    body:
      '{"checks":[{"kind":"variant","name":"bt-a-{{k}}","value":{"$gte":1}}],"mutations":[' +
      '{"kind":"variant","name":"bt-a-{{k}}","operation":"ADD","delta":-1},' +
      '{"kind":"variant","name":"bt-b-{{k}}","operation":"ADD","delta":1},' +
      '{"name":"bench_txn","operation":"INSERT","values":{"from":"bt-a-{{k}}","to":"bt-b-{{k}}","amount":1,"n":{{n}}}},' +
      '{"kind":"record","name":"bt-r-{{k}}","operation":"PUT","values":{"last":{{n}},"amount":1}}]}',
    keys: KEYS,
  },
} satisfies Record<string, LuaRequest>;

export const BIG_ROWS = 1_000_000;
const BIG_GROUPS = 100_000;
const TXN = 1000;

/** Once per server: a BIG_ROWS-row table with an index on `grp`, built through /txns of TXN inserts each. */
const bigTables = new WeakMap<object, Promise<void>>();
function prepareBig(ctx: Ctx): Promise<void> {
  let p = bigTables.get(ctx.server);
  if (p === undefined) {
    p = (async () => {
      await expectOk(ctx, 'PUT', '/tables/bench_big', '', [201]);
      await expectOk(ctx, 'PUT', '/tables/bench_big/indexes/grp', '', [201]);
      await parallel([...Array(BIG_ROWS / TXN).keys()], 4, async (b) => {
        const mutations = [];
        for (let j = 0; j < TXN; j++) {
          const i = b * TXN + j;
          mutations.push({ name: 'bench_big', operation: 'INSERT', values: { seq: i, grp: i % BIG_GROUPS, alt: i % BIG_GROUPS, name: `user-${i}` } });
        }
        await expectOk(ctx, 'POST', '/txns', JSON.stringify({ mutations }), [200]);
      });
      // the index was maintained during the inserts; wait until it reports ready
      for (;;) {
        const a = await expectOk(ctx, 'GET', '/tables/bench_big/indexes', '', [200]);
        if ((dataOf(a) as Array<{ ready: boolean }>).every((x) => x.ready)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    bigTables.set(ctx.server, p);
  }
  return p;
}

async function prepareRecords(ctx: Ctx): Promise<void> {
  await parallel([...Array(BIG_ROWS / TXN).keys()], 4, async (b) => {
    const mutations = [];
    for (let j = 0; j < TXN; j++) {
      mutations.push({ kind: 'record', name: `bl-${String(b * TXN + j).padStart(7, '0')}`, operation: 'PUT', values: { n: j } });
    }
    await expectOk(ctx, 'POST', '/txns', JSON.stringify({ mutations }), [200]);
  });
}

function tenRowsOf(d: unknown): string | null {
  return Array.isArray(d) && d.length === 10 && d.every((r, j) => isObj(r) && r['grp'] === 0 && r['seq'] === j * BIG_GROUPS)
    ? null
    : 'expected the 10 rows with grp 0 in t_id order';
}

/**
 * In run order. `insert-row` comes last: it grows a table by hundreds of thousands
 * of rows, and the bigger heap (longer GC) would otherwise weigh on every later row.
 */
export const OPS: OpSpec[] = [
  {
    id: 'get-variant',
    label: 'GET variant',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.getVariant,
    expect: '"data":{"variant":12345}',
    ratioTarget: { always: 0.8 },
    p99TargetMs: 5,
    prepare: (ctx) => fill(ctx, KEYS, (i) => ['PUT', instantiate(L.getVariant.path, KEYS, i, ''), '{"variant":12345}'], [201]),
    capture: captureTemplate(L.getVariant, [200], (d) => (isObj(d) && d['variant'] === 12345 ? null : 'expected data {"variant":12345}')),
  },
  {
    id: 'get-record',
    label: 'GET record (1 KiB)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.getRecord,
    expect: '"kind":"bench","n":7,"payload":"',
    ratioTarget: { always: 0.8 },
    p99TargetMs: 5,
    prepare: (ctx) => fill(ctx, KEYS, (i) => ['PUT', instantiate(L.getRecord.path, KEYS, i, ''), instantiate(`{"record":${RECORD}}`, KEYS, i, '')], [201]),
    capture: captureTemplate(L.getRecord, [200], (d) =>
      isObj(d) && Buffer.byteLength(JSON.stringify(d)) === 1024 && d['id'] === '000000' ? null : 'expected the 1 KiB record back',
    ),
  },
  {
    id: 'incr-variant',
    label: 'POST variant increment',
    kind: 'write',
    modes: ['always', 'never'],
    unit: 'req/s',
    lua: L.incr,
    expect: '"data":{"variant":',
    ratioTarget: { always: 0.6, never: 0.75 },
    p99TargetMs: 10,
    prepare: (ctx) => fill(ctx, KEYS, (i) => ['PUT', instantiate(L.incr.path, KEYS, i, ''), '{"variant":0}'], [201]),
    capture: captureTemplate(L.incr, [200], (d) =>
      isObj(d) && Number.isInteger(d['variant']) && (d['variant'] as number) > 0 ? null : 'expected data {"variant":<int>}',
    ),
  },
  {
    id: 'put-record',
    label: 'PUT record (1 KiB)',
    kind: 'write',
    modes: ['always'],
    unit: 'req/s',
    lua: L.putRecord,
    ratioTarget: { always: 0.5 },
    p99TargetMs: 10,
    // every measured PUT replaces an existing record (200), like the captured answer
    prepare: (ctx) => fill(ctx, KEYS, (i) => ['PUT', instantiate(L.putRecord.path, KEYS, i, ''), instantiate(L.putRecord.body, KEYS, i, '')], [201]),
    capture: captureTemplate(L.putRecord, [200], () => null),
  },
  {
    id: 'put-small',
    label: 'PUT record (100 B)',
    kind: 'write',
    modes: ['always'],
    unit: 'req/s',
    lua: L.putSmall,
    ratioTarget: { always: 0.5 },
    p99TargetMs: 10,
    // as put-record: every measured PUT replaces an existing record; webdis's SET line sends the same 100 bytes
    prepare: (ctx) => fill(ctx, KEYS, (i) => ['PUT', instantiate(L.putSmall.path, KEYS, i, ''), instantiate(L.putSmall.body, KEYS, i, '')], [201]),
    capture: captureTemplate(L.putSmall, [200], () => null),
  },
  {
    id: 'query-rows',
    label: 'GET rows wheres (1,000 rows)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.queryRows,
    expect: '"data":[{',
    ratioTarget: { always: 0.1 },
    p99TargetMs: 5,
    prepare: async (ctx) => {
      await expectOk(ctx, 'PUT', '/tables/bench_q', '', [201]);
      // four batches of 250 (in parallel within a batch): rows of one group are in seq order
      for (let b = 0; b < 4; b++) {
        await fill(
          ctx,
          250,
          (j) => {
            const i = b * 250 + j;
            return ['POST', '/tables/bench_q/rows', JSON.stringify({ rows: { seq: i, group: i % 250, name: `row-${i}`, active: i % 2 === 0 } })];
          },
          [201],
        );
      }
    },
    capture: async (ctx, runId) => {
      const body = instantiate(L.queryRows.body, L.queryRows.keys, 7, runId);
      const a = await expectOk(ctx, 'GET', L.queryRows.path, body, [200]);
      const d = dataOf(a);
      const ok = Array.isArray(d) && d.length === 4 && d.every((r, j) => isObj(r) && r['group'] === 7 && r['seq'] === 7 + 250 * j);
      check(ok, 'expected the 4 rows with group 7 in t_id order', `GET ${L.queryRows.path} ${body}`, a);
      return { default: canned(a) };
    },
  },
  {
    id: 'lock',
    label: 'lock acquire + release',
    kind: 'write',
    modes: ['always'],
    unit: 'pairs/s',
    threadsPerConnection: true,
    lua: L.lock,
    ratioTarget: {},
    p99TargetMs: 10,
    prepare: async () => {},
    capture: async (ctx, runId) => {
      const path = instantiate(L.lock.path, 1, 0, `cap${runId}`);
      const put = await expectOk(ctx, 'PUT', path, L.lock.body, [201]);
      const d = dataOf(put);
      check(isObj(d) && typeof d['token'] === 'string' && Number.isInteger(d['fence']), 'expected data {"token":…,"fence":…}', `PUT ${path}`, put);
      const token = (d as { token: string }).token;
      check(!/["\\]/.test(token), 'lock token contains a quote or backslash (bench.lua cannot extract it)', `PUT ${path}`, put);
      const del = await expectOk(ctx, 'DELETE', path, JSON.stringify({ token }), [200]);
      return { default: canned(put), byMethod: { PUT: canned(put), DELETE: canned(del) } };
    },
  },
  {
    id: 'txn',
    label: 'POST /txns (check + 4 mutations)',
    kind: 'write',
    modes: ['always'],
    unit: 'req/s',
    lua: L.txn,
    expect: '"data":{"results":[{"variant":',
    ratioTarget: {},
    p99TargetMs: 10,
    prepare: async (ctx) => {
      await expectOk(ctx, 'PUT', '/tables/bench_txn', '', [201]);
      await fill(ctx, KEYS, (i) => ['PUT', instantiate('/variants/bt-a-{{k}}', KEYS, i, ''), '{"variant":1000000000}'], [201]);
      await fill(ctx, KEYS, (i) => ['PUT', instantiate('/variants/bt-b-{{k}}', KEYS, i, ''), '{"variant":0}'], [201]);
    },
    capture: captureTemplate(L.txn, [200], (d) => (isObj(d) && Array.isArray(d['results']) && d['results'].length === 4 ? null : 'expected 4 results')),
  },
  {
    id: 'health',
    label: 'GET health',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.health,
    ratioTarget: {},
    p99TargetMs: 5,
    prepare: async () => {},
    capture: captureTemplate(L.health, [200], (d) => (isObj(d) && Number.isInteger(d['key_count']) ? null : 'expected data.key_count')),
  },
  {
    id: 'insert-row',
    label: 'POST table row',
    kind: 'write',
    modes: ['always', 'never'],
    unit: 'req/s',
    lua: L.insertRow,
    expect: '"data":{"t_id":',
    ratioTarget: { always: 0.5 },
    p99TargetMs: 10,
    prepare: async (ctx) => {
      await expectOk(ctx, 'PUT', '/tables/bench_ins', '', [201]);
    },
    capture: captureTemplate(L.insertRow, [201], (d) => (isObj(d) && Number.isInteger(d['t_id']) ? null : 'expected data {"t_id":<int>}')),
  },
  // Queries and indexes (docs/query.md): last, because their million rows and records make every later heap bigger.
  {
    id: 'query-indexed',
    label: 'GET rows, indexed equality (10 of 1,000,000 rows)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.queryIndexed,
    expect: '"data":[{',
    ratioTarget: {},
    p99TargetMs: 5,
    prepare: prepareBig,
    capture: captureTemplate(L.queryIndexed, [200], tenRowsOf),
  },
  {
    id: 'query-scan',
    label: 'GET rows, unindexed equality (10 of 1,000,000 rows)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.queryScan,
    connections: 2,
    expect: '"data":[{',
    ratioTarget: {},
    p99TargetMs: 5000,
    prepare: prepareBig,
    capture: captureTemplate(L.queryScan, [200], tenRowsOf),
  },
  {
    id: 'list-records',
    label: 'GET /records page of 100 (1,000,000 records)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.listRecords,
    expect: '"data":{"items":[{"name":"bl-',
    ratioTarget: {},
    p99TargetMs: 5,
    prepare: prepareRecords,
    capture: captureTemplate(L.listRecords, [200], (d) =>
      isObj(d) && Array.isArray(d['items']) && d['items'].length === 100 && typeof d['next'] === 'string' ? null : 'expected 100 items and a next cursor',
    ),
  },
  {
    id: 'get-list',
    label: 'GET list (10 items)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.getList,
    expect: '"data":{"items":["item-0","item-1",',
    ratioTarget: {},
    p99TargetMs: 5,
    prepare: (ctx) =>
      fill(
        ctx,
        1000,
        (i) => ['PUT', instantiate(L.getList.path, 1000, i, ''), JSON.stringify({ list: Array.from({ length: 10 }, (_, j) => `item-${j}`) })],
        [201],
      ),
    capture: captureTemplate(L.getList, [200], (d) => (isObj(d) && Array.isArray(d['items']) && d['items'].length === 10 ? null : 'expected 10 items')),
  },
  {
    id: 'get-set',
    label: 'GET set (10 members)',
    kind: 'read',
    modes: ['always'],
    unit: 'req/s',
    lua: L.getSet,
    expect: '"data":{"members":["member-0","member-1",',
    ratioTarget: {},
    p99TargetMs: 5,
    prepare: (ctx) =>
      fill(
        ctx,
        1000,
        (i) => ['PUT', instantiate(L.getSet.path, 1000, i, ''), JSON.stringify({ set: Array.from({ length: 10 }, (_, j) => `member-${j}`) })],
        [201],
      ),
    capture: captureTemplate(L.getSet, [200], (d) => (isObj(d) && Array.isArray(d['members']) && d['members'].length === 10 ? null : 'expected 10 members')),
  },
  // Upstash's REST protocol (docs/redis-rest.md): the same increment as incr-variant, as @upstash/redis sends it.
  {
    id: 'redis-incr',
    label: 'POST /redis ["INCR",k] (Upstash REST)',
    kind: 'write',
    modes: ['always', 'never'],
    unit: 'req/s',
    lua: L.redisIncr,
    expect: '{"result":',
    ratioTarget: { always: 0.6, never: 0.75 },
    p99TargetMs: 10,
    prepare: (ctx) => fill(ctx, KEYS, (i) => ['PUT', `/variants/bu-${instantiate('{{k}}', KEYS, i, '')}`, '{"variant":0}'], [201]),
    capture: captureUpstash(L.redisIncr, (v) => (isObj(v) && Number.isInteger(v['result']) ? null : 'expected {"result":<int>}')),
  },
  {
    id: 'redis-pipeline',
    label: 'POST /redis/pipeline, 16 INCRs (Upstash REST)',
    kind: 'write',
    modes: ['always', 'never'],
    unit: 'req/s',
    lua: L.redisPipeline,
    expect: '[{"result":',
    ratioTarget: {},
    p99TargetMs: 50,
    prepare: () => Promise.resolve(),
    capture: captureUpstash(L.redisPipeline, (v) =>
      Array.isArray(v) && v.length === 16 && v.every((e) => isObj(e) && Number.isInteger(e['result'])) ? null : 'expected 16 {"result":<int>}',
    ),
  },
];

/** Capture of an Upstash REST request: its answer is Upstash's JSON, not the envelope. */
function captureUpstash(lua: LuaRequest, validate: (v: unknown) => string | null) {
  return async (ctx: Ctx, runId: string): Promise<BaselineConfig> => {
    const path = instantiate(lua.path, lua.keys, 0, runId);
    const body = instantiate(lua.body, lua.keys, 0, runId);
    const req = `${lua.method} ${path} ${body.slice(0, 200)}`;
    const a = await http(ctx.server, ctx.token, lua.method, path, body);
    check(a.status === 200, 'expected 200', req, a);
    let v: unknown;
    try {
      v = JSON.parse(a.body);
    } catch {
      v = undefined;
    }
    const problem = validate(v);
    check(problem === null, problem ?? '', req, a);
    return { default: canned(a) };
  };
}
