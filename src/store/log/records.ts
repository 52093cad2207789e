/**
 * Record namespace on the log: one JSON document per id, replaced whole on
 * PUT. The cached form is the JSON text itself, so GET answers without
 * parsing or serialising the document.
 */
import { type Decoder, type Engine, MISS } from '../../engine/index.js';
import type { StoreError } from '../errors.js';
import { missing as missingObject } from '../messages.js';
import { hasField, mergeFields } from '../json.js';
import type { Precondition, RecordStore, VersionOut } from '../store.js';
import { expiryOf } from '../validate.js';
import { checkPrecondition } from '../versions.js';
import type { Row } from '../wheres.js';
import type { Atomic, Tx } from './atomic.js';
import { rethrowFromEngine } from './errors.js';
import { recordKey } from './keys.js';

export const recordDecoder: Decoder<string> = (buf) => buf.toString('utf8');
const missing = (id: string): StoreError => missingObject('record', id);

export function recordExists(tx: Tx, id: string): boolean {
  return tx.has(recordKey(id));
}

export function recordVersion(tx: Tx, id: string): number | undefined {
  return tx.version(recordKey(id));
}

/** Stores the record; returns true when it is new. */
export function putRecord(tx: Tx, id: string, record: Row, ttl: number, pre?: Precondition): boolean {
  const key = recordKey(id);
  if (pre !== undefined) checkPrecondition(`record '${id}'`, tx.version(key), pre);
  const created = !tx.has(key);
  const json = JSON.stringify(record);
  tx.put(key, Buffer.from(json), json, recordDecoder, expiryOf(ttl, tx.now));
  return created;
}

/** The current text of an existing record, after checking `pre`; 404 when absent (and no condition). */
function existing(tx: Tx, id: string, pre: Precondition | undefined): string {
  const key = recordKey(id);
  if (pre !== undefined) checkPrecondition(`record '${id}'`, tx.version(key), pre);
  const json = tx.get(key, recordDecoder);
  if (json === undefined) throw missing(id);
  return json;
}

/** Merges `sets` into the record (null deletes a field), keeping its expiry unless `ttl` gives a new one. */
export function patchRecord(tx: Tx, id: string, sets: Row, pre?: Precondition, ttl?: number): void {
  const key = recordKey(id);
  const cur = JSON.parse(existing(tx, id, pre)) as Row;
  const merged = mergeFields(cur, sets);
  for (const k of Object.keys(sets)) if (sets[k] === null) delete merged[k];
  const json = JSON.stringify(merged);
  tx.put(key, Buffer.from(json), json, recordDecoder, ttl === undefined ? tx.expiry(key) : expiryOf(ttl, tx.now));
}

/**
 * Sets the remaining lifetime. The log has no entry that changes only an
 * expiry, so the same value bytes are written again with the new one: the
 * value is unchanged, its version is this batch's (docs/api.md).
 */
export function expireRecord(tx: Tx, id: string, ttl: number, pre?: Precondition): void {
  const json = existing(tx, id, pre);
  tx.put(recordKey(id), Buffer.from(json), json, recordDecoder, expiryOf(ttl, tx.now));
}

export function deleteRecord(tx: Tx, id: string): void {
  const key = recordKey(id);
  if (!tx.has(key)) throw missing(id);
  tx.del(key);
}

export class LogRecords implements RecordStore {
  constructor(
    private readonly engine: Engine,
    private readonly atomic: Atomic,
  ) {}

  put(id: string, record: Row, ttl: number, pre?: Precondition): Promise<boolean> {
    return this.atomic.atomically(undefined, (tx) => putRecord(tx, id, record, ttl, pre));
  }

  patch(id: string, sets: Row, pre?: Precondition, ttl?: number): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => patchRecord(tx, id, sets, pre, ttl));
  }

  expire(id: string, ttl: number, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => expireRecord(tx, id, ttl, pre));
  }

  get(id: string, out?: VersionOut): string | Promise<string> {
    // A plain read needs no decision: the cached text is the answer.
    const key = recordKey(id);
    const v = this.engine.peek(key, recordDecoder, undefined, out);
    if (v === MISS) return this.readAndGet(id, out);
    if (v === undefined) throw missing(id);
    return v;
  }

  /** Reads the value into the cache, then answers from it in one synchronous step, so text and version agree. */
  private async readAndGet(id: string, out: VersionOut | undefined): Promise<string> {
    const key = recordKey(id);
    for (let attempt = 0; ; attempt++) {
      const r = await this.engine.read(key, recordDecoder).catch(rethrowFromEngine);
      if (r === undefined) throw missing(id);
      let v = this.engine.peek(key, recordDecoder);
      if (v === undefined) throw missing(id);
      // Evicted again meanwhile (a cache far smaller than the load): a few
      // retries, then the value read, whose version may be a newer one's.
      if (v === MISS) {
        if (attempt < 4) continue;
        v = r;
      }
      if (out !== undefined) out.version = this.engine.versionOf(key) ?? 0;
      return v;
    }
  }

  async search(id: string, column: string): Promise<string> {
    const doc = JSON.parse(await this.get(id)) as Record<string, unknown>;
    return hasField(doc, column) ? `[${JSON.stringify(doc[column])}]` : '[]';
  }

  delete(id: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => deleteRecord(tx, id));
  }
}
