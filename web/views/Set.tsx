/** One set: its members a page at a time (limit/after), add, remove, and a membership check. */
import { useEffect, useState } from 'preact/hooks';
import type { Pithos } from '../../client/index.js';
import { confirmAction } from '../components/Confirm.js';
import { type Column, DataTable, Pager } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { Status } from '../components/Status.js';
import { isNotFound } from '../lib/api.js';
import { plural } from '../lib/format.js';
import { useAction, useCursor } from '../lib/hooks.js';

export function SetView({ db, name }: { db: Pithos; name: string }) {
  const cursor = useCursor<string>();
  const [size, setSize] = useState(50);
  const [data, setData] = useState<{ members: string[]; count: number; next: string | null; version?: number } | null | undefined>(undefined);
  const [add, setAdd] = useState('');
  const [probe, setProbe] = useState('');
  const [answer, setAnswer] = useState('');
  const [reload, setReload] = useState(0);
  const load = useAction();
  const a = useAction();
  const c = useAction();
  const rowAct = useAction();
  useEffect(() => {
    void load.run(async () => {
      try {
        setData(await db.getSet(name, { limit: size, ...(cursor.after !== undefined ? { after: cursor.after } : {}) }));
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setData(null);
      }
    });
  }, [db, name, size, cursor.after, reload]);
  const refresh = (): void => setReload((n) => n + 1);
  const cols: Column<string>[] = [
    { label: 'member', render: (m) => m, title: (m) => m },
    {
      label: 'actions',
      cls: 'actions',
      render: (m) => (
        <button
          type="button"
          class="remove-member danger-quiet"
          aria-label={`Remove ${m}`}
          onClick={() =>
            void rowAct.run(async () => {
              if (!(await confirmAction(`Remove '${m}' from set '${name}'?`))) return;
              const r = await db.setRemove(name, [m]);
              refresh();
              return `removed '${m}'; ${plural(r.count, 'member')} left`;
            })
          }
        >
          Remove
        </button>
      ),
    },
  ];
  return (
    <>
      <h1>
        Set <code>{name}</code>
      </h1>
      <section class="card" aria-labelledby="members-title">
        <div class="row spread">
          <h2 id="members-title">Members{data ? ` (${data.count})` : ''}</h2>
          <div class="row">
            <Field label="Per page">
              <select
                value={String(size)}
                onChange={(e) => {
                  cursor.reset();
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
        </div>
        <Status a={load} />
        <Status a={rowAct} id="member-status" />
        {data === null ? (
          <p id="set-missing">No set '{name}' exists: adding a member creates it.</p>
        ) : data ? (
          <>
            <DataTable id="set-members" caption={`Members of ${name}`} columns={cols} rows={data.members} keyOf={(m) => m} empty="The set is empty." />
            <Pager
              page={cursor.page}
              hasNext={data.next !== null}
              onPrev={cursor.back}
              onNext={() => data.next !== null && cursor.next(data.next)}
              info={data.version !== undefined ? `version ${data.version}` : undefined}
            />
          </>
        ) : null}
      </section>
      <form
        class="card"
        aria-labelledby="add-title"
        onSubmit={(e) => {
          e.preventDefault();
          void a.run(async () => {
            const members = add
              .split('\n')
              .map((s) => s.trim())
              .filter((s) => s !== '');
            if (members.length === 0) throw new Error('type at least one member');
            const r = await db.setAdd(name, members);
            setAdd('');
            refresh();
            return `${plural(r.added, 'member')} added; ${plural(r.count, 'member')} now`;
          });
        }}
      >
        <h2 id="add-title">Add members</h2>
        <Field label="Members, one a line" wide>
          <textarea id="set-add" rows={2} value={add} onInput={(e) => setAdd((e.currentTarget as HTMLTextAreaElement).value)} />
        </Field>
        <div class="row">
          <button type="submit" class="primary" id="set-add-submit" disabled={a.busy}>
            Add
          </button>
          {data ? (
            <button
              type="button"
              class="danger"
              id="delete-set"
              onClick={() =>
                void a.run(async () => {
                  if (!(await confirmAction(`Delete set '${name}' with its ${plural(data.count, 'member')}?`))) return;
                  await db.deleteSet(name);
                  location.hash = '#/sets';
                })
              }
            >
              Delete set
            </button>
          ) : null}
        </div>
        <Status a={a} id="set-status" />
      </form>
      <form
        class="card"
        aria-labelledby="contains-title"
        onSubmit={(e) => {
          e.preventDefault();
          void c.run(async () => {
            const [yes] = await db.setContains(name, [probe]);
            setAnswer(yes ? `'${probe}' is a member` : `'${probe}' is not a member`);
          });
        }}
      >
        <h2 id="contains-title">Is it a member?</h2>
        <div class="row">
          <Field label="Member">
            <input id="set-probe" value={probe} onInput={(e) => setProbe((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <button type="submit" id="set-contains">
            Check
          </button>
          <span id="contains-answer" role="status">
            {answer}
          </span>
        </div>
        <Status a={c} />
      </form>
      <p>
        <a href="#/sets">All sets</a>
      </p>
    </>
  );
}
