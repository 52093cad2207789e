/**
 * Variant namespace on the log: one typed scalar per name (typing and
 * arithmetic live in ../variant.ts, shared by every store). An increment
 * reads and writes in one decision, so N concurrent +1s add exactly N.
 */
import { type Decoder, type Engine, MISS } from '../../engine/index.js';
import type { StoreError } from '../errors.js';
import { missing as missingObject } from '../messages.js';
import type { Precondition, VariantStore, VersionOut } from '../store.js';
import { checkPrecondition } from '../versions.js';
import { expiryOf } from '../validate.js';
import {
  addDelta,
  appendText,
  checkAppend,
  checkDelta,
  checkSameType,
  checkType,
  decodeStored,
  type ScalarInput,
  storedJson,
  type Variant,
  type VType,
  variantOf,
} from '../variant.js';
import type { Atomic, Tx } from './atomic.js';
import { rethrowFromEngine } from './errors.js';
import { variantKey } from './keys.js';

export const variantDecoder: Decoder<Variant> = (buf) => decodeStored(buf.toString('utf8'));
const encode = (x: Variant): Buffer => Buffer.from(x.t + storedJson(x), 'utf8');

const missing = (name: string): StoreError => missingObject('variant', name);

export function currentVariant(tx: Tx, name: string): Variant | undefined {
  return tx.get(variantKey(name), variantDecoder);
}

/** Creates or replaces; returns [created, the new variant]. */
export function setVariant(tx: Tx, name: string, value: ScalarInput, ttl: number, pre?: Precondition, retype = false): [boolean, Variant] {
  const x = variantOf(value);
  // Read first: the version below then comes from the same directory lookup (Tx's memo).
  const cur = currentVariant(tx, name);
  if (pre !== undefined) checkPrecondition(`variant '${name}'`, tx.version(variantKey(name)), pre);
  if (!retype) checkSameType(name, cur, x);
  tx.put(variantKey(name), encode(x), x, variantDecoder, expiryOf(ttl, tx.now));
  return [cur === undefined, x];
}

/** Adds `delta` keeping the variant's expiry; returns the new variant. */
export function addVariant(tx: Tx, name: string, delta: ScalarInput, type?: VType): Variant {
  checkDelta(delta.value);
  const key = variantKey(name);
  const cur = currentVariant(tx, name);
  if (cur === undefined) throw missing(name);
  checkType(name, cur, type);
  const x = addDelta(name, cur, delta.value, delta.text);
  tx.put(key, encode(x), x, variantDecoder, tx.expiry(key));
  return x;
}

/** Appends to a string variant keeping its expiry; returns the new variant. */
export function appendVariant(tx: Tx, name: string, text: string, pre?: Precondition): Variant {
  checkAppend(text);
  const key = variantKey(name);
  const cur = currentVariant(tx, name);
  if (cur === undefined) throw missing(name);
  checkPrecondition(`variant '${name}'`, tx.version(key), pre);
  const x = appendText(name, cur, text);
  tx.put(key, encode(x), x, variantDecoder, tx.expiry(key));
  return x;
}

/** Sets the remaining lifetime, writing the same value again with the new expiry (see expireRecord). */
export function expireVariant(tx: Tx, name: string, ttl: number): void {
  const cur = currentVariant(tx, name);
  if (cur === undefined) throw missing(name);
  tx.put(variantKey(name), encode(cur), cur, variantDecoder, expiryOf(ttl, tx.now));
}

export class LogVariants implements VariantStore {
  constructor(
    private readonly engine: Engine,
    private readonly atomic: Atomic,
  ) {}

  put(name: string, value: ScalarInput, ttl: number, pre?: Precondition, retype?: boolean): Promise<[boolean, string]> {
    return this.atomic.atomically(undefined, (tx): [boolean, string] => {
      const [created, x] = setVariant(tx, name, value, ttl, pre, retype);
      return [created, x.data];
    });
  }

  increment(name: string, delta: ScalarInput, type?: VType): Promise<string> {
    return this.atomic.atomically(undefined, (tx) => addVariant(tx, name, delta, type).data);
  }

  append(name: string, text: string, pre?: Precondition): Promise<number> {
    return this.atomic.atomically(undefined, (tx) => Buffer.byteLength(appendVariant(tx, name, text, pre).v as string));
  }

  get(name: string, out?: VersionOut): string | Promise<string> {
    const key = variantKey(name);
    const x = this.engine.peek(key, variantDecoder, undefined, out);
    if (x === MISS) return this.readAndGet(name, out);
    if (x === undefined) throw missing(name);
    return x.data;
  }

  /** Reads the value into the cache, then answers from it in one synchronous step, so data and version agree. */
  private async readAndGet(name: string, out: VersionOut | undefined): Promise<string> {
    const key = variantKey(name);
    for (let attempt = 0; ; attempt++) {
      const r = await this.engine.read(key, variantDecoder).catch(rethrowFromEngine);
      if (r === undefined) throw missing(name);
      let x = this.engine.peek(key, variantDecoder);
      if (x === undefined) throw missing(name);
      if (x === MISS) {
        if (attempt < 4) continue;
        x = r;
      }
      if (out !== undefined) out.version = this.engine.versionOf(key) ?? 0;
      return x.data;
    }
  }

  expire(name: string, ttl: number): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => expireVariant(tx, name, ttl));
  }

  delete(name: string, type?: VType, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      const key = variantKey(name);
      if (pre !== undefined) checkPrecondition(`variant '${name}'`, tx.version(key), pre);
      if (!tx.has(key)) throw missing(name);
      if (type !== undefined) checkType(name, currentVariant(tx, name) as Variant, type);
      tx.del(key);
    });
  }
}
