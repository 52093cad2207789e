/**
 * One table: a query builder for `wheres`, the matching rows a page at a time from the
 * server (POST /tables/<name>/query with limit/after/order and with_ids), and changes to
 * exactly one row by its t_id (docs/api.md, "One row by t_id").
 */
import { useEffect, useState } from 'preact/hooks';
import type { Json, JsonObject, Pithos, Row, RowWithId, Wheres } from '../../client/index.js';
import { confirmAction } from '../components/Confirm.js';
import { DangerZone } from '../components/Danger.js';
import { type Column, DataTable } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { JsonEditor, looseValue, parseObject } from '../components/JsonEditor.js';
import { Status } from '../components/Status.js';
import { isNotFound } from '../lib/api.js';
import { plural, show } from '../lib/format.js';
import { useAction } from '../lib/hooks.js';

const OPS = [
  ['=', ''],
  ['≠', '$ne'],
  ['>', '$gt'],
  ['≥', '$gte'],
  ['<', '$lt'],
  ['≤', '$lte'],
  ['in', '$in'],
  ['not in', '$nin'],
  ['exists', '$exists'],
] as const;

interface Cond {
  id: number;
  field: string;
  op: string;
  value: string;
}

/** The conditions as `wheres`: all of them (one object), or any of them ($or). */
export function buildWheres(conds: Cond[], any: boolean): Wheres {
  const parts: Wheres[] = [];
  for (const c of conds) {
    if (!c.field) continue;
    let v: Json = looseValue(c.value);
    if (c.op === '$exists') v = c.value.trim() !== 'false';
    parts.push({ [c.field]: c.op === '' ? (v !== null && typeof v === 'object' && !Array.isArray(v) ? { $eq: v } : v) : { [c.op]: v } } as Wheres);
  }
  if (parts.length === 0) return {};
  if (any && parts.length > 1) return { $or: parts };
  const out: Wheres = {};
  for (const p of parts) {
    for (const [k, v] of Object.entries(p)) {
      const prev = out[k];
      // Two conditions on one field merge their operators ({"$gte":1} + {"$lt":9}).
      out[k] =
        prev !== undefined && typeof prev === 'object' && prev !== null && typeof v === 'object' && v !== null
          ? ({ ...(prev as object), ...(v as object) } as Json)
          : v;
    }
  }
  return out;
}

interface Query {
  wheres: Wheres;
  field: string;
  dir: 'asc' | 'desc';
  size: number;
}

let condIds = 0;

export function TableView({ db, name }: { db: Pithos; name: string }) {
  const [conds, setConds] = useState<Cond[]>([]);
  const [any, setAny] = useState(false);
  const [raw, setRaw] = useState('{}');
  const [rawEdited, setRawEdited] = useState(false);
  const [field, setField] = useState('');
  const [dir, setDir] = useState<'asc' | 'desc'>('asc');
  const [size, setSize] = useState(25);
  const [query, setQuery] = useState<Query>({ wheres: {}, field: '', dir: 'asc', size: 25 });
  // Paging: by t_id, a stack of `after` cursors; ordered by a field, how many rows to show.
  const [afters, setAfters] = useState<number[]>([0]);
  const [shown, setShown] = useState(25);
  const [rows, setRows] = useState<RowWithId[] | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [total, setTotal] = useState<number | null>(null);
  const [missing, setMissing] = useState('');
  const [reload, setReload] = useState(0);
  const [editing, setEditing] = useState<number | null>(null);
  const load = useAction();
  const rowAction = useAction();
  const qa = useAction();

  const built = buildWheres(conds, any);
  const wheresText = rawEdited ? raw : JSON.stringify(built);

  useEffect(() => {
    void load.run(async () => {
      try {
        const ordered = query.field !== '' && query.field !== 't_id';
        const limit = ordered ? shown : query.size;
        const page = await db.queryRowsWithIds(
          name,
          query.wheres,
          ordered ? { limit: limit + 1, order: [{ field: query.field, dir: query.dir }] } : { limit: limit + 1, after: afters[afters.length - 1] },
        );
        setHasMore(page.length > limit);
        setRows(page.slice(0, limit));
        setTotal(await db.countRows(name, query.wheres));
      } catch (err) {
        if (isNotFound(err)) setMissing((err as Error).message);
        throw err;
      }
    });
  }, [db, name, query, afters, shown, reload]);

  const run = (): void => {
    let wheres: Wheres;
    try {
      wheres = parseObject(wheresText, 'wheres') as Wheres;
    } catch (err) {
      qa.fail(err);
      return;
    }
    qa.clear();
    setAfters([0]);
    setShown(size);
    setQuery({ wheres, field: field.trim(), dir, size });
  };
  const refresh = (): void => setReload((n) => n + 1);

  if (missing) {
    return (
      <>
        <h1>
          Table <code>{name}</code>
        </h1>
        <p class="note">{missing}</p>
        <p>
          <a href="#/tables">Back to tables</a>
        </p>
      </>
    );
  }

  const ordered = query.field !== '' && query.field !== 't_id';
  const cols: string[] = [];
  for (const r of rows ?? []) for (const c of Object.keys(r.row)) if (!cols.includes(c)) cols.push(c);
  const columns: Column<RowWithId>[] = [
    { label: 't_id', cls: 'num', render: (r) => <span class="t-id">{r.t_id}</span> },
    ...cols.map((c): Column<RowWithId> => ({
      label: c,
      // A column of numbers only is right-aligned, figures under figures.
      cls: (rows ?? []).every((r) => r.row[c] === undefined || typeof r.row[c] === 'number') ? 'num' : undefined,
      render: (r) => {
        const v = r.row[c];
        if (v === undefined) return '';
        return <span class={typeof v === 'number' ? 'num' : typeof v === 'string' ? '' : 'json'}>{show(v)}</span>;
      },
      title: (r) => (r.row[c] === undefined ? '' : show(r.row[c])),
    })),
    {
      label: 'actions',
      cls: 'actions',
      render: (r) => (
        <span class="row nowrap">
          <button
            type="button"
            class="edit-row"
            aria-label={`Edit row ${r.t_id}`}
            onClick={() => {
              // What the last row action said is not about this edit: "row 1 patched" would otherwise stand for this one's outcome too.
              rowAction.clear();
              setEditing(r.t_id);
            }}
          >
            Edit
          </button>
          <button
            type="button"
            class="delete-row danger-quiet"
            aria-label={`Delete row ${r.t_id}`}
            onClick={() =>
              void rowAction.run(async () => {
                if (!(await confirmAction(`Delete row ${r.t_id} (${JSON.stringify(r.row)}) from '${name}'?`))) return;
                await db.deleteRow(name, r.t_id);
                if (editing === r.t_id) setEditing(null);
                refresh();
                return `row ${r.t_id} deleted`;
              })
            }
          >
            Delete
          </button>
        </span>
      ),
    },
  ];
  const info = total === null ? '' : `${plural(total, 'row')} match`;

  return (
    <>
      <h1>
        Table <code>{name}</code>
      </h1>
      <form
        class="card"
        aria-labelledby="query-title"
        onSubmit={(e) => {
          e.preventDefault();
          run();
        }}
      >
        <h2 id="query-title">Query</h2>
        <div class="row">
          <Field label="Match">
            <select
              id="combinator"
              value={any ? 'or' : 'and'}
              onChange={(e) => {
                setAny((e.currentTarget as HTMLSelectElement).value === 'or');
                setRawEdited(false);
              }}
            >
              <option value="and">all of (and)</option>
              <option value="or">any of ($or)</option>
            </select>
          </Field>
          <button
            type="button"
            id="add-condition"
            onClick={() => {
              setConds((c) => [...c, { id: ++condIds, field: '', op: '', value: '' }]);
              setRawEdited(false);
            }}
          >
            + Condition
          </button>
        </div>
        <div id="conditions">
          {conds.map((c) => {
            const upd = (p: Partial<Cond>): void => {
              setConds((cs) => cs.map((x) => (x.id === c.id ? { ...x, ...p } : x)));
              setRawEdited(false);
            };
            return (
              <div class="cond" key={c.id}>
                <input
                  class="cond-field"
                  aria-label="field"
                  placeholder="field (a.b for nested)"
                  value={c.field}
                  onInput={(e) => upd({ field: (e.currentTarget as HTMLInputElement).value })}
                  ref={(el) => {
                    if (el && c.field === '' && c.id === condIds) el.focus();
                  }}
                />
                <select class="cond-op" aria-label="operator" value={c.op} onChange={(e) => upd({ op: (e.currentTarget as HTMLSelectElement).value })}>
                  {OPS.map(([label, op]) => (
                    <option value={op}>{label}</option>
                  ))}
                </select>
                <input
                  class="cond-value"
                  aria-label="value"
                  placeholder="value (JSON or text)"
                  value={c.value}
                  onInput={(e) => upd({ value: (e.currentTarget as HTMLInputElement).value })}
                />
                <button
                  type="button"
                  aria-label="remove condition"
                  onClick={() => {
                    setConds((cs) => cs.filter((x) => x.id !== c.id));
                    setRawEdited(false);
                  }}
                >
                  ×
                </button>
              </div>
            );
          })}
        </div>
        <Field label="wheres (JSON, editable)" wide>
          <textarea
            id="wheres"
            rows={2}
            spellcheck={false}
            value={wheresText}
            onInput={(e) => {
              setRaw((e.currentTarget as HTMLTextAreaElement).value);
              setRawEdited(true);
            }}
          />
        </Field>
        <div class="row">
          <Field label="Order by field (empty: t_id)">
            <input id="order-field" placeholder="t_id" value={field} onInput={(e) => setField((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Field label="Direction">
            <select id="order-dir" value={dir} onChange={(e) => setDir((e.currentTarget as HTMLSelectElement).value as 'asc' | 'desc')}>
              <option value="asc">ascending</option>
              <option value="desc">descending</option>
            </select>
          </Field>
          <Field label="Rows per page">
            <select id="page-size" value={String(size)} onChange={(e) => setSize(Number((e.currentTarget as HTMLSelectElement).value))}>
              {[25, 50, 100, 500].map((n) => (
                <option value={String(n)}>{n}</option>
              ))}
            </select>
          </Field>
          <button type="submit" class="primary" id="run-query">
            Run query
          </button>
        </div>
        <Status a={qa} id="query-status" />
      </form>

      <section aria-labelledby="rows-title">
        <div class="row spread">
          <h2 id="rows-title">Rows</h2>
          <div class="row pager" id="pager">
            {ordered ? (
              <button type="button" disabled={!hasMore} onClick={() => setShown((n) => n + query.size)}>
                Show {query.size} more
              </button>
            ) : (
              <>
                <button type="button" disabled={afters.length <= 1} onClick={() => setAfters((a) => a.slice(0, -1))}>
                  ← Previous
                </button>
                <button type="button" disabled={!hasMore} onClick={() => rows && rows.length > 0 && setAfters((a) => [...a, rows[rows.length - 1]!.t_id])}>
                  Next →
                </button>
              </>
            )}
            <span class="muted" id="page-info">
              {ordered ? `first ${rows?.length ?? 0} by ${query.field} ${query.dir === 'asc' ? 'ascending' : 'descending'}` : `page ${afters.length}`}
              {info ? ` · ${info}` : ''}
            </span>
            <button type="button" onClick={refresh}>
              Refresh
            </button>
          </div>
        </div>
        <Status a={load} id="rows-status" />
        <Status a={rowAction} id="row-action-status" />
        {rows ? (
          <DataTable
            id="grid"
            caption={`Rows of ${name}`}
            columns={columns}
            rows={rows}
            keyOf={(r) => String(r.t_id)}
            rowAttrs={(r) => ({ 'data-t-id': String(r.t_id) })}
            empty={Object.keys(query.wheres).length ? 'No rows match.' : 'No rows yet.'}
          />
        ) : null}
        {rows && rows.length === 0 ? <span id="no-rows" hidden /> : null}
      </section>

      {editing !== null ? (
        <RowEditor
          key={editing}
          db={db}
          table={name}
          tId={editing}
          onDone={(msg) => {
            setEditing(null);
            refresh();
            rowAction.clear();
            if (msg) void rowAction.run(() => Promise.resolve(msg));
          }}
        />
      ) : null}

      <InsertRow db={db} table={name} onInserted={refresh} />
      <Bulk db={db} table={name} wheresText={wheresText} onChanged={refresh} />
      <DangerZone
        id="drop-table"
        label="Drop table"
        hint="Drops the table with all its rows; it cannot be undone."
        question={`Drop table '${name}' with all its rows?`}
        act={async () => {
          await db.dropTable(name);
          location.hash = '#/tables';
        }}
      />
    </>
  );
}

/**
 * Edits one row by its t_id. The row is read with its version; Save sends the changed and
 * added fields as `sets` and the removed ones as `unset`, Replace writes the whole text as
 * the row; both with If-Match, so a change made meanwhile by someone else is refused (412).
 */
function RowEditor({ db, table, tId, onDone }: { db: Pithos; table: string; tId: number; onDone: (msg?: string) => void }) {
  const [row, setRow] = useState<{ value: Row; version?: number } | null>(null);
  const [text, setText] = useState('');
  const a = useAction();
  useEffect(() => {
    void a.run(async () => {
      const r = await db.getRowVersioned(table, tId);
      setRow(r);
      setText(JSON.stringify(r.value, null, 2));
      requestAnimationFrame(() => document.getElementById('row-json')?.focus());
    });
  }, [db, table, tId]);
  const save = (): void =>
    void a.run(async () => {
      if (!row) return;
      const next = parseObject(text, 'the row');
      const sets: JsonObject = {};
      for (const [k, v] of Object.entries(next)) if (!Object.hasOwn(row.value, k) || JSON.stringify(row.value[k]) !== JSON.stringify(v)) sets[k] = v;
      const unset = Object.keys(row.value).filter((k) => !Object.hasOwn(next, k));
      if (Object.keys(sets).length === 0 && unset.length === 0) return 'nothing changed';
      const what = [Object.keys(sets).length > 0 ? `set ${JSON.stringify(sets)}` : '', unset.length > 0 ? `remove ${unset.join(', ')}` : '']
        .filter((x) => x)
        .join(' and ');
      if (!(await confirmAction(`Patch row ${tId} of '${table}': ${what}?`))) return;
      await db.patchRow(table, tId, sets, { ...(unset.length > 0 ? { unset } : {}), ...(row.version !== undefined ? { ifVersion: row.version } : {}) });
      onDone(`row ${tId} patched`);
    });
  const replace = (): void =>
    void a.run(async () => {
      if (!row) return;
      const next = parseObject(text, 'the row');
      if (!(await confirmAction(`Replace row ${tId} of '${table}' with ${JSON.stringify(next)}?`))) return;
      await db.replaceRow(table, tId, next, row.version !== undefined ? { ifVersion: row.version } : {});
      onDone(`row ${tId} replaced`);
    });
  return (
    <section class="card" id="row-editor" aria-labelledby="row-editor-title">
      <h2 id="row-editor-title">
        Edit row {tId}
        {row?.version !== undefined ? ` (version ${row.version})` : ''}
      </h2>
      <p class="muted">
        Save writes the fields you changed or added and removes the fields you deleted, in this row only. Replace makes the text the whole row. If the row
        changed since it was opened here, nothing is written.
      </p>
      {row ? <JsonEditor id="row-json" label="Row (JSON)" value={text} onInput={setText} onSubmit={save} /> : null}
      <div class="row">
        <button type="button" class="primary" id="save-row" disabled={!row || a.busy} onClick={save}>
          Save changes
        </button>
        <button type="button" id="replace-row" disabled={!row || a.busy} onClick={replace}>
          Replace row
        </button>
        <button type="button" onClick={() => onDone()}>
          Cancel
        </button>
      </div>
      <Status a={a} id="row-editor-status" />
    </section>
  );
}

function InsertRow({ db, table, onInserted }: { db: Pithos; table: string; onInserted: () => void }) {
  const [text, setText] = useState('{}');
  const a = useAction();
  const insert = (): void =>
    void a.run(async () => {
      const sent = text;
      const { t_id } = await db.insertRow(table, parseObject(sent, 'the row'));
      setText((t) => (t === sent ? '{}' : t));
      onInserted();
      return `row inserted, t_id ${t_id}`;
    });
  return (
    <form
      class="card"
      aria-labelledby="insert-title"
      onSubmit={(e) => {
        e.preventDefault();
        insert();
      }}
    >
      <h2 id="insert-title">Insert a row</h2>
      <JsonEditor id="insert-json" label="New row (JSON)" rows={3} value={text} onInput={setText} onSubmit={insert} />
      <button type="submit" class="primary" id="insert-row" disabled={a.busy}>
        Insert
      </button>
      <Status a={a} id="insert-status" />
    </form>
  );
}

/** Changes to every row the query matches, and dropping the table; each asks first. */
function Bulk({ db, table, wheresText, onChanged }: { db: Pithos; table: string; wheresText: string; onChanged: () => void }) {
  const [sets, setSets] = useState('{}');
  const a = useAction();
  const wheres = (): Wheres => parseObject(wheresText, 'wheres') as Wheres;
  return (
    <form class="card" aria-labelledby="bulk-title" onSubmit={(e) => e.preventDefault()}>
      <h2 id="bulk-title">Every row matching the query</h2>
      <JsonEditor id="sets-json" label="sets (JSON)" rows={2} value={sets} onInput={setSets} />
      <div class="row">
        <button
          type="button"
          id="patch-matching"
          onClick={() =>
            void a.run(async () => {
              const w = wheres();
              const s = parseObject(sets, 'sets');
              const n = await db.countRows(table, w);
              if (!(await confirmAction(`Patch ${plural(n, 'row')} matching ${JSON.stringify(w)} with ${JSON.stringify(s)}?`))) return;
              await db.patchRows(table, w, s);
              onChanged();
              return `${plural(n, 'row')} patched`;
            })
          }
        >
          Patch matching rows
        </button>
        <button
          type="button"
          class="danger"
          id="delete-matching"
          onClick={() =>
            void a.run(async () => {
              const w = wheres();
              const n = await db.countRows(table, w);
              if (!(await confirmAction(`Delete ${plural(n, 'row')} matching ${JSON.stringify(w)}?`))) return;
              await db.deleteRows(table, w);
              onChanged();
              return `${plural(n, 'row')} deleted`;
            })
          }
        >
          Delete matching rows
        </button>
      </div>
      <Status a={a} id="bulk-status" />
    </form>
  );
}
