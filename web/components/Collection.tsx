/**
 * What the list, set and sorted-set views share: the version and lifetime read with the
 * object, an opt-in guard that makes every write of the view conditional on that version
 * (`if_version`, as If-Match: a change made meanwhile is refused with 412 instead of acted
 * on), and setting the remaining lifetime (PATCH with only `ttl`).
 *
 * The guard is off by default: a list used as a queue or a set many clients add to changes
 * all the time, and an element write (push, add, incr) does not depend on what was read.
 */
import { useState } from 'preact/hooks';
import type { Pithos } from '../../client/index.js';
import { type Collection, lifeText, setLifetime } from '../lib/api.js';
import { duration } from '../lib/format.js';
import { useAction } from '../lib/hooks.js';
import { Field } from './Field.js';
import { Status } from './Status.js';

export const KIND_WORD: Record<Collection, string> = { list: 'list', set: 'set', zset: 'sorted set' };

export interface Guard {
  on: boolean;
  set: (on: boolean) => void;
  /** The options of a write: the version read while the guard is on, none while it is off. */
  cond: () => { ifVersion?: number };
}

export function useGuard(version: number | undefined): Guard {
  const [on, set] = useState(false);
  return { on, set, cond: () => (on && version !== undefined ? { ifVersion: version } : {}) };
}

export function VersionCard(props: {
  db: Pithos;
  kind: Collection;
  name: string;
  version: number | undefined;
  /** What was left of the lifetime when read, in ms; null: it never expires. */
  left: number | null | undefined;
  guard: Guard;
  onChanged: () => void;
}) {
  const { db, kind, name, version, guard } = props;
  const [ttl, setTtl] = useState('');
  const a = useAction();
  const word = KIND_WORD[kind];
  return (
    <form
      class="card"
      aria-labelledby="version-title"
      onSubmit={(e) => {
        e.preventDefault();
        void a.run(async () => {
          const t = ttl.trim();
          if (!/^\d+$/.test(t)) throw new Error('the lifetime is whole seconds (0: never expires)');
          const n = Number(t);
          await setLifetime(db, kind, name, n, guard.cond());
          setTtl('');
          props.onChanged();
          return n === 0 ? `'${name}' no longer expires` : `'${name}' now expires in ${duration(n * 1000)}`;
        });
      }}
    >
      <h2 id="version-title">Version and lifetime</h2>
      <dl class="facts">
        <div>
          <dt>version</dt>
          <dd id="object-version">{version ?? 'not sent'}</dd>
        </div>
        <div>
          <dt>lifetime (as read)</dt>
          <dd id="object-ttl">{lifeText(props.left)}</dd>
        </div>
      </dl>
      <label class="check-label guard">
        <input
          type="checkbox"
          id="if-match"
          checked={guard.on}
          disabled={version === undefined}
          onChange={(e) => guard.set((e.currentTarget as HTMLInputElement).checked)}
        />
        <span>
          Only if unchanged: every change on this page sends version {version ?? '–'} (If-Match) and is refused (412) if the {word} changed since it was read.
        </span>
      </label>
      <div class="row">
        <Field label="New lifetime (s, 0 = never)">
          <input id="new-ttl" inputMode="numeric" size={10} value={ttl} onInput={(e) => setTtl((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        <button type="submit" id="set-ttl" disabled={a.busy}>
          Set lifetime
        </button>
      </div>
      <Status a={a} id="ttl-status" />
    </form>
  );
}
