/**
 * The shared store's increment with nothing of Pithos (docs/benchmarks.md,
 * "Group commit on the shared store"): a bare `node:http` server, run as its
 * own process, that answers `POST /variants/<name>` `{"delta":n}` with the
 * same database work as Pithos's group commit (src/store/postgres/
 * group-commit.ts): increments that arrive while two batches are in flight
 * go together, at most 64, as one call of `pithos_group_counters`
 * (`--group pithos_group`: of `pithos_group`, as before migration 14); a
 * batch of one runs the increment's own `UPDATE`. No routing, no auth, no deadlines, no
 * metrics, no checks: the ceiling of what any Node server doing this work on
 * the same machine can reach beside pgbench.
 *
 *   node dist/bench/pg-baseline.js --port <n> --store <postgres url> --pool <n> [--group pithos_group]
 *
 * Prints `listening on http://127.0.0.1:<port>` when ready; SIGTERM stops it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import pg from 'pg';
import { serveBare } from './bare-server.js';

const arg = (name: string): string => {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[i + 1]!;
};

const pool = new pg.Pool({ connectionString: arg('--store'), max: Number(arg('--pool')) });
const GROUP = { name: 'pithos_group', text: 'SELECT pithos_group($1::jsonb, $2::int8) AS r' };
const COUNTERS = { name: 'pithos_group_counters', text: 'SELECT op, val FROM pithos_group_counters($1::text[], $2::int8[], 0::int8)' };
const byGroup = process.argv.includes('--group') && arg('--group') === 'pithos_group';
const ALONE = {
  name: 'increment',
  text: `UPDATE pithos_variants SET v = (v::int8 + $2::int8)::text, version = nextval('pithos_seq')
    WHERE name = $1 AND t = 'i' AND (expires_at IS NULL OR expires_at > floor(extract(epoch from now()) * 1000)::int8)
      AND abs(v::int8 + $2::int8) <= 9007199254740991 RETURNING v`,
};

interface Job {
  name: string;
  delta: number;
  res: ServerResponse;
}

let queue: Job[] = [];
let inFlight = 0;

function answer(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
const done = (j: Job, v: unknown): void =>
  v === undefined || v === null ? answer(j.res, 409, '{"status":"error"}') : answer(j.res, 200, `{"status":"success","data":{"variant":${Number(v)}}}`);

async function send(batch: Job[]): Promise<void> {
  if (batch.length === 1) {
    const r = await pool.query({ ...ALONE, values: [batch[0].name, batch[0].delta] });
    return done(batch[0], r.rows[0]?.v);
  }
  if (!byGroup) {
    const r = await pool.query({ ...COUNTERS, values: [batch.map((j) => j.name), batch.map((j) => j.delta)] });
    const applied = new Map(r.rows.map((x: { op: string; val: string }) => [Number(x.op), x.val]));
    batch.forEach((j, i) => done(j, applied.get(i + 1)));
    return;
  }
  const ops = `[${batch.map((j) => JSON.stringify({ k: 'i', n: j.name, d: j.delta })).join(',')}]`;
  const r = await pool.query({ ...GROUP, values: [ops, 0] });
  for (const x of r.rows[0].r as Array<{ i: number; r?: unknown }>) done(batch[x.i - 1], x.r);
}

function flush(): void {
  while (queue.length > 0 && inFlight < 2) {
    const batch = queue.slice(0, 64);
    queue = queue.slice(64);
    inFlight++;
    send(batch)
      .catch((err: unknown) => {
        for (const j of batch) if (!j.res.headersSent) answer(j.res, 503, JSON.stringify({ status: 'error', message: String(err) }));
      })
      .finally(() => {
        inFlight--;
        flush();
      });
  }
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let delta: unknown;
    try {
      delta = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { delta?: unknown }).delta;
    } catch {
      delta = undefined;
    }
    if (req.method !== 'POST' || !req.url?.startsWith('/variants/') || !Number.isSafeInteger(delta)) return answer(res, 400, '{"status":"error"}');
    queue.push({ name: decodeURIComponent(req.url.slice('/variants/'.length)), delta: delta as number, res });
    flush();
  });
});

serveBare(server, 'pg-baseline', '127.0.0.1', Number(arg('--port')), () => pool.end());
