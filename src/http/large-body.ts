/**
 * Large PUT bodies of lists, sets and sorted sets (docs/query.md, "Large
 * collections"), decoded and parsed in slices: one JSON.parse of a 20 MB
 * body of a million members held the event loop for 0.6-2 s on this
 * machine, and the object of a million-member sorted set took seconds
 * more to build. Here the body is decoded a few received chunks per step,
 * and the collection's field (`list`, `set`, `zset`) is cut at its
 * top-level commas into runs of about SLICE_CHARS characters, each parsed
 * by JSON.parse in a step of its own. An array field becomes the array
 * JSON.parse would give; an object field becomes Entries (its keys and
 * values in order; src/store/large-input.ts checks them in slices). Every
 * other field is parsed as a whole, as request-body.ts parses a body.
 *
 * What is refused is refused as parseBody refuses it: the same depth bound,
 * "request body is not valid JSON: …" with the parser's account of what is
 * wrong (whose position then counts from the start of the run).
 */
import { MAX_DEPTH } from '../store/json.js';
import { Entries } from '../store/large-input.js';
import { nextTurn } from '../store/stream.js';
import { firstBadByte, type Body } from './request-body.js';
import { HttpError } from './errors.js';
import type { RouteDef } from './route-def.js';

/** Bodies of more bytes than this take the sliced path. */
export const LARGE_BODY = 1 << 20;
/** Characters of a collection parsed per step: JSON.parse of this much takes a few ms. */
const SLICE_CHARS = 64 * 1024;
/** Bytes of the body decoded per step. */
const DECODE_STEP = 256 * 1024;

/** The field a route's large bodies are parsed in slices for: `list`, `set` or `zset` of their PUTs. */
export function slicedField(def: RouteDef): string | undefined {
  if (def.method !== 'PUT') return undefined;
  return def.names === 'list' || def.names === 'set' || def.names === 'zset' ? def.names : undefined;
}

/** Strict UTF-8, as decodeBody, a few chunks per step. */
export async function decodeInSlices(chunks: readonly Buffer[]): Promise<string> {
  const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  const parts: string[] = [];
  let since = 0;
  try {
    for (const c of chunks) {
      parts.push(dec.decode(c, { stream: true }));
      since += c.length;
      if (since >= DECODE_STEP) {
        since = 0;
        await nextTurn();
      }
    }
    parts.push(dec.decode());
  } catch {
    throw new HttpError('invalid', `request body is not valid UTF-8 (bad byte at offset ${firstBadByte(Buffer.concat(chunks))})`);
  }
  return parts.join('');
}

const notJson = (what: string): HttpError => new HttpError('invalid', `request body is not valid JSON: ${what}`);
const tooDeep = (): HttpError => new HttpError('invalid', `request body nests deeper than ${MAX_DEPTH} levels`);

const QUOTE = 34;
const COMMA = 44;
const COLON = 58;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

class Scanner {
  p = 0;
  constructor(readonly t: string) {}

  ws(): void {
    while (this.p < this.t.length && isSpace(this.t.charCodeAt(this.p))) this.p++;
  }

  expect(c: number, what: string): void {
    this.ws();
    if (this.t.charCodeAt(this.p) !== c) throw notJson(`expected ${what} at position ${this.p}`);
    this.p++;
  }

  /** The position after the string that starts at `p` (a quote). */
  stringEnd(p: number): number {
    let q = p + 1;
    for (;;) {
      const e = this.t.indexOf('"', q);
      if (e < 0) throw notJson(`unterminated string from position ${p}`);
      let b = e - 1;
      while (this.t.charCodeAt(b) === 92 /* \ */) b--;
      // An even number of backslashes before the quote: it ends the string.
      if (((e - 1 - b) & 1) === 0) return e + 1;
      q = e + 1;
    }
  }

  /**
   * From `p`, inside a container `base` levels deep, to the first comma at
   * that level at or after `p + min`, or to the bracket that closes the
   * container: its position.
   */
  walk(p: number, min: number, base: number): number {
    const t = this.t;
    const stop = p + min;
    let depth = 0;
    for (; p < t.length; p++) {
      const c = t.charCodeAt(p);
      if (c === QUOTE) p = this.stringEnd(p) - 1;
      else if (c === 91 || c === 123) {
        if (++depth + base > MAX_DEPTH) throw tooDeep();
      } else if (c === 93 || c === 125) {
        if (depth === 0) return p;
        depth--;
      } else if (c === COMMA && depth === 0 && p >= stop) return p;
    }
    throw notJson('unexpected end of the body');
  }
}

function parsePart(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw notJson(`in field '${field}': ${(err as Error).message}`);
  }
}

/** The array or object at `s.p` (its opening bracket), a run of elements per step. */
async function container(s: Scanner, field: string): Promise<unknown[] | Entries> {
  const t = s.t;
  const array = t.charCodeAt(s.p) === 91;
  const close = array ? 93 : 125;
  const out: unknown[] | Entries = array ? [] : new Entries();
  s.p++;
  s.ws();
  if (t.charCodeAt(s.p) === close) {
    s.p++;
    return out;
  }
  for (;;) {
    const e = s.walk(s.p, SLICE_CHARS, 2);
    const run = t.slice(s.p, e);
    if (!/\S/.test(run)) throw notJson(`in field '${field}': an empty element at position ${s.p}`);
    const part = parsePart(array ? `[${run}]` : `{${run}}`, field);
    if (Array.isArray(out)) for (const v of part as unknown[]) out.push(v);
    else {
      const o = part as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        out.keys.push(k);
        out.values.push(o[k]);
      }
    }
    const c = t.charCodeAt(e);
    s.p = e + 1;
    if (c === close) return out;
    if (c !== COMMA) throw notJson(`in field '${field}': mismatched bracket at position ${e}`);
    await nextTurn();
  }
}

/** A body as parseBody gives it, `field` parsed in slices when it is an array or an object. */
export async function parseInSlices(text: string, field: string): Promise<Body> {
  const s = new Scanner(text);
  const body: Body = {};
  s.expect(123, `'{' (a JSON object)`);
  s.ws();
  if (text.charCodeAt(s.p) === 125) s.p++;
  else {
    for (;;) {
      s.ws();
      if (text.charCodeAt(s.p) !== QUOTE) throw notJson(`expected a field name at position ${s.p}`);
      const end = s.stringEnd(s.p);
      const key = parsePart(text.slice(s.p, end), 'names') as string;
      s.p = end;
      s.expect(COLON, `':'`);
      s.ws();
      const c = text.charCodeAt(s.p);
      let v: unknown;
      if (key === field && (c === 91 || c === 123)) v = await container(s, field);
      else {
        const e = s.walk(s.p, 0, 1);
        v = parsePart(text.slice(s.p, e), key);
        s.p = e;
      }
      // As JSON.parse defines it: a field named __proto__ is a field, not the prototype.
      Object.defineProperty(body, key, { value: v, enumerable: true, writable: true, configurable: true });
      s.ws();
      const sep = text.charCodeAt(s.p++);
      if (sep === 125) break;
      if (sep !== COMMA) throw notJson(`expected ',' or '}' at position ${s.p - 1}`);
    }
  }
  s.ws();
  if (s.p < text.length) throw notJson(`unexpected text after the object at position ${s.p}`);
  return body;
}
