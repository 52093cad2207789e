/**
 * The access log (--access-log; docs/operations.md, "Logs"): one line per
 * request with its id, method, path, status, duration and response bytes.
 * Headers are never logged, so neither is the Auth-Token. Only built when
 * configured: without it a request pays one property test.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Fields, Level } from '../log.js';

/** A client's X-Request-Id is kept when it is this sane: no spaces, quotes or control bytes, not huge. */
const SANE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function requestId(header: string | string[] | undefined): string {
  return typeof header === 'string' && SANE_ID.test(header) ? header : randomUUID();
}

export class AccessLog {
  constructor(private readonly log: (level: Level, msg: string, fields?: Fields) => void) {}

  /** Called first thing for every request: names it, echoes the id, logs it when its response is done. */
  begin(req: IncomingMessage, res: ServerResponse): void {
    const start = performance.now();
    const id = requestId(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', id);
    const socket = req.socket;
    const written = socket.bytesWritten;
    res.once('close', () => {
      // Content-Length when the answer declared one; else (a streamed answer)
      // what went out on the connection for it, headers included.
      const cl = res.getHeader('content-length');
      const bytes = cl !== undefined ? Number(cl) : socket.bytesWritten - written;
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const fields: Fields = {
        id,
        method: req.method ?? '',
        path: q < 0 ? url : url.slice(0, q),
        status: res.statusCode,
        ms: Math.round((performance.now() - start) * 1000) / 1000,
        bytes,
      };
      if (!res.writableFinished) fields.aborted = true;
      this.log('info', 'request', fields);
    });
  }
}
