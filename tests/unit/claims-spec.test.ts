import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, MismatchedNetworkError } from '../../shared/core/errors.ts';
import { IpFamily, parseAddress } from '../../shared/core/ip/address.ts';
import { IpFamilyPolicy, RangeState, type ClaimSpec, type PoolView, type Range } from '../../shared/core/model.ts';
import { checkDnsLabel, generatedName } from '../../shared/core/names.ts';
import {
  MAX_BATCH_COUNT,
  MAX_TTL_SECONDS,
  normalizeSpec,
  resolveFamilies,
  type CreateClaimCommand,
} from '../../shared/core/use-cases/claims.ts';
import { normalizeExclusion } from '../../shared/core/use-cases/pools.ts';

const { IPv4, IPv6 } = IpFamily;
const { SingleStack, PreferDualStack, RequireDualStack } = IpFamilyPolicy;
const OWNER = { kind: 'Pod', name: 'web-0', uid: 'owner-1' };

/** A claim command named `claim-1`; a test changes what it is about. */
const command = (overrides: Partial<CreateClaimCommand> = {}): CreateClaimCommand => ({
  pool: 'pool-a',
  name: 'claim-1',
  owner: OWNER,
  ...overrides,
});

function range(cidr: string, state: Range['state'] = RangeState.Ready): Range {
  return {
    pool: 'pool-a',
    name: cidr.replace('/', '-'),
    cidr,
    family: cidr.includes(':') ? IPv6 : IPv4,
    state,
    legacy: false,
    createdAt: '2026-11-21T12:00:00.000Z',
  };
}

/** Pools serving IPv4, IPv6, both, or nothing (a Terminating range serves nothing). */
const pools: Record<string, PoolView> = {
  v4: {
    pool: { name: 'pool-a', exclude: [], createdAt: '' },
    ranges: [range('10.0.0.0/24'), range('fd00::/64', RangeState.Terminating)],
  },
  v6: { pool: { name: 'pool-a', exclude: [], createdAt: '' }, ranges: [range('fd00::/64')] },
  both: { pool: { name: 'pool-a', exclude: [], createdAt: '' }, ranges: [range('10.0.0.0/24'), range('fd00::/64')] },
  none: { pool: { name: 'pool-a', exclude: [], createdAt: '' }, ranges: [] },
};

/** Resolves the families of a claim with this policy, families and addresses on one of the pools above. */
function resolve(pool: keyof typeof pools, policy: IpFamilyPolicy, ipFamilies: IpFamily[], addresses: string[] = []) {
  const { spec, explicit } = normalizeSpec(command({ ipFamilyPolicy: policy, ipFamilies, addresses }));
  return resolveFamilies(pools[pool]!, spec, explicit);
}

describe('Function: normalizeSpec', () => {
  it('defaults to SingleStack with no families and no addresses, and copies only the owner fields', () => {
    // Prepare
    const cmd = command({ owner: { ...OWNER, extra: 'dropped' } as CreateClaimCommand['owner'] });

    // Act
    const { spec, explicit } = normalizeSpec(cmd);

    // Assess
    expect(spec).toEqual({
      owner: OWNER,
      ipFamilyPolicy: SingleStack,
      ipFamilies: [],
      addresses: [],
    } satisfies ClaimSpec);
    expect(explicit).toEqual([]);
  });

  it('writes explicit addresses canonically, so equal requests give equal specs', () => {
    // Prepare
    const verbose = command({ ipFamilyPolicy: PreferDualStack, addresses: ['10.96.0.10', '00FD:0000::0010'] });
    const canonical = command({ ipFamilyPolicy: PreferDualStack, addresses: ['10.96.0.10', 'fd::10'] });

    // Act
    const [a, b] = [normalizeSpec(verbose), normalizeSpec(canonical)];

    // Assess
    expect(a.spec.addresses).toEqual(['10.96.0.10', 'fd::10']);
    expect(a.spec).toEqual(b.spec);
    expect(a.explicit).toEqual([parseAddress('10.96.0.10'), parseAddress('fd::10')]);
  });

  it('keeps generateName and ttlSeconds in the spec', () => {
    // Prepare
    const cmd = command({ name: undefined, generateName: 'web-', ttlSeconds: 60 });

    // Act
    const { spec } = normalizeSpec(cmd);

    // Assess
    expect(spec).toMatchObject({ generateName: 'web-', ttlSeconds: 60 });
  });

  it.each([1, 3600, MAX_TTL_SECONDS])('accepts ttlSeconds %s', (ttlSeconds) => {
    // Act
    const { spec } = normalizeSpec(command({ ttlSeconds }));

    // Assess
    expect(spec.ttlSeconds).toBe(ttlSeconds);
  });

  it.each<[string, Partial<CreateClaimCommand>, string]>([
    ['both name and generateName are given', { generateName: 'web-' }, 'name'],
    ['neither name nor generateName is given', { name: undefined }, 'name'],
    ['the name is not a DNS label', { name: 'Web_1' }, 'name'],
    ['the name is longer than 63 characters', { name: 'a'.repeat(64) }, 'name'],
    ['generateName starts with a hyphen', { name: undefined, generateName: '-web' }, 'generateName'],
    ['generateName is only hyphens', { name: undefined, generateName: '--' }, 'generateName'],
    ['the policy is unknown', { ipFamilyPolicy: 'DualStack' as IpFamilyPolicy }, 'ipFamilyPolicy'],
    ['a family is unknown', { ipFamilies: ['IPv5' as IpFamily] }, 'ipFamilies'],
    ['ipFamilies repeats a family', { ipFamilyPolicy: PreferDualStack, ipFamilies: [IPv4, IPv4] }, 'ipFamilies'],
    ['a SingleStack claim names two families', { ipFamilies: [IPv4, IPv6] }, 'ipFamilies'],
    [
      'two addresses share a family',
      { ipFamilyPolicy: PreferDualStack, addresses: ['10.0.0.1', '10.0.0.2'] },
      'addresses',
    ],
    ['a SingleStack claim names two addresses', { addresses: ['10.0.0.1', 'fd00::1'] }, 'addresses'],
    ['an address is invalid', { addresses: ['10.0.0.256'] }, 'addresses[0]'],
    [
      'an address has a triple colon',
      { ipFamilyPolicy: PreferDualStack, addresses: ['10.0.0.1', '2001:db8:::1'] },
      'addresses[1]',
    ],
    ['ttlSeconds is zero', { ttlSeconds: 0 }, 'ttlSeconds'],
    ['ttlSeconds is not whole', { ttlSeconds: 1.5 }, 'ttlSeconds'],
    ['ttlSeconds is over a year', { ttlSeconds: MAX_TTL_SECONDS + 1 }, 'ttlSeconds'],
    ['the owner has no uid', { owner: { kind: 'Pod', name: 'web-0' } as CreateClaimCommand['owner'] }, 'owner.uid'],
    ['the owner kind is empty', { owner: { ...OWNER, kind: '' } }, 'owner.kind'],
    ['the owner is missing', { owner: undefined as unknown as CreateClaimCommand['owner'] }, 'owner.kind'],
  ])('throws InvalidArgumentError when %s', (_why, overrides, field) => {
    // Act
    const normalize = () => normalizeSpec(command(overrides));

    // Assess
    expect(normalize).toThrow(InvalidArgumentError);
    expect(normalize).toThrow(expect.objectContaining({ field }));
  });

  it.each<[string, Partial<CreateClaimCommand>]>([
    ['an IPv6 address in an IPv4 SingleStack claim', { ipFamilies: [IPv4], addresses: ['fd00::1'] }],
    [
      'an IPv4 address in an IPv6-only PreferDualStack claim',
      { ipFamilyPolicy: PreferDualStack, ipFamilies: [IPv6], addresses: ['10.0.0.1'] },
    ],
  ])('throws MismatchedNetworkError for %s', (_why, overrides) => {
    // Act
    const normalize = () => normalizeSpec(command(overrides));

    // Assess
    expect(normalize).toThrow(MismatchedNetworkError);
  });
});

describe('Function: normalizeSpec with count (batch claims)', () => {
  it('keeps count in the spec only above 1, so count 1 and no count are the same request', () => {
    expect(normalizeSpec(command()).spec).not.toHaveProperty('count');
    expect(normalizeSpec(command({ count: 1 })).spec).toEqual(normalizeSpec(command()).spec);
    expect(normalizeSpec(command({ count: MAX_BATCH_COUNT })).spec.count).toBe(32);
  });

  it.each([0, -1, 33, 1.5, Number.NaN])('refuses count %s with InvalidArgumentError naming the range', (count) => {
    expect(() => normalizeSpec(command({ count }))).toThrow(
      new InvalidArgumentError('count must be a whole number from 1 to 32.', 'count'),
    );
  });

  it('refuses count above 1 with explicit addresses, and allows count 1 with them', () => {
    expect(() => normalizeSpec(command({ count: 2, addresses: ['10.0.0.5'] }))).toThrow(InvalidArgumentError);
    expect(normalizeSpec(command({ count: 1, addresses: ['10.0.0.5'] })).spec.addresses).toEqual(['10.0.0.5']);
  });

  it('asks each resolved family for count addresses', () => {
    // Prepare
    const { spec, explicit } = normalizeSpec(command({ ipFamilyPolicy: RequireDualStack, count: 3 }));
    // Act
    const requests = resolveFamilies(pools.both!, spec, explicit);
    // Assess
    expect(requests).toEqual([
      { family: IPv4, count: 3 },
      { family: IPv6, count: 3 },
    ]);
  });
});

describe('Function: resolveFamilies', () => {
  it.each<[keyof typeof pools, IpFamilyPolicy, IpFamily[], string[], [IpFamily, string?][]]>([
    ['v4', SingleStack, [], [], [[IPv4]]],
    ['v6', SingleStack, [], [], [[IPv6]]],
    ['both', SingleStack, [], [], [[IPv4]]],
    ['both', SingleStack, [IPv6], [], [[IPv6]]],
    ['both', SingleStack, [], ['fd00::5'], [[IPv6, 'fd00::5']]],
    ['v4', PreferDualStack, [], [], [[IPv4]]],
    ['v6', PreferDualStack, [], [], [[IPv6]]],
    ['both', PreferDualStack, [], [], [[IPv4], [IPv6]]],
    ['both', PreferDualStack, [IPv6, IPv4], [], [[IPv6], [IPv4]]],
    ['both', PreferDualStack, [IPv6], [], [[IPv6], [IPv4]]],
    ['both', PreferDualStack, [], ['fd00::5'], [[IPv6, 'fd00::5'], [IPv4]]],
    ['v4', PreferDualStack, [], ['10.0.0.5'], [[IPv4, '10.0.0.5']]],
    ['both', RequireDualStack, [], [], [[IPv4], [IPv6]]],
    ['both', RequireDualStack, [IPv6], [], [[IPv6], [IPv4]]],
    ['both', RequireDualStack, [IPv6, IPv4], [], [[IPv6], [IPv4]]],
    [
      'both',
      RequireDualStack,
      [],
      ['10.0.0.5', 'fd00::5'],
      [
        [IPv4, '10.0.0.5'],
        [IPv6, 'fd00::5'],
      ],
    ],
    ['both', RequireDualStack, [], ['fd00::5'], [[IPv6, 'fd00::5'], [IPv4]]],
  ])(
    'on a pool serving %s, %s with families %j and addresses %j gets %j',
    (pool, policy, families, addresses, expected) => {
      // Act
      const requests = resolve(pool, policy, families, addresses);

      // Assess
      expect(requests).toEqual(
        expected.map(([family, address]) => (address ? { family, explicit: parseAddress(address) } : { family })),
      );
    },
  );

  it.each<[keyof typeof pools, IpFamilyPolicy, IpFamily[], string[]]>([
    ['v4', SingleStack, [IPv6], []],
    ['v4', SingleStack, [], ['fd00::5']],
    ['none', SingleStack, [], []],
    ['v4', PreferDualStack, [IPv6], []],
    ['v4', PreferDualStack, [], ['fd00::5']],
    ['none', PreferDualStack, [], []],
    ['v4', RequireDualStack, [], []],
    ['v6', RequireDualStack, [], []],
    ['v4', RequireDualStack, [IPv4, IPv6], []],
    ['none', RequireDualStack, [], []],
  ])(
    'throws MismatchedNetworkError on a pool serving %s for %s with families %j and addresses %j',
    (pool, policy, families, addresses) => {
      // Act
      const resolveIt = () => resolve(pool, policy, families, addresses);

      // Assess
      expect(resolveIt).toThrow(MismatchedNetworkError);
    },
  );

  it('names the pool and the missing family when RequireDualStack meets an IPv4-only pool', () => {
    // Act
    const resolveIt = () => resolve('v4', RequireDualStack, [], []);

    // Assess
    expect(resolveIt).toThrow('Pool "pool-a" has no Ready IPv6 range for this claim.');
  });
});

describe('Function: generatedName', () => {
  it.each([
    ['web', 'web-x7k2p'],
    ['web-', 'web-x7k2p'],
    ['web--', 'web-x7k2p'],
    ['my-app-7', 'my-app-7-x7k2p'],
  ])('builds a name from the prefix %j', (prefix, expected) => {
    // Act
    const name = generatedName(prefix, 'x7k2p');

    // Assess
    expect(name).toBe(expected);
  });

  it('truncates a long prefix so the whole name fits in 63 characters', () => {
    // Act
    const name = generatedName('a'.repeat(70), 'x7k2p');

    // Assess
    expect(name).toBe(`${'a'.repeat(57)}-x7k2p`);
    expect(name).toHaveLength(63);
  });

  it('does not double the hyphen when truncation ends the prefix on one', () => {
    // Prepare: character 57 of the prefix is a hyphen
    const prefix = `${'a'.repeat(56)}-${'b'.repeat(10)}`;

    // Act
    const name = generatedName(prefix, 'x7k2p');

    // Assess
    expect(name).toBe(`${'a'.repeat(56)}-x7k2p`);
  });

  it('always gives a valid DNS label for any valid generateName', () => {
    // Prepare
    const prefixes = ['a', 'a-', `${'a'.repeat(62)}-`, 'a'.repeat(63), `${'a'.repeat(56)}---${'b'.repeat(4)}`];

    // Act
    const names = prefixes.map((p) => generatedName(p, 'x7k2p'));

    // Assess
    for (const name of names) expect(checkDnsLabel(name, 'name')).toBe(name);
  });
});

describe('Function: normalizeExclusion', () => {
  it.each([
    ['10.0.0.5', '10.0.0.5/32'],
    ['fd00::5', 'fd00::5/128'],
    ['00fd:0::5', 'fd::5/128'],
    ['10.0.0.0/28', '10.0.0.0/28'],
    ['fd00::/120', 'fd00::/120'],
  ])('normalizes %s to %s', (text, expected) => {
    // Act
    const cidr = normalizeExclusion(text, 0);

    // Assess
    expect(cidr).toBe(expected);
  });

  it.each([
    ['host bits set', '10.0.0.1/24', 'its canonical form is 10.0.0.0/24.'],
    ['a /33', '10.0.0.0/33', 'IPv4 prefixes run from 0 to 32'],
    ['an invalid address', '192.168.1.1.x', 'not a valid IPv4 address'],
  ])('throws InvalidArgumentError naming the entry when the exclusion has %s', (_why, text, sentence) => {
    // Act
    const normalize = () => normalizeExclusion(text, 3);

    // Assess
    expect(normalize).toThrow(InvalidArgumentError);
    expect(normalize).toThrow(sentence);
    expect(normalize).toThrow(expect.objectContaining({ field: 'exclude[3]' }));
  });

  it('throws InvalidArgumentError when the exclusion is not a string', () => {
    // Act
    const normalize = () => normalizeExclusion(42 as unknown as string, 0);

    // Assess
    expect(normalize).toThrow(InvalidArgumentError);
  });
});
