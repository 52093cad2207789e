/**
 * Handlers of the set and sorted-set endpoints (docs/api.md, "Sets",
 * "Sorted sets", and their quick-start spellings /set/<key>, /zset/<key>):
 * checked body → the store's typed input (src/store/collection.ts checks
 * members and scores) → one store call → the envelope. Messages are the
 * contract's; each lives in one Answer.
 */
import type { ServerResponse } from 'node:http';
import { checkMember, MAX_COMBINE, membersOf, parseBound, SET_OPS, type SetOp, scoresOf, Z_MODES, type ZMode, type ZRange } from '../store/collection.js';
import { invalid } from '../store/errors.js';
import { scoresInSlices, setContentInSlices } from '../store/large-input.js';
import type { SetStore, VersionOut, ZsetStore } from '../store/store.js';
import { checkName } from '../store/validate.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send, sendTagged, sendTaggedText, sendText } from './envelope.js';
import { combinedText, quickSetText, quickZsetText, setText, zsetText } from './elements.js';
import { type Args, type Ctx, preconditionOf } from './context.js';
import { intParam } from './query-body.js';

const A = {
  setCreated: new Answer('set created successfully'),
  setQueried: new Answer('set queried successfully'),
  setAdded: new Answer('set members added successfully'),
  setRemoved: new Answer('set members removed successfully'),
  setCombined: new Answer('set combined successfully'),
  setPatched: new Answer('set patched successfully'),
  setDeleted: new Answer('set deleted successfully'),
  zsetCreated: new Answer('zset created successfully'),
  zsetAdded: new Answer('zset members added successfully'),
  zsetIncremented: new Answer('zset member incremented successfully'),
  zsetRemoved: new Answer('zset members removed successfully'),
  zsetQueried: new Answer('zset queried successfully'),
  zsetMember: new Answer('zset member queried successfully'),
  zsetPatched: new Answer('zset patched successfully'),
  zsetDeleted: new Answer('zset deleted successfully'),
};

const MAX_SET_PAGE = 1000;

function sets(ctx: Ctx): SetStore {
  return ctx.store.sets;
}

function zsets(ctx: Ctx): ZsetStore {
  return ctx.store.zsets;
}

const ttlOf = (body: { ttl?: number }): number => body.ttl ?? 0;
const createOf = (body: { create?: boolean }): boolean => body.create !== false;

/** Whether `v` is one of `options`, as a type guard. */
function oneOf<T extends string>(options: readonly T[], v: string): v is T {
  return options.some((o) => o === v);
}

// ---- sets ---------------------------------------------------------------------------

export async function putSet(ctx: Ctx, name: string, body: BodyOf<typeof b.putSet>, res: ServerResponse): Promise<void> {
  const members = await setContentInSlices('set', body.set);
  const created = await sets(ctx).put(name, members, ttlOf(body), preconditionOf(body, res));
  send(res, created ? 201 : 200, A.setCreated);
}

export async function getSet(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const limit = intParam('limit', args.query.limit, 1, MAX_SET_PAGE);
  const after = args.query.after === undefined ? undefined : checkMember(`query parameter 'after'`, args.query.after);
  if (limit === undefined && after === undefined) {
    // Every member: in batches, streamed when there are many (docs/query.md, "Large collections").
    const e = await sets(ctx).members(name);
    return sendTaggedText(res, 200, A.setQueried, setText(e, e.count), e.version);
  }
  const out: VersionOut = { version: 0 };
  const data = await sets(ctx).get(name, limit, after, out);
  sendTagged(res, 200, A.setQueried, data, out.version);
}

export async function addToSet(ctx: Ctx, name: string, body: BodyOf<typeof b.addToSet>, res: ServerResponse): Promise<void> {
  const members = membersOf('members', body.members);
  send(res, 200, A.setAdded, await sets(ctx).add(name, members, createOf(body), preconditionOf(body, res)));
}

export async function removeFromSet(ctx: Ctx, name: string, body: BodyOf<typeof b.removeMembers>, res: ServerResponse): Promise<void> {
  const members = membersOf('members', body.members);
  send(res, 200, A.setRemoved, await sets(ctx).remove(name, members, preconditionOf(body, res)));
}

export async function setContains(ctx: Ctx, name: string, body: BodyOf<typeof b.setContains>, res: ServerResponse): Promise<void> {
  send(res, 200, A.setQueried, await sets(ctx).contains(name, membersOf('members', body.members)));
}

export async function combineSets(ctx: Ctx, name: string, body: BodyOf<typeof b.combineSets>, res: ServerResponse): Promise<void> {
  const op = body.op;
  if (!oneOf<SetOp>(SET_OPS, op)) throw invalid(`field 'op' must be union, inter or diff, not ${JSON.stringify(op)}`);
  const w = body.with;
  if (w.length < 1 || w.length > MAX_COMBINE) throw invalid(`field 'with' must name 1 to ${MAX_COMBINE} sets`);
  const names: string[] = [];
  for (let i = 0; i < w.length; i++) {
    const n = w[i];
    if (typeof n !== 'string') throw invalid(`field 'with' item ${i} must be a set name (a string)`);
    checkName(n, `field 'with' item ${i}: set`);
    names.push(n);
  }
  if (body.store !== undefined) checkName(body.store, `field 'store': set`);
  // The write is to the set 'store' names, a replace: its condition is a PUT's.
  const pre = preconditionOf(body, res);
  if (pre !== undefined && body.store === undefined) {
    throw invalid(`a condition (if_version, if_absent, If-Match or If-None-Match) applies to the set that 'store' replaces: give 'store'`);
  }
  if (body.store === undefined) return sendText(res, 200, A.setCombined, combinedText(await sets(ctx).combineMembers(name, op, names)));
  send(res, 200, A.setCombined, await sets(ctx).combine(name, op, names, body.store, pre));
}

export async function patchSet(ctx: Ctx, name: string, body: BodyOf<typeof b.lifetime>, res: ServerResponse): Promise<void> {
  await sets(ctx).expire(name, body.ttl, preconditionOf(body, res));
  send(res, 200, A.setPatched);
}

export async function deleteSet(ctx: Ctx, name: string, body: BodyOf<typeof b.onlyIfVersion>, res: ServerResponse): Promise<void> {
  await sets(ctx).delete(name, preconditionOf(body, res));
  send(res, 200, A.setDeleted);
}

/** PUT /set/<key>: the quick-start spelling takes the same body as PUT /sets/<name>. */
export const putSetQuick = putSet;

/** GET /set/<key>: {"set": [every member, in byte order]}. */
export async function getSetQuick(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  const e = await sets(ctx).members(name);
  return sendTaggedText(res, 200, A.setQueried, quickSetText(e), e.version);
}

// ---- sorted sets -----------------------------------------------------------------------

export async function putZset(ctx: Ctx, name: string, body: BodyOf<typeof b.putZset>, res: ServerResponse): Promise<void> {
  const pairs = await scoresInSlices('zset', body.zset);
  const created = await zsets(ctx).put(name, pairs, ttlOf(body), preconditionOf(body, res));
  send(res, created ? 201 : 200, A.zsetCreated);
}

export async function addToZset(ctx: Ctx, name: string, body: BodyOf<typeof b.addToZset>, res: ServerResponse): Promise<void> {
  const pairs = scoresOf('members', body.members, true);
  const mode = body.mode ?? 'upsert';
  if (!oneOf<ZMode>(Z_MODES, mode)) throw invalid(`field 'mode' must be upsert, nx, xx, gt or lt, not ${JSON.stringify(mode)}`);
  send(res, 200, A.zsetAdded, await zsets(ctx).add(name, pairs, mode, createOf(body), preconditionOf(body, res)));
}

export async function incrZset(ctx: Ctx, name: string, body: BodyOf<typeof b.incrZset>, res: ServerResponse): Promise<void> {
  const member = checkMember(`field 'member'`, body.member);
  send(res, 200, A.zsetIncremented, await zsets(ctx).incr(name, member, body.delta, createOf(body), preconditionOf(body, res)));
}

export async function removeFromZset(ctx: Ctx, name: string, body: BodyOf<typeof b.removeMembers>, res: ServerResponse): Promise<void> {
  const members = membersOf('members', body.members);
  send(res, 200, A.zsetRemoved, await zsets(ctx).remove(name, members, preconditionOf(body, res)));
}

const RANK_ONLY = ['start', 'stop'];
const SCORE_ONLY = ['min', 'max', 'offset', 'limit'];

/** A signed integer query parameter (ranks count from the end when negative). */
function signedParam(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^-?[0-9]{1,15}$/.test(v)) throw invalid(`query parameter '${name}' must be an integer (negative counts from the end)`);
  return Number(v);
}

function boolParam(name: string, v: string | undefined): boolean {
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1' || v === '') return true;
  throw invalid(`query parameter '${name}' must be true or false`);
}

/** The query string of GET /zsets/<name> as a ZRange (docs/api.md, "Sorted sets"). */
export function zrangeOf(q: Readonly<Record<string, string>>): ZRange {
  const by = q.by ?? 'rank';
  const rev = boolParam('rev', q.rev);
  if (by === 'rank') {
    for (const p of SCORE_ONLY) if (q[p] !== undefined) throw invalid(`query parameter '${p}' applies only with by=score`);
    return { by, start: signedParam('start', q.start, 0), stop: signedParam('stop', q.stop, -1), rev };
  }
  if (by !== 'score') throw invalid(`query parameter 'by' must be rank or score, not '${by}'`);
  for (const p of RANK_ONLY) if (q[p] !== undefined) throw invalid(`query parameter '${p}' applies only with by=rank`);
  return {
    by,
    min: q.min === undefined ? { score: -Infinity, open: false } : parseBound('min', q.min),
    max: q.max === undefined ? { score: Infinity, open: false } : parseBound('max', q.max),
    offset: intParam('offset', q.offset, 0, Number.MAX_SAFE_INTEGER) ?? 0,
    limit: intParam('limit', q.limit, 0, Number.MAX_SAFE_INTEGER),
    rev,
  };
}

export async function getZset(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  const e = await zsets(ctx).items(name, zrangeOf(args.query));
  return sendTaggedText(res, 200, A.zsetQueried, zsetText(e, e.count), e.version);
}

export async function getZsetMember(ctx: Ctx, name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): Promise<void> {
  send(res, 200, A.zsetMember, await zsets(ctx).member(name, args.sub));
}

export async function patchZset(ctx: Ctx, name: string, body: BodyOf<typeof b.lifetime>, res: ServerResponse): Promise<void> {
  await zsets(ctx).expire(name, body.ttl, preconditionOf(body, res));
  send(res, 200, A.zsetPatched);
}

export async function deleteZset(ctx: Ctx, name: string, body: BodyOf<typeof b.onlyIfVersion>, res: ServerResponse): Promise<void> {
  await zsets(ctx).delete(name, preconditionOf(body, res));
  send(res, 200, A.zsetDeleted);
}

export const putZsetQuick = putZset;

/** GET /zset/<key>: {"zset": {member: score, …}} in sorted-set order. */
export async function getZsetQuick(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  const e = await zsets(ctx).items(name, { by: 'rank', start: 0, stop: -1, rev: false });
  return sendTaggedText(res, 200, A.zsetQueried, quickZsetText(e), e.version);
}
