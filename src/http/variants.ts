/**
 * The endpoints of variants (docs/api.md, "Variants"); their quick-start
 * spellings /number/<key> and /text/<key> are numtext.ts.
 */
import type { ServerResponse } from 'node:http';
import { invalid } from '../store/errors.js';
import { numberText } from '../store/json.js';
import type { Body } from './request-body.js';
import type * as b from './body-fields.js';
import type { BodyOf } from './fields.js';
import { Answer, send, sendTagged } from './envelope.js';
import { type Ctx, preconditionOf, tagged, ttlOf, VERSION } from './context.js';
import { appendIfAsked } from './numtext.js';

const A = {
  variantPatched: new Answer('variant patched successfully'),
  variantCreated: new Answer('variant created successfully'),
  variantIncremented: new Answer('variant incremented successfully'),
  variantQueried: new Answer('variant queried successfully'),
  variantDeleted: new Answer('variant deleted successfully'),
};

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
