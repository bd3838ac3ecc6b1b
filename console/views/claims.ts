import { api } from '../api.ts';
import type { Claim } from '../../cli/api/types.ts';
import { consolePath, field, h, link } from '../dom.ts';
import { dnsName, duration, expiry, labelChips } from '../format.ts';
import { navigate } from '../nav.ts';
import type { View } from '../main.ts';
import { input, text } from './forms.ts';
import { heldTexts } from './blocks.ts';

const PAGE = 50;
/** Pages read for one screen when filtering by name (the API filters by owner only): at most this many. */
const NAME_SCAN_PAGES = 20;

/**
 * /console/pools/{pool}/claims?owner=&label=&name=&limit=&cursor=: the claims, a page at a time through the API's cursors. The
 * owner and label filters are the API's (`owner`, `labelSelector` k=v,k2=v2); the name filter is applied here, reading on until a page is full.
 */
export const claimsView: View = async ([name], query) => {
  const pool = name!;
  const owner = query.get('owner') ?? '';
  const nameFilter = query.get('name') ?? '';
  const label = query.get('label') ?? '';
  const limit = Math.min(1000, Math.max(1, Number(query.get('limit')) || PAGE));
  let cursor = query.get('cursor') ?? undefined;
  const items: Claim[] = [];
  let pages = 0;
  // The pool's zone names the claims in DNS; a pool the caller may not read just shows no names.
  const zone = api.getPool(pool).then(
    (p) => p.dns?.zone,
    () => undefined,
  );
  do {
    const page = await api.listClaims(pool, {
      limit: nameFilter ? 1000 : limit,
      ...(cursor ? { cursor } : {}),
      ...(owner ? { owner } : {}),
      ...(label ? { labelSelector: label } : {}),
    });
    items.push(...(nameFilter ? page.items.filter((c) => c.name.includes(nameFilter)) : page.items));
    cursor = page.nextCursor;
    pages += 1;
  } while (nameFilter && cursor && items.length < limit && pages < NAME_SCAN_PAGES);

  const here = consolePath('pools', pool, 'claims');
  const filters = new URLSearchParams({
    ...(owner ? { owner } : {}),
    ...(label ? { label } : {}),
    ...(nameFilter ? { name: nameFilter } : {}),
    ...(query.get('limit') ? { limit: String(limit) } : {}),
  });
  const filterForm = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter claims' },
    field('Owner uid', input('owner', { value: owner })),
    field('Labels', input('label', { value: label, placeholder: 'tier=web,zone=a' })),
    field('Name contains', input('name', { value: nameFilter })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  filterForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(filterForm);
    const next = new URLSearchParams();
    for (const key of ['owner', 'label', 'name']) if (text(data, key)) next.set(key, text(data, key));
    if (query.get('limit')) next.set('limit', String(limit));
    void navigate(`${here}${next.size ? `?${next}` : ''}`);
  });
  const nextParams = new URLSearchParams(filters);
  if (cursor) nextParams.set('cursor', cursor);
  const content = h(
    'div',
    {},
    h('p', { class: 'crumbs' }, link(consolePath('pools', pool), `Pool ${pool}`)),
    h('h1', { tabindex: '-1' }, 'Claims in ', h('span', { class: 'name' }, pool)),
    filterForm,
    items.length === 0
      ? h('p', { class: 'empty' }, owner || label || nameFilter ? 'No claim matches.' : 'No claims in this pool.')
      : claimsTable(pool, items, await zone),
    h(
      'p',
      { class: 'pager' },
      query.get('cursor') ? link(`${here}${filters.size ? `?${filters}` : ''}`, 'First page') : null,
      cursor ? link(`${here}?${nextParams}`, 'Next page') : null,
    ),
  );
  return { title: `Claims in ${pool}`, content };
};

/** The claim's DNS name under its addresses, in a pool with a zone. */
function dnsNameOf(claim: Claim, zone: string | undefined): HTMLElement[] {
  const name = dnsName(claim, zone);
  return name === undefined ? [] : [h('br'), h('small', { class: 'dns-name' }, name)];
}

/** Claims as a table: name, owner, addresses (and their DNS name, with the pool's `zone`), TTL and expiry, version. */
export function claimsTable(pool: string, claims: readonly Claim[], zone?: string): HTMLTableElement {
  return h(
    'table',
    { class: 'list claims' },
    h('caption', { class: 'sr-only' }, `Claims in ${pool}`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Claim', 'Owner', 'Addresses', 'Labels', 'TTL', 'Expires', 'Version'].map((c) =>
          h('th', { scope: 'col' }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      claims.map((claim) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, link(consolePath('pools', pool, 'claims', claim.name), claim.name)),
          h(
            'td',
            {},
            `${claim.owner.kind}/${claim.owner.name}`,
            h('br'),
            h('small', { class: 'muted' }, claim.owner.uid),
          ),
          h(
            'td',
            {},
            heldTexts(claim).map((text) => h('code', { class: 'addr' }, text)),
            ...dnsNameOf(claim, zone),
          ),
          h('td', {}, labelChips(claim.labels)),
          h('td', {}, duration(claim.ttlSeconds)),
          h('td', {}, expiry(claim)),
          h('td', { class: 'num' }, claim.version),
        ),
      ),
    ),
  );
}
