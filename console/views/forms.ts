import { problemBox } from '../api.ts';
import { h } from '../dom.ts';

/**
 * Wires a form to an action: while it runs the submit buttons are disabled (no double submits); a refusal shows the
 * problem next to the form, and the fields keep what was typed so it can be corrected. The data holds the pressed
 * button's name and value, for a form with more than one (Claim and Preview). The action may show its answer in the
 * slot it is given (a preview); a new submit clears it.
 */
export function actionForm(
  form: HTMLFormElement,
  action: (data: FormData, slot: HTMLElement) => Promise<void>,
): HTMLFormElement {
  const slot = h('div', { class: 'form-problem' });
  form.append(slot);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    // Read before disabling: a disabled button is left out of the data.
    const data = new FormData(form, event.submitter);
    const buttons = [...form.querySelectorAll<HTMLButtonElement>('button[type=submit]')];
    for (const button of buttons) button.disabled = true;
    slot.replaceChildren();
    action(data, slot)
      .catch((error: unknown) => slot.replaceChildren(problemBox(error)))
      .finally(() => {
        for (const button of buttons) button.disabled = false;
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

/**
 * An optional whole number, after a `prefix` the user may type (`/26`); the API's own validation speaks for anything
 * else the user typed.
 */
export function optionalInt(data: FormData, name: string, prefix = ''): number | undefined {
  const typed = text(data, name);
  const value = prefix && typed.startsWith(prefix) ? typed.slice(prefix.length).trim() : typed;
  return value === '' ? undefined : Number(value);
}

export function input(name: string, attrs: Record<string, string | boolean | number> = {}): HTMLInputElement {
  return h('input', { name, type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs });
}
