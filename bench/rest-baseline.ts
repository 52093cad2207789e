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
import { fdatasync, openSync, write } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const arg = (name: string): string => {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[i + 1]!;
};

const fd = openSync(arg('--file'), 'w');
const counters = new Map<string, number>();

let lines: string[] = [];
let waiting: Array<() => void> = [];
let flushing = false;

function flush(): void {
  if (flushing || lines.length === 0) return;
  flushing = true;
  const buf = Buffer.from(lines.join(''));
  const done = waiting;
  lines = [];
  waiting = [];
  write(fd, buf, 0, buf.length, null, (err) => {
    if (err) throw err;
    fdatasync(fd, (err2) => {
      if (err2) throw err2;
      flushing = false;
      for (const f of done) f();
      flush();
    });
  });
}

/** One command's answer, Upstash's shape; only INCR of an integer is served. */
function run(cmd: unknown): { result: number } | { error: string } {
  if (!Array.isArray(cmd) || String(cmd[0]).toUpperCase() !== 'INCR' || typeof cmd[1] !== 'string') return { error: 'ERR only INCR key' };
  const v = (counters.get(cmd[1]) ?? 0) + 1;
  counters.set(cmd[1], v);
  lines.push(`${cmd[1]}\t${v}\n`);
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
    waiting.push(() => answer(res, 200, out));
    flush();
  });
});

server.listen(Number(arg('--port')), '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`rest-baseline listening on http://127.0.0.1:${typeof a === 'object' && a !== null ? a.port : 0}\n`);
});

const stop = (): void => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
