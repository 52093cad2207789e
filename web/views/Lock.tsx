/**
 * One lock: holder, fence and a countdown to expiry (from the page's clock, no polling),
 * acquire, renew and release. The token from acquire is kept in sessionStorage for this
 * tab, so it survives navigating away and back.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { LockState, Pithos } from '../../client/index.js';
import { Field } from '../components/Field.js';
import { Status } from '../components/Status.js';
import { isNotFound } from '../lib/api.js';
import { duration } from '../lib/format.js';
import { useAction, useInterval } from '../lib/hooks.js';

const tokenKey = (name: string): string => `pithos-console-lock:${name}`;

export function LockView({ db, name }: { db: Pithos; name: string }) {
  const [state, setState] = useState<{ s: LockState; at: number } | null | undefined>(undefined);
  const [ttl, setTtl] = useState('30');
  const [holder, setHolder] = useState('console');
  const [token, setToken] = useState(() => sessionStorage.getItem(tokenKey(name)) ?? '');
  const [now, setNow] = useState(performance.now());
  const load = useAction();
  const a = useAction();
  const read = (): Promise<boolean> =>
    load.run(async () => {
      try {
        setState({ s: await db.getLock(name), at: performance.now() });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setState(null);
      }
    });
  useEffect(() => void read(), [db, name]);
  const left = state ? state.s.expires_in_ms - (now - state.at) : 0;
  const lastRead = useRef(0);
  useInterval(
    () => {
      const t = performance.now();
      setNow(t);
      // Expired by the page's clock: read it again (at most once a second) to see whether it was renewed.
      if (state && state.s.expires_in_ms - (t - state.at) <= 0 && t - lastRead.current > 1000) {
        lastRead.current = t;
        void read();
      }
    },
    state ? 100 : 60_000,
  );
  const keep = (t: string): void => {
    setToken(t);
    if (t) sessionStorage.setItem(tokenKey(name), t);
    else sessionStorage.removeItem(tokenKey(name));
  };
  return (
    <>
      <h1>
        Lock <code>{name}</code>
      </h1>
      <section class="card" aria-label="State" id="lock-state">
        <Status a={load} />
        {state === undefined ? (
          <p class="muted">loading…</p>
        ) : state === null ? (
          <p id="lock-free">Not held.</p>
        ) : (
          <dl class="facts">
            <div>
              <dt>holder</dt>
              <dd id="lock-holder-name">{state.s.holder ?? '(no name)'}</dd>
            </div>
            <div>
              <dt>fence</dt>
              <dd class="num">{state.s.fence}</dd>
            </div>
            <div>
              <dt>lease</dt>
              <dd>{duration(state.s.ttl * 1000)}</dd>
            </div>
            <div>
              <dt>acquired</dt>
              <dd>{state.s.acquired_at}</dd>
            </div>
            <div>
              <dt>expires in</dt>
              <dd class="big nowrap" id="lock-countdown" aria-live="off">
                {left < 60_000 ? `${Math.max(0, left / 1000).toFixed(1)} s` : duration(left)}
              </dd>
            </div>
          </dl>
        )}
      </section>
      <form
        class="card"
        aria-labelledby="acquire-title"
        onSubmit={(e) => {
          e.preventDefault();
          void a.run(async () => {
            const g = await db.acquireLock(name, Number(ttl), holder || undefined);
            keep(g.token);
            await read();
            return `acquired: fence ${g.fence}; the token is kept for this tab`;
          });
        }}
      >
        <h2 id="acquire-title">Acquire, renew, release</h2>
        <div class="row">
          <Field label="Lease (s)">
            <input id="lock-ttl" type="number" min="1" step="1" value={ttl} onInput={(e) => setTtl((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Field label="Holder">
            <input id="lock-holder" value={holder} onInput={(e) => setHolder((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <button type="submit" class="primary" id="acquire" disabled={a.busy}>
            Acquire
          </button>
        </div>
        <div class="row">
          <Field label="Token (kept for this tab)">
            <input id="lock-token" class="mono" size={36} value={token} onInput={(e) => keep((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <button
            type="button"
            id="renew"
            disabled={!token || a.busy}
            onClick={() =>
              void a.run(async () => {
                const g = await db.renewLock(name, token, Number(ttl));
                keep(g.token);
                await read();
                return `renewed for ${ttl} s`;
              })
            }
          >
            Renew
          </button>
          <button
            type="button"
            class="danger"
            id="release"
            disabled={!token || a.busy}
            onClick={() =>
              void a.run(async () => {
                await db.releaseLock(name, token);
                keep('');
                await read();
                return `lock '${name}' released`;
              })
            }
          >
            Release
          </button>
        </div>
        <Status a={a} id="lock-status" />
      </form>
      <p>
        <a href="#/locks">All locks</a>
      </p>
    </>
  );
}
