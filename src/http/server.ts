/**
 * The HTTP front: node:http with nothing in between (docs/architecture.md;
 * what it costs: docs/benchmarks.md). Per request: auth, route, read the
 * body, parse, call the handler, map any failure to its status. Request
 * state lives on the request object and the stream callbacks are shared
 * functions, so a request allocates no closures of its own.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import * as net from 'node:net';
import { type Body, decodeBody, hasBody, parseBody, refuseBody, tooLarge } from './request-body.js';
import { decodeInSlices, LARGE_BODY, parseInSlices, slicedField } from './large-body.js';
import {
  answerLast,
  conn,
  Connections,
  deferAnswer,
  HANDSHAKE_MS,
  inTurn,
  linger,
  type PSocket,
  rawError,
  responseDone,
  shown,
  type Step,
} from './connections.js';
import { errorHeaders, toStatus } from './errors.js';
import { sendError } from './envelope.js';
import type { Args, Ctx } from './context.js';
import { HttpError } from './errors.js';
import { type Match, type Route, route } from './router.js';
import { type Authenticated, type AuthResult, Authenticator } from './auth.js';
import type { Cors } from './cors.js';
import type { AccessLog } from './access.js';
import { answerProbe, probeOf } from './probes.js';
import type { TlsMaterial } from '../tls.js';
import { serveConsole } from './console.js';
import { refuseUpstash, restToken, sendUpstashError } from './redis-rest.js';

export interface ServerOptions {
  ctx: Ctx;
  authToken: string;
  /** Tokens and roles (auth.ts); built from authToken alone when not given. */
  auth?: Authenticator;
  /** --cors-origin (cors.ts); undefined = no CORS. */
  cors?: Cors;
  /** --access-log (access.ts); undefined = off. */
  access?: AccessLog;
  /** --tls-cert/--tls-key: serve HTTPS on the port. */
  tls?: TlsMaterial;
  maxBodyBytes: number;
  testClock: boolean;
  /** When set, only these clients may connect (docs/api.md, "403 Forbidden": "client address not allowed"). */
  allow?: net.BlockList;
  /** Open connections at most; beyond it the oldest idle one is closed (docs/operations.md). */
  maxConnections: number;
  /** A second credential some routes accept when Auth-Token fails (the metrics token, metrics.ts). */
  altAuth?: (req: IncomingMessage) => boolean;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/**
 * Request state is kept on the request object itself (node:http lets the
 * server choose the class), so reading a body needs no per-request closure.
 */
class PithosRequest extends http.IncomingMessage implements Authenticated {
  server!: PithosServer;
  route!: Route;
  response!: ServerResponse;
  name = '';
  sub = '';
  /** Body chunks; allocated by the first one, so a body-less GET allocates nothing here. */
  chunks: Buffer[] | undefined = undefined;
  size = 0;
  failed = false;
  /** Set on the Upstash routes only (Authenticated). */
  who: AuthResult | undefined = undefined;

  constructor(socket: net.Socket) {
    super(socket);
    // Counted until its response finishes (PithosResponse.detachSocket): the
    // connection is then idle, and answers held back behind it may go.
    const c = conn(socket);
    if (c !== undefined) c.pending++;
  }
}

const EMPTY_BODY: Body = Object.freeze(Object.create(null) as Body);

const NO_ARGS: Args = { sub: '', query: Object.freeze(Object.create(null) as Record<string, string>) };

/** node:http calls detachSocket once per finished response, in order. */
class PithosResponse extends http.ServerResponse<PithosRequest> {
  override detachSocket(socket: net.Socket): void {
    super.detachSocket(socket);
    const c = conn(socket);
    if (c === undefined) return;
    // node:http closes the connection after this answer (it said Connection: close): either the
    // exchange asked for it (shouldKeepAlive false), or the answer had no length and could not be
    // chunked (an HTTP/1.0 client), so only the close ends its body. node:http decides the second
    // when it writes the head and keeps it in `_last`, which is what it reads to close the socket.
    if (!this.shouldKeepAlive || (this as unknown as { _last?: boolean })._last === true) c.closing = true;
    responseDone(c);
  }
}

export class PithosServer {
  readonly http: http.Server;
  readonly auth: Authenticator;
  private shuttingDown = false;
  private inFlight = 0;
  /** Open connections: shutdown waits for the bytes they still have to send. */
  readonly conns: Connections;
  private idle: Array<() => void> = [];

  readonly maxBodyBytes: number;
  readonly ctx: Ctx;

  constructor(private readonly opts: ServerOptions) {
    this.maxBodyBytes = opts.maxBodyBytes;
    this.ctx = opts.ctx;
    this.auth = opts.auth ?? new Authenticator(opts.authToken);
    this.conns = new Connections(opts.maxConnections);
    this.serveStep = (req, res) => this.serve(req as PithosRequest, res);
    this.continueStep = (req, res) => this.serveContinue(req as PithosRequest, res);
    const options: http.ServerOptions<typeof PithosRequest, typeof PithosResponse> = {
      IncomingMessage: PithosRequest,
      ServerResponse: PithosResponse,
      // Checked in accept(), so that the answer is the JSON envelope.
      requireHostHeader: false,
      // Slow or idle clients must not pin the server (docs/operations.md).
      keepAliveTimeout: 5_000,
      headersTimeout: 10_000,
      requestTimeout: 60_000,
      maxHeaderSize: 16 * 1024,
      // Enforce the two timeouts above within a second, not Node's default 30 s.
      connectionsCheckingInterval: 1_000,
    };
    const accept = (req: PithosRequest, res: ServerResponse): void => this.accept(req, res);
    // Same port, same handling; https.Server differs from http.Server only in its TLS parts.
    this.http = (opts.tls === undefined
      ? http.createServer(options, accept)
      : https.createServer({ ...options, cert: opts.tls.cert, key: opts.tls.key, handshakeTimeout: HANDSHAKE_MS }, accept)) as unknown as http.Server;
    this.http.on('clientError', onClientError);
    if (opts.tls === undefined) {
      this.http.on('connection', (socket: net.Socket) => this.conns.add(socket));
    } else {
      // Connections are counted and timed from the TCP accept, before TLS: one
      // that never finishes its handshake must be bounded like a plain one that
      // never sends its headers. tls.Server starts TLS in its own 'connection'
      // listener; it runs here once the first bytes show a TLS client.
      this.startTls = this.http.listeners('connection') as Array<(socket: net.Socket) => void>;
      this.http.removeAllListeners('connection');
      this.http.on('connection', (socket: net.Socket) => this.acceptTls(socket));
      // Under TLS the HTTP layer works on the TLS socket, which exists once the handshake is done.
      this.http.on('secureConnection', (socket: net.Socket) => this.conns.secured(socket));
    }
    this.http.on('checkContinue', (req: http.IncomingMessage, res: ServerResponse) => this.onContinue(req as PithosRequest, res));
    this.http.on('checkExpectation', (req: http.IncomingMessage, res: ServerResponse) => inTurn(conn(req.socket), req, res, expectationFailed));
    this.http.on('connect', onConnect);
    this.http.on('upgrade', onUpgrade);
    this.http.maxRequestsPerSocket = 0;
  }

  /** tls.Server's own 'connection' listeners (empty without TLS). */
  private readonly startTls: Array<(socket: net.Socket) => void> = [];

  /**
   * A TCP connection to the TLS port: counted, then handed to TLS once its
   * first bytes have come, unless they are the start of a plain HTTP request
   * (an ASCII letter; a TLS client starts with a handshake record, 0x16),
   * which gets a plain-text 400 as nginx answers it.
   */
  private acceptTls(socket: PSocket): void {
    if (!this.conns.addTls(socket)) return;
    socket.on('error', ignoreError);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      const b = chunk[0] | 0x20;
      if (b >= 0x61 && b <= 0x7a) {
        socket.write(PLAIN_ON_TLS);
        linger(socket);
        return;
      }
      // TLS reads what is buffered on the socket before it reads the socket itself.
      for (const f of this.startTls) f.call(this.http, socket);
    });
  }

  /** Shared per server, so that a request waiting its turn allocates no closure. */
  private readonly serveStep: Step;
  private readonly continueStep: Step;

  /** Every request, in its turn on its connection (see inTurn). */
  private accept(req: PithosRequest, res: ServerResponse): void {
    inTurn(conn(req.socket), req, res, this.serveStep);
  }

  /** What node:http would check itself, answered with the envelope; then the request proper. */
  private serve(req: PithosRequest, res: ServerResponse): void {
    if (req.headers.host === undefined && req.httpVersionMinor === 1 && req.httpVersionMajor === 1) {
      res.shouldKeepAlive = false;
      return sendError(res, 400, 'an HTTP/1.1 request must carry a Host header');
    }
    this.onRequest(req, res);
  }

  /**
   * Expect: 100-continue. The interim answer may only go out when this
   * response is next on the wire (node:http would queue it behind, or ahead
   * of, earlier pipelined answers), and only when the body is wanted: a
   * request refused on its headers gets its final answer instead.
   */
  private onContinue(req: PithosRequest, res: ServerResponse): void {
    inTurn(conn(req.socket), req, res, this.continueStep);
  }

  private serveContinue(req: PithosRequest, res: ServerResponse): void {
    this.serve(req, res);
    continueIfReading(req, res);
  }

  private onRequest(req: PithosRequest, res: ServerResponse): void {
    if (this.opts.access !== undefined) this.opts.access.begin(req, res);
    if (this.opts.allow !== undefined && !allowed(this.opts.allow, req.socket.remoteAddress)) {
      return sendError(res, 403, 'client address not allowed');
    }
    if (this.opts.cors !== undefined && this.opts.cors.handle(req, res)) return;
    const probe = probeOf(req.url);
    if (probe !== undefined) {
      if (hasBody(req)) return refuseBody(req, res);
      return answerProbe(res, probe, !this.shuttingDown && (this.ctx.store.availability?.().ready ?? true), req.method === 'HEAD');
    }
    if (this.shuttingDown) {
      res.shouldKeepAlive = false;
      return sendError(res, 503, 'server is shutting down');
    }
    // The web console's static files load without a token (the page asks for it).
    if (req.url !== undefined && (req.url.startsWith('/console') || req.url.startsWith('/favicon.ico')) && serveConsole(req, res)) return;
    // Routing is a pure lookup; its verdict (404, 405, a bad name) is held back
    // until the token has passed, so an unauthenticated client learns nothing
    // (docs/api.md, "Authentication"). A path matching no route needs a valid token.
    let m: Match | undefined;
    let miss: unknown;
    try {
      m = route(req.method ?? 'GET', req.url ?? '/', this.opts.testClock);
    } catch (err) {
      miss = err;
    }
    const upstash = m?.route.def.upstash === true;
    const who = this.auth.check(upstash ? restToken(req) : req.headers['auth-token'], m === undefined ? 'read' : m.route.def.role, req.method, req.url);
    if (who.ok !== true && upstash) return refuseUpstash(res, who.status, who.message);
    if (upstash) req.who = who;
    if (who.ok !== true && this.opts.altAuth?.(req) !== true) {
      // A scraper's Authorization header that did not match is a wrong token, not a missing
      // one; on /metrics only, the one route that takes it (elsewhere Auth-Token is missing).
      if (
        who.status === 401 &&
        this.opts.altAuth !== undefined &&
        req.headers['auth-token'] === undefined &&
        req.headers.authorization !== undefined &&
        m?.route.def.path === '/metrics'
      ) {
        return sendError(res, 401, 'wrong token in the Authorization header (GET /metrics takes Authorization: Bearer <metrics token>, or Auth-Token)');
      }
      return sendError(res, who.status, who.message);
    }
    if (m === undefined) return this.fail(res, miss);
    // A public route is served to anyone: it must not read a body (request-body.ts, refuseBody).
    if (m.route.def.role === 'public' && hasBody(req)) return refuseBody(req, res);
    req.route = m.route;
    req.name = m.name;
    req.sub = m.sub;
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
      route.checkBody(body, name);
      pending = route.def.handler(
        this.ctx,
        name,
        body,
        res,
        raw,
        sub === '' && (route.def.query === undefined || !(res.req.url ?? '').includes('?')) ? NO_ARGS : { sub, query: route.parseQuery(res.req.url ?? '') },
      );
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
    // Refused because the server is stopping (a blocking pop cut short, a store
    // already closing): the next request on this connection would be refused too.
    if (this.shuttingDown && status === 503) res.shouldKeepAlive = false;
    if ((res.req as PithosRequest).route?.def.upstash === true) return sendUpstashError(res, status, `ERR ${message}`, errorHeaders(err));
    sendError(res, status, message, errorHeaders(err));
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
        this.conns.startSweeping();
        resolve({ port: a.port, host: a.address });
      });
    });
  }

  /**
   * Stops accepting, lets in-flight requests finish (answering 503 to new
   * ones on open connections), waits until the responses already written
   * have left for the kernel (a slow reader may still be receiving one),
   * then closes every connection. All of it within `graceMs`. A blocking pop
   * still waiting is answered 503 at once: its wait is no work to finish.
   */
  async shutdown(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.shuttingDown = true;
    this.ctx.store.lists.stopWaiting();
    // Stop accepting, but leave open connections alone for now: node:http's own
    // close() also destroys every connection whose response has been ended,
    // even when its bytes are still queued for a slow reader. Keep-alive clients
    // that send another request meanwhile get a 503 that closes the connection.
    const closed = new Promise<void>((r) => net.Server.prototype.close.call(this.http, () => r()));
    const drained = this.inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => this.idle.push(r));
    // A referenced timer: the process must not exit (skipping the engine's
    // close) just because nothing else is pending (docs/operations.md, "Graceful shutdown").
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
    await Promise.race([drained, graceOver]);
    // A handler that has answered is no longer in flight, but its bytes may
    // still wait in the socket's buffer; destroying the socket would drop them.
    while (Date.now() < deadline && [...this.conns.sockets()].some((s) => s.writableLength > 0 && !s.destroyed)) {
      await new Promise((r) => setTimeout(r, 20));
    }
    this.conns.stop();
    this.http.closeAllConnections();
    // Connections node:http no longer tracks (handed over by CONNECT or
    // Upgrade, lingering) would keep close() waiting.
    for (const s of this.conns.sockets()) s.destroy();
    for (const s of this.conns.all) s.destroy();
    await Promise.race([closed, graceOver]);
    clearTimeout(timer);
  }
}

/**
 * Sends 100 Continue when the request's body is being read and its answer is
 * next on the wire; queued behind earlier answers, a 100 could come out of
 * order, so none is sent (the client sends the body after its own wait) and,
 * since the answer only goes out once the whole body has been read, node:http
 * is told that no 100 is owed (it would close the connection otherwise).
 */
function continueIfReading(req: PithosRequest, res: ServerResponse): void {
  if (res.headersSent || res.writableEnded || req.listenerCount('data') === 0) return;
  if (res.socket !== null) res.writeContinue();
  else (res as ServerResponse & { _expect_continue: boolean })._expect_continue = false;
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
 * large, too slow) still get the JSON envelope docs/api.md promises for every
 * answer; the connection is then closed with a lingering close, so neither a
 * client still sending loses the answer nor a client that never reads or
 * closes keeps the socket (docs/operations.md, "Connections and slow clients").
 */
function onClientError(err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex): void {
  const c = conn(socket as net.Socket);
  // A TLS handshake that failed (or timed out): there is no channel to answer on.
  if (c === undefined && (socket as Duplex & { encrypted?: boolean }).encrypted === true) {
    socket.destroy();
    return;
  }
  // A failed parser fails again on every later chunk: the answer is out already.
  if (c !== undefined && (c.lingering || c.deferred !== null)) return;
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
  } else if (err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') {
    status = 413;
    message = 'chunk extensions are too large';
  } else if (err.code === 'HPE_INVALID_METHOD') {
    message = methodMessage(err.rawPacket);
  }
  const answer = rawError(status, message);
  const s = socket as net.Socket;
  // Answers to the complete requests before this one go first. A request cut
  // short (a bad chunk, a timeout) is the one this answer is for: it never
  // gets its own, so do not wait for it.
  const incoming = (s as net.Socket & { parser?: { incoming?: http.IncomingMessage | null } | null }).parser?.incoming;
  if (c !== undefined && deferAnswer(c, answer, incoming != null && !incoming.complete ? 1 : 0)) return;
  s.write(answer);
  linger(s);
}

/** `curl -X get` sends a lowercase method, which HTTP does not allow: say so. */
function methodMessage(raw: Buffer | undefined): string {
  if (raw === undefined) return 'malformed HTTP request: unknown method';
  const m = /^\s*([^\s/]{1,32})/.exec(raw.subarray(0, 64).toString('latin1'));
  if (m === null) return 'malformed HTTP request: unknown method';
  const name = m[1];
  const upper = name.toUpperCase();
  if (upper !== name && ['GET', 'PUT', 'POST', 'PATCH', 'DELETE'].includes(upper)) {
    return `unknown HTTP method '${shown(name)}': methods are case-sensitive, use ${upper}`;
  }
  return `unknown HTTP method '${shown(name)}'`;
}

const PLAIN_ON_TLS_TEXT = 'This port speaks HTTPS: the plain HTTP request was sent to an HTTPS port. Use https:// in the address.\n';
/** The answer to plain HTTP on the TLS port: plain text, as nginx gives it (the client is not speaking our protocol). */
const PLAIN_ON_TLS = Buffer.from(
  'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(PLAIN_ON_TLS_TEXT)}\r\nConnection: close\r\n\r\n${PLAIN_ON_TLS_TEXT}`,
  'latin1',
);

function ignoreError(): void {
  /* errors of a connection surface on the socket the HTTP layer uses, or end it */
}

const EXPECT_ALLOWED = '100-continue';

/** An Expect other than 100-continue: 417, as the envelope (node:http sends an empty one). */
function expectationFailed(req: http.IncomingMessage, res: ServerResponse): void {
  sendError(res, 417, `unsupported Expect header '${shown(String(req.headers.expect))}': only ${EXPECT_ALLOWED} is supported`);
}

const CONNECT_ANSWER = rawError(405, 'method CONNECT is not supported: Pithos is not a proxy', 'Allow: GET, PUT, POST, PATCH, DELETE\r\n');
const UPGRADE_ANSWER = rawError(400, 'the Upgrade header is not supported: send the request without Upgrade (HTTP/1.1 only)');

/** CONNECT: node:http hands the socket over; answer after earlier pipelined answers, then close. */
function onConnect(_req: http.IncomingMessage, socket: Duplex): void {
  answerLast(socket as net.Socket, CONNECT_ANSWER);
}

/** A request with Upgrade: same, with 400 (nothing after it can be parsed as HTTP with certainty). */
function onUpgrade(_req: http.IncomingMessage, socket: Duplex): void {
  answerLast(socket as net.Socket, UPGRADE_ANSWER);
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
  const field = this.size > LARGE_BODY ? slicedField(this.route.def) : undefined;
  if (field !== undefined && this.chunks !== undefined) return largeEnd(this, this.chunks, field);
  let body: Body;
  let text: string;
  try {
    const c = this.chunks;
    // A chunked body may turn out empty: no chunk ever arrived.
    text = c === undefined ? '' : decodeBody(c.length === 1 ? c[0] : Buffer.concat(c, this.size));
    this.chunks = undefined;
    // Upstash's routes take a JSON array or a path form's last argument: their handler reads the text.
    body = this.route.def.upstash === true ? EMPTY_BODY : parseBody(text);
  } catch (err) {
    return this.server.fail(res, err);
  }
  this.server.dispatch(this.route, this.name, body, res, text, this.sub);
}

/** A large PUT of a collection: decoded and parsed in slices (large-body.ts), then dispatched as any body. */
function largeEnd(req: PithosRequest, chunks: Buffer[], field: string): void {
  req.chunks = undefined;
  const { server, route, name, sub, response: res } = req;
  decodeInSlices(chunks)
    .then(async (text) => server.dispatch(route, name, await parseInSlices(text, field), res, '', sub))
    .catch((err: unknown) => server.fail(res, err));
}
