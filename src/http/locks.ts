/**
 * The endpoints of lease locks (docs/api.md, "Locks").
 */
import type { ServerResponse } from 'node:http';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send } from './envelope.js';
import { type Ctx, ttlOf } from './context.js';

const A = {
  lockCreated: new Answer('lock created successfully'),
  leaseAcquired: new Answer('lease acquired successfully'),
  lockDeleted: new Answer('lock deleted successfully'),
  lockQueried: new Answer('lock queried successfully'),
};

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
