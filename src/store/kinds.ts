/**
 * Every kind of named object the contract has, in one table: what each is
 * called in paths and listings, how each store lays it out, and which groups
 * it belongs to. The kind unions (`Kind`, `ListKind`, `ChangeKind`,
 * `ObjectKind`, `CollectionKind`, `TxnKind`) are derived from this table, and
 * every per-kind map elsewhere is a `Record` over one of them, so a kind added
 * here makes the compiler name each place that must learn it. The client and
 * the console keep their own lists (they ship without src/); a test holds
 * them equal to this table (test/client/kinds.test.ts).
 *
 * The log's key prefixes are recorded here as data; src/store/log/keys.ts is
 * the one place that builds and reads keys from them (docs/format.md, "Keys").
 */
export const KINDS = {
  table: {
    /** The path segment of its endpoints and the name of its listing (`GET /tables`). */
    plural: 'tables',
    /** Fields a listing item has beside `name` and `ttl_ms` (docs/api.md, "List names"). */
    listing: ['rows'],
    /** A list, set or sorted set: one object made of many elements, each changed on its own. */
    collection: false,
    /** Kept as a header plus one key or row per member (src/store/collection.ts). */
    members: false,
    /** Named by checks and mutations of POST /txns. */
    txn: true,
    /** The log store's keys: the top-level key's prefix, and the letter of its element groups. */
    log: { top: 'T/', group: 't' },
    /** The shared store's tables: the objects, and their elements. */
    pg: { objects: 'pithos_tables', elements: 'pithos_rows' },
  },
  record: {
    plural: 'records',
    listing: [],
    collection: false,
    members: false,
    txn: true,
    log: { top: 'R/', group: undefined },
    pg: { objects: 'pithos_records', elements: undefined },
  },
  variant: {
    plural: 'variants',
    listing: [],
    collection: false,
    members: false,
    txn: true,
    log: { top: 'V/', group: undefined },
    pg: { objects: 'pithos_variants', elements: undefined },
  },
  lock: {
    plural: 'locks',
    listing: ['held', 'holder'],
    collection: false,
    members: false,
    txn: false,
    log: { top: 'L/', group: undefined },
    pg: { objects: 'pithos_locks', elements: undefined },
  },
  list: {
    plural: 'lists',
    listing: ['length'],
    collection: true,
    members: false,
    txn: true,
    log: { top: 'Q/', group: 'q' },
    pg: { objects: 'pithos_lists', elements: 'pithos_list_items' },
  },
  set: {
    plural: 'sets',
    listing: ['count'],
    collection: true,
    members: true,
    txn: true,
    log: { top: 'S/', group: 's' },
    pg: { objects: 'pithos_sets', elements: 'pithos_set_members' },
  },
  zset: {
    plural: 'zsets',
    listing: ['count'],
    collection: true,
    members: true,
    txn: true,
    log: { top: 'Z/', group: 'z' },
    pg: { objects: 'pithos_zsets', elements: 'pithos_zset_members' },
  },
} as const;

type Table = typeof KINDS;

/** Every kind of named object, singular, as checks, mutations and the change feed name it. */
export type Kind = keyof Table;
/** Every kind of named object (the 404 wording of src/store/messages.ts). */
export type ObjectKind = Kind;
/** A kind as the change feed reports it. */
export type ChangeKind = Kind;
/** A kind as listings name it: the plural of its path. */
export type ListKind = Table[Kind]['plural'];
/** The kinds made of elements changed one at a time: lists, sets, sorted sets. */
export type ElementKind = { [K in Kind]: Table[K]['collection'] extends true ? K : never }[Kind];
/** The collection kinds that are kept as many keys (one per member): sets and sorted sets. */
export type CollectionKind = { [K in Kind]: Table[K]['members'] extends true ? K : never }[Kind];
/** The kinds a transaction's checks and mutations may name (docs/api.md, "Transactions"). */
export type TxnKind = { [K in Kind]: Table[K]['txn'] extends true ? K : never }[Kind];

/** Every kind, in the table's order. */
export const KIND_NAMES = Object.keys(KINDS) as Kind[];

/** `'a', 'b' or 'c'` (or, with `quote` '', `a, b or c`): a list of kinds as error messages name them. */
export function wordList(words: readonly string[], quote = "'"): string {
  const q = words.map((w) => quote + w + quote);
  return q.length < 2 ? q.join('') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

/** Whether a kind is made of elements changed one at a time (a list, set or sorted set). */
export const isElementKind = (k: Kind): k is ElementKind => KINDS[k].collection;
