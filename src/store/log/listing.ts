/**
 * Listing (docs/api.md "List names"): a page of names from the ordered view
 * (names.ts), then what each item shows, read in one decision: remaining
 * lifetime for all, and each kind's own fields (EXTRAS): the row count for
 * tables, the holder for locks, a list's length, a set's member count.
 */
import type { Holding, ListKind, ListOptions, Sync } from '../store.js';
import type { Atomic } from './atomic.js';
import { listPrefix, nameOfTop, rowGroup } from './keys.js';
import { leaseDecoder } from './locks.js';
import type { NameView } from './names.js';
import { metaDecoder } from './tables.js';
import { headDecoder } from './lists.js';
import { recordDecoder } from './records.js';
import type { Decoder, Engine } from '../../engine/index.js';
import { type Header, headerDecoder } from './collections.js';

/**
 * A name JSON writes as itself between quotes: printable ASCII without `"`
 * or `\`. Tested instead of calling JSON.stringify for each of a page's
 * names, which made a page of 100 about 4.5 µs dearer in process
 * (docs/benchmarks.md, "Row references").
 */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * What an item of each kind shows beside its name and lifetime (the kinds
 * table's `listing` fields): the value read for it, and those fields as JSON
 * text from it (undefined: the name's value is gone since the page was read).
 */
interface Extra<T> {
  dec: Decoder<T>;
  fields(v: T | undefined, name: string, engine: Engine): string;
}
const extra = <T>(e: Extra<T>): Extra<unknown> => e as unknown as Extra<unknown>;
const counted = extra({ dec: headerDecoder, fields: (h: Header | undefined) => `,"count":${h?.count ?? 0}` });
const EXTRAS: Record<ListKind, Extra<unknown> | undefined> = {
  tables: extra({
    dec: metaDecoder,
    fields: (m: { inc: number } | undefined, name, engine) => `,"rows":${m === undefined ? 0 : engine.groupSize(rowGroup(name, m.inc))}`,
  }),
  records: undefined,
  variants: undefined,
  locks: extra({ dec: leaseDecoder, fields: (l: { holder: string | null } | undefined) => `,"held":true,"holder":${JSON.stringify(l?.holder ?? null)}` }),
  lists: extra({ dec: headDecoder, fields: (h: { head: number; tail: number } | undefined) => `,"length":${h === undefined ? 0 : h.tail - h.head}` }),
  sets: counted,
  zsets: counted,
};

export function list(engine: Engine, atomic: Atomic, names: NameView, kind: ListKind, opts: ListOptions): Sync<string> {
  const ns = listPrefix(kind);
  const ex = EXTRAS[kind];
  return atomic.readNow((tx) => {
    // A read decision writes nothing, so the engine's expiry of each name is the decision's.
    const { keys, exps, more } = names.page(ns + opts.prefix, opts.after === null ? null : ns + opts.after, opts.limit, tx.now);
    const values = ex === undefined ? undefined : tx.getMany(keys, ex.dec);
    let out = '{"items":[';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const exp = exps[i];
      const name = nameOfTop(key);
      let item =
        (i === 0 ? '{"name":' : ',{"name":') +
        (PLAIN.test(name) ? '"' + name + '"' : JSON.stringify(name)) +
        (exp === 0 ? ',"ttl_ms":null' : ',"ttl_ms":' + Math.max(0, exp - tx.now));
      if (ex !== undefined) item += ex.fields(values?.[i], name, engine);
      out += item + '}';
    }
    const next = more && keys.length > 0 ? JSON.stringify(nameOfTop(keys[keys.length - 1])) : 'null';
    return `${out}],"next":${next}}`;
  });
}

/** How each kind's value says its object is empty (Store.holders); kinds that cannot be empty have none. */
interface Emptiness<T> {
  dec: Decoder<T>;
  empty(v: T): boolean;
}
const emptiness = <T>(e: Emptiness<T>): Emptiness<unknown> => e as unknown as Emptiness<unknown>;
const noMembers = emptiness({ dec: headerDecoder, empty: (h: Header) => h.count === 0 });
const EMPTINESS: Record<ListKind, Emptiness<unknown> | undefined> = {
  tables: undefined,
  records: emptiness({ dec: recordDecoder, empty: (json: string) => json === '{}' }),
  variants: undefined,
  locks: undefined,
  lists: emptiness({ dec: headDecoder, empty: (h: { head: number; tail: number }) => h.tail === h.head }),
  sets: noMembers,
  zsets: noMembers,
};

/** Store.holders: one read decision, one key per kind. */
export function holders(atomic: Atomic, name: string, kinds: readonly ListKind[]): Sync<Array<Holding | null>> {
  return atomic.readNow((tx) =>
    kinds.map((kind): Holding | null => {
      const key = listPrefix(kind) + name;
      const e = EMPTINESS[kind];
      if (e === undefined) {
        if (!tx.has(key)) return null;
      } else {
        const v = tx.get(key, e.dec);
        if (v === undefined) return null;
        if (e.empty(v)) return { empty: true, ttlMs: ttlOf(tx.expiry(key), tx.now) };
      }
      return { empty: false, ttlMs: ttlOf(tx.expiry(key), tx.now) };
    }),
  );
}

const ttlOf = (exp: number, now: number): number | null => (exp === 0 ? null : Math.max(0, exp - now));
