/** A composer for POST /txns: templates into a JSON editor, then one result per mutation, or the error (nothing changed). */
import { useState } from 'preact/hooks';
import type { Json, JsonObject, Pithos } from '../../client/index.js';
import { Field } from '../components/Field.js';
import { JsonEditor, parseObject } from '../components/JsonEditor.js';
import { Status } from '../components/Status.js';
import { useAction } from '../lib/hooks.js';

/** Mutation templates by kind, then check templates (their names start with "check"). */
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
  'list PUSH': { kind: 'list', name: 'jobs', operation: 'PUSH', values: ['job-1'], side: 'right' },
  'list POP': { kind: 'list', name: 'jobs', operation: 'POP', side: 'left', count: 1 },
  'set ADD': { kind: 'set', name: 'tags', operation: 'ADD', members: ['red'] },
  'set REMOVE': { kind: 'set', name: 'tags', operation: 'REMOVE', members: ['red'] },
  'zset ADD': { kind: 'zset', name: 'board', operation: 'ADD', members: { ann: 10 }, mode: 'upsert' },
  'zset INCR': { kind: 'zset', name: 'board', operation: 'INCR', member: 'ann', delta: 1 },
  'zset REMOVE': { kind: 'zset', name: 'board', operation: 'REMOVE', members: ['ann'] },
  'check: variant value': { kind: 'variant', name: 'counter', value: { $gte: 0 } },
  'check: record exists': { kind: 'record', name: 'doc', exists: true },
  'check: table row count': { kind: 'table', name: 'users', where: {}, count: { $lt: 1000 } },
  'check: list length': { kind: 'list', name: 'jobs', length: { $gt: 0 } },
  'check: set contains': { kind: 'set', name: 'tags', contains: 'red' },
  'check: set count': { kind: 'set', name: 'tags', count: { $lt: 1000 } },
  'check: zset member score': { kind: 'zset', name: 'board', member: 'ann', score: { $gte: 10 } },
  'check: zset count': { kind: 'zset', name: 'board', count: { $lt: 1000 } },
};
const NAMES = Object.keys(TEMPLATES);

export function Txn({ db }: { db: Pithos }) {
  const [text, setText] = useState(JSON.stringify({ mutations: [], checks: [] }, null, 2));
  const [pick, setPick] = useState(NAMES[0]!);
  const [result, setResult] = useState<{ message: string; results: Json[]; mutations: Json[] } | null>(null);
  const add = useAction();
  const run = useAction();
  return (
    <>
      <h1>Transaction</h1>
      <p class="muted">POST /txns: every mutation applies, in order, or none does; checks are read before the first mutation.</p>
      <section class="card" aria-label="Compose">
        <div class="row">
          <Field label="Template">
            <select id="txn-template" value={pick} onChange={(e) => setPick((e.currentTarget as HTMLSelectElement).value)}>
              <optgroup label="Mutations">
                {NAMES.filter((k) => !k.startsWith('check')).map((k) => (
                  <option value={k}>{k}</option>
                ))}
              </optgroup>
              <optgroup label="Checks">
                {NAMES.filter((k) => k.startsWith('check')).map((k) => (
                  <option value={k}>{k}</option>
                ))}
              </optgroup>
            </select>
          </Field>
          <button
            type="button"
            id="txn-add"
            onClick={() =>
              void add.run(() => {
                const t = parseObject(text, 'the transaction');
                const list = pick.startsWith('check') ? 'checks' : 'mutations';
                const arr = Array.isArray(t[list]) ? (t[list] as Json[]) : [];
                arr.push(structuredClone(TEMPLATES[pick]!));
                t[list] = arr;
                setText(JSON.stringify(t, null, 2));
                return Promise.resolve();
              })
            }
          >
            Add to transaction
          </button>
        </div>
        <Status a={add} />
        <JsonEditor id="txn-json" label="Transaction (JSON)" rows={14} value={text} onInput={setText} />
        <button
          type="button"
          class="primary"
          id="txn-run"
          disabled={run.busy}
          onClick={() =>
            void run.run(async () => {
              setResult(null);
              const t = parseObject(text, 'the transaction');
              const r = await db.call<{ results: Json[] }>('txn', [], { body: t });
              setResult({ message: r.message, results: r.data.results, mutations: Array.isArray(t.mutations) ? t.mutations : [] });
            })
          }
        >
          Run transaction
        </button>
        {run.error ? (
          <p class="msg error" role="alert" id="txn-error">
            {run.error} — nothing was changed.
          </p>
        ) : null}
        {result ? (
          <div id="txn-result">
            <p class="msg ok" role="status">
              {result.message}
            </p>
            <ol class="results" start={0}>
              {result.results.map((x, i) => {
                const m = result.mutations[i] as JsonObject | undefined;
                return (
                  <li key={i}>
                    <code>{m ? `${String(m.kind ?? 'table')} ${String(m.name ?? '')} ${String(m.operation ?? '')}` : `mutation ${i}`}</code> →{' '}
                    <code>{JSON.stringify(x)}</code>
                  </li>
                );
              })}
            </ol>
          </div>
        ) : null}
      </section>
    </>
  );
}
