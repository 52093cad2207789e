/**
 * Request bodies: read on every method (GET and DELETE carry `wheres` and
 * `token`), bounded in size, parsed as JSON whatever the Content-Type, and
 * bounded in nesting before JSON.parse so nothing later can recurse deeply.
 * What each endpoint's body may hold is declared in body-fields.ts and
 * checked by fields.ts, after this has parsed it.
 */
import { exceedsDepth, MAX_DEPTH } from '../store/json.js';
import { isPlainObject } from '../store/validate.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { shown } from './connections.js';
import { sendError } from './envelope.js';
import { HttpError } from './errors.js';

export type Body = Record<string, unknown>;

const EMPTY = /^[\s]*$/;

export function parseBody(text: string): Body {
  if (text.length === 0 || EMPTY.test(text)) return Object.create(null) as Body;
  if (exceedsDepth(text, MAX_DEPTH)) {
    throw new HttpError('invalid', `request body nests deeper than ${MAX_DEPTH} levels`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new HttpError('invalid', notJson(text, err as Error));
  }
  if (!isPlainObject(v)) throw new HttpError('invalid', 'request body must be a JSON object');
  return v;
}

/** `name=value` at the start: what a form (and curl's `-d name=value`) sends. */
const FORM = /^[\w.~%+\-[\]]+=/;
/** How a JSON text can start (JSON.parse's message then says what is wrong in it). */
const JSON_START = /^[{["\-0-9]|^(?:true|false|null)\b/;

/**
 * The message for a body JSON.parse refused. A body that starts like JSON gets
 * the parser's account of what is wrong (docs/api.md, "400 Bad Request"); one
 * that is not JSON at all (form-encoded, plain text) is told that the body must
 * be JSON, since the parser's "Unexpected token" would not say so.
 */
function notJson(text: string, err: Error): string {
  const t = text.trimStart();
  if (JSON_START.test(t)) return `request body is not valid JSON: ${err.message}`;
  if (FORM.test(t)) {
    return 'request body must be JSON (a JSON object), not form-encoded: it starts with ' + `'${shown(t, 20)}'; send e.g. {"field": "value"}`;
  }
  return `request body must be JSON (a JSON object): it starts with '${shown(t, 20)}'`;
}

/**
 * Strict UTF-8: a body that is not valid UTF-8 is refused, not stored with
 * U+FFFD in place of its bad bytes (docs/api.md, "Transport"). A leading BOM is
 * skipped (ignoreBOM: false). TextDecoder costs about what a plain toString
 * does on small ASCII bodies (measured: docs/operations.md, "Limits").
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function decodeBody(buf: Buffer): string {
  try {
    return UTF8.decode(buf);
  } catch {
    throw new HttpError('invalid', `request body is not valid UTF-8 (bad byte at offset ${firstBadByte(buf)})`);
  }
}

/** Offset of the first byte that does not belong to a valid UTF-8 sequence (error path only). */
export function firstBadByte(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const x = b[i];
    let n: number;
    let min: number;
    if (x < 0x80) {
      i++;
      continue;
    } else if (x >= 0xc2 && x <= 0xdf) {
      n = 1;
      min = 0x80;
    } else if (x >= 0xe0 && x <= 0xef) {
      n = 2;
      min = 0x800;
    } else if (x >= 0xf0 && x <= 0xf4) {
      n = 3;
      min = 0x10000;
    } else {
      return i;
    }
    if (i + n >= b.length) return i;
    let cp = x & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const y = b[i + k];
      if (y === undefined || (y & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (y & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return i;
}

export function tooLarge(limit: number): HttpError {
  return new HttpError('too_large', `request body exceeds the limit of ${limit} bytes`);
}

/** A body follows the headers: a non-zero Content-Length, or any Transfer-Encoding (chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const declared = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (declared !== undefined && Number(declared) !== 0);
}

/**
 * What is answered without a token (the probes, the console's files,
 * GET /openapi.json) takes no body: one that comes with a body is refused
 * before any of it is read, and the connection closed (a lingering close
 * reads and drops what is still coming, within its bounds). An unauthenticated
 * client can then make the server hold no more than the socket's buffers
 * (docs/operations.md, "Before authentication").
 */
export function refuseBody(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  res.shouldKeepAlive = false;
  sendError(res, 400, `${req.method ?? 'GET'} ${shown(q < 0 ? url : url.slice(0, q), 100)} takes no request body`);
}
