/**
 * The wording of "it is not there", one for every store and kind, so that
 * the log store and the shared store answer a missing object byte for byte
 * alike (docs/api.md gives these messages).
 */
import { notFound, type StoreError } from './errors.js';
import type { ObjectKind } from './kinds.js';

export type { ObjectKind };

/** 404: `<kind> '<name>' does not exist`. */
export const missing = (kind: ObjectKind, name: string): StoreError => notFound(`${kind} '${name}' does not exist`);

/** 404 of an index that is not declared on a table. */
export const indexMissing = (table: string, field: string): StoreError => notFound(`index on '${field}' of table '${table}' does not exist`);
