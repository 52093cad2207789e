/**
 * Listing on the shared store (docs/api.md "List names", docs/scaling.md): one
 * statement per page, the log store's answer to the byte.
 *
 * - Order: names compared `COLLATE "C"`, which is UTF-8 byte order (the log
 *   store's code-point order) whatever the database's default collation;
 *   migration 3 adds an index on `(name COLLATE "C")` to each namespace, so a
 *   page reads its own names, not the namespace.
 * - Prefix: a range, `name >= prefix AND name < successor(prefix)`, never
 *   LIKE, so `%` and `_` in a prefix are plain characters.
 * - Expiry is part of the query (the database's clock), so expired objects
 *   are never listed, swept or not.
 * - `limit + 1` names are read: the extra one says whether `next` is set.
 * - A table's `rows` is the sum of its slots in pithos_row_counts (tables.ts),
 *   kept by every statement that inserts or deletes rows: no count of rows.
 */
import type { Holding, ListKind, ListOptions } from '../store.js';
import type { Q } from './sql.js';
import { KINDS } from '../kinds.js';
import { rowCount } from './tids.js';

/** What each kind's listing reads beside the name and expiry: its table, key column and the columns of its extra fields (KINDS' `listing`). */
const SOURCES: Record<ListKind, { table: string; name: string; extra: string }> = {
  tables: { table: KINDS.table.pg.objects, name: 'name', extra: `, ${rowCount(KINDS.table.pg.objects)} AS row_count` },
  records: { table: KINDS.record.pg.objects, name: 'id', extra: '' },
  variants: { table: KINDS.variant.pg.objects, name: 'name', extra: '' },
  locks: { table: KINDS.lock.pg.objects, name: 'name', extra: ', holder' },
  lists: { table: KINDS.list.pg.objects, name: 'name', extra: ', tail - head AS length' },
  sets: { table: KINDS.set.pg.objects, name: 'name', extra: ', count' },
  zsets: { table: KINDS.zset.pg.objects, name: 'name', extra: ', count' },
};

const MAX_CODE_POINT = 0x10ffff;

/**
 * The least string above every string that starts with `prefix` in
 * code-point order, or undefined when there is none (every character is
 * U+10FFFF): the last character that can grow grows by one (skipping the
 * surrogates, which no name holds), the rest after it is cut.
 */
export function successor(prefix: string): string | undefined {
  const cps = Array.from(prefix, (c) => c.codePointAt(0) as number);
  while (cps.length > 0) {
    const last = cps.pop() as number;
    if (last === MAX_CODE_POINT) continue;
    const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
    return String.fromCodePoint(...cps, next);
  }
  return undefined;
}

export async function list(q: Q, kind: ListKind, opts: ListOptions): Promise<string> {
  const src = SOURCES[kind];
  const col = `(${src.name} COLLATE "C")`;
  // No name holds a control character, and the database's text cannot hold U+0000:
  // a prefix with U+0000 matches nothing; an `after` with one is cut there
  // (every name above the cut part, other than the cut part itself, is above `after`).
  if (opts.prefix.includes('\u0000')) return '{"items":[],"next":null}';
  const params: unknown[] = [];
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}::text COLLATE "C"`;
  };
  const conds = [q.live()];
  if (opts.prefix !== '') {
    conds.push(`${col} >= ${p(opts.prefix)}`);
    const succ = successor(opts.prefix);
    if (succ !== undefined) conds.push(`${col} < ${p(succ)}`);
  }
  if (opts.after !== null) {
    const cut = opts.after.indexOf('\u0000');
    conds.push(`${col} > ${p(cut < 0 ? opts.after : opts.after.slice(0, cut))}`);
  }
  params.push(opts.limit + 1);
  const rows = await q.query(
    `SELECT ${src.name} AS name, expires_at, ${q.now} AS now${src.extra} FROM ${src.table}
     WHERE ${conds.join(' AND ')} ORDER BY ${col} LIMIT $${params.length}`,
    params,
  );
  const n = Math.min(rows.length, opts.limit);
  let out = '{"items":[';
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    const exp = r.expires_at;
    let item = `{"name":${JSON.stringify(r.name)},"ttl_ms":${exp === null ? 'null' : Math.max(0, Number(exp) - Number(r.now))}`;
    if (kind === 'tables') item += `,"rows":${Number(r.row_count)}`;
    else if (kind === 'lists') item += `,"length":${Number(r.length)}`;
    else if (kind === 'sets' || kind === 'zsets') item += `,"count":${Number(r.count)}`;
    else if (kind === 'locks') item += `,"held":true,"holder":${JSON.stringify(JSON.parse(r.holder as string) as string | null)}`;
    out += (i === 0 ? '' : ',') + item + '}';
  }
  const next = rows.length > opts.limit && n > 0 ? JSON.stringify(rows[n - 1].name) : 'null';
  return `${out}],"next":${next}}`;
}

/** What says each kind's object is empty (Store.holders), as SQL over its row; kinds that cannot be empty have `false`. */
const EMPTY: Record<ListKind, string> = {
  tables: 'false',
  records: `body = '{}'`,
  variants: 'false',
  locks: 'false',
  lists: 'tail = head',
  sets: 'count = 0',
  zsets: 'count = 0',
};

/** Store.holders: one statement, one indexed lookup per kind. */
export async function holders(q: Q, name: string, kinds: readonly ListKind[]): Promise<Array<Holding | null>> {
  if (kinds.length === 0) return [];
  // The database's text cannot hold U+0000, so no object has such a name.
  if (name.includes('\u0000')) return kinds.map(() => null);
  const parts = kinds.map((kind, i) => {
    const src = SOURCES[kind];
    return `SELECT ${i} AS i, ${EMPTY[kind]} AS empty, expires_at, ${q.now} AS now FROM ${src.table} WHERE ${src.name} = $1 AND ${q.live()}`;
  });
  const rows = await q.query(parts.join(' UNION ALL '), [name]);
  const out: Array<Holding | null> = kinds.map(() => null);
  for (const r of rows) {
    const exp = r.expires_at;
    out[Number(r.i)] = { empty: r.empty === true, ttlMs: exp === null ? null : Math.max(0, Number(exp) - Number(r.now)) };
  }
  return out;
}
