/**
 * Record namespace: one JSON document per id, replaced whole on PUT. The
 * cached form is the JSON text itself, so GET answers without parsing or
 * serialising the document.
 */
import { type Decoder, type Engine, MISS, Op } from '../engine/index.js';
import { notFound } from './errors.js';
import { hasField } from './json.js';
import { recordKey } from './keys.js';
import { expiryOf } from './validate.js';

const recordDecoder: Decoder<string> = (buf) => buf.toString('utf8');
const missing = (id: string) => notFound(`record '${id}' does not exist`);

export class Records {
  constructor(private readonly engine: Engine, private readonly now: () => number) {}

  /** Stores the record; resolves to true when it is new, false when it replaced one. */
  async put(id: string, record: Record<string, unknown>, ttl: number): Promise<boolean> {
    const key = recordKey(id);
    const created = !this.engine.has(key);
    const json = JSON.stringify(record);
    await this.engine.write([{
      op: Op.Put, key, value: Buffer.from(json), expiresAt: expiryOf(ttl, this.now()), memo: json, decoder: recordDecoder,
    }]);
    return created;
  }

  /** The record as JSON text. */
  get(id: string): string | Promise<string> {
    const v = this.engine.peek(recordKey(id), recordDecoder);
    if (v === MISS) return this.engine.read(recordKey(id), recordDecoder).then((r) => r ?? Promise.reject(missing(id)));
    if (v === undefined) throw missing(id);
    return v;
  }

  /** `[value]` when the record has the field, `[]` otherwise, as JSON text. */
  async search(id: string, column: string): Promise<string> {
    const doc = JSON.parse(await this.get(id)) as Record<string, unknown>;
    return hasField(doc, column) ? `[${JSON.stringify(doc[column])}]` : '[]';
  }

  delete(id: string): Promise<void> {
    const key = recordKey(id);
    if (!this.engine.has(key)) return Promise.reject(missing(id));
    return this.engine.write([{ op: Op.Del, key, value: undefined, expiresAt: 0 }]);
  }
}
