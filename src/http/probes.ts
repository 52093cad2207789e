/**
 * Liveness and readiness probes (docs/operations.md,
 * "Probes"): no auth, plain text, nothing but the status. `/livez` is 200
 * while the process serves at all; `/readyz` is 200 only when the server
 * takes requests, 503 while it is shutting down (and, were it listening
 * before recovery has finished, during recovery too), and on the shared
 * store while no writable primary has answered in the last few seconds
 * (a cached state: a probe never queries the database).
 */
import type { ServerResponse } from 'node:http';

const OK = Buffer.from('ok\n');
const NOT_READY = Buffer.from('not ready\n');
const HEADERS_OK = ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(OK.length), 'Cache-Control', 'no-store'];
const HEADERS_NOT_READY = ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(NOT_READY.length), 'Cache-Control', 'no-store'];

/** 'livez' or 'readyz' for a probe path (a query string ignored), else undefined. Cheap: one char test first. */
export function probeOf(url: string | undefined): 'livez' | 'readyz' | undefined {
  if (url === undefined) return undefined;
  const c = url.charCodeAt(1);
  if (c === 0x6c /* l */) {
    if (url === '/livez' || url.startsWith('/livez?')) return 'livez';
  } else if (c === 0x72 /* r */) {
    if (url === '/readyz' || url.startsWith('/readyz?')) return 'readyz';
  }
  return undefined;
}

/** Answers a probe. `ready`: recovery done, not shutting down, the store can serve writes. Any method but GET/HEAD is still just the probe. */
export function answerProbe(res: ServerResponse, which: 'livez' | 'readyz', ready: boolean, head: boolean): void {
  const up = which === 'livez' || ready;
  res.writeHead(up ? 200 : 503, up ? HEADERS_OK : HEADERS_NOT_READY);
  res.end(head ? undefined : up ? OK : NOT_READY);
}
