/**
 * Maps a method and path to a handler and the decoded name segment. The
 * path space is small and fixed, so this is a switch on the first segment,
 * not a general router; unknown paths are 404 and known paths with the
 * wrong method are 405 with an Allow header.
 */
import { PithosError } from '../model/errors.js';
import { checkName, MAX_NAME_BYTES } from '../model/validate.js';
import * as h from './handlers.js';
import type { Handler } from './handlers.js';

/** Handlers of one path shape, by method; `allow` is the Allow header value. */
class Methods {
  readonly allow: string;
  constructor(readonly what: string, readonly byMethod: Readonly<Record<string, Handler>>) {
    this.allow = Object.keys(byMethod).join(', ');
  }
}

const HEALTH = new Methods('', { GET: h.health });
const TABLE = new Methods('table', { PUT: h.createTable, GET: h.queryTable, PATCH: h.patchRows, DELETE: h.dropTable });
const ROWS = new Methods('table', { POST: h.insertRow, GET: h.queryRows, DELETE: h.deleteRows });
const QUERY = new Methods('table', { POST: h.queryRows });
const QUICK = new Methods('record', { PUT: h.putQuick, GET: h.getRecord, DELETE: h.deleteRecord });
const RECORD = new Methods('record', { PUT: h.putRecord, GET: h.getRecord, POST: h.searchRecord, DELETE: h.deleteRecord });
const VARIANT = new Methods('variant', { PUT: h.putVariant, POST: h.incrementVariant, GET: h.getVariant, DELETE: h.deleteVariant });
const LOCK = new Methods('lock', { PUT: h.acquireLock, PATCH: h.renewLock, DELETE: h.releaseLock, GET: h.queryLock });
const CLOCK = new Methods('', { POST: h.advanceClock });

const NON_ASCII = /[^\x00-\x7f]/;

export interface Route {
  handler: Handler;
  name: string;
}

function notFoundPath(method: string, path: string): PithosError {
  return new PithosError('not_found', `no endpoint at ${method} ${path}`);
}

export class MethodNotAllowed extends PithosError {
  constructor(method: string, path: string, readonly allow: string) {
    super('method', `method ${method} is not allowed on ${path}; allowed: ${allow}`);
  }
}

function shape(seg: string[], testClock: boolean): Methods | undefined {
  switch (seg[1]) {
    case 'health':
      return seg.length === 2 ? HEALTH : undefined;
    case 'tables':
      if (seg.length === 3) return TABLE;
      if (seg.length === 4) return seg[3] === 'rows' ? ROWS : seg[3] === 'query' ? QUERY : undefined;
      return undefined;
    case 'table':
      return seg.length === 3 ? QUICK : undefined;
    case 'records':
      return seg.length === 3 ? RECORD : undefined;
    case 'variants':
      return seg.length === 3 ? VARIANT : undefined;
    case 'locks':
      return seg.length === 3 ? LOCK : undefined;
    case '_test':
      return testClock && seg.length === 3 && seg[2] === 'clock' ? CLOCK : undefined;
    default:
      return undefined;
  }
}

/**
 * The common case, checked in one pass: printable ASCII with no `%`, so no
 * decoding and one byte per character. Returns undefined for anything else
 * (including every invalid name), which takes the general path below.
 */
function plainName(seg: string): string | undefined {
  const n = seg.length;
  if (n === 0 || n > MAX_NAME_BYTES) return undefined;
  for (let i = 0; i < n; i++) {
    const c = seg.charCodeAt(i);
    if (c < 0x20 || c >= 0x7f || c === 0x25 /* % */) return undefined;
  }
  if (seg === '.' || seg === '..') return undefined;
  return seg;
}

/** Resolves a request line to a handler; throws 404 / 405 / 400 as PithosErrors. */
export function route(method: string, url: string, testClock: boolean): Route {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const seg = path.split('/');
  const m = seg[0] === '' ? shape(seg, testClock) : undefined;
  if (m === undefined) throw notFoundPath(method, path);
  const handler = m.byMethod[method];
  if (handler === undefined || !Object.prototype.hasOwnProperty.call(m.byMethod, method)) {
    throw new MethodNotAllowed(method, path, m.allow);
  }
  if (m.what === '') return { handler, name: '' };
  const plain = plainName(seg[2]);
  if (plain !== undefined) return { handler, name: plain };
  let name: string;
  try {
    // node:http hands over raw path bytes one per char; a client that sent
    // UTF-8 without percent-encoding it still means UTF-8.
    const raw = NON_ASCII.test(seg[2]) ? Buffer.from(seg[2], 'latin1').toString('utf8') : seg[2];
    name = decodeURIComponent(raw);
  } catch {
    throw new PithosError('invalid', `${m.what} name is not valid percent-encoded UTF-8`);
  }
  checkName(name, m.what);
  return { handler, name };
}
