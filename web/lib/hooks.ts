import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.js';

/** The location hash, kept current. */
export function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = (): void => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/** Calls `f` every `ms` while the component is shown (and once at once when `now`). */
export function useInterval(f: () => void, ms: number, now = false): void {
  const ref = useRef(f);
  ref.current = f;
  useEffect(() => {
    if (now) ref.current();
    const t = window.setInterval(() => ref.current(), ms);
    return () => window.clearInterval(t);
  }, [ms, now]);
}

export interface Action {
  busy: boolean;
  error?: string;
  ok?: string;
  /** Runs `f`; its string result is shown as success, a failure as the server's message. */
  run: (f: () => Promise<string | void>) => Promise<boolean>;
  fail: (err: unknown) => void;
  clear: () => void;
}

/** The state of one action (a button or form): busy, and its own success or error line. */
export function useAction(): Action {
  const [s, set] = useState<{ busy: boolean; error?: string; ok?: string }>({ busy: false });
  const alive = useRef(true);
  useEffect(() => () => void (alive.current = false), []);
  const run = useCallback(async (f: () => Promise<string | void>): Promise<boolean> => {
    set({ busy: true });
    try {
      const ok = await f();
      if (alive.current) set(ok ? { busy: false, ok } : { busy: false });
      return true;
    } catch (err) {
      const error = errorText(err);
      if (alive.current) set({ busy: false, error });
      return false;
    }
  }, []);
  const fail = useCallback((err: unknown) => set({ busy: false, error: errorText(err) }), []);
  const clear = useCallback(() => set({ busy: false }), []);
  return { ...s, run, fail, clear };
}

/**
 * Cursor paging over a server listing: a stack of `after` cursors, one per page seen, so
 * Previous goes back without the server keeping anything.
 */
export interface Cursor<C> {
  after: C | undefined;
  page: number;
  next: (c: C) => void;
  back: () => void;
  reset: () => void;
}
export function useCursor<C>(): Cursor<C> {
  const [stack, setStack] = useState<(C | undefined)[]>([undefined]);
  return {
    after: stack[stack.length - 1],
    page: stack.length,
    next: (c) => setStack((s) => [...s, c]),
    back: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([undefined]),
  };
}
