/** The client's public types: values, options and answers (docs/client.md). */

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
/** Every kind of named object, in the server's order (src/store/kinds.ts; test/client/kinds.test.ts keeps the two equal). */
export const KINDS = ['table', 'record', 'variant', 'lock', 'list', 'set', 'zset'] as const;
export type Kind = (typeof KINDS)[number];
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
