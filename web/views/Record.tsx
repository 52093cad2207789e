/**
 * One record: a JSON editor; saving sends If-Match with the version read (412 if it changed
 * meanwhile), and the ttl that keeps what is left of the record's lifetime (lib/api.ts keepTtl).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Pithos } from '../../client/index.js';
import { DangerZone } from '../components/Danger.js';
import { JsonEditor, parseObject } from '../components/JsonEditor.js';
import { Status } from '../components/Status.js';
import { isNotFound, keepTtl, lifeLeft, lifeText } from '../lib/api.js';
import { useAction } from '../lib/hooks.js';

export function RecordView({ db, id }: { db: Pithos; id: string }) {
  const [text, setText] = useState('');
  const [state, setState] = useState<{ exists: boolean; version?: number; left?: number | null } | null>(null);
  const load = useAction();
  const a = useAction();
  const read = (): Promise<boolean> =>
    load.run(async () => {
      try {
        const [r, left] = await Promise.all([db.getRecordVersioned(id), lifeLeft(db, 'record', id)]);
        setText(JSON.stringify(r.value, null, 2));
        setState({ exists: true, left, ...(r.version !== undefined ? { version: r.version } : {}) });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setText('{}');
        setState({ exists: false });
      }
    });
  useEffect(() => void read(), [db, id]);
  const save = (): void =>
    void a.run(async () => {
      if (!state) return;
      const record = parseObject(text, 'the record');
      if (state.exists) {
        // putRecord with if_version: refused (412) when someone else changed it since it was read.
        // Its lifetime as it is now, not as read: the page may have been open a while.
        const ttl = keepTtl(await lifeLeft(db, 'record', id));
        await db.putRecord(id, record, { ...(state.version !== undefined ? { ifVersion: state.version } : {}), ...(ttl !== undefined ? { ttl } : {}) });
      } else {
        await db.putRecord(id, record, { ifAbsent: true });
      }
      const was = state.exists;
      await read();
      return was ? `record '${id}' saved` : `record '${id}' created`;
    });
  return (
    <>
      <h1>
        Record <code>{id}</code>
      </h1>
      <section class="card" aria-label="Record editor">
        <p class="muted" id="record-info">
          {state === null
            ? 'loading…'
            : !state.exists
              ? `No record '${id}' exists: saving creates it.`
              : state.version === undefined
                ? 'This server sends no version: saving replaces the record unconditionally.'
                : `Version ${state.version}. Saving sends it (If-Match), so a change made meanwhile is refused (412), not overwritten.`}
        </p>
        {state?.exists ? (
          <p class="muted" id="record-ttl">
            {state.left === null || state.left === undefined
              ? 'It never expires.'
              : `It ${lifeText(state.left)} (as read); saving keeps what is left of that lifetime.`}
          </p>
        ) : null}
        <Status a={load} id="record-load-status" />
        <JsonEditor id="record-json" label="Record (JSON object)" rows={14} value={text} onInput={setText} onSubmit={save} disabled={load.busy} />
        <div class="row">
          <button type="button" class="primary" id="save-record" disabled={a.busy || state === null} onClick={save}>
            {state?.exists === false ? 'Create' : 'Save'}
          </button>
          <button
            type="button"
            id="reload-record"
            onClick={() => {
              a.clear();
              void read();
            }}
          >
            Reload
          </button>
        </div>
        <Status a={a} id="record-status" />
      </section>
      {state?.exists ? (
        <DangerZone
          id="delete-record"
          label="Delete record"
          hint="Deletes the record; it cannot be undone."
          question={`Delete record '${id}'?`}
          act={async () => {
            await db.deleteRecord(id);
            location.hash = '#/records';
          }}
        />
      ) : null}
      <p>
        <a href="#/records">All records</a>
      </p>
    </>
  );
}
