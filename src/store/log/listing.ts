/**
 * Listing (docs/api.md "Listing"): a page of names from the ordered view
 * (names.ts), then what each item shows, read in one decision: remaining
 * lifetime for all, the row count for tables, the holder for locks.
 */
import type { ListKind, ListOptions, Sync } from '../store.js';
import type { Atomic } from './atomic.js';
import { rowGroup } from './keys.js';
import { leaseDecoder } from './locks.js';
import type { NameView } from './names.js';
import { metaDecoder } from './tables.js';
import type { Engine } from '../../engine/index.js';

const NS: Record<ListKind, string> = { tables: 'T/', records: 'R/', variants: 'V/', locks: 'L/' };

export function list(engine: Engine, atomic: Atomic, names: NameView, kind: ListKind, opts: ListOptions): Sync<string> {
  const ns = NS[kind];
  return atomic.readNow((tx) => {
    // A read decision writes nothing, so the engine's expiry of each name is the decision's.
    const { keys, exps, more } = names.page(ns + opts.prefix, opts.after === null ? null : ns + opts.after, opts.limit, tx.now);
    const extra = kind === 'tables' ? tx.getMany(keys, metaDecoder) : kind === 'locks' ? tx.getMany(keys, leaseDecoder) : undefined;
    let out = '{"items":[';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const exp = exps[i];
      let item = `{"name":${JSON.stringify(key.slice(2))},"ttl_ms":${exp === 0 ? 'null' : Math.max(0, exp - tx.now)}`;
      if (kind === 'tables') {
        const m = extra?.[i] as { inc: number } | undefined;
        item += `,"rows":${m === undefined ? 0 : engine.groupSize(rowGroup(key.slice(2), m.inc))}`;
      } else if (kind === 'locks') {
        const l = extra?.[i] as { holder: string | null } | undefined;
        item += `,"held":true,"holder":${JSON.stringify(l?.holder ?? null)}`;
      }
      out += (i === 0 ? '' : ',') + item + '}';
    }
    const next = more && keys.length > 0 ? JSON.stringify(keys[keys.length - 1].slice(2)) : 'null';
    return `${out}],"next":${next}}`;
  });
}
