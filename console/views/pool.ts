import { api } from '../api.ts';
import type { Claim, ClaimSpec, Family, PoolDetails } from '../../cli/api/types.ts';
import { consolePath, facts, field, h, link } from '../dom.ts';
import { problemBox } from '../api.ts';
import { duration, time, utilizationBar } from '../format.ts';
import { flashNext, navigate } from '../nav.ts';
import type { View } from '../main.ts';
import { blockSizesText, growText, heldTexts, rangeSourceText } from './blocks.ts';
import { claimsTable } from './claims.ts';
import { actionForm, input, list, optionalInt, text } from './forms.ts';

/**
 * The pool's free-space warning (GET pool's `warnings`, the signal of its PoolFreeBelowThreshold events): one line
 * while a family is below one of the pool's thresholds, none once every family recovered.
 */
function freeSpaceWarning(pool: PoolDetails): HTMLElement | null {
  const below = (['IPv4', 'IPv6'] as const).flatMap((family) => {
    const warning = pool.warnings?.[family];
    if (!warning || warning.below === null) return [];
    return [
      [
        `${family} is ${warning.below === 'full' ? 'full' : `below ${warning.below} % free`} (since `,
        time(warning.since),
        ')',
      ],
    ];
  });
  if (below.length === 0) return null;
  return h(
    'p',
    { class: 'warning', role: 'status' },
    'Free space: ',
    ...below.flatMap((parts, i) => (i === 0 ? parts : ['; ', ...parts])),
    '.',
  );
}

/** /console/pools/{pool}: settings, utilization, ranges, recent events and claims; add a range, make a claim. */
export const poolView: View = async ([name]) => {
  const poolName = name!;
  const [pool, events, claims] = await Promise.all([
    api.getPool(poolName),
    api.listEvents(poolName, { limit: 20 }),
    api.listClaims(poolName, { limit: 20 }),
  ]);
  const ranges = pool.ranges.map((range) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, link(consolePath('pools', poolName, 'ranges', range.name), range.name)),
      h(
        'td',
        {},
        h('code', {}, range.cidr),
        rangeSourceText(range) ? [h('br'), h('small', { class: 'muted' }, rangeSourceText(range))] : null,
      ),
      h('td', {}, range.family),
      h('td', {}, h('span', { class: `state state-${range.state.toLowerCase()}` }, range.state)),
      h('td', {}, range.legacy ? 'legacy' : ''),
      h('td', {}, utilizationBar(range.name, range)),
    ),
  );
  const rangeTable =
    ranges.length === 0
      ? h('p', { class: 'empty' }, 'No ranges yet: add one below.')
      : h(
          'table',
          { class: 'list' },
          h('caption', { class: 'sr-only' }, `Ranges of ${poolName}`),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...['Range', 'CIDR', 'Family', 'State', 'Legacy', 'Utilization'].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h('tbody', {}, ranges),
        );
  const eventList =
    events.items.length === 0
      ? h('p', { class: 'empty' }, 'No repair events in the last 24 hours.')
      : h(
          'ul',
          { class: 'events' },
          events.items.map((e) =>
            h('li', {}, time(e.time), ' ', h('strong', {}, e.reason), ' ', h('code', {}, e.object), ' ', e.message),
          ),
        );

  const content = h(
    'div',
    {},
    h('h1', { tabindex: '-1' }, 'Pool ', h('span', { class: 'name' }, poolName)),
    freeSpaceWarning(pool),
    facts([
      ['Block size', blockSizesText(pool)],
      [
        'Grows from',
        pool.grow ? [link(consolePath('pools', pool.grow.pool), pool.grow.pool), `: ${growText(pool)}`] : null,
      ],
      ['Exclusions', pool.exclude.length ? pool.exclude.map((c) => h('code', {}, c, ' ')) : 'none'],
      ['Reuse delay', duration(pool.reuseDelaySeconds)],
      ['Created', time(pool.createdAt)],
    ]),
    h(
      'div',
      { class: 'families' },
      (['IPv4', 'IPv6'] as const).map((family) =>
        pool.utilization[family]
          ? h(
              'div',
              {},
              h('h2', { class: 'h3' }, family),
              utilizationBar(`${poolName} ${family}`, pool.utilization[family]),
            )
          : null,
      ),
    ),
    h('h2', {}, 'Ranges'),
    rangeTable,
    h(
      'p',
      { class: 'links' },
      link(`${consolePath('pools', poolName, 'claims')}`, 'All claims'),
      ' · ',
      link(`/console/lookup?pool=${encodeURIComponent(poolName)}`, 'Look up an address'),
    ),
    h('h2', {}, 'Recent claims'),
    claims.items.length === 0
      ? h('p', { class: 'empty' }, 'No claims yet.')
      : claimsTable(poolName, claims.items, pool.dns?.zone),
    h('h2', {}, 'Recent events'),
    eventList,
    h('div', { class: 'forms' }, rangeForm(poolName), claimForm(pool)),
  );
  return { title: `Pool ${poolName}`, content };
};

function rangeForm(pool: string): HTMLFormElement {
  return actionForm(
    h(
      'form',
      { class: 'card', 'aria-labelledby': 'add-range' },
      h('h2', { id: 'add-range' }, 'Add a range'),
      field('CIDR', input('cidr', { required: true, placeholder: '10.96.0.0/24' })),
      field('Name', input('name', { placeholder: 'from the CIDR' }), 'optional; 10.96.0.0-24 for 10.96.0.0/24'),
      h(
        'div',
        { class: 'check' },
        h('input', { type: 'checkbox', name: 'legacy', id: 'range-legacy' }),
        h('label', { for: 'range-legacy' }, 'Legacy (bitmap-mirrored) range'),
      ),
      sourceFields(pool),
      h('button', { type: 'submit' }, 'Add range'),
    ),
    async (data) => {
      const name = text(data, 'name');
      const source = { pool: text(data, 'sourcePool'), claim: text(data, 'sourceClaim') };
      const { created, range } = await api.createRange(pool, {
        cidr: text(data, 'cidr'),
        ...(name ? { name } : {}),
        ...(data.get('legacy') ? { legacy: true } : {}),
        ...(source.pool || source.claim ? { source } : {}),
      });
      flashNext(created ? `Range ${range.name} (${range.cidr}) added.` : `Range ${range.name} already existed.`);
      await navigate(consolePath('pools', pool, 'ranges', range.name));
    },
  );
}

/**
 * A nested pool's range: the parent pool and its block claim, and a button that reads the claim and puts its block
 * in the CIDR field (the API accepts only that block).
 */
function sourceFields(pool: string): HTMLFieldSetElement {
  const note = h('p', { class: 'note', role: 'status' });
  const fill = async (form: HTMLFormElement) => {
    const data = new FormData(form);
    const [parent, claimName] = [text(data, 'sourcePool'), text(data, 'sourceClaim')];
    const slot = form.querySelector('.form-problem')!;
    slot.replaceChildren();
    note.replaceChildren();
    if (!parent || !claimName) {
      note.append('Name the source pool and its claim first.');
      return;
    }
    try {
      const { addresses } = await api.getClaim(parent, claimName);
      const blocks = addresses.flatMap((a) => (a.prefix ? [a.prefix] : []));
      const cidr = form.querySelector<HTMLInputElement>('input[name=cidr]')!;
      if (blocks[0] !== undefined) cidr.value = blocks[0];
      note.append(
        blocks.length === 0
          ? `Claim ${claimName} of pool ${parent} holds no block: ${parent} is not a block pool.`
          : `Claim ${claimName} holds ${blocks.join(', ')}${blocks.length > 1 ? '; the first is filled in' : ''}.`,
      );
    } catch (error) {
      slot.replaceChildren(problemBox(error));
    }
  };
  return h(
    'fieldset',
    { class: 'group' },
    h('legend', {}, 'Made from a block claim of another pool (optional)'),
    field('Source pool', input('sourcePool', { placeholder: 'org' }), `a block pool other than ${pool}`),
    field('Source claim', input('sourceClaim', { placeholder: 'eu-west' })),
    h(
      'button',
      {
        type: 'button',
        class: 'ghost',
        onclick: (event: Event) => void fill((event.currentTarget as HTMLButtonElement).form!),
      },
      'Fill CIDR from the claim',
    ),
    note,
  );
}

function claimForm(pool: PoolDetails): HTMLFormElement {
  const blocks = blockSizesText(pool);
  const policy = h(
    'select',
    { name: 'ipFamilyPolicy' },
    h('option', { value: 'SingleStack' }, 'Single stack'),
    h('option', { value: 'PreferDualStack' }, 'Prefer dual stack'),
    h('option', { value: 'RequireDualStack' }, 'Require dual stack'),
  );
  const families = h(
    'fieldset',
    { class: 'inline' },
    h('legend', {}, 'Families'),
    (['IPv4', 'IPv6'] as const).map((family) =>
      h(
        'span',
        { class: 'check' },
        h('input', {
          type: 'checkbox',
          name: 'ipFamilies',
          value: family,
          id: `claim-${family}`,
          checked: family === (pool.blockPrefixLength && !pool.blockPrefixLength.IPv4 ? 'IPv6' : 'IPv4'),
        }),
        h('label', { for: `claim-${family}` }, family),
      ),
    ),
  );
  return actionForm(
    h(
      'form',
      { class: 'card', 'aria-labelledby': 'make-claim' },
      h('h2', { id: 'make-claim' }, blocks ? 'Claim blocks' : 'Claim addresses'),
      field('Claim name', input('name', { placeholder: 'web (or leave empty and give a prefix)' })),
      field(
        'Name prefix',
        input('generateName', { placeholder: 'web-' }),
        'used when the name is empty: the server adds a suffix',
      ),
      field('Owner', input('owner', { required: true, placeholder: 'Service/web/3f1c' }), 'kind/name/uid'),
      field('Family policy', policy),
      families,
      field(
        'Count',
        input('count', { inputmode: 'numeric', value: '1' }),
        `${blocks ? 'blocks' : 'addresses'} of each family, taken together: all or none`,
      ),
      blocks
        ? field(
            'Specific blocks',
            input('prefixes', { placeholder: '10.244.7.0/26' }),
            `optional; one per family, separated by commas, of the pool's block size (${blocks})`,
          )
        : field(
            'Specific addresses',
            input('addresses', { placeholder: '10.96.0.10' }),
            'optional; one per family, separated by commas',
          ),
      field(
        'Labels',
        input('labels', { placeholder: 'tier=web, zone=a' }),
        'optional; key=value pairs separated by commas',
      ),
      field(
        'TTL (seconds)',
        input('ttlSeconds', { inputmode: 'numeric' }),
        'optional; without one the claim never expires',
      ),
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'submit', name: 'intent', value: 'claim' }, 'Claim'),
        h('button', { type: 'submit', name: 'intent', value: 'preview', class: 'ghost' }, 'Preview'),
      ),
    ),
    async (data, slot) => {
      const preview = data.get('intent') === 'preview';
      const { claim } = await api.createClaim(pool.name, { ...claimSpec(data), ...(preview ? { dryRun: true } : {}) });
      // A preview holds nothing: say what the claim would get, in the API's words, and stay on the form.
      if (preview) {
        slot.replaceChildren(previewBox(claim));
        return;
      }
      flashNext(`Claim ${claim.name} holds ${heldTexts(claim).join(', ')}.`);
      await navigate(consolePath('pools', pool.name, 'claims', claim.name));
    },
  );
}

function previewBox(claim: Claim): HTMLElement {
  return h(
    'div',
    { class: 'preview', role: 'status' },
    h('strong', {}, `Preview: claim ${claim.name} would get `),
    claim.addresses.flatMap((a, i) => [i > 0 ? ', ' : '', h('code', {}, a.prefix ?? a.address), ` (range ${a.range})`]),
    h('p', {}, claim.detail),
  );
}

/** The form as the API's claim body; anything left empty is left out, so the API's defaults apply. */
export function claimSpec(data: FormData): ClaimSpec {
  const [kind = '', ownerName = '', ...uid] = text(data, 'owner').split('/');
  const name = text(data, 'name');
  const generateName = text(data, 'generateName');
  const addresses = list(data, 'addresses');
  const prefixes = list(data, 'prefixes');
  const ttlSeconds = optionalInt(data, 'ttlSeconds');
  // 1 is the API's default: left out, so the body is the one a claim without the field sends.
  const count = optionalInt(data, 'count');
  // `k=v` pairs; a pair without '=' goes as a key with an empty value, and the API says what it thinks of it.
  const labels = Object.fromEntries(
    list(data, 'labels').map((pair) => [
      pair.slice(0, pair.includes('=') ? pair.indexOf('=') : pair.length),
      pair.includes('=') ? pair.slice(pair.indexOf('=') + 1) : '',
    ]),
  );
  const ipFamilies = data.getAll('ipFamilies').filter((f): f is Family => f === 'IPv4' || f === 'IPv6');
  return {
    ...(name ? { name } : {}),
    ...(!name && generateName ? { generateName } : {}),
    owner: { kind, name: ownerName, uid: uid.join('/') },
    ipFamilyPolicy: text(data, 'ipFamilyPolicy') as ClaimSpec['ipFamilyPolicy'],
    ...(ipFamilies.length ? { ipFamilies } : {}),
    ...(addresses.length ? { addresses } : {}),
    ...(prefixes.length ? { prefixes } : {}),
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
    ...(count !== undefined && count !== 1 ? { count } : {}),
    ...(Object.keys(labels).length ? { labels } : {}),
  };
}
