import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Claim, Lease, PoolDetails, RepairEvent } from '../../cli/api/types.ts';
import { readList } from '../../cli/api/ipam-api.ts';
import { bashCompletion } from '../../cli/commands/completion.ts';
import { describeAddress, describeClaim, describePool, describeRange } from '../../cli/format/describe.ts';
import {
  bar,
  claimView,
  eventView,
  leaseView,
  OutputFormat,
  percent,
  poolView,
  rangeView,
  renderResources,
} from '../../cli/format/resources.ts';
import { renderTable } from '../../cli/format/table.ts';
import {
  age,
  ago,
  expiresColumn,
  expiry,
  formatSeconds,
  humanDuration,
  parseDuration,
  relative,
} from '../../cli/format/time.ts';
import { buildProgram } from '../../cli/program.ts';
import { watch } from '../../cli/watch.ts';
import { fakeFetch, fakeIo, runCli } from '../support/cli.ts';

const NOW = Date.parse('2026-04-02T10:00:00Z');
const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('Times: ages as kubectl prints them', () => {
  it.each([
    [-5 * S, '<invalid>'],
    [-500, '0s'],
    [0, '0s'],
    [59 * S, '59s'],
    [119 * S, '119s'],
    [2 * M, '2m'],
    [3 * M + 20 * S, '3m20s'],
    [10 * M + 5 * S, '10m'],
    [179 * M, '179m'],
    [3 * H, '3h'],
    [7 * H + 59 * M, '7h59m'],
    [8 * H + 30 * M, '8h'],
    [47 * H, '47h'],
    [2 * D, '2d'],
    [3 * D + 4 * H, '3d4h'],
    [8 * D, '8d'],
    [729 * D, '729d'],
    [2 * 365 * D + 3 * D, '2y3d'],
    [9 * 365 * D, '9y'],
  ])('humanDuration(%d ms) = %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });

  it('says how long ago, how long until expiry, and when a lease expired', () => {
    expect(ago('2026-04-02T09:57:00Z', NOW)).toBe('3m ago');
    expect(age(undefined, NOW)).toBe('<unknown>');
    expect(expiry('2026-04-02T10:04:00Z', NOW)).toBe('expires in 4m');
    expect(expiry('2026-04-02T09:59:57Z', NOW)).toBe('expired 3s ago');
    expect(expiry(undefined, NOW)).toBe('never');
    expect(expiresColumn('2026-04-02T10:04:00Z', NOW)).toBe('in 4m');
    expect(expiresColumn(undefined, NOW)).toBe('-');
  });

  it.each([
    ['90s', 90 * S],
    ['5m', 5 * M],
    ['1h30m', 90 * M],
    ['1.5h', 90 * M],
    ['300', 300 * S],
    ['250ms', 250],
    ['5 minutes', undefined],
    ['0s', undefined],
    ['-5m', undefined],
    ['', undefined],
  ])('parseDuration(%j) = %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    [0, '0s'],
    [45, '45s'],
    [90, '1m30s'],
    [600, '10m'],
    [5430, '1h30m30s'],
    [604800, '168h'],
  ])('formatSeconds(%d) = %s, exact and read back by parseDuration', (seconds, text) => {
    expect(formatSeconds(seconds)).toBe(text);
    if (seconds > 0) expect(parseDuration(text)).toBe(seconds * 1000);
  });

  it('says when a time comes or came', () => {
    expect(relative('2026-04-02T10:07:00Z', NOW)).toBe('in 7m');
    expect(relative('2026-04-02T09:59:57Z', NOW)).toBe('3s ago');
    expect(relative(undefined, NOW)).toBe('<unknown>');
  });
});

describe('Tables', () => {
  it('aligns columns by display width with three spaces between them and no trailing spaces', () => {
    expect(
      renderTable(
        ['NAME', 'USE'],
        [
          ['a', '[██░░] 50%'],
          ['longer-name', '-'],
        ],
      ),
    ).toBe('NAME          USE\na             [██░░] 50%\nlonger-name   -\n');
  });

  it('prints nothing for no rows (the caller says "No resources found")', () => {
    expect(renderTable(['NAME'], [])).toBe('');
  });

  it('shows exact counts beyond 2^53 in bars and per cent', () => {
    const size = (2n ** 64n - 1n).toString();
    const half = (2n ** 63n).toString();
    expect(percent(half, size)).toBe('50%');
    expect(bar(half, size, 10)).toBe('[█████░░░░░]');
    expect(percent(1, size)).toBe('<0.1%');
    expect(bar(1, 254, 10)).toBe('[█░░░░░░░░░]');
    expect(percent(3, 254)).toBe('1.1%');
    expect(percent(0, 0)).toBe('-');
  });
});

const claim: Claim = {
  name: 'vpn-x7k2q',
  uid: 'u-9',
  owner: { kind: 'Client', name: 'laptop', uid: 'c-19' },
  ipFamilyPolicy: 'SingleStack',
  ipFamilies: ['IPv4'],
  addresses: [{ address: '10.96.0.201', family: 'IPv4', range: '10.96.0.0-24' }],
  generateName: 'vpn',
  ttlSeconds: 300,
  labels: {},
  expiresAt: '2026-04-02T10:04:00.000Z',
  createdAt: '2026-04-02T09:59:00.000Z',
  version: 2,
};
const lease: Lease = {
  address: '10.96.0.201',
  state: 'Allocated',
  family: 'IPv4',
  range: '10.96.0.0-24',
  claim: 'vpn-x7k2q',
  owner: claim.owner,
  createdAt: claim.createdAt,
  expiresAt: claim.expiresAt!,
};
const released: Lease = {
  address: '10.244.0.77',
  state: 'Released',
  family: 'IPv4',
  range: '10.244.0.0-24',
  previousOwner: { kind: 'Pod', name: 'web-0', uid: 'a1' },
  previousClaim: 'web-0-x7k2p',
  releasedAt: '2026-04-02T09:57:00.000Z',
  reusableAt: '2026-04-02T10:07:00.000Z',
};
/** A claim of 3 IPv4 and 3 IPv6 addresses (count 3). */
const batch: Claim = {
  ...claim,
  name: 'workers',
  ipFamilyPolicy: 'RequireDualStack',
  ipFamilies: ['IPv4', 'IPv6'],
  count: 3,
  addresses: [
    ...['10.96.0.23', '10.96.0.24', '10.96.0.25'].map((address) => ({
      address,
      family: 'IPv4' as const,
      range: '10.96.0.0-24',
    })),
    ...['fd00:10:96::17', 'fd00:10:96::18', 'fd00:10:96::19'].map((address) => ({
      address,
      family: 'IPv6' as const,
      range: 'fd00:10:96::-112',
    })),
  ],
};

describe('Output formats of get', () => {
  const page = { items: [claim], nextCursor: 'c2' };

  it('prints the default table, and more columns with -o wide', () => {
    expect(renderResources(claimView, { page: { items: [claim] } }, OutputFormat.Table, NOW).out).toBe(
      'NAME        ADDRESSES     OWNER           EXPIRES   AGE\nvpn-x7k2q   10.96.0.201   Client/laptop   in 4m     60s\n',
    );
    expect(renderResources(claimView, { page: { items: [claim] } }, OutputFormat.Wide, NOW).out).toBe(
      'NAME        ADDRESSES     RANGES         POLICY        OWNER           OWNER-UID   VERSION   LABELS   EXPIRES   AGE\n' +
        'vpn-x7k2q   10.96.0.201   10.96.0.0-24   SingleStack   Client/laptop   c-19        2         <none>   in 4m     60s\n',
    );
  });

  it("shows an event's labels (those of the claim it is about) with -o wide only", () => {
    const events: RepairEvent[] = [
      {
        time: '2026-04-02T09:59:00.000Z',
        reason: 'ClaimExpired',
        object: 'claim/web',
        message: 'Claim web expired.',
        labels: { app: 'web' },
        by: 'reconciler',
      },
      {
        time: '2026-04-02T09:59:30.000Z',
        reason: 'LeaseOrphaned',
        object: 'lease/10.96.0.9',
        message: 'Lease released.',
        by: 'reconciler',
      },
    ];
    const wide = renderResources(eventView, { page: { items: events } }, OutputFormat.Wide, NOW).out.split('\n');
    expect(wide[0]).toMatch(/ MESSAGE +LABELS$/);
    expect(wide[1]).toMatch(/ Claim web expired\. +app=web$/);
    expect(wide[2]).toMatch(/ Lease released\. +<none>$/);
    expect(renderResources(eventView, { page: { items: events } }, OutputFormat.Table, NOW).out).not.toContain(
      'LABELS',
    );
  });

  it("shows the stream function's threshold crossings as any other event (issue 37)", () => {
    const crossing: RepairEvent = {
      time: '2026-04-02T09:59:00.000Z',
      reason: 'PoolFreeBelowThreshold',
      object: 'pool/pods',
      message: 'IPv4 space of pool pods fell below 5 % free: 12 of 254 addresses free (4.72 %).',
      by: 'stream',
    };
    const lines = renderResources(eventView, { page: { items: [crossing] } }, OutputFormat.Table, NOW).out.split('\n');
    expect(lines[1]).toMatch(
      /PoolFreeBelowThreshold +pool\/pods +IPv4 space of pool pods fell below 5 % free: 12 of 254 addresses free \(4\.72 %\)\.$/,
    );
  });

  it("shows a claim's labels with -o wide as the selector that matches them", () => {
    const labelled = { ...claim, labels: { 'cni.ipam/node': 'node-1', app: 'vpn' } };
    const wide = renderResources(claimView, { item: labelled }, OutputFormat.Wide, NOW).out;
    expect(wide.split('\n')[1]).toContain('   2         app=vpn,cni.ipam/node=node-1   in 4m ');
    expect(renderResources(claimView, { item: labelled }, OutputFormat.Table, NOW).out).not.toContain('app=vpn');
  });

  it("shows a batch claim's first two addresses and how many more, all of them and each range once with -o wide", () => {
    const table = renderResources(claimView, { item: batch }, OutputFormat.Table, NOW).out;
    const wide = renderResources(claimView, { item: batch }, OutputFormat.Wide, NOW).out;
    expect(table.split('\n')[1]).toMatch(/^workers {3}10\.96\.0\.23,10\.96\.0\.24 \+4 more {3}Client\/laptop /);
    expect(wide.split('\n')[1]).toContain(
      ' 10.96.0.23,10.96.0.24,10.96.0.25,fd00:10:96::17,fd00:10:96::18,fd00:10:96::19   10.96.0.0-24,fd00:10:96::-112   RequireDualStack ',
    );
  });

  it('prints a STATE column for addresses; a Released one shows its previous claim and owner, when it is reusable and its age since release', () => {
    const old = { ...lease, state: undefined } as unknown as Lease; // a server older than the reuse delay sends no state
    expect(renderResources(leaseView, { page: { items: [lease, released, old] } }, OutputFormat.Table, NOW).out).toBe(
      [
        'ADDRESS       STATE       RANGE           CLAIM         OWNER           EXPIRES   AGE',
        '10.96.0.201   Allocated   10.96.0.0-24    vpn-x7k2q     Client/laptop   in 4m     60s',
        '10.244.0.77   Released    10.244.0.0-24   web-0-x7k2p   Pod/web-0       in 7m     3m',
        '10.96.0.201   Allocated   10.96.0.0-24    vpn-x7k2q     Client/laptop   in 4m     60s',
        '',
      ].join('\n'),
    );
    expect(renderResources(leaseView, { item: released }, OutputFormat.Wide, NOW).out).toBe(
      'ADDRESS       FAMILY   STATE      RANGE           CLAIM         OWNER       OWNER-UID   EXPIRES   AGE\n' +
        '10.244.0.77   IPv4     Released   10.244.0.0-24   web-0-x7k2p   Pod/web-0   a1          in 7m     3m\n',
    );
  });

  it('prints a RELEASING column between USED and FREE for ranges (0 from a server without it), and the reuse delay in -o wide of pools', () => {
    const ranges = { page: { items: [{ ...pool.ranges[0]!, used: 90, releasing: 3 }, pool.ranges[1]!] } };
    expect(renderResources(rangeView, ranges, OutputFormat.Table, NOW).out).toBe(
      [
        'NAME               CIDR               FAMILY   STATE         USED   RELEASING   FREE      AGE',
        '10.96.0.0-24       10.96.0.0/24       IPv4     Ready         90     3           152       59m',
        'fd00:10:96::-108   fd00:10:96::/108   IPv6     Terminating   1      0           1048574   <unknown>',
        '',
      ].join('\n'),
    );
    const pools = {
      page: {
        items: [
          { ...pool, reuseDelaySeconds: 600 },
          { ...pool, name: 'services-2', exclude: [], reuseDelaySeconds: 0 },
        ],
      },
    };
    expect(renderResources(poolView, pools, OutputFormat.Wide, NOW).out).toBe(
      'NAME         EXCLUDE                     REUSE-DELAY   BLOCKS   GROWS-FROM   AGE\nservices     10.96.0.0/29,10.96.0.8/32   10m           -        -            60m\nservices-2   <none>                      -             -        -            60m\n',
    );
    expect(renderResources(poolView, pools, OutputFormat.Table, NOW).out).not.toContain('REUSE-DELAY');
  });

  it("shows a block pool's block lengths and the parent it grows from with -o wide (issue 35)", () => {
    const pools = {
      page: {
        items: [
          { ...pool, name: 'region', exclude: [], blockPrefixLength: { IPv4: 24, IPv6: 64 } },
          { ...pool, name: 'node-1', exclude: [], grow: { pool: 'region', belowFree: 4, maxBlocks: 2 } },
        ],
      },
    };
    expect(renderResources(poolView, pools, OutputFormat.Wide, NOW).out).toBe(
      [
        'NAME     EXCLUDE   REUSE-DELAY   BLOCKS    GROWS-FROM   AGE',
        'region   <none>    -             /24,/64   -            60m',
        'node-1   <none>    -             -         region       60m',
        '',
      ].join('\n'),
    );
  });

  it('prints JSON and YAML documents that read back to what the API sent', () => {
    const json = renderResources(claimView, { page }, OutputFormat.Json, NOW).out;
    const yaml = renderResources(claimView, { page }, OutputFormat.Yaml, NOW).out;
    expect(JSON.parse(json)).toEqual(page);
    expect(parse(yaml)).toEqual(page);
    expect(JSON.parse(renderResources(leaseView, { item: lease }, OutputFormat.Json, NOW).out)).toEqual(lease);
  });

  it('prints kind/name with -o name', () => {
    expect(renderResources(claimView, { page }, OutputFormat.Name, NOW).out).toBe('claim/vpn-x7k2q\n');
    expect(renderResources(leaseView, { item: lease }, OutputFormat.Name, NOW).out).toBe('address/10.96.0.201\n');
  });

  it('says where the next page starts when --limit left some, and when nothing was found', () => {
    expect(renderResources(claimView, { page }, OutputFormat.Table, NOW).err).toBe('(more: --cursor c2)\n');
    expect(renderResources(poolView, { page: { items: [] } }, OutputFormat.Table, NOW)).toEqual({
      out: '',
      err: 'No resources found.\n',
    });
  });
});

describe('Lists follow every page', () => {
  it('reads pages of 1,000 until there is no nextCursor, or one page of --limit', async () => {
    const calls: [number, string | undefined][] = [];
    const pages: Record<string, { items: number[]; nextCursor?: string }> = {
      start: { items: [1, 2], nextCursor: 'p2' },
      p2: { items: [3], nextCursor: 'p3' },
      p3: { items: [4] },
    };
    const read = async (limit: number, cursor: string | undefined) => {
      calls.push([limit, cursor]);
      return pages[cursor ?? 'start']!;
    };
    expect(await readList(read)).toEqual({ items: [1, 2, 3, 4] });
    expect(await readList(read, { limit: 2 })).toEqual({ items: [1, 2], nextCursor: 'p2' });
    expect(calls).toEqual([
      [1000, undefined],
      [1000, 'p2'],
      [1000, 'p3'],
      [2, undefined],
    ]);
  });

  it('stops on a cursor the server hands back twice instead of looping', async () => {
    await expect(readList(async () => ({ items: [1], nextCursor: 'same' }))).rejects.toThrow(
      'the server returned the same nextCursor twice',
    );
  });
});

const pool: PoolDetails = {
  name: 'services',
  exclude: ['10.96.0.0/29', '10.96.0.8/32'],
  reuseDelaySeconds: 0,
  historyDays: 90,
  createdAt: '2026-04-02T09:00:00.000Z',
  ranges: [
    {
      name: '10.96.0.0-24',
      cidr: '10.96.0.0/24',
      family: 'IPv4',
      state: 'Ready',
      legacy: false,
      size: 254,
      used: 93,
      releasing: 0,
      free: 152,
      createdAt: '2026-04-02T09:00:01.000Z',
    },
    {
      name: 'fd00:10:96::-108',
      cidr: 'fd00:10:96::/108',
      family: 'IPv6',
      state: 'Terminating',
      legacy: true,
      size: 1048575,
      used: 1,
      releasing: 0,
      free: 1048574,
    },
  ],
  utilization: {
    IPv4: { size: 254, used: 93, releasing: 0, free: 152 },
    IPv6: { size: 1048575, used: 1, releasing: 0, free: 1048574 },
  },
};
const events: RepairEvent[] = [
  {
    time: '2026-04-02T09:58:00.000Z',
    reason: 'ClaimExpired',
    object: 'claim/vpn-a1b2c',
    message: 'released 10.96.0.77',
    by: 'reconciler',
  },
];

describe('describe', () => {
  it('shows a pool with a bar per family, its ranges and their states, and recent events', () => {
    expect(describePool(pool, events, NOW)).toBe(
      [
        'Name:        services',
        'Created:     2026-04-02T09:00:00.000Z (60m ago)',
        'Exclude:     10.96.0.0/29, 10.96.0.8/32',
        'Reuse delay: <none>',
        'Utilization:',
        '  IPv4  [███████░░░░░░░░░░░░░]    36%   93 used of 254, 152 free',
        '  IPv6  [█░░░░░░░░░░░░░░░░░░░]  <0.1%   1 used of 1048575, 1048574 free',
        'Ranges:',
        '  NAME               CIDR               FAMILY   STATE         LEGACY   USED   FREE',
        '  10.96.0.0-24       10.96.0.0/24       IPv4     Ready         false    93     152',
        '  fd00:10:96::-108   fd00:10:96::/108   IPv6     Terminating   true     1      1048574',
        'Events:',
        '  LAST SEEN   REASON         OBJECT            MESSAGE',
        '  2m          ClaimExpired   claim/vpn-a1b2c   released 10.96.0.77',
        '',
      ].join('\n'),
    );
    expect(describePool({ ...pool, ranges: [], utilization: {} }, [], NOW)).toContain(
      'Ranges:      <none>\nEvents:      <none>\n',
    );
  });

  it('shows the reuse delay, and releasing addresses in the utilization lines and the ranges of a pool with one', () => {
    const delayed: PoolDetails = {
      ...pool,
      reuseDelaySeconds: 600,
      ranges: [
        { ...pool.ranges[0]!, used: 90, releasing: 3 },
        { ...pool.ranges[1]!, releasing: 0 },
      ],
      utilization: {
        IPv4: { size: 254, used: 90, releasing: 3, free: 152 },
        IPv6: { size: 1048575, used: 1, releasing: 0, free: 1048574 },
      },
    };
    expect(describePool(delayed, [], NOW)).toBe(
      [
        'Name:        services',
        'Created:     2026-04-02T09:00:00.000Z (60m ago)',
        'Exclude:     10.96.0.0/29, 10.96.0.8/32',
        'Reuse delay: 10m (600s): a released address stays held for its previous owner (kind, name, creator)',
        'Utilization:',
        '  IPv4  [███████░░░░░░░░░░░░░]    35%   90 used of 254, 3 releasing, 152 free',
        '  IPv6  [█░░░░░░░░░░░░░░░░░░░]  <0.1%   1 used of 1048575, 0 releasing, 1048574 free',
        'Ranges:',
        '  NAME               CIDR               FAMILY   STATE         LEGACY   USED   RELEASING   FREE',
        '  10.96.0.0-24       10.96.0.0/24       IPv4     Ready         false    90     3           152',
        '  fd00:10:96::-108   fd00:10:96::/108   IPv6     Terminating   true     1      0           1048574',
        'Events:      <none>',
        '',
      ].join('\n'),
    );
    expect(describeRange(delayed, delayed.ranges[0]!, NOW)).toContain('90 used of 254, 3 releasing, 152 free\n');
    // A pool without a delay (the earlier test) keeps the old lines; held addresses are still shown if a server counts some.
    expect(describeRange(pool, { ...pool.ranges[0]!, releasing: 2 }, NOW)).toContain(
      '93 used of 254, 2 releasing, 152 free\n',
    );
    expect(describePool({ ...pool, reuseDelaySeconds: 45 }, [], NOW)).toContain('Reuse delay: 45s: a released address');
  });

  it("shows a block pool's block sizes, its grow rule, its utilization in addresses, and where each nested range's block comes from (issue 35)", () => {
    const grown: PoolDetails = {
      ...pool,
      name: 'node-1',
      exclude: [],
      blockPrefixLength: { IPv4: 26 },
      grow: { pool: 'region', belowFree: 1, maxBlocks: 1 },
      ranges: [
        {
          ...pool.ranges[0]!,
          name: 'g4-1',
          cidr: '10.17.42.0/24',
          size: 4,
          used: 1,
          free: 3,
          source: { pool: 'region', claim: 'node-1-g4-1' },
        },
      ],
      utilization: {
        IPv4: { size: 4, used: 1, releasing: 0, free: 3, addresses: { size: 256, used: 64, releasing: 0, free: 192 } },
      },
    };
    expect(describePool(grown, [], NOW)).toBe(
      [
        'Name:        node-1',
        'Created:     2026-04-02T09:00:00.000Z (60m ago)',
        'Exclude:     <none>',
        'Reuse delay: <none>',
        'Blocks:      IPv4 /26',
        'Grows from:  region: one more block when fewer than 1 block is free (at most 1 block a family)',
        'Utilization:',
        '  IPv4  [█████░░░░░░░░░░░░░░░]    25%   1 used of 4, 3 free (addresses: 64 used of 256, 192 free)',
        'Ranges:',
        '  NAME   CIDR            FAMILY   STATE   LEGACY   USED   FREE   SOURCE',
        '  g4-1   10.17.42.0/24   IPv4     Ready   false    1      3      region/node-1-g4-1',
        'Events:      <none>',
        '',
      ].join('\n'),
    );
  });

  it("shows a range's bands, and a legacy IPv6 range's bitmap window", () => {
    const v4 = describeRange(pool, pool.ranges[0]!, NOW);
    expect(v4).toContain('Lower band:  10.96.0.1 - 10.96.0.16 (16)');
    expect(v4).toContain('Upper band:  10.96.0.17 - 10.96.0.254 (238)');
    const v6 = describeRange(pool, pool.ranges[1]!, NOW);
    expect(v6).toContain('Lower band:    fd00:10:96::1 - fd00:10:96::100 (256)');
    expect(v6).toContain("Legacy window: fd00:10:96::1 - fd00:10:96::ffff (65535)  the bitmap's addresses");
  });

  it("shows a claim's owner, addresses and expiry", () => {
    const text = describeClaim('services', claim, NOW);
    expect(text).toContain('Owner:            Client/laptop (uid c-19)\n');
    expect(text).toContain('Expires:          2026-04-02T10:04:00.000Z (expires in 4m)\n');
    expect(text).toContain('Addresses:\n  ADDRESS       FAMILY   RANGE\n  10.96.0.201   IPv4     10.96.0.0-24\n');
    expect(text).not.toContain('Count:');
    expect(text).toContain('Labels:           <none>\n');
    expect(describeClaim('services', { ...claim, labels: { app: 'vpn' } }, NOW)).toContain(
      'Labels:           app=vpn\n',
    );
    expect(describeClaim('services', { ...claim, labels: { tier: 'edge', app: 'vpn' } }, NOW)).toContain(
      'Labels:\n  app=vpn\n  tier=edge\n',
    );
    expect(describeClaim('services', batch, NOW)).toContain(
      'IP family policy: RequireDualStack\nCount:            3 addresses per family\n',
    );
  });

  it("shows a claim's DNS names and their state, and no DNS section outside a pool with dns", () => {
    // Prepare
    const named: Claim = {
      ...claim,
      dns: [
        { name: '201.0.96.10.in-addr.arpa.', kind: 'reverse', state: 'published' },
        {
          name: 'vpn.services.example.internal.',
          kind: 'forward',
          state: 'taken',
          reason: 'held by records the service did not make (no ownership TXT of this pool)',
        },
      ],
    };
    // Act
    const text = describeClaim('services', named, NOW);
    // Assess
    expect(text).toContain(
      'DNS:\n' +
        '  NAME                             STATE       REASON\n' +
        '  201.0.96.10.in-addr.arpa.        published\n' +
        '  vpn.services.example.internal.   taken       held by records the service did not make (no ownership TXT of this pool)\n',
    );
    expect(describeClaim('services', claim, NOW)).not.toContain('DNS:');
  });

  it("shows a block claim's blocks as CIDRs and the ranges made from them (issue 35)", () => {
    const parent: Claim = {
      ...claim,
      name: 'region-a',
      addresses: [{ address: '10.17.0.0', family: 'IPv4', range: '10.0.0.0-8', prefix: '10.17.0.0/16' }],
      children: [{ pool: 'region-a', range: 'r1', cidr: '10.17.0.0/16' }],
    };
    const text = describeClaim('org', parent, NOW);
    expect(text).toContain('Addresses:\n  BLOCK          FAMILY   RANGE\n  10.17.0.0/16   IPv4     10.0.0.0-8\n');
    expect(text).toContain('Children:\n  POOL       RANGE   CIDR\n  region-a   r1      10.17.0.0/16\n');
    expect(describeClaim('services', claim, NOW)).not.toContain('Children');
    const table = renderResources(claimView, { item: parent }, OutputFormat.Table, NOW).out;
    const wide = renderResources(claimView, { item: parent }, OutputFormat.Wide, NOW).out;
    expect(table.split('\n')[1]).toMatch(/^region-a {3}10\.17\.0\.0\/16 {3}Client\/laptop /);
    expect(wide.split('\n')[1]).toMatch(/^region-a {3}10\.17\.0\.0\/16 {3}10\.0\.0\.0-8 /);
  });

  it("shows a claim's consumers as a table, and no Consumers field for a claim without any", () => {
    const text = describeClaim(
      'services',
      {
        ...claim,
        consumers: [
          { kind: 'Pod', name: 'lb-0', uid: '5d2a' },
          { kind: 'Pod', name: 'lb-1', uid: '77c0' },
        ],
      },
      NOW,
    );
    expect(text).toContain('Consumers:\n  KIND   NAME   UID\n  Pod    lb-0   5d2a\n  Pod    lb-1   77c0\n');
    expect(describeClaim('services', claim, NOW)).not.toContain('Consumers');
  });

  it('shows who holds an Allocated address', () => {
    expect(describeAddress('services', lease, NOW)).toBe(
      [
        'Address: 10.96.0.201',
        'Pool:    services',
        'State:   Allocated',
        'Family:  IPv4',
        'Range:   10.96.0.0-24',
        'Claim:   vpn-x7k2q',
        'Holder:  Client/laptop (uid c-19)',
        'Created: 2026-04-02T09:59:00.000Z (60s ago)',
        'Expires: 2026-04-02T10:04:00.000Z (expires in 4m)',
        '',
      ].join('\n'),
    );
  });

  it('shows whom a Released address is held for, since when and until when', () => {
    expect(describeAddress('pods', released, NOW)).toBe(
      [
        'Address:        10.244.0.77',
        'Pool:           pods',
        'State:          Released',
        'Family:         IPv4',
        'Range:          10.244.0.0-24',
        'Previous claim: web-0-x7k2p',
        'Previous owner: Pod/web-0 (uid a1)',
        'Released:       2026-04-02T09:57:00.000Z (3m ago)',
        'Reusable at:    2026-04-02T10:07:00.000Z (in 7m)',
        '',
      ].join('\n'),
    );
  });
});

describe('get --watch', () => {
  it('polls at the interval until --watch-for, printing only changes when not on a terminal', async () => {
    // Prepare: a server whose claim list grows by one claim at the third poll.
    let polls = 0;
    const server = fakeFetch(() => {
      polls += 1;
      return { status: 200, body: { items: polls >= 3 ? [claim, { ...claim, name: 'web' }] : [claim] } };
    });

    // Act
    const result = await runCli(
      ['get', 'claims', '-p', 'services', '--watch', '--interval', '2s', '--watch-for', '9s'],
      { fetch: server.fetch, nowMs: NOW },
    );

    // Assess: polls at 0, 2, 4, 6 and 8 s; only two tables printed (ages moving is not a change).
    expect(result.code).toBe(0);
    expect(polls).toBe(5);
    expect(result.out.match(/^NAME/gm)).toHaveLength(2);
    const [first, second] = result.out.split('\n\n');
    expect(first).not.toContain('web');
    expect(second).toMatch(/^NAME .*\nvpn-x7k2q .*\nweb .*\n$/);
  });

  it('redraws the whole screen each round on a terminal', async () => {
    const fake = fakeIo({ isTTY: true, nowMs: NOW });
    const rounds = await watch(fake.io, async () => ({ text: 'same\n', key: 'same' }), {
      intervalMs: 1000,
      forMs: 3000,
      title: 'ipam get pools',
    });
    expect(rounds).toBe(4);
    expect(fake.out().split('\x1b[H\x1b[2J')).toHaveLength(5);
    expect(fake.out()).toContain('Every 1s: ipam get pools    2026-04-02T10:00:03.000Z\n\nsame\n');
    expect(fake.slept()).toBe(3000);
  });
});

describe('completion', () => {
  const script = bashCompletion(buildProgram(fakeIo().io));

  /** Runs the generated function in bash for the words typed so far (the last one is being completed). */
  const complete = (...words: string[]): string[] => {
    const program = `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _ipam_complete; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const result = spawnSync('bash', ['-c', program], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    return result.stdout.split('\n').filter(Boolean);
  };

  it('completes verbs, nouns with their aliases, options and option choices', () => {
    expect(complete('ipam', 'de')).toEqual(['describe', 'delete']);
    expect(complete('ipam', 'get', 'cl')).toEqual(['claims', 'claim', 'cl']);
    expect(complete('ipam', 'get', 'pools', '--wa')).toEqual(['--watch', '--watch-for']);
    expect(complete('ipam', 'get', 'pools', '-o', '')).toEqual(['wide', 'json', 'yaml', 'name']);
    expect(complete('ipam', 'claim', 'services', '--dual-stack', 'p')).toEqual(['prefer']);
    expect(complete('ipam', '--endpoint', 'http://x', 'map', '--s')).toEqual(['--svg']);
  });

  it('prints the script for bash and a bashcompinit wrapper for zsh', async () => {
    const bash = await runCli(['completion', 'bash']);
    const zsh = await runCli(['completion', 'zsh']);
    expect(bash.out).toBe(script);
    expect(zsh.out).toMatch(/^#compdef ipam\n/);
    expect(zsh.out).toContain('bashcompinit');
  });
});
