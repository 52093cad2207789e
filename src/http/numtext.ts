/**
 * `/number/<key>` and `/text/<key>` (docs/api.md, "Numbers and texts"):
 * spellings of the variant namespace, as `/table/<key>` is of records. A
 * number is an integer variant, a text a string variant; a variant of
 * another type under the key is a 409 and is left as it is. Messages are
 * the variant operations'; the data names the value `number` or `content`.
 * String `append` (here and on POST /variants) is the store's atomic
 * append, keeping the variant's expiry.
 */
import type { ServerResponse } from 'node:http';
import { conflict, invalid } from '../store/errors.js';
import { numberText } from '../store/json.js';
import type { VersionOut } from '../store/store.js';
import { isIntegerLiteral, TYPE_NAMES, type VType } from '../store/variant.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send, sendTagged } from './envelope.js';
import { type Ctx, preconditionOf, ttlOf } from './context.js';

const A = {
  created: new Answer('variant created successfully'),
  incremented: new Answer('variant incremented successfully'),
  appended: new Answer('variant appended successfully'),
  queried: new Answer('variant queried successfully'),
  deleted: new Answer('variant deleted successfully'),
};

/** The value's JSON inside a variant's data `{"variant":<v>}`. */
const valueOf = (data: string): string => data.slice(11, -1);

/** A variant's type from its value's JSON (variant.ts render: a double always shows a fraction or an exponent). */
function typeOfValue(v: string): VType {
  const c = v.charCodeAt(0);
  if (c === 34 /* " */) return 's';
  if (c === 116 /* t */ || c === 102 /* f */) return 'b';
  return /[.eE]/.test(v) ? 'd' : 'i';
}

/** `field` of the body as an integer (written without a fraction), or a 400 naming it. */
function integerField(body: Body, raw: string, field: string): { value: number; text: string | undefined } {
  const v = body[field];
  if (typeof v !== 'number') throw invalid(v === undefined ? `field '${field}' is required (an integer)` : `field '${field}' must be an integer`);
  const text = numberText(raw, field);
  if (!isIntegerLiteral(v, text)) throw invalid(`field '${field}' must be an integer`);
  return { value: v, text };
}

// ---- /number/<key> --------------------------------------------------------------

export async function putNumber(ctx: Ctx, name: string, body: BodyOf<typeof b.putNumber>, res: ServerResponse, raw: string): Promise<void> {
  const n = integerField(body, raw, 'number');
  const [created, data] = await ctx.store.variants.put(name, n, ttlOf(body), preconditionOf(body, res));
  send(res, created ? 201 : 200, A.created, `{"number":${valueOf(data)}}`);
}

export async function incrementNumber(ctx: Ctx, name: string, body: BodyOf<typeof b.incrementNumber>, res: ServerResponse, raw: string): Promise<void> {
  const d = integerField(body, raw, 'delta');
  const data = await ctx.store.variants.increment(name, d, 'i');
  send(res, 200, A.incremented, `{"number":${valueOf(data)}}`);
}

export function getNumber(ctx: Ctx, name: string, _body: Body, res: ServerResponse): void | Promise<void> {
  return getAs(ctx, name, res, 'i', 'number');
}

export async function deleteNumber(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.variants.delete(name, 'i');
  send(res, 200, A.deleted);
}

// ---- /text/<key> ----------------------------------------------------------------

export async function putText(ctx: Ctx, name: string, body: BodyOf<typeof b.putText>, res: ServerResponse): Promise<void> {
  const [created, data] = await ctx.store.variants.put(name, { value: body.content, text: undefined }, ttlOf(body), preconditionOf(body, res));
  send(res, created ? 201 : 200, A.created, `{"content":${valueOf(data)}}`);
}

export async function appendText(ctx: Ctx, name: string, body: BodyOf<typeof b.appendText>, res: ServerResponse): Promise<void> {
  const length = await ctx.store.variants.append(name, body.append, preconditionOf(body, res));
  send(res, 200, A.appended, `{"length":${length}}`);
}

export function getText(ctx: Ctx, name: string, _body: Body, res: ServerResponse): void | Promise<void> {
  return getAs(ctx, name, res, 's', 'content');
}

export async function deleteText(ctx: Ctx, name: string, _body: Body, res: ServerResponse): Promise<void> {
  await ctx.store.variants.delete(name, 's');
  send(res, 200, A.deleted);
}

// ---- POST /variants/<name> with `append` ------------------------------------------

/**
 * POST /variants with `append` instead of `delta` (Redis APPEND). Returns
 * false when the body is an increment, which the caller then serves.
 */
export async function appendIfAsked(ctx: Ctx, name: string, body: BodyOf<typeof b.incrementVariant>, res: ServerResponse): Promise<boolean> {
  if (body.append === undefined) {
    if (body.if_version !== undefined) throw invalid(`field 'if_version' is taken only with 'append'`);
    return false;
  }
  if (body.delta !== undefined) throw invalid(`give either field 'delta' or field 'append', not both`);
  await appendText(ctx, name, { ...body, append: body.append }, res);
  return true;
}

// ---- reads ------------------------------------------------------------------------

function getAs(ctx: Ctx, name: string, res: ServerResponse, t: VType, field: string): void | Promise<void> {
  const out: VersionOut = { version: 0 };
  const data = ctx.store.variants.get(name, out);
  if (typeof data === 'string') return answer(name, res, t, field, data, out.version);
  return data.then((d) => answer(name, res, t, field, d, out.version));
}

function answer(name: string, res: ServerResponse, t: VType, field: string, data: string, version: number): void {
  const v = valueOf(data);
  const actual = typeOfValue(v);
  if (actual !== t) throw conflict(`variant '${name}' holds ${TYPE_NAMES[actual]}, not ${TYPE_NAMES[t]}`);
  sendTagged(res, 200, A.queried, `{"${field}":${v}}`, version);
}
