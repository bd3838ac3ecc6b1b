import { isNotFound } from '../../cli/errors.ts';
import { api, problemBox } from '../api.ts';
import type { Holding, Lease } from '../../cli/api/types.ts';
import { consolePath, facts, field, h, link } from '../dom.ts';
import { time } from '../format.ts';
import { navigate } from '../nav.ts';
import type { View } from '../main.ts';
import { input, text } from './forms.ts';

/** Holdings shown per page of the history, unless the URL's `limit` says otherwise (1-1000). */
const HISTORY_PAGE = 10;

/** /console/lookup?pool=&address=&limit=&cursor=: who holds an address ("who holds 10.96.0.10"), and who held it before. */
export const addressView: View = async (_params, query) => {
  const pool = query.get('pool') ?? '';
  const address = query.get('address') ?? '';
  const pools = await api.listPools();
  const select = h(
    'select',
    { name: 'pool', required: true },
    pools.items.map((p) => h('option', { value: p.name, selected: p.name === pool }, p.name)),
  );
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Look up an address' },
    field('Pool', select),
    field('Address', input('address', { value: address, required: true, placeholder: '10.96.0.10' })),
    h('button', { type: 'submit' }, 'Look up'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    void navigate(
      `/console/lookup?${new URLSearchParams({ pool: text(data, 'pool'), address: text(data, 'address') })}`,
    );
  });

  let result: Node | null = null;
  if (pool && address) {
    try {
      result = leaseFacts(pool, await api.getAddress(pool, address));
    } catch (error) {
      result = isNotFound(error)
        ? h('p', { class: 'result', role: 'status' }, `${address} is not held in pool ${pool}.`)
        : problemBox(error);
    }
  }
  let history: Node | null = null;
  if (pool && address) {
    try {
      const cursor = query.get('cursor');
      const limit = Math.min(1000, Math.max(1, Number(query.get('limit')) || HISTORY_PAGE));
      history = historyTable(
        { pool, address, ...(limit !== HISTORY_PAGE ? { limit: String(limit) } : {}) },
        await api.addressHistory(pool, address, { limit, ...(cursor ? { cursor } : {}) }),
        cursor !== null,
      );
    } catch (error) {
      history = isNotFound(error) ? null : problemBox(error);
    }
  }
  return {
    title: address ? `Who holds ${address}` : 'Address lookup',
    content: h(
      'div',
      {},
      h('h1', { tabindex: '-1' }, 'Address lookup'),
      pools.items.length === 0 ? h('p', { class: 'empty' }, 'No pools yet.') : form,
      result,
      history,
    ),
  };
};

function leaseFacts(pool: string, lease: Lease): HTMLElement {
  const range = link(consolePath('pools', pool, 'ranges', lease.range), lease.range);
  if (lease.state === 'Released') {
    return h(
      'section',
      { class: 'result', 'aria-label': 'Result' },
      h('h2', {}, h('code', {}, lease.address), ' is released'),
      facts([
        ['Range', range],
        ['Previous claim', lease.previousClaim],
        ['Previous owner', `${lease.previousOwner.kind}/${lease.previousOwner.name} (uid ${lease.previousOwner.uid})`],
        ['Released', time(lease.releasedAt)],
        ['Reusable by others', time(lease.reusableAt)],
      ]),
    );
  }
  return h(
    'section',
    { class: 'result', 'aria-label': 'Result' },
    h('h2', {}, h('code', {}, lease.address), ' is held'),
    facts([
      ['Claim', link(consolePath('pools', pool, 'claims', lease.claim), lease.claim)],
      ['Owner', `${lease.owner.kind}/${lease.owner.name} (uid ${lease.owner.uid})`],
      ['Range', range],
      ['Since', time(lease.createdAt)],
      ['Expires', lease.expiresAt ? time(lease.expiresAt) : 'never'],
    ]),
  );
}

/** A page of the address's holdings, newest first, with links to the next page and back to the first. */
function historyTable(
  params: Record<string, string>,
  page: { items: readonly Holding[]; nextCursor?: string },
  paged: boolean,
): HTMLElement {
  const here = new URLSearchParams(params);
  const next = page.nextCursor ? new URLSearchParams({ ...params, cursor: page.nextCursor }) : undefined;
  return h(
    'section',
    { class: 'history', 'aria-label': 'History' },
    h('h2', {}, 'History'),
    page.items.length === 0
      ? h('p', { class: 'empty' }, 'No holdings recorded.')
      : h(
          'table',
          { class: 'list history' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Owner', 'Claim', 'Kind', 'From', 'To', 'Ended'].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            page.items.map((item) =>
              h(
                'tr',
                {},
                h('td', {}, `${item.owner.kind}/${item.owner.name}`),
                h('td', {}, item.claim),
                h('td', {}, item.kind),
                h('td', {}, time(item.from)),
                h('td', {}, item.to ? time(item.to) : 'now'),
                h('td', {}, item.endReason ?? ''),
              ),
            ),
          ),
        ),
    h(
      'p',
      { class: 'pager' },
      paged ? link(`/console/lookup?${here}`, 'Newest') : null,
      ' ',
      next ? link(`/console/lookup?${next}`, 'Older') : null,
    ),
  );
}
