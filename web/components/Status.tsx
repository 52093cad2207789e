import type { Action } from '../lib/hooks.js';

/** The result of one action, shown next to the control that caused it. */
export function Status({ a, id }: { a: Action; id?: string }) {
  if (a.error)
    return (
      <p class="msg error" role="alert" id={id}>
        {a.error}
      </p>
    );
  if (a.ok)
    return (
      <p class="msg ok" role="status" id={id}>
        {a.ok}
      </p>
    );
  return null;
}
