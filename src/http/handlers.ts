/**
 * The endpoints that are no one kind's: transactions, the change feed,
 * backup, health and the test clock. The handler kit is context.ts; the
 * handlers of each kind have their own file (tables.ts, records.ts, …).
 */
import type { ServerResponse } from 'node:http';
import { invalid, StoreError } from '../store/errors.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, drained, send } from './envelope.js';
import type { Ctx } from './context.js';
import { parseTransaction } from './txn-body.js';

const A = {
  txnDone: new Answer('transaction execute successfully'),
  healthy: new Answer('server is healthy'),
  clock: new Answer('clock advanced'),
};

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
