/**
 * One variant, edited in its own type: the value is read from the answer's text (so 1.0
 * stays a double and "42" a string) and written back as JSON text (lib/variant.ts), with
 * the ttl that keeps what is left of its lifetime (lib/api.ts keepTtl).
 */
import { useEffect, useState } from 'preact/hooks';
import { JsonText, type Pithos } from '../../client/index.js';
import { DangerZone } from '../components/Danger.js';
import { Field } from '../components/Field.js';
import { Status } from '../components/Status.js';
import { isNotFound, keepTtl, lifeLeft, lifeText } from '../lib/api.js';
import { useAction } from '../lib/hooks.js';
import { type VariantType, editText, literalFor, typeOfLiteral, variantLiteral } from '../lib/variant.js';

export function VariantView({ db, name }: { db: Pithos; name: string }) {
  const [cur, setCur] = useState<{ lit: string; version?: number; left?: number | null } | null | undefined>(undefined);
  const [type, setType] = useState<VariantType>('integer');
  const [text, setText] = useState('');
  const [delta, setDelta] = useState('1');
  const load = useAction();
  const set = useAction();
  const inc = useAction();
  const read = (): Promise<boolean> =>
    load.run(async () => {
      try {
        const [a, left] = await Promise.all([db.call('getVariant', [name]), lifeLeft(db, 'variant', name)]);
        const lit = variantLiteral(a.text) ?? '';
        setCur({ lit, left, ...(a.version !== undefined ? { version: a.version } : {}) });
        setType(typeOfLiteral(lit));
        setText(editText(lit));
      } catch (err) {
        if (!isNotFound(err)) throw err;
        setCur(null);
      }
    });
  useEffect(() => void read(), [db, name]);
  const numeric = cur ? ['integer', 'double'].includes(typeOfLiteral(cur.lit)) : false;
  // Until the variant is read, the value typed would be replaced by the one read: nothing to type into yet.
  const loading = cur === undefined;
  const write = (): void =>
    void set.run(async () => {
      const lit = literalFor(type, text);
      const cond = cur ? (cur.version !== undefined ? `,"if_version":${cur.version}` : '') : ',"if_absent":true';
      // A PUT replaces the lifetime too: send what is left of it now (none: it stays permanent).
      const ttl = cur ? keepTtl(await lifeLeft(db, 'variant', name)) : undefined;
      const life = ttl !== undefined ? `,"ttl":${ttl}` : '';
      await db.call('putVariant', [name], { body: new JsonText(`{"variant":${lit}${cond}${life}}`) });
      await read();
      return `variant '${name}' set to ${lit} (${type})`;
    });
  return (
    <>
      <h1>
        Variant <code>{name}</code>
      </h1>
      <section class="card" aria-label="Current value">
        <Status a={load} />
        {cur === undefined ? (
          <p class="muted">loading…</p>
        ) : cur === null ? (
          <p id="variant-value">(does not exist: set a value below to create it)</p>
        ) : (
          <dl class="facts">
            <div>
              <dt>value</dt>
              <dd class="big" id="variant-value">
                {cur.lit}
              </dd>
            </div>
            <div>
              <dt>type</dt>
              <dd id="variant-type">{typeOfLiteral(cur.lit)}</dd>
            </div>
            {cur.version !== undefined ? (
              <div>
                <dt>version</dt>
                <dd id="variant-version">{cur.version}</dd>
              </div>
            ) : null}
            <div>
              <dt>lifetime</dt>
              <dd id="variant-ttl">{lifeText(cur.left)}</dd>
            </div>
          </dl>
        )}
      </section>
      <form
        class="card"
        aria-labelledby="set-title"
        onSubmit={(e) => {
          e.preventDefault();
          write();
        }}
      >
        <h2 id="set-title">Set the value</h2>
        <p class="muted">
          The first value fixes the type; to change it, delete the variant first. A double is written with a fraction (1 is sent as 1.0). Setting a value keeps
          what is left of the variant's lifetime.
        </p>
        <div class="row">
          <Field label="Type">
            <select id="variant-set-type" value={type} disabled={!!cur} onChange={(e) => setType((e.currentTarget as HTMLSelectElement).value as VariantType)}>
              <option value="integer">integer</option>
              <option value="double">double</option>
              <option value="string">string</option>
              <option value="boolean">boolean</option>
            </select>
          </Field>
          {type === 'boolean' ? (
            <Field label="Value">
              <select id="variant-set" value={text} disabled={loading} onChange={(e) => setText((e.currentTarget as HTMLSelectElement).value)}>
                <option value="true">true</option>
                <option value="false">false</option>
              </select>
            </Field>
          ) : (
            <Field label={type === 'string' ? 'Value (text, as typed)' : 'Value'}>
              <input
                id="variant-set"
                value={text}
                disabled={loading}
                inputMode={type === 'string' ? 'text' : 'decimal'}
                onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
              />
            </Field>
          )}
          <button type="submit" class="primary" id="set-variant" disabled={set.busy || loading}>
            Set
          </button>
        </div>
        <Status a={set} id="set-status" />
      </form>
      {numeric ? (
        <form
          class="card"
          aria-labelledby="incr-title"
          onSubmit={(e) => {
            e.preventDefault();
            void inc.run(async () => {
              const d = Number(delta);
              if (delta.trim() === '' || !Number.isFinite(d)) throw new Error('the delta must be a number');
              await db.incr(name, d);
              await read();
            });
          }}
        >
          <h2 id="incr-title">Increment</h2>
          <div class="row">
            <Field label="Delta">
              <input id="delta" type="number" step="any" value={delta} onInput={(e) => setDelta((e.currentTarget as HTMLInputElement).value)} />
            </Field>
            <button type="submit" class="primary" id="incr" disabled={inc.busy}>
              Increment
            </button>
          </div>
          <Status a={inc} id="incr-status" />
        </form>
      ) : null}
      {cur !== undefined ? (
        <DangerZone
          id="delete-variant"
          label="Delete variant"
          hint="Deletes the variant; it cannot be undone."
          question={`Delete variant '${name}'?`}
          disabled={cur === null}
          act={async () => {
            await db.deleteVariant(name);
            await read();
            return `variant '${name}' deleted`;
          }}
        />
      ) : null}
      <p>
        <a href="#/variants">All variants</a>
      </p>
    </>
  );
}
