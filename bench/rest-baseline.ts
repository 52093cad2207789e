/**
 * The Upstash REST baseline (docs/benchmarks.md, "Upstash REST"): what Node
 * itself costs for the `INCR`s that the REST lines of `npm run bench` send,
 * with nothing of Pithos. A bare `node:http` server, run as its own process,
 * parses `POST /redis` (`["INCR", key]`) and `POST /redis/pipeline` (an array
 * of them), keeps the counters in a `Map`, and answers only after each
 * increment's log line is appended to a file and `fdatasync`ed — one flush
 * for every write that arrived while the previous flush ran, as the log's
 * group commit does. It is the ceiling of the pipeline's "commands per second
 * ÷ single requests" ratio: the same HTTP and JSON work per request, and per
 * command only a `Map` update and a line of log.
 *
 *   node dist/bench/rest-baseline.js --port <n> --file <path>
 *
 * Prints `listening on http://127.0.0.1:<port>` when ready; SIGTERM stops it.
 */
import { openSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { serveBare } from './bare-server.js';
import { GroupLog } from './group-log.js';

const arg = (name: string): string => {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[i + 1]!;
};

const counters = new Map<string, number>();

const log = new GroupLog(openSync(arg('--file'), 'w'));

/** One command's answer, Upstash's shape; only INCR of an integer is served. */
function run(cmd: unknown): { result: number } | { error: string } {
  if (!Array.isArray(cmd) || String(cmd[0]).toUpperCase() !== 'INCR' || typeof cmd[1] !== 'string') return { error: 'ERR only INCR key' };
  const v = (counters.get(cmd[1]) ?? 0) + 1;
  counters.set(cmd[1], v);
  log.line(`${cmd[1]}\t${v}\n`);
  return { result: v };
}

function answer(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      answer(res, 400, '{"error":"ERR body is not JSON"}');
      return;
    }
    let out: string;
    if (req.url === '/redis/pipeline' && Array.isArray(body)) out = JSON.stringify(body.map(run));
    else if (req.url === '/redis') {
      const r = run(body);
      if ('error' in r) return answer(res, 400, JSON.stringify(r));
      out = JSON.stringify(r);
    } else return answer(res, 404, '{"error":"ERR not served here"}');
    log.then(() => answer(res, 200, out));
  });
});

serveBare(server, 'rest-baseline', '127.0.0.1', Number(arg('--port')));
