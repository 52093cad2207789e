/**
 * One list: a range of items by index (GET /lists/<name>?start=&stop=), push and pop at
 * either end, move an item to another list (pop with `to`), set an item by index, trim to a
 * range, remove items equal to a value; its version and lifetime (components/Collection.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Json, Pithos } from '../../client/index.js';
import { type Guard, useGuard, VersionCard } from '../components/Collection.js';
import { confirmAction } from '../components/Confirm.js';
import { DangerZone } from '../components/Danger.js';
import { type Column, DataTable } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { parseJson } from '../components/JsonEditor.js';
import { Status } from '../components/Status.js';
import { isNotFound, lifeLeft } from '../lib/api.js';
import { plural } from '../lib/format.js';
import { useAction } from '../lib/hooks.js';

type Side = 'left' | 'right';

export function ListView({ db, name }: { db: Pithos; name: string }) {
  const [start, setStart] = useState(0);
  const [size, setSize] = useState(50);
  const [data, setData] = useState<{ items: Json[]; length: number; version?: number; left: number | null | undefined } | null | undefined>(undefined);
  const [value, setValue] = useState('');
  const [popped, setPopped] = useState<Json[] | null>(null);
  const [reload, setReload] = useState(0);
  const load = useAction();
  const a = useAction();
  useEffect(() => {
    void load.run(async () => {
      try {
        const [l, left] = await Promise.all([db.getList(name, { start, stop: start + size - 1 }), lifeLeft(db, 'list', name)]);
        setData({ ...l, left });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setData(null);
      }
    });
  }, [db, name, start, size, reload]);
  const refresh = (): void => setReload((n) => n + 1);
  const guard = useGuard(data?.version);
  const push = (side: Side): void =>
    void a.run(async () => {
      const v = parseJson(value, 'the value');
      const n = await db.pushList(name, [v], { side, ...guard.cond() });
      setValue('');
      refresh();
      return `pushed on the ${side}; length ${n}`;
    });
  const pop = (side: Side): void =>
    void a.run(async () => {
      if (!(await confirmAction(`Pop one item from the ${side} end of '${name}'?`))) return;
      const items = await db.popList(name, { side, ...guard.cond() });
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
              <button type="button" id="refresh" onClick={refresh}>
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
      {data ? <VersionCard db={db} kind="list" name={name} version={data.version} left={data.left} guard={guard} onChanged={refresh} /> : null}
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
        </div>
        <Status a={a} id="list-status" />
        {popped && popped.length ? (
          <p class="muted">
            Last popped: <code id="popped">{JSON.stringify(popped)}</code>
          </p>
        ) : null}
      </form>
      {data ? (
        <>
          <MoveItem db={db} name={name} guard={guard} onMoved={refresh} />
          <EditItems db={db} name={name} length={data.length} guard={guard} onChanged={refresh} />
        </>
      ) : null}
      {data ? (
        <DangerZone
          id="delete-list"
          label="Delete list"
          hint="Deletes the list with all its items; it cannot be undone."
          question={`Delete list '${name}' with its ${data.length} items?`}
          act={async () => {
            await db.deleteList(name, guard.cond());
            location.hash = '#/lists';
          }}
        />
      ) : null}
      <p>
        <a href="#/lists">All lists</a>
      </p>
    </>
  );
}

function SideSelect({ id, value, onChange }: { id: string; value: Side; onChange: (s: Side) => void }) {
  return (
    <select id={id} value={value} onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value as Side)}>
      <option value="left">left</option>
      <option value="right">right</option>
    </select>
  );
}

/**
 * Pop with `to`: one item from an end of this list onto an end of another, in one atomic
 * step (Redis LMOVE), so the item is in one of the two lists whatever happens. Nothing is
 * lost, so it asks no confirmation.
 */
function MoveItem({ db, name, guard, onMoved }: { db: Pithos; name: string; guard: Guard; onMoved: () => void }) {
  const [from, setFrom] = useState<Side>('right');
  const [to, setTo] = useState('');
  const [toSide, setToSide] = useState<Side>('left');
  const a = useAction();
  return (
    <form
      class="card"
      aria-labelledby="move-title"
      onSubmit={(e) => {
        e.preventDefault();
        void a.run(async () => {
          if (to === '') throw new Error('name the list to move the item to');
          const items = await db.popList(name, { side: from, to, toSide, ...guard.cond() });
          onMoved();
          return items.length ? `moved ${JSON.stringify(items[0])} to the ${toSide} end of '${to}'` : `'${name}' is empty: nothing moved`;
        });
      }}
    >
      <h2 id="move-title">Move an item to another list</h2>
      <p class="muted">One atomic step: the item is always in one of the two lists. A missing target list is created.</p>
      <div class="row">
        <Field label="From this list's end">
          <SideSelect id="move-from" value={from} onChange={setFrom} />
        </Field>
        <Field label="To list">
          <input id="move-to" value={to} onInput={(e) => setTo((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        <Field label="Onto its end">
          <SideSelect id="move-to-side" value={toSide} onChange={setToSide} />
        </Field>
        <button type="submit" class="primary" id="move" disabled={a.busy}>
          Move
        </button>
      </div>
      <Status a={a} id="move-status" />
    </form>
  );
}

/** A whole number typed into a field; negatives count from the right end, as the API's indexes do. */
function whole(text: string, what: string): number {
  if (!/^\s*-?\d+\s*$/.test(text)) throw new Error(`${what} must be a whole number (negative counts from the right end)`);
  return Number(text);
}

/** PATCH /lists/<name>: replace the item at an index, keep only a range (trim), or remove the items equal to a value. */
function EditItems({ db, name, length, guard, onChanged }: { db: Pithos; name: string; length: number; guard: Guard; onChanged: () => void }) {
  const [index, setIndex] = useState('0');
  const [value, setValue] = useState('');
  const [keep, setKeep] = useState({ start: '0', stop: '-1' });
  const [drop, setDrop] = useState('');
  const [count, setCount] = useState('0');
  const s = useAction();
  const t = useAction();
  const r = useAction();
  const input = (f: (v: string) => void) => (e: Event) => f((e.currentTarget as HTMLInputElement).value);
  return (
    <section class="card" aria-labelledby="edit-title">
      <h2 id="edit-title">Change items</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void s.run(async () => {
            const i = whole(index, 'the index');
            const v = parseJson(value, 'the value');
            await db.patchList(name, { set: { index: i, value: v }, ...guard.cond() });
            onChanged();
            return `item ${i} is now ${JSON.stringify(v)}`;
          });
        }}
      >
        <h3 id="set-item-title">Set the item at an index</h3>
        <div class="row">
          <Field label="Index (−1: last)">
            <input id="set-index" class="mono" size={6} value={index} onInput={input(setIndex)} />
          </Field>
          <Field label="New value (JSON)">
            <input id="set-value" class="mono" value={value} onInput={input(setValue)} />
          </Field>
          <button type="submit" id="set-item" disabled={s.busy}>
            Set item
          </button>
        </div>
        <Status a={s} id="set-item-status" />
      </form>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void t.run(async () => {
            const lo = whole(keep.start, 'the first index kept');
            const hi = whole(keep.stop, 'the last index kept');
            if (!(await confirmAction(`Keep only the items ${lo} to ${hi} of '${name}' (${plural(length, 'item')} now) and remove the rest?`))) return;
            const n = await db.patchList(name, { trim: { start: lo, stop: hi }, ...guard.cond() });
            onChanged();
            return `trimmed to items ${lo} to ${hi}; length ${n}`;
          });
        }}
      >
        <h3 id="trim-title">Trim to a range</h3>
        <div class="row">
          <Field label="Keep from index">
            <input id="trim-start" class="mono" size={6} value={keep.start} onInput={input((v) => setKeep({ ...keep, start: v }))} />
          </Field>
          <Field label="to index (inclusive)">
            <input id="trim-stop" class="mono" size={6} value={keep.stop} onInput={input((v) => setKeep({ ...keep, stop: v }))} />
          </Field>
          <button type="submit" id="trim" disabled={t.busy}>
            Trim
          </button>
        </div>
        <Status a={t} id="trim-status" />
      </form>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void r.run(async () => {
            const v = parseJson(drop, 'the value');
            const c = whole(count, 'how many');
            const which = c === 0 ? 'every item' : c > 0 ? `the first ${plural(c, 'item')}` : `the last ${plural(-c, 'item')}`;
            if (!(await confirmAction(`Remove ${which} equal to ${JSON.stringify(v)} from '${name}'?`))) return;
            const n = await db.patchList(name, { remove: { value: v, count: c }, ...guard.cond() });
            onChanged();
            return `removed items equal to ${JSON.stringify(v)}; length ${n}`;
          });
        }}
      >
        <h3 id="remove-title">Remove items equal to a value</h3>
        <p class="hint">How many: 0 removes all of them, n the first n from the left, −n the last n from the right.</p>
        <div class="row">
          <Field label="Value (JSON)">
            <input id="remove-value" class="mono" value={drop} onInput={input(setDrop)} />
          </Field>
          <Field label="How many">
            <input id="remove-count" class="mono" size={6} value={count} onInput={input(setCount)} />
          </Field>
          <button type="submit" id="remove-items" disabled={r.busy}>
            Remove
          </button>
        </div>
        <Status a={r} id="remove-status" />
      </form>
    </section>
  );
}
