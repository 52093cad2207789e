/**
 * The endpoints of tables (docs/api.md, "Tables"): the table itself, its
 * rows by query and by t_id, and its indexes. Each turns the checked body
 * (routes.ts declares it) into the store's typed input and answers with the
 * contract's message, byte for byte, from one precomputed Answer.
 */
import type { ServerResponse } from 'node:http';
import type { Precondition } from '../store/store.js';
import { invalid } from '../store/errors.js';
import { checkUnset, rowIdOfText } from '../store/rows.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send, sendTagged, sendText } from './envelope.js';
import { type Args, type Ctx, preconditionOf, sendLater, tagged, ttlOf, VERSION } from './context.js';
import { indexFieldOf, intParam, isPlainQuery, rowQueryOf } from './query-body.js';

const A = {
  tableCreated: new Answer('table created successfully'),
  rowInserted: new Answer('table rows insert successfully'),
  tableQueried: new Answer('table queried successfully'),
  rowsQueried: new Answer('table queried rows successfully'),
  rowsPatched: new Answer('table rows patched successfully'),
  rowsRemoved: new Answer('table rows remove successfully'),
  tableDeleted: new Answer('table deleted successfully'),
  tablePatched: new Answer('table patched successfully'),
  rowQueried: new Answer('table row queried successfully'),
  rowReplaced: new Answer('table row replaced successfully'),
  rowPatched: new Answer('table row patched successfully'),
  rowRemoved: new Answer('table row removed successfully'),
  indexCreated: new Answer('index created successfully'),
  indexesListed: new Answer('indexes listed successfully'),
  indexDeleted: new Answer('index deleted successfully'),
};

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

// ---- indexes ------------------------------------------------------------------

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
