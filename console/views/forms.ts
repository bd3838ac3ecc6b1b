import { problemBox } from '../api.ts';
import { h } from '../dom.ts';

/**
 * Wires a form to an action: while it runs the submit button is disabled (no double submits); a refusal shows the
 * problem next to the form, and the fields keep what was typed so it can be corrected.
 */
export function actionForm(form: HTMLFormElement, action: (data: FormData) => Promise<void>): HTMLFormElement {
  const slot = h('div', { class: 'form-problem' });
  form.append(slot);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = form.querySelector<HTMLButtonElement>('button[type=submit]');
    if (button) button.disabled = true;
    slot.replaceChildren();
    action(new FormData(form))
      .catch((error: unknown) => slot.replaceChildren(problemBox(error)))
      .finally(() => {
        if (button) button.disabled = false;
      });
  });
  return form;
}

export function text(data: FormData, name: string): string {
  const value = data.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/** A list typed with commas, spaces or new lines. */
export function list(data: FormData, name: string): string[] {
  return text(data, name)
    .split(/[\s,]+/)
    .filter((item) => item !== '');
}

/** An optional whole number; the API's own validation speaks for anything else the user typed. */
export function optionalInt(data: FormData, name: string): number | undefined {
  const value = text(data, name);
  return value === '' ? undefined : Number(value);
}

export function input(name: string, attrs: Record<string, string | boolean | number> = {}): HTMLInputElement {
  return h('input', { name, type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs });
}
