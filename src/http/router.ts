/**
 * The router, derived from the route table (routes.ts): a tree of path
 * segments, each node holding literal children and at most one parameter
 * child, and at a path's end the routes by method with a precomputed Allow
 * header. Unknown paths are 404; known paths with the wrong method are 405.
 */
import { HttpError } from './errors.js';
import { StoreError } from '../store/errors.js';
import { checkName, MAX_NAME_BYTES } from '../store/validate.js';
import { checkMember } from '../store/collection.js';
import { checkBody } from './fields.js';
import type { Body } from './request-body.js';
import { ROUTES, type RouteDef, servedRoutes } from './routes.js';
import { notFoundHint } from './path-hints.js';

/** A route ready to serve: its definition plus what the router and the body check need, computed once. */
export class Route {
  readonly fieldNames: readonly string[];
  constructor(readonly def: RouteDef) {
    this.fieldNames = def.body === undefined ? [] : Object.keys(def.body);
  }

  get handler() {
    return this.def.handler;
  }

  /**
   * The declared query parameters of `url`, percent-decoded; 400 for an
   * undeclared, repeated or badly encoded one. `+` is a plus sign, not a
   * space: names are percent-decoded path-style (docs/api.md "List names").
   */
  parseQuery(url: string): Record<string, string> {
    const out = Object.create(null) as Record<string, string>;
    const q = url.indexOf('?');
    if (q < 0 || q === url.length - 1) return out;
    const declared = this.def.query ?? {};
    for (const part of url.slice(q + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      let k: string;
      let v: string;
      try {
        k = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
        v = decodeURIComponent(eq < 0 ? '' : part.slice(eq + 1));
      } catch {
        throw new StoreError('invalid', `query parameter '${part.slice(0, 64)}' is not valid percent-encoded UTF-8`);
      }
      if (!Object.prototype.hasOwnProperty.call(declared, k)) {
        const names = Object.keys(declared);
        // `?limit=` on a row query: the listing habit; here it is a field of the body.
        if (this.def.body !== undefined && Object.prototype.hasOwnProperty.call(this.def.body, k)) {
          throw new StoreError('invalid', `unknown query parameter '${k}': this endpoint takes '${k}' as a field of the JSON body`);
        }
        throw new StoreError(
          'invalid',
          names.length === 0 ? `unknown query parameter '${k}': this endpoint takes none` : `unknown query parameter '${k}' (allowed: ${names.join(', ')})`,
        );
      }
      if (k in out) throw new StoreError('invalid', `query parameter '${k}' is given more than once`);
      out[k] = v;
    }
    return out;
  }

  /** Checks the body against the declared fields (fields.ts). */
  checkBody(body: Body, name: string): void {
    if (this.fieldNames.length > 0 || this.def.strict === true) checkBody(this.def.body ?? {}, this.fieldNames, body, this.def.strict === true, name);
  }
}

class Node {
  readonly literal = new Map<string, Node>();
  param: Node | undefined;
  /** What the parameter at this node names (for its messages). */
  names: string | undefined;
  byMethod: Record<string, Route> | undefined;
  allow = '';
}

export interface Match {
  route: Route;
  name: string;
  /** The second path parameter (an index's field), '' when the path has none. */
  sub: string;
}

function build(testClock: boolean): Node {
  const root = new Node();
  for (const def of ROUTES) {
    if (def.testOnly === true && !testClock) continue;
    let n = root;
    let params = 0;
    for (const s of def.path.split('/').slice(1)) {
      if (s.startsWith('{')) {
        n = n.param ??= new Node();
        n.names = params++ === 0 ? def.names : def.subNames;
      } else {
        let c = n.literal.get(s);
        if (c === undefined) n.literal.set(s, (c = new Node()));
        n = c;
      }
    }
    n.byMethod ??= Object.create(null) as Record<string, Route>;
    n.byMethod[def.method] = new Route(def);
    const ms = Object.keys(n.byMethod);
    // HEAD is answered wherever GET is (the headers of the GET, no body: Node's http omits it).
    if (ms.includes('GET') && !ms.includes('HEAD')) ms.splice(ms.indexOf('GET') + 1, 0, 'HEAD');
    n.allow = ms.join(', ');
  }
  return root;
}

const trees: Array<Node | undefined> = [undefined, undefined];
const tree = (testClock: boolean): Node => (trees[testClock ? 1 : 0] ??= build(testClock));

const NON_ASCII = /[^\x00-\x7f]/;

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

function decodeName(seg: string, what: string): string {
  if (what === 'member') return decodeMember(seg);
  if (what === 'words') return seg;
  const plain = plainName(seg);
  if (plain !== undefined) return plain;
  let name: string;
  try {
    // node:http hands over raw path bytes one per char; a client that sent
    // UTF-8 without percent-encoding it still means UTF-8.
    const raw = NON_ASCII.test(seg) ? Buffer.from(seg, 'latin1').toString('utf8') : seg;
    name = decodeURIComponent(raw);
  } catch {
    throw new StoreError('invalid', `${what} name is not valid percent-encoded UTF-8`);
  }
  checkName(name, what);
  return name;
}

/**
 * A t_id segment is no name (src/store/rows.ts checks it as a number): only
 * percent-decoded here, so its 400 says what a t_id must be, not what a name must be.
 */
function decodeRowId(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}

/** A sorted set's member in the path: any string of 0-4,096 bytes of UTF-8, control characters included. */
function decodeMember(seg: string): string {
  let m: string;
  try {
    m = decodeURIComponent(NON_ASCII.test(seg) ? Buffer.from(seg, 'latin1').toString('utf8') : seg);
  } catch {
    throw new StoreError('invalid', 'member is not valid percent-encoded UTF-8');
  }
  return checkMember('member', m);
}

/** Resolves a request line to a route and its decoded name; throws 404 / 405 / 400. */
export function route(method: string, url: string, testClock: boolean): Match {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const seg = path.split('/');
  let n: Node | undefined = seg[0] === '' ? tree(testClock) : undefined;
  let param: string | undefined;
  let names = '';
  let sub: string | undefined;
  let subNames = '';
  for (let i = 1; i < seg.length && n !== undefined; i++) {
    const lit: Node | undefined = n.literal.get(seg[i]);
    if (lit !== undefined) {
      n = lit;
    } else if (n.param !== undefined) {
      n = n.param;
      if (n.names === 'words') {
        // The rest of the path is one parameter (the Upstash path form, /redis/set/k/v).
        param = seg.slice(i).join('/');
        names = 'words';
        break;
      }
      if (param === undefined) {
        param = seg[i];
        names = n.names ?? 'object';
      } else {
        sub = seg[i];
        subNames = n.names ?? 'object';
      }
    } else {
      n = undefined;
    }
  }
  if (n === undefined || n.byMethod === undefined) throw HttpError.notFound(method, path, notFoundHint(method, seg, tree(testClock)));
  const r = n.byMethod[method] ?? (method === 'HEAD' ? n.byMethod.GET : undefined);
  if (r === undefined) throw HttpError.methodNotAllowed(method, path, n.allow);
  return {
    route: r,
    name: param === undefined ? '' : decodeName(param, names),
    sub: sub === undefined ? '' : subNames === 't_id' ? decodeRowId(sub) : decodeName(sub, subNames),
  };
}

export { servedRoutes };
