/**
 * CORS for the origins given with --cors-origin (docs/operations.md,
 * "CORS"). Off unless configured. A browser's preflight
 * carries no Auth-Token (it cannot), so a listed origin's preflight is
 * answered here, before auth; an actual request from a listed origin gets
 * Access-Control-Allow-Origin and is then authorised like any other.
 * Requests from other origins get no CORS header at all, which is how a
 * browser is told no.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hasBody } from './request-body.js';

const METHODS = 'GET, HEAD, PUT, POST, PATCH, DELETE';
/**
 * What browser code may send: the token, JSON, the conditional headers and the feed's resume point (docs/api.md);
 * and what @upstash/redis sends to /redis (docs/redis-rest.md).
 */
const HEADERS =
  'Auth-Token, Content-Type, If-Match, If-None-Match, Last-Event-ID, Authorization, Upstash-Encoding, Upstash-Response-Format, Upstash-Sync-Token, ' +
  'Upstash-Telemetry-Runtime, Upstash-Telemetry-Platform, Upstash-Telemetry-Sdk, Upstash-Telemetry-Retry';
/** How long a browser may cache a preflight answer, in seconds. */
const MAX_AGE = '600';

export class Cors {
  private readonly origins: ReadonlySet<string>;

  constructor(
    origins: readonly string[],
    private readonly exposeRequestId = false,
  ) {
    this.origins = new Set(origins);
  }

  /**
   * Called for every request when CORS is configured. Returns true when it
   * has answered the request (a preflight from a listed origin).
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const origin = req.headers.origin;
    // Answers differ by Origin: caches must keep them apart.
    res.setHeader('Vary', 'Origin');
    if (origin === undefined || !this.origins.has(origin)) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    // A preflight carrying a body is not one a browser sends: it goes on to the
    // token check, whose refusal closes the connection rather than read the body.
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined && !hasBody(req)) {
      res.writeHead(204, [
        'Access-Control-Allow-Methods',
        METHODS,
        'Access-Control-Allow-Headers',
        HEADERS,
        'Access-Control-Max-Age',
        MAX_AGE,
        'Content-Length',
        '0',
      ]);
      res.end();
      return true;
    }
    // Let browser code read the headers it may need (Allow on a 405, versions, the request id).
    res.setHeader('Access-Control-Expose-Headers', this.exposeRequestId ? 'Allow, ETag, X-Request-Id' : 'Allow, ETag');
    return false;
  }
}

/** "https://app.example.com:8443" as a browser sends it in Origin; undefined for anything else. */
export function checkOrigin(s: string): string | undefined {
  try {
    const u = new URL(s);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.origin === s) return s;
  } catch {
    /* not a URL */
  }
  return undefined;
}
