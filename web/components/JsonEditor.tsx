/** A JSON text area that says at once whether its text parses; Ctrl+Enter submits. */
import type { Json, JsonObject } from '../../client/index.js';

export function parseJson(text: string, what: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

export function parseObject(text: string, what: string): JsonObject {
  const v = parseJson(text, what);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what} must be a JSON object`);
  return v;
}

/** A value typed into a small field: JSON when it parses, else the text itself. */
export function looseValue(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

export function JsonEditor(props: {
  id: string;
  label: string;
  value: string;
  onInput: (v: string) => void;
  rows?: number;
  onSubmit?: () => void;
  /** While what it shows is still being read (what is typed meanwhile would be replaced). */
  disabled?: boolean;
}) {
  let problem = '';
  try {
    JSON.parse(props.value);
  } catch (err) {
    problem = (err as Error).message;
  }
  return (
    <div class="json-editor">
      <label class="field wide">
        <span>{props.label}</span>
        <textarea
          id={props.id}
          rows={props.rows ?? 8}
          spellcheck={false}
          aria-invalid={problem !== ''}
          aria-describedby={`${props.id}-check`}
          value={props.value}
          disabled={props.disabled}
          onInput={(e) => props.onInput((e.currentTarget as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && props.onSubmit) {
              e.preventDefault();
              props.onSubmit();
            }
          }}
        />
      </label>
      <p class={problem ? 'check bad' : 'check'} id={`${props.id}-check`}>
        {problem ? `Not valid JSON: ${problem}` : 'Valid JSON'}
        {props.onSubmit ? ' · Ctrl+Enter saves' : ''}
      </p>
    </div>
  );
}
