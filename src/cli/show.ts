/**
 * What `pithos <command>` prints for people (src/cli/main.ts; `--output json`
 * prints the server's data instead): values as the server wrote them, rows as
 * an aligned grid.
 */
import { type Answer, JsonText } from '../../client/index.js';

export function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** A variant's value for people: a number as the server wrote it (`3.0` for a double), a string bare. */
export function showVariant(a: Answer<{ variant: unknown }>): string {
  if (typeof a.data.variant !== 'number') return show(a.data.variant);
  return /"variant":(-?[0-9][0-9.eE+-]*)\}\}\s*$/.exec(a.text)?.[1] ?? show(a.data.variant);
}

/** A JSON number as written (JSON.parse would forget whether it had a fraction). */
export const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** `{"<field>": <number as written>, …rest}` as JSON text. */
export function withNumber(field: string, number: string, rest: Record<string, unknown>): JsonText {
  const more = JSON.stringify(rest);
  return new JsonText(`{${JSON.stringify(field)}:${number}${more === '{}' ? '}' : ',' + more.slice(1)}`);
}

export function cut(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

/**
 * What a command prints for people: `out` is the data (stdout), `note` says
 * something about it (stderr), so `pithos get record r > r.json` keeps the
 * file to the data alone.
 */
export type Shown = string | { out: string; note: string };

/** Rows as an aligned text grid; `ids` adds a t_id column. */
export function grid(rows: { id?: string | number; row: Record<string, unknown> }[]): Shown {
  if (rows.length === 0) return { out: '', note: '(no rows)' };
  const cols: string[] = [];
  const seen = new Set<string>();
  for (const r of rows.slice(0, 200)) for (const k of Object.keys(r.row)) if (!seen.has(k)) (seen.add(k), cols.push(k));
  const withIds = rows.some((r) => r.id !== undefined);
  const header = [...(withIds ? ['t_id'] : []), ...cols];
  const body = rows.map((r) => [
    ...(withIds ? [String(r.id ?? '')] : []),
    ...cols.map((c) => (Object.prototype.hasOwnProperty.call(r.row, c) ? cut(show(r.row[c]), 40) : '')),
  ]);
  const width = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(width[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(width.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}
