/**
 * Every endpoint, as data (docs/architecture.md): method, path template,
 * handler, the role a token needs, and the body fields with their types. The
 * router, the 405/Allow answers and the body checks are derived from this
 * table; so are, by design, the OpenAPI document, the metrics' route labels
 * and the typed client, so none of them can drift from what the server does.
 */
import type { BodyOf, Fields } from './fields.js';
import * as b from './body-fields.js';
import * as h from './handlers.js';
import * as tb from './tables.js';
import * as rec from './records.js';
import * as v from './variants.js';
import * as lk from './locks.js';
import * as ls from './listing.js';
import * as lists from './lists.js';
import * as c from './collections.js';
import * as nt from './numtext.js';
import type { Args, Ctx } from './context.js';
import type { Method, Role, RouteDef } from './route-def.js';
import type { ServerResponse } from 'node:http';
import { serveMetrics } from './metrics.js';
import { openApiHandler } from './openapi.js';

export type { Method, Role, RouteDef };
import * as redis from './redis-rest.js';

const listing = {
  prefix: 'only names that start with this',
  limit: 'page size, 1-1000 (default 100)',
  after: "the previous page's next",
} as const;

/** A handler that reads its body as its route declares it (body-fields.ts). */
type TypedHandler<F extends Fields> = (ctx: Ctx, name: string, body: BodyOf<F>, res: ServerResponse, raw: string, args: Args) => void | Promise<void>;

/**
 * One entry of the table, its handler checked against its body's
 * declaration: a handler typed for other fields does not compile. The
 * router runs checkBody with exactly `body` before the handler (router.ts),
 * which is what makes the handler's typed view of the body true; so the
 * entry is stored with the table's untyped Handler.
 */
function route<const F extends Fields = Record<never, never>>(def: Omit<RouteDef, 'body' | 'handler'> & { body?: F; handler: TypedHandler<F> }): RouteDef {
  return def as RouteDef;
}

// The table is laid out by hand, one route per entry, so it reads as a table; the formatter leaves it so.
// prettier-ignore
export const ROUTES: readonly RouteDef[] = [
  route({ method: 'GET', path: '/health', handler: h.health, role: 'read', summary: 'Server health figures',
    ok: { status: [200], message: 'server is healthy' } }),

  // ---- tables
  route({ method: 'PUT', path: '/tables/{name}', handler: tb.createTable, role: 'write', names: 'table', summary: 'Create a table',
    body: b.createTable, ok: { status: [201], message: 'table created successfully' } }),
  route({ method: 'GET', path: '/tables', handler: ls.listTables, role: 'read', summary: 'Tables in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'tables listed successfully' } }),
  route({ method: 'GET', path: '/tables/{name}', handler: tb.queryTable, role: 'read', names: 'table', summary: 'Every row, by t_id',
    query: { limit: 'at most this many rows', after: 'only rows with a greater t_id' },
    ok: { status: [200], message: 'table queried successfully' } }),
  // Two forms (the handler requires wheres and sets unless ttl comes alone; mixing is 400).
  route({ method: 'PATCH', path: '/tables/{name}', handler: tb.patchRows, role: 'write', names: 'table',
    summary: 'Set fields of matching rows (wheres + sets), or the table\'s lifetime (ttl alone)',
    body: b.patchRows,
    ok: { status: [200], message: 'table rows patched successfully' } }),
  route({ method: 'DELETE', path: '/tables/{name}', handler: tb.dropTable, role: 'write', names: 'table', summary: 'Drop a table and its rows',
    ok: { status: [200], message: 'table deleted successfully' } }),
  route({ method: 'POST', path: '/tables/{name}/rows', handler: tb.insertRow, role: 'write', names: 'table', summary: 'Insert a row',
    body: b.insertRow, ok: { status: [201], message: 'table rows insert successfully' } }),
  route({ method: 'GET', path: '/tables/{name}/rows', handler: tb.queryRows, role: 'read', names: 'table', summary: 'Matching rows, in t_id order',
    body: b.rowQuery, strict: true, query: {}, ok: { status: [200], message: 'table queried rows successfully' } }),
  route({ method: 'DELETE', path: '/tables/{name}/rows', handler: tb.deleteRows, role: 'write', names: 'table', summary: 'Delete matching rows',
    body: b.deleteRows, ok: { status: [200], message: 'table rows remove successfully' } }),
  route({ method: 'POST', path: '/tables/{name}/query', handler: tb.queryRows, role: 'read', names: 'table',
    summary: 'Matching rows (POST alias of GET …/rows for clients that cannot send a GET body)',
    body: b.rowQuery, strict: true, query: {}, ok: { status: [200], message: 'table queried rows successfully' } }),
  // One row by t_id (docs/api.md "One row by t_id"): 400 for a t_id that is not a positive decimal integer.
  route({ method: 'GET', path: '/tables/{name}/rows/{t_id}', handler: tb.getRow, role: 'read', names: 'table', subNames: 't_id',
    summary: 'One row by its t_id (ETag: its version)', strict: true, query: {},
    ok: { status: [200], message: 'table row queried successfully' } }),
  route({ method: 'PUT', path: '/tables/{name}/rows/{t_id}', handler: tb.replaceRow, role: 'write', names: 'table', subNames: 't_id',
    summary: 'Replace one row whole (never creates a row)', strict: true, query: {},
    body: b.replaceRow,
    ok: { status: [200], message: 'table row replaced successfully' } }),
  route({ method: 'PATCH', path: '/tables/{name}/rows/{t_id}', handler: tb.patchRow, role: 'write', names: 'table', subNames: 't_id',
    summary: 'Set fields of one row (sets) and remove others (unset)', strict: true, query: {},
    body: b.patchRow,
    ok: { status: [200], message: 'table row patched successfully' } }),
  route({ method: 'DELETE', path: '/tables/{name}/rows/{t_id}', handler: tb.deleteRow, role: 'write', names: 'table', subNames: 't_id',
    summary: 'Delete one row by its t_id', strict: true, query: {}, body: b.onlyIfVersion,
    ok: { status: [200], message: 'table row removed successfully' } }),
  route({ method: 'PUT', path: '/tables/{name}/indexes/{field}', handler: tb.createIndex, role: 'write', names: 'table', subNames: 'field',
    summary: 'Index a field or dotted path (built in the background)', strict: true,
    ok: { status: [201], message: 'index created successfully' } }),
  route({ method: 'GET', path: '/tables/{name}/indexes', handler: tb.listIndexes, role: 'read', names: 'table', summary: "The table's indexes",
    strict: true, query: {}, ok: { status: [200], message: 'indexes listed successfully' } }),
  route({ method: 'DELETE', path: '/tables/{name}/indexes/{field}', handler: tb.dropIndex, role: 'write', names: 'table', subNames: 'field',
    summary: 'Drop an index', strict: true, ok: { status: [200], message: 'index deleted successfully' } }),

  // ---- records, and the quick-start spelling /table/<key>
  route({ method: 'GET', path: '/records', handler: ls.listRecords, role: 'read', summary: 'Records in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'records listed successfully' } }),
  route({ method: 'PUT', path: '/records/{name}', handler: rec.putRecord, role: 'write', names: 'record', summary: 'Create or replace a record',
    body: b.putRecord,
    ok: { status: [201, 200], message: 'record created successfully' } }),
  route({ method: 'PATCH', path: '/records/{name}', handler: rec.patchRecord, role: 'write', names: 'record', strict: true,
    summary: 'Merge fields into a record (null deletes one), or set its lifetime',
    body: b.patchRecord,
    ok: { status: [200], message: 'record patched successfully' } }),
  route({ method: 'GET', path: '/records/{name}', handler: rec.getRecord, role: 'read', names: 'record', summary: 'Read a record',
    ok: { status: [200], message: 'record queried successfully' } }),
  route({ method: 'POST', path: '/records/{name}', handler: rec.searchRecord, role: 'write', names: 'record', summary: "One field's value",
    body: b.searchRecord,
    ok: { status: [200], message: 'search completed successfully' } }),
  route({ method: 'DELETE', path: '/records/{name}', handler: rec.deleteRecord, role: 'write', names: 'record', summary: 'Delete a record',
    ok: { status: [200], message: 'record deleted successfully' } }),
  route({ method: 'PUT', path: '/table/{name}', handler: rec.putQuick, role: 'write', names: 'record', summary: 'Quick-start spelling of PUT /records',
    body: b.putQuick,
    ok: { status: [201, 200], message: 'record created successfully' } }),
  route({ method: 'GET', path: '/table/{name}', handler: rec.getRecord, role: 'read', names: 'record', summary: 'Quick-start spelling of GET /records',
    ok: { status: [200], message: 'record queried successfully' } }),
  route({ method: 'DELETE', path: '/table/{name}', handler: rec.deleteRecord, role: 'write', names: 'record', summary: 'Quick-start spelling of DELETE /records',
    ok: { status: [200], message: 'record deleted successfully' } }),

  // ---- variants
  route({ method: 'GET', path: '/variants', handler: ls.listVariants, role: 'read', summary: 'Variants in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'variants listed successfully' } }),
  route({ method: 'PUT', path: '/variants/{name}', handler: v.putVariant, role: 'write', names: 'variant', summary: 'Create or replace a variant',
    body: b.putVariant,
    ok: { status: [201, 200], message: 'variant created successfully' } }),
  route({ method: 'PATCH', path: '/variants/{name}', handler: v.patchVariant, role: 'write', names: 'variant', strict: true,
    summary: 'Set the remaining lifetime of a variant',
    body: b.patchVariant,
    ok: { status: [200], message: 'variant patched successfully' } }),
  route({ method: 'POST', path: '/variants/{name}', handler: v.incrementVariant, role: 'write', names: 'variant',
    summary: 'Add to a numeric variant, or append to a string variant', body: b.incrementVariant,
    ok: { status: [200], message: 'variant incremented successfully (append: variant appended successfully)' } }),
  route({ method: 'GET', path: '/variants/{name}', handler: v.getVariant, role: 'read', names: 'variant', summary: 'Read a variant',
    ok: { status: [200], message: 'variant queried successfully' } }),
  route({ method: 'DELETE', path: '/variants/{name}', handler: v.deleteVariant, role: 'write', names: 'variant', summary: 'Delete a variant',
    ok: { status: [200], message: 'variant deleted successfully' } }),

  // ---- the quick-start spellings /number/<key> (an integer variant) and /text/<key> (a string variant)
  route({ method: 'PUT', path: '/number/{name}', handler: nt.putNumber, role: 'write', names: 'variant', summary: 'Quick-start spelling of PUT /variants for an integer',
    body: b.putNumber, strict: true, query: {}, ok: { status: [201, 200], message: 'variant created successfully' } }),
  route({ method: 'POST', path: '/number/{name}', handler: nt.incrementNumber, role: 'write', names: 'variant', summary: 'Add an integer to a number',
    body: b.incrementNumber, strict: true, query: {}, ok: { status: [200], message: 'variant incremented successfully' } }),
  route({ method: 'GET', path: '/number/{name}', handler: nt.getNumber, role: 'read', names: 'variant', summary: 'Quick-start spelling of GET /variants: {"number": n}',
    strict: true, query: {}, ok: { status: [200], message: 'variant queried successfully' } }),
  route({ method: 'DELETE', path: '/number/{name}', handler: nt.deleteNumber, role: 'write', names: 'variant', summary: 'Quick-start spelling of DELETE /variants for a number',
    strict: true, query: {}, ok: { status: [200], message: 'variant deleted successfully' } }),
  route({ method: 'PUT', path: '/text/{name}', handler: nt.putText, role: 'write', names: 'variant', summary: 'Quick-start spelling of PUT /variants for a string',
    body: b.putText, strict: true, query: {}, ok: { status: [201, 200], message: 'variant created successfully' } }),
  route({ method: 'POST', path: '/text/{name}', handler: nt.appendText, role: 'write', names: 'variant', summary: 'Append to a text (Redis APPEND)',
    body: b.appendText, strict: true, query: {}, ok: { status: [200], message: 'variant appended successfully' } }),
  route({ method: 'GET', path: '/text/{name}', handler: nt.getText, role: 'read', names: 'variant', summary: 'Quick-start spelling of GET /variants: {"content": s}',
    strict: true, query: {}, ok: { status: [200], message: 'variant queried successfully' } }),
  route({ method: 'DELETE', path: '/text/{name}', handler: nt.deleteText, role: 'write', names: 'variant', summary: 'Quick-start spelling of DELETE /variants for a text',
    strict: true, query: {}, ok: { status: [200], message: 'variant deleted successfully' } }),

  // ---- locks
  route({ method: 'GET', path: '/locks', handler: ls.listLocks, role: 'read', summary: 'Held locks in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'locks listed successfully' } }),
  route({ method: 'PUT', path: '/locks/{name}', handler: lk.acquireLock, role: 'write', names: 'lock', summary: 'Acquire a lease lock',
    body: b.acquireLock,
    ok: { status: [201], message: 'lock created successfully' } }),
  route({ method: 'PATCH', path: '/locks/{name}', handler: lk.renewLock, role: 'write', names: 'lock', summary: 'Renew a lease',
    body: b.renewLock,
    ok: { status: [200], message: 'lease acquired successfully' } }),
  route({ method: 'DELETE', path: '/locks/{name}', handler: lk.releaseLock, role: 'write', names: 'lock', summary: 'Release a lock',
    body: b.releaseLock, ok: { status: [200], message: 'lock deleted successfully' } }),
  route({ method: 'GET', path: '/locks/{name}', handler: lk.queryLock, role: 'read', names: 'lock', summary: 'Who holds a lock',
    ok: { status: [200], message: 'lock queried successfully' } }),

  // ---- lists (docs/api.md "Lists"), and the quick-start spelling /list/<key>
  route({ method: 'GET', path: '/lists', handler: ls.listLists, role: 'read', summary: 'Lists in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'lists listed successfully' } }),
  route({ method: 'PUT', path: '/lists/{name}', handler: lists.putList, role: 'write', names: 'list', summary: 'Create or replace a list',
    body: b.putList,
    strict: true, query: {}, ok: { status: [201, 200], message: 'list created successfully' } }),
  route({ method: 'GET', path: '/lists/{name}', handler: lists.getList, role: 'read', names: 'list', summary: 'Items from start to stop (inclusive)',
    strict: true, query: { start: 'first index (default 0; negative counts from the end)', stop: 'last index, inclusive (default -1, the last)' },
    ok: { status: [200], message: 'list queried successfully' } }),
  route({ method: 'POST', path: '/lists/{name}/push', handler: lists.pushList, role: 'write', names: 'list', summary: 'Push values onto one end',
    body: b.pushList,
    strict: true, query: {}, ok: { status: [200], message: 'list pushed successfully' } }),
  route({ method: 'POST', path: '/lists/{name}/pop', handler: lists.popList, role: 'write', names: 'list',
    summary: 'Remove and return items from one end, waiting for one if asked; with to, move them to another list atomically',
    body: b.popList,
    strict: true, query: {}, ok: { status: [200], message: 'list popped successfully' } }),
  route({ method: 'PATCH', path: '/lists/{name}', handler: lists.patchList, role: 'write', names: 'list',
    summary: 'Set one item, trim to a range, or remove items equal to a value; and/or set the lifetime',
    body: b.patchList,
    strict: true, query: {}, ok: { status: [200], message: 'list patched successfully' } }),
  route({ method: 'DELETE', path: '/lists/{name}', handler: lists.deleteList, role: 'write', names: 'list', summary: 'Delete a list',
    body: b.onlyIfVersion, strict: true, query: {}, ok: { status: [200], message: 'list deleted successfully' } }),
  route({ method: 'PUT', path: '/list/{name}', handler: lists.putList, role: 'write', names: 'list', summary: 'Quick-start spelling of PUT /lists',
    body: b.putList,
    strict: true, query: {}, ok: { status: [201, 200], message: 'list created successfully' } }),
  route({ method: 'GET', path: '/list/{name}', handler: lists.getQuickList, role: 'read', names: 'list',
    summary: 'Quick-start spelling of GET /lists: {"list": [...]}', strict: true, query: {},
    ok: { status: [200], message: 'list queried successfully' } }),
  route({ method: 'DELETE', path: '/list/{name}', handler: lists.deleteList, role: 'write', names: 'list', summary: 'Quick-start spelling of DELETE /lists',
    body: b.onlyIfVersion, strict: true, query: {}, ok: { status: [200], message: 'list deleted successfully' } }),

  // ---- sets (docs/api.md "Sets"), and the quick-start spelling /set/<key>
  route({ method: 'GET', path: '/sets', handler: ls.listSets, role: 'read', summary: 'Sets in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'sets listed successfully' } }),
  route({ method: 'PUT', path: '/sets/{name}', handler: c.putSet, role: 'write', names: 'set', summary: 'Create or replace a set', strict: true,
    body: b.putSet, ok: { status: [201, 200], message: 'set created successfully' } }),
  route({ method: 'GET', path: '/sets/{name}', handler: c.getSet, role: 'read', names: 'set', summary: 'Members in byte order (all, or a page)', strict: true,
    query: { limit: 'page size, 1-1000 (default: every member)', after: 'the previous page\'s next (a member)' },
    ok: { status: [200], message: 'set queried successfully' } }),
  route({ method: 'POST', path: '/sets/{name}/add', handler: c.addToSet, role: 'write', names: 'set', summary: 'Add members', strict: true, query: {},
    body: b.addToSet, ok: { status: [200], message: 'set members added successfully' } }),
  route({ method: 'POST', path: '/sets/{name}/remove', handler: c.removeFromSet, role: 'write', names: 'set', summary: 'Remove members', strict: true, query: {},
    body: b.removeMembers, ok: { status: [200], message: 'set members removed successfully' } }),
  route({ method: 'POST', path: '/sets/{name}/contains', handler: c.setContains, role: 'read', names: 'set', summary: 'Which members are in the set', strict: true,
    query: {}, body: b.setContains, ok: { status: [200], message: 'set queried successfully' } }),
  route({ method: 'POST', path: '/sets/{name}/combine', handler: c.combineSets, role: 'write', names: 'set', strict: true, query: {},
    summary: 'Union, intersection or difference with other sets; optionally stored as a set',
    body: b.combineSets,
    ok: { status: [200], message: 'set combined successfully' } }),
  route({ method: 'PATCH', path: '/sets/{name}', handler: c.patchSet, role: 'write', names: 'set', summary: 'Set the remaining lifetime of a set', strict: true,
    query: {}, body: b.lifetime, ok: { status: [200], message: 'set patched successfully' } }),
  route({ method: 'DELETE', path: '/sets/{name}', handler: c.deleteSet, role: 'write', names: 'set', summary: 'Delete a set', strict: true, query: {},
    body: b.onlyIfVersion, ok: { status: [200], message: 'set deleted successfully' } }),
  route({ method: 'PUT', path: '/set/{name}', handler: c.putSetQuick, role: 'write', names: 'set', summary: 'Quick-start spelling of PUT /sets', strict: true,
    query: {}, body: b.putSet, ok: { status: [201, 200], message: 'set created successfully' } }),
  route({ method: 'GET', path: '/set/{name}', handler: c.getSetQuick, role: 'read', names: 'set', summary: 'Quick-start spelling of GET /sets: {"set": [...]}',
    strict: true, query: {}, ok: { status: [200], message: 'set queried successfully' } }),
  route({ method: 'DELETE', path: '/set/{name}', handler: c.deleteSet, role: 'write', names: 'set', summary: 'Quick-start spelling of DELETE /sets', strict: true,
    query: {}, body: b.onlyIfVersion, ok: { status: [200], message: 'set deleted successfully' } }),

  // ---- sorted sets (docs/api.md "Sorted sets"), and the quick-start spelling /zset/<key>
  route({ method: 'GET', path: '/zsets', handler: ls.listZsets, role: 'read', summary: 'Sorted sets in byte order, a page at a time', strict: true,
    query: listing, ok: { status: [200], message: 'zsets listed successfully' } }),
  route({ method: 'PUT', path: '/zsets/{name}', handler: c.putZset, role: 'write', names: 'zset', summary: 'Create or replace a sorted set', strict: true,
    query: {}, body: b.putZset,
    ok: { status: [201, 200], message: 'zset created successfully' } }),
  route({ method: 'POST', path: '/zsets/{name}/add', handler: c.addToZset, role: 'write', names: 'zset', summary: 'Add members or change scores', strict: true,
    query: {}, body: b.addToZset,
    ok: { status: [200], message: 'zset members added successfully' } }),
  route({ method: 'POST', path: '/zsets/{name}/incr', handler: c.incrZset, role: 'write', names: 'zset', summary: "Add to a member's score", strict: true,
    query: {}, body: b.incrZset,
    ok: { status: [200], message: 'zset member incremented successfully' } }),
  route({ method: 'POST', path: '/zsets/{name}/remove', handler: c.removeFromZset, role: 'write', names: 'zset', summary: 'Remove members', strict: true,
    query: {}, body: b.removeMembers, ok: { status: [200], message: 'zset members removed successfully' } }),
  route({ method: 'GET', path: '/zsets/{name}', handler: c.getZset, role: 'read', names: 'zset', summary: 'Members by rank or by score', strict: true,
    query: {
      by: 'rank (default) or score', start: 'by rank: first rank (default 0; negative from the end)', stop: 'by rank: last rank, inclusive (default -1)',
      min: 'by score: lowest score (a number, -inf, +inf; "(" before it excludes it)', max: 'by score: highest score',
      offset: 'by score: skip this many', limit: 'by score: at most this many', rev: 'true: highest first',
    },
    ok: { status: [200], message: 'zset queried successfully' } }),
  route({ method: 'GET', path: '/zsets/{name}/members/{member}', handler: c.getZsetMember, role: 'read', names: 'zset', subNames: 'member',
    summary: "A member's score, rank and reverse rank", strict: true, query: {}, ok: { status: [200], message: 'zset member queried successfully' } }),
  route({ method: 'PATCH', path: '/zsets/{name}', handler: c.patchZset, role: 'write', names: 'zset', summary: 'Set the remaining lifetime of a sorted set',
    strict: true, query: {}, body: b.lifetime, ok: { status: [200], message: 'zset patched successfully' } }),
  route({ method: 'DELETE', path: '/zsets/{name}', handler: c.deleteZset, role: 'write', names: 'zset', summary: 'Delete a sorted set', strict: true,
    query: {}, body: b.onlyIfVersion, ok: { status: [200], message: 'zset deleted successfully' } }),
  route({ method: 'PUT', path: '/zset/{name}', handler: c.putZsetQuick, role: 'write', names: 'zset', summary: 'Quick-start spelling of PUT /zsets',
    strict: true, query: {}, body: b.putZset,
    ok: { status: [201, 200], message: 'zset created successfully' } }),
  route({ method: 'GET', path: '/zset/{name}', handler: c.getZsetQuick, role: 'read', names: 'zset',
    summary: 'Quick-start spelling of GET /zsets: {"zset": {member: score}}', strict: true, query: {},
    ok: { status: [200], message: 'zset queried successfully' } }),
  route({ method: 'DELETE', path: '/zset/{name}', handler: c.deleteZset, role: 'write', names: 'zset', summary: 'Quick-start spelling of DELETE /zsets',
    strict: true, query: {}, body: b.onlyIfVersion, ok: { status: [200], message: 'zset deleted successfully' } }),

  // ---- transactions
  route({ method: 'POST', path: '/txns', handler: h.transact, role: 'write', summary: 'Checks and mutations, all or nothing', strict: true, query: {},
    body: b.transact,
    ok: { status: [200], message: 'transaction execute successfully' } }),

  // ---- change feed (query parameters kind, prefix, since, values; unknown ones are 400)
  route({ method: 'GET', path: '/watch', handler: h.watch, role: 'read', summary: 'Changes as Server-Sent Events', strict: true,
    ok: { status: [200], message: 'a stream of Server-Sent Events (docs/api.md, "Change feed")', type: 'text/event-stream' } }),

  // ---- Redis over HTTP, Upstash's REST protocol (docs/redis-rest.md); the route admits a read token, each command checks its own role
  route({ method: 'POST', path: '/redis', handler: redis.redisCommand, role: 'read', upstash: true,
    summary: 'One Redis command as a JSON array, ["SET","k","v"]: {"result": …} or {"error": "ERR …"} (Upstash\'s format, not the envelope)',
    ok: { status: [200], message: '{"result": the reply in RESP2 shapes}', type: 'application/json' } }),
  route({ method: 'POST', path: '/redis/pipeline', handler: redis.redisPipeline, role: 'read', upstash: true,
    summary: 'Redis commands, each on its own, in order: [{"result"} | {"error"}, …]',
    ok: { status: [200], message: 'one {"result"} or {"error"} per command, in order', type: 'application/json' } }),
  route({ method: 'POST', path: '/redis/multi-exec', handler: redis.redisMultiExec, role: 'read', upstash: true,
    summary: 'Redis commands as one MULTI/EXEC block: [{"result"} | {"error"}, …]',
    ok: { status: [200], message: 'one {"result"} or {"error"} per command, in order', type: 'application/json' } }),
  route({ method: 'POST', path: '/redis/subscribe/{command}', handler: redis.redisSubscribe, role: 'read', upstash: true, names: 'words',
    summary: 'Subscribe to channels (the path\'s segments): their messages as Server-Sent Events until the client leaves',
    ok: { status: [200], message: 'a stream of Server-Sent Events, data: message,<channel>,<text> (docs/redis-rest.md, "Pub/sub")', type: 'text/event-stream' } }),
  route({ method: 'POST', path: '/redis/psubscribe/{command}', handler: redis.redisPSubscribe, role: 'read', upstash: true, names: 'words',
    summary: 'Subscribe to glob patterns: messages of every matching channel as Server-Sent Events',
    ok: { status: [200], message: 'a stream of Server-Sent Events, data: pmessage,<pattern>,<channel>,<text>', type: 'text/event-stream' } }),
  route({ method: 'GET', path: '/redis/{command}', handler: redis.redisPath, role: 'read', upstash: true, names: 'words',
    summary: 'One Redis command in the path, /redis/set/k/v: {"result": …} or {"error": "ERR …"}',
    ok: { status: [200], message: '{"result": the reply in RESP2 shapes}', type: 'application/json' } }),
  route({ method: 'POST', path: '/redis/{command}', handler: redis.redisPath, role: 'read', upstash: true, names: 'words',
    summary: 'One Redis command in the path; the body, if any, is its last argument',
    ok: { status: [200], message: '{"result": the reply in RESP2 shapes}', type: 'application/json' } }),

  // ---- operations (docs/operations.md, "Metrics" and "Backups")
  route({ method: 'GET', path: '/metrics', handler: serveMetrics, role: 'admin', query: {},
    summary: 'Prometheus metrics (text format, not the envelope); also with Authorization: Bearer <--metrics-token>',
    ok: { status: [200], message: 'Prometheus text exposition format 0.0.4', type: 'text/plain; version=0.0.4' } }),
  route({ method: 'GET', path: '/openapi.json', handler: openApiHandler(servedRoutes), role: 'public', query: {},
    summary: 'This OpenAPI 3.1 document (not wrapped in the envelope); no token needed',
    ok: { status: [200], message: 'the OpenAPI document', type: 'application/json' } }),
  route({ method: 'GET', path: '/backup', handler: h.backup, role: 'admin', query: {},
    summary: 'A consistent snapshot of the whole data set, streamed (not an envelope: application/octet-stream)', strict: true,
    ok: { status: [200], message: 'the backup file (docs/operations.md, "Backups")', type: 'application/octet-stream' } }),

  route({ method: 'POST', path: '/_test/clock', handler: h.advanceClock, role: 'admin', summary: 'Move the test clock', testOnly: true,
    ok: { status: [200], message: 'clock advanced' } }),
];

/** Every route the server serves (test clock included when asked): for documents derived from the table. */
export function servedRoutes(testClock: boolean): RouteDef[] {
  return ROUTES.filter((r) => testClock || r.testOnly !== true);
}
