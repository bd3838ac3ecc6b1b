import { api } from '../api.ts';
import type { PoolDetails, PoolSpec } from '../../cli/api/types.ts';
import { consolePath, field, h, link } from '../dom.ts';
import { duration, utilizationBar } from '../format.ts';
import { flashNext, navigate } from '../nav.ts';
import type { View } from '../main.ts';
import { blockLengthsText } from './blocks.ts';
import { actionForm, input, list, optionalInt, text } from './forms.ts';

const PAGE = 50;

/** /console/: every pool with its utilization per family, its ranges and its reuse delay; and "create a pool". */
export const poolsView: View = async (_params, query) => {
  const cursor = query.get('cursor') ?? undefined;
  const page = await api.listPools({ limit: PAGE, ...(cursor ? { cursor } : {}) });
  // The listing has names and settings; the figures come from each pool's own read (a few items each).
  const details = await Promise.all(page.items.map((pool) => api.getPool(pool.name)));
  const rows = details.map((pool: PoolDetails) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, link(consolePath('pools', pool.name), pool.name)),
      h('td', {}, blockLengthsText(pool)),
      h('td', {}, pool.grow ? link(consolePath('pools', pool.grow.pool), pool.grow.pool) : null),
      h('td', {}, utilizationBar(`${pool.name} IPv4`, pool.utilization.IPv4)),
      h('td', {}, utilizationBar(`${pool.name} IPv6`, pool.utilization.IPv6)),
      h('td', { class: 'num' }, pool.ranges.length),
      h('td', {}, duration(pool.reuseDelaySeconds)),
    ),
  );
  const table =
    rows.length === 0
      ? h('p', { class: 'empty' }, 'No pools yet: create one below.')
      : h(
          'table',
          { class: 'list' },
          h('caption', { class: 'sr-only' }, 'Pools'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'Pool'),
              h('th', { scope: 'col' }, 'Blocks'),
              h('th', { scope: 'col' }, 'Grows from'),
              h('th', { scope: 'col' }, 'IPv4'),
              h('th', { scope: 'col' }, 'IPv6'),
              h('th', { scope: 'col' }, 'Ranges'),
              h('th', { scope: 'col' }, 'Reuse delay'),
            ),
          ),
          h('tbody', {}, rows),
        );
  const pager = h(
    'p',
    { class: 'pager' },
    cursor ? link('/console/', 'First page') : null,
    page.nextCursor ? link(`/console/?cursor=${encodeURIComponent(page.nextCursor)}`, 'Next page') : null,
  );

  const form = actionForm(
    h(
      'form',
      { class: 'card', 'aria-labelledby': 'create-pool' },
      h('h2', { id: 'create-pool' }, 'Create a pool'),
      field('Name', input('name', { required: true, placeholder: 'services' })),
      field(
        'Exclusions',
        input('exclude', { placeholder: '10.96.0.0/29, fd00::/126' }),
        'CIDRs or addresses never handed out, separated by commas or spaces',
      ),
      field(
        'Reuse delay (seconds)',
        input('reuseDelaySeconds', { inputmode: 'numeric', placeholder: '0' }),
        'how long a released address stays held for its previous owner',
      ),
      h(
        'fieldset',
        { class: 'group' },
        h('legend', {}, 'Block pool (optional)'),
        field(
          'IPv4 block size',
          input('blockIPv4', { placeholder: '/26' }),
          'claims take aligned blocks of this prefix length instead of addresses',
        ),
        field('IPv6 block size', input('blockIPv6', { placeholder: '/64' })),
      ),
      h(
        'fieldset',
        { class: 'group' },
        h('legend', {}, 'Grow from a parent block pool (optional)'),
        field('Parent pool', input('growPool', { placeholder: 'region-eu-west' })),
        field(
          'Below free',
          input('growBelowFree', { inputmode: 'numeric', placeholder: '16' }),
          'one more block is taken from the parent when fewer free addresses (blocks, in a block pool) are left',
        ),
        field('Most blocks', input('growMaxBlocks', { inputmode: 'numeric', placeholder: '16' }), 'per family'),
      ),
      h('button', { type: 'submit' }, 'Create pool'),
    ),
    async (data) => {
      const name = text(data, 'name');
      const reuseDelaySeconds = optionalInt(data, 'reuseDelaySeconds');
      const blockPrefixLength = blockLengths(data);
      const grow = growRule(data);
      const { created, pool } = await api.createPool({
        name,
        exclude: list(data, 'exclude'),
        ...(reuseDelaySeconds !== undefined ? { reuseDelaySeconds } : {}),
        ...(blockPrefixLength ? { blockPrefixLength } : {}),
        ...(grow ? { grow } : {}),
      });
      flashNext(created ? `Pool ${pool.name} created.` : `Pool ${pool.name} already existed with these settings.`);
      await navigate(consolePath('pools', pool.name));
    },
  );
  return { title: 'Pools', content: h('div', {}, h('h1', { tabindex: '-1' }, 'Pools'), table, pager, form) };
};

/** The block sizes typed per family (`/26` or `26`); undefined when none is, which makes an address pool. */
function blockLengths(data: FormData): PoolSpec['blockPrefixLength'] {
  const lengths = Object.fromEntries(
    (['IPv4', 'IPv6'] as const).flatMap((family) => {
      const length = optionalInt(data, `block${family}`, '/');
      return length === undefined ? [] : [[family, length]];
    }),
  );
  return Object.keys(lengths).length ? lengths : undefined;
}

/** The grow rule when any of its fields is filled: the API says what is missing or wrong in the rest. */
function growRule(data: FormData): PoolSpec['grow'] {
  const pool = text(data, 'growPool');
  const belowFree = optionalInt(data, 'growBelowFree');
  const maxBlocks = optionalInt(data, 'growMaxBlocks');
  if (!pool && belowFree === undefined && maxBlocks === undefined) return undefined;
  return { pool, belowFree: belowFree as number, ...(maxBlocks !== undefined ? { maxBlocks } : {}) };
}
