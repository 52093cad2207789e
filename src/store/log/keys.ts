/**
 * How the four namespaces lay out their objects in the engine's key space.
 * Names never contain control characters (validate.ts), so U+0000 is free to
 * mark row groups: the engine iterates a group (one table incarnation's
 * rows) without touching any other key. Top-level objects stay outside
 * groups, which is what lets health count them as the engine's ungrouped keys.
 */
export const tableKey = (name: string): string => 'T/' + name;
export const recordKey = (id: string): string => 'R/' + id;
export const variantKey = (name: string): string => 'V/' + name;
export const lockKey = (name: string): string => 'L/' + name;

/** All rows of one incarnation of a table; `inc` is the sequence number of its creation. */
export const rowGroup = (name: string, inc: number): string => `t\u0000${name}\u0000${inc}\u0000`;

const ID_WIDTH = 16;
/** Fixed-width ids make the engine's key order the t_id order. */
export const rowKey = (group: string, id: number): string => group + String(id).padStart(ID_WIDTH, '0');
export const rowIdOf = (key: string): number => Number(key.slice(-ID_WIDTH));

// ---- lists (docs/format.md, "Lists") -------------------------------------------

/** A list's header: its incarnation, its ends, and the last operation (for the change feed). */
export const listKey = (name: string): string => 'Q/' + name;
/** All items of one incarnation of a list; `inc` is the sequence number of its creation. */
export const listGroup = (name: string, inc: number): string => `q\u0000${name}\u0000${inc}\u0000`;
/**
 * Item positions are signed (a left push goes below the head), stored shifted
 * by POS_BIAS and zero-padded so that the engine's key order is position order.
 */
const POS_BIAS = 4_000_000_000_000_000;
export const itemKey = (group: string, pos: number): string => group + String(POS_BIAS + pos).padStart(ID_WIDTH, '0');
