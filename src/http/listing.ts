/**
 * GET /<kind>s (docs/api.md, "List names"): one page of names of a kind.
 * One handler per kind, each with its message, from one table keyed by
 * kind, so a kind added to src/store/kinds.ts needs its line here.
 */
import type { ServerResponse } from 'node:http';
import type { ListKind } from '../store/store.js';
import type { Body } from './request-body.js';
import { Answer, send } from './envelope.js';
import { type Args, type Ctx, sendLater } from './context.js';
import { listOptionsOf } from './query-body.js';

const LISTED: Record<ListKind, Answer> = {
  tables: new Answer('tables listed successfully'),
  records: new Answer('records listed successfully'),
  variants: new Answer('variants listed successfully'),
  locks: new Answer('locks listed successfully'),
  lists: new Answer('lists listed successfully'),
  sets: new Answer('sets listed successfully'),
  zsets: new Answer('zsets listed successfully'),
};

function lister(kind: ListKind) {
  const answer = LISTED[kind];
  return (ctx: Ctx, _name: string, _body: Body, res: ServerResponse, _raw: string, args: Args): void | Promise<void> => {
    const data = ctx.store.list(kind, listOptionsOf(args.query));
    if (typeof data === 'string') return send(res, 200, answer, data);
    return sendLater(res, answer, data);
  };
}
export const listTables = lister('tables');
export const listRecords = lister('records');
export const listVariants = lister('variants');
export const listLocks = lister('locks');
export const listLists = lister('lists');
export const listSets = lister('sets');
export const listZsets = lister('zsets');
