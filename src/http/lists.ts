/**
 * The list endpoints (docs/api.md, "Lists") and their quick-start spelling
 * `/list/<key>`: checked bodies (routes.ts declares the types; the shapes
 * inside them are checked here, each failure naming its field) to one
 * ListStore call each.
 */
import type { ServerResponse } from 'node:http';
import { invalid, StoreError } from '../store/errors.js';
import { checkSide, MAX_WAIT_MS } from '../store/lists.js';
import { popCountOf, valuesOf } from '../store/collection.js';
import type { ListPatch, ListPop, ListStore, Store, VersionOut } from '../store/store.js';
import { checkName } from '../store/validate.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send, sendTaggedText } from './envelope.js';
import { listText, quickListText } from './elements.js';
import { type Args, type Ctx, preconditionOf } from './context.js';

const A = {
  created: new Answer('list created successfully'),
  queried: new Answer('list queried successfully'),
  pushed: new Answer('list pushed successfully'),
  popped: new Answer('list popped successfully'),
  patched: new Answer('list patched successfully'),
  deleted: new Answer('list deleted successfully'),
};

function listsOf(store: Store): ListStore {
  return store.lists;
}

function int(v: unknown, field: string, min = -Number.MAX_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(min === -Number.MAX_SAFE_INTEGER ? `field '${field}' must be an integer` : `field '${field}' must be an integer ≥ ${min} and ≤ ${max}`);
  }
  return v;
}

/** An index given as a query parameter: an integer, negatives counting from the right. */
function indexParam(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^-?[0-9]{1,15}$/.test(v)) throw invalid(`query parameter '${name}' must be an integer (negative counts from the end)`);
  return Number(v);
}

/** An object field's own keys: only these, each required. */
function parts(o: Record<string, unknown>, field: string, keys: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) throw invalid(`unknown field '${field}.${k}' (allowed: ${keys.join(', ')})`);
  }
  for (const k of keys) if (o[k] === undefined) throw invalid(`field '${field}.${k}' is required`);
}

function listName(s: string, field: string): string {
  try {
    checkName(s, 'list');
  } catch (err) {
    if (err instanceof StoreError) throw invalid(`field '${field}': ${err.message}`);
    throw err;
  }
  return s;
}

export async function putList(ctx: Ctx, name: string, body: BodyOf<typeof b.putList>, res: ServerResponse): Promise<void> {
  const created = await listsOf(ctx.store).put(name, body.list, body.ttl ?? 0, preconditionOf(body, res));
  send(res, created ? 201 : 200, A.created);
}

export function getList(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): void | Promise<void> {
  const start = indexParam('start', args.query.start, 0);
  const stop = indexParam('stop', args.query.stop, -1);
  const e = listsOf(ctx.store).items(name, start, stop);
  // Served from memory (the common case): answered in this call, with no promise.
  if (!(e instanceof Promise)) return sendTaggedText(res, 200, A.queried, listText(e, e.count), e.version);
  return e.then((v) => sendTaggedText(res, 200, A.queried, listText(v, v.count), v.version));
}

export async function pushList(ctx: Ctx, name: string, body: BodyOf<typeof b.pushList>, res: ServerResponse): Promise<void> {
  const values = valuesOf('values', body.values);
  const side = body.side === undefined ? 'right' : checkSide(body.side, 'side');
  const create = body.create !== false;
  send(res, 200, A.pushed, await listsOf(ctx.store).push(name, values, side, create, preconditionOf(body, res)));
}

export async function popList(ctx: Ctx, name: string, body: BodyOf<typeof b.popList>, res: ServerResponse): Promise<void> {
  const p: ListPop = {
    side: body.side === undefined ? 'left' : checkSide(body.side, 'side'),
    count: body.count === undefined ? 1 : popCountOf('count', body.count),
    waitMs: body.wait_ms === undefined ? 0 : int(body.wait_ms, 'wait_ms', 0, MAX_WAIT_MS),
    toSide: body.to_side === undefined ? 'left' : checkSide(body.to_side, 'to_side'),
  };
  if (body.to !== undefined) p.to = listName(body.to, 'to');
  else if (body.to_side !== undefined) throw invalid(`field 'to_side' needs 'to' (the list to move the items to)`);
  const pre = preconditionOf(body, res);
  if (p.waitMs > 0) {
    // A waiting pop whose client has gone must pop nothing (docs/api.md, "Lists").
    const gone = new AbortController();
    const onClose = (): void => {
      if (!res.writableEnded) gone.abort();
    };
    res.once('close', onClose);
    p.gone = gone.signal;
    try {
      const data = await listsOf(ctx.store).pop(name, p, pre);
      if (!res.destroyed) send(res, 200, A.popped, data);
    } finally {
      res.off('close', onClose);
    }
    return;
  }
  send(res, 200, A.popped, await listsOf(ctx.store).pop(name, p, pre));
}

const PATCH_OPS = ['set', 'trim', 'remove'] as const;

export async function patchList(ctx: Ctx, name: string, body: BodyOf<typeof b.patchList>, res: ServerResponse): Promise<void> {
  const given = PATCH_OPS.filter((k) => body[k] !== undefined);
  if (given.length === 0 && body.ttl === undefined) throw invalid(`PATCH of a list needs one of 'set', 'trim', 'remove' or 'ttl'`);
  if (given.length > 1) throw invalid(`fields '${given[0]}' and '${given[1]}' cannot be combined: send one of set, trim or remove (ttl may come with it)`);
  const p: ListPatch = {};
  if (body.set !== undefined) {
    const s = body.set;
    parts(s, 'set', ['index', 'value']);
    p.set = { index: int(s.index, 'set.index'), value: s.value };
  } else if (body.trim !== undefined) {
    const t = body.trim;
    parts(t, 'trim', ['start', 'stop']);
    p.trim = { start: int(t.start, 'trim.start'), stop: int(t.stop, 'trim.stop') };
  } else if (body.remove !== undefined) {
    const r = body.remove;
    parts(r, 'remove', ['value', 'count']);
    p.remove = { value: r.value, count: int(r.count, 'remove.count') };
  }
  if (body.ttl !== undefined) p.ttl = body.ttl;
  send(res, 200, A.patched, await listsOf(ctx.store).patch(name, p, preconditionOf(body, res)));
}

export async function deleteList(ctx: Ctx, name: string, body: BodyOf<typeof b.onlyIfVersion>, res: ServerResponse): Promise<void> {
  await listsOf(ctx.store).delete(name, preconditionOf(body, res));
  send(res, 200, A.deleted);
}

// ---- the quick-start spelling /list/<key> (docs/api.md, "Numbers, texts, and the quick-start spellings")

export function getQuickList(ctx: Ctx, name: string, _body: Body, res: ServerResponse): void | Promise<void> {
  const e = listsOf(ctx.store).items(name, 0, -1);
  if (!(e instanceof Promise)) return sendTaggedText(res, 200, A.queried, quickListText(e), e.version);
  return e.then((v) => sendTaggedText(res, 200, A.queried, quickListText(v), v.version));
}
