/**
 * The live change feed: follows GET /watch (Server-Sent Events read with fetch, since
 * EventSource cannot send Auth-Token) with kind and prefix filters. Pause stops reading;
 * Resume reconnects with Last-Event-ID, so the server replays what happened meanwhile.
 * A dropped connection (a server restart, an overflow) is resumed the same way. A `reset`
 * or `overflow` from the server is said in words.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Kind, type Pithos, PithosError, type WatchEvent, parseSSE } from '../../client/index.js';
import { Field } from '../components/Field.js';
import { CONSOLE_HEADER, errorText } from '../lib/api.js';
import { FEED_KINDS, objectHref } from '../lib/kinds.js';

const KEEP = 500;

interface Shown {
  seq: number;
  id?: string;
  event: string;
  kind: string;
  name: string;
  tId?: number;
  version?: number;
  op?: string;
  value?: unknown;
  hasValue: boolean;
  at: string;
}

interface Filters {
  kinds: Kind[];
  prefix: string;
  values: boolean;
}

let seq = 0;

/** An event's object as a link to its view (a table's for a row event), so a change can be looked at from here. */
function Named({ kind, name }: { kind: string; name: string }) {
  const href = objectHref(kind, name);
  return href ? <a href={href}>{name}</a> : <>{name}</>;
}

export function Feed({ db }: { db: Pithos }) {
  const [form, setForm] = useState<Filters>({ kinds: [], prefix: '', values: true });
  const [filters, setFilters] = useState<Filters>(form);
  const [paused, setPaused] = useState(false);
  const [events, setEvents] = useState<Shown[]>([]);
  const [state, setState] = useState('connecting…');
  const [notices, setNotices] = useState<{ seq: number; text: string; kind: 'warn' | 'info' }[]>([]);
  const lastId = useRef<string | undefined>(undefined);
  const [shownLast, setShownLast] = useState<string | undefined>(undefined);

  const notice = (text: string, kind: 'warn' | 'info' = 'warn'): void =>
    setNotices((n) => [{ seq: ++seq, text: `${new Date().toLocaleTimeString()}: ${text}`, kind }, ...n].slice(0, 20));

  useEffect(() => {
    if (paused) {
      setState(`paused after event ${lastId.current ?? '(none yet)'}; Resume replays what happened meanwhile`);
      return;
    }
    const ac = new AbortController();
    let stopped = false;
    const follow = async (): Promise<void> => {
      let delay = 500;
      while (!stopped) {
        try {
          const from = lastId.current;
          const q = new URLSearchParams();
          for (const k of filters.kinds) q.append('kind', k);
          if (filters.prefix) q.set('prefix', filters.prefix);
          if (filters.values) q.set('values', 'true');
          const headers: Record<string, string> = { Accept: 'text/event-stream', [CONSOLE_HEADER]: '1' };
          if (db.token !== undefined) headers['Auth-Token'] = db.token;
          if (from !== undefined) headers['Last-Event-ID'] = from;
          const res = await fetch(`/watch${q.size ? `?${q.toString()}` : ''}`, { headers, signal: ac.signal });
          if (!res.ok || res.body === null) {
            const text = await res.text();
            let message = text.slice(0, 300);
            try {
              message = (JSON.parse(text) as { message: string }).message;
            } catch {
              // not the JSON envelope: the text itself is shown
            }
            throw new PithosError(res.status, message, 'GET', '/watch');
          }
          delay = 500;
          setState(from !== undefined ? `following; resumed after event ${from}` : 'following');
          for await (const ev of parseSSE(res.body)) take(ev);
          if (stopped) return;
          setState('the server ended the stream; resuming…');
        } catch (err) {
          if (stopped) return;
          setState(`not connected (${errorText(err)}); retrying in ${Math.round(delay / 1000)} s`);
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 8000);
      }
    };
    const take = (ev: WatchEvent): void => {
      // Events already read from a stream this effect has closed belong to the old filters.
      if (stopped) return;
      if (ev.id !== undefined) {
        lastId.current = ev.id;
        setShownLast(ev.id);
      }
      const d = (ev.data ?? {}) as Record<string, unknown>;
      if (ev.event === 'reset') {
        notice(
          `reset: the server could not replay from event ${String(lastId.current)} (its log no longer holds those changes). Re-read what you need; the feed continues from version ${String(d.version)}.`,
        );
        return;
      }
      if (ev.event === 'overflow') {
        notice(
          `overflow: the server ended the stream because this page fell more than 1 MiB behind (${String(d.reason ?? 'no reason given')}). Resuming from event ${String(lastId.current)}.`,
        );
        return;
      }
      const s: Shown = {
        seq: ++seq,
        event: ev.event,
        kind: String(d.kind ?? ''),
        name: String(d.name ?? ''),
        hasValue: Object.hasOwn(d, 'value'),
        value: d.value,
        at: new Date().toLocaleTimeString(),
        ...(ev.id !== undefined ? { id: ev.id } : {}),
        ...(typeof d.t_id === 'number' ? { tId: d.t_id } : {}),
        ...(typeof d.version === 'number' ? { version: d.version } : {}),
        ...(typeof d.op === 'string' ? { op: d.op } : {}),
      };
      setEvents((e) => [s, ...e].slice(0, KEEP));
    };
    setState('connecting…');
    void follow();
    return () => {
      stopped = true;
      ac.abort();
    };
  }, [db, filters, paused]);

  const toggle = (k: Kind): void => setForm((f) => ({ ...f, kinds: f.kinds.includes(k) ? f.kinds.filter((x) => x !== k) : [...f.kinds, k] }));
  return (
    <>
      <h1>Change feed</h1>
      <form
        class="card"
        aria-labelledby="filters-title"
        onSubmit={(e) => {
          e.preventDefault();
          // New filters start a new stream from now: resuming is only exact with the same filters.
          lastId.current = undefined;
          setShownLast(undefined);
          setEvents([]);
          setPaused(false);
          // Not "following" until the stream with these filters answers: the one it replaces
          // is still open until the next render's effect closes it.
          setState('connecting…');
          setFilters({ ...form });
        }}
      >
        <h2 id="filters-title">Filters</h2>
        <fieldset class="kinds">
          <legend>Kinds (none ticked: all)</legend>
          {FEED_KINDS.map((k) => (
            <label class="check-label" key={k}>
              <input type="checkbox" name="kind" value={k} checked={form.kinds.includes(k)} onChange={() => toggle(k)} /> {k}
            </label>
          ))}
        </fieldset>
        <div class="row">
          <Field label="Name prefix">
            <input id="feed-prefix" value={form.prefix} onInput={(e) => setForm({ ...form, prefix: (e.currentTarget as HTMLInputElement).value })} />
          </Field>
          <label class="check-label">
            <input type="checkbox" id="feed-values" checked={form.values} onChange={() => setForm({ ...form, values: !form.values })} /> with values
          </label>
          <button type="submit" class="primary" id="feed-apply">
            Apply filters
          </button>
        </div>
      </form>
      <section class="card" aria-labelledby="events-title">
        <div class="row spread">
          <h2 id="events-title">Events</h2>
          <div class="row">
            <button type="button" id="feed-pause" aria-pressed={paused} onClick={() => setPaused(!paused)}>
              {paused ? 'Resume' : 'Pause'}
            </button>
            <button type="button" onClick={() => setEvents([])}>
              Clear
            </button>
          </div>
        </div>
        <p id="feed-state" role="status">
          {state}
          {shownLast !== undefined ? ` · last event id ${shownLast}` : ''}
        </p>
        {notices.map((n) => (
          <p key={n.seq} class={n.kind === 'warn' ? 'note feed-notice' : 'muted feed-notice'} role="alert">
            {n.text}
          </p>
        ))}
        {events.length === 0 ? (
          <p class="muted" id="feed-empty">
            No events yet. Changes to matching objects appear here as they are made.
          </p>
        ) : (
          <div class="gridwrap" tabIndex={0} role="region" aria-label="Events, newest first">
            <table class="grid stack" id="feed-events">
              <caption class="sr-only">Events, newest first</caption>
              <thead>
                <tr>
                  <th scope="col" class="num">
                    id
                  </th>
                  <th scope="col">event</th>
                  <th scope="col">kind</th>
                  <th scope="col">name</th>
                  <th scope="col" class="num">
                    version
                  </th>
                  <th scope="col">op</th>
                  <th scope="col">value</th>
                  <th scope="col">seen</th>
                </tr>
              </thead>
              <tbody>
                {events.map((e) => (
                  <tr key={e.seq} data-id={e.id ?? ''} data-name={e.name}>
                    <td data-label="id" class="num">
                      {e.id ?? '—'}
                    </td>
                    <td data-label="event">{e.event}</td>
                    <td data-label="kind">{e.kind}</td>
                    <td data-label="name">
                      <Named kind={e.kind} name={e.name} />
                      {e.tId !== undefined ? ` · row ${e.tId}` : ''}
                    </td>
                    <td data-label="version" class="num">
                      {e.version ?? ''}
                    </td>
                    <td data-label="op">{e.op ?? ''}</td>
                    <td data-label="value" class="code">
                      {e.hasValue ? (
                        <details>
                          <summary>show</summary>
                          <pre>{JSON.stringify(e.value, null, 2)}</pre>
                        </details>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td data-label="seen" class="nowrap muted">
                      {e.at}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
