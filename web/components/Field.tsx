import type { ComponentChildren } from 'preact';

/** A labelled form control: the label wraps it, so it needs no id pairing. */
export function Field({ label, children, wide }: { label: string; children: ComponentChildren; wide?: boolean }) {
  return (
    <label class={wide ? 'field wide' : 'field'}>
      <span>{label}</span>
      {children}
    </label>
  );
}
