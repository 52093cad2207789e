/**
 * Variant namespace on the log: one typed scalar per name (typing and
 * arithmetic live in ../variant.ts, shared by every store). An increment
 * reads and writes in one decision, so N concurrent +1s add exactly N.
 */
import { type Decoder, type Engine, MISS } from '../../engine/index.js';
import { notFound } from '../errors.js';
import type { VariantStore } from '../store.js';
import { expiryOf } from '../validate.js';
import { addDelta, checkDelta, checkSameType, makeVariant, type ScalarInput, type Variant, type VType, variantOf } from '../variant.js';
import type { Atomic, Tx } from './atomic.js';
import { variantKey } from './keys.js';

export const variantDecoder: Decoder<Variant> = (buf) => {
  const s = buf.toString('utf8');
  return makeVariant(s[0] as VType, JSON.parse(s.slice(1)) as number | string | boolean);
};
const encode = (x: Variant): Buffer => Buffer.from(x.t + JSON.stringify(x.v), 'utf8');

const missing = (name: string) => notFound(`variant '${name}' does not exist`);

export function currentVariant(tx: Tx, name: string): Variant | undefined {
  return tx.get(variantKey(name), variantDecoder);
}

/** Creates or replaces; returns [created, the new variant]. */
export function setVariant(tx: Tx, name: string, value: ScalarInput, ttl: number): [boolean, Variant] {
  const x = variantOf(value);
  const cur = currentVariant(tx, name);
  checkSameType(name, cur, x);
  tx.put(variantKey(name), encode(x), x, variantDecoder, expiryOf(ttl, tx.now));
  return [cur === undefined, x];
}

/** Adds `delta` keeping the variant's expiry; returns the new variant. */
export function addVariant(tx: Tx, name: string, delta: ScalarInput): Variant {
  checkDelta(delta.value);
  const key = variantKey(name);
  const cur = currentVariant(tx, name);
  if (cur === undefined) throw missing(name);
  const x = addDelta(name, cur, delta.value, delta.text);
  tx.put(key, encode(x), x, variantDecoder, tx.expiry(key));
  return x;
}

export class LogVariants implements VariantStore {
  constructor(private readonly engine: Engine, private readonly atomic: Atomic) {}

  put(name: string, value: ScalarInput, ttl: number): Promise<[boolean, string]> {
    return this.atomic.atomically(undefined, (tx): [boolean, string] => {
      const [created, x] = setVariant(tx, name, value, ttl);
      return [created, x.data];
    });
  }

  increment(name: string, delta: ScalarInput): Promise<string> {
    return this.atomic.atomically(undefined, (tx) => addVariant(tx, name, delta).data);
  }

  get(name: string): string | Promise<string> {
    const x = this.engine.peek(variantKey(name), variantDecoder);
    if (x === MISS) return this.engine.read(variantKey(name), variantDecoder).then((r) => r === undefined ? Promise.reject(missing(name)) : r.data);
    if (x === undefined) throw missing(name);
    return x.data;
  }

  delete(name: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      const key = variantKey(name);
      if (!tx.has(key)) throw missing(name);
      tx.del(key);
    });
  }
}
