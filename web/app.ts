/**
 * The Pithos web console: plain DOM and the typed client, no framework. Served by Pithos
 * at /console; talks to the same origin with the token the user signs in with (kept in
 * sessionStorage only). Views are chosen by the hash: #/, #/tables, #/tables/<name>,
 * #/records[/<id>], #/variants[/<name>], #/locks[/<name>], #/txn.
 */
import { type Json, type JsonObject, Pithos, PithosError, type ListItem, type Row, type Wheres } from '../client/index.js';

const TOKEN_KEY = 'pithos-console-token';
let db: Pithos | null = null;
/** Timers of the current view, cleared when the view changes. */
let timers: number[] = [];

// ---------------------------------------------------------------------------------------
// DOM helpers

type Child = Node | string | null | undefined | false;
function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean | ((e: Event) => void)> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v as EventListener);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}
const $ = <T extends HTMLElement>(sel: string, root: ParentNode = document): T => {
  const el = root.querySelector<T>(sel);
  if (!el) throw new Error(`missing ${sel}`);
  return el;
};
function field(label: string, input: HTMLElement): HTMLLabelElement {
  return h('label', {}, label, input);
}
const main = (): HTMLElement => $('#main');

function say(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const box = $('#status');
  box.replaceChildren(h('div', { class: `msg ${kind}` }, text));
  if (kind === 'ok') window.setTimeout(() => box.firstChild?.textContent === text && box.replaceChildren(), 4000);
}
function fail(err: unknown): void {
  if (err instanceof PithosError) {
    if (err.status === 401) {
      signOut('The server refused the token (401). Sign in again.');
      return;
    }
    say(`${err.status || 'network'}: ${err.message}`, 'error');
  } else say(String((err as Error)?.message ?? err), 'error');
}
/** Runs an action, reporting any failure; resolves with undefined on failure. */
async function attempt<T>(f: () => Promise<T>): Promise<T | undefined> {
  try {
    return await f();
  } catch (err) {
    fail(err);
    return undefined;
  }
}

function confirmAction(text: string): Promise<boolean> {
  const dlg = $<HTMLDialogElement>('#confirm');
  $('#confirm-text').textContent = text;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.returnValue = '';
    dlg.showModal();
    $<HTMLButtonElement>('#confirm-cancel').focus();
  });
}

function parseJsonObject(text: string, what: string): JsonObject {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${(err as Error).message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what} must be a JSON object`);
  return v as JsonObject;
}
/** A value typed into a form: JSON when it parses, else the text itself. */
function looseValue(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}
const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
const enc = encodeURIComponent;
const unsupportedNote = (what: string, err: PithosError): HTMLElement =>
  h('p', { class: 'note', role: 'note' }, `This server does not offer ${what} yet (it answered ${err.status} “${err.message}”; it needs a newer Pithos). `,
    'Open an object by its name instead.');

// ---------------------------------------------------------------------------------------
// Sign-in

function signOut(reason?: string): void {
  sessionStorage.removeItem(TOKEN_KEY);
  db = null;
  location.hash = '#/';
  render();
  if (reason) say(reason, 'error');
}

function viewSignIn(): void {
  $('#nav').hidden = true;
  const input = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'current-password', required: true });
  const form = h('form', { class: 'card signin', onsubmit: (e: Event) => {
    e.preventDefault();
    void (async () => {
      const candidate = new Pithos({ url: '', token: input.value });
      try {
        await candidate.health();
      } catch (err) {
        say(err instanceof PithosError && err.status === 401 ? 'Wrong token: the server answered 401.' : `Cannot sign in: ${(err as Error).message}`, 'error');
        input.select();
        return;
      }
      sessionStorage.setItem(TOKEN_KEY, input.value);
      db = candidate;
      $('#status').replaceChildren();
      render();
    })();
  } },
    h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'The Auth-Token of this server. It is kept in this tab only (sessionStorage).'),
    field('Auth token', input),
    h('p', {}, h('button', { class: 'primary', type: 'submit' }, 'Sign in')),
  );
  main().replaceChildren(form);
  input.focus();
}

// ---------------------------------------------------------------------------------------
// Dashboard

function gb(s: unknown): number {
  return typeof s === 'string' ? parseFloat(s) : NaN;
}

function sparkline(title: string, unit: string): { el: HTMLElement; push: (v: number) => void } {
  const points: number[] = [];
  const poly = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', '0 0 300 90');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', title);
  svg.append(poly);
  const last = h('span', { class: 'muted' }, '–');
  const el = h('div', { class: 'chart figure' }, h('div', { class: 'k' }, title, ' ', last), svg);
  return {
    el,
    push(v: number) {
      if (!Number.isFinite(v)) return;
      points.push(v);
      if (points.length > 60) points.shift();
      const max = Math.max(...points);
      const min = Math.min(...points);
      const span = max - min;
      // A flat series draws a flat line across the middle.
      const y = (p: number): number => (span === 0 ? 45 : 85 - ((p - min) / span) * 78);
      // The series fills the width; a single sample is a flat line.
      const xs = points.length === 1 ? [0, 300] : points.map((_, i) => (i / (points.length - 1)) * 300);
      const ys = points.length === 1 ? [y(points[0]!), y(points[0]!)] : points.map(y);
      poly.setAttribute('points', xs.map((x, i) => `${x},${ys[i]}`).join(' '));
      last.textContent = `${+v.toFixed(3)} ${unit}`;
    },
  };
}

/** Sums of the samples of every metric whose name matches, from Prometheus text. */
function metricSum(text: string, re: RegExp): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && re.test(m[1]!)) {
      sum += Number(m[3]);
      found = true;
    }
  }
  return found ? sum : NaN;
}

function viewDashboard(client: Pithos): void {
  const figures = h('div', { class: 'figures', id: 'health' }, h('span', { class: 'muted' }, 'loading…'));
  const disk = sparkline('Disk used', 'GB');
  const space = sparkline('Live data', 'GB');
  const rate = sparkline('Requests', 'per s');
  const latency = sparkline('Mean latency', 'ms');
  const metricsNote = h('div', {});
  main().replaceChildren(
    h('h1', {}, 'Dashboard'),
    h('h2', {}, 'Health'),
    figures,
    h('h2', {}, 'Live'),
    h('div', { class: 'charts' }, disk.el, space.el, rate.el, latency.el),
    metricsNote,
    h('p', { class: 'muted' }, 'Keys: ', h('kbd', {}, '1'), '–', h('kbd', {}, '6'), ' switch sections, ', h('kbd', {}, '/'), ' jumps to the first field.'),
  );
  let metricsOn = true;
  let prev: { t: number; count: number; latSum: number; latCount: number } | undefined;
  const tick = async (): Promise<void> => {
    try {
      const d = await client.health();
      figures.replaceChildren(
        ...Object.entries(d).map(([k, v]) => h('div', { class: 'figure' }, h('div', { class: 'k' }, k.replace(/_/g, ' ')), h('div', { class: 'v', 'data-figure': k }, show(v)))),
      );
      disk.push(gb(d.disk_used));
      space.push(gb(d.space_total));
    } catch (err) {
      fail(err);
    }
    if (!metricsOn) return;
    try {
      const text = await client.metrics();
      const now = performance.now();
      const count = metricSum(text, /^pithos_http_requests_total$/);
      const latSum = metricSum(text, /^pithos_http_request_duration_seconds_sum$/);
      const latCount = metricSum(text, /^pithos_http_request_duration_seconds_count$/);
      if (prev) {
        rate.push(((count - prev.count) / (now - prev.t)) * 1000);
        if (latCount > prev.latCount) latency.push(((latSum - prev.latSum) / (latCount - prev.latCount)) * 1000);
      }
      prev = { t: now, count, latSum, latCount };
    } catch (err) {
      metricsOn = false;
      rate.el.remove();
      latency.el.remove();
      const why = err instanceof PithosError ? `${err.status} “${err.message}”` : String(err);
      metricsNote.replaceChildren(h('p', { class: 'note', id: 'metrics-note' }, `Request-rate and latency charts need GET /metrics (docs/operations.md, Metrics); this server answered ${why}. Disk charts come from /health.`));
    }
  };
  void tick();
  timers.push(window.setInterval(() => void tick(), 2000));
}

// ---------------------------------------------------------------------------------------
// Browsing with the listing API (falls back to "open by name")

const KINDS = {
  tables: { kind: 'table', one: 'table', title: 'Tables' },
  records: { kind: 'record', one: 'record', title: 'Records' },
  variants: { kind: 'variant', one: 'variant', title: 'Variants' },
  locks: { kind: 'lock', one: 'lock', title: 'Locks' },
} as const;
type Section = keyof typeof KINDS;

function viewList(client: Pithos, section: Section): void {
  const k = KINDS[section];
  const openInput = h('input', { id: 'open-name', name: 'name', required: true, placeholder: `${k.one} name` });
  const openForm = h('form', { class: 'card row', onsubmit: (e: Event) => {
    e.preventDefault();
    location.hash = `#/${section}/${enc(openInput.value)}`;
  } }, field(`Open ${k.one} by name`, openInput), h('button', { type: 'submit' }, 'Open'));

  const listBox = h('section', { class: 'card', 'aria-label': `${k.title} list` });
  const prefix = h('input', { id: 'prefix', type: 'search', placeholder: 'prefix' });
  const pageSize = h('select', { id: 'list-limit' }, ...['25', '100', '500'].map((n) => h('option', { value: n }, n)));
  const cursors: (string | undefined)[] = [undefined];
  const load = async (): Promise<void> => {
    const after = cursors[cursors.length - 1];
    try {
      const page = await client.list(k.kind, { prefix: prefix.value || undefined, limit: Number(pageSize.value), ...(after ? { after } : {}) });
      const items = page.items.map((it: ListItem) =>
        h('li', {}, h('a', { href: `#/${section}/${enc(it.name)}` }, it.name), ' ',
          h('span', { class: 'muted' }, [
            it.rows !== undefined ? `${it.rows} row${it.rows === 1 ? '' : 's'}` : '',
            it.held !== undefined ? (it.held ? `held by ${it.holder ?? '?'}` : 'free') : '',
            it.ttl_ms !== null ? `expires in ${Math.round(it.ttl_ms / 1000)} s` : '',
          ].filter(Boolean).join(' · '))));
      const prev = h('button', { type: 'button', onclick: () => { cursors.pop(); void load(); } }, '← Previous');
      prev.disabled = cursors.length <= 1;
      const next = h('button', { type: 'button', onclick: () => { cursors.push(page.next ?? undefined); void load(); } }, 'Next →');
      next.disabled = page.next === null;
      listBox.replaceChildren(
        h('form', { class: 'row', onsubmit: (e: Event) => { e.preventDefault(); cursors.length = 1; void load(); } },
          field('Prefix', prefix), field('Per page', pageSize), h('button', { type: 'submit' }, 'Search')),
        items.length ? h('ul', { class: 'names', id: 'names' }, ...items) : h('p', { class: 'muted' }, 'Nothing here.'),
        h('div', { class: 'row' }, prev, next),
      );
    } catch (err) {
      if (err instanceof PithosError && (err.unsupported || err.status === 404)) listBox.replaceChildren(unsupportedNote('listing', err));
      else fail(err);
    }
  };

  const extra: HTMLElement[] = [];
  if (section === 'tables') {
    const name = h('input', { id: 'new-table', required: true, placeholder: 'users' });
    const ttl = h('input', { id: 'new-table-ttl', type: 'number', min: '0', step: '1', placeholder: '0 = never' });
    extra.push(h('form', { class: 'card row', 'aria-label': 'Create table', onsubmit: (e: Event) => {
      e.preventDefault();
      void attempt(async () => {
        await client.createTable(name.value, ttl.value ? { ttl: Number(ttl.value) } : {});
        say(`table '${name.value}' created`);
        location.hash = `#/tables/${enc(name.value)}`;
      });
    } }, field('New table', name), field('ttl (s)', ttl), h('button', { class: 'primary', type: 'submit' }, 'Create table')));
  }
  main().replaceChildren(h('h1', {}, k.title), openForm, ...extra, listBox);
  void load();
}

// ---------------------------------------------------------------------------------------
// Table view: grid, query builder, insert / patch / delete with confirmation

const OPS = [
  ['=', ''], ['≠', '$ne'], ['>', '$gt'], ['≥', '$gte'], ['<', '$lt'], ['≤', '$lte'], ['in', '$in'], ['not in', '$nin'], ['exists', '$exists'],
] as const;

interface Cond {
  field: HTMLInputElement;
  op: HTMLSelectElement;
  value: HTMLInputElement;
  el: HTMLElement;
}

function viewTable(client: Pithos, name: string): void {
  const conds: Cond[] = [];
  const condBox = h('div', { id: 'conditions' });
  const combinator = h('select', { id: 'combinator' }, h('option', { value: 'and' }, 'all of (and)'), h('option', { value: 'or' }, 'any of ($or)'));
  combinator.addEventListener('change', () => sync());
  const raw = h('textarea', { id: 'wheres', rows: '3', spellcheck: 'false', 'aria-label': 'wheres as JSON' });
  raw.value = '{}';
  let rawEdited = false;
  raw.addEventListener('input', () => (rawEdited = true));
  const orderField = h('input', { id: 'order-field', placeholder: 't_id' });
  const orderDir = h('select', { id: 'order-dir' }, h('option', { value: 'asc' }, 'ascending'), h('option', { value: 'desc' }, 'descending'));
  const pageSize = h('select', { id: 'page-size' }, ...['25', '50', '100', '500'].map((n) => h('option', { value: n }, n)));
  const gridBox = h('div', { id: 'rows' });
  const pager = h('div', { class: 'row', id: 'pager' });
  let page = 0;
  let rows: { id: number; row: Row }[] = [];

  const build = (): Wheres => {
    const parts: Wheres[] = [];
    for (const c of conds) {
      if (!c.field.value) continue;
      const op = c.op.value;
      let v: Json = looseValue(c.value.value);
      if (op === '$exists') v = c.value.value.trim() !== 'false';
      parts.push({ [c.field.value]: op === '' ? (v !== null && typeof v === 'object' && !Array.isArray(v) ? { $eq: v } : v) : { [op]: v } } as Wheres);
    }
    if (parts.length === 0) return {};
    if (combinator.value === 'or' && parts.length > 1) return { $or: parts };
    const out: Wheres = {};
    for (const p of parts) for (const [k, v] of Object.entries(p)) {
      const prev = out[k];
      // Two conditions on one field: merge their operators ({"$gte":1} + {"$lt":9}).
      out[k] = prev !== undefined && typeof prev === 'object' && prev !== null && typeof v === 'object' && v !== null ? { ...(prev as object), ...(v as object) } as Json : v;
    }
    return out;
  };
  const sync = (): void => {
    raw.value = JSON.stringify(build());
    rawEdited = false;
  };
  const addCond = (): void => {
    const c: Cond = {
      field: h('input', { placeholder: 'field (a.b for nested)', 'aria-label': 'field', class: 'cond-field' }),
      op: h('select', { 'aria-label': 'operator', class: 'cond-op' }, ...OPS.map(([label, op]) => h('option', { value: op }, label))),
      value: h('input', { placeholder: 'value (JSON or text)', 'aria-label': 'value', class: 'cond-value' }),
      el: h('div', { class: 'cond' }),
    };
    const remove = h('button', { type: 'button', 'aria-label': 'remove condition', onclick: () => {
      conds.splice(conds.indexOf(c), 1);
      c.el.remove();
      sync();
    } }, '×');
    for (const x of [c.field, c.op, c.value]) x.addEventListener('input', sync);
    c.el.append(c.field, c.op, c.value, remove);
    conds.push(c);
    condBox.append(c.el);
    c.field.focus();
  };

  const currentWheres = (): Wheres => parseJsonObject(rawEdited ? raw.value : JSON.stringify(build()), 'wheres') as Wheres;

  const renderGrid = (): void => {
    const size = Number(pageSize.value);
    const pages = Math.max(1, Math.ceil(rows.length / size));
    if (page >= pages) page = pages - 1;
    const shown = rows.slice(page * size, page * size + size);
    const cols: string[] = [];
    for (const r of shown) for (const c of Object.keys(r.row)) if (!cols.includes(c)) cols.push(c);
    const table = h('table', { class: 'grid', id: 'grid' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 't_id'), ...cols.map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, 'actions'))),
      h('tbody', {}, ...shown.map((r) => h('tr', { 'data-t-id': String(r.id) },
        h('td', { class: 't-id' }, String(r.id)),
        ...cols.map((c) => {
          const v = r.row[c];
          return h('td', { class: typeof v === 'string' ? '' : 'json', title: v === undefined ? '' : show(v) }, v === undefined ? '' : show(v));
        }),
        h('td', {},
          h('button', { type: 'button', class: 'edit-row', onclick: () => void editRow(r.id) }, 'Edit'), ' ',
          h('button', { type: 'button', class: 'delete-row', onclick: () => void deleteRow(r.id, r.row) }, 'Delete')),
      ))),
    );
    gridBox.replaceChildren(rows.length ? h('div', { class: 'gridwrap' }, table) : h('p', { class: 'muted', id: 'no-rows' }, 'No rows match.'));
    const prev = h('button', { type: 'button', onclick: () => { page--; renderGrid(); } }, '← Previous');
    prev.disabled = page === 0;
    const next = h('button', { type: 'button', onclick: () => { page++; renderGrid(); } }, 'Next →');
    next.disabled = page >= pages - 1;
    pager.replaceChildren(prev, h('span', { id: 'page-info' }, `page ${page + 1} of ${pages} · ${rows.length} row${rows.length === 1 ? '' : 's'}`), next);
  };

  const sortRows = (): void => {
    const f = orderField.value.trim();
    if (!f || f === 't_id') {
      if (orderDir.value === 'desc') rows.reverse();
      return;
    }
    const dir = orderDir.value === 'desc' ? -1 : 1;
    const get = (r: Row): unknown => f.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), r);
    rows.sort((a, b) => {
      const x = get(a.row);
      const y = get(b.row);
      if (x === undefined) return y === undefined ? 0 : 1; // missing sorts last
      if (y === undefined) return -1;
      if (typeof x === 'number' && typeof y === 'number') return (x - y) * dir;
      return String(show(x)).localeCompare(String(show(y))) * dir;
    });
  };

  /**
   * Rows with their t_id: the whole table when the query is empty (GET /tables/<name>), else
   * the matching rows (POST /query with with_ids). The t_id is what Edit and Delete act on, so
   * they touch exactly the row shown, even when other rows are equal to it. Ordering and
   * paging happen here, over the whole answer.
   */
  const run = async (): Promise<void> => {
    let wheres: Wheres;
    try {
      wheres = currentWheres();
    } catch (err) {
      return fail(err);
    }
    try {
      if (Object.keys(wheres).length === 0) {
        const all = await client.getTable(name);
        rows = Object.entries(all).map(([id, row]) => ({ id: Number(id), row }));
      } else {
        rows = (await client.queryRowsWithIds(name, wheres)).map((r) => ({ id: r.t_id, row: r.row }));
      }
      sortRows();
      renderGrid();
      if (orSupport === undefined && rows.length > 0) void probeOr();
    } catch (err) {
      if (err instanceof PithosError && err.status === 404) {
        main().replaceChildren(h('h1', {}, `Table ${name}`), h('p', { class: 'note' }, err.message), h('p', {}, h('a', { href: '#/tables' }, 'Back to tables')));
        return;
      }
      fail(err);
    }
  };

  /**
   * Combinators came after the first contract. A part-one server reads {"$or": [...]} as a field
   * named "$or" and silently matches nothing, so ask once: {"$or": [{}]} matches every
   * row where $or is understood and none where it is not (the table has rows here).
   */
  let orSupport: boolean | undefined;
  const orNote = h('p', { class: 'note', id: 'or-note', hidden: true },
    'This server does not understand $or/$and/$not (it needs a newer Pithos): “any of” is off; conditions are combined with “all of”.');
  const probeOr = async (): Promise<void> => {
    try {
      orSupport = (await client.queryRows(name, { $or: [{}] }, { limit: 1 })).length > 0;
    } catch {
      orSupport = false;
    }
    const any = combinator.querySelector<HTMLOptionElement>('option[value=or]')!;
    any.disabled = !orSupport;
    if (!orSupport && combinator.value === 'or') {
      combinator.value = 'and';
      sync();
    }
    orNote.hidden = orSupport;
  };

  const countMatching = async (wheres: Wheres): Promise<number> => (await client.queryRows(name, wheres)).length;

  /** Deletes the one row shown (DELETE /tables/<name>/rows/<t_id>), never others equal to it. */
  const deleteRow = async (id: number, row: Row): Promise<void> => {
    await attempt(async () => {
      if (!(await confirmAction(`Delete row ${id} (${JSON.stringify(row)}) from '${name}'?`))) return;
      await client.deleteRow(name, id);
      say(`row ${id} deleted`);
      await run();
    });
  };

  const editor = h('section', { class: 'card', id: 'row-editor', hidden: true });
  /**
   * Edits one row by its t_id: the row is read with its version, and Save sends the changed
   * and added fields as `sets` and the removed ones as `unset`, on the condition that the
   * row is still that version (PATCH /tables/<name>/rows/<t_id> with If-Match), so a
   * change made meanwhile by someone else is never overwritten unseen.
   */
  const editRow = (id: number): Promise<void> => attempt(async () => {
    const { value: row, version } = await client.getRowVersioned(name, id);
    const text = h('textarea', { id: 'row-json', rows: '8', spellcheck: 'false', 'aria-label': 'row as JSON' });
    text.value = JSON.stringify(row, null, 2);
    editor.hidden = false;
    editor.replaceChildren(
      h('h2', {}, `Edit row ${id}`),
      h('p', { class: 'muted' }, 'Saving writes the fields you changed or added and removes the fields you deleted, in this row only; if the row changed since it was opened here, nothing is written.'),
      text,
      h('div', { class: 'row' },
        h('button', { type: 'button', class: 'primary', id: 'save-row', onclick: () => void attempt(async () => {
          const next = parseJsonObject(text.value, 'the row');
          const sets: JsonObject = {};
          for (const [k, v] of Object.entries(next)) if (!Object.hasOwn(row, k) || JSON.stringify(row[k]) !== JSON.stringify(v)) sets[k] = v;
          const unset = Object.keys(row).filter((k) => !Object.hasOwn(next, k));
          if (Object.keys(sets).length === 0 && unset.length === 0) return say('nothing changed');
          const what = [Object.keys(sets).length > 0 ? `set ${JSON.stringify(sets)}` : '', unset.length > 0 ? `remove ${unset.join(', ')}` : ''].filter((x) => x).join(' and ');
          if (!(await confirmAction(`Patch row ${id} of '${name}': ${what}?`))) return;
          await client.patchRow(name, id, sets, unset.length > 0 ? { unset, ifVersion: version } : { ifVersion: version });
          editor.hidden = true;
          say(`row ${id} patched`);
          await run();
        }) }, 'Save'),
        h('button', { type: 'button', onclick: () => { editor.hidden = true; } }, 'Cancel')),
    );
    text.focus();
  });

  const insertText = h('textarea', { id: 'insert-json', rows: '3', spellcheck: 'false', 'aria-label': 'new row as JSON' });
  insertText.value = '{}';
  const setsText = h('textarea', { id: 'sets-json', rows: '2', spellcheck: 'false', 'aria-label': 'sets as JSON' });
  setsText.value = '{}';

  main().replaceChildren(
    h('h1', {}, 'Table ', h('code', {}, name)),
    h('form', { class: 'card', 'aria-label': 'Query', onsubmit: (e: Event) => { e.preventDefault(); page = 0; void run(); } },
      h('h2', {}, 'Query'),
      h('div', { class: 'row' }, field('Match', combinator), h('button', { type: 'button', id: 'add-condition', onclick: addCond }, '+ Condition')),
      condBox,
      orNote,
      field('wheres (JSON, editable)', raw),
      h('div', { class: 'row' }, field('Order by', orderField), field('Direction', orderDir), field('Rows per page', pageSize),
        h('button', { type: 'submit', class: 'primary', id: 'run-query' }, 'Run query')),
    ),
    h('div', { class: 'row' }, h('h2', {}, 'Rows'), pager),
    gridBox,
    editor,
    h('form', { class: 'card', 'aria-label': 'Insert row', onsubmit: (e: Event) => {
      e.preventDefault();
      void attempt(async () => {
        const sent = insertText.value;
        const { t_id } = await client.insertRow(name, parseJsonObject(sent, 'the row'));
        say(`row inserted, t_id ${t_id}`);
        if (insertText.value === sent) insertText.value = '{}'; // keep what was typed meanwhile
        await run();
      });
    } }, h('h2', {}, 'Insert row'), insertText, h('button', { type: 'submit', class: 'primary', id: 'insert-row' }, 'Insert')),
    h('form', { class: 'card', 'aria-label': 'Change matching rows', onsubmit: (e: Event) => e.preventDefault() },
      h('h2', {}, 'Change every row matching the query'),
      field('sets (JSON)', setsText),
      h('div', { class: 'row' },
        h('button', { type: 'button', id: 'patch-matching', onclick: () => void attempt(async () => {
          const wheres = currentWheres();
          const sets = parseJsonObject(setsText.value, 'sets');
          const n = await countMatching(wheres);
          if (!(await confirmAction(`Patch ${n} row${n === 1 ? '' : 's'} matching ${JSON.stringify(wheres)} with ${JSON.stringify(sets)}?`))) return;
          await client.patchRows(name, wheres, sets);
          say(`${n} row${n === 1 ? '' : 's'} patched`);
          await run();
        }) }, 'Patch matching rows'),
        h('button', { type: 'button', class: 'danger', id: 'delete-matching', onclick: () => void attempt(async () => {
          const wheres = currentWheres();
          const n = await countMatching(wheres);
          if (!(await confirmAction(`Delete ${n} row${n === 1 ? '' : 's'} matching ${JSON.stringify(wheres)}?`))) return;
          await client.deleteRows(name, wheres);
          say(`${n} row${n === 1 ? '' : 's'} deleted`);
          await run();
        }) }, 'Delete matching rows'),
        h('button', { type: 'button', class: 'danger', id: 'drop-table', onclick: () => void attempt(async () => {
          if (!(await confirmAction(`Drop table '${name}' with all its rows?`))) return;
          await client.dropTable(name);
          say(`table '${name}' dropped`);
          location.hash = '#/tables';
        }) }, 'Drop table'),
      ),
    ),
  );
  void run();
}

// ---------------------------------------------------------------------------------------
// Record view: JSON editor with a conditional save

async function viewRecord(client: Pithos, id: string): Promise<void> {
  const text = h('textarea', { id: 'record-json', rows: '16', spellcheck: 'false', 'aria-label': 'record as JSON' });
  const info = h('p', { class: 'muted', id: 'record-info' });
  let version: number | undefined;
  let exists = true;
  const load = async (): Promise<void> => {
    try {
      const r = await client.getRecordVersioned(id);
      text.value = JSON.stringify(r.value, null, 2);
      version = r.version;
      exists = true;
      info.textContent = version === undefined ? 'This server sends no version (ETag): saving replaces the record unconditionally.' : `version ${version}: saving sends If-Match, so a concurrent change is refused (412).`;
    } catch (err) {
      if (err instanceof PithosError && err.status === 404) {
        exists = false;
        version = undefined;
        text.value = '{}';
        info.textContent = `No record '${id}' exists: saving creates it.`;
      } else fail(err);
    }
  };
  const save = (): Promise<unknown> => attempt(async () => {
    const record = parseJsonObject(text.value, 'the record');
    const headers: Record<string, string> = version !== undefined ? { 'If-Match': `"${version}"` } : {};
    await client.call('putRecord', [id], { body: { record }, headers });
    say(exists ? `record '${id}' saved` : `record '${id}' created`);
    await load();
  });
  main().replaceChildren(
    h('h1', {}, 'Record ', h('code', {}, id)),
    h('section', { class: 'card' },
      info,
      text,
      h('div', { class: 'row' },
        h('button', { type: 'button', class: 'primary', id: 'save-record', onclick: () => void save() }, 'Save'),
        h('button', { type: 'button', id: 'reload-record', onclick: () => { $('#status').replaceChildren(); void load(); } }, 'Reload'),
        h('button', { type: 'button', class: 'danger', id: 'delete-record', onclick: () => void attempt(async () => {
          if (!(await confirmAction(`Delete record '${id}'?`))) return;
          await client.deleteRecord(id);
          say(`record '${id}' deleted`);
          location.hash = '#/records';
        }) }, 'Delete')),
      h('p', { class: 'muted' }, h('kbd', {}, 'Ctrl'), '+', h('kbd', {}, 'Enter'), ' in the editor saves.'),
    ),
  );
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void save();
    }
  });
  await load();
}

// ---------------------------------------------------------------------------------------
// Variant view

async function viewVariant(client: Pithos, name: string): Promise<void> {
  const value = h('div', { class: 'big', id: 'variant-value' }, '…');
  const delta = h('input', { id: 'delta', type: 'number', step: 'any', value: '1' });
  const setText = h('input', { id: 'variant-set', placeholder: '42, 1.5, true or text' });
  const load = async (): Promise<void> => {
    try {
      const v = await client.getVariant(name);
      value.textContent = show(v);
      setText.value = JSON.stringify(v);
    } catch (err) {
      if (err instanceof PithosError && err.status === 404) value.textContent = '(does not exist)';
      else fail(err);
    }
  };
  main().replaceChildren(
    h('h1', {}, 'Variant ', h('code', {}, name)),
    h('section', { class: 'card' }, value),
    h('form', { class: 'card row', 'aria-label': 'Increment', onsubmit: (e: Event) => {
      e.preventDefault();
      void attempt(async () => {
        value.textContent = show(await client.incr(name, Number(delta.value)));
      });
    } }, field('Delta', delta), h('button', { type: 'submit', class: 'primary', id: 'incr' }, 'Increment')),
    h('form', { class: 'card row', 'aria-label': 'Set value', onsubmit: (e: Event) => {
      e.preventDefault();
      void attempt(async () => {
        const v = looseValue(setText.value);
        if (v === null || typeof v === 'object') throw new Error('a variant is a string, boolean or number');
        await client.putVariant(name, v);
        await load();
        say(`variant '${name}' set`);
      });
    } }, field('Value', setText), h('button', { type: 'submit', id: 'set-variant' }, 'Set'),
      h('button', { type: 'button', class: 'danger', id: 'delete-variant', onclick: () => void attempt(async () => {
        if (!(await confirmAction(`Delete variant '${name}'?`))) return;
        await client.deleteVariant(name);
        say(`variant '${name}' deleted`);
        await load();
      }) }, 'Delete')),
  );
  await load();
}

// ---------------------------------------------------------------------------------------
// Lock view: holder and a live lease countdown

async function viewLock(client: Pithos, name: string): Promise<void> {
  const state = h('div', { id: 'lock-state' }, '…');
  const ttl = h('input', { id: 'lock-ttl', type: 'number', min: '1', step: '1', value: '30' });
  const holder = h('input', { id: 'lock-holder', placeholder: 'console' });
  const token = h('input', { id: 'lock-token', placeholder: 'token from acquire', size: '40' });
  let expiresAt = 0;
  const countdown = h('span', { class: 'big', id: 'lock-countdown' });
  const load = async (): Promise<void> => {
    try {
      const s = await client.getLock(name);
      expiresAt = performance.now() + s.expires_in_ms;
      state.replaceChildren(
        h('p', {}, 'Held by ', h('strong', { id: 'lock-holder-name' }, s.holder ?? '(no name)'), ` · fence ${s.fence} · lease ${s.ttl} s · acquired ${s.acquired_at}`),
        h('p', {}, 'Expires in ', countdown),
      );
    } catch (err) {
      if (err instanceof PithosError && err.status === 404) {
        expiresAt = 0;
        state.replaceChildren(h('p', { id: 'lock-free' }, 'Not held.'));
      } else fail(err);
    }
  };
  timers.push(window.setInterval(() => {
    if (expiresAt === 0) return;
    const left = expiresAt - performance.now();
    countdown.textContent = `${Math.max(0, left / 1000).toFixed(1)} s`;
    if (left <= 0) {
      expiresAt = 0;
      void load();
    }
  }, 100));
  const grant = (g: { token: string; fence: number }): void => {
    token.value = g.token;
    say(`token ${g.token}, fence ${g.fence}`);
  };
  main().replaceChildren(
    h('h1', {}, 'Lock ', h('code', {}, name)),
    h('section', { class: 'card' }, state),
    h('form', { class: 'card row', 'aria-label': 'Acquire', onsubmit: (e: Event) => {
      e.preventDefault();
      void attempt(async () => {
        grant(await client.acquireLock(name, Number(ttl.value), holder.value || undefined));
        await load();
      });
    } }, field('Lease (s)', ttl), field('Holder', holder), h('button', { type: 'submit', class: 'primary', id: 'acquire' }, 'Acquire')),
    h('form', { class: 'card row', 'aria-label': 'Renew or release', onsubmit: (e: Event) => e.preventDefault() },
      field('Token', token),
      h('button', { type: 'button', id: 'renew', onclick: () => void attempt(async () => { grant(await client.renewLock(name, token.value, Number(ttl.value))); await load(); }) }, 'Renew'),
      h('button', { type: 'button', class: 'danger', id: 'release', onclick: () => void attempt(async () => {
        await client.releaseLock(name, token.value);
        say(`lock '${name}' released`);
        await load();
      }) }, 'Release')),
  );
  await load();
}

// ---------------------------------------------------------------------------------------
// Transaction composer

const TEMPLATES: Record<string, JsonObject> = {
  'table INSERT': { name: 'users', operation: 'INSERT', values: { name: 'ann' } },
  'table UPDATE': { name: 'users', operation: 'UPDATE', where: { name: 'ann' }, values: { age: 32 } },
  'table REMOVE': { name: 'users', operation: 'REMOVE', where: { name: 'ann' } },
  'table UPDATE by t_id': { name: 'users', operation: 'UPDATE', t_id: 1, values: { age: 32 } },
  'table REMOVE by t_id': { name: 'users', operation: 'REMOVE', t_id: 1 },
  'table REPLACE': { name: 'users', operation: 'REPLACE', t_id: 1, values: { name: 'ann' } },
  'variant ADD': { kind: 'variant', name: 'counter', operation: 'ADD', delta: 1 },
  'variant SET': { kind: 'variant', name: 'counter', operation: 'SET', variant: 0 },
  'record PUT': { kind: 'record', name: 'doc', operation: 'PUT', values: { ok: true } },
  'record DELETE': { kind: 'record', name: 'doc', operation: 'DELETE' },
  'check: variant value': { kind: 'variant', name: 'counter', value: { $gte: 0 } },
  'check: record exists': { kind: 'record', name: 'doc', exists: true },
  'check: table row count': { kind: 'table', name: 'users', where: {}, count: { $lt: 1000 } },
};

function viewTxn(client: Pithos): void {
  const text = h('textarea', { id: 'txn-json', rows: '16', spellcheck: 'false', 'aria-label': 'transaction as JSON' });
  text.value = JSON.stringify({ mutations: [], checks: [] }, null, 2);
  const pick = h('select', { id: 'txn-template' }, ...Object.keys(TEMPLATES).map((k) => h('option', { value: k }, k)));
  const result = h('div', { id: 'txn-result' });
  main().replaceChildren(
    h('h1', {}, 'Transaction'),
    h('p', { class: 'muted' }, 'POST /txns: every mutation applies, in order, or none does; checks are read before the first mutation.'),
    h('section', { class: 'card' },
      h('div', { class: 'row' }, field('Add', pick), h('button', { type: 'button', id: 'txn-add', onclick: () => void attempt(async () => {
        const t = parseJsonObject(text.value, 'the transaction');
        const key = pick.value;
        const list = key.startsWith('check') ? 'checks' : 'mutations';
        const arr = Array.isArray(t[list]) ? (t[list] as Json[]) : [];
        arr.push(structuredClone(TEMPLATES[key]!));
        t[list] = arr;
        text.value = JSON.stringify(t, null, 2);
      }) }, 'Add to transaction')),
      text,
      h('div', { class: 'row' }, h('button', { type: 'button', class: 'primary', id: 'txn-run', onclick: () => void (async () => {
        let t: JsonObject;
        try {
          t = parseJsonObject(text.value, 'the transaction');
        } catch (err) {
          return fail(err);
        }
        try {
          const r = await client.call<{ results: Json[] }>('txn', [], { body: t });
          result.replaceChildren(h('p', {}, r.message), h('pre', {}, r.data.results.map((x, i) => `${i}: ${JSON.stringify(x)}`).join('\n')));
        } catch (err) {
          if (err instanceof PithosError && err.unsupported) result.replaceChildren(unsupportedNote('transactions (POST /txns)', err));
          else if (err instanceof PithosError) result.replaceChildren(h('p', { class: 'note' }, `${err.status}: ${err.message} — nothing was changed.`));
          else fail(err);
        }
      })() }, 'Run transaction')),
      result,
    ),
  );
}

// ---------------------------------------------------------------------------------------
// Routing

function render(): void {
  for (const t of timers) clearInterval(t);
  timers = [];
  if (!db) {
    const t = sessionStorage.getItem(TOKEN_KEY);
    if (t) db = new Pithos({ url: '', token: t });
  }
  if (!db) return viewSignIn();
  const nav = $('#nav');
  nav.hidden = false;
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  const section = parts[0] ?? '';
  let name: string | undefined;
  try {
    name = parts[1] ? decodeURIComponent(parts.slice(1).join('/')) : undefined;
  } catch {
    name = undefined;
  }
  for (const a of nav.querySelectorAll('a')) {
    const target = a.getAttribute('href')!.slice(2);
    if (target === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const client = db;
  if (section === 'tables' && name !== undefined) viewTable(client, name);
  else if (section === 'records' && name !== undefined) void viewRecord(client, name);
  else if (section === 'variants' && name !== undefined) void viewVariant(client, name);
  else if (section === 'locks' && name !== undefined) void viewLock(client, name);
  else if (section in KINDS) viewList(client, section as Section);
  else if (section === 'txn') viewTxn(client);
  else viewDashboard(client);
}

window.addEventListener('hashchange', () => {
  $('#status').replaceChildren();
  render();
  $('#main').focus({ preventScroll: true });
});
$('#signout').addEventListener('click', () => signOut());
document.addEventListener('keydown', (e) => {
  const t = e.target as HTMLElement;
  if (e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) || !db) return;
  const link = document.querySelector<HTMLAnchorElement>(`#nav a[data-key="${e.key}"]`);
  if (link) {
    e.preventDefault();
    location.hash = link.getAttribute('href')!;
  } else if (e.key === '/') {
    const first = document.querySelector<HTMLElement>('#main input, #main textarea');
    if (first) {
      e.preventDefault();
      first.focus();
    }
  }
});
render();
