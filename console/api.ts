import { HttpClient } from '../cli/api/http-client.ts';
import { IpamApi } from '../cli/api/ipam-api.ts';
import { ConnectionError, HttpStatusError, ProblemError } from '../cli/errors.ts';
import { h } from './dom.ts';

/**
 * The CLI's own client (cli/api): the same routes, paging and problem handling, pointed at the page's origin. The
 * server behind that origin is the local stack, or `ipam console`, which signs each call on the way to the stage.
 */
export const api = new IpamApi(
  new HttpClient({ endpoint: new URL(location.origin), fetch: (input, init) => fetch(input, init) }),
);

/**
 * A refused request, next to the form or view it belongs to: the problem's title and detail (and its code, which
 * is what scripts match), or the transport error's sentence.
 */
export function problemBox(error: unknown): HTMLElement {
  if (error instanceof ProblemError) {
    return h(
      'div',
      { class: 'problem', role: 'alert' },
      h('strong', { class: 'problem-title' }, `${error.title ?? 'Refused'} (${error.status})`),
      h('p', { class: 'problem-detail' }, error.detail),
      h('p', { class: 'problem-code' }, 'code ', h('code', {}, error.code)),
    );
  }
  const text =
    error instanceof HttpStatusError || error instanceof ConnectionError || error instanceof Error
      ? error.message
      : String(error);
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('strong', { class: 'problem-title' }, 'Request failed'),
    h('p', { class: 'problem-detail' }, text),
  );
}
