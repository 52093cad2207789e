/**
 * The body fields of every endpoint that takes a body, by endpoint. The
 * route table (routes.ts) declares each route's body as one of these, the
 * router checks it (fields.ts), and the handler types its `body` parameter
 * as BodyOf<typeof …> of the same declaration: a field's type is written
 * once, and a handler cannot read a field its route does not declare.
 * Reading and parsing the body itself is request-body.ts.
 */
import { rowsHint } from './hints.js';

const wheres = { type: 'object', required: true, doc: 'fields a row must match (docs/api.md "wheres")' } as const;
const ttl = { type: 'ttl', doc: 'lifetime in seconds; 0 or absent = no expiry' } as const;
const ifVersion = { type: 'version', doc: 'write only if the current version (the ETag of GET) equals this' } as const;
const ifAbsent = { type: 'boolean', doc: 'true: create only, never replace' } as const;
const token = { type: 'string', required: true, doc: 'the lease token from acquire or renew' } as const;
const ttlOnly = { type: 'ttl', required: true, doc: 'the remaining lifetime in seconds; 0 = none' } as const;
const create = { type: 'boolean', doc: 'false: 404 instead of creating a missing object (default true)' } as const;

/** Only a precondition (deletes of a row, list, set or sorted set). */
export const onlyIfVersion = { if_version: ifVersion } as const;
/** PATCH of a set or sorted set: the remaining lifetime. */
export const lifetime = { ttl: ttlOnly, if_version: ifVersion } as const;

// ---- tables
export const createTable = { ttl } as const;
// Two forms on one path (the handler requires wheres and sets unless ttl comes alone; mixing is 400).
export const patchRows = {
  wheres: { ...wheres, required: false },
  sets: { type: 'object', doc: 'top-level fields to write into every matching row' },
  ttl: { type: 'ttl', doc: 'alone: the remaining lifetime of the table and its rows in seconds; 0 = none' },
} as const;
export const insertRow = { rows: { type: 'object', required: true, doc: 'the row', hint: rowsHint } } as const;
/** A row query's body (docs/api.md "Shape a row query"); shapes beyond the type are checked by query-body.ts. */
export const rowQuery = {
  wheres,
  limit: { type: 'number', doc: 'at most this many rows (integer ≥ 1)' },
  after: { type: 'number', doc: 'only rows with a greater t_id (integer ≥ 0)' },
  order: { type: 'array', doc: '[{"field": <path>, "dir": "asc" | "desc"}]; t_id breaks ties; missing fields sort last' },
  fields: { type: 'array', doc: 'projection: only these top-level fields' },
  count: { type: 'boolean', doc: 'answer {"count": n} instead of rows' },
  with_ids: { type: 'boolean', doc: 'each row as {"t_id": n, "row": {...}}' },
} as const;
export const deleteRows = { wheres } as const;
export const replaceRow = { rows: { type: 'object', required: true, doc: 'the whole new row' }, if_version: ifVersion } as const;
export const patchRow = {
  sets: { type: 'object', required: true, doc: 'top-level fields to write into the row, as PATCH /tables/{name} writes them' },
  unset: { type: 'array', doc: 'top-level field names to remove from the row' },
  if_version: ifVersion,
} as const;

// ---- records
export const putRecord = { record: { type: 'object', required: true, doc: 'the document' }, ttl, if_version: ifVersion, if_absent: ifAbsent } as const;
export const patchRecord = {
  sets: { type: 'object', doc: 'top-level fields to write; null deletes the field; the ttl is kept' },
  ttl: { type: 'ttl', doc: 'the remaining lifetime in seconds; 0 = none' },
  if_version: ifVersion,
} as const;
export const searchRecord = { column: { type: 'string', required: true, doc: 'the field to return' } } as const;
export const putQuick = { table: { type: 'object', required: true, doc: 'the document' }, ttl } as const;

// ---- variants
export const putVariant = {
  ttl,
  variant: { type: 'scalar', required: true, doc: 'the value; its type is fixed by the first value' },
  if_version: ifVersion,
  if_absent: ifAbsent,
} as const;
export const patchVariant = { ttl: ttlOnly } as const;
// The handler requires delta unless append comes (and refuses both).
export const incrementVariant = {
  delta: { type: 'number', doc: 'the amount; an integer for integer variants (required unless append is given)' },
  append: { type: 'string', doc: 'text to append to a string variant, instead of delta; answers {"length": <UTF-8 bytes>}' },
  if_version: { ...ifVersion, doc: 'with append only: append only if the current version equals this' },
} as const;

// ---- numbers and texts: the quick-start spellings of integer and string variants
export const putNumber = { number: { type: 'number', required: true, doc: 'the integer' }, ttl, if_version: ifVersion, if_absent: ifAbsent } as const;
export const incrementNumber = { delta: { type: 'number', required: true, doc: 'the amount, an integer' } } as const;
export const putText = { content: { type: 'string', required: true, doc: 'the text' }, ttl, if_version: ifVersion, if_absent: ifAbsent } as const;
export const appendText = {
  append: { type: 'string', required: true, doc: 'the text to append; answers {"length": <UTF-8 bytes>}' },
  if_version: ifVersion,
} as const;

// ---- locks
export const acquireLock = {
  ttl: { type: 'lease', required: true, doc: 'lease length in seconds' },
  holder: { type: 'holder', doc: 'a label shown to other clients' },
} as const;
export const renewLock = { ttl: { type: 'lease', doc: 'new lease length; absent = the length given at acquire' }, token } as const;
export const releaseLock = { token } as const;

// ---- lists
export const putList = {
  list: { type: 'array', required: true, doc: 'the items, left to right (any JSON values)' },
  ttl,
  if_version: ifVersion,
  if_absent: ifAbsent,
} as const;
export const pushList = {
  values: { type: 'array', required: true, doc: 'non-empty; pushed one at a time in this order' },
  side: { type: 'string', doc: '"right" (default) or "left"' },
  create: { type: 'boolean', doc: 'false: 404 when the list does not exist (default true)' },
  if_version: ifVersion,
} as const;
export const popList = {
  side: { type: 'string', doc: '"left" (default) or "right"' },
  count: { type: 'number', doc: 'at most this many items, 1-1000 (default 1)' },
  wait_ms: { type: 'number', doc: 'wait up to this long for an item when there is none, 0-30000 (default 0)' },
  to: { type: 'string', doc: 'push each popped item onto this list (created when missing), in the same atomic step' },
  to_side: { type: 'string', doc: 'the end of `to` to push on: "left" (default) or "right"' },
  if_version: ifVersion,
} as const;
export const patchList = {
  set: { type: 'object', doc: '{"index", "value"}: replace the item at index' },
  trim: { type: 'object', doc: '{"start", "stop"}: keep only that inclusive range' },
  remove: { type: 'object', doc: '{"value", "count"}: remove the first count items equal to value (negative: from the right; 0: all)' },
  ttl: { type: 'ttl', doc: 'the remaining lifetime in seconds; 0 = none' },
  if_version: ifVersion,
} as const;

// ---- sets (members and scores are checked by src/store/collection.ts in the handlers)
const members1000 = { type: 'array', required: true, doc: '1-1000 members (strings of at most 4096 bytes)' } as const;
export const putSet = {
  set: { type: 'any', required: true, doc: 'the members: an array of strings, or an object member → true' },
  ttl,
  if_version: ifVersion,
  if_absent: ifAbsent,
} as const;
export const addToSet = { members: members1000, create, if_version: ifVersion } as const;
export const removeMembers = { members: members1000, if_version: ifVersion } as const;
export const setContains = { members: members1000 } as const;
export const combineSets = {
  op: { type: 'string', required: true, doc: 'union, inter or diff' },
  with: { type: 'array', required: true, doc: '1-16 set names (a missing set is empty)' },
  store: { type: 'string', doc: 'a set to replace with the result, in the same atomic step' },
  if_version: { type: 'version', doc: 'with store: replace the set store names only if its current version equals this' },
  if_absent: { type: 'boolean', doc: 'with store: true creates the set store names only if it does not exist' },
} as const;

// ---- sorted sets
export const putZset = {
  zset: { type: 'object', required: true, doc: 'member → score (a finite number)' },
  ttl,
  if_version: ifVersion,
  if_absent: ifAbsent,
} as const;
export const addToZset = {
  members: { type: 'object', required: true, doc: 'member → score (1-1000 members)' },
  mode: { type: 'string', doc: 'upsert (default), nx (only new), xx (only existing), gt / lt (only to a greater / lower score)' },
  create,
  if_version: ifVersion,
} as const;
export const incrZset = {
  member: { type: 'string', required: true, doc: 'the member (created at 0 when missing)' },
  delta: { type: 'number', required: true, doc: 'the amount' },
  create,
  if_version: ifVersion,
} as const;

// ---- transactions
export const transact = {
  mutations: { type: 'array', required: true, doc: 'INSERT/UPDATE/REMOVE on tables, ADD/SET on variants, PUT/DELETE on records' },
  checks: { type: 'array', doc: 'conditions on the state before the first mutation' },
  serializable: { type: 'boolean', doc: 'SERIALIZABLE isolation on a shared store' },
  serialization: { type: 'boolean', doc: 'alias of serializable' },
} as const;
