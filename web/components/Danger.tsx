/**
 * What cannot be undone — deleting the object a view shows — in a card of its own at the
 * bottom of the view, away from the everyday actions (push, pop, add) a hurried tap could
 * confuse it with. It is asked again in the confirmation dialog, and its outcome (a 412
 * when the object changed since it was read) is said in this card, next to the button.
 */
import { useAction } from '../lib/hooks.js';
import { confirmAction } from './Confirm.js';
import { Status } from './Status.js';

export function DangerZone(props: {
  /** The button's id and words: "delete-list", "Delete list". */
  id: string;
  label: string;
  /** What the button destroys, in a sentence under the heading. */
  hint: string;
  /** The confirmation's question. */
  question: string;
  /** Does it; a sentence to show here when the view stays (a variant's), nothing when it moves away. */
  act: () => Promise<string | void>;
  /** Nothing left to delete (the view stays after deleting, so the card and its outcome stay). */
  disabled?: boolean;
}) {
  const a = useAction();
  return (
    <section class="card danger-zone" aria-labelledby="danger-title">
      <h2 id="danger-title">Danger</h2>
      <p class="hint">{props.hint}</p>
      <button
        type="button"
        class="danger"
        id={props.id}
        disabled={a.busy || props.disabled === true}
        onClick={() =>
          void a.run(async () => {
            if (await confirmAction(props.question)) return props.act();
          })
        }
      >
        {props.label}
      </button>
      <Status a={a} id="danger-status" />
    </section>
  );
}
