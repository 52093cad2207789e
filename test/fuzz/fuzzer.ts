/**
 * A seeded HTTP fuzzer for a running Pithos (docs/fuzzing.md). Raw bytes
 * over TCP: random methods, paths (odd percent-encodings, long segments),
 * headers, bodies (garbage, deep nesting, huge numbers, duplicate keys,
 * __proto__/constructor, wrong types for every field of every endpoint),
 * chunked and pipelined requests.
 *
 * Invariants checked: every answer is the JSON envelope; no 5xx but 507; a
 * refused request (any 4xx) leaves the object it named as it was; no answer
 * shows a key that could only come from a polluted prototype, and fresh
 * objects read back empty. The caller checks that the process is alive.
 */
import net from 'node:net';
import tls from 'node:tls';
import { parseAnswers, type RawAnswer } from '../helpers/raw.js';
import { rng } from '../helpers/rng.js';
import { byteOrder } from '../helpers/order.js';

export interface FuzzOptions {
  port: number;
  token: string;
  requests: number;
  seed: number;
  workers?: number;
  /** Stop early after this long (the count reached is reported). */
  timeLimitMs?: number;
  progress?: (done: number) => void;
  /** Speak HTTPS, trusting only this certificate (a server started with --tls-cert). */
  tlsCa?: string;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  answers: number;
  pipelined: number;
  chunked: number;
  checkedRefusals: number;
  byStatus: Record<string, number>;
  /** Requests that named one of a worker's own objects, by path prefix (`lists`, `set`, …): which routes a run reached. */
  byNamespace: Record<string, number>;
  /** Requests to listings and `/txns`, and those with a condition or an append; `<route> <status>`: the first answer of an exchange. */
  byRoute: Record<string, number>;
  /** `GET /watch` streams opened (and closed at once). */
  watches: number;
  violations: string[];
  ms: number;
  /** Exchanges that got fewer answers than requests and no close within 10 s. */
  timeouts?: number;
  lastTimeout?: string;
}

class Gen {
  /** Versions this worker read back (ETags of its objects), so conditions sometimes hold. */
  readonly versions: number[] = [];
  /** The last version read of each of this worker's objects, by path. */
  readonly versionOf = new Map<string, number>();
  /** The version of the object the request being built names, when known. */
  current: number | undefined;
  constructor(readonly r: () => number) {}
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  /** A version to condition on: mostly the named object's own (the condition holds), else another or a made-up one. */
  version(): number {
    if (this.current !== undefined && this.chance(0.5)) return this.current;
    return this.versions.length > 0 && this.chance(0.5) ? this.pick(this.versions) : this.pick([0, 1, 2, 50, 9007199254740991]);
  }
}

const NAMESPACES = ['tables', 'records', 'table', 'variants', 'locks', 'lists', 'list', 'sets', 'set', 'zsets', 'zset', 'number', 'text'] as const;
type Ns = (typeof NAMESPACES)[number];

const ODD_SEGMENTS = [
  '%',
  '%zz',
  '%00',
  '%2F',
  '%2e%2e',
  '..',
  '.',
  '%C0%AF',
  '%F0%9F%98%80',
  '%E2%98',
  '%FF',
  '%20',
  '%7F',
  'a%2Fb',
  '%25',
  'é',
  '\u00ff',
  'x'.repeat(256),
  'y'.repeat(300),
  '%41'.repeat(90),
  '*',
  '~',
  '$',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  '%5F%5Fproto%5F%5F',
];
const METHODS = ['GET', 'PUT', 'POST', 'PATCH', 'DELETE'];
/** One row by t_id (docs/api.md "One row by `t_id`"): mostly rows that may exist, and every malformed form. */
const ROW_IDS = ['1', '2', '3', '1', '2', '0', '-1', '1.5', '1e2', '01', '+1', 'abc', '%31', '%20', '', '9007199254740992', '9'.repeat(40)];
// No HEAD: its answer has a Content-Length but no body, which this reader cannot frame.
const ODD_METHODS = ['OPTIONS', 'TRACE', 'get', 'put', 'Post', 'FOO', 'PROPFIND', 'M-SEARCH', 'LINK', 'PURGE', 'QUERY'];
const OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$nope', '$and', '$or', '$not', '$regex'];

/** Bodies each endpoint takes: field name → a generator of a valid value. */
function validValue(g: Gen, field: string): unknown {
  switch (field) {
    case 'ttl':
      return g.pick([0, 3600, 86400, 2147483647]);
    case 'lockttl':
      return g.pick([3600, 86400]);
    case 'rows':
    case 'record':
    case 'table':
    case 'sets':
      return randObject(g, 2);
    case 'unset':
      return g.chance(0.8) ? Array.from({ length: g.int(3) }, () => g.pick(['a', 'b', 'k', '__proto__', ''])) : g.pick(WRONG);
    case 'if_version':
      return g.version();
    case 'wheres':
      return g.chance(0.3) ? {} : { [g.pick(['a', 'b', 'k'])]: g.chance(0.5) ? randScalar(g) : { [g.pick(OPERATORS)]: randValue(g, 1) } };
    case 'variant':
      return g.chance(0.5) ? g.int(1000) - 500 : g.pick(['s', 'text', 'é']);
    case 'delta':
      return g.int(20) - 10;
    case 'column':
      return g.pick(['a', 'b', 'nope']);
    case 'holder':
      return g.pick(['me', 'you', 'h'.repeat(255)]);
    case 'token':
      return g.pick(['x', 'abc', '']);
    // lists: short waits only, so a blocking pop never holds a worker for long
    case 'list':
    case 'values':
      return Array.from({ length: g.int(4) }, () => randValue(g, 1));
    case 'side':
    case 'to_side':
      return g.pick(['left', 'right', 'middle']);
    case 'count':
      return g.pick([1, 2, 1000, 0, 1001]);
    case 'wait_ms':
      return g.pick([0, 0, 20]);
    case 'to':
      return g.pick(['a', 'b', '..', '']);
    case 'set':
      return { index: listIndex(g), value: randValue(g, 1) };
    case 'trim':
      return { start: listIndex(g), stop: listIndex(g) };
    case 'remove':
      return { value: randScalar(g), count: g.chance(0.9) ? g.int(5) - 2 : g.pick(HUGE_INDEXES) };
    // sets and sorted sets: members from a small pool, so adds, removes and combines meet
    case 'members':
      return Array.from({ length: g.int(4) }, () => g.pick(MEMBERS));
    case 'setbody':
      return g.chance(0.5)
        ? Array.from({ length: g.int(4) }, () => g.pick(MEMBERS))
        : Object.fromEntries(Array.from({ length: g.int(3) }, () => [g.pick(MEMBERS), true]));
    case 'zmembers':
    case 'zset':
      return Object.fromEntries(Array.from({ length: g.int(4) }, () => [g.pick(MEMBERS), g.pick(SCORES)]));
    case 'member':
      return g.pick(MEMBERS);
    case 'zdelta':
      return g.pick(SCORES);
    case 'mode':
      return g.pick(['upsert', 'nx', 'xx', 'gt', 'lt', 'NX', '']);
    case 'create':
      return g.chance(0.7);
    case 'op':
      return g.pick(['union', 'inter', 'diff', 'xor']);
    case 'with':
      return Array.from({ length: g.int(3) }, () => g.pick(['a', 'b', 'c', '', '..']));
    case 'store':
      return g.pick(['a', 'b', 'c', '']);
    case 'number':
      return g.pick([0, 1, -5, 9007199254740991, 1.5]);
    case 'content':
    case 'append':
      return g.pick(['', 'x', 'é', '\u0000', 'abc'.repeat(50)]);
    case 'if_absent':
      return g.chance(0.5);
    default:
      return randValue(g, 2);
  }
}

/** Members every operation takes (the pool below adds over-long ones). */
const SHORT_MEMBERS = ['a', 'b', 'B', 'é', '', '\u0000', '__proto__'];

/** Indexes far past either end of any list, and ones a 32-bit or double conversion would wrap. */
const HUGE_INDEXES = [2147483648, -2147483649, 9007199254740991, -9007199254740991, 9007199254740993, 1e20, -1e20, 1.5, -0];

function listIndex(g: Gen): number {
  return g.chance(0.85) ? g.int(6) - 3 : g.pick(HUGE_INDEXES);
}

/** Set and sorted-set members: byte-order neighbours, the empty string, NUL, astral and over-long ones. */
const MEMBERS = ['a', 'b', 'B', 'é', '', '\u0000', '\ud83d\ude00', 'm'.repeat(4096), 'm'.repeat(4097), '__proto__', 'constructor'];
const SCORES: unknown[] = [0, 1, -1, 2.5, -0, 1e308, -1e308, 9007199254740993, '1', 'inf', '+inf', null];

const WRONG: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  -0.0,
  2147483648,
  9007199254740993,
  1e308,
  '1',
  '',
  'x'.repeat(300),
  [],
  [1, 2],
  {},
  { a: { b: { c: 1 } } },
];

function randScalar(g: Gen): unknown {
  return g.pick([null, true, false, 0, 1, -1, 3.25, 1e21, -1e-7, 9007199254740991, 'a', '', 'é', '\u0000', '\ud83d\ude00', 'k']);
}

function randValue(g: Gen, depth: number): unknown {
  if (depth <= 0 || g.chance(0.5)) return randScalar(g);
  if (g.chance(0.4)) return Array.from({ length: g.int(4) }, () => randValue(g, depth - 1));
  return randObject(g, depth - 1);
}

function randObject(g: Gen, depth: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const n = g.int(4);
  for (let i = 0; i < n; i++) o[g.pick(['a', 'b', 'k', 't_id', 'é', '', 'x y', '$eq', 'toString', 'valueOf'])] = randValue(g, depth);
  return o;
}

/** Fields of each endpoint (method + namespace + suffix). */
function fieldsFor(g: Gen, method: string, ns: Ns, suffix: string): string[] {
  if (ns === 'tables') {
    if (suffix === '/rows') return method === 'POST' ? ['rows'] : ['wheres'];
    if (suffix.startsWith('/rows/')) return method === 'PUT' ? ['rows', 'if_version'] : method === 'PATCH' ? ['sets', 'unset', 'if_version'] : ['if_version'];
    if (suffix === '/query') return ['wheres'];
    if (method === 'PATCH') return ['wheres', 'sets'];
    return ['ttl'];
  }
  if (ns === 'records') return method === 'POST' ? ['column'] : ['record', 'ttl'];
  if (ns === 'table') return ['table', 'ttl'];
  if (ns === 'variants') {
    // append is the other form of POST: mostly one or the other, sometimes both (a 400)
    if (method === 'POST') return g.pick([['delta'], ['append', 'if_version'], ['append'], ['delta', 'append'], ['delta', 'if_version']]);
    return method === 'PUT' ? ['variant', 'ttl', 'if_version', 'if_absent'] : ['variant', 'ttl'];
  }
  if (ns === 'lists') {
    if (suffix === '/push') return ['values', 'side', 'create', 'if_version'];
    if (suffix === '/pop') return ['side', 'count', 'wait_ms', 'to', 'to_side', 'if_version'];
    if (method === 'PATCH') return ['set', 'trim', 'remove', 'ttl', 'if_version'];
    if (method === 'DELETE') return ['if_version'];
    return ['list', 'ttl', 'if_version', 'if_absent'];
  }
  if (ns === 'list') return ['list', 'ttl', 'if_version', 'if_absent'];
  if (ns === 'sets' || ns === 'set') {
    if (suffix === '/add') return ['members', 'create', 'if_version'];
    if (suffix === '/remove') return ['members', 'if_version'];
    if (suffix === '/contains') return ['members'];
    if (suffix === '/combine') return ['op', 'with', 'store', 'if_version', 'if_absent'];
    if (method === 'PATCH' || method === 'DELETE') return method === 'PATCH' ? ['ttl', 'if_version'] : ['if_version'];
    return ['setbody', 'ttl', 'if_version', 'if_absent'];
  }
  if (ns === 'zsets' || ns === 'zset') {
    if (suffix === '/add') return ['zmembers', 'mode', 'create', 'if_version'];
    if (suffix === '/incr') return ['member', 'zdelta', 'create', 'if_version'];
    if (suffix === '/remove') return ['members', 'if_version'];
    if (method === 'PATCH' || method === 'DELETE') return method === 'PATCH' ? ['ttl', 'if_version'] : ['if_version'];
    return ['zset', 'ttl', 'if_version', 'if_absent'];
  }
  if (ns === 'number') return method === 'POST' ? ['delta'] : ['number', 'ttl', 'if_version', 'if_absent'];
  if (ns === 'text') return method === 'POST' ? ['append', 'if_version'] : ['content', 'ttl', 'if_version', 'if_absent'];
  return method === 'PUT' ? ['lockttl', 'holder'] : ['token', 'ttl'];
}

/** Generator names that stand for a field of another name (one name, several shapes). */
const FIELD_NAMES: Record<string, string> = { lockttl: 'ttl', setbody: 'set', zmembers: 'members', zdelta: 'delta' };

/** JSON text of a body: mostly the endpoint's fields, each valid, missing or of a wrong type. */
function structuredBody(g: Gen, method: string, ns: Ns, suffix: string): string {
  const parts: string[] = [];
  const sane = g.chance(0.25);
  for (const f of fieldsFor(g, method, ns, suffix)) {
    const name = FIELD_NAMES[f] ?? f;
    // One body in four has every field it sends valid, so conditions and appends also succeed.
    const roll = sane ? 0.15 + g.r() * 0.5 : g.r();
    if (roll < 0.15) continue;
    if (roll > 0.97) {
      parts.push(`${JSON.stringify(name)}:${g.pick(NOT_JSON_NUMBERS)}`);
      continue;
    }
    const v = roll < 0.65 ? validValue(g, f) : g.pick(WRONG);
    parts.push(`${JSON.stringify(name)}:${JSON.stringify(v)}`);
  }
  if (g.chance(0.1)) parts.push(`"__proto__":{"pwned":1}`);
  if (g.chance(0.1)) parts.push(`"constructor":{"prototype":{"pwned":1}}`);
  if (g.chance(0.05)) parts.push(`"rows":{"__proto__":{"pwned":1}}`);
  if (g.chance(0.05) && parts.length > 0) parts.push(parts[0]!); // duplicate key
  if (g.chance(0.05)) parts.push(`"n":${g.pick(['1e400', '-1e400', '123456789012345678901234567890', '0.0000000000000000000001', '-0', '1E5'])}`);
  if (g.chance(0.05)) parts.push(`"extra":${JSON.stringify(randValue(g, 3))}`);
  for (let i = parts.length - 1; i > 0; i--) {
    const j = g.int(i + 1);
    [parts[i], parts[j]] = [parts[j]!, parts[i]!];
  }
  return `{${parts.join(',')}}`;
}

/** Number spellings JSON does not have, and ones outside a double's range. */
const NOT_JSON_NUMBERS = ['NaN', 'Infinity', '-Infinity', '1e999', '-1e999', '0x10', '.5', '01', '+1', '1.', '-'];

function garbageBody(g: Gen): Buffer {
  switch (g.int(9)) {
    case 0:
      return Buffer.from(Array.from({ length: g.int(200) }, () => g.int(256)));
    case 1:
      return Buffer.from('['.repeat(1 + g.int(5000)));
    case 2: {
      const n = 60 + g.int(10);
      return Buffer.from(`{"record":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`);
    }
    case 3:
      return Buffer.from(g.pick(['', ' ', '\n', 'null', '[]', '"s"', '1', 'true', '{', '}', '{"a":}', '{"a":1,}', 'NaN', '{"a":1}{"b":2}']));
    case 4:
      return Buffer.concat([Buffer.from('{"record":{"s":"'), Buffer.from([0xff, 0xc0, 0xed, 0xa0, 0x80][g.int(5)]!.toString(16), 'hex'), Buffer.from('"}}')]);
    case 5:
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"record":{"bom":1}}')]);
    case 6:
      return Buffer.from(`{"record":{"s":"${'z'.repeat(g.int(70000))}"}}`);
    case 7:
      return Buffer.from(`{"__proto__":{"pwned":1},"record":{"__proto__":{"pwned":1},"constructor":{"prototype":{"pwned":1}}}}`);
    default:
      return Buffer.from(JSON.stringify(randValue(g, 4)));
  }
}

type Target = { ns: Ns; name: string };

/** A listing query the fuzzer can hold the answer to: its decoded prefix, limit and after. */
interface ListingQuery {
  prefix: string;
  limit: number;
  after?: string;
}

interface Built {
  bytes: Buffer;
  /** Method and the objects named, for the "refused changes nothing" check (a transaction names several). */
  method: string;
  targets: Target[];
  chunked: boolean;
  head: boolean;
  /** Framing the server may read differently from us: close the connection after it. */
  poison: boolean;
  /** A listing whose answer is checked (prefix, page size, byte order). */
  listing?: ListingQuery;
  /** The status the contract gives this request (a listing or a transaction sent whole, with the token). */
  expect?: { status: number; why: string };
}

const LISTINGS = ['lists', 'sets', 'zsets', 'tables', 'records', 'variants', 'locks'];
const BAD_LIMITS = ['0', '-1', '1001', '1.5', '1e2', 'abc', '', '9007199254740993', '%20', 'NaN', 'Infinity', '0x10'];
const UNKNOWN_PARAMS = ['cursor=x', 'page=2', 'offset=1', '__proto__=1', 'constructor=1', 'Limit=1', 'count=1'];

/** `GET /<kind>s?prefix=&limit=&after=`: mostly well-formed (answers checked), else bad values, unknown or doubled parameters. */
function listingRequest(g: Gen, names: string[]): { path: string; listing?: ListingQuery; expect?: { status: number; why: string } } {
  const params: string[] = [];
  const q: ListingQuery = { prefix: '', limit: 100 };
  let checkable = true;
  let expect: { status: number; why: string } | undefined;
  if (g.chance(0.6)) {
    q.prefix = g.pick(['w', names[0]!.slice(0, 2), names[0]!, '', 'é', '\ud83d\ude00', 'fresh', '+', ' ', 'x'.repeat(300), '__proto__']);
    params.push(`prefix=${encodeURIComponent(q.prefix)}`);
  }
  if (g.chance(0.6)) {
    if (g.chance(0.7)) {
      q.limit = g.pick([1, 2, 3, 100, 1000]);
      params.push(`limit=${q.limit}`);
    } else {
      const bad = g.pick(BAD_LIMITS);
      params.push(`limit=${bad}`);
      checkable = false;
      expect = { status: 400, why: `limit=${bad}` };
    }
  }
  if (g.chance(0.4)) {
    q.after = g.pick([...names, '', 'w', 'é', '\u0000', 'zzz', '\ud83d\ude00']);
    params.push(`after=${encodeURIComponent(q.after)}`);
  }
  if (g.chance(0.12)) {
    const u = g.pick(UNKNOWN_PARAMS);
    params.push(u);
    checkable = false;
    expect = { status: 400, why: `unknown parameter ${u}` };
  }
  if (g.chance(0.05)) {
    params.push(g.pick(['limit=1&limit=2', 'prefix=a&prefix=b', 'after', '=1', '&&', '%zz=1', 'prefix=%zz', 'prefix=%C0%AF', 'after=%FF']));
    checkable = false;
    expect = undefined;
  }
  for (let i = params.length - 1; i > 0; i--) {
    const j = g.int(i + 1);
    [params[i], params[j]] = [params[j]!, params[i]!];
  }
  const path = `/${g.pick(LISTINGS)}${params.length > 0 ? '?' + params.join('&') : g.chance(0.2) ? '?' : ''}`;
  return { path, listing: checkable ? q : undefined, expect: checkable ? { status: 200, why: 'a well-formed listing' } : expect };
}

/** A JSON object that may hold a real own `__proto__` key (JSON.stringify writes it; an object literal would set the prototype). */
function own(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

const TXN_NS: Record<string, Ns> = { list: 'lists', set: 'sets', zset: 'zsets', variant: 'variants', record: 'records', table: 'tables' };

/** One transaction mutation, over lists, sets and sorted sets mostly; valid, or with one field wrong. */
/** `malformed`: certainly a 400 (an unknown kind, operation or field); undefined: the answer depends on the state. */
function txnMutation(g: Gen, names: string[], targets: Target[], sane: boolean): { m: unknown; malformed: boolean | undefined } {
  if (!sane && g.chance(0.03)) return { m: g.pick(WRONG.filter((v) => typeof v !== 'object' || (Array.isArray(v) && v.length > 0))), malformed: true };
  const kind =
    sane || g.chance(0.95)
      ? g.pick(['list', 'list', 'set', 'set', 'zset', 'zset', 'variant', 'record', 'table'])
      : g.pick(['lock', 'LIST', 'Set', '', 7, null]);
  const name = sane || g.chance(0.93) ? g.pick(names) : g.pick(['', '__proto__', 'x'.repeat(300), 5, null, ['a']]);
  const knownKind = typeof kind === 'string' && TXN_NS[kind] !== undefined;
  let malformed: boolean | undefined;
  if (knownKind && typeof name === 'string' && names.includes(name)) targets.push({ ns: TXN_NS[kind]!, name });
  const m: Record<string, unknown> = { kind, name };
  switch (kind) {
    case 'list':
      if (g.chance(0.5))
        Object.assign(m, {
          operation: 'PUSH',
          values: [randValue(g, 1), ...(validValue(g, 'values') as unknown[])],
          side: g.pick(['left', 'right', undefined]),
        });
      else Object.assign(m, { operation: 'POP', side: g.pick(['left', 'right', undefined]), count: g.pick([1, 2, 1000, undefined]) });
      break;
    case 'set':
      Object.assign(m, { operation: g.pick(['ADD', 'REMOVE']), members: [g.pick(SHORT_MEMBERS), ...(sane ? [] : (validValue(g, 'members') as unknown[]))] });
      break;
    case 'zset': {
      const op = g.pick(['ADD', 'INCR', 'REMOVE']);
      const score = () => (g.chance(0.85) ? g.pick([0, 1, -1, 2.5, 1e308]) : g.pick(SCORES));
      if (op === 'ADD')
        Object.assign(m, {
          operation: op,
          members: { [g.pick(SHORT_MEMBERS)]: score() },
          mode: g.chance(0.5) ? g.pick(['upsert', 'nx', 'xx', 'gt', 'lt', 'NX']) : undefined,
        });
      else if (op === 'INCR') Object.assign(m, { operation: op, member: g.chance(0.9) ? g.pick(SHORT_MEMBERS) : g.pick(MEMBERS), delta: score() });
      else Object.assign(m, { operation: op, members: [g.pick(SHORT_MEMBERS), ...(sane ? [] : (validValue(g, 'members') as unknown[]))] });
      break;
    }
    case 'variant':
      if (g.chance(0.5)) Object.assign(m, { operation: 'ADD', delta: g.pick([1, -1, 2.5, 9007199254740991]) });
      else Object.assign(m, { operation: 'SET', variant: validValue(g, 'variant'), ttl: g.chance(0.3) ? validValue(g, 'ttl') : undefined });
      break;
    case 'record':
      if (g.chance(0.7)) Object.assign(m, { operation: 'PUT', values: randObject(g, 1) });
      else m.operation = 'DELETE';
      break;
    case 'table':
      Object.assign(
        m,
        g.pick([
          { operation: 'INSERT', values: { a: 1 } },
          { operation: 'UPDATE', where: {}, values: { b: 2 } },
          { operation: 'REMOVE', where: { a: 1 } },
        ]),
      );
      break;
    default:
      m.operation = g.pick(['PUSH', 'ADD', 'PUT']);
  }
  // One field wrong (the answer depends on the field), or a fault every kind refuses with a 400.
  const r = sane ? 1 : g.r();
  if (r < 0.08) {
    m[g.pick(['operation', 'values', 'members', 'count', 'side', 'delta', 'member', 'mode', 'name', 'kind'])] = g.pick(WRONG);
    malformed = false;
  } else if (r < 0.11) {
    // POP takes count 1-1000; no other mutation takes a count at all
    m.count = g.pick([0, 1001, 1e9, -1, 1.5, 2147483648]);
    malformed = true;
  } else if (r < 0.14) {
    m[g.pick(['extra', 'if_version', 'wait_ms', 'to', 'create'])] = g.pick([1, 'x', {}]);
    malformed = true;
  } else if (r < 0.16) {
    own(m, '__proto__', { pwned: 1 });
    malformed = true;
  } else if (r < 0.18) {
    m.operation = g.pick(['push', 'Pop', 'APPEND', '', 'LPUSH']);
    malformed = true;
  }
  if (!knownKind && malformed === undefined) malformed = true;
  return { m, malformed };
}

function txnCheck(g: Gen, names: string[], sane: boolean): unknown {
  const name = sane || g.chance(0.95) ? g.pick(names) : g.pick(['', 5, null]);
  const c: Record<string, unknown> = {
    kind: sane ? g.pick(['list', 'set', 'zset', 'variant', 'record', 'table']) : g.pick(['list', 'set', 'zset', 'variant', 'record', 'table', 'lock', 'nope']),
    name,
  };
  const where = () =>
    g.chance(0.5) ? g.int(4) : { [sane ? g.pick(['$eq', '$gte', '$lt', '$ne']) : g.pick(OPERATORS)]: sane || g.chance(0.8) ? g.int(4) : g.pick(WRONG) };
  switch (c.kind) {
    case 'list':
      if (g.chance(0.6)) c.length = where();
      if (g.chance(0.5)) c.exists = g.chance(0.5);
      break;
    case 'set':
      if (g.chance(0.5)) c.exists = g.chance(0.5);
      if (g.chance(0.5)) c.contains = g.pick(MEMBERS);
      if (g.chance(0.5)) c.count = where();
      break;
    case 'zset':
      if (g.chance(0.5)) c.exists = g.chance(0.5);
      if (g.chance(0.5)) Object.assign(c, { member: g.pick(MEMBERS), score: g.chance(0.5) ? g.pick(SCORES) : { $gte: 0 } });
      if (g.chance(0.5)) c.count = where();
      break;
    case 'record':
      if (g.chance(0.5)) c.version = g.versionOf.get(`/records/${String(name)}`) ?? g.version();
      else c.exists = g.chance(0.5);
      break;
    default:
      c.exists = g.chance(0.5);
  }
  if (sane) return c;
  if (g.chance(0.08)) c[g.pick(['length', 'count', 'exists', 'contains', 'member', 'score', 'extra', 'version'])] = g.pick(WRONG);
  if (g.chance(0.03)) own(c, '__proto__', { pwned: 1 });
  return c;
}

/** `POST /txns`: mutations and checks over lists, sets and sorted sets (and the older kinds), whole or broken at any level. */
function txnBody(g: Gen, names: string[], targets: Target[]): { text: string; malformed: boolean } {
  const roll = g.r();
  const mutations: unknown[] = [];
  let malformed = false;
  // One transaction in three is well-formed throughout, so that some get past parsing to their checks and writes.
  const sane = g.chance(0.33);
  const n = sane ? 1 + g.int(4) : roll < 0.015 ? 1001 : roll < 0.03 ? 0 : 1 + g.int(4);
  for (let i = 0; i < n; i++) {
    const r = txnMutation(g, names, targets, sane);
    mutations.push(r.m);
    if (r.malformed === true) malformed = true;
  }
  if (n > 1000) malformed = true;
  const body: Record<string, unknown> = { mutations };
  if (g.chance(0.5)) body.checks = Array.from({ length: roll > 0.985 ? 1001 : g.int(3) }, () => txnCheck(g, names, sane));
  if (roll > 0.985 && body.checks !== undefined) malformed = true;
  if (g.chance(0.1)) body.serializable = g.chance(0.8) ? g.chance(0.5) : g.pick(['yes', 1, null, {}]);
  const r = sane ? 1 : g.r();
  if (r < 0.05) body.mutations = g.pick(WRONG.filter((v) => !(Array.isArray(v) && v.length === 0)));
  else if (r < 0.08) body.checks = g.pick(WRONG.filter((v) => !Array.isArray(v) && v !== null));
  else if (r < 0.1) body[g.pick(['mutation', 'extra', 'if_version', 'kind'])] = 1;
  else if (r < 0.12) own(body, '__proto__', { pwned: 1 });
  else if (r < 0.13) body.mutations = [deep(80)];
  if (r < 0.13) malformed = true;
  return { text: JSON.stringify(body), malformed };
}

function deep(n: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = { kind: 'list', values: [v] };
  return v;
}

function buildRequest(g: Gen, token: string, names: string[]): Built {
  let method = g.chance(0.9) ? g.pick(METHODS) : g.pick(ODD_METHODS);
  g.current = undefined;
  let path: string;
  const targets: Target[] = [];
  let listing: ListingQuery | undefined;
  let expect: Built['expect'];
  let txn: { text: string; malformed: boolean } | undefined;
  let listingReq = false;
  const ns = g.pick(NAMESPACES);
  let suffix = '';
  const roll = g.r();
  if (roll < 0.7) {
    const name = g.pick(names);
    targets.push({ ns, name });
    g.current = g.versionOf.get(snapshotPath(ns, name));
    if (ns === 'tables' && g.chance(0.5)) suffix = g.pick(['/rows', '/query', `/rows/${g.pick(ROW_IDS)}`]);
    if (ns === 'lists' && g.chance(0.5)) suffix = g.pick(['/push', '/pop']);
    if (ns === 'sets' && g.chance(0.5)) suffix = g.pick(['/add', '/remove', '/contains', '/combine']);
    if (ns === 'zsets' && g.chance(0.5)) suffix = g.pick(['/add', '/incr', '/remove', `/members/${encodeURIComponent(g.pick(MEMBERS))}`, '/members/']);
    path = `/${ns}/${encodeURIComponent(name)}${suffix}`;
    if (method === 'GET' && suffix === '' && g.chance(0.3)) path += '?' + objectQuery(g, ns);
  } else if (roll < 0.82) {
    path = `/${ns}/${g.pick(ODD_SEGMENTS)}${g.chance(0.2) ? g.pick(['/rows', '/query', '/x', '/', '//']) : ''}`;
  } else if (roll < 0.87) {
    listingReq = true;
    if (g.chance(0.9)) method = 'GET';
    ({ path, listing, expect } = listingRequest(g, names));
  } else if (roll < 0.93) {
    if (g.chance(0.92)) method = 'POST';
    path = '/txns';
    if (g.chance(0.03)) {
      path += '?' + g.pick(['serializable=true', 'x=1', 'mutations=1']);
      expect = { status: 400, why: 'a query parameter on /txns' };
    }
    txn = txnBody(g, names, targets);
    // Three snapshots at most per exchange: the first objects the transaction names.
    const seen = new Set<string>();
    const distinct = targets.filter((t) => !seen.has(t.ns + '/' + t.name) && seen.add(t.ns + '/' + t.name));
    targets.splice(0, targets.length, ...distinct.slice(0, 3));
  } else {
    path = g.pick([
      '/',
      '/health',
      '/health/',
      '//health',
      '/tables',
      '/tables/',
      '/_test/clock',
      '*',
      '/%',
      '/tables/a?x=1',
      '/records/a#f',
      `/${'p'.repeat(5000)}`,
      '/records/a/b/c',
      'http://x/health',
      '/TABLES/a',
      '/txns/',
      '/txns/x',
      '/lists/',
      '/watch/x',
    ]);
  }
  if (g.chance(0.03)) {
    path += (path.includes('?') ? '&' : '?') + g.pick(['a=1', '%zz', 'x'.repeat(100)]);
    listing = undefined;
    expect = undefined;
  }
  let body: Buffer | undefined;
  // A listing takes no body: one in ten carries one anyway.
  if (listingReq ? g.chance(0.1) : txn !== undefined ? g.chance(0.97) : g.chance(0.8)) {
    if (txn !== undefined && g.chance(0.93)) body = Buffer.from(txn.text);
    else if (txn !== undefined) body = txnGarbage(g, names);
    else if (g.chance(0.8)) body = Buffer.from(structuredBody(g, method.toUpperCase(), ns, suffix));
    else body = garbageBody(g);
  }
  if (txn !== undefined && expect === undefined && body !== undefined && txn.malformed && body.toString() === txn.text) {
    expect = { status: 400, why: 'a malformed transaction' };
  }
  if (listingReq && body !== undefined) expect = undefined;
  const headers: string[] = [];
  if (!g.chance(0.02)) headers.push('Host: 127.0.0.1');
  const t = g.r();
  if (t < 0.92) headers.push(`Auth-Token: ${token}`);
  else if (t < 0.96) headers.push(`Auth-Token: ${g.pick(['wrong', '', token + 'x', token.toUpperCase()])}`);
  else expect = undefined;
  if (t >= 0.92) expect = undefined;
  if (method !== 'GET' && listingReq) expect = undefined;
  if (method !== 'POST' && txn !== undefined) expect = undefined;
  if (targets.length > 0 && g.chance(0.08)) {
    const v = g.chance(0.6) ? `"${g.version()}"` : g.pick(['*', '"1", "2"', 'W/"1"', '1', '""', '"-1"', '"abc"', '"9007199254740993"', '"0"']);
    headers.push(g.chance(0.6) ? `If-Match: ${v}` : `If-None-Match: ${g.pick(['*', '*', v, '', 'x'])}`);
  }
  if (g.chance(0.3))
    headers.push(
      `Content-Type: ${g.pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1'])}`,
    );
  if (g.chance(0.02)) headers.push('Expect: 100-continue');
  if (g.chance(0.01)) headers.push(`Expect: ${g.pick(['foo', '200-ok', ''])}`);
  if (g.chance(0.03)) headers.push('Connection: close');
  if (g.chance(0.005)) headers.push('Connection: Upgrade', 'Upgrade: websocket');
  if (g.chance(0.005)) headers.push(`X-Big: ${'b'.repeat(17000)}`);
  if (g.chance(0.02)) headers.push(`X-${g.int(100)}: ${g.pick(['\u00e9', 'a\tb', ' lead', 'trail ', '"q"'])}`);
  // Headers that change how a request is read or answered make no promise about the status.
  if (headers.some((h) => /^(Expect|Upgrade|X-Big|Content-Type: (?!application\/json$))/.test(h)) || !headers.some((h) => h.startsWith('Host:')))
    expect = undefined;
  let chunked = false;
  let poison = false;
  let bodyBytes = body ?? Buffer.alloc(0);
  if (body !== undefined) {
    const f = g.r();
    if (f < 0.15) {
      chunked = true;
      headers.push('Transfer-Encoding: chunked');
      const parts: Buffer[] = [];
      let at = 0;
      while (at < body.length) {
        const n = Math.min(body.length - at, 1 + g.int(64));
        parts.push(Buffer.from(`${n.toString(16)}${g.chance(0.05) ? ';ext=1' : ''}\r\n`), body.subarray(at, at + n), Buffer.from('\r\n'));
        at += n;
      }
      parts.push(Buffer.from('0\r\n\r\n'));
      bodyBytes = Buffer.concat(parts);
    } else if (f < 0.19) {
      poison = true;
      if (f < 0.17) headers.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`);
      else if (f < 0.18) headers.push(`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked');
      else headers.push(`Content-Length: ${g.pick(['-1', 'abc', '1e3', ` ${body.length}`, '99999999999999999999'])}`);
    } else {
      headers.push(`Content-Length: ${body.length}`);
    }
  }
  const head = Buffer.from(`${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`, 'latin1');
  if (poison) expect = undefined;
  return {
    bytes: Buffer.concat([head, bodyBytes]),
    method,
    targets,
    chunked,
    head: method === 'HEAD',
    poison,
    listing: method === 'GET' ? listing : undefined,
    expect,
  };
}

/** Query parameters of one object's GET: list ranges, set pages, sorted-set ranges by rank or score; valid and not. */
function objectQuery(g: Gen, ns: Ns): string {
  const idx = () => String(g.chance(0.8) ? g.int(8) - 4 : g.pick([...HUGE_INDEXES, 'x', '', '1e2', 'NaN']));
  switch (ns) {
    case 'lists':
      return `start=${idx()}&stop=${idx()}`;
    case 'sets':
      return g.pick([`limit=${g.pick([1, 2, 1000, 0, 1001, 'x'])}`, `after=${encodeURIComponent(g.pick(MEMBERS))}`, `limit=2&after=a`, 'cursor=1']);
    case 'zsets':
      return g.pick([
        `start=${idx()}&stop=${idx()}`,
        `by=score&min=${encodeURIComponent(g.pick(['-inf', '(1', '0', 'x', '(', 'NaN', '1e999']))}&max=${encodeURIComponent(g.pick(['+inf', '(2', '2.5', 'inf', '']))}`,
        `by=score&offset=${g.pick([0, 1, -1, 'x'])}&limit=${g.pick([1, 0, 1000, -1])}`,
        `rev=${g.pick(['true', 'false', 'yes'])}`,
        `by=${g.pick(['rank', 'lex', ''])}`,
      ]);
    default:
      return g.pick(['a=1', 'limit=1', 'start=0']);
  }
}

/** A transaction body that is not JSON a parser would take: invalid UTF-8 in a member, non-finite scores, truncation. */
function txnGarbage(g: Gen, names: string[]): Buffer {
  const name = JSON.stringify(g.pick(names));
  switch (g.int(4)) {
    case 0:
      return Buffer.concat([
        Buffer.from(`{"mutations":[{"kind":"set","name":${name},"operation":"ADD","members":["`),
        Buffer.from([g.pick([0xff, 0xc0, 0xed, 0x80])]),
        Buffer.from('"]}]}'),
      ]);
    case 1:
      return Buffer.from(`{"mutations":[{"kind":"zset","name":${name},"operation":"ADD","members":{"a":${g.pick(NOT_JSON_NUMBERS)}}}]}`);
    case 2:
      return Buffer.from(`{"mutations":[{"kind":"list","name":${name},"operation":"POP","count":${g.pick(NOT_JSON_NUMBERS)}}]}`);
    default:
      return Buffer.from(`{"mutations":[{"kind":"list","name":${name},"operation":"PUSH","values":[1,2`);
  }
}

const JSON_CT = 'application/json; charset=utf-8';

function checkAnswer(a: RawAnswer, head: boolean): string | undefined {
  if (a.status >= 500 && a.status !== 507) return `status ${a.status}: ${a.body.slice(0, 200)}`;
  if (a.headers['content-type'] !== JSON_CT) return `content-type ${a.headers['content-type']} on ${a.status}`;
  if (head) return undefined;
  const j = a.json as Record<string, unknown> | undefined;
  if (j === undefined || typeof j !== 'object' || j === null || Array.isArray(j)) return `not a JSON object (${a.status}): ${a.body.slice(0, 200)}`;
  const keys = Object.keys(j).sort().join(',');
  if (j.status === 'success') {
    if (a.status >= 400) return `success envelope with ${a.status}`;
    if (keys !== 'message,status' && keys !== 'data,message,status') return `envelope keys ${keys}`;
  } else if (j.status === 'error') {
    if (a.status < 400) return `error envelope with ${a.status}`;
    if (keys !== 'message,status') return `error envelope keys ${keys}`;
  } else {
    return `envelope status ${String(j.status)}`;
  }
  if (typeof j.message !== 'string' || j.message.length === 0) return 'empty message';
  const p = polluted(j, false);
  if (p) return `inherited field '${p}' in ${a.body.slice(0, 200)}`;
  return undefined;
}

/** A "pwned" key not inside a __proto__/constructor/prototype key sent as data would come from a polluted prototype. */
function polluted(v: unknown, underSent: boolean): string | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k === 'pwned' && !underSent) return k;
    const r = polluted(x, underSent || k === '__proto__' || k === 'constructor' || k === 'prototype');
    if (r) return r;
  }
  return undefined;
}

/** One keep-alive raw connection; requests are written and answers read in order. */
class Conn {
  sock: net.Socket | null = null;
  buf: Buffer = Buffer.alloc(0);
  closed = true;
  static timeouts = 0;
  static lastTimeout = '';
  waiter: (() => void) | null = null;

  constructor(
    readonly port: number,
    readonly tlsCa?: string,
  ) {}

  async open(): Promise<void> {
    this.buf = Buffer.alloc(0);
    const s = this.tlsCa === undefined ? net.connect(this.port, '127.0.0.1') : tls.connect({ port: this.port, host: '127.0.0.1', ca: this.tlsCa });
    this.sock = s;
    this.closed = false;
    s.on('data', (d: Buffer) => {
      if (this.sock !== s) return;
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      this.waiter?.();
    });
    s.on('error', () => {});
    // The server half-closes (FIN) right after its last answer, then lingers.
    // Events of a previous socket must not touch this one's state.
    const gone = () => {
      if (this.sock !== s) return;
      this.closed = true;
      this.waiter?.();
    };
    s.on('end', gone);
    s.on('close', gone);
    await new Promise<void>((r) => {
      s.once(this.tlsCa === undefined ? 'connect' : 'secureConnect', () => r());
      s.once('close', () => r());
    });
  }

  /** Sends bytes, waits until `n` final answers or the close (or a timeout). */
  async send(bytes: Buffer, n: number, timeoutMs: number): Promise<{ answers: RawAnswer[]; closed: boolean }> {
    if (this.closed) await this.open();
    this.buf = Buffer.alloc(0);
    this.sock!.write(bytes);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { answers } = parseAnswers(this.buf);
      const finals = answers.filter((a) => a.status !== 100);
      if (finals.length >= n || this.closed || Date.now() > deadline) {
        if (finals.length < n && !this.closed) {
          Conn.timeouts++;
          Conn.lastTimeout = bytes.toString('latin1');
          this.close();
        }
        return { answers: finals, closed: this.closed };
      }
      await new Promise<void>((r) => {
        this.waiter = r;
        setTimeout(r, 200);
      });
      this.waiter = null;
    }
  }

  close(): void {
    this.sock?.destroy();
    this.sock = null;
    this.closed = true;
  }
}

function snapshotPath(ns: Ns, name: string): string {
  return `/${ns}/${encodeURIComponent(name)}`;
}

function stable(a: RawAnswer | undefined): string {
  if (a === undefined) return 'none';
  const j = a.json as { data?: Record<string, unknown> } | undefined;
  if (j?.data && typeof j.data === 'object') {
    const d = { ...j.data };
    delete d.expires_in_ms; // a lock's countdown moves on its own
    return `${a.status} ${JSON.stringify(d)}`;
  }
  return `${a.status} ${a.body}`;
}

/** Which of the routes and conditions a request reached, for the summary. */
function routeKinds(r: Built): string[] {
  const text = r.bytes.subarray(0, 4096).toString('latin1');
  const line = text.slice(0, text.indexOf('\r\n'));
  const out: string[] = [];
  if (/^\S+ \/txns[ ?]/.test(line)) out.push('txns');
  if (/^\S+ \/(lists|sets|zsets|tables|records|variants|locks)[ ?]/.test(line)) out.push('listing');
  if (/\r\nIf-Match:/.test(text)) out.push('If-Match');
  if (/\r\nIf-None-Match:/.test(text)) out.push('If-None-Match');
  if (text.includes('"if_version":')) out.push('if_version');
  if (text.includes('"append":')) out.push('append');
  return out;
}

/** The status the contract gives, and a listing page's shape: prefix, page size, byte order, the cursor. */
function checkExpected(a: RawAnswer, r: Built): string | undefined {
  // 503 and 507 are the server's state (the connection cap, a full disk), not a reading of the request.
  if (a.status === 503 || a.status === 507) return undefined;
  if (r.expect !== undefined && a.status >= 400 !== r.expect.status >= 400)
    return `${r.expect.why} answered ${a.status} (expected ${r.expect.status}): ${a.body.slice(0, 200)}`;
  const q = r.listing;
  if (q === undefined || a.status !== 200) return undefined;
  const d = (a.json as { data?: { items?: unknown; next?: unknown } }).data;
  if (d === undefined || !Array.isArray(d.items)) return `listing without items: ${a.body.slice(0, 200)}`;
  const names = d.items.map((x) => (x as { name?: unknown }).name);
  if (names.some((n) => typeof n !== 'string')) return `listing item without a name: ${a.body.slice(0, 200)}`;
  const ns = names as string[];
  if (ns.length > q.limit) return `listing of ${ns.length} items with limit ${q.limit}`;
  const wrong = ns.find((n) => !n.startsWith(q.prefix));
  if (wrong !== undefined) return `listing with prefix ${JSON.stringify(q.prefix)} has ${JSON.stringify(wrong)}`;
  if (q.after !== undefined) {
    const early = ns.find((n) => byteOrder(n, q.after!) <= 0);
    if (early !== undefined) return `listing after ${JSON.stringify(q.after)} has ${JSON.stringify(early)}`;
  }
  for (let i = 1; i < ns.length; i++)
    if (byteOrder(ns[i - 1]!, ns[i]!) >= 0) return `listing out of byte order: ${JSON.stringify(ns[i - 1])} before ${JSON.stringify(ns[i])}`;
  if (d.next !== null && d.next !== ns[ns.length - 1]) return `listing next ${JSON.stringify(d.next)} is not its last name`;
  if (d.next !== null && ns.length < q.limit) return `listing of ${ns.length} < limit ${q.limit} items has next ${JSON.stringify(d.next)}`;
  return undefined;
}

const WATCH_KINDS = ['table', 'record', 'variant', 'lock', 'list', 'set', 'zset'];

/**
 * Opens `GET /watch` on a connection of its own, with good and bad query parameters, and closes it as
 * soon as the stream has started (`: watching`) or the refusal has arrived: a stream must start, or a
 * refusal be the envelope, within 10 s.
 */
async function watchOnce(g: Gen, o: FuzzOptions, names: string[]): Promise<string | undefined> {
  const params: string[] = [];
  // valid: a stream must start; invalid: a 400; undefined: either may be right.
  let valid = true as boolean | undefined;
  const refuse = () => {
    if (valid === true) valid = false;
  };
  let sinceBad = false;
  for (let i = g.int(4); i > 0; i--) {
    const p = g.r();
    if (p < 0.35)
      params.push(`kind=${g.chance(0.85) ? g.pick(WATCH_KINDS) : (refuse(), g.pick(['tables', 'LIST', '', 'row', '__proto__', 'constructor', 'toString']))}`);
    else if (p < 0.55) params.push(`prefix=${encodeURIComponent(g.pick([...names, '', 'w', 'é', '%']))}`);
    else if (p < 0.7) {
      // The last since is the one read.
      sinceBad = g.chance(0.3);
      params.push(
        `since=${sinceBad ? g.pick(['-1', 'x', '1.5', '', '1e3', '99999999999999999999']) : g.pick(['0', '1', String(g.versions[0] ?? 5), '9007199254740991'])}`,
      );
    }
    // The server also takes 1, 0 and an empty value for values.
    else if (p < 0.85) params.push(`values=${g.chance(0.8) ? g.pick(['true', 'false', '1', '0', '']) : (refuse(), g.pick(['yes', 'TRUE', '2']))}`);
    else {
      params.push(g.pick(['kinds=record', 'x=1', '__proto__=1', 'Kind=list', 'limit=1', '%zz=1']));
      refuse();
    }
  }
  if (sinceBad) refuse();
  const headers = ['Host: 127.0.0.1'];
  const authed = g.chance(0.95);
  headers.push(`Auth-Token: ${authed ? o.token : 'wrong'}`);
  if (g.chance(0.15)) {
    const id = g.pick(['1', '1:0', '0', String(g.versions[0] ?? 3), '9007199254740991', 'abc', '-1', '1:x', ' ', '1:0:0', '1:-1']);
    headers.push(`Last-Event-ID: ${id}`);
    // It wins over since: whether the request is refused is the id's to say.
    if (valid === false || !/^\d{1,16}(:\d{1,9})?$/.test(id.trim())) valid = undefined;
  }
  let body = '';
  if (g.chance(0.1)) {
    body = g.pick(['{}', '{"kind":"list"}', 'x', '{"__proto__":{"pwned":1}}']);
    headers.push(`Content-Length: ${body.length}`);
    valid = undefined;
  }
  const path = `/watch${params.length > 0 ? '?' + params.join('&') : ''}`;
  const req = `GET ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${body}`;
  const sock = o.tlsCa === undefined ? net.connect(o.port, '127.0.0.1') : tls.connect({ port: o.port, host: '127.0.0.1', ca: o.tlsCa });
  const chunks: Buffer[] = [];
  const outcome = await new Promise<{ data: Buffer; closed: boolean; timedOut: boolean }>((resolve) => {
    let done = false;
    const finish = (closed: boolean, timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ data: Buffer.concat(chunks), closed, timedOut });
    };
    const timer = setTimeout(() => finish(false, true), 10_000);
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      const all = Buffer.concat(chunks);
      const text = all.toString('latin1');
      if (/^HTTP\/1\.1 200/.test(text) ? text.includes(': watching') : parseAnswers(all).answers.some((a) => a.status !== 100)) finish(false, false);
    });
    sock.on('error', () => finish(true, false));
    sock.on('close', () => finish(true, false));
    sock.write(req);
  });
  const what = `watch ${JSON.stringify(req.slice(0, 300))}`;
  const text = outcome.data.toString('latin1');
  if (outcome.data.length === 0) return outcome.timedOut ? `${what}: no answer in 10 s` : undefined;
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  if (status === 200) {
    if (!/\r\ncontent-type: text\/event-stream/i.test(text)) return `${what}: 200 without text/event-stream: ${text.slice(0, 300)}`;
    if (!text.includes(': watching')) return `${what}: the stream did not start within 10 s`;
    if (valid === false || !authed) return `${what}: answered 200`;
    return undefined;
  }
  const a = parseAnswers(outcome.data).answers.find((x) => x.status !== 100);
  if (a === undefined) return outcome.timedOut ? `${what}: incomplete answer in 10 s: ${text.slice(0, 300)}` : undefined;
  const bad = checkAnswer(a, false);
  if (bad !== undefined) return `${what}: ${bad}`;
  if (valid === true && authed && a.status !== 503) return `${what}: refused ${a.status} ${a.body.slice(0, 200)}`;
  return undefined;
}

export async function fuzz(o: FuzzOptions): Promise<FuzzReport> {
  const t0 = Date.now();
  const report: FuzzReport = {
    seed: o.seed,
    requests: 0,
    answers: 0,
    pipelined: 0,
    chunked: 0,
    checkedRefusals: 0,
    byStatus: {},
    byNamespace: {},
    byRoute: {},
    watches: 0,
    violations: [],
    ms: 0,
  };
  const workers = o.workers ?? 4;
  const get = (name: string, path: string) => Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuth-Token: ${o.token}\r\n\r\n`);
  const violation = (s: string) => {
    if (report.violations.length < 50) report.violations.push(s);
  };
  let next = 0;
  let lastProgress = 0;
  const timeUp = () => o.timeLimitMs !== undefined && Date.now() - t0 > o.timeLimitMs;

  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const g = new Gen(rng(o.seed + w * 7919));
      const names = [`w${w}a`, `w${w}b`, `w${w}c`];
      const conn = new Conn(o.port, o.tlsCa);
      const check = new Conn(o.port, o.tlsCa);
      let fresh = 0;
      const recent: string[] = [];
      while (report.requests < o.requests && !timeUp()) {
        next++;
        const pipelined = g.chance(0.1);
        const reqs: Built[] = [];
        const count = pipelined ? 2 + g.int(4) : 1;
        for (let i = 0; i < count; i++) reqs.push(buildRequest(g, o.token, names));
        const one = reqs[0]!;
        const snapshot = async (t: Target): Promise<string> => {
          const s = await check.send(get(t.name, snapshotPath(t.ns, t.name)), 1, 5000);
          const v = /^"(\d+)"$/.exec(s.answers[0]?.headers.etag ?? '');
          if (v !== null) g.versionOf.set(snapshotPath(t.ns, t.name), Number(v[1]));
          else if (s.answers[0]?.status === 404) g.versionOf.delete(snapshotPath(t.ns, t.name));
          if (v !== null && !g.versions.includes(Number(v[1]))) {
            g.versions.push(Number(v[1]));
            if (g.versions.length > 8) g.versions.shift();
          }
          return stable(s.answers[0]);
        };
        const before: string[] = [];
        if (!pipelined) for (const t of one.targets) before.push(await snapshot(t));
        const res = await conn.send(Buffer.concat(reqs.map((r) => r.bytes)), count, 10_000);
        report.requests += count;
        recent.push(
          `${JSON.stringify(
            Buffer.concat(reqs.map((r) => r.bytes))
              .subarray(0, 600)
              .toString('latin1'),
          )} -> ${res.answers.map((a) => a.status).join(',')}${res.closed ? ' closed' : ''}`,
        );
        if (recent.length > 4) recent.shift();
        report.answers += res.answers.length;
        if (pipelined) report.pipelined += count;
        report.chunked += reqs.filter((r) => r.chunked).length;
        for (const r of reqs) for (const t of r.targets) report.byNamespace[t.ns] = (report.byNamespace[t.ns] ?? 0) + 1;
        for (const r of reqs) for (const k of routeKinds(r)) report.byRoute[k] = (report.byRoute[k] ?? 0) + 1;
        // How the first request's route answered: whether transactions and conditions get through, not only refused.
        if (res.answers.length > 0)
          for (const k of routeKinds(one)) report.byRoute[`${k} ${res.answers[0]!.status}`] = (report.byRoute[`${k} ${res.answers[0]!.status}`] ?? 0) + 1;
        for (let i = 0; i < res.answers.length; i++) {
          const a = res.answers[i]!;
          const r = reqs[i];
          report.byStatus[a.status] = (report.byStatus[a.status] ?? 0) + 1;
          // After the first request of a pipeline, what an answer belongs to depends on how the ones before it were framed.
          const bad = checkAnswer(a, r?.head ?? false) ?? (r !== undefined && i === 0 ? checkExpected(a, r) : undefined);
          if (bad) violation(`seed ${o.seed} worker ${w}: ${bad}\n  request: ${JSON.stringify(r?.bytes.subarray(0, 400).toString('latin1'))}`);
        }
        if (res.closed || reqs.some((r) => r.poison)) conn.close();
        if (before.length > 0 && res.answers.length === 1 && res.answers[0]!.status >= 400) {
          for (let i = 0; i < one.targets.length; i++) {
            const t = one.targets[i]!;
            const after = await snapshot(t);
            const b = before[i]!;
            // A snapshot without an answer (the connection was closed under it: the
            // server's connection cap evicts idle ones) tells nothing either way.
            if (b === 'none' || after === 'none') continue;
            report.checkedRefusals++;
            if (after !== b)
              violation(
                `seed ${o.seed} worker ${w}: refused request (${res.answers[0]!.status} ${res.answers[0]!.body.slice(0, 200)}) changed ${t.ns}/${t.name}\n  before ${b.slice(0, 300)}\n  after  ${after.slice(0, 300)}\n  request: ${JSON.stringify(one.bytes.subarray(0, 600).toString('latin1'))}\n  recent exchanges of this worker:\n    ${recent.join('\n    ')}`,
              );
          }
        }
        // A write that succeeded moved its object's version: read it again, so the next condition can hold.
        if (!pipelined && res.answers.length === 1 && res.answers[0]!.status < 300 && one.method !== 'GET') for (const t of one.targets) await snapshot(t);
        if (g.chance(0.01)) {
          report.watches++;
          const bad = await watchOnce(g, o, names);
          if (bad !== undefined) violation(`seed ${o.seed} worker ${w}: ${bad}`);
        }
        if (next % 500 < workers) {
          // Fresh objects read back empty: nothing was inherited from a polluted prototype.
          const n = `fresh${w}_${fresh++}`;
          const put = Buffer.from(`PUT /records/${n} HTTP/1.1\r\nHost: x\r\nAuth-Token: ${o.token}\r\nContent-Length: 13\r\n\r\n{"record":{}}`);
          // A create that got no answer, or a 503 (the connection cap evicted or refused the check
          // connection, as the TLS mode's attack makes it do), did not happen: only a created one is read back.
          const pr = await check.send(put, 1, 5000);
          if (pr.answers.length > 0 && pr.answers[0]!.status !== 503) {
            if (pr.answers[0]!.status !== 201) violation(`fresh record create answered ${pr.answers[0]!.body}`);
            const r = await check.send(get(n, `/records/${n}`), 1, 5000);
            if (r.answers.length > 0 && r.answers[0]!.body !== '{"status":"success","message":"record queried successfully","data":{}}')
              violation(`fresh record reads back ${r.answers[0]!.body}`);
          }
          const pt = await check.send(Buffer.from(`PUT /tables/${n} HTTP/1.1\r\nHost: x\r\nAuth-Token: ${o.token}\r\n\r\n`), 1, 5000);
          if (pt.answers.length > 0 && pt.answers[0]!.status !== 503) {
            if (pt.answers[0]!.status !== 201) violation(`fresh table create answered ${pt.answers[0]!.body}`);
            const tr = await check.send(get(n, `/tables/${n}`), 1, 5000);
            if (tr.answers.length > 0 && tr.answers[0]!.body !== '{"status":"success","message":"table queried successfully","data":{}}')
              violation(`fresh table reads back ${tr.answers[0]!.body}`);
          }
        }
        if (o.progress && next - lastProgress >= 10_000) {
          lastProgress = next;
          o.progress(report.requests);
        }
      }
      conn.close();
      check.close();
    }),
  );
  report.ms = Date.now() - t0;
  report.timeouts = Conn.timeouts;
  if (Conn.timeouts > 0) report.lastTimeout = Conn.lastTimeout;
  return report;
}
