/** What every call shares: errors, paths and query strings, ETags, the SSE parser, body fields. */
import {
  type Envelope,
  type JsonObject,
  type Kind,
  KINDS,
  type ListKind,
  type OrderBy,
  type QueryOptions,
  type WatchEvent,
  type WriteOptions,
} from './types.js';

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

export function fillPath(template: string, args: readonly string[]): string {
  let i = 0;
  return template.replace(/\{[a-z_]+\}/g, () => {
    const v = args[i++];
    if (v === undefined) throw new TypeError(`missing path argument for ${template}`);
    return encodeURIComponent(v);
  });
}

export function queryString(q: Record<string, string | number | boolean | undefined | (string | number)[]>): string {
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

export function writeFields(o: WriteOptions | undefined): JsonObject {
  const out: JsonObject = {};
  if (o?.ttl !== undefined) out.ttl = o.ttl;
  if (o?.ifVersion !== undefined) out.if_version = o.ifVersion;
  if (o?.ifAbsent) out.if_absent = true;
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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

export const LIST_OPERATIONS: { readonly [K in Kind]: `list${Capitalize<K>}s` } = {
  table: 'listTables',
  record: 'listRecords',
  variant: 'listVariants',
  lock: 'listLocks',
  list: 'listLists',
  set: 'listSets',
  zset: 'listZsets',
} as const;

const KINDS_TEXT = `${KINDS.slice(0, -1)
  .map((k) => `'${k}'`)
  .join(', ')} or '${KINDS[KINDS.length - 1]}'`;

/** The listing call of a kind, either spelling; a bad kind (from JavaScript) is a TypeError naming the good ones. */
export function listOperation(kind: ListKind): (typeof LIST_OPERATIONS)[Kind] {
  const k: string = typeof kind === 'string' && kind.endsWith('s') ? kind.slice(0, -1) : kind;
  if (typeof k !== 'string' || !Object.prototype.hasOwnProperty.call(LIST_OPERATIONS, k)) {
    throw new TypeError(`kind must be ${KINDS_TEXT} (or the plural), got ${typeof kind === 'string' ? `'${kind}'` : String(kind)}`);
  }
  return LIST_OPERATIONS[k as Kind];
}

export function queryFields(o: QueryOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (o.limit !== undefined) out.limit = o.limit;
  if (o.after !== undefined) out.after = o.after;
  if (o.order !== undefined) out.order = o.order.map((x): OrderBy => (x.dir === undefined ? { field: x.field } : { field: x.field, dir: x.dir }));
  if (o.fields !== undefined) out.fields = o.fields;
  return out;
}

export function errorFrom(status: number, text: string, method: string, path: string, env?: Envelope<unknown>): PithosError {
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

export function scoreBound(b: number | string | undefined): number | string | undefined {
  if (b === Infinity) return '+inf';
  if (b === -Infinity) return '-inf';
  return b;
}
