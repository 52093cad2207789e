/**
 * The HTTP front: node:http with nothing in between (DESIGN.md, performance
 * stance). Per request: auth, route, read the body, parse, call the handler,
 * map any failure to its status. Request state lives on the request object
 * and the stream callbacks are shared functions, so a request allocates no
 * closures of its own.
 */
import * as http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { BlockList } from 'node:net';
import { type Body, parseBody, tooLarge } from './body.js';
import { toStatus } from './errors.js';
import { sendError } from './envelope.js';
import type { Ctx, Handler } from './handlers.js';
import { MethodNotAllowed, route } from './router.js';

export interface ServerOptions {
  ctx: Ctx;
  authToken: string;
  maxBodyBytes: number;
  testClock: boolean;
  /** When set, only these clients may connect (API.md: 403 "client address not allowed"). */
  allow?: BlockList;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/**
 * Request state is kept on the request object itself (node:http lets the
 * server choose the class), so reading a body needs no per-request closure.
 */
class PithosRequest extends http.IncomingMessage {
  server!: PithosServer;
  handler!: Handler;
  response!: ServerResponse;
  name = '';
  chunks: Buffer[] = [];
  size = 0;
  failed = false;
}

const UNAUTHORISED = 'access not authorised';

export class PithosServer {
  readonly http: http.Server;
  private readonly token: Buffer;
  private shuttingDown = false;
  private inFlight = 0;
  private idle: Array<() => void> = [];

  readonly maxBodyBytes: number;
  readonly ctx: Ctx;

  constructor(private readonly opts: ServerOptions) {
    this.maxBodyBytes = opts.maxBodyBytes;
    this.ctx = opts.ctx;
    this.token = Buffer.from(opts.authToken, 'utf8');
    this.http = http.createServer({
      IncomingMessage: PithosRequest,
      // Slow or idle clients must not pin the server (issue 3, operations).
      keepAliveTimeout: 5_000,
      headersTimeout: 10_000,
      requestTimeout: 60_000,
      maxHeaderSize: 16 * 1024,
      // Enforce the two timeouts above within a second, not Node's default 30 s.
      connectionsCheckingInterval: 1_000,
    }, (req, res) => this.onRequest(req as PithosRequest, res));
    this.http.on('clientError', onClientError);
    this.http.maxRequestsPerSocket = 0;
  }

  private authorised(header: string | string[] | undefined): boolean {
    if (typeof header !== 'string') return false;
    const given = Buffer.from(header, 'utf8');
    // Lengths may differ in time; contents never do (timingSafeEqual).
    return given.length === this.token.length && timingSafeEqual(given, this.token);
  }

  private onRequest(req: PithosRequest, res: ServerResponse): void {
    if (this.shuttingDown) {
      res.shouldKeepAlive = false;
      return sendError(res, 503, 'server is shutting down');
    }
    if (this.opts.allow !== undefined && !allowed(this.opts.allow, req.socket.remoteAddress)) {
      return sendError(res, 403, 'client address not allowed');
    }
    if (!this.authorised(req.headers['auth-token'])) return sendError(res, 401, UNAUTHORISED);
    try {
      const r = route(req.method ?? 'GET', req.url ?? '/', this.opts.testClock);
      req.handler = r.handler;
      req.name = r.name;
    } catch (err) {
      return this.fail(res, err);
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.opts.maxBodyBytes) {
      res.shouldKeepAlive = false;
      return this.fail(res, tooLarge(this.opts.maxBodyBytes));
    }
    req.server = this;
    req.response = res;
    this.inFlight++;
    res.on('close', onResponseClose);
    if ((declared === undefined || declared === '0') && req.headers['transfer-encoding'] === undefined) {
      // No body: the common GET. Skip the stream machinery.
      this.dispatch(req.handler, req.name, Object.create(null) as Body, res, '');
      return;
    }
    req.on('data', onData);
    req.on('end', onEnd);
  }

  dispatch(handler: Handler, name: string, body: Body, res: ServerResponse, raw: string): void {
    void run(this, handler, name, body, res, raw);
  }

  fail(res: ServerResponse, err: unknown): void {
    const [status, message, logIt] = toStatus(err);
    if (logIt) this.opts.log('error', `request failed: ${(err as Error)?.stack ?? String(err)}`);
    sendError(res, status, message, err instanceof MethodNotAllowed ? ['Allow', err.allow] : undefined);
  }

  /** Called when a response is done (or its connection dropped). */
  settle(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.idle.length > 0) {
      const w = this.idle;
      this.idle = [];
      for (const f of w) f();
    }
  }

  listen(port: number, host: string): Promise<{ port: number; host: string }> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => {
        this.http.off('error', reject);
        const a = this.http.address();
        if (a === null || typeof a === 'string') return reject(new Error('no address'));
        resolve({ port: a.port, host: a.address });
      });
    });
  }

  /**
   * Stops accepting, lets in-flight requests finish (answering 503 to new
   * ones on open connections), then closes every connection.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.shuttingDown = true;
    const closed = new Promise<void>((r) => this.http.close(() => r()));
    this.http.closeIdleConnections();
    const drained = this.inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => this.idle.push(r));
    const timer = new Promise<void>((r) => setTimeout(r, graceMs).unref());
    await Promise.race([drained, timer]);
    this.http.closeAllConnections();
    await closed;
  }
}

function allowed(list: BlockList, addr: string | undefined): boolean {
  if (addr === undefined) return false;
  // An IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d.
  if (addr.startsWith('::ffff:') && addr.includes('.')) return list.check(addr.slice(7), 'ipv4');
  return list.check(addr, addr.includes(':') ? 'ipv6' : 'ipv4');
}

/** Runs a handler and maps whatever it throws; one shared function, no closure per request. */
async function run(server: PithosServer, handler: Handler, name: string, body: Body, res: ServerResponse, raw: string): Promise<void> {
  try {
    await handler(server.ctx, name, body, res, raw);
  } catch (err) {
    server.fail(res, err);
  }
}

/**
 * Requests node:http rejects before they reach us (malformed, headers too
 * large, too slow) still get the JSON envelope API.md promises for every answer.
 */
function onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  let status = 400;
  let message = 'malformed HTTP request';
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'request headers are too large';
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'request took too long to arrive';
  }
  const body = `{"status":"error","message":"${message}"}`;
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
}

function onResponseClose(this: ServerResponse): void {
  (this.req as PithosRequest).server.settle();
}

function onData(this: PithosRequest, chunk: Buffer): void {
  if (this.failed) return;
  this.size += chunk.length;
  const limit = this.server.maxBodyBytes;
  if (this.size > limit) {
    this.failed = true;
    this.chunks = [];
    const res = this.response;
    res.shouldKeepAlive = false;
    this.server.fail(res, tooLarge(limit));
    return;
  }
  this.chunks.push(chunk);
}

function onEnd(this: PithosRequest): void {
  if (this.failed) return;
  const res = this.response;
  let body: Body;
  let text: string;
  try {
    const c = this.chunks;
    text = c.length === 1 ? c[0].toString('utf8') : Buffer.concat(c, this.size).toString('utf8');
    this.chunks = [];
    body = parseBody(text);
  } catch (err) {
    return this.server.fail(res, err);
  }
  this.server.dispatch(this.handler, this.name, body, res, text);
}
