/**
 * Listing (docs/api.md "List names"): a page of names from the ordered view
 * (names.ts), then what each item shows, read in one decision: remaining
 * lifetime for all, the row count for tables, the holder for locks.
 */
import type { ListKind, ListOptions, Sync } from '../store.js';
import type { Atomic } from './atomic.js';
import { listPrefix, nameOfTop, rowGroup } from './keys.js';
import { leaseDecoder } from './locks.js';
import type { NameView } from './names.js';
import { metaDecoder } from './tables.js';
import { headDecoder } from './lists.js';
import type { Engine } from '../../engine/index.js';
import { type Header, headerDecoder } from './collections.js';

/**
 * A name JSON writes as itself between quotes: printable ASCII without `"`
 * or `\`. Tested instead of calling JSON.stringify for each of a page's
 * names, which made a page of 100 about 4.5 µs dearer in process
 * (docs/benchmarks.md, "Row references").
 */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

export function list(engine: Engine, atomic: Atomic, names: NameView, kind: ListKind, opts: ListOptions): Sync<string> {
  const ns = listPrefix(kind);
  return atomic.readNow((tx) => {
    // A read decision writes nothing, so the engine's expiry of each name is the decision's.
    const { keys, exps, more } = names.page(ns + opts.prefix, opts.after === null ? null : ns + opts.after, opts.limit, tx.now);
    const extra =
      kind === 'tables'
        ? tx.getMany(keys, metaDecoder)
        : kind === 'locks'
          ? tx.getMany(keys, leaseDecoder)
          : kind === 'lists'
            ? tx.getMany(keys, headDecoder)
            : kind === 'sets' || kind === 'zsets'
              ? tx.getMany(keys, headerDecoder)
              : undefined;
    let out = '{"items":[';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const exp = exps[i];
      const name = nameOfTop(key);
      let item =
        (i === 0 ? '{"name":' : ',{"name":') +
        (PLAIN.test(name) ? '"' + name + '"' : JSON.stringify(name)) +
        (exp === 0 ? ',"ttl_ms":null' : ',"ttl_ms":' + Math.max(0, exp - tx.now));
      if (kind === 'tables') {
        const m = extra?.[i] as { inc: number } | undefined;
        item += `,"rows":${m === undefined ? 0 : engine.groupSize(rowGroup(name, m.inc))}`;
      } else if (kind === 'lists') {
        const h = extra?.[i] as { head: number; tail: number } | undefined;
        item += `,"length":${h === undefined ? 0 : h.tail - h.head}`;
      } else if (kind === 'locks') {
        const l = extra?.[i] as { holder: string | null } | undefined;
        item += `,"held":true,"holder":${JSON.stringify(l?.holder ?? null)}`;
      } else if (kind === 'sets' || kind === 'zsets') {
        item += `,"count":${(extra?.[i] as Header | undefined)?.count ?? 0}`;
      }
      out += item + '}';
    }
    const next = more && keys.length > 0 ? JSON.stringify(nameOfTop(keys[keys.length - 1])) : 'null';
    return `${out}],"next":${next}}`;
  });
}
