/**
 * The one way the console builds DOM: elements from a tag, attributes and children. Text always goes in as text
 * nodes (never innerHTML), so names and owners from the API cannot inject markup.
 */
export type Child = Node | string | number | null | undefined | false;
type Attr = string | number | boolean | undefined | null | EventListener;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: (Child | readonly Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: readonly (Child | readonly Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(
      typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child,
    );
  }
}

/** A path under /console/ from segments, each percent-encoded (range names of IPv6 ranges hold ':'). */
export function consolePath(...segments: readonly string[]): string {
  return `/console/${segments.map(encodeURIComponent).join('/')}`;
}

/** A labelled form field: <label> then the control, with a hint when given. */
let fields = 0;

export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): HTMLElement {
  const id = control.id || `field-${(fields += 1)}`;
  control.id = id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) control.setAttribute('aria-describedby', hintId);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    control,
    hint ? h('small', { id: hintId }, hint) : null,
  );
}

/** A definition list from pairs; empty values are left out. */
export function facts(pairs: readonly (readonly [string, Child | readonly Child[]])[]): HTMLDListElement {
  const list = h('dl', { class: 'facts' });
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === '' || value === false) continue;
    list.append(h('dt', {}, term), h('dd', {}, value));
  }
  return list;
}

export function link(href: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href }, ...children);
}
