/**
 * One function per endpoint: check the body's fields, call the model, send
 * the envelope. Messages are the contract's (API.md sections 6-10), byte for
 * byte; each lives in one precomputed Answer.
 */
import type { ServerResponse } from 'node:http';
import type { Database } from '../model/database.js';
import { invalid } from '../model/errors.js';
import { numberText } from '../model/json.js';
import { objectField, stringField, ttlField } from '../model/validate.js';
import type { Body } from './body.js';
import { Answer, send } from './envelope.js';
import type { Health } from '../health.js';

export interface Ctx {
  db: Database;
  health: Health;
  /** Advances the injectable clock; undefined unless PITHOS_TEST_CLOCK=1. */
  advanceClock: ((ms: number) => void) | undefined;
}

/** `raw` is the body's text ('' without a body); only handlers that need the source look at it. */
export type Handler = (ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string) => void | Promise<void>;

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
  healthy: new Answer('server is healthy'),
  clock: new Answer('clock advanced'),
};

// ---- tables ------------------------------------------------------------------

export async function createTable(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.db.tables.create(name, ttlField(body, 0));
  send(res, 201, A.tableCreated);
}

export async function insertRow(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  const id = await ctx.db.tables.insert(name, objectField(body, 'rows'));
  send(res, 201, A.rowInserted, `{"t_id":${id}}`);
}

export async function queryTable(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.tableQueried, await ctx.db.tables.all(name));
}

export async function queryRows(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.rowsQueried, await ctx.db.tables.query(name, objectField(body, 'wheres')));
}

export async function patchRows(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  const wheres = objectField(body, 'wheres');
  await ctx.db.tables.patch(name, wheres, objectField(body, 'sets'));
  send(res, 200, A.rowsPatched);
}

export async function deleteRows(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.db.tables.deleteRows(name, objectField(body, 'wheres'));
  send(res, 200, A.rowsRemoved);
}

export async function dropTable(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.db.tables.drop(name);
  send(res, 200, A.tableDeleted);
}

// ---- records (and the quick-start /table/<key> spelling) ----------------------

async function putDocument(ctx: Ctx, id: string, body: Body, field: string, res: ServerResponse): Promise<void> {
  const created = await ctx.db.records.put(id, objectField(body, field), ttlField(body, 0));
  send(res, created ? 201 : 200, A.recordCreated);
}

export function putRecord(ctx: Ctx, id: string, body: Body, res: ServerResponse): Promise<void> {
  return putDocument(ctx, id, body, 'record', res);
}

export function putQuick(ctx: Ctx, id: string, body: Body, res: ServerResponse): Promise<void> {
  return putDocument(ctx, id, body, 'table', res);
}

export function getRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const json = ctx.db.records.get(id);
  if (typeof json === 'string') return send(res, 200, A.recordQueried, json);
  return json.then((j) => send(res, 200, A.recordQueried, j));
}

export async function searchRecord(ctx: Ctx, id: string, body: Body, res: ServerResponse): Promise<void> {
  const column = stringField(body, 'column');
  send(res, 200, A.searched, await ctx.db.records.search(id, column));
}

export async function deleteRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.db.records.delete(id);
  send(res, 200, A.recordDeleted);
}

// ---- variants -----------------------------------------------------------------

export async function putVariant(ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string): Promise<void> {
  const ttl = ttlField(body, 0);
  const text = typeof body.variant === 'number' ? numberText(raw, 'variant') : undefined;
  const [created, data] = await ctx.db.variants.put(name, body.variant, ttl, text);
  send(res, created ? 201 : 200, A.variantCreated, data);
}

export async function incrementVariant(ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string): Promise<void> {
  const text = typeof body.delta === 'number' ? numberText(raw, 'delta') : undefined;
  send(res, 200, A.variantIncremented, await ctx.db.variants.increment(name, body.delta, text));
}

export function getVariant(ctx: Ctx, name: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const data = ctx.db.variants.get(name);
  if (typeof data === 'string') return send(res, 200, A.variantQueried, data);
  return data.then((d) => send(res, 200, A.variantQueried, d));
}

export async function deleteVariant(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.db.variants.delete(name);
  send(res, 200, A.variantDeleted);
}

// ---- locks --------------------------------------------------------------------

export async function acquireLock(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  send(res, 201, A.lockCreated, await ctx.db.locks.acquire(name, ttlField(body, 1), body.holder));
}

export async function renewLock(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  // Omitted ttl keeps the lease's own length; a given one must be >= 1.
  const ttl = body.ttl === undefined ? 0 : ttlField(body, 1);
  send(res, 200, A.leaseAcquired, await ctx.db.locks.renew(name, body.token, ttl));
}

export async function releaseLock(ctx: Ctx, name: string, body: Body, res: ServerResponse): Promise<void> {
  await ctx.db.locks.release(name, body.token);
  send(res, 200, A.lockDeleted);
}

export async function queryLock(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  send(res, 200, A.lockQueried, await ctx.db.locks.query(name));
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
