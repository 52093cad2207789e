/**
 * Collections on the log (docs/format.md, "Collections"): a set or sorted
 * set is a header key plus one engine key per element, as a table is its
 * metadata plus one key per row. The header (`S/name`, `Z/name`: top-level,
 * so listing and health count it as one object) holds the incarnation and
 * the element count; it carries the collection's version and expiry. The
 * elements live in the group of that incarnation (`s\0name\0inc\0member`),
 * carry the same expiry, and go with one DropGroup when the collection is
 * replaced or deleted. An element operation writes its elements and the
 * header, never the rest of the collection.
 *
 * Each header write says what it was for: nothing (a whole-object write,
 * which the change feed reports as a plain `put`) or an element operation's
 * name and, as JSON, its arguments and result (the `op` and `value` of the
 * change feed's event; changes.ts). So the feed needs no state to report an
 * operation, and the header stays small: it holds what the request named.
 */
import type { Decoder } from '../../engine/index.js';
import { type CollectionKind, collectionMissing } from '../collection.js';
import type { Precondition } from '../store.js';
import { expiryOf } from '../validate.js';
import { checkPrecondition } from '../versions.js';
import type { Tx } from './atomic.js';
import { elementGroup, headerKey } from './keys.js';

export interface Header {
  /** The sequence number of the batch that created this incarnation: names its element group. */
  inc: number;
  /** Elements in the collection. */
  count: number;
}

/** The header's and the elements' keys (keys.ts has the whole map). */
export { elementGroup, headerKey } from './keys.js';

/** `inc count` then, for an element operation, ` op json`. */
export const headerDecoder: Decoder<Header> = (buf) => {
  const s = buf.toString('latin1', 0, Math.min(buf.length, 40));
  const a = s.indexOf(' ');
  let b = s.indexOf(' ', a + 1);
  if (b < 0) b = s.length;
  return { inc: Number(s.slice(0, a)), count: Number(s.slice(a + 1, b)) };
};

/** The operation a header write records, for the change feed: `op` and its arguments and result as JSON. */
export interface OpRecord {
  op: string;
  json: string;
}

function encodeHeader(h: Header, rec: OpRecord | undefined): Buffer {
  const head = `${h.inc} ${h.count}`;
  return rec === undefined ? Buffer.from(head, 'latin1') : Buffer.from(`${head} ${rec.op} ${rec.json}`, 'utf8');
}

/** What a header write recorded: undefined for a whole-object write. */
export function opOfHeader(value: Buffer): OpRecord | undefined {
  let sp = value.indexOf(0x20);
  sp = value.indexOf(0x20, sp + 1);
  if (sp < 0) return undefined;
  const end = value.indexOf(0x20, sp + 1);
  return { op: value.toString('latin1', sp + 1, end), json: value.toString('utf8', end + 1) };
}

// ---- members as key suffixes ------------------------------------------------------

/**
 * A member as the last part of its element key, chosen so that the engine's
 * key order (UTF-16 units) is the members' UTF-8 byte order, which is the
 * order a set lists them in: the member's UTF-8 bytes, one character each
 * (U+0000-00FF). The group ends at the key's last U+0000, so bytes 0 and 1
 * are escaped as \x01\x01 and \x01\x02, an order-keeping, prefix-free code.
 * Most members (ASCII without those two bytes) are their own suffix.
 */
const PLAIN_MEMBER = /^[\u0002-\u007f]*$/;

export function encodeMember(m: string): string {
  if (PLAIN_MEMBER.test(m)) return m;
  const b = Buffer.from(m, 'utf8');
  let esc = 0;
  for (let i = 0; i < b.length; i++) if (b[i] < 2) esc++;
  if (esc === 0) return b.toString('latin1');
  const out = Buffer.allocUnsafe(b.length + esc);
  let j = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c < 2) {
      out[j++] = 1;
      out[j++] = c + 1;
    } else {
      out[j++] = c;
    }
  }
  return out.toString('latin1');
}

export function decodeMember(s: string): string {
  if (PLAIN_MEMBER.test(s)) return s;
  const b = Buffer.from(s, 'latin1');
  if (b.indexOf(1) < 0) return b.toString('utf8');
  const out = Buffer.allocUnsafe(b.length);
  let j = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    out[j++] = c === 1 ? b[++i] - 1 : c;
  }
  return out.toString('utf8', 0, j);
}

export const memberKey = (group: string, member: string): string => group + encodeMember(member);
export const memberOfKey = (group: string, key: string): string => decodeMember(key.slice(group.length));

// ---- decisions every collection shares ----------------------------------------------

export function readHeader(tx: Tx, kind: CollectionKind, name: string): Header | undefined {
  return tx.get(headerKey(kind, name), headerDecoder);
}

/** The header of an existing collection after checking `pre`; 404 when it does not exist. */
export function existingHeader(tx: Tx, kind: CollectionKind, name: string, pre: Precondition | undefined): Header {
  const key = headerKey(kind, name);
  if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, tx.version(key), pre);
  const h = tx.get(key, headerDecoder);
  if (h === undefined) throw collectionMissing(kind, name);
  return h;
}

/**
 * The header an element operation writes to: the existing one, or (with
 * `create`) a new empty incarnation without expiry, as an object created by
 * an add has none. 404 when it is missing and `create` is false.
 */
export function headerForWrite(tx: Tx, kind: CollectionKind, name: string, create: boolean, pre: Precondition | undefined): Header {
  const key = headerKey(kind, name);
  if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, tx.version(key), pre);
  const h = tx.get(key, headerDecoder);
  if (h !== undefined) return h;
  if (!create) throw collectionMissing(kind, name);
  return { inc: tx.seq, count: 0 };
}

/** Writes the header of an element operation (its expiry kept), recording the operation for the change feed. */
export function writeHeader(tx: Tx, kind: CollectionKind, name: string, h: Header, rec: OpRecord): void {
  const key = headerKey(kind, name);
  const next: Header = { inc: h.inc, count: h.count };
  tx.put(key, encodeHeader(next, rec), next, headerDecoder, tx.expiry(key));
}

/**
 * Starts a new incarnation holding `count` elements (the caller writes them
 * into the returned group with the returned expiry): a whole-object write.
 * The old incarnation's elements go in the same batch. Returns whether the
 * collection is new. `staged`: the incarnation whose elements a staged
 * write (staged.ts) has written already, and their expiry.
 */
export function replaceCollection(
  tx: Tx,
  kind: CollectionKind,
  name: string,
  count: number,
  ttl: number,
  pre: Precondition | undefined,
  staged?: { inc: number; exp: number },
): { created: boolean; group: string; exp: number } {
  const key = headerKey(kind, name);
  if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, tx.version(key), pre);
  const old = tx.get(key, headerDecoder);
  if (old !== undefined) tx.dropGroup(elementGroup(kind, name, old.inc));
  const h: Header = { inc: staged?.inc ?? tx.seq, count };
  const exp = staged?.exp ?? expiryOf(ttl, tx.now);
  tx.put(key, encodeHeader(h, undefined), h, headerDecoder, exp);
  return { created: old === undefined, group: elementGroup(kind, name, h.inc), exp };
}

/** Refuses a whole-object write whose condition fails on what is stored. */
export function checkCollection(tx: Tx, kind: CollectionKind, name: string, pre: Precondition | undefined): void {
  if (pre !== undefined) checkPrecondition(`${kind} '${name}'`, tx.version(headerKey(kind, name)), pre);
}

export function dropCollection(tx: Tx, kind: CollectionKind, name: string, pre: Precondition | undefined): void {
  const h = existingHeader(tx, kind, name, pre);
  tx.dropGroup(elementGroup(kind, name, h.inc));
  tx.del(headerKey(kind, name));
}

/**
 * Sets the remaining lifetime of the collection and of every element (they
 * carry it, so an expired collection takes them with it): O(elements), as a
 * table's. `rewrite` writes the elements (their keys given) again with the new expiry.
 */
export function expireCollection(
  tx: Tx,
  kind: CollectionKind,
  name: string,
  ttl: number,
  pre: Precondition | undefined,
  rewrite: (keys: string[], exp: number) => void,
): void {
  const h = existingHeader(tx, kind, name, pre);
  const exp = expiryOf(ttl, tx.now);
  rewrite(tx.groupKeys(elementGroup(kind, name, h.inc), '', Number.MAX_SAFE_INTEGER), exp);
  const next: Header = { inc: h.inc, count: h.count };
  tx.put(headerKey(kind, name), encodeHeader(next, undefined), next, headerDecoder, exp);
}
