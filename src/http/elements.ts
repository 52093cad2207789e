/**
 * Whole-collection answers as JSON text (docs/query.md, "Large collections"):
 * a store hands over the elements in batches (store.ts `Batches`); here each
 * batch becomes one piece of the answer, so sendText writes it slice by
 * slice, yielding between batches, with the socket's backpressure. A
 * collection whose elements all came in the first batch is one string, sent
 * with a Content-Length exactly as before.
 */
import { scoreText } from '../store/collection.js';
import type { Batches, Text, ZBatch } from '../store/store.js';

/** Renders one batch; `first`: no element came before it (no leading comma). */
type Piece<B> = (batch: B, first: boolean) => string;

/**
 * `head`, the batches' elements, then `tail(n)` with n the number of
 * elements: the same bytes whether the answer is one string or pieces.
 */
export function batchText<B>(b: Batches<B>, head: string, piece: Piece<B>, size: (batch: B) => number, tail: (n: number) => string): Text {
  if (b.rest === undefined) return head + piece(b.first, true) + tail(size(b.first));
  const rest = b.rest[Symbol.asyncIterator]();
  const gen = pieces(b.first, rest, head, piece, size, tail);
  // Stopped early (client gone, before or after the first step): the store's view is released too.
  const it: AsyncIterator<string> = {
    next: () => gen.next(),
    return: async (): Promise<IteratorResult<string>> => {
      await rest.return?.();
      return gen.return(undefined);
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}

async function* pieces<B>(
  first: B,
  rest: AsyncIterator<B>,
  head: string,
  piece: Piece<B>,
  size: (batch: B) => number,
  tail: (n: number) => string,
): AsyncGenerator<string> {
  let n = size(first);
  yield head + piece(first, true);
  for (;;) {
    const r = await rest.next();
    if (r.done === true) break;
    const k = size(r.value);
    yield k === 0 ? '' : piece(r.value, n === 0);
    n += k;
  }
  yield tail(n);
}

const count = (b: readonly unknown[]): number => b.length;
const zcount = (b: ZBatch): number => b.members.length;

/** Members (strings) as JSON array elements. */
function membersPiece(batch: readonly string[], first: boolean): string {
  let out = '';
  for (let i = 0; i < batch.length; i++) out += (first && i === 0 ? '' : ',') + JSON.stringify(batch[i]);
  return out;
}

/** Items already JSON text (a list's). */
const textsPiece = (batch: readonly string[], first: boolean): string => (batch.length === 0 ? '' : (first ? '' : ',') + batch.join(','));

function zItemsPiece(batch: ZBatch, first: boolean): string {
  let out = '';
  const { members, scores } = batch;
  for (let i = 0; i < members.length; i++) {
    out += `${first && i === 0 ? '' : ','}{"member":${JSON.stringify(members[i])},"score":${scoreText(scores[i])}}`;
  }
  return out;
}

function zObjectPiece(batch: ZBatch, first: boolean): string {
  let out = '';
  const { members, scores } = batch;
  for (let i = 0; i < members.length; i++) out += (first && i === 0 ? '' : ',') + JSON.stringify(members[i]) + ':' + scoreText(scores[i]);
  return out;
}

/** GET /sets/<name> without a limit: {"members": [...], "count": n, "next": null}. */
export const setText = (b: Batches<string[]>, total: number): Text =>
  batchText(b, '{"members":[', membersPiece, count, () => `],"count":${total},"next":null}`);
/** GET /set/<key>: {"set": [...]}. */
export const quickSetText = (b: Batches<string[]>): Text => batchText(b, '{"set":[', membersPiece, count, () => ']}');
/** combine without store: {"members": [...], "count": n}, n counted as they go. */
export const combinedText = (b: Batches<string[]>): Text => batchText(b, '{"members":[', membersPiece, count, (n) => `],"count":${n}}`);
/** GET /lists/<name>: {"items": [...], "length": n}. */
export const listText = (b: Batches<string[]>, length: number): Text => batchText(b, '{"items":[', textsPiece, count, () => `],"length":${length}}`);
/** GET /list/<key>: {"list": [...]}. */
export const quickListText = (b: Batches<string[]>): Text => batchText(b, '{"list":[', textsPiece, count, () => ']}');
/** GET /zsets/<name>: {"items": [{"member", "score"}, ...], "count": n}. */
export const zsetText = (b: Batches<ZBatch>, total: number): Text => batchText(b, '{"items":[', zItemsPiece, zcount, () => `],"count":${total}}`);
/** GET /zset/<key>: {"zset": {member: score, ...}}. */
export const quickZsetText = (b: Batches<ZBatch>): Text => batchText(b, '{"zset":{', zObjectPiece, zcount, () => '}}');
