/**
 * One function per endpoint: turn the checked body (fields.ts, as routes.ts
 * declares it) into the store's typed input, call the store, send the
 * envelope. Messages are the contract's, byte for byte (docs/api.md); each
 * lives in one precomputed Answer.
 */
import type { ServerResponse } from 'node:http';
import type { Precondition, Store, Sync, Text, VersionOut } from '../store/store.js';
import type { Row } from '../store/wheres.js';
import { invalid, StoreError } from '../store/errors.js';
import { numberText } from '../store/json.js';
import { checkUnset, rowIdOfText } from '../store/rows.js';
import type { Body } from './body.js';
import type * as b from './bodies.js';
import type { BodyOf } from './fields.js';
import { Answer, drained, send, sendTagged, sendText } from './envelope.js';
import type { Health } from '../health.js';
import { parseTransaction } from './txn-body.js';
import { indexFieldOf, intParam, isPlainQuery, listOptionsOf, rowQueryOf } from './query-body.js';
import type { ListKind } from '../store/store.js';
import type { WatchHub } from './watch.js';
import { appendIfAsked } from './numtext.js';
import type { RedisRest } from './redis-rest.js';

export interface Ctx {
  store: Store;
  health: Health;
  /** Advances the injectable clock; undefined unless PITHOS_TEST_CLOCK=1. */
  advanceClock: ((ms: number) => void) | undefined;
  /** The change feed's fan-out (watch.ts); absent: GET /watch answers 503. */
  watch?: WatchHub;
  /** The Upstash REST routes' runner and secrets (redis-rest.ts); absent: they answer 503. */
  redis?: RedisRest;
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
  recordPatched: new Answer('record patched successfully'),
  variantPatched: new Answer('variant patched successfully'),
  tablePatched: new Answer('table patched successfully'),
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
  rowQueried: new Answer('table row queried successfully'),
  rowReplaced: new Answer('table row replaced successfully'),
  rowPatched: new Answer('table row patched successfully'),
  rowRemoved: new Answer('table row removed successfully'),
  setsListed: new Answer('sets listed successfully'),
  zsetsListed: new Answer('zsets listed successfully'),
  indexCreated: new Answer('index created successfully'),
  indexesListed: new Answer('indexes listed successfully'),
  indexDeleted: new Answer('index deleted successfully'),
  clock: new Answer('clock advanced'),
};

const ttlOf = (body: { ttl?: number }): number => body.ttl ?? 0;

/** Filled by synchronous reads (the cached fast path): one object for the process, not one per request. */
const VERSION: VersionOut = { version: 0 };

const QUOTED_VERSION = /^\s*"(\d{1,16})"\s*$/;

/**
 * The condition of a conditional write (docs/api.md, "Versions and
 * conditional writes"): body `if_version` / `if_absent: true`, or headers
 * `If-Match: "<v>"` / `If-None-Match: *`. At most one may be given.
 */
export function preconditionOf(body: { if_version?: number; if_absent?: boolean }, res: ServerResponse): Precondition | undefined {
  const h = res.req.headers;
  const im = h['if-match'];
  const inm = h['if-none-match'];
  const v = body.if_version;
  const absent = body.if_absent === true;
  // The common unconditional write allocates nothing here.
  if (v === undefined && !absent && im === undefined && inm === undefined) return undefined;
  const given = (v !== undefined ? 1 : 0) + (absent ? 1 : 0) + (im !== undefined ? 1 : 0) + (inm !== undefined ? 1 : 0);
  if (given > 1) throw invalid('give at most one condition: if_version, if_absent, If-Match or If-None-Match');
  if (v !== undefined) return { ifVersion: v };
  if (absent) return { ifAbsent: true };
  if (im !== undefined) {
    const m = QUOTED_VERSION.exec(im);
    if (m === null) throw invalid(`header 'If-Match' must be one quoted version, such as "12" (as ETag gives it)`);
    return { ifVersion: Number(m[1]) };
  }
  if (inm === undefined || inm.trim() !== '*') throw invalid(`header 'If-None-Match' must be * (create only)`);
  return { ifAbsent: true };
}

// ---- tables ------------------------------------------------------------------

export async function createTable(ctx: Ctx, name: string, body: BodyOf<typeof b.createTable>, res: ServerResponse): Promise<void> {
  await ctx.store.tables.create(name, ttlOf(body));
  send(res, 201, A.tableCreated);
}

export async function insertRow(ctx: Ctx, name: string, body: BodyOf<typeof b.insertRow>, res: ServerResponse): Promise<void> {
  const id = await ctx.store.tables.insert(name, body.rows);
  send(res, 201, A.rowInserted, `{"t_id":${id}}`);
}

export async function queryTable(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const limit = intParam('limit', args.query.limit, 1, Number.MAX_SAFE_INTEGER);
  const after = intParam('after', args.query.after, 0, Number.MAX_SAFE_INTEGER);
  return sendText(res, 200, A.tableQueried, await ctx.store.tables.page(name, limit, after));
}

/** Answered in the same call when the store served it from memory (no promise, as GET of a cached value). */
export function queryRows(ctx: Ctx, name: string, body: BodyOf<typeof b.rowQuery>, res: ServerResponse): void | Promise<void> {
  const data = isPlainQuery(body) ? ctx.store.tables.query(name, body.wheres) : ctx.store.tables.find(name, rowQueryOf(body));
  if (!(data instanceof Promise)) return sendText(res, 200, A.rowsQueried, data);
  return sendLater(res, A.rowsQueried, data);
}

async function sendLater(res: ServerResponse, answer: Answer, data: Promise<Text>): Promise<void> {
  return sendText(res, 200, answer, await data);
}

// ---- listing and indexes -------------------------------------------------------

function lister(kind: ListKind, answer: Answer) {
  return (ctx: Ctx, _name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): void | Promise<void> => {
    const data = ctx.store.list(kind, listOptionsOf(args.query));
    if (typeof data === 'string') return send(res, 200, answer, data);
    return sendLater(res, answer, data);
  };
}
export const listTables = lister('tables', A.tablesListed);
export const listRecords = lister('records', A.recordsListed);
export const listVariants = lister('variants', A.variantsListed);
export const listLocks = lister('locks', A.locksListed);
export const listLists = lister('lists', new Answer('lists listed successfully'));
export const listSets = lister('sets', A.setsListed);
export const listZsets = lister('zsets', A.zsetsListed);

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

/**
 * Two forms on one path (docs/api.md): `wheres` + `sets` patch rows, as
 * ever; `ttl` alone sets the table's remaining lifetime. Mixing them is 400.
 */
export async function patchRows(ctx: Ctx, name: string, body: BodyOf<typeof b.patchRows>, res: ServerResponse): Promise<void> {
  if (body.ttl !== undefined) {
    if (body.wheres !== undefined || body.sets !== undefined) {
      throw invalid(`field 'ttl' cannot be combined with 'wheres' or 'sets': send ttl alone to set the lifetime, or wheres and sets to patch rows`);
    }
    await ctx.store.tables.expire(name, body.ttl);
    return send(res, 200, A.tablePatched);
  }
  if (body.wheres === undefined) throw invalid(`field 'wheres' is required (an object)`);
  if (body.sets === undefined) throw invalid(`field 'sets' is required (an object)`);
  await ctx.store.tables.patch(name, body.wheres, body.sets);
  send(res, 200, A.rowsPatched);
}

export async function deleteRows(ctx: Ctx, name: string, body: BodyOf<typeof b.deleteRows>, res: ServerResponse): Promise<void> {
  await ctx.store.tables.deleteRows(name, body.wheres);
  send(res, 200, A.rowsRemoved);
}

// ---- one row by t_id ---------------------------------------------------------

/**
 * The condition of a row write: `if_version` or `If-Match`. A row PUT never
 * creates one (t_ids are the server's), so "create only" can never hold.
 */
function rowPrecondition(body: { if_version?: number }, res: ServerResponse): Precondition | undefined {
  const pre = preconditionOf(body, res);
  if (pre?.ifAbsent === true) throw invalid(`header 'If-None-Match' does not apply to a row: a row is created by POST /tables/<name>/rows, never by PUT`);
  return pre;
}

export function getRow(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): void | Promise<void> {
  const id = rowIdOfText(args.sub);
  const json = ctx.store.tables.getRow(name, id, VERSION);
  if (typeof json === 'string') return sendTagged(res, 200, A.rowQueried, json, VERSION.version);
  return tagged(json, (out) => ctx.store.tables.getRow(name, id, out), res, A.rowQueried);
}

export async function replaceRow(ctx: Ctx, name: string, body: BodyOf<typeof b.replaceRow>, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const id = rowIdOfText(args.sub);
  await ctx.store.tables.replaceRow(name, id, body.rows, rowPrecondition(body, res));
  send(res, 200, A.rowReplaced);
}

export async function patchRow(ctx: Ctx, name: string, body: BodyOf<typeof b.patchRow>, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const id = rowIdOfText(args.sub);
  const sets = body.sets;
  const unset = body.unset === undefined ? [] : checkUnset(body.unset, sets);
  await ctx.store.tables.patchRow(name, id, sets, unset, rowPrecondition(body, res));
  send(res, 200, A.rowPatched);
}

export async function deleteRow(ctx: Ctx, name: string, body: BodyOf<typeof b.onlyIfVersion>, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const id = rowIdOfText(args.sub);
  await ctx.store.tables.deleteRow(name, id, rowPrecondition(body, res));
  send(res, 200, A.rowRemoved);
}

export async function dropTable(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.tables.drop(name);
  send(res, 200, A.tableDeleted);
}

// ---- records (and the quick-start /table/<key> spelling) ----------------------

export async function putRecord(ctx: Ctx, id: string, body: BodyOf<typeof b.putRecord>, res: ServerResponse): Promise<void> {
  const created = await ctx.store.records.put(id, body.record, ttlOf(body), preconditionOf(body, res));
  send(res, created ? 201 : 200, A.recordCreated);
}

/** `sets` merges fields (null deletes one) keeping the ttl; `ttl` sets the lifetime; both do both. */
export async function patchRecord(ctx: Ctx, id: string, body: BodyOf<typeof b.patchRecord>, res: ServerResponse): Promise<void> {
  const pre = preconditionOf(body, res);
  if (body.sets !== undefined) {
    await ctx.store.records.patch(id, body.sets, pre, body.ttl);
  } else if (body.ttl !== undefined) {
    await ctx.store.records.expire(id, body.ttl, pre);
  } else {
    throw invalid(`PATCH of a record needs 'sets' or 'ttl'`);
  }
  send(res, 200, A.recordPatched);
}

export async function putQuick(ctx: Ctx, id: string, body: BodyOf<typeof b.putQuick>, res: ServerResponse): Promise<void> {
  const created = await ctx.store.records.put(id, body.table, ttlOf(body));
  send(res, created ? 201 : 200, A.recordCreated);
}

export function getRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const json = ctx.store.records.get(id, VERSION);
  if (typeof json === 'string') return sendTagged(res, 200, A.recordQueried, json, VERSION.version);
  return tagged(json, (out) => ctx.store.records.get(id, out), res, A.recordQueried);
}

/**
 * The slow path of a versioned GET (value not in memory): the read that
 * was started with the shared holder is dropped, and one with a holder of
 * its own answers, since other requests reuse the shared one meanwhile.
 */
async function tagged(first: Promise<string>, get: (out: VersionOut) => Sync<string>, res: ServerResponse, answer: Answer): Promise<void> {
  // Superseded: the read below answers, and reports its own failure.
  first.catch(superseded);
  const out: VersionOut = { version: 0 };
  const data = await get(out);
  sendTagged(res, 200, answer, data, out.version);
}

export async function searchRecord(ctx: Ctx, id: string, body: BodyOf<typeof b.searchRecord>, res: ServerResponse): Promise<void> {
  send(res, 200, A.searched, await ctx.store.records.search(id, body.column));
}

export async function deleteRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.records.delete(id);
  send(res, 200, A.recordDeleted);
}

// ---- variants -----------------------------------------------------------------

export async function putVariant(ctx: Ctx, name: string, body: BodyOf<typeof b.putVariant>, res: ServerResponse, raw: string): Promise<void> {
  // The number's source text decides its type: 3 is an integer, 3.0 a double.
  const text = typeof body.variant === 'number' ? numberText(raw, 'variant') : undefined;
  const [created, data] = await ctx.store.variants.put(name, { value: body.variant, text }, ttlOf(body), preconditionOf(body, res));
  send(res, created ? 201 : 200, A.variantCreated, data);
}

export async function incrementVariant(ctx: Ctx, name: string, body: BodyOf<typeof b.incrementVariant>, res: ServerResponse, raw: string): Promise<void> {
  if (body.append !== undefined || body.if_version !== undefined) {
    if (await appendIfAsked(ctx, name, body, res)) return;
  }
  if (body.delta === undefined) throw invalid(`field 'delta' is required (a number)`);
  const text = typeof body.delta === 'number' ? numberText(raw, 'delta') : undefined;
  send(res, 200, A.variantIncremented, await ctx.store.variants.increment(name, { value: body.delta, text }));
}

export function getVariant(ctx: Ctx, name: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const data = ctx.store.variants.get(name, VERSION);
  if (typeof data === 'string') return sendTagged(res, 200, A.variantQueried, data, VERSION.version);
  return tagged(data, (out) => ctx.store.variants.get(name, out), res, A.variantQueried);
}

/** PATCH with `ttl` only: the variant's remaining lifetime (0 = none). */
export async function patchVariant(ctx: Ctx, name: string, body: BodyOf<typeof b.patchVariant>, res: ServerResponse): Promise<void> {
  await ctx.store.variants.expire(name, body.ttl);
  send(res, 200, A.variantPatched);
}

export async function deleteVariant(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.variants.delete(name);
  send(res, 200, A.variantDeleted);
}

// ---- locks --------------------------------------------------------------------

export async function acquireLock(ctx: Ctx, name: string, body: BodyOf<typeof b.acquireLock>, res: ServerResponse): Promise<void> {
  send(res, 201, A.lockCreated, await ctx.store.locks.acquire(name, body.ttl, body.holder ?? null));
}

export async function renewLock(ctx: Ctx, name: string, body: BodyOf<typeof b.renewLock>, res: ServerResponse): Promise<void> {
  // Omitted ttl keeps the lease's own length.
  send(res, 200, A.leaseAcquired, await ctx.store.locks.renew(name, body.token, ttlOf(body)));
}

export async function releaseLock(ctx: Ctx, name: string, body: BodyOf<typeof b.releaseLock>, res: ServerResponse): Promise<void> {
  await ctx.store.locks.release(name, body.token);
  send(res, 200, A.lockDeleted);
}

export async function queryLock(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.lockQueried, await ctx.store.locks.query(name));
}

// ---- transactions -------------------------------------------------------------

export async function transact(ctx: Ctx, _name: string, body: BodyOf<typeof b.transact>, res: ServerResponse, raw: string): Promise<void> {
  send(res, 200, A.txnDone, await ctx.store.transact(parseTransaction(body, raw)));
}

// ---- change feed --------------------------------------------------------------

/** Sets up the event stream and returns: the stream is not a request in flight (shutdown ends it). */
export function watch(ctx: Ctx, _name: string, _body: Body, res: ServerResponse): void {
  if (ctx.watch === undefined) throw new StoreError('unavailable', 'this server has no change feed');
  ctx.watch.open(res);
}

// ---- health and the test clock ------------------------------------------------

// ---- backup -------------------------------------------------------------------

/**
 * GET /backup: the store's snapshot as it arrives, not an envelope
 * (docs/api.md, "Backup"). The snapshot is taken before the first byte is
 * sent, so a failure to take it is still an ordinary error answer; one in
 * the middle of the stream can only cut the connection, which the restore
 * side detects by the missing checksum trailer.
 */
export async function backup(ctx: Ctx, _name: string, _body: Body, res: ServerResponse): Promise<void> {
  if (ctx.store.backup === undefined) {
    throw new StoreError('unavailable', "this store is backed up with its database's own tools (docs/scaling.md)");
  }
  const it = ctx.store.backup()[Symbol.asyncIterator]();
  const first = await it.next();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': `attachment; filename="pithos-${stamp}.backup"`,
  });
  try {
    // HEAD: the snapshot was taken (so it fails as GET would), but nothing is read or sent.
    for (let r = first; r.done !== true && res.req.method !== 'HEAD'; r = await it.next()) {
      if (res.destroyed) break;
      if (!res.write(r.value)) await drained(res);
    }
  } finally {
    await it.return?.();
  }
  res.end();
}

export async function health(ctx: Ctx, _name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.healthy, await ctx.health.data());
}

export function advanceClock(ctx: Ctx, _name: string, body: Body, res: ServerResponse): void {
  const ms = body.advance_ms;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0) {
    throw invalid(`field 'advance_ms' must be an integer ≥ 0`);
  }
  // Routed only with PITHOS_TEST_CLOCK=1, which is what sets advanceClock.
  if (ctx.advanceClock === undefined) throw new StoreError('unavailable', 'this server has no test clock');
  ctx.advanceClock(ms);
  send(res, 200, A.clock);
}

function superseded(): void {
  // The first read of a versioned GET, dropped for one with its own holder: that read answers, and reports its own failure.
}
