/**
 * Typed client for Pithos (every endpoint of docs/api.md). ESM, no dependencies and no
 * node: imports: it needs only `fetch`, `TextDecoder` and web streams, so the same code
 * runs in Node >= 18, Deno, Bun, browsers (the web console uses it) and edge runtimes.
 *
 *   import { Pithos } from 'pithos-client'; // the package client/package.json builds
 *   const db = new Pithos({ url: 'http://127.0.0.1:2668', token: 'SECRET' });
 *   await db.createTable('users');
 *   const { t_id } = await db.insertRow('users', { name: 'ann', age: 31 });
 *   const rows = await db.queryRows('users', { age: { $gte: 18 } });
 *
 * Every failure is a PithosError carrying the HTTP status and the server's message
 * (status 0 when no HTTP answer arrived at all).
 */

// ---------------------------------------------------------------------------------------
// Types

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
/** A table row: any JSON object. */
export type Row = JsonObject;
/** A where-value: a literal (deep equality) or an operator object. */
export type WhereValue = Json | OperatorObject;
export interface OperatorObject {
  $eq?: Json;
  $ne?: Json;
  $gt?: number | string;
  $gte?: number | string;
  $lt?: number | string;
  $lte?: number | string;
  $in?: Json[];
  $nin?: Json[];
  $exists?: boolean;
}
/** `wheres` (docs/api.md, docs/query.md): field (or dotted path) → where-value, plus the combinators. */
export interface Wheres {
  $and?: Wheres[];
  $or?: Wheres[];
  $not?: Wheres;
  [field: string]: WhereValue | Wheres[] | Wheres | undefined;
}
export type VariantValue = string | boolean | number;
export type Kind = 'table' | 'record' | 'variant' | 'lock' | 'list' | 'set' | 'zset';
/** A kind as the listing calls take it: singular (`'record'`) or plural as in the paths (`'records'`). */
export type ListKind = Kind | `${Kind}s`;

export interface Envelope<T = unknown> {
  status: 'success' | 'error';
  message: string;
  data?: T;
}

/** What every call resolves with internally; the public methods unwrap `data`. */
export interface Answer<T> {
  status: number;
  message: string;
  data: T;
  /** The version from an `ETag` header (docs/api.md, "Versions"), when the server sent one. */
  version?: number;
  headers: Headers;
  /** The answer's body as the server sent it (JSON.parse turns `3.0` into 3; this keeps it). */
  text: string;
}

/**
 * A request body already written as JSON text, sent as it is: for numbers
 * whose form matters (`"variant": 3.0` makes a double), which JSON.stringify
 * would write as `3`.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

export interface Health {
  key_count: number;
  gc_state: 0 | 1 | 2;
  disk_free: string;
  disk_used: string;
  disk_total: string;
  mem_free: string;
  mem_total: string;
  disk_percent: string;
  space_total: string;
  [more: string]: Json;
}

export interface LockGrant {
  token: string;
  fence: number;
}
export interface LockState {
  held: boolean;
  holder: string | null;
  ttl: number;
  expires_in_ms: number;
  acquired_at: string;
  fence: number;
}

export interface ListOptions {
  prefix?: string;
  limit?: number;
  after?: string;
}
export interface ListItem {
  name: string;
  ttl_ms: number | null;
  /** tables */
  rows?: number;
  /** locks */
  held?: boolean;
  holder?: string | null;
  /** lists */
  length?: number;
  /** sets and sorted sets */
  count?: number;
}
export interface ListPage {
  items: ListItem[];
  next: string | null;
}

export interface OrderBy {
  field: string;
  dir?: 'asc' | 'desc';
}
/** Row query options (docs/query.md). Sent only when given, so a Part-one server sees `wheres` alone. */
export interface QueryOptions {
  limit?: number;
  after?: number;
  order?: OrderBy[];
  fields?: string[];
}
export interface RowWithId {
  t_id: number;
  row: Row;
}

export interface WriteOptions {
  ttl?: number;
  /** Write only if the current version equals this (sent as `if_version`). */
  ifVersion?: number;
  /** Create only (sent as `if_absent: true`). */
  ifAbsent?: boolean;
}

export type TxnMutation =
  | { kind?: 'table'; name: string; operation: 'INSERT'; values: Row; where?: Wheres }
  | { kind?: 'table'; name: string; operation: 'UPDATE'; where: Wheres; values: Row }
  | { kind?: 'table'; name: string; operation: 'REMOVE'; where: Wheres; values?: Row }
  | { kind?: 'table'; name: string; operation: 'UPDATE'; t_id: number; values: Row }
  | { kind?: 'table'; name: string; operation: 'REMOVE'; t_id: number; values?: Row }
  | { kind?: 'table'; name: string; operation: 'REPLACE'; t_id: number; values: Row }
  | { kind: 'variant'; name: string; operation: 'ADD'; delta: number }
  | { kind: 'variant'; name: string; operation: 'SET'; variant: VariantValue; ttl?: number }
  | { kind: 'record'; name: string; operation: 'PUT'; values: JsonObject; ttl?: number }
  | { kind: 'record'; name: string; operation: 'DELETE' }
  | { kind: 'set'; name: string; operation: 'ADD' | 'REMOVE'; members: string[] }
  | { kind: 'zset'; name: string; operation: 'ADD'; members: Record<string, number>; mode?: ZMode }
  | { kind: 'zset'; name: string; operation: 'INCR'; member: string; delta: number }
  | { kind: 'zset'; name: string; operation: 'REMOVE'; members: string[] };
export type TxnCheck =
  | { kind: 'variant'; name: string; value?: WhereValue; exists?: boolean }
  | { kind: 'record'; name: string; exists?: boolean; version?: number }
  | { kind: 'table'; name: string; exists?: boolean; where?: Wheres; count?: WhereValue }
  | { kind: 'set'; name: string; exists?: boolean; contains?: string; count?: WhereValue }
  | { kind: 'zset'; name: string; exists?: boolean; member?: string; score?: WhereValue; count?: WhereValue };
export interface Txn {
  mutations: TxnMutation[];
  checks?: TxnCheck[];
  serializable?: boolean;
}
export type TxnResult =
  | { t_id: number }
  | { matched: number }
  | { variant: VariantValue }
  | Record<string, never>
  | { added: number; count: number }
  | { removed: number; count: number }
  | { added: number; updated: number; count: number }
  | { score: number };

/** `mode` of a sorted-set add (docs/api.md, "Sets and sorted sets"). */
export type ZMode = 'upsert' | 'nx' | 'xx' | 'gt' | 'lt';
/** A sorted-set read: by rank (`start`, `stop`) or by score (`min`, `max`: numbers, ±Infinity included, or strings such as '(5', '-inf'). */
export type ZRangeQuery =
  | { by?: 'rank'; start?: number; stop?: number; rev?: boolean }
  | { by: 'score'; min?: number | string; max?: number | string; offset?: number; limit?: number; rev?: boolean };
/** A by-score bound as the query string spells it: the numbers ±Infinity as '+inf' / '-inf'. */
function scoreBound(b: number | string | undefined): number | string | undefined {
  if (b === Infinity) return '+inf';
  if (b === -Infinity) return '-inf';
  return b;
}
export interface ZItem {
  member: string;
  score: number;
}

export interface WatchOptions {
  kind?: Kind | Kind[];
  prefix?: string;
  since?: number;
  values?: boolean;
  /** Resume after this event id (sent as Last-Event-ID). */
  lastEventId?: string;
  signal?: AbortSignal;
}
export interface WatchEvent {
  id?: string;
  event: string;
  /** The parsed JSON of `data:`, or the raw text when it is not JSON. */
  data: unknown;
}

export interface PithosOptions {
  /** Base address, e.g. `http://127.0.0.1:2668`; '' means the page's own origin (browsers). */
  url: string;
  token?: string;
  /** Retries for idempotent calls after a network failure, 502, 503 or 504 (default 0). */
  retries?: number;
  /** First back-off in ms; doubles per retry (default 100). */
  retryDelayMs?: number;
  /** Abort a call after this many ms (default: none). */
  timeoutMs?: number;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

// ---------------------------------------------------------------------------------------
// Endpoints: every request this client can make. A test compares this list with the
// server's route table, so the client cannot drift from the server unnoticed.

export interface Endpoint {
  method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
  /** Path template; `{name}`, `{field}` and `{t_id}` are one percent-encoded segment each. */
  path: string;
  /** Safe to repeat: retried when `retries` is set. */
  idempotent: boolean;
  /** Added after the first contract (a server before revision 2 answers 404/405). */
  partTwo?: boolean;
  /** Answers plain text rather than the JSON envelope. */
  text?: boolean;
}

const ep = (method: Endpoint['method'], path: string, idempotent: boolean, extra: Partial<Endpoint> = {}): Endpoint => ({
  method,
  path,
  idempotent,
  ...extra,
});
const P2 = { partTwo: true };

export const ENDPOINTS = {
  health: ep('GET', '/health', true),
  livez: ep('GET', '/livez', true, { partTwo: true, text: true }),
  readyz: ep('GET', '/readyz', true, { partTwo: true, text: true }),
  metrics: ep('GET', '/metrics', true, { partTwo: true, text: true }),
  openapi: ep('GET', '/openapi.json', true, { partTwo: true, text: true }),
  backup: ep('GET', '/backup', true, { partTwo: true, text: true }),
  // tables
  listTables: ep('GET', '/tables', true, P2),
  createTable: ep('PUT', '/tables/{name}', false),
  getTable: ep('GET', '/tables/{name}', true),
  patchRows: ep('PATCH', '/tables/{name}', false),
  setTableTtl: ep('PATCH', '/tables/{name}', false, P2),
  dropTable: ep('DELETE', '/tables/{name}', false),
  insertRow: ep('POST', '/tables/{name}/rows', false),
  queryRowsGet: ep('GET', '/tables/{name}/rows', true),
  queryRows: ep('POST', '/tables/{name}/query', true),
  deleteRows: ep('DELETE', '/tables/{name}/rows', false),
  getRow: ep('GET', '/tables/{name}/rows/{t_id}', true, P2),
  replaceRow: ep('PUT', '/tables/{name}/rows/{t_id}', true, P2),
  patchRow: ep('PATCH', '/tables/{name}/rows/{t_id}', false, P2),
  deleteRow: ep('DELETE', '/tables/{name}/rows/{t_id}', false, P2),
  listIndexes: ep('GET', '/tables/{name}/indexes', true, P2),
  createIndex: ep('PUT', '/tables/{name}/indexes/{field}', false, P2),
  dropIndex: ep('DELETE', '/tables/{name}/indexes/{field}', false, P2),
  // records
  listRecords: ep('GET', '/records', true, P2),
  putRecord: ep('PUT', '/records/{name}', true),
  getRecord: ep('GET', '/records/{name}', true),
  searchRecord: ep('POST', '/records/{name}', true),
  patchRecord: ep('PATCH', '/records/{name}', false, P2),
  deleteRecord: ep('DELETE', '/records/{name}', false),
  putQuick: ep('PUT', '/table/{name}', true),
  getQuick: ep('GET', '/table/{name}', true),
  deleteQuick: ep('DELETE', '/table/{name}', false),
  // variants
  listVariants: ep('GET', '/variants', true, P2),
  putVariant: ep('PUT', '/variants/{name}', true),
  getVariant: ep('GET', '/variants/{name}', true),
  incr: ep('POST', '/variants/{name}', false),
  setVariantTtl: ep('PATCH', '/variants/{name}', false, P2),
  deleteVariant: ep('DELETE', '/variants/{name}', false),
  append: ep('POST', '/variants/{name}', false, P2),
  // numbers and texts: quick-start spellings of integer and string variants
  putNumber: ep('PUT', '/number/{name}', true, P2),
  getNumber: ep('GET', '/number/{name}', true, P2),
  incrNumber: ep('POST', '/number/{name}', false, P2),
  deleteNumber: ep('DELETE', '/number/{name}', false, P2),
  putText: ep('PUT', '/text/{name}', true, P2),
  getText: ep('GET', '/text/{name}', true, P2),
  appendText: ep('POST', '/text/{name}', false, P2),
  deleteText: ep('DELETE', '/text/{name}', false, P2),
  // locks
  listLocks: ep('GET', '/locks', true, P2),
  acquireLock: ep('PUT', '/locks/{name}', false),
  renewLock: ep('PATCH', '/locks/{name}', false),
  releaseLock: ep('DELETE', '/locks/{name}', false),
  getLock: ep('GET', '/locks/{name}', true),
  // lists
  listLists: ep('GET', '/lists', true, P2),
  putList: ep('PUT', '/lists/{name}', true, P2),
  getList: ep('GET', '/lists/{name}', true, P2),
  pushList: ep('POST', '/lists/{name}/push', false, P2),
  popList: ep('POST', '/lists/{name}/pop', false, P2),
  patchList: ep('PATCH', '/lists/{name}', false, P2),
  deleteList: ep('DELETE', '/lists/{name}', false, P2),
  putListQuick: ep('PUT', '/list/{name}', true, P2),
  getListQuick: ep('GET', '/list/{name}', true, P2),
  deleteListQuick: ep('DELETE', '/list/{name}', false, P2),
  // sets and sorted sets
  listSets: ep('GET', '/sets', true, P2),
  putSet: ep('PUT', '/sets/{name}', true, P2),
  getSet: ep('GET', '/sets/{name}', true, P2),
  setAdd: ep('POST', '/sets/{name}/add', false, P2),
  setRemove: ep('POST', '/sets/{name}/remove', false, P2),
  setContains: ep('POST', '/sets/{name}/contains', true, P2),
  setCombine: ep('POST', '/sets/{name}/combine', false, P2),
  setSetTtl: ep('PATCH', '/sets/{name}', false, P2),
  deleteSet: ep('DELETE', '/sets/{name}', false, P2),
  putSetQuick: ep('PUT', '/set/{name}', true, P2),
  getSetQuick: ep('GET', '/set/{name}', true, P2),
  deleteSetQuick: ep('DELETE', '/set/{name}', false, P2),
  listZsets: ep('GET', '/zsets', true, P2),
  putZset: ep('PUT', '/zsets/{name}', true, P2),
  zadd: ep('POST', '/zsets/{name}/add', false, P2),
  zincr: ep('POST', '/zsets/{name}/incr', false, P2),
  zremove: ep('POST', '/zsets/{name}/remove', false, P2),
  zrange: ep('GET', '/zsets/{name}', true, P2),
  zmember: ep('GET', '/zsets/{name}/members/{member}', true, P2),
  setZsetTtl: ep('PATCH', '/zsets/{name}', false, P2),
  deleteZset: ep('DELETE', '/zsets/{name}', false, P2),
  putZsetQuick: ep('PUT', '/zset/{name}', true, P2),
  getZsetQuick: ep('GET', '/zset/{name}', true, P2),
  deleteZsetQuick: ep('DELETE', '/zset/{name}', false, P2),
  // part two, other
  txn: ep('POST', '/txns', false, P2),
  watch: ep('GET', '/watch', false, { partTwo: true, text: true }),
} as const satisfies Record<string, Endpoint>;

export type Operation = keyof typeof ENDPOINTS;

/** The distinct {method, path} pairs the client uses (for checks against the route table). */
export function endpointList(): { method: string; path: string; partTwo: boolean }[] {
  const seen = new Map<string, { method: string; path: string; partTwo: boolean }>();
  for (const e of Object.values(ENDPOINTS) as Endpoint[]) {
    const k = `${e.method} ${e.path}`;
    const prev = seen.get(k);
    // A shared pair (PATCH /tables/{name} serves patchRows and, in part two, ttl) is part one if either use is.
    if (prev === undefined) seen.set(k, { method: e.method, path: e.path, partTwo: e.partTwo === true });
    else prev.partTwo = prev.partTwo && e.partTwo === true;
  }
  return [...seen.values()];
}

// ---------------------------------------------------------------------------------------
// Errors

export class PithosError extends Error {
  override readonly name = 'PithosError';
  constructor(
    /** HTTP status; 0 when the request never got an HTTP answer (network error, timeout). */
    readonly status: number,
    message: string,
    readonly method: string = '',
    readonly path: string = '',
  ) {
    super(message);
  }
  get notFound(): boolean {
    return this.status === 404;
  }
  /** The server does not offer this endpoint (an older server, a part-two call). */
  get unsupported(): boolean {
    return (this.status === 404 && /^no endpoint at /.test(this.message)) || this.status === 405;
  }
}

// ---------------------------------------------------------------------------------------
// Helpers

function fillPath(template: string, args: readonly string[]): string {
  let i = 0;
  return template.replace(/\{[a-z_]+\}/g, () => {
    const v = args[i++];
    if (v === undefined) throw new TypeError(`missing path argument for ${template}`);
    return encodeURIComponent(v);
  });
}

function queryString(q: Record<string, string | number | boolean | undefined | (string | number)[]>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** `"12"` (or `W/"12"`) → 12. */
export function parseEtag(etag: string | null): number | undefined {
  if (etag === null) return undefined;
  const m = /^(?:W\/)?"?(\d+)"?$/.exec(etag.trim());
  return m ? Number(m[1]) : undefined;
}

function writeFields(o: WriteOptions | undefined): JsonObject {
  const out: JsonObject = {};
  if (o?.ttl !== undefined) out.ttl = o.ttl;
  if (o?.ifVersion !== undefined) out.if_version = o.ifVersion;
  if (o?.ifAbsent) out.if_absent = true;
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Parses a Server-Sent Events byte stream (the WHATWG rules: `field: value` lines, events
 * end at a blank line, `data` lines join with \n, comments start with `:`).
 */
export async function* parseSSE(stream: ReadableStream<Uint8Array>): AsyncGenerator<WatchEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  const flush = (): WatchEvent | undefined => {
    if (data.length === 0 && event === '') return undefined;
    const text = data.join('\n');
    let parsed: unknown = text;
    try {
      parsed = text === '' ? '' : JSON.parse(text);
    } catch {
      /* keep the text */
    }
    const out: WatchEvent = { event: event || 'message', data: parsed };
    if (id !== undefined) out.id = id;
    event = '';
    data = [];
    return out;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        // A lone \r at the very end might be half of \r\n: wait for more.
        if (buf[nl] === '\r' && nl === buf.length - 1 && !done) break;
        buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          const ev = flush();
          if (ev) yield ev;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) id = value;
      }
      if (done) return; // an unterminated last event is dropped, as the spec says
    }
  } finally {
    reader.releaseLock();
  }
}

// ---------------------------------------------------------------------------------------
// The client

const LIST_OPERATIONS = {
  table: 'listTables',
  record: 'listRecords',
  variant: 'listVariants',
  lock: 'listLocks',
  list: 'listLists',
  set: 'listSets',
  zset: 'listZsets',
} as const;

/** The listing call of a kind, either spelling; a bad kind (from JavaScript) is a TypeError naming the good ones. */
function listOperation(kind: ListKind): (typeof LIST_OPERATIONS)[Kind] {
  const k: string = typeof kind === 'string' && kind.endsWith('s') ? kind.slice(0, -1) : kind;
  if (typeof k !== 'string' || !Object.prototype.hasOwnProperty.call(LIST_OPERATIONS, k)) {
    throw new TypeError(
      `kind must be 'table', 'record', 'variant', 'lock', 'list', 'set' or 'zset' (or the plural), got ${typeof kind === 'string' ? `'${kind}'` : String(kind)}`,
    );
  }
  return LIST_OPERATIONS[k as Kind];
}

export class Pithos {
  readonly url: string;
  token: string | undefined;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly timeoutMs: number | undefined;
  private readonly fetchFn: typeof fetch;

  constructor(opts: PithosOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.token = opts.token;
    this.retries = opts.retries ?? 0;
    this.retryDelayMs = opts.retryDelayMs ?? 100;
    this.timeoutMs = opts.timeoutMs;
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('no fetch available: pass opts.fetch');
    this.fetchFn = f.bind(globalThis);
  }

  /**
   * One call: the endpoint, its path arguments, an optional JSON body, query and headers.
   * Resolves with status, message, data (and version from ETag); rejects with PithosError.
   */
  async call<T = unknown>(
    op: Operation,
    args: readonly string[] = [],
    opts: { body?: unknown; query?: Record<string, string | number | boolean | undefined | (string | number)[]>; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const e: Endpoint = ENDPOINTS[op];
    const path = fillPath(e.path, args) + queryString(opts.query ?? {});
    const res = await this.send(e, path, opts.body, opts.headers);
    const text = await res.text();
    if (e.text) {
      if (!res.ok) throw errorFrom(res.status, text, e.method, path);
      return { status: res.status, message: '', data: text as T, headers: res.headers, text };
    }
    let env: Envelope<T> | undefined;
    try {
      env = JSON.parse(text) as Envelope<T>;
    } catch {
      env = undefined;
    }
    if (!res.ok || env === undefined || env.status !== 'success') {
      throw errorFrom(res.status, text, e.method, path, env);
    }
    const answer: Answer<T> = { status: res.status, message: env.message, data: env.data as T, headers: res.headers, text };
    const version = parseEtag(res.headers.get('etag'));
    if (version !== undefined) answer.version = version;
    return answer;
  }

  private async send(e: Endpoint, path: string, body: unknown, extra: Record<string, string> | undefined, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { ...(extra ?? {}) };
    if (this.token !== undefined) headers['Auth-Token'] = this.token;
    const init: RequestInit = { method: e.method, headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = body instanceof JsonText ? body.text : JSON.stringify(body);
    }
    const attempts = e.idempotent ? this.retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      const ac = this.timeoutMs !== undefined || signal !== undefined ? new AbortController() : undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (ac) {
        init.signal = ac.signal;
        if (this.timeoutMs !== undefined) timer = setTimeout(() => ac.abort(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
        if (signal) {
          if (signal.aborted) ac.abort(signal.reason);
          else signal.addEventListener('abort', () => ac.abort(signal.reason), { once: true });
        }
      }
      try {
        const res = await this.fetchFn(this.url + path, init);
        if (attempt < attempts && (res.status === 502 || res.status === 503 || res.status === 504)) {
          await res.body?.cancel();
        } else {
          return res;
        }
      } catch (err) {
        if (signal?.aborted) throw err;
        if (attempt >= attempts) {
          const cause = (err as { cause?: { code?: string; message?: string } }).cause;
          const why = cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
          throw new PithosError(0, `cannot reach ${this.url}: ${why}`, e.method, path);
        }
      } finally {
        if (timer !== undefined) clearTimeout(timer);
      }
      await sleep(this.retryDelayMs * 2 ** (attempt - 1));
    }
  }

  // --- operations endpoints -------------------------------------------------------------

  async health(): Promise<Health> {
    return (await this.call<Health>('health')).data;
  }
  /** `GET /livez` (part two): true on 200, false on 503. */
  async livez(): Promise<boolean> {
    return this.probe('livez');
  }
  async readyz(): Promise<boolean> {
    return this.probe('readyz');
  }
  private async probe(op: 'livez' | 'readyz'): Promise<boolean> {
    try {
      await this.call(op);
      return true;
    } catch (err) {
      if (err instanceof PithosError && err.status === 503) return false;
      throw err;
    }
  }
  /** `GET /metrics` (part two): the Prometheus text. */
  async metrics(): Promise<string> {
    return (await this.call<string>('metrics')).data;
  }

  /** `GET /openapi.json` (part two): the server's OpenAPI document. */
  async openapi(): Promise<Record<string, unknown>> {
    return JSON.parse((await this.call<string>('openapi')).data) as Record<string, unknown>;
  }
  /** `GET /backup` (part two): the snapshot as a byte stream (write it to a file as it arrives). */
  async backup(signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const e = ENDPOINTS.backup;
    const res = await this.send(e, e.path, undefined, undefined, signal);
    if (!res.ok || res.body === null) throw errorFrom(res.status, await res.text(), e.method, e.path);
    return res.body;
  }

  // --- listing (part two) ---------------------------------------------------------------

  async list(kind: ListKind, o: ListOptions = {}): Promise<ListPage> {
    const op = listOperation(kind);
    return (await this.call<ListPage>(op, [], { query: { prefix: o.prefix, limit: o.limit, after: o.after } })).data;
  }
  listTables(o?: ListOptions): Promise<ListPage> {
    return this.list('table', o);
  }
  listRecords(o?: ListOptions): Promise<ListPage> {
    return this.list('record', o);
  }
  listVariants(o?: ListOptions): Promise<ListPage> {
    return this.list('variant', o);
  }
  listLocks(o?: ListOptions): Promise<ListPage> {
    return this.list('lock', o);
  }
  /** Every item of a listing, page after page. */
  async *listAll(kind: ListKind, o: Omit<ListOptions, 'after'> = {}): AsyncGenerator<ListItem> {
    let after: string | undefined;
    for (;;) {
      const page = await this.list(kind, { ...o, after });
      yield* page.items;
      if (page.next === null || page.items.length === 0) return;
      after = page.next;
    }
  }

  // --- tables ---------------------------------------------------------------------------

  async createTable(name: string, o: { ttl?: number } = {}): Promise<void> {
    await this.call('createTable', [name], { body: o.ttl === undefined ? {} : { ttl: o.ttl } });
  }
  async dropTable(name: string): Promise<void> {
    await this.call('dropTable', [name]);
  }
  async insertRow(name: string, row: Row): Promise<{ t_id: number }> {
    return (await this.call<{ t_id: number }>('insertRow', [name], { body: { rows: row } })).data;
  }
  /** The whole table: `t_id` (as a string key) → row. `limit`/`after` are part two. */
  async getTable(name: string, o: { limit?: number; after?: number } = {}): Promise<Record<string, Row>> {
    return (await this.call<Record<string, Row>>('getTable', [name], { query: { limit: o.limit, after: o.after } })).data;
  }
  /** Matching rows in `t_id` order (through the POST alias, which browsers and fetch can send). */
  async queryRows(name: string, wheres: Wheres = {}, o: QueryOptions = {}): Promise<Row[]> {
    return (await this.call<Row[]>('queryRows', [name], { body: { wheres, ...queryFields(o) } })).data;
  }
  /** Part two: each matching row with its `t_id`. */
  async queryRowsWithIds(name: string, wheres: Wheres = {}, o: QueryOptions = {}): Promise<RowWithId[]> {
    return (await this.call<RowWithId[]>('queryRows', [name], { body: { wheres, ...queryFields(o), with_ids: true } })).data;
  }
  /** Part two: the number of matching rows. */
  async countRows(name: string, wheres: Wheres = {}): Promise<number> {
    return (await this.call<{ count: number }>('queryRows', [name], { body: { wheres, count: true } })).data.count;
  }
  async patchRows(name: string, wheres: Wheres, sets: Row): Promise<void> {
    await this.call('patchRows', [name], { body: { wheres, sets } });
  }
  async deleteRows(name: string, wheres: Wheres): Promise<void> {
    await this.call('deleteRows', [name], { body: { wheres } });
  }
  /** One row by its `t_id`. */
  async getRow(name: string, tId: number): Promise<Row> {
    return (await this.call<Row>('getRow', [name, String(tId)])).data;
  }
  /** One row and its version (the ETag), for a later `ifVersion`. */
  async getRowVersioned(name: string, tId: number): Promise<{ value: Row; version?: number }> {
    const r = await this.call<Row>('getRow', [name, String(tId)]);
    return r.version === undefined ? { value: r.data } : { value: r.data, version: r.version };
  }
  /** Replaces an existing row whole (never creates one: 404 when there is no such row). */
  async replaceRow(name: string, tId: number, row: Row, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('replaceRow', [name, String(tId)], { body: { rows: row, ...writeFields(o) } });
  }
  /** Writes the top-level fields of `sets` into one row and removes the fields named in `unset`. */
  async patchRow(name: string, tId: number, sets: Row, o: { unset?: string[]; ifVersion?: number } = {}): Promise<void> {
    const body: JsonObject = { sets, ...writeFields(o) };
    if (o.unset !== undefined) body.unset = o.unset;
    await this.call('patchRow', [name, String(tId)], { body });
  }
  /** Deletes exactly one row. */
  async deleteRow(name: string, tId: number, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteRow', [name, String(tId)], { body: writeFields(o) });
  }
  /** Part two: set the remaining lifetime of a table, record or variant (0 = none). */
  async setTtl(kind: 'table' | 'record' | 'variant', name: string, ttl: number): Promise<void> {
    const op = ({ table: 'setTableTtl', record: 'patchRecord', variant: 'setVariantTtl' } as const)[kind];
    await this.call(op, [name], { body: { ttl } });
  }

  // --- indexes (part two) ---------------------------------------------------------------

  async createIndex(table: string, field: string): Promise<void> {
    await this.call('createIndex', [table, field]);
  }
  async listIndexes(table: string): Promise<unknown> {
    return (await this.call('listIndexes', [table])).data;
  }
  async dropIndex(table: string, field: string): Promise<void> {
    await this.call('dropIndex', [table, field]);
  }

  // --- records --------------------------------------------------------------------------

  /** Create or replace; `created` tells which (201 or 200). `ifVersion`/`ifAbsent` are part two. */
  async putRecord(id: string, record: JsonObject, o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putRecord', [id], { body: { record, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getRecord<T extends JsonObject = JsonObject>(id: string): Promise<T> {
    return (await this.call<T>('getRecord', [id])).data;
  }
  /** The record and, when the server sends an ETag (part two), its version. */
  async getRecordVersioned<T extends JsonObject = JsonObject>(id: string): Promise<{ value: T; version?: number }> {
    const r = await this.call<T>('getRecord', [id]);
    return r.version === undefined ? { value: r.data } : { value: r.data, version: r.version };
  }
  /** `[value]`, or `[]` when the record has no such field. */
  async searchRecord(id: string, column: string): Promise<Json[]> {
    return (await this.call<Json[]>('searchRecord', [id], { body: { column } })).data;
  }
  /** Part two: merge top-level fields (`null` deletes one). */
  async patchRecord(id: string, sets: JsonObject, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('patchRecord', [id], { body: { sets, ...writeFields(o) } });
  }
  async deleteRecord(id: string): Promise<void> {
    await this.call('deleteRecord', [id]);
  }
  /** The quick-start spelling `/table/<key>` of the record namespace. */
  async putQuick(key: string, value: JsonObject, o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putQuick', [key], { body: { table: value, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getQuick<T extends JsonObject = JsonObject>(key: string): Promise<T> {
    return (await this.call<T>('getQuick', [key])).data;
  }
  async deleteQuick(key: string): Promise<void> {
    await this.call('deleteQuick', [key]);
  }

  // --- variants -------------------------------------------------------------------------

  async putVariant(name: string, value: VariantValue, o?: WriteOptions): Promise<{ variant: VariantValue; created: boolean }> {
    const r = await this.call<{ variant: VariantValue }>('putVariant', [name], { body: { variant: value, ...writeFields(o) } });
    return { variant: r.data.variant, created: r.status === 201 };
  }
  async getVariant(name: string): Promise<VariantValue> {
    return (await this.call<{ variant: VariantValue }>('getVariant', [name])).data.variant;
  }
  async getVariantVersioned(name: string): Promise<{ value: VariantValue; version?: number }> {
    const r = await this.call<{ variant: VariantValue }>('getVariant', [name]);
    return r.version === undefined ? { value: r.data.variant } : { value: r.data.variant, version: r.version };
  }
  /** Atomic add; resolves with the new value (a number: only numeric variants can be incremented). */
  async incr(name: string, delta = 1): Promise<number> {
    return (await this.call<{ variant: number }>('incr', [name], { body: { delta } })).data.variant;
  }
  async deleteVariant(name: string): Promise<void> {
    await this.call('deleteVariant', [name]);
  }
  /** Atomic append to a string variant (Redis APPEND); resolves with its new length in UTF-8 bytes. */
  async append(name: string, text: string, o: { ifVersion?: number } = {}): Promise<number> {
    return (await this.call<{ length: number }>('append', [name], { body: { append: text, ...writeFields(o) } })).data.length;
  }

  // --- numbers and texts: /number/<key> (an integer variant), /text/<key> (a string variant) ---

  async putNumber(key: string, n: number, o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putNumber', [key], { body: { number: n, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getNumber(key: string): Promise<number> {
    return (await this.call<{ number: number }>('getNumber', [key])).data.number;
  }
  /** Atomic add of an integer; resolves with the new value. */
  async incrNumber(key: string, delta = 1): Promise<number> {
    return (await this.call<{ number: number }>('incrNumber', [key], { body: { delta } })).data.number;
  }
  async deleteNumber(key: string): Promise<void> {
    await this.call('deleteNumber', [key]);
  }
  async putText(key: string, content: string, o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putText', [key], { body: { content, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getText(key: string): Promise<string> {
    return (await this.call<{ content: string }>('getText', [key])).data.content;
  }
  /** Atomic append; resolves with the text's new length in UTF-8 bytes. */
  async appendText(key: string, text: string, o: { ifVersion?: number } = {}): Promise<number> {
    return (await this.call<{ length: number }>('appendText', [key], { body: { append: text, ...writeFields(o) } })).data.length;
  }
  async deleteText(key: string): Promise<void> {
    await this.call('deleteText', [key]);
  }

  // --- lists (docs/api.md "Lists") -------------------------------------------------------

  /** Create or replace; `created` tells which (201 or 200). */
  async putList(name: string, items: Json[], o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putList', [name], { body: { list: items, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  /** Items from `start` to `stop` inclusive (negatives count from the end), the list's length and version. */
  async getList<T extends Json = Json>(name: string, o: { start?: number; stop?: number } = {}): Promise<{ items: T[]; length: number; version?: number }> {
    const r = await this.call<{ items: T[]; length: number }>('getList', [name], { query: { start: o.start, stop: o.stop } });
    return r.version === undefined ? r.data : { ...r.data, version: r.version };
  }
  /** Pushes one at a time in order (`side` "right" by default); resolves with the new length. */
  async pushList(name: string, values: Json[], o: { side?: 'left' | 'right'; create?: boolean; ifVersion?: number } = {}): Promise<number> {
    const body: JsonObject = { values, ...writeFields(o) };
    if (o.side !== undefined) body.side = o.side;
    if (o.create !== undefined) body.create = o.create;
    return (await this.call<{ length: number }>('pushList', [name], { body })).data.length;
  }
  /**
   * Removes and returns up to `count` items from `side` ("left" by default); with `waitMs`,
   * waits for one when there is none; with `to`, moves them onto that list atomically.
   */
  async popList<T extends Json = Json>(
    name: string,
    o: { side?: 'left' | 'right'; count?: number; waitMs?: number; to?: string; toSide?: 'left' | 'right'; ifVersion?: number } = {},
  ): Promise<T[]> {
    const body: JsonObject = { ...writeFields(o) };
    if (o.side !== undefined) body.side = o.side;
    if (o.count !== undefined) body.count = o.count;
    if (o.waitMs !== undefined) body.wait_ms = o.waitMs;
    if (o.to !== undefined) body.to = o.to;
    if (o.toSide !== undefined) body.to_side = o.toSide;
    return (await this.call<{ items: T[] }>('popList', [name], { body })).data.items;
  }
  /** One of set / trim / remove, and/or ttl; resolves with the new length. */
  async patchList(
    name: string,
    p: {
      set?: { index: number; value: Json };
      trim?: { start: number; stop: number };
      remove?: { value: Json; count: number };
      ttl?: number;
      ifVersion?: number;
    },
  ): Promise<number> {
    const body: JsonObject = { ...writeFields(p) };
    if (p.set !== undefined) body.set = p.set;
    if (p.trim !== undefined) body.trim = p.trim;
    if (p.remove !== undefined) body.remove = p.remove;
    return (await this.call<{ length: number }>('patchList', [name], { body })).data.length;
  }
  async deleteList(name: string, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteList', [name], o.ifVersion === undefined ? {} : { body: writeFields(o) });
  }
  listLists(o?: ListOptions): Promise<ListPage> {
    return this.list('list', o);
  }
  /** The quick-start spelling `/list/<key>`. */
  async putListQuick(key: string, items: Json[], o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putListQuick', [key], { body: { list: items, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getListQuick<T extends Json = Json>(key: string): Promise<T[]> {
    return (await this.call<{ list: T[] }>('getListQuick', [key])).data.list;
  }
  async deleteListQuick(key: string): Promise<void> {
    await this.call('deleteListQuick', [key]);
  }

  // --- locks ----------------------------------------------------------------------------

  /** Non-blocking: a held lock rejects with status 423. */
  async acquireLock(name: string, ttl: number, holder?: string): Promise<LockGrant> {
    return (await this.call<LockGrant>('acquireLock', [name], { body: holder === undefined ? { ttl } : { ttl, holder } })).data;
  }
  async renewLock(name: string, token: string, ttl?: number): Promise<LockGrant> {
    return (await this.call<LockGrant>('renewLock', [name], { body: ttl === undefined ? { token } : { token, ttl } })).data;
  }
  async releaseLock(name: string, token: string): Promise<void> {
    await this.call('releaseLock', [name], { body: { token } });
  }
  async getLock(name: string): Promise<LockState> {
    return (await this.call<LockState>('getLock', [name])).data;
  }

  // --- sets and sorted sets ---------------------------------------------------------------

  async putSet(name: string, members: string[], o?: WriteOptions): Promise<{ created: boolean }> {
    return { created: (await this.call('putSet', [name], { body: { set: members, ...writeFields(o) } })).status === 201 };
  }
  /** Members in byte order: all of them, or a page (`limit` 1-1000, `after` the previous page's `next`). */
  async getSet(name: string, o: { limit?: number; after?: string } = {}): Promise<{ members: string[]; count: number; next: string | null; version?: number }> {
    const r = await this.call<{ members: string[]; count: number; next: string | null }>('getSet', [name], { query: { limit: o.limit, after: o.after } });
    return r.version === undefined ? r.data : { ...r.data, version: r.version };
  }
  async setAdd(name: string, members: string[], o: { create?: boolean; ifVersion?: number } = {}): Promise<{ added: number; count: number }> {
    return (await this.call<{ added: number; count: number }>('setAdd', [name], { body: { members, create: o.create, if_version: o.ifVersion } })).data;
  }
  async setRemove(name: string, members: string[], o: { ifVersion?: number } = {}): Promise<{ removed: number; count: number }> {
    return (await this.call<{ removed: number; count: number }>('setRemove', [name], { body: { members, if_version: o.ifVersion } })).data;
  }
  async setContains(name: string, members: string[]): Promise<boolean[]> {
    return (await this.call<{ contains: boolean[] }>('setContains', [name], { body: { members } })).data.contains;
  }
  /** With `store`, `ifVersion` / `ifAbsent` are conditions on the set `store` replaces, as on its PUT. */
  async setCombine(
    name: string,
    op: 'union' | 'inter' | 'diff',
    withSets: string[],
    store?: string,
    o: { ifVersion?: number; ifAbsent?: boolean } = {},
  ): Promise<{ members?: string[]; count: number }> {
    return (await this.call<{ members?: string[]; count: number }>('setCombine', [name], { body: { op, with: withSets, store, ...writeFields(o) } })).data;
  }
  /** Sets the remaining lifetime (0 = none) without rewriting the members. */
  async setSetTtl(name: string, ttl: number, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('setSetTtl', [name], { body: { ttl, ...writeFields(o) } });
  }
  async deleteSet(name: string, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteSet', [name], o.ifVersion === undefined ? {} : { body: writeFields(o) });
  }
  listSets(o?: ListOptions): Promise<ListPage> {
    return this.list('set', o);
  }
  /** The quick-start spelling `/set/<key>`. */
  async putSetQuick(key: string, members: string[], o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putSetQuick', [key], { body: { set: members, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  /** Every member, in byte order. */
  async getSetQuick(key: string): Promise<string[]> {
    return (await this.call<{ set: string[] }>('getSetQuick', [key])).data.set;
  }
  async deleteSetQuick(key: string): Promise<void> {
    await this.call('deleteSetQuick', [key]);
  }
  async putZset(name: string, members: Record<string, number>, o?: WriteOptions): Promise<{ created: boolean }> {
    return { created: (await this.call('putZset', [name], { body: { zset: members, ...writeFields(o) } })).status === 201 };
  }
  async zadd(
    name: string,
    members: Record<string, number>,
    o: { mode?: ZMode; create?: boolean; ifVersion?: number } = {},
  ): Promise<{ added: number; updated: number; count: number }> {
    return (
      await this.call<{ added: number; updated: number; count: number }>('zadd', [name], {
        body: { members, mode: o.mode, create: o.create, if_version: o.ifVersion },
      })
    ).data;
  }
  /** Adds `delta` to a member's score (a missing member starts at 0); resolves with the new score. */
  async zincr(name: string, member: string, delta: number, o: { create?: boolean; ifVersion?: number } = {}): Promise<number> {
    return (await this.call<{ score: number }>('zincr', [name], { body: { member, delta, create: o.create, if_version: o.ifVersion } })).data.score;
  }
  async zremove(name: string, members: string[], o: { ifVersion?: number } = {}): Promise<{ removed: number; count: number }> {
    return (await this.call<{ removed: number; count: number }>('zremove', [name], { body: { members, if_version: o.ifVersion } })).data;
  }
  /** Members with their scores, by rank or by score; `count` is the size of the whole set, `version` its ETag. */
  async zrange(name: string, q: ZRangeQuery = {}): Promise<{ items: ZItem[]; count: number; version?: number }> {
    const query: Record<string, string | number | boolean | undefined> = { ...q } as Record<string, string | number | boolean | undefined>;
    // String(Infinity) is 'Infinity', which the server refuses: it spells the open ends -inf and +inf.
    if (q.by === 'score') {
      query.min = scoreBound(q.min);
      query.max = scoreBound(q.max);
    }
    const r = await this.call<{ items: ZItem[]; count: number }>('zrange', [name], { query });
    return r.version === undefined ? r.data : { ...r.data, version: r.version };
  }
  /** Score, rank and reverse rank of a member; rejects with status 404 when it is not one. */
  async zmember(name: string, member: string): Promise<{ score: number; rank: number; rev_rank: number }> {
    return (await this.call<{ score: number; rank: number; rev_rank: number }>('zmember', [name, member])).data;
  }
  /** Sets the remaining lifetime (0 = none) without rewriting the members. */
  async setZsetTtl(name: string, ttl: number, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('setZsetTtl', [name], { body: { ttl, ...writeFields(o) } });
  }
  async deleteZset(name: string, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteZset', [name], o.ifVersion === undefined ? {} : { body: writeFields(o) });
  }
  listZsets(o?: ListOptions): Promise<ListPage> {
    return this.list('zset', o);
  }
  /** The quick-start spelling `/zset/<key>`. */
  async putZsetQuick(key: string, members: Record<string, number>, o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putZsetQuick', [key], { body: { zset: members, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  /** Every member and its score, as an object in sorted-set order (score, then member). */
  async getZsetQuick(key: string): Promise<Record<string, number>> {
    return (await this.call<{ zset: Record<string, number> }>('getZsetQuick', [key])).data.zset;
  }
  async deleteZsetQuick(key: string): Promise<void> {
    await this.call('deleteZsetQuick', [key]);
  }

  // --- transactions (part two) ----------------------------------------------------------

  async txn(t: Txn): Promise<{ results: TxnResult[] }> {
    return (await this.call<{ results: TxnResult[] }>('txn', [], { body: t })).data;
  }

  // --- change feed (part two) -----------------------------------------------------------

  /** `GET /watch` as an async iterable of events; stop it with `signal` or by breaking out. */
  async *watch(o: WatchOptions = {}): AsyncGenerator<WatchEvent> {
    const e = ENDPOINTS.watch;
    const kinds = o.kind === undefined ? undefined : Array.isArray(o.kind) ? o.kind : [o.kind];
    const path = e.path + queryString({ kind: kinds, prefix: o.prefix, since: o.since, values: o.values ? 'true' : undefined });
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    if (o.lastEventId !== undefined) headers['Last-Event-ID'] = o.lastEventId;
    const res = await this.send(e, path, undefined, headers, o.signal);
    if (!res.ok || res.body === null) throw errorFrom(res.status, await res.text(), e.method, path);
    yield* parseSSE(res.body);
  }
}

function queryFields(o: QueryOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (o.limit !== undefined) out.limit = o.limit;
  if (o.after !== undefined) out.after = o.after;
  if (o.order !== undefined) out.order = o.order.map((x): OrderBy => (x.dir === undefined ? { field: x.field } : { field: x.field, dir: x.dir }));
  if (o.fields !== undefined) out.fields = o.fields;
  return out;
}

function errorFrom(status: number, text: string, method: string, path: string, env?: Envelope<unknown>): PithosError {
  let message: string | undefined = env?.message;
  if (message === undefined) {
    try {
      const j = JSON.parse(text) as { message?: unknown };
      if (typeof j.message === 'string') message = j.message;
    } catch {
      /* not JSON */
    }
  }
  if (message === undefined) message = text.trim().slice(0, 300) || `HTTP ${status}`;
  return new PithosError(status, message, method, path);
}
