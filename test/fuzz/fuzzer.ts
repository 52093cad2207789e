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
  violations: string[];
  ms: number;
  /** Exchanges that got fewer answers than requests and no close within 10 s. */
  timeouts?: number;
  lastTimeout?: string;
}

class Gen {
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
      return g.pick([0, 1, 2, 50, 9007199254740991]);
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
      return { index: g.int(6) - 3, value: randValue(g, 1) };
    case 'trim':
      return { start: g.int(6) - 3, stop: g.int(6) - 3 };
    case 'remove':
      return { value: randScalar(g), count: g.int(5) - 2 };
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
function fieldsFor(method: string, ns: Ns, suffix: string): string[] {
  if (ns === 'tables') {
    if (suffix === '/rows') return method === 'POST' ? ['rows'] : ['wheres'];
    if (suffix.startsWith('/rows/')) return method === 'PUT' ? ['rows', 'if_version'] : method === 'PATCH' ? ['sets', 'unset', 'if_version'] : ['if_version'];
    if (suffix === '/query') return ['wheres'];
    if (method === 'PATCH') return ['wheres', 'sets'];
    return ['ttl'];
  }
  if (ns === 'records') return method === 'POST' ? ['column'] : ['record', 'ttl'];
  if (ns === 'table') return ['table', 'ttl'];
  if (ns === 'variants') return method === 'POST' ? ['delta'] : ['variant', 'ttl'];
  if (ns === 'lists') {
    if (suffix === '/push') return ['values', 'side', 'create'];
    if (suffix === '/pop') return ['side', 'count', 'wait_ms', 'to', 'to_side'];
    return method === 'PATCH' ? ['set', 'trim', 'remove', 'ttl'] : ['list', 'ttl'];
  }
  if (ns === 'list') return ['list', 'ttl', 'if_version', 'if_absent'];
  if (ns === 'sets' || ns === 'set') {
    if (suffix === '/add') return ['members', 'create', 'if_version'];
    if (suffix === '/remove') return ['members', 'if_version'];
    if (suffix === '/contains') return ['members'];
    if (suffix === '/combine') return ['op', 'with', 'store'];
    return method === 'PATCH' ? ['ttl'] : ['setbody', 'ttl', 'if_version', 'if_absent'];
  }
  if (ns === 'zsets' || ns === 'zset') {
    if (suffix === '/add') return ['zmembers', 'mode', 'create', 'if_version'];
    if (suffix === '/incr') return ['member', 'zdelta', 'create', 'if_version'];
    if (suffix === '/remove') return ['members', 'if_version'];
    return method === 'PATCH' ? ['ttl'] : ['zset', 'ttl', 'if_version', 'if_absent'];
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
  for (const f of fieldsFor(method, ns, suffix)) {
    const name = FIELD_NAMES[f] ?? f;
    const roll = g.r();
    if (roll < 0.15) continue;
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

interface Built {
  bytes: Buffer;
  /** Method and namespace target, for the "refused changes nothing" check. */
  method: string;
  target?: { ns: Ns; name: string };
  chunked: boolean;
  head: boolean;
  /** Framing the server may read differently from us: close the connection after it. */
  poison: boolean;
}

function buildRequest(g: Gen, token: string, names: string[]): Built {
  const method = g.chance(0.9) ? g.pick(METHODS) : g.pick(ODD_METHODS);
  let path: string;
  let target: Built['target'];
  const ns = g.pick(NAMESPACES);
  let suffix = '';
  const roll = g.r();
  if (roll < 0.75) {
    const name = g.pick(names);
    target = { ns, name };
    if (ns === 'tables' && g.chance(0.5)) suffix = g.pick(['/rows', '/query', `/rows/${g.pick(ROW_IDS)}`]);
    if (ns === 'lists' && g.chance(0.5)) suffix = g.pick(['/push', '/pop']);
    if (ns === 'sets' && g.chance(0.5)) suffix = g.pick(['/add', '/remove', '/contains', '/combine']);
    if (ns === 'zsets' && g.chance(0.5)) suffix = g.pick(['/add', '/incr', '/remove', `/members/${encodeURIComponent(g.pick(MEMBERS))}`, '/members/']);
    path = `/${ns}/${encodeURIComponent(name)}${suffix}`;
  } else if (roll < 0.9) {
    path = `/${ns}/${g.pick(ODD_SEGMENTS)}${g.chance(0.2) ? g.pick(['/rows', '/query', '/x', '/', '//']) : ''}`;
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
    ]);
  }
  if (g.chance(0.03)) path += '?' + g.pick(['a=1', '%zz', 'x'.repeat(100)]);
  let body: Buffer | undefined;
  if (g.chance(0.8)) {
    if (g.chance(0.8)) body = Buffer.from(structuredBody(g, method.toUpperCase(), ns, suffix));
    else body = garbageBody(g);
  }
  const headers: string[] = [];
  if (!g.chance(0.02)) headers.push('Host: 127.0.0.1');
  const t = g.r();
  if (t < 0.92) headers.push(`Auth-Token: ${token}`);
  else if (t < 0.96) headers.push(`Auth-Token: ${g.pick(['wrong', '', token + 'x', token.toUpperCase()])}`);
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
  return { bytes: Buffer.concat([head, bodyBytes]), method, target, chunked, head: method === 'HEAD', poison };
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
        let before: string | undefined;
        if (!pipelined && one.target !== undefined) {
          const s = await check.send(get(one.target.name, snapshotPath(one.target.ns, one.target.name)), 1, 5000);
          before = stable(s.answers[0]);
        }
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
        for (const r of reqs) if (r.target !== undefined) report.byNamespace[r.target.ns] = (report.byNamespace[r.target.ns] ?? 0) + 1;
        for (let i = 0; i < res.answers.length; i++) {
          const a = res.answers[i]!;
          report.byStatus[a.status] = (report.byStatus[a.status] ?? 0) + 1;
          const bad = checkAnswer(a, reqs[i]?.head ?? false);
          if (bad) violation(`seed ${o.seed} worker ${w}: ${bad}\n  request: ${JSON.stringify(reqs[i]?.bytes.subarray(0, 400).toString('latin1'))}`);
        }
        if (res.closed || reqs.some((r) => r.poison)) conn.close();
        if (before !== undefined && one.target !== undefined && res.answers.length === 1 && res.answers[0]!.status >= 400) {
          const s = await check.send(get(one.target.name, snapshotPath(one.target.ns, one.target.name)), 1, 5000);
          const after = stable(s.answers[0]);
          // A snapshot without an answer (the connection was closed under it: the
          // server's connection cap evicts idle ones) tells nothing either way.
          if (before !== 'none' && after !== 'none') report.checkedRefusals++;
          if (after !== before && before !== 'none' && after !== 'none')
            violation(
              `seed ${o.seed} worker ${w}: refused request (${res.answers[0]!.status}) changed ${one.target.ns}/${one.target.name}\n  before ${before.slice(0, 300)}\n  after  ${after.slice(0, 300)}\n  request: ${JSON.stringify(one.bytes.subarray(0, 400).toString('latin1'))}\n  recent exchanges of this worker:\n    ${recent.join('\n    ')}`,
            );
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
