/**
 * The console's kinds: the sections of its navigation, one per kind, and the kinds the
 * feed filters on. Built from the client's list, with a title for each kind keyed by it,
 * so a kind the client gains is a compiler error here until it has its section;
 * test/client/kinds.test.ts holds both equal to the server's table (src/store/kinds.ts).
 */
import { type Kind, KINDS } from '../../client/index.js';

/** A section of the console: the plural of its kind, as the server's paths and listings spell it. */
export type Section = `${Kind}s`;

export interface SectionInfo {
  kind: Kind;
  /** The kind in words, for "3 sorted sets" and "No sorted set '…' exists". */
  one: string;
  title: string;
}

const WORDS: Record<Kind, { one: string; title: string }> = {
  table: { one: 'table', title: 'Tables' },
  record: { one: 'record', title: 'Records' },
  variant: { one: 'variant', title: 'Variants' },
  lock: { one: 'lock', title: 'Locks' },
  list: { one: 'list', title: 'Lists' },
  set: { one: 'set', title: 'Sets' },
  zset: { one: 'sorted set', title: 'Sorted sets' },
};

export const SECTIONS = Object.fromEntries(KINDS.map((kind) => [`${kind}s`, { kind, ...WORDS[kind] }])) as Record<Section, SectionInfo>;

/** The kinds the change feed's filter offers, in the client's order. */
export const FEED_KINDS: readonly Kind[] = KINDS;

/** The hash of an object's view (#/<section>/<name>), or undefined for a kind the console has no section for. */
export function objectHref(kind: string, name: string): string | undefined {
  const section = `${kind}s`;
  return Object.hasOwn(SECTIONS, section) ? `#/${section}/${encodeURIComponent(name)}` : undefined;
}
