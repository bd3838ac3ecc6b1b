import { api } from '../api.ts';
import { consolePath, facts, field, h, link } from '../dom.ts';
import { dnsName, duration, expiry, labelChips, time } from '../format.ts';
import { flashNext, navigate } from '../nav.ts';
import type { View } from '../main.ts';
import { actionForm, input, optionalInt } from './forms.ts';
import { problemBox } from '../api.ts';
import { childrenTexts, heldTexts } from './blocks.ts';

/** /console/pools/{pool}/claims/{claim}: the claim; renew it, release it (at the version shown: If-Match). */
export const claimView: View = async ([poolName, claimName]) => {
  const pool = poolName!;
  const [claim, zone] = await Promise.all([
    api.getClaim(pool, claimName!),
    // The pool's zone names the claim in DNS; a pool the caller may not read just shows no name.
    api.getPool(pool).then(
      (p) => p.dns?.zone,
      () => undefined,
    ),
  ]);
  const name = dnsName(claim, zone);
  const addresses = h(
    'ul',
    { class: 'plain' },
    claim.addresses.map((a) =>
      h(
        'li',
        {},
        link(
          `/console/lookup?pool=${encodeURIComponent(pool)}&address=${encodeURIComponent(a.address)}`,
          h('code', {}, a.prefix ?? a.address),
        ),
        ` ${a.family}, range `,
        link(consolePath('pools', pool, 'ranges', a.range), a.range),
        ...(name === undefined ? [] : [', ', h('code', { class: 'dns-name' }, name)]),
      ),
    ),
  );

  const renew = actionForm(
    h(
      'form',
      { class: 'card', 'aria-labelledby': 'renew' },
      h('h2', { id: 'renew' }, 'Renew'),
      field('New TTL (seconds)', input('ttlSeconds', { inputmode: 'numeric' }), "empty: the claim's own TTL again"),
      h(
        'div',
        { class: 'check' },
        h('input', { type: 'checkbox', name: 'forever', id: 'renew-forever' }),
        h('label', { for: 'renew-forever' }, 'No expiry any more (a confirmed hold)'),
      ),
      h('button', { type: 'submit' }, 'Renew'),
    ),
    async (data) => {
      const renewed = await api.renewClaim(
        pool,
        claim.name,
        data.get('forever') ? null : optionalInt(data, 'ttlSeconds'),
      );
      flashNext(
        `Claim ${renewed.name} renewed: ${renewed.expiresAt ? `expires ${new Date(renewed.expiresAt).toLocaleString()}` : 'no expiry'}.`,
      );
      await navigate(location.pathname, true);
    },
  );

  const blocks = claim.addresses.some((a) => a.prefix !== undefined);
  const held = `${blocks ? 'block' : 'address'}${claim.addresses.length === 1 ? '' : blocks ? 's' : 'es'}`;

  // Release asks first, and releases only the version on screen: if the claim changed meanwhile, the API answers
  // 412 and the problem is shown instead of releasing something the user has not seen.
  const problem = h('div', { class: 'form-problem' });
  const confirmButton = h('button', { type: 'submit', class: 'danger', value: 'release' }, 'Release');
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'release-title' },
    h(
      'form',
      { method: 'dialog' },
      h('h2', { id: 'release-title' }, `Release ${claim.name}?`),
      h(
        'p',
        {},
        `Its ${held} ${heldTexts(claim).join(', ')} go back to the pool${claim.version ? ` (version ${claim.version})` : ''}.`,
      ),
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'submit', value: 'cancel', class: 'ghost' }, 'Cancel'),
        confirmButton,
      ),
    ),
  );
  dialog.addEventListener('close', () => {
    if (dialog.returnValue !== 'release') return;
    problem.replaceChildren();
    api
      .releaseClaim(pool, claim.name, claim.version)
      .then(async () => {
        flashNext(`Claim ${claim.name} released.`);
        await navigate(consolePath('pools', pool, 'claims'));
      })
      .catch((error: unknown) => problem.replaceChildren(problemBox(error)));
  });
  const release = h(
    'div',
    { class: 'card' },
    h('h2', {}, 'Release'),
    h(
      'p',
      {},
      `Gives the ${held} back`,
      claim.version ? `, only if the claim is still at version ${claim.version}` : '',
      '.',
    ),
    // A claim whose block is another pool's range is kept while that range lives (the API refuses: 409).
    childrenTexts(claim).length
      ? h(
          'p',
          { class: 'note' },
          `It is the source of ${childrenTexts(claim).join(', ')}: the API refuses its release until that range is deleted.`,
        )
      : null,
    h('button', { type: 'button', class: 'danger', onclick: () => dialog.showModal() }, 'Release…'),
    problem,
    dialog,
  );

  // Consumers (the DRA claim's reservedFor): each removable; removing the last one releases the claim.
  const consumerProblem = h('div', { class: 'form-problem' });
  const consumerList = claim.consumers?.length
    ? h(
        'ul',
        { class: 'plain consumers' },
        claim.consumers.map((c) =>
          h(
            'li',
            {},
            `${c.kind}/${c.name} (uid `,
            h('code', {}, c.uid),
            ') ',
            h(
              'button',
              {
                type: 'button',
                class: 'ghost',
                'aria-label': `Remove consumer ${c.kind}/${c.name}`,
                onclick: () => {
                  consumerProblem.replaceChildren();
                  api
                    .removeConsumer(pool, claim.name, c.uid)
                    .then(async (outcome) => {
                      flashNext(
                        outcome.released
                          ? `Claim ${claim.name} released: ${c.kind}/${c.name} was its last consumer.`
                          : `${c.kind}/${c.name} no longer consumes ${claim.name}.`,
                      );
                      await navigate(
                        outcome.released ? consolePath('pools', pool, 'claims') : location.pathname,
                        !outcome.released,
                      );
                    })
                    .catch((error: unknown) => consumerProblem.replaceChildren(problemBox(error)));
                },
              },
              claim.consumers!.length === 1 ? 'Remove (releases the claim)' : 'Remove',
            ),
          ),
        ),
      )
    : 'none';

  const content = h(
    'div',
    {},
    h(
      'p',
      { class: 'crumbs' },
      link(consolePath('pools', pool), `Pool ${pool}`),
      ' › ',
      link(consolePath('pools', pool, 'claims'), 'Claims'),
    ),
    h('h1', { tabindex: '-1' }, 'Claim ', h('span', { class: 'name' }, claim.name)),
    facts([
      ['Addresses', addresses],
      ['Child ranges', childrenTexts(claim).length ? childrenTexts(claim).join(', ') : undefined],
      ['Owner', `${claim.owner.kind}/${claim.owner.name} (uid ${claim.owner.uid})`],
      ['Family policy', `${claim.ipFamilyPolicy} (${claim.ipFamilies.join(', ')})`],
      ['Labels', labelChips(claim.labels) || 'none'],
      ['Consumers', h('div', {}, consumerList, consumerProblem)],
      ['TTL', duration(claim.ttlSeconds)],
      ['Expires', expiry(claim)],
      ['Created', time(claim.createdAt)],
      ['Version', String(claim.version)],
      ['Uid', h('code', {}, claim.uid)],
      ['Name prefix', claim.generateName ?? ''],
    ]),
    h('div', { class: 'forms' }, renew, release),
  );
  return { title: `Claim ${claim.name}`, content };
};
