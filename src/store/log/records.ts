/**
 * Record namespace on the log: one JSON document per id, replaced whole on
 * PUT. The cached form is the JSON text itself, so GET answers without
 * parsing or serialising the document.
 */
import { type Decoder, type Engine, MISS } from '../../engine/index.js';
import { notFound } from '../errors.js';
import { hasField } from '../json.js';
import type { RecordStore } from '../store.js';
import { expiryOf } from '../validate.js';
import type { Row } from '../wheres.js';
import type { Atomic, Tx } from './atomic.js';
import { recordKey } from './keys.js';

const recordDecoder: Decoder<string> = (buf) => buf.toString('utf8');
const missing = (id: string) => notFound(`record '${id}' does not exist`);

export function recordExists(tx: Tx, id: string): boolean {
  return tx.has(recordKey(id));
}

/** Stores the record; returns true when it is new. */
export function putRecord(tx: Tx, id: string, record: Row, ttl: number): boolean {
  const key = recordKey(id);
  const created = !tx.has(key);
  const json = JSON.stringify(record);
  tx.put(key, Buffer.from(json), json, recordDecoder, expiryOf(ttl, tx.now));
  return created;
}

export function deleteRecord(tx: Tx, id: string): void {
  const key = recordKey(id);
  if (!tx.has(key)) throw missing(id);
  tx.del(key);
}

export class LogRecords implements RecordStore {
  constructor(private readonly engine: Engine, private readonly atomic: Atomic) {}

  put(id: string, record: Row, ttl: number): Promise<boolean> {
    return this.atomic.atomically(undefined, (tx) => putRecord(tx, id, record, ttl));
  }

  get(id: string): string | Promise<string> {
    // A plain read needs no decision: the cached text is the answer.
    const v = this.engine.peek(recordKey(id), recordDecoder);
    if (v === MISS) return this.engine.read(recordKey(id), recordDecoder).then((r) => r ?? Promise.reject(missing(id)));
    if (v === undefined) throw missing(id);
    return v;
  }

  async search(id: string, column: string): Promise<string> {
    const doc = JSON.parse(await this.get(id)) as Record<string, unknown>;
    return hasField(doc, column) ? `[${JSON.stringify(doc[column])}]` : '[]';
  }

  delete(id: string): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => deleteRecord(tx, id));
  }
}
