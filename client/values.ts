/** Records, variants (with their /number and /text spellings) and locks. */
import { PithosTables } from './tables.js';
import type { Json, JsonObject, LockGrant, LockState, VariantValue, WriteOptions } from './types.js';
import { writeFields } from './wire.js';

export class PithosValues extends PithosTables {
  // --- records --------------------------------------------------------------------------

  /** Create or replace; `created` tells which (201 or 200). `ifVersion`/`ifAbsent` are part two. */
  async putRecord(id: string, record: JsonObject, o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putRecord', [id], { body: { record, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getRecord<T extends JsonObject = JsonObject>(id: string): Promise<T> {
    return (await this.call<T>('getRecord', [id])).data;
  }
  /** The record and, when the server sends an ETag (part two), its version. */
  async getRecordVersioned<T extends JsonObject = JsonObject>(id: string): Promise<{ value: T; version?: number }> {
    const r = await this.call<T>('getRecord', [id]);
    return r.version === undefined ? { value: r.data } : { value: r.data, version: r.version };
  }
  /** `[value]`, or `[]` when the record has no such field. */
  async searchRecord(id: string, column: string): Promise<Json[]> {
    return (await this.call<Json[]>('searchRecord', [id], { body: { column } })).data;
  }
  /** Part two: merge top-level fields (`null` deletes one). */
  async patchRecord(id: string, sets: JsonObject, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('patchRecord', [id], { body: { sets, ...writeFields(o) } });
  }
  async deleteRecord(id: string): Promise<void> {
    await this.call('deleteRecord', [id]);
  }
  /** The quick-start spelling `/table/<key>` of the record namespace. */
  async putQuick(key: string, value: JsonObject, o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putQuick', [key], { body: { table: value, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getQuick<T extends JsonObject = JsonObject>(key: string): Promise<T> {
    return (await this.call<T>('getQuick', [key])).data;
  }
  async deleteQuick(key: string): Promise<void> {
    await this.call('deleteQuick', [key]);
  }

  // --- variants -------------------------------------------------------------------------

  async putVariant(name: string, value: VariantValue, o?: WriteOptions): Promise<{ variant: VariantValue; created: boolean }> {
    const r = await this.call<{ variant: VariantValue }>('putVariant', [name], { body: { variant: value, ...writeFields(o) } });
    return { variant: r.data.variant, created: r.status === 201 };
  }
  async getVariant(name: string): Promise<VariantValue> {
    return (await this.call<{ variant: VariantValue }>('getVariant', [name])).data.variant;
  }
  async getVariantVersioned(name: string): Promise<{ value: VariantValue; version?: number }> {
    const r = await this.call<{ variant: VariantValue }>('getVariant', [name]);
    return r.version === undefined ? { value: r.data.variant } : { value: r.data.variant, version: r.version };
  }
  /** Atomic add; resolves with the new value (a number: only numeric variants can be incremented). */
  async incr(name: string, delta = 1): Promise<number> {
    return (await this.call<{ variant: number }>('incr', [name], { body: { delta } })).data.variant;
  }
  async deleteVariant(name: string): Promise<void> {
    await this.call('deleteVariant', [name]);
  }
  /** Atomic append to a string variant (Redis APPEND); resolves with its new length in UTF-8 bytes. */
  async append(name: string, text: string, o: { ifVersion?: number } = {}): Promise<number> {
    return (await this.call<{ length: number }>('append', [name], { body: { append: text, ...writeFields(o) } })).data.length;
  }

  // --- numbers and texts: /number/<key> (an integer variant), /text/<key> (a string variant) ---

  async putNumber(key: string, n: number, o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putNumber', [key], { body: { number: n, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getNumber(key: string): Promise<number> {
    return (await this.call<{ number: number }>('getNumber', [key])).data.number;
  }
  /** Atomic add of an integer; resolves with the new value. */
  async incrNumber(key: string, delta = 1): Promise<number> {
    return (await this.call<{ number: number }>('incrNumber', [key], { body: { delta } })).data.number;
  }
  async deleteNumber(key: string): Promise<void> {
    await this.call('deleteNumber', [key]);
  }
  async putText(key: string, content: string, o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putText', [key], { body: { content, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getText(key: string): Promise<string> {
    return (await this.call<{ content: string }>('getText', [key])).data.content;
  }
  /** Atomic append; resolves with the text's new length in UTF-8 bytes. */
  async appendText(key: string, text: string, o: { ifVersion?: number } = {}): Promise<number> {
    return (await this.call<{ length: number }>('appendText', [key], { body: { append: text, ...writeFields(o) } })).data.length;
  }
  async deleteText(key: string): Promise<void> {
    await this.call('deleteText', [key]);
  }

  // --- locks ----------------------------------------------------------------------------

  /** Non-blocking: a held lock rejects with status 423. */
  async acquireLock(name: string, ttl: number, holder?: string): Promise<LockGrant> {
    return (await this.call<LockGrant>('acquireLock', [name], { body: holder === undefined ? { ttl } : { ttl, holder } })).data;
  }
  async renewLock(name: string, token: string, ttl?: number): Promise<LockGrant> {
    return (await this.call<LockGrant>('renewLock', [name], { body: ttl === undefined ? { token } : { token, ttl } })).data;
  }
  async releaseLock(name: string, token: string): Promise<void> {
    await this.call('releaseLock', [name], { body: { token } });
  }
  async getLock(name: string): Promise<LockState> {
    return (await this.call<LockState>('getLock', [name])).data;
  }
}
