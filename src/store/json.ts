/**
 * JSON helpers that are safe with hostile input: a nesting bound checked
 * before parsing (so no later recursion can overflow the stack), deep
 * equality without prototype lookups, and object building that treats
 * `__proto__` as an ordinary key.
 */

export const MAX_DEPTH = 64;

/**
 * Depth of the deepest array/object nesting in JSON text, ignoring brackets
 * inside strings. Stops counting as soon as `limit` is passed.
 */
export function exceedsDepth(text: string, limit: number): boolean {
  // Depth never exceeds the number of opening brackets (strings included), and
  // indexOf counts those natively: most bodies are cleared without the loop below.
  let opens = 0;
  for (let i = text.indexOf('{'); i !== -1 && opens <= limit; i = text.indexOf('{', i + 1)) opens++;
  for (let i = text.indexOf('['); i !== -1 && opens <= limit; i = text.indexOf('[', i + 1)) opens++;
  if (opens <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return false;
}

const hasOwn = Object.prototype.hasOwnProperty;

/** Deep JSON equality: objects by content (key order ignored), arrays by order and content. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const aa = Array.isArray(a);
  if (aa !== Array.isArray(b)) return false;
  if (aa) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepEqual(x[i], y[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!hasOwn.call(b, k)) return false;
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** Sets an own data property, even for names like `__proto__` that assignment would treat specially. */
export function defineField(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** A copy of `row` with the top-level fields of `sets` written over it. */
export function mergeFields(row: Record<string, unknown>, sets: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(row)) defineField(out, k, row[k]);
  for (const k of Object.keys(sets)) defineField(out, k, sets[k]);
  return out;
}

export function ownField(o: Record<string, unknown>, k: string): unknown {
  return hasOwn.call(o, k) ? o[k] : undefined;
}

export function hasField(o: Record<string, unknown>, k: string): boolean {
  return hasOwn.call(o, k);
}

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Index of the quote that closes the JSON string opened at `i`. */
function stringEnd(text: string, i: number): number {
  for (i++; i < text.length; i++) {
    const d = text.charCodeAt(i);
    if (d === 92) i++;
    else if (d === 34) break;
  }
  return i;
}

/** Index of the first character at or after `j` that is not JSON whitespace. */
function skipSpace(text: string, j: number): number {
  while (j < text.length && (text[j] === ' ' || text[j] === '\t' || text[j] === '\n' || text[j] === '\r')) j++;
  return j;
}

/**
 * The source text of the number stored under top-level `field` of a JSON
 * object, or undefined. JSON.parse forgets whether `1.0` was written with a
 * fraction; the variant namespace needs to know (docs/api.md, "Variants"), so it
 * looks at the text. Expects text that JSON.parse already accepted.
 */
export function numberText(text: string, field: string): string | undefined {
  let depth = 0;
  let found: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const start = i;
      i = stringEnd(text, i);
      if (depth !== 1) continue;
      let j = skipSpace(text, i + 1);
      if (text[j] !== ':') continue;
      if ((JSON.parse(text.slice(start, i + 1)) as string) !== field) continue;
      j = skipSpace(text, j + 1);
      NUMBER.lastIndex = j;
      const m = NUMBER.exec(text);
      // Later duplicates win in JSON.parse; do the same.
      found = m === null ? undefined : m[0];
      i = j - 1;
    } else if (c === 123 || c === 91) {
      depth++;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return found;
}

/**
 * The source texts of numbers under `field` of the objects directly inside
 * the top-level array `array` ({"mutations": [{"variant": 1.0}, …]}), by the
 * object's index: numberText for one level deeper. Expects text that
 * JSON.parse already accepted; a repeated top-level key wins as in JSON.parse.
 */
export function elementNumberTexts(text: string, array: string, field: string): Map<number, string> {
  let out = new Map<number, string>();
  let depth = 0;
  /** Depth inside the target array, or -1 outside it. */
  let arrayDepth = -1;
  let index = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const start = i;
      i = stringEnd(text, i);
      const top = depth === 1;
      const inElement = arrayDepth >= 0 && depth === arrayDepth + 1;
      if (!top && !inElement) continue;
      let j = skipSpace(text, i + 1);
      if (text[j] !== ':') continue;
      const key = JSON.parse(text.slice(start, i + 1)) as string;
      j = skipSpace(text, j + 1);
      if (top && key === array && text[j] === '[') {
        out = new Map();
        index = -1;
        arrayDepth = depth + 1;
        depth++;
        i = j;
      } else if (inElement && key === field) {
        NUMBER.lastIndex = j;
        const m = NUMBER.exec(text);
        if (m === null) out.delete(index);
        else out.set(index, m[0]);
        i = j - 1;
      } else {
        i = j - 1;
      }
    } else if (c === 123 || c === 91) {
      if (c === 123 && depth === arrayDepth) index++;
      depth++;
    } else if (c === 125 || c === 93) {
      depth--;
      if (depth < arrayDepth) arrayDepth = -1;
    }
  }
  return out;
}
