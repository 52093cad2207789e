/** Tables, their rows and secondary indexes. */
import { PithosAdmin } from './admin.js';
import type { JsonObject, QueryOptions, Row, RowWithId, Wheres } from './types.js';
import { queryFields, writeFields } from './wire.js';

export class PithosTables extends PithosAdmin {
  // --- tables ---------------------------------------------------------------------------

  async createTable(name: string, o: { ttl?: number } = {}): Promise<void> {
    await this.call('createTable', [name], { body: o.ttl === undefined ? {} : { ttl: o.ttl } });
  }
  async dropTable(name: string): Promise<void> {
    await this.call('dropTable', [name]);
  }
  async insertRow(name: string, row: Row): Promise<{ t_id: number }> {
    return (await this.call<{ t_id: number }>('insertRow', [name], { body: { rows: row } })).data;
  }
  /** The whole table: `t_id` (as a string key) → row. `limit`/`after` are part two. */
  async getTable(name: string, o: { limit?: number; after?: number } = {}): Promise<Record<string, Row>> {
    return (await this.call<Record<string, Row>>('getTable', [name], { query: { limit: o.limit, after: o.after } })).data;
  }
  /** Matching rows in `t_id` order (through the POST alias, which browsers and fetch can send). */
  async queryRows(name: string, wheres: Wheres = {}, o: QueryOptions = {}): Promise<Row[]> {
    return (await this.call<Row[]>('queryRows', [name], { body: { wheres, ...queryFields(o) } })).data;
  }
  /** Part two: each matching row with its `t_id`. */
  async queryRowsWithIds(name: string, wheres: Wheres = {}, o: QueryOptions = {}): Promise<RowWithId[]> {
    return (await this.call<RowWithId[]>('queryRows', [name], { body: { wheres, ...queryFields(o), with_ids: true } })).data;
  }
  /** Part two: the number of matching rows. */
  async countRows(name: string, wheres: Wheres = {}): Promise<number> {
    return (await this.call<{ count: number }>('queryRows', [name], { body: { wheres, count: true } })).data.count;
  }
  async patchRows(name: string, wheres: Wheres, sets: Row): Promise<void> {
    await this.call('patchRows', [name], { body: { wheres, sets } });
  }
  async deleteRows(name: string, wheres: Wheres): Promise<void> {
    await this.call('deleteRows', [name], { body: { wheres } });
  }
  /** One row by its `t_id`. */
  async getRow(name: string, tId: number): Promise<Row> {
    return (await this.call<Row>('getRow', [name, String(tId)])).data;
  }
  /** One row and its version (the ETag), for a later `ifVersion`. */
  async getRowVersioned(name: string, tId: number): Promise<{ value: Row; version?: number }> {
    const r = await this.call<Row>('getRow', [name, String(tId)]);
    return r.version === undefined ? { value: r.data } : { value: r.data, version: r.version };
  }
  /** Replaces an existing row whole (never creates one: 404 when there is no such row). */
  async replaceRow(name: string, tId: number, row: Row, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('replaceRow', [name, String(tId)], { body: { rows: row, ...writeFields(o) } });
  }
  /** Writes the top-level fields of `sets` into one row and removes the fields named in `unset`. */
  async patchRow(name: string, tId: number, sets: Row, o: { unset?: string[]; ifVersion?: number } = {}): Promise<void> {
    const body: JsonObject = { sets, ...writeFields(o) };
    if (o.unset !== undefined) body.unset = o.unset;
    await this.call('patchRow', [name, String(tId)], { body });
  }
  /** Deletes exactly one row. */
  async deleteRow(name: string, tId: number, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteRow', [name, String(tId)], { body: writeFields(o) });
  }
  /** Part two: set the remaining lifetime of a table, record or variant (0 = none). */
  async setTtl(kind: 'table' | 'record' | 'variant', name: string, ttl: number): Promise<void> {
    const op = ({ table: 'setTableTtl', record: 'patchRecord', variant: 'setVariantTtl' } as const)[kind];
    await this.call(op, [name], { body: { ttl } });
  }

  // --- indexes (part two) ---------------------------------------------------------------

  async createIndex(table: string, field: string): Promise<void> {
    await this.call('createIndex', [table, field]);
  }
  async listIndexes(table: string): Promise<unknown> {
    return (await this.call('listIndexes', [table])).data;
  }
  async dropIndex(table: string, field: string): Promise<void> {
    await this.call('dropIndex', [table, field]);
  }
}
