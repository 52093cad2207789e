/**
 * A data table for one page of a server listing. Paging is the server's (limit/after, see
 * Pager); the table never sorts or slices what it is given. On a phone its rows reflow
 * (style.css, `table.grid.stack`): each cell on its own with its column's name before it
 * (`data-label`), so no column and no button is off-screen.
 */
import type { ComponentChildren } from 'preact';

export interface Column<R> {
  label: string;
  /** A shorter name, said before each cell where rows reflow on a phone; the label if none. */
  short?: string;
  /** 'num' right-aligns with tabular figures; 'code' for JSON text. */
  cls?: 'num' | 'code' | 'nowrap' | 'actions';
  render: (r: R) => ComponentChildren;
  title?: (r: R) => string;
}

export function DataTable<R>(props: {
  id: string;
  caption: string;
  columns: Column<R>[];
  rows: R[];
  keyOf: (r: R) => string;
  rowAttrs?: (r: R) => Record<string, string>;
  empty?: string;
}) {
  if (props.rows.length === 0)
    return (
      <p class="muted" id={`${props.id}-empty`}>
        {props.empty ?? 'Nothing here.'}
      </p>
    );
  return (
    <div class="gridwrap" tabIndex={0} role="region" aria-label={props.caption}>
      <table class="grid stack" id={props.id}>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" class={c.cls}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={props.keyOf(r)} {...(props.rowAttrs?.(r) ?? {})}>
              {props.columns.map((c) => (
                <td class={c.cls} title={c.title?.(r)} data-label={c.short ?? c.label}>
                  {c.render(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Previous / Next over a cursor stack, with what page this is. */
export function Pager(props: { page: number; hasNext: boolean; onPrev: () => void; onNext: () => void; info?: string; id?: string }) {
  return (
    <div class="row pager" id={props.id}>
      <button type="button" disabled={props.page <= 1} onClick={props.onPrev}>
        ← Previous
      </button>
      <span class="muted" id={props.id ? `${props.id}-info` : undefined}>
        page {props.page}
        {props.info ? ` · ${props.info}` : ''}
      </span>
      <button type="button" disabled={!props.hasNext} onClick={props.onNext}>
        Next →
      </button>
    </div>
  );
}
