/**
 * The whole key map of the log store (docs/format.md, "Keys"): the one place
 * that builds a key from a kind and a name, and reads a kind, a name or a
 * t_id back out of a key. The letters themselves are data of the kinds
 * table (src/store/kinds.ts, `log`); the index keys, which belong to no
 * kind, are declared here.
 *
 * - Top-level keys, one per object: `<letter>/<name>` (`T/`, `R/`, `V/`,
 *   `L/`, `Q/`, `S/`, `Z/`). They stay outside groups, which is what lets
 *   health count them as the engine's ungrouped keys.
 * - Groups: the keys that share a prefix up to their last U+0000, which the
 *   engine iterates and drops as one (src/engine/chunked-group.ts). Names
 *   never contain control characters (validate.ts), so U+0000 is free to
 *   end a group's prefix: `<letter>\0<name>\0<inc>\0` for the elements of
 *   one incarnation of a table (rows), list (items), set or sorted set
 *   (members), where `inc` is the sequence number of its creation; `x\0` for
 *   index definitions and `i\0<table>\0<inc>\0<field>\0` for one index's
 *   entries.
 */
import { type CollectionKind, type Kind, KINDS, type ListKind } from '../kinds.js';

/** Ends a group's prefix (and separates its parts). */
const GROUP_END = '\u0000';
/** The second character of every top-level key. */
const TOP_SLASH = 0x2f; /* / */

const TOP = Object.fromEntries(Object.entries(KINDS).map(([k, d]) => [k, d.log.top])) as Record<Kind, string>;
const KIND_OF_LETTER = new Map<number, Kind>(Object.entries(KINDS).map(([k, d]) => [d.log.top.charCodeAt(0), k as Kind]));

// ---- top-level keys ------------------------------------------------------------

/** The prefix of the top-level keys a listing pages through. */
export const listPrefix = (kind: ListKind): string => LIST_PREFIX[kind];
const LIST_PREFIX = Object.fromEntries(Object.values(KINDS).map((d) => [d.plural, d.log.top])) as Record<ListKind, string>;

// Each its own constant: these run on every request, as a literal prefix did.
const T = TOP.table;
const R = TOP.record;
const V = TOP.variant;
const L = TOP.lock;
const Q = TOP.list;
export const tableKey = (name: string): string => T + name;
export const recordKey = (id: string): string => R + id;
export const variantKey = (name: string): string => V + name;
export const lockKey = (name: string): string => L + name;
/** A list's header: its incarnation, its ends, and the last operation (for the change feed). */
export const listKey = (name: string): string => Q + name;
/** A set's or sorted set's header (collections.ts): its incarnation and element count. */
export const headerKey = (kind: CollectionKind, name: string): string => TOP[kind] + name;

/** Top-level keys are `X/name`; group keys start with a lower-case letter and U+0000. */
export const isTopLevel = (key: string): boolean => key.charCodeAt(1) === TOP_SLASH;
/** The object's name in a top-level key. */
export const nameOfTop = (key: string): string => key.slice(2);
/** The kind of a top-level key; undefined for any other key. */
export const kindOfTop = (key: string): Kind | undefined => (isTopLevel(key) ? KIND_OF_LETTER.get(key.charCodeAt(0)) : undefined);
/** Whether `key` is a list's header: a commit that writes one may wake a blocking pop. */
export const isListKey = (key: string): boolean => key.charCodeAt(0) === LIST_LETTER && key.charCodeAt(1) === TOP_SLASH;
const LIST_LETTER = TOP.list.charCodeAt(0);

/**
 * The namespace of a top-level key, as a number (its first character): the
 * listing view keeps what it knows of each namespace under it (names.ts).
 */
export const namespaceOf = (key: string): number => key.charCodeAt(0);

// ---- groups of a kind's elements -------------------------------------------------

const group = (letter: string, name: string, inc: number): string => `${letter}${GROUP_END}${name}${GROUP_END}${inc}${GROUP_END}`;

/** All rows of one incarnation of a table; `inc` is the sequence number of its creation. */
export const rowGroup = (name: string, inc: number): string => group(KINDS.table.log.group, name, inc);
/** All items of one incarnation of a list. */
export const listGroup = (name: string, inc: number): string => group(KINDS.list.log.group, name, inc);
/** The members of one incarnation of a set or sorted set (`s\0name\0inc\0member`, collections.ts). */
export const elementGroup = (kind: CollectionKind, name: string, inc: number): string => group(KINDS[kind].log.group, name, inc);

/** Digits of a row's t_id and of a list item's position in their keys. */
export const ROW_ID_WIDTH = 16;
/** What one key of each kind's element groups is, for the counts the open logs. */
type GroupedKind = { [K in Kind]: (typeof KINDS)[K]['log']['group'] extends string ? K : never }[Kind];
const ELEMENT_NOUN: Record<GroupedKind, string> = { table: 'table rows', list: 'list items', set: 'set members', zset: 'sorted-set members' };
const GROUP_NOUN = new Map<string, string>(Object.entries(ELEMENT_NOUN).map(([k, noun]) => [KINDS[k as GroupedKind].log.group, noun]));

/** What the keys of the groups whose names start with `letter` are (the engine's `groupNoun`). */
export function groupNoun(letter: string): string {
  if (letter === DEF_GROUP[0]) return 'index definitions';
  if (letter === ENTRY_PREFIX[0]) return 'index entries';
  return GROUP_NOUN.get(letter) ?? `keys in groups '${letter}'`;
}

/** Fixed-width ids make the engine's key order the t_id order. */
export const rowKey = (group: string, id: number): string => group + String(id).padStart(ROW_ID_WIDTH, '0');
export const rowIdOf = (key: string): number => Number(key.slice(-ROW_ID_WIDTH));

/**
 * The table and t_id of a row's key (`t\0<table>\0<inc>\0<16-digit t_id>`);
 * undefined for any other key.
 */
export function rowOfKey(key: string): [string, number] | undefined {
  if (key.charCodeAt(0) !== ROW_LETTER || key.charCodeAt(1) !== 0) return undefined;
  const end = key.indexOf(GROUP_END, 2);
  if (end < 0 || key.length !== key.lastIndexOf(GROUP_END) + 1 + ROW_ID_WIDTH) return undefined;
  return [key.slice(2, end), rowIdOf(key)];
}
const ROW_LETTER = KINDS.table.log.group.charCodeAt(0);

/**
 * Item positions are signed (a left push goes below the head), stored shifted
 * by POS_BIAS and zero-padded so that the engine's key order is position order.
 */
const POS_BIAS = 4_000_000_000_000_000;
export const itemKey = (group: string, pos: number): string => group + String(POS_BIAS + pos).padStart(ROW_ID_WIDTH, '0');

// ---- secondary indexes (indexes.ts, secondary.ts) -------------------------------

/** Separates a definition's table from its field, and an entry's value from its t_id. */
const INDEX_SEP = '\u0001';
/** The group of every index definition. */
export const DEF_GROUP = 'x' + GROUP_END;
/** A definition's key: table U+0001 field. */
export const defKey = (table: string, field: string): string => `${DEF_GROUP}${table}${INDEX_SEP}${field}`;
/** What every index entry's key starts with: the groups of all indexes. */
export const ENTRY_PREFIX = 'i' + GROUP_END;
/** The engine group of an index's entries. */
export const entryGroup = (table: string, inc: number, field: string): string => `${ENTRY_PREFIX}${table}${GROUP_END}${inc}${GROUP_END}${field}${GROUP_END}`;

/**
 * An entry's key after its group: a form letter, then for `v` the value's
 * JSON (which escapes every control character, so neither U+0000 nor U+0001
 * occurs in it), then U+0001 and the t_id.
 */
export const ENTRY_VALUE = 0x76; /* v: a string, number, boolean or null, its JSON in the key */
export const ENTRY_OTHER = 0x6f; /* o: an array or object; `l` (longEntryKey) is a value too long to sit in a key, whose row is read */
export const valueEntryKey = (group: string, json: string, id: number): string => `${group}v${json}${INDEX_SEP}${id}`;
export const otherEntryKey = (group: string, id: number): string => `${group}o${INDEX_SEP}${id}`;
export const longEntryKey = (group: string, id: number): string => `${group}l${INDEX_SEP}${id}`;
/** Where an entry key's group ends (the index of its form letter). */
export const entryCut = (key: string): number => key.lastIndexOf(GROUP_END) + 1;
/** Where an entry key's value ends (the index of its separator); the t_id follows. */
export const entrySep = (key: string): number => key.lastIndexOf(INDEX_SEP);

// ---- whole-collection writes under way (staged.ts) ---------------------------------

/**
 * The group of the markers of whole-collection writes under way: one key per
 * element group being filled, `w\0` then the group's name with U+0001 for
 * its U+0000s (names hold no control characters, so the marker stays in
 * this one group and names its element group exactly).
 */
export const STAGED_PREFIX = 'w' + GROUP_END;
export const stagedKey = (elements: string): string => STAGED_PREFIX + elements.replaceAll(GROUP_END, INDEX_SEP);
/** The element group a marker names. */
export const stagedGroup = (key: string): string => key.slice(STAGED_PREFIX.length).replaceAll(INDEX_SEP, GROUP_END);
