// ---------------------------------------------------------------------------------------
// Endpoints: every request this client can make. A test compares this list with the
// server's route table, so the client cannot drift from the server unnoticed.

export interface Endpoint {
  method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
  /** Path template; `{name}`, `{field}` and `{t_id}` are one percent-encoded segment each. */
  path: string;
  /** Safe to repeat: retried when `retries` is set. */
  idempotent: boolean;
  /** Added after the first contract (a server before revision 2 answers 404/405). */
  partTwo?: boolean;
  /** Answers plain text rather than the JSON envelope. */
  text?: boolean;
}

const ep = (method: Endpoint['method'], path: string, idempotent: boolean, extra: Partial<Endpoint> = {}): Endpoint => ({
  method,
  path,
  idempotent,
  ...extra,
});
const P2 = { partTwo: true };

export const ENDPOINTS = {
  health: ep('GET', '/health', true),
  livez: ep('GET', '/livez', true, { partTwo: true, text: true }),
  readyz: ep('GET', '/readyz', true, { partTwo: true, text: true }),
  metrics: ep('GET', '/metrics', true, { partTwo: true, text: true }),
  openapi: ep('GET', '/openapi.json', true, { partTwo: true, text: true }),
  backup: ep('GET', '/backup', true, { partTwo: true, text: true }),
  // tables
  listTables: ep('GET', '/tables', true, P2),
  createTable: ep('PUT', '/tables/{name}', false),
  getTable: ep('GET', '/tables/{name}', true),
  patchRows: ep('PATCH', '/tables/{name}', false),
  setTableTtl: ep('PATCH', '/tables/{name}', false, P2),
  dropTable: ep('DELETE', '/tables/{name}', false),
  insertRow: ep('POST', '/tables/{name}/rows', false),
  queryRowsGet: ep('GET', '/tables/{name}/rows', true),
  queryRows: ep('POST', '/tables/{name}/query', true),
  deleteRows: ep('DELETE', '/tables/{name}/rows', false),
  getRow: ep('GET', '/tables/{name}/rows/{t_id}', true, P2),
  replaceRow: ep('PUT', '/tables/{name}/rows/{t_id}', true, P2),
  patchRow: ep('PATCH', '/tables/{name}/rows/{t_id}', false, P2),
  deleteRow: ep('DELETE', '/tables/{name}/rows/{t_id}', false, P2),
  listIndexes: ep('GET', '/tables/{name}/indexes', true, P2),
  createIndex: ep('PUT', '/tables/{name}/indexes/{field}', false, P2),
  dropIndex: ep('DELETE', '/tables/{name}/indexes/{field}', false, P2),
  // records
  listRecords: ep('GET', '/records', true, P2),
  putRecord: ep('PUT', '/records/{name}', true),
  getRecord: ep('GET', '/records/{name}', true),
  searchRecord: ep('POST', '/records/{name}', true),
  patchRecord: ep('PATCH', '/records/{name}', false, P2),
  deleteRecord: ep('DELETE', '/records/{name}', false),
  putQuick: ep('PUT', '/table/{name}', true),
  getQuick: ep('GET', '/table/{name}', true),
  deleteQuick: ep('DELETE', '/table/{name}', false),
  // variants
  listVariants: ep('GET', '/variants', true, P2),
  putVariant: ep('PUT', '/variants/{name}', true),
  getVariant: ep('GET', '/variants/{name}', true),
  incr: ep('POST', '/variants/{name}', false),
  setVariantTtl: ep('PATCH', '/variants/{name}', false, P2),
  deleteVariant: ep('DELETE', '/variants/{name}', false),
  append: ep('POST', '/variants/{name}', false, P2),
  // numbers and texts: quick-start spellings of integer and string variants
  putNumber: ep('PUT', '/number/{name}', true, P2),
  getNumber: ep('GET', '/number/{name}', true, P2),
  incrNumber: ep('POST', '/number/{name}', false, P2),
  deleteNumber: ep('DELETE', '/number/{name}', false, P2),
  putText: ep('PUT', '/text/{name}', true, P2),
  getText: ep('GET', '/text/{name}', true, P2),
  appendText: ep('POST', '/text/{name}', false, P2),
  deleteText: ep('DELETE', '/text/{name}', false, P2),
  // locks
  listLocks: ep('GET', '/locks', true, P2),
  acquireLock: ep('PUT', '/locks/{name}', false),
  renewLock: ep('PATCH', '/locks/{name}', false),
  releaseLock: ep('DELETE', '/locks/{name}', false),
  getLock: ep('GET', '/locks/{name}', true),
  // lists
  listLists: ep('GET', '/lists', true, P2),
  putList: ep('PUT', '/lists/{name}', true, P2),
  getList: ep('GET', '/lists/{name}', true, P2),
  pushList: ep('POST', '/lists/{name}/push', false, P2),
  popList: ep('POST', '/lists/{name}/pop', false, P2),
  patchList: ep('PATCH', '/lists/{name}', false, P2),
  deleteList: ep('DELETE', '/lists/{name}', false, P2),
  putListQuick: ep('PUT', '/list/{name}', true, P2),
  getListQuick: ep('GET', '/list/{name}', true, P2),
  deleteListQuick: ep('DELETE', '/list/{name}', false, P2),
  // sets and sorted sets
  listSets: ep('GET', '/sets', true, P2),
  putSet: ep('PUT', '/sets/{name}', true, P2),
  getSet: ep('GET', '/sets/{name}', true, P2),
  setAdd: ep('POST', '/sets/{name}/add', false, P2),
  setRemove: ep('POST', '/sets/{name}/remove', false, P2),
  setContains: ep('POST', '/sets/{name}/contains', true, P2),
  setCombine: ep('POST', '/sets/{name}/combine', false, P2),
  setSetTtl: ep('PATCH', '/sets/{name}', false, P2),
  deleteSet: ep('DELETE', '/sets/{name}', false, P2),
  putSetQuick: ep('PUT', '/set/{name}', true, P2),
  getSetQuick: ep('GET', '/set/{name}', true, P2),
  deleteSetQuick: ep('DELETE', '/set/{name}', false, P2),
  listZsets: ep('GET', '/zsets', true, P2),
  putZset: ep('PUT', '/zsets/{name}', true, P2),
  zadd: ep('POST', '/zsets/{name}/add', false, P2),
  zincr: ep('POST', '/zsets/{name}/incr', false, P2),
  zremove: ep('POST', '/zsets/{name}/remove', false, P2),
  zrange: ep('GET', '/zsets/{name}', true, P2),
  zmember: ep('GET', '/zsets/{name}/members/{member}', true, P2),
  setZsetTtl: ep('PATCH', '/zsets/{name}', false, P2),
  deleteZset: ep('DELETE', '/zsets/{name}', false, P2),
  putZsetQuick: ep('PUT', '/zset/{name}', true, P2),
  getZsetQuick: ep('GET', '/zset/{name}', true, P2),
  deleteZsetQuick: ep('DELETE', '/zset/{name}', false, P2),
  // part two, other
  txn: ep('POST', '/txns', false, P2),
  watch: ep('GET', '/watch', false, { partTwo: true, text: true }),
} as const satisfies Record<string, Endpoint>;

export type Operation = keyof typeof ENDPOINTS;

/** The distinct {method, path} pairs the client uses (for checks against the route table). */
export function endpointList(): { method: string; path: string; partTwo: boolean }[] {
  const seen = new Map<string, { method: string; path: string; partTwo: boolean }>();
  for (const e of Object.values(ENDPOINTS) as Endpoint[]) {
    const k = `${e.method} ${e.path}`;
    const prev = seen.get(k);
    // A shared pair (PATCH /tables/{name} serves patchRows and, in part two, ttl) is part one if either use is.
    if (prev === undefined) seen.set(k, { method: e.method, path: e.path, partTwo: e.partTwo === true });
    else prev.partTwo = prev.partTwo && e.partTwo === true;
  }
  return [...seen.values()];
}
