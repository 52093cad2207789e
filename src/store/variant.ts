/**
 * Variant values, independent of where they are stored: the type a value
 * gets, how it prints, and exact addition. A variant's type is fixed by its
 * first value (integer, double, string, boolean); docs/api.md "Variants".
 */
import { conflict, invalid } from './errors.js';

export type VType = 'i' | 'd' | 's' | 'b';
/**
 * An integer variant's value is a number while it is a safe integer and a
 * bigint beyond, up to the signed 64-bit range (Redis's integers); every
 * other type's value is a number, string or boolean.
 */
export type Scalar = number | bigint | string | boolean;

export interface Variant {
  t: VType;
  v: Scalar;
  /** The answer's data, precomputed: {"variant":<v>} */
  data: string;
}

/** A value as the client wrote it: `text` is the number's source text, when it is one. */
export interface ScalarInput {
  value: unknown;
  text: string | undefined;
}

export const TYPE_NAMES: Record<VType, string> = { i: 'an integer', d: 'a double', s: 'a string', b: 'a boolean' };
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An exact integer as a variant holds it: a number while safe, else the bigint. */
const narrow = (v: bigint): number | bigint => (v >= -SAFE && v <= SAFE ? Number(v) : v);
const inInt64 = (v: bigint): boolean => v >= INT64_MIN && v <= INT64_MAX;

/**
 * JSON for a value. A double always shows a fraction (`3.0`, `1.0e+300`), so
 * a client can see its type and writing it back keeps it a double.
 */
export function render(t: VType, v: Scalar): string {
  // Digit for digit, beyond 2^53 too: JSON has no integer limit, only JS's parser has.
  if (t === 'i') return String(v);
  const s = JSON.stringify(v);
  if (t !== 'd' || s.includes('.')) return s;
  const e = s.indexOf('e');
  return e < 0 ? `${s}.0` : `${s.slice(0, e)}.0${s.slice(e)}`;
}

/** The JSON text both stores keep for a value (the log after its type letter, PostgreSQL in column `v`). */
export const storedJson = (x: Variant): string => (x.t === 'i' ? String(x.v) : JSON.stringify(x.v));

/** A value back from its stored JSON; an integer exactly, which JSON.parse would round beyond 2^53. */
export function parseStored(t: VType, json: string): Scalar {
  if (t !== 'i') return JSON.parse(json) as Scalar;
  // Up to 15 digits a double holds exactly.
  return json.length <= 15 ? Number(json) : narrow(BigInt(json));
}

/** A variant as it is stored: its type letter, then its JSON. */
export const decodeStored = (stored: string): Variant => makeVariant(stored[0] as VType, parseStored(stored[0] as VType, stored.slice(1)));

/** A variant's value as GET shows it, from its stored form: a type letter, then JSON. */
export const variantValue = (stored: string): string =>
  stored[0] === 'i' ? stored.slice(1) : render(stored[0] as VType, parseStored(stored[0] as VType, stored.slice(1)));

export const makeVariant = (t: VType, v: Scalar): Variant => ({ t, v, data: `{"variant":${render(t, v)}}` });

const overflow = (name: string) => conflict(`variant '${name}' would overflow: the result is outside the signed 64-bit range (−2^63 to 2^63−1)`);

const NUMBER_PARTS = /^-?(\d+)(\.\d+)?(?:[eE]([+-]?\d+))?$/;

/**
 * Whether a JSON number is an integer: written without a fraction, and none
 * made by its exponent (`1`, `-7`, `1e3`, `100e-2`), unlike `1.5`, `1.0`,
 * `15e-1` or `1e-400`. Decided on the text as written, exactly: JSON.parse
 * cannot tell 1.0 from 1, and rounds 1e-400 to 0. PUT values and increment
 * deltas follow the same rule. Without the text, the value decides.
 */
export function isIntegerLiteral(v: number, text: string | undefined): boolean {
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

/**
 * The exact value of an integer literal (isIntegerLiteral holds), or
 * undefined when it is outside the signed 64-bit range: decided on its digit
 * count first, so `1e999999` costs nothing.
 */
function exactInteger(text: string): bigint | undefined {
  const m = NUMBER_PARTS.exec(text) as RegExpExecArray;
  let digits = m[1].replace(/^0+(?=\d)/, '');
  let exp = m[3] === undefined ? 0 : Number(m[3]);
  if (exp < 0) {
    // Drop the zeros the exponent consumes first, so BigInt only sees the digits that matter.
    digits = /^0+$/.test(digits) ? '0' : digits.slice(0, digits.length + exp);
    exp = 0;
  }
  if (digits !== '0' && digits.length + exp > 19) return undefined;
  const v = BigInt(digits) * 10n ** BigInt(exp);
  const signed = text.charCodeAt(0) === 45 /* - */ ? -v : v;
  return inInt64(signed) ? signed : undefined;
}

/**
 * The variant a written value makes: `3` is an integer and `3.0` a double; to
 * reset a double variant to a whole number, write it with a fraction.
 */
export function variantOf(input: ScalarInput, field = 'variant'): Variant {
  const v = input.value;
  switch (typeof v) {
    case 'string':
      return makeVariant('s', v);
    case 'boolean':
      return makeVariant('b', v);
    case 'number':
      if (!Number.isFinite(v)) throw invalid(`field '${field}' must be a finite number`);
      if (isIntegerLiteral(v, input.text)) {
        if (Number.isSafeInteger(v)) return makeVariant('i', v);
        // JSON.parse has rounded it: the text as written is the value.
        const exact = input.text === undefined ? (Number.isInteger(v) ? BigInt(v) : undefined) : exactInteger(input.text);
        if (exact === undefined || !inInt64(exact)) throw invalid(`field '${field}' is an integer outside the signed 64-bit range (−2^63 to 2^63−1)`);
        return makeVariant('i', narrow(exact));
      }
      return makeVariant('d', v);
    default:
      throw invalid(v === undefined ? `field '${field}' is required (a string, boolean or number)` : `field '${field}' must be a string, boolean or number`);
  }
}

/** Refuses to replace a variant with a value of another type. */
export function checkSameType(name: string, cur: Variant | undefined, next: Variant): void {
  if (cur !== undefined && cur.t !== next.t) {
    throw conflict(`variant '${name}' holds ${TYPE_NAMES[cur.t]}; cannot store ${TYPE_NAMES[next.t]} (delete it first to change its type)`);
  }
}

/** Checks a delta's shape before anything is looked up (a bad delta is a 400 even for a missing variant). */
export function checkDelta(delta: unknown): asserts delta is number {
  if (typeof delta !== 'number' || !Number.isFinite(delta)) {
    throw invalid(delta === undefined ? `field 'delta' is required (a number)` : `field 'delta' must be a number`);
  }
}

/** `cur + delta`, exactly, or a conflict. `text` is the delta as written (see isIntegerLiteral). */
export function addDelta(name: string, cur: Variant, delta: number, text: string | undefined): Variant {
  if (cur.t === 's' || cur.t === 'b') throw conflict(`variant '${name}' holds ${TYPE_NAMES[cur.t]}; only numbers can be incremented`);
  if (cur.t === 'i') {
    if (!isIntegerLiteral(delta, text)) throw conflict(`variant '${name}' holds an integer; delta must be an integer`);
    if (typeof cur.v === 'number' && Number.isSafeInteger(delta)) {
      const next = cur.v + delta;
      if (Number.isSafeInteger(next)) return makeVariant('i', next);
    }
    // Past 2^53 a double is not exact: add the delta as written, in bigints.
    const d = Number.isSafeInteger(delta) ? BigInt(delta) : text === undefined ? undefined : exactInteger(text);
    if (d === undefined) throw overflow(name);
    const exact = BigInt(cur.v as number | bigint) + d;
    if (!inInt64(exact)) throw overflow(name);
    return makeVariant('i', narrow(exact));
  }
  const next = (cur.v as number) + delta;
  if (!Number.isFinite(next)) throw conflict(`variant '${name}' would overflow: the result is not a finite double`);
  return makeVariant(cur.t, next);
}

/**
 * Refuses a variant of another type than the spelling names (`/number/<k>`
 * is an integer, `/text/<k>` a string: docs/api.md "Numbers and texts").
 */
export function checkType(name: string, cur: Variant, want: VType | undefined): void {
  if (want !== undefined && cur.t !== want) {
    throw conflict(`variant '${name}' holds ${TYPE_NAMES[cur.t]}, not ${TYPE_NAMES[want]}`);
  }
}

/** Checks an `append` before anything is looked up (a bad one is a 400 even for a missing variant). */
export function checkAppend(text: unknown): asserts text is string {
  if (typeof text !== 'string') throw invalid(text === undefined ? `field 'append' is required (a string)` : `field 'append' must be a string`);
}

/** `cur` with `text` appended (Redis APPEND), or a conflict for a variant that is not a string. */
export function appendText(name: string, cur: Variant, text: string): Variant {
  if (cur.t !== 's') throw conflict(`variant '${name}' holds ${TYPE_NAMES[cur.t]}; only strings can be appended to`);
  return makeVariant('s', (cur.v as string) + text);
}
