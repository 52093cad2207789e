/**
 * One set: its members a page at a time (limit/after), add, remove, a membership check,
 * union/intersection/difference with other sets (optionally stored into a set); its version
 * and lifetime (components/Collection.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Pithos } from '../../client/index.js';
import { useGuard, VersionCard } from '../components/Collection.js';
import { confirmAction } from '../components/Confirm.js';
import { DangerZone } from '../components/Danger.js';
import { type Column, DataTable, Pager } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { Status } from '../components/Status.js';
import { deleteCollection, isNotFound, lifeLeft } from '../lib/api.js';
import { plural } from '../lib/format.js';
import { useAction, useCursor } from '../lib/hooks.js';

export function SetView({ db, name }: { db: Pithos; name: string }) {
  const cursor = useCursor<string>();
  const [size, setSize] = useState(50);
  const [data, setData] = useState<
    { members: string[]; count: number; next: string | null; version?: number; left: number | null | undefined } | null | undefined
  >(undefined);
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
        const [page, left] = await Promise.all([
          db.getSet(name, { limit: size, ...(cursor.after !== undefined ? { after: cursor.after } : {}) }),
          lifeLeft(db, 'set', name),
        ]);
        setData({ ...page, left });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setData(null);
      }
    });
  }, [db, name, size, cursor.after, reload]);
  const refresh = (): void => setReload((n) => n + 1);
  const guard = useGuard(data?.version);
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
              const r = await db.setRemove(name, [m], guard.cond());
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
            <button type="button" id="refresh" onClick={refresh}>
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
      {data ? <VersionCard db={db} kind="set" name={name} version={data.version} left={data.left} guard={guard} onChanged={refresh} /> : null}
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
            const r = await db.setAdd(name, members, guard.cond());
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
      <Combine
        db={db}
        name={name}
        onStored={(into) => {
          if (into === name) refresh();
        }}
      />
      {data ? (
        <DangerZone
          id="delete-set"
          label="Delete set"
          hint="Deletes the set with all its members; it cannot be undone."
          question={`Delete set '${name}' with its ${plural(data.count, 'member')}?`}
          act={async () => {
            await deleteCollection(db, 'set', name, guard.cond());
            location.hash = '#/sets';
          }}
        />
      ) : null}
      <p>
        <a href="#/sets">All sets</a>
      </p>
    </>
  );
}

type SetOp = 'union' | 'inter' | 'diff';
const OP_WORDS: Record<SetOp, string> = { union: 'union', inter: 'intersection', diff: 'difference' };
/** At most this many members of a combination are shown; the count is always the whole result's. */
const SHOWN = 200;

/**
 * POST /sets/<name>/combine: this set with 1-16 others (a missing set counts as empty), the
 * result shown, or stored into a set (replacing it) in the same atomic step as the read.
 * Storing into this set changes it, but the API takes no condition for it: the guard does not apply.
 */
function Combine({ db, name, onStored }: { db: Pithos; name: string; onStored: (into: string) => void }) {
  const [op, setOp] = useState<SetOp>('union');
  const [others, setOthers] = useState('');
  const [store, setStore] = useState('');
  const [result, setResult] = useState<{ members: string[]; count: number } | null>(null);
  const a = useAction();
  return (
    <form
      class="card"
      aria-labelledby="combine-title"
      onSubmit={(e) => {
        e.preventDefault();
        void a.run(async () => {
          setResult(null);
          const withSets = others
            .split(/[,\n]/)
            .map((x) => x.trim())
            .filter((x) => x !== '');
          if (withSets.length === 0) throw new Error('name at least one other set');
          const what = `${OP_WORDS[op]} of '${name}' with ${withSets.map((x) => `'${x}'`).join(', ')}`;
          if (store !== '') {
            if (!(await confirmAction(`Replace set '${store}' with the ${what}?`))) return;
            const r = await db.setCombine(name, op, withSets, store);
            onStored(store);
            return `stored the ${what} in '${store}': ${plural(r.count, 'member')}`;
          }
          const r = await db.setCombine(name, op, withSets);
          setResult({ members: r.members ?? [], count: r.count });
          return `the ${what}: ${plural(r.count, 'member')}`;
        });
      }}
    >
      <h2 id="combine-title">Combine with other sets</h2>
      <p class="muted">A missing set counts as empty. Storing replaces the target set (or creates it) in the same atomic step as the read.</p>
      <div class="row">
        <Field label="Operation">
          <select id="combine-op" value={op} onChange={(e) => setOp((e.currentTarget as HTMLSelectElement).value as SetOp)}>
            <option value="union">union (in any)</option>
            <option value="inter">intersection (in all)</option>
            <option value="diff">difference (in this set only)</option>
          </select>
        </Field>
        <Field label="Other sets (a, b, …)">
          <input id="combine-with" value={others} onInput={(e) => setOthers((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        <Field label="Store into set (optional)">
          <input id="combine-store" value={store} onInput={(e) => setStore((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        <button type="submit" class="primary" id="combine" disabled={a.busy}>
          {store === '' ? 'Combine' : 'Combine and store'}
        </button>
      </div>
      <Status a={a} id="combine-status" />
      {result && result.members.length ? (
        <p id="combine-members" class="members">
          {result.members.slice(0, SHOWN).map((m) => (
            <code key={m}>{m}</code>
          ))}
          {result.count > SHOWN ? <span class="muted">… and {result.count - SHOWN} more</span> : null}
        </p>
      ) : null}
    </form>
  );
}
