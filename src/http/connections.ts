/**
 * Connection-level defences (docs/operations.md, "Connections and slow
 * clients"): a cap on open connections that evicts idle ones first, a
 * lingering close so a client still sending reads the answer, a write-stall
 * timeout, a bound on output buffered per connection, and envelope answers
 * for what node:http would otherwise answer with an empty body or not at all
 * (parse errors, CONNECT, Upgrade).
 *
 * State lives on one object per connection, and the timers and listeners are
 * shared functions: nothing here allocates per request.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import { readFileSync } from 'node:fs';

/** Lingering close: stop after this long in total, ... */
export const LINGER_MAX_MS = 5_000;
/** ... or when the client has sent nothing for this long, ... */
export const LINGER_IDLE_MS = 1_000;
/** ... or once this much has been read and discarded. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const LINGER_TICK_MS = 250;
/**
 * A TLS connection that has not finished its handshake this long after the
 * TCP accept is closed: the same bound node:http puts on a plain connection
 * that has not sent its headers (headersTimeout).
 */
export const HANDSHAKE_MS = 10_000;
/** A connection whose output makes no progress for this long is closed. */
export const WRITE_STALL_MS = 10_000;
/** Requests on one connection wait (unread) while this much output is still queued for it. */
export const MAX_QUEUED_OUTPUT = 1024 * 1024;

/** Per-connection state. */
export class Conn {
  /** Requests parsed on this connection whose response has not finished. */
  pending = 0;
  /** An answer to write once every earlier response has gone (CONNECT, Upgrade). */
  deferred: Buffer | null = null;
  /** The deferred answer goes out once `pending` is down to this. */
  deferredAt = 0;
  /**
   * An answer that closes the connection has gone. node:http still parses what
   * was pipelined behind it, but no answer can follow: those requests are not run,
   * or a write would be done that its client is never told of.
   */
  closing = false;
  lingering = false;
  lingerStart = 0;
  lingerRead = 0;
  lingerReadAt = 0;
  /** Output not yet taken by the kernel at the last sweep, and since when that has not moved. */
  left = 0;
  stalledSince = 0;
  /** Requests held back while output is queued (see MAX_QUEUED_OUTPUT). */
  parked: Array<[http.IncomingMessage, http.ServerResponse, Step]> | null = null;
  /** When the TCP connection was accepted; a TLS one must finish its handshake within HANDSHAKE_MS of it. */
  readonly acceptedAt = Date.now();
  /** A TLS connection whose handshake has not finished: it has no HTTP state yet. */
  handshaking = false;
  /**
   * `tcp` is the accepted socket, the one counted; `socket` is the one the
   * HTTP layer reads and writes: the same for plain HTTP, the TLS socket on it
   * once the handshake is done.
   */
  constructor(
    public socket: net.Socket,
    readonly owner: Connections,
    readonly tcp: net.Socket = socket,
  ) {}
}

export type PSocket = net.Socket & { pithos?: Conn };

/** What to do with a request once it may go (a shared function, not a closure). */
export type Step = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export function conn(socket: net.Socket | null | undefined): Conn | undefined {
  return (socket as PSocket | null | undefined)?.pithos;
}

/** The error answer node:http would send without a body, as the envelope. */
export function rawError(status: number, message: string, extra = ''): Buffer {
  const body = Buffer.from(`{"status":"error","message":${JSON.stringify(message)}}`);
  return Buffer.concat([
    Buffer.from(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${body.length}\r\n${extra}Connection: close\r\n\r\n`,
      'latin1',
    ),
    body,
  ]);
}

function ignore(): void {
  /* errors on a connection being closed are expected (EPIPE, ECONNRESET) */
}

function destroyThis(this: net.Socket): void {
  this.destroy();
}

/**
 * Lingering close: send FIN after the answer, then keep reading and
 * discarding until the client closes, goes quiet, or a time or size bound is
 * reached. Closing with unread input makes the kernel send RST, which can
 * destroy the answer before the client has read it (docs/api.md, "413").
 */
export function linger(socket: net.Socket): void {
  const c = conn(socket);
  if (c === undefined) {
    socket.destroySoon();
    return;
  }
  if (c.lingering) return;
  c.lingering = true;
  c.parked = null;
  socket.on('error', ignore);
  if (!socket.writableEnded) socket.end();
  if (socket.readableEnded || socket.destroyed) {
    socket.destroySoon();
    return;
  }
  socket.once('end', destroyThis);
  // node:http reads the socket itself while it owns it; after CONNECT/Upgrade
  // nobody does, so read and drop here.
  if (socket.readableFlowing !== true) socket.resume();
  const now = Date.now();
  c.lingerStart = now;
  c.lingerRead = socket.bytesRead;
  c.lingerReadAt = now;
  setTimeout(lingerTick, LINGER_TICK_MS, c).unref();
}

function lingerTick(c: Conn): void {
  const s = c.socket;
  if (s.destroyed) return;
  const now = Date.now();
  const read = s.bytesRead;
  if (read !== c.lingerRead) {
    if (read - c.lingerRead > LINGER_MAX_BYTES) return void s.destroy();
    c.lingerReadAt = now;
  }
  if (now - c.lingerStart >= LINGER_MAX_MS || now - c.lingerReadAt >= LINGER_IDLE_MS) {
    s.destroy();
    return;
  }
  // Size is counted from the start of the linger: keep the start figure.
  setTimeout(lingerTick, LINGER_TICK_MS, c).unref();
}

/**
 * Replaces socket.destroySoon, which node:http calls once the last response of
 * a connection (Connection: close, 413, early rejections) has been written.
 */
function lingerSoon(this: net.Socket): void {
  if (this.writableFinished || this.writableLength === 0) {
    linger(this);
  } else {
    this.end();
    this.once('finish', lingerAfterFinish);
  }
}

function lingerAfterFinish(this: net.Socket): void {
  linger(this);
}

/** The soft RLIMIT_NOFILE of this process, when Linux tells it. */
function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** File descriptors kept free for the log segments, hint files and the process itself. */
const FD_RESERVE = 256;
export const DEFAULT_MAX_CONNECTIONS = 10_000;

/** The cap to use: the configured one, else the default lowered to fit the open-file limit. */
export function effectiveMaxConnections(configured: number | undefined): { max: number; limitedBy?: number } {
  if (configured !== undefined) return { max: configured };
  const nofile = openFileLimit();
  if (nofile !== undefined && nofile - FD_RESERVE < DEFAULT_MAX_CONNECTIONS) {
    return { max: Math.max(16, nofile - FD_RESERVE), limitedBy: nofile };
  }
  return { max: DEFAULT_MAX_CONNECTIONS };
}

const TOO_MANY = rawError(503, 'too many open connections; try again later');

/**
 * Every open connection, oldest first, counted from the TCP accept (for TLS,
 * before the handshake: connections that never finish it count too). A new
 * connection beyond the cap evicts the oldest idle one (no request being
 * answered, or still in its TLS handshake): idle and slowly-trickling
 * connections must not lock legitimate clients out.
 */
export class Connections {
  /** The accepted TCP sockets. */
  readonly all = new Set<PSocket>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(readonly max: number) {}

  /** A plain HTTP connection, just accepted. */
  add(socket: PSocket): void {
    socket.destroySoon = lingerSoon;
    this.admit(socket, false);
  }

  /**
   * A TCP connection to the TLS port, just accepted: counted now, closed if its
   * handshake has not finished within HANDSHAKE_MS (see sweep). False when it
   * was refused (the cap, nothing idle): it is closed without an answer, as a
   * TLS client could not read a plain one.
   */
  addTls(socket: PSocket): boolean {
    return this.admit(socket, true);
  }

  /** The handshake of a connection from addTls has finished: HTTP goes on over `tls`. */
  secured(tls: PSocket): void {
    const c = (tls as PSocket & { _parent?: PSocket })._parent?.pithos;
    if (c === undefined || c.tcp.destroyed) {
      // Not one of ours (or gone meanwhile): nothing can bound it, so it does not stay.
      tls.destroy();
      return;
    }
    c.handshaking = false;
    c.socket = tls;
    tls.pithos = c;
    tls.destroySoon = lingerSoon;
  }

  private admit(socket: PSocket, tls: boolean): boolean {
    const c = new Conn(socket, this);
    c.handshaking = tls;
    socket.pithos = c;
    socket.once('close', onClose);
    if (this.all.size >= this.max && !this.evictIdle()) {
      socket.pithos = undefined;
      socket.on('error', ignore);
      if (tls) {
        socket.destroy();
      } else {
        socket.end(TOO_MANY);
        setTimeout(destroyIfOpen, LINGER_IDLE_MS, socket).unref();
      }
      return false;
    }
    this.all.add(socket);
    return true;
  }

  private evictIdle(): boolean {
    for (const s of this.all) {
      const c = s.pithos;
      if (c !== undefined && c.pending === 0) {
        this.all.delete(s);
        c.socket.destroy();
        s.destroy();
        return true;
      }
    }
    return false;
  }

  /** The sockets the HTTP layer uses, one per open connection. */
  *sockets(): IterableIterator<net.Socket> {
    for (const s of this.all) yield s.pithos?.socket ?? s;
  }

  /** Once a second: close connections whose output has not moved for WRITE_STALL_MS, or whose handshake is late. */
  startSweeping(): void {
    this.sweeper = setInterval(sweep, 1_000, this);
    this.sweeper.unref();
  }

  stop(): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
  }
}

function destroyIfOpen(s: net.Socket): void {
  if (!s.destroyed) s.destroy();
}

function onClose(this: PSocket): void {
  this.pithos?.owner.all.delete(this);
}

function sweep(conns: Connections): void {
  const now = Date.now();
  for (const tcp of conns.all) {
    const c = tcp.pithos;
    if (c === undefined) continue;
    if (c.handshaking) {
      if (now - c.acceptedAt >= HANDSHAKE_MS) tcp.destroy();
      continue;
    }
    const s = c.socket;
    // Output still in node's buffer plus what libuv has yet to hand to the
    // kernel: any change means the client reads (or more was queued).
    const left = s.writableLength + ((s as net.Socket & { _handle?: { writeQueueSize?: number } })._handle?.writeQueueSize ?? 0);
    if (left === 0 || left !== c.left) {
      c.left = left;
      c.stalledSince = now;
    } else if (now - c.stalledSince >= WRITE_STALL_MS) {
      s.destroy();
    }
  }
}

/**
 * Called when a response of the connection has finished (see PithosResponse):
 * writes a deferred answer once nothing is ahead of it, and lets held-back
 * requests go on.
 */
export function responseDone(c: Conn): void {
  c.pending--;
  if (c.deferred !== null && c.pending <= c.deferredAt) {
    const d = c.deferred;
    c.deferred = null;
    c.socket.write(d);
    linger(c.socket);
    return;
  }
  if (c.parked !== null) unpark(c);
}

/**
 * Whether a request must wait: pipelined requests of one connection run one
 * after the other, and not while more than MAX_QUEUED_OUTPUT of earlier
 * answers is still queued. A client that pipelines requests but never reads
 * would otherwise make the server hold every answer in memory, and a
 * pipelined GET could overtake the PUT before it.
 */
export function mustWait(c: Conn): boolean {
  return c.pending > 1 || c.parked !== null || c.socket.writableLength > MAX_QUEUED_OUTPUT;
}

/**
 * Runs `step` now, or once every earlier request of the connection has been
 * answered. Every request goes through here, also those answered without a
 * handler (417, a missing Host): one answered ahead of a waiting one would
 * sit in node:http's queue behind it and count as unanswered, so neither
 * would ever go.
 */
export function inTurn(c: Conn | undefined, req: http.IncomingMessage, res: http.ServerResponse, step: Step): void {
  if (c !== undefined && (c.closing || c.lingering)) return;
  if (c === undefined || !mustWait(c)) return step(req, res);
  if (c.parked === null) {
    c.parked = [];
    c.socket.on('drain', onDrain);
  }
  c.parked.push([req, res, step]);
}

function onDrain(this: PSocket): void {
  const c = this.pithos;
  if (c !== undefined) unpark(c);
}

function unpark(c: Conn): void {
  const q = c.parked;
  if (q === null || c.lingering || c.closing) return;
  // Parked requests count in `pending`: go on when none of the others is left.
  if (c.pending - q.length > 0 || c.socket.writableLength > MAX_QUEUED_OUTPUT) return;
  const [req, res, step] = q.shift()!;
  if (q.length === 0) {
    c.parked = null;
    c.socket.off('drain', onDrain);
  }
  step(req, res);
}

/** Printable, bounded form of client-sent text for an error message. */
export function shown(s: string, max = 40): string {
  const clean = s.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * Answers a request that node:http has handed over with its socket (CONNECT,
 * Upgrade) and closes the connection: once every earlier pipelined response
 * has been written, so none is lost or overtaken.
 */
/**
 * Holds `answer` (the connection's last) until only `remaining` requests are
 * still unanswered; false when it can be written now.
 */
export function deferAnswer(c: Conn, answer: Buffer, remaining: number): boolean {
  if (c.pending <= remaining) return false;
  c.deferred = answer;
  c.deferredAt = remaining;
  return true;
}

export function answerLast(socket: net.Socket, answer: Buffer): void {
  socket.on('error', ignore);
  const c = conn(socket);
  if (c === undefined) {
    socket.end(answer);
    setTimeout(destroyIfOpen, LINGER_IDLE_MS, socket).unref();
    return;
  }
  c.pending--; // this request never gets a ServerResponse
  if (deferAnswer(c, answer, 0)) return;
  socket.write(answer);
  linger(socket);
}
