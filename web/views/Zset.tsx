/**
 * One sorted set as a leaderboard: by rank (highest first or lowest first, a page at a
 * time with start/stop) or by score (min/max with offset/limit); add, incr, remove, and a
 * member's score and rank; its version and lifetime (components/Collection.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Pithos, ZItem } from '../../client/index.js';
import { useGuard, VersionCard } from '../components/Collection.js';
import { confirmAction } from '../components/Confirm.js';
import { DangerZone } from '../components/Danger.js';
import { type Column, DataTable } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { Status } from '../components/Status.js';
import { deleteCollection, isNotFound, lifeLeft } from '../lib/api.js';
import { plural } from '../lib/format.js';
import { useAction } from '../lib/hooks.js';

interface View {
  by: 'rank' | 'score';
  rev: boolean;
  min: string;
  max: string;
}

export function ZsetView({ db, name }: { db: Pithos; name: string }) {
  const [form, setForm] = useState<View>({ by: 'rank', rev: true, min: '-inf', max: '+inf' });
  const [view, setView] = useState<View>(form);
  const [offset, setOffset] = useState(0);
  const size = 25;
  const [data, setData] = useState<{ items: ZItem[]; count: number; version?: number; left: number | null | undefined } | null | undefined>(undefined);
  const [member, setMember] = useState('');
  const [score, setScore] = useState('1');
  const [lookup, setLookup] = useState('');
  const [found, setFound] = useState('');
  const [reload, setReload] = useState(0);
  const load = useAction();
  const a = useAction();
  const rowAct = useAction();
  const l = useAction();
  useEffect(() => {
    void load.run(async () => {
      try {
        // The typed client's zrange leaves out the version (the ETag): the call itself keeps it.
        const query =
          view.by === 'rank'
            ? { by: 'rank', start: offset, stop: offset + size, rev: view.rev }
            : { by: 'score', min: view.min, max: view.max, offset, limit: size + 1, rev: view.rev };
        const [r, left] = await Promise.all([db.call<{ items: ZItem[]; count: number }>('zrange', [name], { query }), lifeLeft(db, 'zset', name)]);
        setData({ ...r.data, left, ...(r.version !== undefined ? { version: r.version } : {}) });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setData(null);
      }
    });
  }, [db, name, view, offset, reload]);
  const refresh = (): void => setReload((n) => n + 1);
  const guard = useGuard(data?.version);
  const items = data ? data.items.slice(0, size) : [];
  const more = data ? data.items.length > size : false;
  const rows = items.map((it, i) => ({ ...it, pos: offset + i }));
  const cols: Column<ZItem & { pos: number }>[] = [
    {
      label: view.by === 'rank' ? (view.rev ? 'place (highest first)' : 'place (lowest first)') : '#',
      short: view.by === 'rank' ? 'place' : '#',
      cls: 'num',
      render: (r) => String(r.pos + 1),
    },
    { label: 'member', render: (r) => r.member, title: (r) => r.member },
    { label: 'score', cls: 'num', render: (r) => String(r.score) },
    {
      label: 'actions',
      cls: 'actions',
      render: (r) => (
        <button
          type="button"
          class="remove-member danger-quiet"
          aria-label={`Remove ${r.member}`}
          onClick={() =>
            void rowAct.run(async () => {
              if (!(await confirmAction(`Remove '${r.member}' from sorted set '${name}'?`))) return;
              await db.zremove(name, [r.member], guard.cond());
              refresh();
              return `removed '${r.member}'`;
            })
          }
        >
          Remove
        </button>
      ),
    },
  ];
  const num = (s: string, what: string): number => {
    const n = Number(s);
    if (s.trim() === '' || !Number.isFinite(n)) throw new Error(`${what} must be a number`);
    return n;
  };
  return (
    <>
      <h1>
        Sorted set <code>{name}</code>
      </h1>
      <form
        class="card"
        aria-labelledby="board-title"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setView(form);
        }}
      >
        <h2 id="board-title">Leaderboard{data ? ` (${plural(data.count, 'member')})` : ''}</h2>
        <div class="row">
          <Field label="By">
            <select id="zset-by" value={form.by} onChange={(e) => setForm({ ...form, by: (e.currentTarget as HTMLSelectElement).value as 'rank' | 'score' })}>
              <option value="rank">rank</option>
              <option value="score">score range</option>
            </select>
          </Field>
          <Field label="Order">
            <select
              id="zset-rev"
              value={form.rev ? 'desc' : 'asc'}
              onChange={(e) => setForm({ ...form, rev: (e.currentTarget as HTMLSelectElement).value === 'desc' })}
            >
              <option value="desc">highest first</option>
              <option value="asc">lowest first</option>
            </select>
          </Field>
          {form.by === 'score' ? (
            <>
              <Field label="Min score (( excludes)">
                <input id="zset-min" size={8} value={form.min} onInput={(e) => setForm({ ...form, min: (e.currentTarget as HTMLInputElement).value })} />
              </Field>
              <Field label="Max score">
                <input id="zset-max" size={8} value={form.max} onInput={(e) => setForm({ ...form, max: (e.currentTarget as HTMLInputElement).value })} />
              </Field>
            </>
          ) : null}
          <button type="submit" class="primary" id="zset-show">
            Show
          </button>
          <button type="button" id="refresh" onClick={refresh}>
            Refresh
          </button>
        </div>
        <Status a={load} />
        <Status a={rowAct} id="member-status" />
        {data === null ? (
          <p id="zset-missing">No sorted set '{name}' exists: adding a member creates it.</p>
        ) : data ? (
          <>
            <DataTable
              id="zset-items"
              caption={`Members of ${name}`}
              columns={cols}
              rows={rows}
              keyOf={(r) => r.member}
              rowAttrs={(r) => ({ 'data-member': r.member })}
              empty="No members here."
            />
            <div class="row pager">
              <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - size))}>
                ← Previous
              </button>
              <span class="muted" id="zset-info">
                {items.length ? `${offset + 1}–${offset + items.length}` : 'none'}
              </span>
              <button type="button" disabled={!more} onClick={() => setOffset(offset + size)}>
                Next →
              </button>
            </div>
          </>
        ) : null}
      </form>
      {data ? <VersionCard db={db} kind="zset" name={name} version={data.version} left={data.left} guard={guard} onChanged={refresh} /> : null}
      <form
        class="card"
        aria-labelledby="zadd-title"
        onSubmit={(e) => {
          e.preventDefault();
          void a.run(async () => {
            const s = num(score, 'the score');
            const r = await db.zadd(name, { [member]: s }, guard.cond());
            refresh();
            return r.added ? `added '${member}' with score ${s}` : `'${member}' now has score ${s}`;
          });
        }}
      >
        <h2 id="zadd-title">Add or score a member</h2>
        <div class="row">
          <Field label="Member">
            <input id="zset-member" required value={member} onInput={(e) => setMember((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Field label="Score, or delta for Increment">
            <input id="zset-score" inputMode="decimal" value={score} onInput={(e) => setScore((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <button type="submit" class="primary" id="zset-add" disabled={a.busy}>
            Set score
          </button>
          <button
            type="button"
            id="zset-incr"
            disabled={a.busy || member === ''}
            onClick={() =>
              void a.run(async () => {
                const s = await db.zincr(name, member, num(score, 'the delta'), guard.cond());
                refresh();
                return `'${member}' now has score ${s}`;
              })
            }
          >
            Increment by it
          </button>
        </div>
        <Status a={a} id="zset-status" />
      </form>
      <form
        class="card"
        aria-labelledby="lookup-title"
        onSubmit={(e) => {
          e.preventDefault();
          void l.run(async () => {
            try {
              const m = await db.zmember(name, lookup);
              setFound(`'${lookup}': score ${m.score}, rank ${m.rank} from the lowest, ${m.rev_rank} from the highest (0 is first)`);
            } catch (err) {
              if (!isNotFound(err)) throw err;
              setFound(`'${lookup}' is not a member`);
            }
          });
        }}
      >
        <h2 id="lookup-title">Find a member</h2>
        <div class="row">
          <Field label="Member">
            <input id="zset-lookup" value={lookup} onInput={(e) => setLookup((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <button type="submit" id="zset-find">
            Find
          </button>
          <span id="zset-found" role="status">
            {found}
          </span>
        </div>
        <Status a={l} />
      </form>
      {data ? (
        <DangerZone
          id="delete-zset"
          label="Delete sorted set"
          hint="Deletes the sorted set with all its members and scores; it cannot be undone."
          question={`Delete sorted set '${name}' with its ${plural(data.count, 'member')}?`}
          act={async () => {
            await deleteCollection(db, 'zset', name, guard.cond());
            location.hash = '#/zsets';
          }}
        />
      ) : null}
      <p>
        <a href="#/zsets">All sorted sets</a>
      </p>
    </>
  );
}
