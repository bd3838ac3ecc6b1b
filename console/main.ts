/**
 * The web console: a small single-page application without a UI library (the views are tables, forms and one grid;
 * a framework would cost more bytes than the whole page and one more dependency to keep). Each view has its own
 * path under /console/, so links can be shared and the back button works (History API; the server answers every
 * path under /console/ with the same page).
 */
import './style.css';
import { problemBox } from './api.ts';
import { h } from './dom.ts';
import { navigate, setRenderer, takeFlash } from './nav.ts';
import { addressView } from './views/address.ts';
import { claimView } from './views/claim.ts';
import { claimsView } from './views/claims.ts';
import { poolView } from './views/pool.ts';
import { poolsView } from './views/pools.ts';
import { rangeView } from './views/range.ts';

/** A view: what it shows for the path's parameters and the query; it returns its content and a title. */
export type View = (params: readonly string[], query: URLSearchParams) => Promise<{ title: string; content: Node }>;

const ROUTES: readonly (readonly [RegExp, View])[] = [
  [/^$/, poolsView],
  [/^pools\/([^/]+)$/, poolView],
  [/^pools\/([^/]+)\/ranges\/([^/]+)$/, rangeView],
  [/^pools\/([^/]+)\/claims$/, claimsView],
  [/^pools\/([^/]+)\/claims\/([^/]+)$/, claimView],
  [/^lookup$/, addressView],
];

const main = (): HTMLElement => document.getElementById('view')!;
let generation = 0;

/** Draws the view of the current address. Only the latest call's result is shown when several overlap. */
async function render(moveFocus = false): Promise<void> {
  const mine = (generation += 1);
  const rest = location.pathname.replace(/^\/console\/?/, '').replace(/\/$/, '');
  const route = ROUTES.map(([pattern, view]) => [pattern.exec(rest), view] as const).find(([match]) => match !== null);
  const view = main();
  view.setAttribute('aria-busy', 'true');
  let title: string;
  let content: Node;
  try {
    if (route === undefined) throw new Error(`There is no console page at ${location.pathname}.`);
    const [match, show] = route;
    ({ title, content } = await show(match!.slice(1).map(decodeURIComponent), new URLSearchParams(location.search)));
  } catch (error) {
    title = 'Error';
    content = h(
      'div',
      {},
      h('h1', { tabindex: '-1' }, 'Something went wrong'),
      problemBox(error),
      h('p', {}, h('a', { href: '/console/' }, 'Back to the pools')),
    );
  }
  if (mine !== generation) return;
  document.title = `${title} · IPAM console`;
  const message = takeFlash();
  view.replaceChildren(...(message ? [h('p', { class: 'flash', role: 'status' }, message)] : []), content);
  view.removeAttribute('aria-busy');
  markCurrentNav();
  // After a navigation, keyboard and screen-reader users start at the new view's heading.
  if (moveFocus) (view.querySelector('h1') ?? view).focus();
}

function markCurrentNav(): void {
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    const here =
      a.pathname === '/console/'
        ? location.pathname === '/console/' || location.pathname.startsWith('/console/pools')
        : location.pathname.startsWith(a.pathname);
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

/** Light or dark: the system's choice until the button says otherwise (kept in localStorage). */
function setUpTheme(): void {
  const button = document.getElementById('theme') as HTMLButtonElement;
  const apply = (theme: string | null) => {
    const dark = theme === 'dark' || (theme === null && matchMedia('(prefers-color-scheme: dark)').matches);
    document.documentElement.dataset.theme = dark ? 'dark' : 'light';
    button.setAttribute('aria-pressed', String(dark));
  };
  apply(localStorage.getItem('ipam-theme'));
  button.addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem('ipam-theme', next);
    apply(next);
  });
}

// Links inside the console change the view without reloading the page; other links and modified clicks do not.
document.addEventListener('click', (event) => {
  const a = (event.target as Element | null)?.closest?.('a');
  if (
    !a ||
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return;
  if (a.origin !== location.origin || !a.pathname.startsWith('/console/') || a.target || a.hasAttribute('download'))
    return;
  event.preventDefault();
  void navigate(a.pathname + a.search);
});
addEventListener('popstate', () => void render(true));
setRenderer(render);
setUpTheme();
void render();
