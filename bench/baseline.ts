/**
 * The benchmark baseline: a bare `node:http` server, run as its own process like
 * Pithos, that answers every request with fixed bytes captured from Pithos's real
 * answer to the operation being measured (same status, same headers, same body).
 *
 *   node dist/bench/baseline.js --host 127.0.0.1 --port 0 --config <file.json>
 *
 * The config file holds a `BaselineConfig`: a default answer and optional answers
 * per HTTP method (the lock benchmark needs two: PUT → 201 acquired, DELETE → 200
 * released). It answers at once: the request body (if any) is never looked at;
 * node:http itself discards it so the connection stays usable for keep-alive.
 *
 * Prints `listening on http://<host>:<port>` when ready; SIGTERM stops it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { serveBare } from './bare-server.js';

export interface CannedResponse {
  status: number;
  /** Header pairs to send (hop-by-hop headers and Content-Length are left to Node). */
  headers: Array<[string, string]>;
  body: string;
}

export interface BaselineConfig {
  default: CannedResponse;
  byMethod?: Record<string, CannedResponse>;
}

interface Prepared {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

function prepare(r: CannedResponse): Prepared {
  const body = Buffer.from(r.body, 'utf8');
  const headers: Array<[string, string]> = r.headers.filter(([name]) => name.toLowerCase() !== 'content-length');
  headers.push(['Content-Length', String(body.length)]);
  return { status: r.status, headers, body };
}

function argValue(args: string[], name: string, fallback?: string): string {
  const i = args.indexOf(name);
  if (i >= 0 && i + 1 < args.length) return args[i + 1]!;
  if (fallback !== undefined) return fallback;
  throw new Error(`missing ${name}`);
}

function main(): void {
  const args = process.argv.slice(2);
  const host = argValue(args, '--host', '127.0.0.1');
  const port = Number(argValue(args, '--port', '0'));
  const config = JSON.parse(readFileSync(argValue(args, '--config'), 'utf8')) as BaselineConfig;

  const fallback = prepare(config.default);
  const byMethod = new Map<string, Prepared>();
  for (const [method, r] of Object.entries(config.byMethod ?? {})) {
    byMethod.set(method.toUpperCase(), prepare(r));
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const answer = byMethod.get(req.method ?? '') ?? fallback;
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });

  serveBare(server, 'baseline', host, port);
}

main();
