/**
 * Hints for requests that are well-formed but probably not what the client
 * meant (docs/api.md, "Insert a row"). Pure functions, so a handler's field check can
 * append the hint to its message without knowing why it applies.
 */

/**
 * `POST /tables/<t>/rows` inserts; a body with `wheres` but no `rows` is most
 * likely a query sent to the insert path. Returns the text to append to the
 * "field 'rows' is required" message, or '' when no hint applies. Without
 * the table's name the paths show `<name>`.
 */
export function rowsHint(body: Record<string, unknown>, table?: string): string {
  if (Object.hasOwn(body, 'rows') || !Object.hasOwn(body, 'wheres')) return '';
  const t = table === undefined ? '<name>' : encodeURIComponent(table);
  return ` (the body has 'wheres': to query rows use GET /tables/${t}/rows or POST /tables/${t}/query; POST /tables/${t}/rows inserts)`;
}
