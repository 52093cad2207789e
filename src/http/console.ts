/**
 * Serves the web console (built from web/ into dist/console by `npm run build`) at
 * /console and /console/* (and an empty /favicon.ico). No auth to load it: the page asks for the token and sends it
 * with every API call. Called by the server before auth; answers only paths under
 * /console and returns false for everything else.
 */
import * as fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasBody, refuseBody } from './request-body.js';
import { sendError } from './envelope.js';

/** dist/src/http/console.js → dist/console */
export const CONSOLE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'console');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

// Only this origin, no inline script, no framing: the page holds a database token.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const cache = new Map<string, Buffer>();

/** True when the request was for the console (and has been answered). */
export function serveConsole(req: IncomingMessage, res: ServerResponse, dir = CONSOLE_DIR): boolean {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const method = req.method ?? 'GET';
  if (rawPath === '/favicon.ico' && (method === 'GET' || method === 'HEAD') && !hasBody(req)) {
    // Browsers ask for it on their own; without a token it would be a 401 error on every
    // console page load. The console names its icon (favicon.svg) itself; this has none.
    res.writeHead(204, { 'Cache-Control': 'max-age=86400' });
    res.end();
    return true;
  }
  if (rawPath !== '/console' && !rawPath.startsWith('/console/')) return false;
  if (hasBody(req)) {
    refuseBody(req, res);
    return true;
  }
  if (method !== 'GET' && method !== 'HEAD') {
    sendError(res, 405, `method ${method} is not allowed on ${rawPath}; allowed: GET, HEAD`, ['Allow', 'GET, HEAD']);
    return true;
  }
  if (rawPath === '/console') {
    // Relative asset addresses need the trailing slash.
    res.writeHead(308, { Location: '/console/' + (q < 0 ? '' : url.slice(q)), 'Content-Length': '0' });
    res.end();
    return true;
  }
  let rel: string;
  try {
    rel = decodeURIComponent(rawPath.slice('/console/'.length));
  } catch {
    sendError(res, 400, 'malformed console path');
    return true;
  }
  if (rel === '') rel = 'index.html';
  const file = path.resolve(dir, rel);
  const type = TYPES[path.extname(file)];
  if (!file.startsWith(dir + path.sep) || rel.includes('\0') || type === undefined) {
    sendError(res, 404, `no console file at ${rawPath}`);
    return true;
  }
  let body = cache.get(file);
  if (body === undefined) {
    try {
      body = fs.readFileSync(file);
    } catch {
      const built = fs.existsSync(path.join(dir, 'index.html'));
      sendError(res, 404, built ? `no console file at ${rawPath}` : 'the console is not built; run npm run build');
      return true;
    }
    cache.set(file, body);
  }
  res.writeHead(200, {
    'Content-Type': type,
    'Content-Length': String(body.length),
    'Cache-Control': rel === 'index.html' ? 'no-cache' : 'max-age=300',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Content-Security-Policy': CSP,
  });
  res.end(method === 'HEAD' ? undefined : body);
  return true;
}
