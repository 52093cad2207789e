/** One list: a range of items by index (GET /lists/<name>?start=&stop=), push and pop at either end. */
import { useEffect, useState } from 'preact/hooks';
import type { Json, Pithos } from '../../client/index.js';
import { confirmAction } from '../components/Confirm.js';
import { type Column, DataTable } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { parseJson } from '../components/JsonEditor.js';
import { Status } from '../components/Status.js';
import { isNotFound } from '../lib/api.js';
import { useAction } from '../lib/hooks.js';

export function ListView({ db, name }: { db: Pithos; name: string }) {
  const [start, setStart] = useState(0);
  const [size, setSize] = useState(50);
  const [data, setData] = useState<{ items: Json[]; length: number; version?: number } | null | undefined>(undefined);
  const [value, setValue] = useState('');
  const [popped, setPopped] = useState<Json[] | null>(null);
  const [reload, setReload] = useState(0);
  const load = useAction();
  const a = useAction();
  useEffect(() => {
    void load.run(async () => {
      try {
        setData(await db.getList(name, { start, stop: start + size - 1 }));
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setData(null);
      }
    });
  }, [db, name, start, size, reload]);
  const refresh = (): void => setReload((n) => n + 1);
  const push = (side: 'left' | 'right'): void =>
    void a.run(async () => {
      const v = parseJson(value, 'the value');
      const n = await db.pushList(name, [v], { side });
      setValue('');
      refresh();
      return `pushed on the ${side}; length ${n}`;
    });
  const pop = (side: 'left' | 'right'): void =>
    void a.run(async () => {
      if (!(await confirmAction(`Pop one item from the ${side} end of '${name}'?`))) return;
      const items = await db.popList(name, { side });
      setPopped(items);
      refresh();
      return items.length ? `popped ${JSON.stringify(items[0])} from the ${side}` : 'the list is empty: nothing popped';
    });
  const cols: Column<{ i: number; v: Json }>[] = [
    { label: 'index', cls: 'num', render: (r) => String(r.i) },
    { label: 'value', cls: 'code', render: (r) => JSON.stringify(r.v), title: (r) => JSON.stringify(r.v) },
  ];
  const rows = (data?.items ?? []).map((v, k) => ({ i: start + k, v }));
  return (
    <>
      <h1>
        List <code>{name}</code>
      </h1>
      <section class="card" aria-labelledby="items-title">
        <div class="row spread">
          <h2 id="items-title">Items</h2>
          {data ? (
            <div class="row">
              <Field label="Per page">
                <select
                  value={String(size)}
                  onChange={(e) => {
                    setStart(0);
                    setSize(Number((e.currentTarget as HTMLSelectElement).value));
                  }}
                >
                  {[50, 200, 1000].map((n) => (
                    <option value={String(n)}>{n}</option>
                  ))}
                </select>
              </Field>
              <button type="button" onClick={refresh}>
                Refresh
              </button>
            </div>
          ) : null}
        </div>
        <Status a={load} />
        {data ? (
          <div class="row pager">
            <button type="button" disabled={start === 0} onClick={() => setStart(Math.max(0, start - size))}>
              ← Previous
            </button>
            <span class="muted" id="list-info">
              {data.length === 0 ? 'empty' : `${start}–${Math.min(start + size, data.length) - 1} of ${data.length}`}
              {data.version !== undefined ? ` · version ${data.version}` : ''}
            </span>
            <button type="button" disabled={start + size >= data.length} onClick={() => setStart(start + size)}>
              Next →
            </button>
          </div>
        ) : null}
        {data === null ? (
          <p id="list-missing">No list '{name}' exists: a push creates it.</p>
        ) : data ? (
          <DataTable id="list-items" caption={`Items of ${name}`} columns={cols} rows={rows} keyOf={(r) => String(r.i)} empty="The list is empty." />
        ) : null}
      </section>
      <form
        class="card"
        aria-labelledby="push-title"
        onSubmit={(e) => {
          e.preventDefault();
          push('right');
        }}
      >
        <h2 id="push-title">Push and pop</h2>
        <div class="row">
          <Field label='Value (JSON: 1, "text", {…})'>
            <input id="list-value" class="mono" required value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <button type="button" id="push-left" disabled={a.busy} onClick={() => push('left')}>
            Push left
          </button>
          <button type="submit" class="primary" id="push-right" disabled={a.busy}>
            Push right
          </button>
        </div>
        <div class="row">
          <button type="button" id="pop-left" disabled={a.busy || !data} onClick={() => pop('left')}>
            Pop left
          </button>
          <button type="button" id="pop-right" disabled={a.busy || !data} onClick={() => pop('right')}>
            Pop right
          </button>
          {data ? (
            <button
              type="button"
              class="danger"
              id="delete-list"
              onClick={() =>
                void a.run(async () => {
                  if (!(await confirmAction(`Delete list '${name}' with its ${data.length} items?`))) return;
                  await db.deleteList(name);
                  location.hash = '#/lists';
                })
              }
            >
              Delete list
            </button>
          ) : null}
        </div>
        <Status a={a} id="list-status" />
        {popped && popped.length ? (
          <p class="muted">
            Last popped: <code id="popped">{JSON.stringify(popped)}</code>
          </p>
        ) : null}
      </form>
      <p>
        <a href="#/lists">All lists</a>
      </p>
    </>
  );
}
