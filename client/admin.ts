/** Operations endpoints, listing, transactions and the change feed. */
import { PithosCore } from './core.js';
import type { Health, ListItem, ListKind, ListOptions, ListPage, Txn, TxnResult, WatchEvent, WatchOptions } from './types.js';
import { ENDPOINTS } from './endpoints.js';
import { PithosError, errorFrom, listOperation, parseSSE, queryString } from './wire.js';

export class PithosAdmin extends PithosCore {
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
