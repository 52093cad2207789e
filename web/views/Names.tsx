/**
 * The names of one kind, a page at a time through the server's listing (GET /<kind>s with
 * prefix, limit, after), with a form to open one by name and one to create one.
 */
import { useEffect, useState } from 'preact/hooks';
import { type Json, JsonText, type ListItem, type ListPage, type Pithos } from '../../client/index.js';
import { type Column, DataTable, Pager } from '../components/DataTable.js';
import { Field } from '../components/Field.js';
import { parseJson } from '../components/JsonEditor.js';
import { Status } from '../components/Status.js';
import { enc, errorText } from '../lib/api.js';
import { type Section, SECTIONS } from '../lib/kinds.js';
import { duration, plural } from '../lib/format.js';
import { useAction, useCursor, useInterval } from '../lib/hooks.js';
import { type VariantType, literalFor, typeOfLiteral, variantLiteral } from '../lib/variant.js';

export type { Section };

interface Item extends ListItem {
  length?: number;
  /** variants: read one by one for the page shown */
  literal?: string;
  version?: number;
  readError?: string;
}

export function Names({ db, section }: { db: Pithos; section: Section }) {
  const k = SECTIONS[section];
  const [prefix, setPrefix] = useState('');
  const [applied, setApplied] = useState('');
  const [limit, setLimit] = useState(25);
  const cursor = useCursor<string>();
  const [page, setPage] = useState<{ items: Item[]; next: string | null; at: number } | null>(null);
  const [reload, setReload] = useState(0);
  const list = useAction();
  const [now, setNow] = useState(Date.now());

  useEffect(() => {
    void list.run(async () => {
      const p: ListPage = await db.list(k.kind, { prefix: applied || undefined, limit, ...(cursor.after !== undefined ? { after: cursor.after } : {}) });
      let items: Item[] = p.items;
      if (section === 'variants') {
        // The listing has names only: the page shown is read one by one for type, value and version.
        items = await Promise.all(
          p.items.map(async (it): Promise<Item> => {
            try {
              const a = await db.call('getVariant', [it.name]);
              return { ...it, literal: variantLiteral(a.text), ...(a.version !== undefined ? { version: a.version } : {}) };
            } catch (err) {
              return { ...it, readError: errorText(err) };
            }
          }),
        );
      }
      setPage({ items, next: p.next, at: Date.now() });
      setNow(Date.now());
    });
  }, [db, section, applied, limit, cursor.after, reload]);

  // Lifetimes count down between reads (no request: the page's own clock).
  useInterval(() => setNow(Date.now()), 1000);
  const left = (it: Item): string => (it.ttl_ms === null ? 'never' : duration(it.ttl_ms - (now - (page?.at ?? now))));

  const nameCol: Column<Item> = { label: 'name', render: (it) => <a href={`#/${section}/${enc(it.name)}`}>{it.name}</a> };
  const ttlCol: Column<Item> = { label: 'expires in', cls: 'nowrap', render: left };
  const cols: Column<Item>[] = [nameCol];
  if (section === 'tables') cols.push({ label: 'rows', cls: 'num', render: (it) => String(it.rows ?? '') });
  if (section === 'lists') cols.push({ label: 'length', cls: 'num', render: (it) => String(it.length ?? '') });
  if (section === 'sets' || section === 'zsets') cols.push({ label: 'members', cls: 'num', render: (it) => String(it.count ?? '') });
  if (section === 'locks') cols.push({ label: 'holder', render: (it) => it.holder ?? '(no name)' });
  if (section === 'variants') {
    cols.push(
      { label: 'type', render: (it) => (it.literal !== undefined ? typeOfLiteral(it.literal) : (it.readError ?? '')) },
      { label: 'value', cls: 'code', render: (it) => it.literal ?? '', title: (it) => it.literal ?? '' },
      { label: 'version', cls: 'num', render: (it) => (it.version === undefined ? '' : String(it.version)) },
    );
  }
  cols.push(ttlCol);

  return (
    <>
      <h1>{k.title}</h1>
      <OpenForm section={section} one={k.one} />
      <Create db={db} section={section} one={k.one} />
      <section class="card" aria-labelledby="list-title">
        <h2 id="list-title">All {k.title.toLowerCase()}</h2>
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            cursor.reset();
            setApplied(prefix);
            setReload((n) => n + 1);
          }}
        >
          <Field label="Name prefix">
            <input id="prefix" type="search" value={prefix} onInput={(e) => setPrefix((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Field label="Per page">
            <select
              id="list-limit"
              value={String(limit)}
              onChange={(e) => {
                cursor.reset();
                setLimit(Number((e.currentTarget as HTMLSelectElement).value));
              }}
            >
              {[25, 100, 500].map((n) => (
                <option value={String(n)}>{n}</option>
              ))}
            </select>
          </Field>
          <button type="submit">Search</button>
          <button type="button" id="refresh" onClick={() => setReload((n) => n + 1)}>
            Refresh
          </button>
        </form>
        <Status a={list} id="list-status" />
        {page ? (
          <>
            <DataTable
              id="names"
              caption={`${k.title}, page ${cursor.page}`}
              columns={cols}
              rows={page.items}
              keyOf={(it) => it.name}
              rowAttrs={(it) => ({ 'data-name': it.name })}
              empty={applied ? `No ${k.title.toLowerCase()} start with '${applied}'.` : `No ${k.title.toLowerCase()} yet.`}
            />
            <Pager
              page={cursor.page}
              hasNext={page.next !== null}
              onPrev={cursor.back}
              onNext={() => page.next !== null && cursor.next(page.next)}
              info={plural(page.items.length, k.one, section === 'zsets' ? 'sorted sets' : undefined)}
            />
          </>
        ) : null}
      </section>
    </>
  );
}

function OpenForm({ section, one }: { section: Section; one: string }) {
  const [name, setName] = useState('');
  return (
    <form
      class="card row"
      aria-label={`Open a ${one} by name`}
      onSubmit={(e) => {
        e.preventDefault();
        location.hash = `#/${section}/${enc(name)}`;
      }}
    >
      <Field label={`Open ${one} by name`}>
        <input id="open-name" required value={name} onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} />
      </Field>
      <button type="submit">Open</button>
    </form>
  );
}

/** The form that creates one of this kind, then opens it. */
function Create({ db, section, one }: { db: Pithos; section: Section; one: string }) {
  const [name, setName] = useState('');
  const [extra, setExtra] = useState(section === 'lists' ? '[]' : section === 'zsets' ? '{}' : '');
  const [type, setType] = useState<VariantType>('integer');
  const a = useAction();
  if (section === 'locks') return null;
  const go = (): void =>
    void a.run(async () => {
      switch (section) {
        case 'tables':
          await db.createTable(name, extra ? { ttl: Number(extra) } : {});
          break;
        case 'records':
          // Opens the editor on a name that does not exist yet; Save creates it.
          break;
        case 'variants':
          await db.call('putVariant', [name], { body: new JsonText(`{"variant":${literalFor(type, extra)},"if_absent":true}`) });
          break;
        case 'lists': {
          const items = parseJson(extra, 'the items');
          if (!Array.isArray(items)) throw new Error('the items must be a JSON array');
          await db.putList(name, items as Json[], { ifAbsent: true });
          break;
        }
        case 'sets':
          await db.putSet(
            name,
            extra
              .split('\n')
              .map((s) => s.trim())
              .filter((s) => s !== ''),
            { ifAbsent: true },
          );
          break;
        case 'zsets': {
          const z = parseJson(extra, 'the members');
          if (z === null || typeof z !== 'object' || Array.isArray(z)) throw new Error('the members must be a JSON object of member → score');
          await db.putZset(name, z as Record<string, number>, { ifAbsent: true });
          break;
        }
      }
      location.hash = `#/${section}/${enc(name)}`;
    });
  return (
    <form
      class="card"
      aria-label={`New ${one}`}
      onSubmit={(e) => {
        e.preventDefault();
        go();
      }}
    >
      <div class="row">
        <Field label={`New ${one}`}>
          <input id="new-name" required value={name} placeholder="name" onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        {section === 'tables' ? (
          <Field label="ttl (s, empty: never)">
            <input id="new-ttl" type="number" min="1" step="1" value={extra} onInput={(e) => setExtra((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        ) : null}
        {section === 'variants' ? (
          <>
            <Field label="Type">
              <select id="new-type" value={type} onChange={(e) => setType((e.currentTarget as HTMLSelectElement).value as VariantType)}>
                <option value="integer">integer</option>
                <option value="double">double</option>
                <option value="string">string</option>
                <option value="boolean">boolean</option>
              </select>
            </Field>
            <Field label="Value">
              <input id="new-value" value={extra} onInput={(e) => setExtra((e.currentTarget as HTMLInputElement).value)} />
            </Field>
          </>
        ) : null}
        {section === 'lists' ? (
          <Field label="Items (JSON array)">
            <input id="new-items" class="mono" value={extra} onInput={(e) => setExtra((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        ) : null}
        {section === 'zsets' ? (
          <Field label="Members (JSON: member → score)">
            <input id="new-members" class="mono" value={extra} onInput={(e) => setExtra((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        ) : null}
        <button type="submit" class="primary" id="create" disabled={a.busy}>
          {section === 'records' ? 'New record' : `Create ${one}`}
        </button>
      </div>
      {section === 'sets' ? (
        <Field label="Members, one a line" wide>
          <textarea id="new-members" rows={3} value={extra} onInput={(e) => setExtra((e.currentTarget as HTMLTextAreaElement).value)} />
        </Field>
      ) : null}
      <Status a={a} id="create-status" />
    </form>
  );
}
