import { useEffect, useRef, useState } from 'preact/hooks';
import { type Pithos, PithosError } from '../../client/index.js';
import { makeClient } from '../lib/api.js';

export function SignIn({ notice, onSignedIn }: { notice: string; onSignedIn: (token: string, db: Pithos) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(notice);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    const candidate = makeClient(token);
    try {
      await candidate.health();
      onSignedIn(token, candidate);
    } catch (err) {
      setError(err instanceof PithosError && err.status === 401 ? 'Wrong token: the server answered 401.' : `Cannot sign in: ${(err as Error).message}`);
      input.current?.select();
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card signin" onSubmit={(e) => void submit(e)}>
      <h1>Sign in</h1>
      <p class="muted">The Auth-Token of this server. It is kept in this tab only (sessionStorage).</p>
      <label class="field wide">
        <span>Auth token</span>
        <input
          ref={input}
          type="password"
          id="token"
          name="token"
          autocomplete="current-password"
          required
          value={token}
          onInput={(e) => setToken((e.currentTarget as HTMLInputElement).value)}
          aria-describedby="signin-error"
        />
      </label>
      <p>
        <button class="primary" type="submit" disabled={busy}>
          Sign in
        </button>
      </p>
      {error ? (
        <p class="msg error" role="alert" id="signin-error">
          {error}
        </p>
      ) : null}
    </form>
  );
}
