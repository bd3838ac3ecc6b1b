import { api, isNotFound, problemBox } from '../api.ts';
import type { Lease } from '../../cli/api/types.ts';
import { consolePath, facts, field, h, link } from '../dom.ts';
import { time } from '../format.ts';
import { navigate } from '../nav.ts';
import type { View } from '../main.ts';
import { input, text } from './forms.ts';

/** /console/lookup?pool=&address=: who holds an address ("who holds 10.96.0.10"). */
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
    void navigate(`/console/lookup?${new URLSearchParams({ pool: text(data, 'pool'), address: text(data, 'address') })}`);
  });

  let result: Node | null = null;
  if (pool && address) {
    try {
      result = leaseFacts(pool, await api.getAddress(pool, address));
    } catch (error) {
      result = isNotFound(error) ? h('p', { class: 'result', role: 'status' }, `${address} is not held in pool ${pool}.`) : problemBox(error);
    }
  }
  return {
    title: address ? `Who holds ${address}` : 'Address lookup',
    content: h('div', {}, h('h1', { tabindex: '-1' }, 'Address lookup'), pools.items.length === 0 ? h('p', { class: 'empty' }, 'No pools yet.') : form, result),
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
