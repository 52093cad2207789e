/**
 * Black-box test helper: spawns the real `bin/pithos` process on a free port with a
 * temporary data directory, and talks to it over node:http (so GET/DELETE can carry
 * bodies and every header is under the test's control).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import assert from 'node:assert/strict';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshSchema } from './postgres.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Repository root (the directory holding package.json), from test/helpers or dist/test/helpers. */
export const ROOT = (() => {
  let dir = here;
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  return path.resolve(here, '..', '..', '..');
})();
export const BIN = path.join(ROOT, 'bin', 'pithos');

export const TOKEN = 'SECRET-test-token';

/**
 * The store under test. `npm test` runs test/server/ twice: on the log
 * store, then with PITHOS_TEST_STORE set to a throw-away PostgreSQL cluster
 * (test/helpers/postgres.ts), where every PithosServer gets its own schema.
 */
export const PG_URL = process.env.PITHOS_TEST_STORE;
export const STORE: 'log' | 'postgres' = PG_URL === undefined ? 'log' : 'postgres';
/** For `test(name, { skip: onlyLog('why') }, …)`: the reason to skip a test of the log's own files on postgres. */
export const onlyLog = (why: string): string | false => (STORE === 'postgres' ? `log store only: ${why}` : false);
let schemas = 0;
/** Servers started on the same data directory share its data: on postgres, the same schema. */
const schemaOfDir = new Map<string, string>();

export interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  raw: string;
}

export interface StartOptions {
  /** Auth token to configure via --auth-token; `null` configures none (server generates one). */
  token?: string | null;
  /** Extra CLI arguments. */
  args?: string[];
  /** Extra environment variables (merged over a PITHOS_*-free copy of process.env). */
  env?: Record<string, string | undefined>;
  /** Set PITHOS_TEST_CLOCK=1 (default true). */
  testClock?: boolean;
  /** Reuse an existing data directory (it is then not removed on close). */
  dataDir?: string;
  /** Pass --fsync (default 'always'); null passes nothing. */
  fsync?: string | null;
  /**
   * Milliseconds to wait for the listening line (default 60 s: on a loaded machine a start,
   * recovery included, can take well over 20 s; a server that hangs still fails).
   */
  startTimeoutMs?: number;
  /**
   * Pass no default flags at all (only `args`); the data directory then goes in
   * PITHOS_DATA_DIR unless `env` sets it, and the token is taken from `env.PITHOS_AUTH_TOKEN`.
   */
  bare?: boolean;
  /** Run the server through this command (e.g. ['prlimit', '--nofile=1024:1024', '--']). */
  wrap?: string[];
  /** On the postgres pass: this store URL instead of a schema of the server's own (several nodes, one database). */
  store?: string;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Environment for a child: process.env without any PITHOS_* variable, plus `extra`. */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PITHOS_')) env[k] = v;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

const live = new Set<PithosServer>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort: never leave a server process behind when the test process goes away.
  process.on('exit', () => {
    for (const s of live) {
      try {
        s.child?.kill('SIGKILL');
      } catch {
        /* ignore */
      }
      if (s.ownsDir) {
        try {
          rmSync(s.dataDir, { recursive: true, force: true });
        } catch {
          /* ignore */
        }
      }
    }
  });
}

/**
 * The keep-alive agent tests talk through. Node 20's agent honours the server's
 * `Keep-Alive: timeout=5` hint (it drops an idle pooled socket a second before
 * the server would) only when the agent has a timeout of its own; without one,
 * a request sent on a socket the server is just closing fails with `socket
 * hang up`. The timeout acts only on idle pooled sockets: on a socket in use it
 * emits an event that nothing here acts on, so long requests are unaffected.
 */
export function keepAliveAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 120_000 });
}

export class PithosServer {
  child: ChildProcess | null = null;
  port = 0;
  token = '';
  stdout = '';
  stderr = '';
  /** stdout/stderr of every previous run of this server, oldest first. */
  history: { stdout: string; stderr: string; exit: ExitInfo | null }[] = [];
  agent: http.Agent;
  readonly dataDir: string;
  readonly ownsDir: boolean;
  /** The postgres:// URL (own schema) this server's data lives in, on the postgres pass. */
  storeUrl: string | undefined;
  private exited: Promise<ExitInfo> = Promise.resolve({ code: null, signal: null });
  private exitInfo: ExitInfo | null = null;

  constructor(readonly opts: StartOptions = {}) {
    this.ownsDir = !opts.dataDir;
    this.dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'pithos-test-'));
    this.agent = keepAliveAgent();
    live.add(this);
    installExitHook();
  }

  static async start(opts: StartOptions = {}): Promise<PithosServer> {
    const s = new PithosServer(opts);
    try {
      await s.spawn();
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Spawn the process and wait for the listening line. */
  async spawn(): Promise<void> {
    const o = this.opts;
    if (this.storeUrl === undefined && (o.store !== undefined || PG_URL !== undefined)) {
      // Created once per data directory: a restart finds its data again.
      this.storeUrl = o.store ?? schemaOfDir.get(this.dataDir) ?? (await freshSchema(PG_URL as string, `t${process.pid}_${++schemas}`));
      schemaOfDir.set(this.dataDir, this.storeUrl);
    }
    const args = [BIN];
    let token: string | null;
    if (o.bare) {
      token = o.env?.PITHOS_AUTH_TOKEN ?? null;
    } else {
      args.push('--host', '127.0.0.1', '--port', '0', '--data-dir', this.dataDir);
      const fsync = o.fsync === undefined ? 'always' : o.fsync;
      if (fsync !== null) args.push('--fsync', fsync);
      token = o.token === undefined ? TOKEN : o.token;
      if (token !== null) args.push('--auth-token', token);
    }
    if (this.storeUrl !== undefined && !o.bare) args.push('--store', this.storeUrl);
    if (o.args) args.push(...o.args);
    const env = childEnv({
      ...(this.storeUrl !== undefined && o.bare ? { PITHOS_STORE: this.storeUrl } : {}),
      PITHOS_TEST_CLOCK: o.testClock === false ? undefined : '1',
      ...(o.bare ? { PITHOS_DATA_DIR: this.dataDir } : {}),
      ...(o.env ?? {}),
    });
    if (!o.bare && o.token === null && o.env?.PITHOS_AUTH_TOKEN) token = o.env.PITHOS_AUTH_TOKEN;
    this.stdout = '';
    this.stderr = '';
    this.exitInfo = null;
    const w = o.wrap ?? [];
    const child =
      w.length > 0
        ? spawn(w[0], [...w.slice(1), process.execPath, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      this.stderr += d;
    });
    this.exited = new Promise<ExitInfo>((resolve) => {
      child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve({ code, signal });
      });
      child.on('error', () => resolve({ code: null, signal: null }));
    });
    const timeoutMs = o.startTimeoutMs ?? 60_000;
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(
        () => finish(new Error(`pithos did not print its listening line within ${timeoutMs} ms\nstdout: ${this.stdout}\nstderr: ${this.stderr}`)),
        timeoutMs,
      );
      child.stdout!.on('data', (d: string) => {
        this.stdout += d;
        const m = /listening on https?:\/\/[^\s:]+:(\d+)/.exec(this.stdout);
        if (m) {
          this.port = Number(m[1]);
          if (token === null) {
            const line = this.stdout.split('\n').find((l) => l.includes('default password'));
            if (line) this.token = line.trim().split(/\s+/).pop()!;
          } else {
            this.token = token;
          }
          finish();
        }
      });
      void this.exited.then((info) =>
        finish(new Error(`pithos exited before listening (code ${info.code}, signal ${info.signal})\nstdout: ${this.stdout}\nstderr: ${this.stderr}`)),
      );
    });
    // The "default password" line might have been printed after the listening line.
    if (token === null && !this.token) {
      const deadline = Date.now() + 2000;
      while (!this.token && Date.now() < deadline) {
        await sleep(20);
        const line = this.stdout.split('\n').find((l) => l.includes('default password'));
        if (line) this.token = line.trim().split(/\s+/).pop()!;
      }
    }
  }

  /**
   * Send a request. `body`: undefined → no body; string/Buffer → sent raw; anything else →
   * JSON.stringify. `headers`: merged over {Auth-Token, Content-Type: application/json};
   * a header set to null is removed.
   */
  req(method: string, urlPath: string, body?: unknown, headers: Record<string, string | number | null> = {}): Promise<Res> {
    let payload: Buffer | undefined;
    if (body === undefined) payload = undefined;
    else if (Buffer.isBuffer(body)) payload = body;
    else if (typeof body === 'string') payload = Buffer.from(body, 'utf8');
    else payload = Buffer.from(JSON.stringify(body), 'utf8');
    const h: Record<string, string | number> = {};
    const merged: Record<string, string | number | null> = {
      'Auth-Token': this.token,
      ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {}),
      ...headers,
    };
    for (const [k, v] of Object.entries(merged)) if (v !== null) h[k] = v;
    return rawRequest({ port: this.port, method, path: urlPath, headers: h, body: payload, agent: this.agent });
  }

  /** Advance the server's test clock (requires PITHOS_TEST_CLOCK=1). */
  async advance(ms: number): Promise<Res> {
    const r = await this.req('POST', '/_test/clock', { advance_ms: ms });
    if (r.status !== 200) throw new Error(`POST /_test/clock failed: ${r.status} ${r.raw}`);
    return r;
  }

  /** Send a signal and wait for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15000): Promise<ExitInfo> {
    const child = this.child;
    if (!child) return { code: null, signal: null };
    let res: ExitInfo | 'timeout';
    if (this.exitInfo) {
      res = this.exitInfo; // already gone (e.g. signalled directly through `signal()`)
    } else {
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), timeoutMs);
      });
      res = await Promise.race([this.exited, timeout]);
      clearTimeout(timer);
    }
    this.agent.destroy();
    this.agent = keepAliveAgent();
    if (res === 'timeout') {
      child.kill('SIGKILL');
      const info = await this.exited;
      this.history.push({ stdout: this.stdout, stderr: this.stderr, exit: info });
      this.child = null;
      throw new Error(`pithos did not exit within ${timeoutMs} ms of ${signal}`);
    }
    this.history.push({ stdout: this.stdout, stderr: this.stderr, exit: res });
    this.child = null;
    return res;
  }

  /** Send a signal without waiting; `waitExit()` (or `kill()`) collects the exit afterwards. */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** Wait for the running process to exit on its own (after `signal()`), then clean up like `kill()`. */
  async waitExit(timeoutMs = 15000): Promise<ExitInfo> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), timeoutMs);
    });
    const res = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (res === 'timeout')
      return this.kill('SIGKILL').then(() => {
        throw new Error(`pithos did not exit within ${timeoutMs} ms`);
      });
    return this.kill('SIGKILL'); // already exited: only collects and cleans up
  }

  /** Stop (SIGTERM by default) and start again on the same data directory. */
  async restart(signal: NodeJS.Signals = 'SIGTERM'): Promise<ExitInfo> {
    const info = await this.kill(signal);
    await this.spawn();
    return info;
  }

  /** Kill the process (if any) and remove the temporary data directory. Never throws. */
  async close(): Promise<void> {
    try {
      if (this.child && !this.exitInfo) {
        this.child.kill('SIGKILL');
        await Promise.race([this.exited, new Promise<void>((r) => setTimeout(r, 5000).unref())]);
      }
    } catch {
      /* ignore */
    }
    this.child = null;
    this.agent.destroy();
    if (this.ownsDir) {
      try {
        rmSync(this.dataDir, { recursive: true, force: true });
      } catch {
        /* ignore */
      }
    }
    live.delete(this);
  }
}

export interface RawRequestOptions {
  port: number;
  method: string;
  path: string;
  headers?: Record<string, string | number>;
  body?: Buffer;
  agent?: http.Agent | false;
  host?: string;
}

export function rawRequest(o: RawRequestOptions): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const r = http.request(
      {
        host: o.host ?? '127.0.0.1',
        port: o.port,
        method: o.method,
        path: o.path,
        headers: o.headers,
        agent: o.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let body: unknown = undefined;
          try {
            body = raw.length ? JSON.parse(raw) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, raw });
        });
      },
    );
    r.on('error', reject);
    if (o.body) r.end(o.body);
    else r.end();
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Resolves once `count()` reaches `want` (checked every 10 ms). For a test
 * that needs load to have happened before it acts (a kill during writes, a
 * backup between them): it waits for the acknowledgements themselves, not
 * for a fixed time, so it holds on a loaded machine and still fails when
 * writes stop being acknowledged: after `timeoutMs` (60 s), or at once when
 * `ended` (the writers) settles first, saying how far the count got.
 */
export async function untilCount(what: string, count: () => number, want: number, o: { timeoutMs?: number; ended?: Promise<unknown> } = {}): Promise<void> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const started = Date.now();
  let ended: { err: unknown } | undefined;
  void o.ended?.then(
    () => (ended = { err: undefined }),
    (err: unknown) => (ended = { err }),
  );
  while (count() < want) {
    if (ended !== undefined) {
      const why = ended.err === undefined ? '' : `: ${String((ended.err as Error)?.message ?? ended.err)}`;
      throw new Error(`${what}: the writers stopped at ${count()} of the ${want} needed${why}`, { cause: ended.err });
    }
    if (Date.now() - started >= timeoutMs) throw new Error(`${what}: ${count()} of the ${want} needed after ${timeoutMs / 1000} s`);
    await sleep(10);
  }
}

/** untilCount for a condition: resolves once `cond()` holds, fails after `timeoutMs` (60 s) naming `what`. */
export const untilTrue = (what: string, cond: () => boolean, o: { timeoutMs?: number } = {}): Promise<void> => untilCount(what, () => (cond() ? 1 : 0), 1, o);

/** Encode a name as one path segment (everything outside unreserved is percent-encoded). */
export function seg(name: string): string {
  return encodeURIComponent(name);
}

/** Run `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
  return out;
}

/** Run the CLI to completion (for --help / bad flags). */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 10000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      // let the pipes drain
      setImmediate(() => resolve({ code, signal, stdout, stderr, timedOut }));
    });
  });
}

export const JSON_CT = 'application/json; charset=utf-8';
const NO_DATA = Symbol('no data');

function describe(res: Res, what: string): string {
  return `${what}: got ${res.status} ${res.raw.slice(0, 600)}`;
}

/**
 * Assert a success envelope: HTTP status, `status: "success"`, exact message, exact data
 * (deep equality) — or, when `data` is not given, that the field `data` is absent.
 */
/** The version an answer's ETag carries (`"<n>"`, docs/api.md "Versions and conditional writes"); asserts the form. */
export function etag(r: { headers: Record<string, unknown> }): number {
  const t = String(r.headers.etag);
  assert.match(t, /^"\d+"$/, `ETag ${t}`);
  return Number(t.slice(1, -1));
}

export function expectSuccess(res: Res, status: number, message: string, data: unknown = NO_DATA): void {
  assert.equal(res.status, status, describe(res, `expected HTTP ${status} "${message}"`));
  assert.equal(res.headers['content-type'], JSON_CT, describe(res, 'content-type'));
  assert.ok(res.body && typeof res.body === 'object' && !Array.isArray(res.body), describe(res, 'body must be a JSON object'));
  assert.equal(res.body.status, 'success', describe(res, 'envelope status'));
  assert.equal(res.body.message, message, describe(res, 'envelope message'));
  if (data === NO_DATA) {
    assert.deepEqual(Object.keys(res.body).sort(), ['message', 'status'], describe(res, 'envelope must have no data field'));
  } else {
    assert.deepEqual(Object.keys(res.body).sort(), ['data', 'message', 'status'], describe(res, 'envelope fields'));
    assert.deepEqual(res.body.data, data, describe(res, 'envelope data'));
  }
}

/** Assert an error envelope: HTTP status, `status: "error"`, a non-empty message (optionally exact / matching), no data. */
export function expectError(res: Res, status: number, message?: string | RegExp): void {
  assert.equal(res.status, status, describe(res, `expected HTTP ${status}`));
  assert.equal(res.headers['content-type'], JSON_CT, describe(res, 'content-type'));
  assert.ok(res.body && typeof res.body === 'object' && !Array.isArray(res.body), describe(res, 'body must be a JSON object'));
  assert.equal(res.body.status, 'error', describe(res, 'envelope status'));
  assert.equal(typeof res.body.message, 'string', describe(res, 'message must be a string'));
  assert.ok(res.body.message.length > 0, describe(res, 'message must not be empty'));
  assert.deepEqual(Object.keys(res.body).sort(), ['message', 'status'], describe(res, 'error envelope must not carry data'));
  if (typeof message === 'string') assert.equal(res.body.message, message, describe(res, 'error message'));
  else if (message) assert.match(res.body.message, message, describe(res, 'error message'));
}

/** A fresh unique name for each test so tests in one file never collide. */
let counter = 0;
export function uniq(prefix = 'n'): string {
  counter += 1;
  return `${prefix}${counter}_${process.pid}`;
}

/** POSTs JSON with `srv`'s token through `agent`: a crash round's own agent, so a kill cuts exactly that round's requests in flight. */
export function poster(srv: PithosServer, agent?: http.Agent): (path: string, body: unknown) => Promise<Res> {
  return (path, body) =>
    rawRequest({
      port: srv.port,
      method: 'POST',
      path,
      agent,
      headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json' },
      body: Buffer.from(JSON.stringify(body)),
    });
}

/**
 * Ends a crash round: SIGKILL, then `stop()` the round's workers and wait for
 * them (what they had in flight fails), drop the round's agent, and start the
 * server again on the same directory.
 */
export async function killRound(srv: PithosServer, workers: Promise<unknown>, stop: () => void, agent: http.Agent): Promise<void> {
  await srv.kill('SIGKILL');
  stop();
  await workers;
  agent.destroy();
  await srv.spawn();
}
