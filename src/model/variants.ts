/**
 * Variant namespace: one typed scalar per name. The type is fixed by the
 * first value (integer, double, string, boolean). Increments read and write
 * with no await in between, so N concurrent +1s add exactly N.
 */
import { type Decoder, type Engine, MISS, Op } from '../engine/index.js';
import { conflict, invalid, notFound } from './errors.js';
import { variantKey } from './keys.js';
import { expiryOf } from './validate.js';

type VType = 'i' | 'd' | 's' | 'b';
interface Variant {
  t: VType;
  v: number | string | boolean;
  /** The answer's data, precomputed: {"variant":<v>} */
  data: string;
}

const TYPE_NAMES: Record<VType, string> = { i: 'an integer', d: 'a double', s: 'a string', b: 'a boolean' };
const LIMIT = Number.MAX_SAFE_INTEGER;
const LIMIT_BIG = BigInt(LIMIT);

/**
 * JSON for a value. A double always shows a fraction (`3.0`, `1.0e+300`), so
 * a client can see its type and writing it back keeps it a double.
 */
function render(t: VType, v: number | string | boolean): string {
  const s = JSON.stringify(v);
  if (t !== 'd' || s.includes('.')) return s;
  const e = s.indexOf('e');
  return e < 0 ? `${s}.0` : `${s.slice(0, e)}.0${s.slice(e)}`;
}
const make = (t: VType, v: number | string | boolean): Variant => ({ t, v, data: `{"variant":${render(t, v)}}` });
const variantDecoder: Decoder<Variant> = (buf) => {
  const s = buf.toString('utf8');
  return make(s[0] as VType, JSON.parse(s.slice(1)) as number | string | boolean);
};
const encode = (x: Variant): Buffer => Buffer.from(x.t + JSON.stringify(x.v), 'utf8');

const missing = (name: string) => notFound(`variant '${name}' does not exist`);
const overflow = (name: string) => conflict(`variant '${name}' would overflow: the result is outside ±(2^53−1)`);

const NUMBER_PARTS = /^-?(\d+)(\.\d+)?(?:[eE]([+-]?\d+))?$/;

/**
 * Whether a JSON number is an integer by API.md section 8: written without a
 * fraction, and none made by its exponent (`1`, `-7`, `1e3`, `100e-2`), unlike
 * `1.5`, `1.0`, `15e-1` or `1e-400`. Decided on the text as written, exactly:
 * JSON.parse cannot tell 1.0 from 1, and rounds 1e-400 to 0. PUT values and
 * increment deltas follow the same rule.
 */
function isIntegerLiteral(v: number, text: string | undefined): boolean {
  if (text === undefined) return Number.isInteger(v);
  // The common case, digits only: no regex needed.
  if (text.indexOf('.') < 0 && text.indexOf('e') < 0 && text.indexOf('E') < 0) return true;
  const m = NUMBER_PARTS.exec(text);
  if (m === null || m[2] !== undefined) return false;
  const exp = m[3] === undefined ? 0 : Number(m[3]);
  if (exp >= 0) return true;
  // A negative exponent must only consume zeros (or the number is zero).
  const digits = m[1];
  if (/^0+$/.test(digits)) return true;
  if (-exp > digits.length) return false;
  for (let i = digits.length + exp; i < digits.length; i++) if (digits.charCodeAt(i) !== 48 /* 0 */) return false;
  return true;
}

/** The exact value of an integer literal (isIntegerLiteral holds) whose magnitude is below 2^55. */
function exactInteger(text: string): bigint {
  const m = NUMBER_PARTS.exec(text) as RegExpExecArray;
  let digits = m[1];
  let exp = m[3] === undefined ? 0 : Number(m[3]);
  if (exp < 0) {
    // Drop the zeros the exponent consumes first, so BigInt only sees the ~17 digits that matter.
    digits = /^0+$/.test(digits) ? '0' : digits.slice(0, digits.length + exp);
    exp = 0;
  }
  const v = BigInt(digits) * 10n ** BigInt(exp);
  return text.charCodeAt(0) === 45 /* - */ ? -v : v;
}

/** The type a value gets: see isIntegerLiteral. */
function typeOf(v: unknown, text: string | undefined): VType {
  switch (typeof v) {
    case 'string':
      return 's';
    case 'boolean':
      return 'b';
    case 'number':
      if (!Number.isFinite(v)) throw invalid(`field 'variant' must be a finite number`);
      if (isIntegerLiteral(v, text)) {
        if (Math.abs(v) > LIMIT) throw invalid(`field 'variant' is an integer outside ±(2^53−1)`);
        return 'i';
      }
      return 'd';
    default:
      throw invalid(v === undefined
        ? `field 'variant' is required (a string, boolean or number)`
        : `field 'variant' must be a string, boolean or number`);
  }
}

export class Variants {
  constructor(private readonly engine: Engine, private readonly now: () => number) {}

  private current(name: string): Variant | undefined | Promise<unknown> {
    const x = this.engine.peek(variantKey(name), variantDecoder);
    return x === MISS ? this.engine.read(variantKey(name), variantDecoder) : x;
  }

  /** Creates or replaces; resolves to [created, data JSON]. */
  async put(name: string, value: unknown, ttl: number, text: string | undefined): Promise<[boolean, string]> {
    // `3` is an integer and `3.0` a double (API.md section 8); to reset a
    // double variant to a whole number, write it with a fraction.
    const t = typeOf(value, text);
    let cur = this.current(name);
    while (cur instanceof Promise) cur = (await cur, this.current(name));
    if (cur !== undefined && cur.t !== t) {
      throw conflict(`variant '${name}' holds ${TYPE_NAMES[cur.t]}; cannot store ${TYPE_NAMES[t]} (delete it first to change its type)`);
    }
    const x = make(t, value as number | string | boolean);
    await this.engine.write([{
      op: Op.Put, key: variantKey(name), value: encode(x), expiresAt: expiryOf(ttl, this.now()), memo: x, decoder: variantDecoder,
    }]);
    return [cur === undefined, x.data];
  }

  /** `text` is the delta as written (see isIntegerLiteral). */
  async increment(name: string, delta: unknown, text: string | undefined): Promise<string> {
    if (typeof delta !== 'number' || !Number.isFinite(delta)) {
      throw invalid(delta === undefined ? `field 'delta' is required (a number)` : `field 'delta' must be a number`);
    }
    let cur = this.current(name);
    while (cur instanceof Promise) cur = (await cur, this.current(name));
    if (cur === undefined) throw missing(name);
    // No await from here to write(): the increment is atomic.
    if (cur.t === 's' || cur.t === 'b') throw conflict(`variant '${name}' holds ${TYPE_NAMES[cur.t]}; only numbers can be incremented`);
    let next: number;
    if (cur.t === 'i') {
      if (!isIntegerLiteral(delta, text)) throw conflict(`variant '${name}' holds an integer; delta must be an integer`);
      if (Number.isSafeInteger(delta)) {
        next = (cur.v as number) + delta;
      } else {
        // JSON.parse has rounded a delta this large, so add the one that was
        // written, exactly: -2 + 9007199254740993 is 9007199254740991, in range.
        // Beyond 2^55 no current value can bring the result back into range.
        if (text === undefined || Math.abs(delta) > 2 ** 55) throw overflow(name);
        const exact = BigInt(cur.v as number) + exactInteger(text);
        if (exact > LIMIT_BIG || exact < -LIMIT_BIG) throw overflow(name);
        next = Number(exact);
      }
    } else {
      next = (cur.v as number) + delta;
    }
    if (!(Math.abs(next) <= LIMIT)) throw overflow(name);
    const x = make(cur.t, next);
    const key = variantKey(name);
    await this.engine.write([{
      op: Op.Put, key, value: encode(x), expiresAt: this.engine.expiresAt(key) ?? 0, memo: x, decoder: variantDecoder,
    }]);
    return x.data;
  }

  get(name: string): string | Promise<string> {
    const x = this.current(name);
    if (x instanceof Promise) return x.then(() => this.get(name));
    if (x === undefined) throw missing(name);
    return x.data;
  }

  delete(name: string): Promise<void> {
    const key = variantKey(name);
    if (!this.engine.has(key)) return Promise.reject(missing(name));
    return this.engine.write([{ op: Op.Del, key, value: undefined, expiresAt: 0 }]);
  }
}
