/**
 * Checks on client input that every namespace shares: names, ttl, field
 * types. Each failure is a PithosError('invalid') whose message names the
 * field and the reason, as API.md section 11 asks.
 */
import { invalid } from './errors.js';

export const MAX_NAME_BYTES = 255;
export const MAX_TTL = 2147483647;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** API.md section 4: 1-255 bytes of UTF-8, no control characters, not "." or "..". */
export function checkName(name: string, what: string): void {
  if (name.length === 0) throw invalid(`${what} name must not be empty`);
  if (name.length > MAX_NAME_BYTES || Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) {
    throw invalid(`${what} name must be at most ${MAX_NAME_BYTES} bytes of UTF-8`);
  }
  if (CONTROL.test(name)) throw invalid(`${what} name must not contain control characters`);
  if (name === '.' || name === '..') throw invalid(`${what} name must not be '.' or '..'`);
}

/** A ttl field: absent or 0 means no expiry; otherwise whole seconds up to MAX_TTL. */
export function ttlField(body: Record<string, unknown>, min: 0 | 1): number {
  const v = body.ttl;
  if (v === undefined && min === 0) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_TTL) {
    throw invalid(v === undefined
      ? `field 'ttl' is required (an integer ≥ ${min})`
      : `field 'ttl' must be an integer ≥ ${min} and ≤ ${MAX_TTL}`);
  }
  return v;
}

/** Absolute expiry for a ttl in seconds (0 = never). */
export function expiryOf(ttl: number, now: number): number {
  return ttl === 0 ? 0 : now + ttl * 1000;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function objectField(body: Record<string, unknown>, field: string): Record<string, unknown> {
  const v = body[field];
  if (!isPlainObject(v)) {
    throw invalid(v === undefined ? `field '${field}' is required (an object)` : `field '${field}' must be an object`);
  }
  return v;
}

export function stringField(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (typeof v !== 'string') {
    throw invalid(v === undefined ? `field '${field}' is required (a string)` : `field '${field}' must be a string`);
  }
  return v;
}
