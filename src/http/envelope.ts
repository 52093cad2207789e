/**
 * Response envelopes (API.md section 2). Success answers are built from
 * per-message parts computed once at start-up, so the hot path only
 * concatenates the data JSON (which the model hands over as text).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

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
function closeIfBodyPending(res: ServerResponse): void {
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
