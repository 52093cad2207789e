/**
 * Rules on names, lifetimes and values that every store shares (docs/api.md,
 * "Names" and "Lifetimes"). Each failure is a StoreError('invalid') whose
 * message names the thing and the reason.
 */
import { invalid } from './errors.js';

export const MAX_NAME_BYTES = 255;
export const MAX_TTL = 2147483647;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** 1-255 bytes of UTF-8, no control characters, not "." or "..". */
export function checkName(name: string, what: string): void {
  if (name.length === 0) throw invalid(`${what} name must not be empty`);
  if (name.length > MAX_NAME_BYTES || Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) {
    throw invalid(`${what} name must be at most ${MAX_NAME_BYTES} bytes of UTF-8`);
  }
  if (CONTROL.test(name)) throw invalid(`${what} name must not contain control characters`);
  if (name === '.' || name === '..') throw invalid(`${what} name must not be '.' or '..'`);
}

/** Absolute expiry for a ttl in seconds (0 = never). */
export function expiryOf(ttl: number, now: number): number {
  return ttl === 0 ? 0 : now + ttl * 1000;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export const MAX_HOLDER_BYTES = 255;

/** A lock's optional holder label: a string of at most 255 bytes, or null. */
export function checkHolder(holder: unknown): string | null {
  if (holder === undefined || holder === null) return null;
  if (typeof holder !== 'string') throw invalid(`field 'holder' must be a string`);
  if (Buffer.byteLength(holder, 'utf8') > MAX_HOLDER_BYTES) throw invalid(`field 'holder' must be at most ${MAX_HOLDER_BYTES} bytes`);
  return holder;
}

/** A version as a client may send it: a non-negative integer (docs/api.md, "Versions"). */
export function isVersion(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
