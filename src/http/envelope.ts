/**
 * Response envelopes (docs/api.md, "Envelope"). Success answers are built from
 * per-message parts computed once at start-up, so the hot path only
 * concatenates the data JSON (which the store hands over as text).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Text } from '../store/store.js';
import { nextTurn } from '../store/stream.js';
import { RETRY_AFTER_S } from './errors.js';

const CONTENT_TYPE = 'application/json; charset=utf-8';

export class Answer {
  /** Whole body for an answer without data. */
  readonly bare: Buffer;
  /** Body up to where the data JSON goes. */
  readonly prefix: string;

  constructor(readonly message: string) {
    const head = `{"status":"success","message":${JSON.stringify(message)}`;
    this.bare = Buffer.from(head + '}');
    this.prefix = head + ',"data":';
  }
}

export function send(res: ServerResponse, status: number, answer: Answer, data?: string): void {
  if (data === undefined) {
    res.writeHead(status, ['Content-Type', CONTENT_TYPE, 'Content-Length', String(answer.bare.length)]);
    res.end(answer.bare);
    return;
  }
  const body = answer.prefix + data + '}';
  res.writeHead(status, ['Content-Type', CONTENT_TYPE, 'Content-Length', String(Buffer.byteLength(body))]);
  res.end(body);
}

/** Pieces are gathered up to this many characters before a write. */
const SLICE_CHARS = 64 * 1024;

/**
 * A success answer whose data may come in pieces (store.ts `Text`,
 * docs/query.md "Large answers"). A string is sent as by send(). Pieces are
 * gathered into slices of about SLICE_CHARS; each slice is written when
 * the socket takes more (waiting for 'drain' otherwise), and the event loop
 * runs between any two steps, so a large answer never holds it for longer
 * than one batch of rows. An answer that ends before its first slice is
 * full goes out whole with a Content-Length; a longer one is sent with
 * chunked transfer encoding (no Content-Length), its bytes those the one
 * string would have had. A failure before the first write is an ordinary
 * error answer; after it, the connection is cut (sendError), so a client
 * never takes a truncated body for a whole one.
 */
export function sendText(res: ServerResponse, status: number, answer: Answer, data: Text): void | Promise<void> {
  if (typeof data === 'string') return send(res, status, answer, data);
  return sendPieces(res, status, answer, data, NO_HEADERS);
}

/** sendText with the object's version as its ETag (sendTagged's header), for a collection read in pieces. */
export function sendTaggedText(res: ServerResponse, status: number, answer: Answer, data: Text, version: number): void | Promise<void> {
  if (typeof data === 'string') return sendTagged(res, status, answer, data, version);
  return sendPieces(res, status, answer, data, ['ETag', `"${version}"`]);
}

const NO_HEADERS: readonly string[] = [];

/**
 * Answers written in pieces at once, server-wide. Each holds at most one
 * slice (SLICE_CHARS) and what its socket buffers beyond the store's view of
 * its instant, and a connection runs one answer at a time (connections.ts):
 * so answer bytes pending in this process stay below about MAX_STREAMING ×
 * (64 KiB + the socket's buffer) however many clients ask (docs/query.md,
 * "Large collections"). One more is answered 503 with Retry-After.
 */
export const MAX_STREAMING = 32;
let streaming = 0;

async function sendPieces(res: ServerResponse, status: number, answer: Answer, data: AsyncIterable<string>, extra: readonly string[]): Promise<void> {
  const it = data[Symbol.asyncIterator]();
  let out = answer.prefix;
  let started = false;
  let counted = false;
  try {
    if (res.req.method === 'HEAD') {
      // HEAD is answered wherever GET is: the same headers, and no reading of rows
      // that would be thrown away (the finally below releases what the answer holds).
      res.writeHead(status, ['Content-Type', CONTENT_TYPE, ...extra]);
      res.end();
      return;
    }
    if (streaming >= MAX_STREAMING) {
      sendError(res, 503, `${streaming} large answers are being sent already (at most ${MAX_STREAMING}); try again`, ['Retry-After', String(RETRY_AFTER_S)]);
      return;
    }
    streaming++;
    counted = true;
    for (;;) {
      if (res.destroyed) return; // the client went away: stop reading rows
      const r = await it.next();
      if (r.done === true) break;
      out += r.value;
      if (out.length >= SLICE_CHARS) {
        if (!started) {
          res.writeHead(status, ['Content-Type', CONTENT_TYPE, ...extra]);
          started = true;
        }
        const more = res.write(out);
        out = '';
        if (!more) await drained(res);
      }
      await nextTurn();
    }
    out += '}';
    if (res.destroyed) return;
    if (!started) res.writeHead(status, ['Content-Type', CONTENT_TYPE, 'Content-Length', String(Buffer.byteLength(out)), ...extra]);
    res.end(out);
  } finally {
    if (counted) streaming--;
    // Releases what the answer holds when it stopped early (client gone, an error); a no-op after the end.
    await it.return?.();
  }
}

/** Resolves when the socket wants more, or the response is gone. */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * A success answer with data and the object's version as its ETag
 * (docs/api.md, "Versions"): `"<version>"`, the form If-Match takes back.
 */
export function sendTagged(res: ServerResponse, status: number, answer: Answer, data: string, version: number): void {
  const body = answer.prefix + data + '}';
  res.writeHead(status, ['Content-Type', CONTENT_TYPE, 'Content-Length', String(Buffer.byteLength(body)), 'ETag', `"${version}"`]);
  res.end(body);
}

/**
 * Declared bodies up to this size are still read and dropped after an early
 * answer, keeping the connection; larger or chunked ones close it.
 */
const DRAIN_LIMIT = 64 * 1024;

/**
 * A request refused before its body was read (401, 404, 405, 413, ...)
 * whose body is large or of unknown length: close the connection after the
 * answer (with a lingering close, docs/operations.md) instead of waiting for
 * a body that may never come (docs/api.md, "413").
 */
export function closeIfBodyPending(res: ServerResponse): void {
  const req = res.req as IncomingMessage | undefined;
  if (req === undefined || req.complete) return;
  const h = req.headers;
  if (h['transfer-encoding'] !== undefined || Number(h['content-length']) > DRAIN_LIMIT) res.shouldKeepAlive = false;
}

/** Error envelope: never carries data. `extra` adds headers such as Allow. */
export function sendError(res: ServerResponse, status: number, message: string, extra?: string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  closeIfBodyPending(res);
  const body = Buffer.from(`{"status":"error","message":${JSON.stringify(message)}}`);
  const headers = ['Content-Type', CONTENT_TYPE, 'Content-Length', String(body.length)];
  if (extra !== undefined) headers.push(...extra);
  res.writeHead(status, headers);
  res.end(body);
}
