/**
 * One function per endpoint: turn the checked body (fields.ts, as routes.ts
 * declares it) into the store's typed input, call the store, send the
 * envelope. Messages are the contract's, byte for byte (docs/api.md); each
 * lives in one precomputed Answer.
 */
import type { ServerResponse } from 'node:http';
import type { Store } from '../store/store.js';
import type { Row } from '../store/wheres.js';
import { invalid } from '../store/errors.js';
import { numberText } from '../store/json.js';
import type { Body } from './body.js';
import { Answer, send } from './envelope.js';
import type { Health } from '../health.js';
import { parseTransaction } from './txn-body.js';
import { indexFieldOf, intParam, isPlainQuery, listOptionsOf, rowQueryOf } from './query-body.js';
import type { ListKind } from '../store/store.js';

export interface Ctx {
  store: Store;
  health: Health;
  /** Advances the injectable clock; undefined unless PITHOS_TEST_CLOCK=1. */
  advanceClock: ((ms: number) => void) | undefined;
}

/** What the path and query string add beyond the name (routes.ts `subNames`, `query`). */
export interface Args {
  /** The second path parameter (an index's field), '' when none. */
  sub: string;
  /** Declared query parameters, percent-decoded (routes.ts `query`); empty when none are declared. */
  query: Readonly<Record<string, string>>;
}

/** `raw` is the body's text ('' without a body); only handlers that need the source look at it. */
export type Handler = (ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string, args: Args) => void | Promise<void>;

const A = {
  tableCreated: new Answer('table created successfully'),
  rowInserted: new Answer('table rows insert successfully'),
  tableQueried: new Answer('table queried successfully'),
  rowsQueried: new Answer('table queried rows successfully'),
  rowsPatched: new Answer('table rows patched successfully'),
  rowsRemoved: new Answer('table rows remove successfully'),
  tableDeleted: new Answer('table deleted successfully'),
  recordCreated: new Answer('record created successfully'),
  recordQueried: new Answer('record queried successfully'),
  searched: new Answer('search completed successfully'),
  recordDeleted: new Answer('record deleted successfully'),
  variantCreated: new Answer('variant created successfully'),
  variantIncremented: new Answer('variant incremented successfully'),
  variantQueried: new Answer('variant queried successfully'),
  variantDeleted: new Answer('variant deleted successfully'),
  lockCreated: new Answer('lock created successfully'),
  leaseAcquired: new Answer('lease acquired successfully'),
  lockDeleted: new Answer('lock deleted successfully'),
  lockQueried: new Answer('lock queried successfully'),
  txnDone: new Answer('transaction execute successfully'),
  healthy: new Answer('server is healthy'),
  tablesListed: new Answer('tables listed successfully'),
  recordsListed: new Answer('records listed successfully'),
  variantsListed: new Answer('variants listed successfully'),
  locksListed: new Answer('locks listed successfully'),
  indexCreated: new Answer('index created successfully'),
  indexesListed: new Answer('indexes listed successfully'),
  indexDeleted: new Answer('index deleted successfully'),
  clock: new Answer('clock advanced'),
};

const ttlOf = (body: Body): number => (body.ttl === undefined ? 0 : (body.ttl as number));

// ---- tables ------------------------------------------------------------------

export async function createTable(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.tables.create(name, ttlOf(body));
  send(res, 201, A.tableCreated);
}

export async function insertRow(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  const id = await ctx.store.tables.insert(name, body.rows as Row);
  send(res, 201, A.rowInserted, `{"t_id":${id}}`);
}

export async function queryTable(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const limit = intParam('limit', args.query.limit, 1, Number.MAX_SAFE_INTEGER);
  const after = intParam('after', args.query.after, 0, Number.MAX_SAFE_INTEGER);
  send(res, 200, A.tableQueried, await ctx.store.tables.page(name, limit, after));
}

export async function queryRows(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  const data = isPlainQuery(body) ? ctx.store.tables.query(name, body.wheres as Row) : ctx.store.tables.find(name, rowQueryOf(body));
  send(res, 200, A.rowsQueried, await data);
}

// ---- listing and indexes -------------------------------------------------------

function lister(kind: ListKind, answer: Answer) {
  return async (ctx: Ctx, _name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> => {
    send(res, 200, answer, await ctx.store.list(kind, listOptionsOf(args.query)));
  };
}
export const listTables = lister('tables', A.tablesListed);
export const listRecords = lister('records', A.recordsListed);
export const listVariants = lister('variants', A.variantsListed);
export const listLocks = lister('locks', A.locksListed);

export async function createIndex(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  await ctx.store.tables.createIndex(name, indexFieldOf(args.sub));
  send(res, 201, A.indexCreated);
}

export async function listIndexes(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.indexesListed, await ctx.store.tables.listIndexes(name));
}

export async function dropIndex(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  await ctx.store.tables.dropIndex(name, args.sub);
  send(res, 200, A.indexDeleted);
}

export async function patchRows(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.tables.patch(name, body.wheres as Row, body.sets as Row);
  send(res, 200, A.rowsPatched);
}

export async function deleteRows(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.tables.deleteRows(name, body.wheres as Row);
  send(res, 200, A.rowsRemoved);
}

export async function dropTable(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.tables.drop(name);
  send(res, 200, A.tableDeleted);
}

// ---- records (and the quick-start /table/<key> spelling) ----------------------

export async function putRecord(ctx: Ctx, id: string, body: Body, res: ServerResponse): Promise<void> {
  const created = await ctx.store.records.put(id, body.record as Row, ttlOf(body));
  send(res, created ? 201 : 200, A.recordCreated);
}

export async function putQuick(ctx: Ctx, id: string, body: Body, res: ServerResponse): Promise<void> {
  const created = await ctx.store.records.put(id, body.table as Row, ttlOf(body));
  send(res, created ? 201 : 200, A.recordCreated);
}

export function getRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const json = ctx.store.records.get(id);
  if (typeof json === 'string') return send(res, 200, A.recordQueried, json);
  return json.then((j) => send(res, 200, A.recordQueried, j));
}

export async function searchRecord(ctx: Ctx, id: string, body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.searched, await ctx.store.records.search(id, body.column as string));
}

export async function deleteRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.records.delete(id);
  send(res, 200, A.recordDeleted);
}

// ---- variants -----------------------------------------------------------------

export async function putVariant(ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string): Promise<void> {
  // The number's source text decides its type: 3 is an integer, 3.0 a double.
  const text = typeof body.variant === 'number' ? numberText(raw, 'variant') : undefined;
  const [created, data] = await ctx.store.variants.put(name, { value: body.variant, text }, ttlOf(body));
  send(res, created ? 201 : 200, A.variantCreated, data);
}

export async function incrementVariant(ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string): Promise<void> {
  const text = typeof body.delta === 'number' ? numberText(raw, 'delta') : undefined;
  send(res, 200, A.variantIncremented, await ctx.store.variants.increment(name, { value: body.delta, text }));
}

export function getVariant(ctx: Ctx, name: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const data = ctx.store.variants.get(name);
  if (typeof data === 'string') return send(res, 200, A.variantQueried, data);
  return data.then((d) => send(res, 200, A.variantQueried, d));
}

export async function deleteVariant(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.variants.delete(name);
  send(res, 200, A.variantDeleted);
}

// ---- locks --------------------------------------------------------------------

export async function acquireLock(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  const holder = typeof body.holder === 'string' ? body.holder : null;
  send(res, 201, A.lockCreated, await ctx.store.locks.acquire(name, body.ttl as number, holder));
}

export async function renewLock(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  // Omitted ttl keeps the lease's own length.
  send(res, 200, A.leaseAcquired, await ctx.store.locks.renew(name, body.token as string, ttlOf(body)));
}

export async function releaseLock(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.locks.release(name, body.token as string);
  send(res, 200, A.lockDeleted);
}

export async function queryLock(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.lockQueried, await ctx.store.locks.query(name));
}

// ---- transactions -------------------------------------------------------------

export async function transact(ctx: Ctx, _name: string, body: Body, res: ServerResponse, raw: string): Promise<void> {
  send(res, 200, A.txnDone, await ctx.store.transact(parseTransaction(body, raw)));
}

// ---- health and the test clock ------------------------------------------------

export async function health(ctx: Ctx, _name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.healthy, await ctx.health.data());
}

export function advanceClock(ctx: Ctx, _name: string, body: Body, res: ServerResponse): void {
  const ms = body.advance_ms;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0) {
    throw invalid(`field 'advance_ms' must be an integer ≥ 0`);
  }
  (ctx.advanceClock as (ms: number) => void)(ms);
  send(res, 200, A.clock);
}
