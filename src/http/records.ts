/**
 * The endpoints of records (docs/api.md, "Records"), and their quick-start
 * spelling /table/<key>.
 */
import type { ServerResponse } from 'node:http';
import { invalid } from '../store/errors.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send, sendTagged } from './envelope.js';
import { type Ctx, preconditionOf, tagged, ttlOf, VERSION } from './context.js';

const A = {
  recordCreated: new Answer('record created successfully'),
  recordQueried: new Answer('record queried successfully'),
  searched: new Answer('search completed successfully'),
  recordDeleted: new Answer('record deleted successfully'),
  recordPatched: new Answer('record patched successfully'),
};

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

export async function searchRecord(ctx: Ctx, id: string, body: BodyOf<typeof b.searchRecord>, res: ServerResponse): Promise<void> {
  send(res, 200, A.searched, await ctx.store.records.search(id, body.column));
}

export async function deleteRecord(ctx: Ctx, id: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.records.delete(id);
  send(res, 200, A.recordDeleted);
}
