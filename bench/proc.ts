/** Starting and stopping the servers under test, and a small HTTP client for set-up. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { Agent, request } from 'node:http';

export interface Server {
  name: string;
  host: string;
  port: number;
  url: string;
  child: ChildProcess;
  /** Last output lines of the process, for error messages. */
  tail(): string;
  stop(): Promise<number | null>;
}

const LISTENING = /listening on http:\/\/([0-9.]+|\[[0-9a-f:]+\]|localhost):(\d+)/i;

/**
 * Spawns `command args`, waits for the `listening on http://host:port` line on
 * stdout and returns the address. Output keeps being drained (and a short tail
 * kept) so a chatty server never blocks on a full pipe.
 */
export function startServer(
  name: string,
  command: string,
  args: string[],
  options: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv; logFile?: string } = {},
): Promise<Server> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : null;
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
    log?.write(chunk);
  };
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code, signal) => {
      log?.end();
      resolve(code ?? (signal ? -1 : null));
    });
  });

  return new Promise<Server>((resolve, reject) => {
    let stdoutBuf = '';
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`${name} did not print "listening on http://…" within ${options.timeoutMs ?? 20000} ms\n${tail}`));
    }, options.timeoutMs ?? 20000);

    child.stderr!.on('data', keep);
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      if (settled) return;
      stdoutBuf += chunk.toString('utf8');
      const m = LISTENING.exec(stdoutBuf);
      if (!m) return;
      settled = true;
      clearTimeout(timer);
      const host = m[1]!.replace(/^\[|\]$/g, '');
      const port = Number(m[2]);
      const server: Server = {
        name,
        host,
        port,
        url: `http://${m[1]}:${port}`,
        child,
        tail: () => tail,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGTERM');
            const t = setTimeout(() => {
              if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            }, 15000);
            const code = await exited;
            clearTimeout(t);
            return code;
          }
          return child.exitCode;
        },
      };
      resolve(server);
    });
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(err);
    });
    void exited.then((code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`${name} exited (code ${code}) before listening\n${tail}`));
    });
  });
}

export interface HttpAnswer {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 32 });

/** One HTTP request against a server under test (set-up and capture only, never load). */
export function http(server: { host: string; port: number }, token: string, method: string, path: string, body?: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'Auth-Token': token };
    if (body !== undefined && body !== '') {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const req = request({ host: server.host, port: server.port, method, path, headers, agent, timeout: 30000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const pairs: Array<[string, string]> = [];
        const raw = res.rawHeaders;
        for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
        resolve({ status: res.statusCode ?? 0, headers: pairs, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    if (body !== undefined && body !== '') req.write(body);
    req.end();
  });
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function parallel<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  });
  await Promise.all(workers);
}

export function destroyAgent(): void {
  agent.destroy();
}
