/** Lists (docs/api.md "Lists"). */
import { PithosValues } from './values.js';
import type { Json, JsonObject, ListOptions, ListPage, WriteOptions } from './types.js';
import { writeFields } from './wire.js';

export class PithosLists extends PithosValues {
  // --- lists (docs/api.md "Lists") -------------------------------------------------------

  /** Create or replace; `created` tells which (201 or 200). */
  async putList(name: string, items: Json[], o?: WriteOptions): Promise<{ created: boolean }> {
    const r = await this.call('putList', [name], { body: { list: items, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  /** Items from `start` to `stop` inclusive (negatives count from the end), the list's length and version. */
  async getList<T extends Json = Json>(name: string, o: { start?: number; stop?: number } = {}): Promise<{ items: T[]; length: number; version?: number }> {
    const r = await this.call<{ items: T[]; length: number }>('getList', [name], { query: { start: o.start, stop: o.stop } });
    return r.version === undefined ? r.data : { ...r.data, version: r.version };
  }
  /** Pushes one at a time in order (`side` "right" by default); resolves with the new length. */
  async pushList(name: string, values: Json[], o: { side?: 'left' | 'right'; create?: boolean; ifVersion?: number } = {}): Promise<number> {
    const body: JsonObject = { values, ...writeFields(o) };
    if (o.side !== undefined) body.side = o.side;
    if (o.create !== undefined) body.create = o.create;
    return (await this.call<{ length: number }>('pushList', [name], { body })).data.length;
  }
  /**
   * Removes and returns up to `count` items from `side` ("left" by default); with `waitMs`,
   * waits for one when there is none; with `to`, moves them onto that list atomically.
   */
  async popList<T extends Json = Json>(
    name: string,
    o: { side?: 'left' | 'right'; count?: number; waitMs?: number; to?: string; toSide?: 'left' | 'right'; ifVersion?: number } = {},
  ): Promise<T[]> {
    const body: JsonObject = { ...writeFields(o) };
    if (o.side !== undefined) body.side = o.side;
    if (o.count !== undefined) body.count = o.count;
    if (o.waitMs !== undefined) body.wait_ms = o.waitMs;
    if (o.to !== undefined) body.to = o.to;
    if (o.toSide !== undefined) body.to_side = o.toSide;
    return (await this.call<{ items: T[] }>('popList', [name], { body })).data.items;
  }
  /** One of set / trim / remove, and/or ttl; resolves with the new length. */
  async patchList(
    name: string,
    p: {
      set?: { index: number; value: Json };
      trim?: { start: number; stop: number };
      remove?: { value: Json; count: number };
      ttl?: number;
      ifVersion?: number;
    },
  ): Promise<number> {
    const body: JsonObject = { ...writeFields(p) };
    if (p.set !== undefined) body.set = p.set;
    if (p.trim !== undefined) body.trim = p.trim;
    if (p.remove !== undefined) body.remove = p.remove;
    return (await this.call<{ length: number }>('patchList', [name], { body })).data.length;
  }
  async deleteList(name: string, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteList', [name], o.ifVersion === undefined ? {} : { body: writeFields(o) });
  }
  listLists(o?: ListOptions): Promise<ListPage> {
    return this.list('list', o);
  }
  /** The quick-start spelling `/list/<key>`. */
  async putListQuick(key: string, items: Json[], o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putListQuick', [key], { body: { list: items, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  async getListQuick<T extends Json = Json>(key: string): Promise<T[]> {
    return (await this.call<{ list: T[] }>('getListQuick', [key])).data.list;
  }
  async deleteListQuick(key: string): Promise<void> {
    await this.call('deleteListQuick', [key]);
  }
}
