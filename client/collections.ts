/** Sets and sorted sets (docs/api.md "Sets and sorted sets"). */
import { PithosLists } from './lists.js';
import type { ListOptions, ListPage, WriteOptions, ZItem, ZMode, ZRangeQuery } from './types.js';
import { scoreBound, writeFields } from './wire.js';

export class PithosCollections extends PithosLists {
  // --- sets and sorted sets ---------------------------------------------------------------

  async putSet(name: string, members: string[], o?: WriteOptions): Promise<{ created: boolean }> {
    return { created: (await this.call('putSet', [name], { body: { set: members, ...writeFields(o) } })).status === 201 };
  }
  /** Members in byte order: all of them, or a page (`limit` 1-1000, `after` the previous page's `next`). */
  async getSet(name: string, o: { limit?: number; after?: string } = {}): Promise<{ members: string[]; count: number; next: string | null; version?: number }> {
    const r = await this.call<{ members: string[]; count: number; next: string | null }>('getSet', [name], { query: { limit: o.limit, after: o.after } });
    return r.version === undefined ? r.data : { ...r.data, version: r.version };
  }
  async setAdd(name: string, members: string[], o: { create?: boolean; ifVersion?: number } = {}): Promise<{ added: number; count: number }> {
    return (await this.call<{ added: number; count: number }>('setAdd', [name], { body: { members, create: o.create, if_version: o.ifVersion } })).data;
  }
  async setRemove(name: string, members: string[], o: { ifVersion?: number } = {}): Promise<{ removed: number; count: number }> {
    return (await this.call<{ removed: number; count: number }>('setRemove', [name], { body: { members, if_version: o.ifVersion } })).data;
  }
  async setContains(name: string, members: string[]): Promise<boolean[]> {
    return (await this.call<{ contains: boolean[] }>('setContains', [name], { body: { members } })).data.contains;
  }
  /** With `store`, `ifVersion` / `ifAbsent` are conditions on the set `store` replaces, as on its PUT. */
  async setCombine(
    name: string,
    op: 'union' | 'inter' | 'diff',
    withSets: string[],
    store?: string,
    o: { ifVersion?: number; ifAbsent?: boolean } = {},
  ): Promise<{ members?: string[]; count: number }> {
    return (await this.call<{ members?: string[]; count: number }>('setCombine', [name], { body: { op, with: withSets, store, ...writeFields(o) } })).data;
  }
  /** Sets the remaining lifetime (0 = none) without rewriting the members. */
  async setSetTtl(name: string, ttl: number, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('setSetTtl', [name], { body: { ttl, ...writeFields(o) } });
  }
  async deleteSet(name: string, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteSet', [name], o.ifVersion === undefined ? {} : { body: writeFields(o) });
  }
  listSets(o?: ListOptions): Promise<ListPage> {
    return this.list('set', o);
  }
  /** The quick-start spelling `/set/<key>`. */
  async putSetQuick(key: string, members: string[], o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putSetQuick', [key], { body: { set: members, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  /** Every member, in byte order. */
  async getSetQuick(key: string): Promise<string[]> {
    return (await this.call<{ set: string[] }>('getSetQuick', [key])).data.set;
  }
  async deleteSetQuick(key: string): Promise<void> {
    await this.call('deleteSetQuick', [key]);
  }
  async putZset(name: string, members: Record<string, number>, o?: WriteOptions): Promise<{ created: boolean }> {
    return { created: (await this.call('putZset', [name], { body: { zset: members, ...writeFields(o) } })).status === 201 };
  }
  async zadd(
    name: string,
    members: Record<string, number>,
    o: { mode?: ZMode; create?: boolean; ifVersion?: number } = {},
  ): Promise<{ added: number; updated: number; count: number }> {
    return (
      await this.call<{ added: number; updated: number; count: number }>('zadd', [name], {
        body: { members, mode: o.mode, create: o.create, if_version: o.ifVersion },
      })
    ).data;
  }
  /** Adds `delta` to a member's score (a missing member starts at 0); resolves with the new score. */
  async zincr(name: string, member: string, delta: number, o: { create?: boolean; ifVersion?: number } = {}): Promise<number> {
    return (await this.call<{ score: number }>('zincr', [name], { body: { member, delta, create: o.create, if_version: o.ifVersion } })).data.score;
  }
  async zremove(name: string, members: string[], o: { ifVersion?: number } = {}): Promise<{ removed: number; count: number }> {
    return (await this.call<{ removed: number; count: number }>('zremove', [name], { body: { members, if_version: o.ifVersion } })).data;
  }
  /** Members with their scores, by rank or by score; `count` is the size of the whole set, `version` its ETag. */
  async zrange(name: string, q: ZRangeQuery = {}): Promise<{ items: ZItem[]; count: number; version?: number }> {
    const query: Record<string, string | number | boolean | undefined> = { ...q } as Record<string, string | number | boolean | undefined>;
    // String(Infinity) is 'Infinity', which the server refuses: it spells the open ends -inf and +inf.
    if (q.by === 'score') {
      query.min = scoreBound(q.min);
      query.max = scoreBound(q.max);
    }
    const r = await this.call<{ items: ZItem[]; count: number }>('zrange', [name], { query });
    return r.version === undefined ? r.data : { ...r.data, version: r.version };
  }
  /** Score, rank and reverse rank of a member; rejects with status 404 when it is not one. */
  async zmember(name: string, member: string): Promise<{ score: number; rank: number; rev_rank: number }> {
    return (await this.call<{ score: number; rank: number; rev_rank: number }>('zmember', [name, member])).data;
  }
  /** Sets the remaining lifetime (0 = none) without rewriting the members. */
  async setZsetTtl(name: string, ttl: number, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('setZsetTtl', [name], { body: { ttl, ...writeFields(o) } });
  }
  async deleteZset(name: string, o: { ifVersion?: number } = {}): Promise<void> {
    await this.call('deleteZset', [name], o.ifVersion === undefined ? {} : { body: writeFields(o) });
  }
  listZsets(o?: ListOptions): Promise<ListPage> {
    return this.list('zset', o);
  }
  /** The quick-start spelling `/zset/<key>`. */
  async putZsetQuick(key: string, members: Record<string, number>, o: { ttl?: number } = {}): Promise<{ created: boolean }> {
    const r = await this.call('putZsetQuick', [key], { body: { zset: members, ...writeFields(o) } });
    return { created: r.status === 201 };
  }
  /** Every member and its score, as an object in sorted-set order (score, then member). */
  async getZsetQuick(key: string): Promise<Record<string, number>> {
    return (await this.call<{ zset: Record<string, number> }>('getZsetQuick', [key])).data.zset;
  }
  async deleteZsetQuick(key: string): Promise<void> {
    await this.call('deleteZsetQuick', [key]);
  }
}
