/**
 * The one confirmation dialog: `confirmAction(text)` opens it and resolves true on Confirm.
 * A native <dialog> (focus trapped, Escape cancels); focus starts on Cancel.
 */
import { useEffect, useRef, useState } from 'preact/hooks';

let open: ((text: string) => Promise<boolean>) | undefined;

export function confirmAction(text: string): Promise<boolean> {
  if (!open) return Promise.resolve(window.confirm(text));
  return open(text);
}

export function ConfirmHost() {
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const [text, setText] = useState('');
  const resolver = useRef<((ok: boolean) => void) | undefined>(undefined);
  useEffect(() => {
    open = (t) =>
      new Promise<boolean>((resolve) => {
        resolver.current = resolve;
        setText(t);
        const dlg = ref.current!;
        dlg.returnValue = '';
        dlg.showModal();
        cancel.current?.focus();
      });
    return () => {
      open = undefined;
    };
  }, []);
  const onClose = (): void => {
    const r = resolver.current;
    resolver.current = undefined;
    r?.(ref.current?.returnValue === 'ok');
  };
  return (
    <dialog id="confirm" ref={ref} aria-labelledby="confirm-text" onClose={onClose}>
      <form method="dialog">
        <p id="confirm-text">{text}</p>
        <div class="row end">
          <button value="cancel" id="confirm-cancel" ref={cancel}>
            Cancel
          </button>
          <button value="ok" id="confirm-ok" class="danger">
            Confirm
          </button>
        </div>
      </form>
    </dialog>
  );
}
