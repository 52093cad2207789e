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
import * as net from 'node:net';
import { type Body, parseBody, tooLarge } from './body.js';
import { toStatus } from './errors.js';
import { sendError } from './envelope.js';
import type { Args, Ctx } from './handlers.js';
import { HttpError } from './errors.js';
import { type Route, route } from './router.js';

export interface ServerOptions {
  ctx: Ctx;
  authToken: string;
  maxBodyBytes: number;
  testClock: boolean;
  /** When set, only these clients may connect (API.md: 403 "client address not allowed"). */
  allow?: net.BlockList;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/**
 * Request state is kept on the request object itself (node:http lets the
 * server choose the class), so reading a body needs no per-request closure.
 */
class PithosRequest extends http.IncomingMessage {
  server!: PithosServer;
  route!: Route;
  response!: ServerResponse;
  name = '';
  sub = '';
  /** Body chunks; allocated by the first one, so a body-less GET allocates nothing here. */
  chunks: Buffer[] | undefined = undefined;
  size = 0;
  failed = false;
}

const UNAUTHORISED = 'access not authorised';
const NO_ARGS: Args = { sub: '', query: Object.freeze(Object.create(null) as Record<string, string>) };

export class PithosServer {
  readonly http: http.Server;
  private readonly token: Buffer;
  private readonly scratch: Buffer;
  private shuttingDown = false;
  private inFlight = 0;
  /** Open connections: shutdown waits for the bytes they still have to send. */
  private readonly sockets = new Set<net.Socket>();
  private idle: Array<() => void> = [];

  readonly maxBodyBytes: number;
  readonly ctx: Ctx;

  constructor(private readonly opts: ServerOptions) {
    this.maxBodyBytes = opts.maxBodyBytes;
    this.ctx = opts.ctx;
    this.token = Buffer.from(opts.authToken, 'utf8');
    this.scratch = Buffer.alloc(this.token.length);
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
    this.http.on('connection', (socket: net.Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.http.maxRequestsPerSocket = 0;
  }

  private authorised(header: string | string[] | undefined): boolean {
    // node:http hands header bytes over one per char (latin1), so the token's
    // UTF-8 bytes are compared as latin1, in a buffer reused for every request.
    // Lengths may differ in time; contents never do (timingSafeEqual).
    if (typeof header !== 'string' || header.length !== this.token.length) return false;
    this.scratch.write(header, 0, 'latin1');
    return timingSafeEqual(this.scratch, this.token);
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
      const m = route(req.method ?? 'GET', req.url ?? '/', this.opts.testClock);
      req.route = m.route;
      req.name = m.name;
      req.sub = m.sub;
    } catch (err) {
      return this.fail(res, err);
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.opts.maxBodyBytes) {
      res.shouldKeepAlive = false;
      return this.fail(res, tooLarge(this.opts.maxBodyBytes));
    }
    if ((declared === undefined || declared === '0') && req.headers['transfer-encoding'] === undefined) {
      // No body: the common GET. Skip the stream machinery.
      this.dispatch(req.route, req.name, Object.create(null) as Body, res, '', req.sub);
      return;
    }
    // A request whose body is still arriving is in flight (shutdown waits for
    // it) until its response closes, also when the client goes away mid-body.
    req.server = this;
    req.response = res;
    this.inFlight++;
    res.on('close', onResponseClose);
    req.on('data', onData);
    req.on('end', onEnd);
  }

  /**
   * Runs a handler. One that answered synchronously (a cached read) has sent
   * its response already: it costs no promise and is never in flight. An
   * asynchronous one is in flight until it settles.
   */
  dispatch(route: Route, name: string, body: Body, res: ServerResponse, raw: string, sub: string): void {
    let pending: void | Promise<void>;
    try {
      route.checkBody(body);
      pending = route.def.handler(this.ctx, name, body, res, raw,
        route.def.query === undefined && sub === '' ? NO_ARGS : { sub, query: route.parseQuery(res.req.url ?? '') });
    } catch (err) {
      return this.fail(res, err);
    }
    if (pending !== undefined) {
      this.inFlight++;
      void settle(this, pending, res);
    }
  }

  fail(res: ServerResponse, err: unknown): void {
    const [status, message, logIt] = toStatus(err);
    if (logIt) this.opts.log('error', `request failed: ${(err as Error)?.stack ?? String(err)}`);
    sendError(res, status, message, err instanceof HttpError ? err.headers : undefined);
  }

  /** Called when an asynchronous handler settles and when a request with a body closes. */
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
   * ones on open connections), waits until the responses already written
   * have left for the kernel (a slow reader may still be receiving one),
   * then closes every connection. All of it within `graceMs`.
   */
  async shutdown(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.shuttingDown = true;
    // Stop accepting, but leave open connections alone for now: node:http's own
    // close() also destroys every connection whose response has been ended,
    // even when its bytes are still queued for a slow reader. Keep-alive clients
    // that send another request meanwhile get a 503 that closes the connection.
    const closed = new Promise<void>((r) => net.Server.prototype.close.call(this.http, () => r()));
    const drained = this.inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => this.idle.push(r));
    const timer = new Promise<void>((r) => setTimeout(r, graceMs).unref());
    await Promise.race([drained, timer]);
    // A handler that has answered is no longer in flight, but its bytes may
    // still wait in the socket's buffer; destroying the socket would drop them.
    while (Date.now() < deadline && [...this.sockets].some((s) => s.writableLength > 0 && !s.destroyed)) {
      await new Promise((r) => setTimeout(r, 20));
    }
    this.http.closeAllConnections();
    await closed;
  }
}

function allowed(list: net.BlockList, addr: string | undefined): boolean {
  if (addr === undefined) return false;
  // An IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d.
  if (addr.startsWith('::ffff:') && addr.includes('.')) return list.check(addr.slice(7), 'ipv4');
  return list.check(addr, addr.includes(':') ? 'ipv6' : 'ipv4');
}

/** Maps whatever an asynchronous handler rejects with; one shared function, no closure per request. */
async function settle(server: PithosServer, pending: Promise<void>, res: ServerResponse): Promise<void> {
  try {
    await pending;
  } catch (err) {
    server.fail(res, err);
  } finally {
    server.settle();
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
    this.chunks = undefined;
    const res = this.response;
    res.shouldKeepAlive = false;
    this.server.fail(res, tooLarge(limit));
    return;
  }
  if (this.chunks === undefined) this.chunks = [chunk];
  else this.chunks.push(chunk);
}

function onEnd(this: PithosRequest): void {
  if (this.failed) return;
  const res = this.response;
  let body: Body;
  let text: string;
  try {
    const c = this.chunks;
    // A chunked body may turn out empty: no chunk ever arrived.
    text = c === undefined ? '' : c.length === 1 ? c[0].toString('utf8') : Buffer.concat(c, this.size).toString('utf8');
    this.chunks = undefined;
    body = parseBody(text);
  } catch (err) {
    return this.server.fail(res, err);
  }
  this.server.dispatch(this.route, this.name, body, res, text, this.sub);
}
