/**
 * Variants keep their type (docs/api.md, "Variants", "Types"): a double prints with a
 * fraction (`3.0`) and must be written with one, or the server reads an integer and refuses
 * it (409). JSON.parse loses that, so the console reads the value from the answer's text
 * and writes it back as JSON text (JsonText), never through JSON.stringify of a number.
 */
import { JsonText } from '../../client/index.js';

export type VariantType = 'string' | 'integer' | 'double' | 'boolean';

/** The literal after "variant": in an answer's body, e.g. `3.0`, `"42"`, `true`. */
export function variantLiteral(body: string): string | undefined {
  const at = body.indexOf('"variant":');
  if (at < 0) return undefined;
  const end = body.lastIndexOf('}}');
  return end > at ? body.slice(at + '"variant":'.length, end).trim() : undefined;
}

export function typeOfLiteral(lit: string): VariantType {
  if (lit.startsWith('"')) return 'string';
  if (lit === 'true' || lit === 'false') return 'boolean';
  return /[.eE]/.test(lit) ? 'double' : 'integer';
}

/** What the edit field shows: a string as it is (no quotes), anything else as written. */
export function editText(lit: string): string {
  return lit.startsWith('"') ? (JSON.parse(lit) as string) : lit;
}

/** The JSON literal for a value typed into the editor as `type`; throws naming the problem. */
export function literalFor(type: VariantType, text: string): string {
  switch (type) {
    case 'string':
      return JSON.stringify(text);
    case 'boolean':
      if (text !== 'true' && text !== 'false') throw new Error('a boolean is true or false');
      return text;
    case 'integer': {
      const t = text.trim();
      if (!/^-?\d+$/.test(t)) throw new Error(`an integer is whole digits, not '${text}'`);
      if (!Number.isSafeInteger(Number(t))) throw new Error('an integer must be within ±(2^53−1)');
      return t.replace(/^(-?)0+(?=\d)/, '$1');
    }
    case 'double': {
      const t = text.trim();
      if (!/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) || !Number.isFinite(Number(t))) throw new Error(`a double is a finite number, not '${text}'`);
      // Written with a fraction so that the server reads a double: 1 → 1.0, 1e300 → 1.0e+300.
      if (t.includes('.')) return t.replace(/^(-?)\./, '$10.').replace(/\.($|[eE])/, '.0$1');
      const n = String(Number(t));
      return n.includes('.') ? n : n.includes('e') ? n.replace('e', '.0e') : `${n}.0`;
    }
  }
}

export function variantBody(lit: string): JsonText {
  return new JsonText(`{"variant":${lit}}`);
}
