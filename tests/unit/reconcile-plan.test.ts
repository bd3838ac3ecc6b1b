import { describe, expect, it } from 'vitest';
import { Bitmap } from '../../shared/core/bitmap/bitmap.ts';
import { leaseOfClaim, type Claim, type Lease, type PoolView, type Range } from '../../shared/core/model.ts';
import { needsScan, planDrift } from '../../shared/core/reconciler/drift.ts';
import { countOrder, usageIntervals } from '../../shared/core/reconciler/usage.ts';
import {
  CLOCK_SKEW_MS,
  events,
  expiryHours,
  FIRST_RUN_LOOKBACK_HOURS,
  HOUR_MS,
  isReleasable,
  judgeClaim,
  judgeLease,
  judgeLeaseRange,
  nextExpiryCheckpoint,
  terminationGraceOver,
} from '../../shared/core/reconciler/plan.ts';

const NOW = Date.parse('2035-01-01T05:30:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function claim(overrides: Partial<Claim> = {}): Claim {
  return {
    pool: 'p',
    name: 'web',
    uid: 'u1',
    spec: {
      owner: { kind: 'Pod', name: 'web-0', uid: 'o1' },
      ipFamilyPolicy: 'SingleStack',
      ipFamilies: [],
      addresses: [],
    },
    addresses: [{ address: '10.0.0.5', family: 'IPv4', range: 'r' }],
    createdAt: iso(NOW - 3600_000),
    version: 1,
    ...overrides,
  };
}

function lease(overrides: Partial<Lease> = {}): Lease {
  return {
    pool: 'p',
    address: '10.0.0.5',
    family: 'IPv4',
    range: 'r',
    claim: 'web',
    claimUid: 'u1',
    owner: { kind: 'Pod', name: 'web-0', uid: 'o1' },
    createdAt: iso(NOW - 3600_000),
    ...overrides,
  };
}

describe('Function: expiryHours (row 1)', () => {
  it('reads from the checkpoint hour up to the hour of the cutoff', () => {
    const cutoff = NOW - 30_000;
    expect(expiryHours(Math.floor(cutoff / HOUR_MS) - 2, cutoff)).toEqual(
      [0, 1, 2].map((i) => Math.floor(cutoff / HOUR_MS) - 2 + i),
    );
  });

  it('looks back a fixed number of hours without a checkpoint', () => {
    expect(expiryHours(undefined, NOW)).toHaveLength(FIRST_RUN_LOOKBACK_HOURS + 1);
  });

  it('reads the cutoff hour alone when the checkpoint is ahead of it (a clock that went back)', () => {
    expect(expiryHours(Math.floor(NOW / HOUR_MS) + 5, NOW)).toEqual([Math.floor(NOW / HOUR_MS)]);
  });
});

describe('Function: nextExpiryCheckpoint (row 1)', () => {
  it('stops at the first hour that is not drained', () => {
    expect(nextExpiryCheckpoint(100, 200 * HOUR_MS)).toBe(100);
  });

  it('stays behind the cutoff by the clock-skew slack when everything is drained', () => {
    const cutoff = 200 * HOUR_MS + CLOCK_SKEW_MS / 2;
    expect(nextExpiryCheckpoint(undefined, cutoff)).toBe(199);
    expect(nextExpiryCheckpoint(undefined, cutoff + CLOCK_SKEW_MS)).toBe(200);
  });
});

describe('Function: isReleasable (row 1)', () => {
  it('releases claims expired at or before the cutoff, never claims without a TTL', () => {
    expect(isReleasable(claim({ expiresAt: NOW }), NOW)).toBe(true);
    expect(isReleasable(claim({ expiresAt: NOW + 1 }), NOW)).toBe(false);
    expect(isReleasable(claim(), NOW)).toBe(false);
  });
});

describe('Function: judgeLease (rows 3-5)', () => {
  const grace = 60_000;

  it('holds a lease whose claim is the same incarnation and lists the address', () => {
    expect(judgeLease(lease(), claim(), NOW, grace)).toEqual({ kind: 'held' });
  });

  it.each([
    ['claimAbsent', undefined],
    ['otherIncarnation', claim({ uid: 'u2' })],
    ['notListed', claim({ addresses: [{ address: '10.0.0.6', family: 'IPv4', range: 'r' }] })],
  ] as const)('orphans a lease when %s', (why, owner) => {
    expect(judgeLease(lease(), owner, NOW, grace)).toEqual({ kind: 'orphaned', why });
  });

  it('waits while the orphan is younger than the grace, and acts at exactly the grace', () => {
    expect(judgeLease(lease({ createdAt: iso(NOW - grace + 1) }), undefined, NOW, grace)).toEqual({
      kind: 'tooYoung',
      why: 'claimAbsent',
    });
    expect(judgeLease(lease({ createdAt: iso(NOW - grace) }), undefined, NOW, grace).kind).toBe('orphaned');
  });

  it('leaves a Released lease alone within its reuse delay and drops it after (row 16), never calling it an orphan', () => {
    const released = (reusableAt: number) =>
      lease({ claimUid: '', state: 'Released', releasedAt: iso(NOW - 600_000), expiresAt: reusableAt });
    expect(judgeLease(released(NOW + 1), undefined, NOW, grace)).toEqual({ kind: 'releasing' });
    expect(judgeLease(released(NOW), undefined, NOW, grace)).toEqual({ kind: 'reusable' });
  });
});

describe('Function: judgeClaim (rows 6-7)', () => {
  const grace = 60_000;

  it('finds a missing lease, a free (expired) one and a duplicate', () => {
    const c = claim({
      addresses: [
        { address: '10.0.0.5', family: 'IPv4', range: 'r' },
        { address: '10.0.0.6', family: 'IPv4', range: 'r' },
        { address: '10.0.0.7', family: 'IPv4', range: 'r' },
        { address: '10.0.0.8', family: 'IPv4', range: 'r' },
      ],
    });
    const expired = lease({ address: '10.0.0.7', claim: 'old', claimUid: 'u0', expiresAt: NOW - 1 });
    const other = lease({ address: '10.0.0.8', claim: 'other', claimUid: 'u9' });
    const verdict = judgeClaim(
      c,
      new Map([
        ['10.0.0.5', lease()],
        ['10.0.0.7', expired],
        ['10.0.0.8', other],
      ]),
      NOW,
      grace,
    );
    expect(verdict).toEqual({
      kind: 'checked',
      addresses: [
        { kind: 'held', address: c.addresses[0] },
        { kind: 'missing', address: c.addresses[1] },
        { kind: 'missing', address: c.addresses[2], expired },
        { kind: 'duplicate', address: c.addresses[3], holder: other },
      ],
    });
  });

  it('leaves expired claims to row 1 and young claims alone', () => {
    expect(judgeClaim(claim({ expiresAt: NOW }), new Map(), NOW, grace)).toEqual({ kind: 'expired' });
    expect(judgeClaim(claim({ createdAt: iso(NOW - grace + 1) }), new Map(), NOW, grace)).toEqual({ kind: 'young' });
  });

  it("builds the lease a claim should have, with the claim's expiry", () => {
    const c = claim({ expiresAt: NOW + 5 });
    expect(leaseOfClaim(c, c.addresses[0]!, iso(NOW))).toEqual(lease({ createdAt: iso(NOW), expiresAt: NOW + 5 }));
  });
});

describe('Function: terminationGraceOver (rows 11-12)', () => {
  const range = (overrides: Partial<Range>): Range => ({
    pool: 'p',
    name: 'r',
    cidr: '10.0.0.0/24',
    family: 'IPv4',
    state: 'Terminating',
    legacy: false,
    createdAt: iso(0),
    ...overrides,
  });

  it('waits the grace after deletion was requested', () => {
    expect(terminationGraceOver(range({ deletionRequestedAt: iso(NOW - 10_000) }), NOW, 10_000)).toBe(true);
    expect(terminationGraceOver(range({ deletionRequestedAt: iso(NOW - 9_999) }), NOW, 10_000)).toBe(false);
  });

  it('never finalizes a Ready range, nor one without a readable request time', () => {
    expect(terminationGraceOver(range({ state: 'Ready', deletionRequestedAt: iso(0) }), NOW, 0)).toBe(false);
    expect(terminationGraceOver(range({}), NOW, 0)).toBe(false);
  });
});

describe('Function: judgeLeaseRange (row 13)', () => {
  const grace = 60_000;
  const view = (...ranges: [string, Range['state']][]): PoolView => ({
    pool: { name: 'p', exclude: [], createdAt: iso(0) },
    ranges: ranges.map(([cidr, state], i) => ({
      pool: 'p',
      name: `r${i}`,
      cidr,
      family: cidr.includes(':') ? 'IPv6' : 'IPv4',
      state,
      legacy: false,
      createdAt: iso(0),
    })),
  });

  it('finds a lease in any range of its pool that holds the address as a host address, Ready or Terminating', () => {
    expect(judgeLeaseRange(lease(), view(['10.0.0.0/24', 'Ready']), NOW, grace)).toBe('inRange');
    expect(judgeLeaseRange(lease(), view(['10.1.0.0/24', 'Ready'], ['10.0.0.0/29', 'Terminating']), NOW, grace)).toBe(
      'inRange',
    );
  });

  it('reports a lease outside every range, on a network or broadcast address, or in a pool that is gone', () => {
    expect(judgeLeaseRange(lease(), view(['10.1.0.0/24', 'Ready'], ['fd00::/64', 'Ready']), NOW, grace)).toBe(
      'outside',
    );
    expect(judgeLeaseRange(lease({ address: '10.0.0.7' }), view(['10.0.0.4/30', 'Ready']), NOW, grace)).toBe('outside');
    expect(judgeLeaseRange(lease(), undefined, NOW, grace)).toBe('outside');
  });

  it('waits for a lease younger than the grace, and leaves an expired one to row 1', () => {
    expect(judgeLeaseRange(lease({ createdAt: iso(NOW - grace + 1) }), view(), NOW, grace)).toBe('notYet');
    expect(judgeLeaseRange(lease({ createdAt: iso(NOW - grace) }), view(), NOW, grace)).toBe('outside');
    expect(judgeLeaseRange(lease({ expiresAt: NOW }), view(), NOW, grace)).toBe('notYet');
  });
});

describe('Function: planDrift (rows 8-9)', () => {
  it('sets missing bits at once and clears a leaked bit only at the threshold', () => {
    expect(planDrift({ missing: [3], leaked: [7], previous: {}, mayStrike: true, threshold: 3 })).toEqual({
      set: [3],
      clear: [],
      strikes: { '7': 1 },
    });
    expect(planDrift({ missing: [], leaked: [7], previous: { '7': 1 }, mayStrike: true, threshold: 3 })).toEqual({
      set: [],
      clear: [],
      strikes: { '7': 2 },
    });
    expect(planDrift({ missing: [], leaked: [7], previous: { '7': 2 }, mayStrike: true, threshold: 3 })).toEqual({
      set: [],
      clear: [7],
      strikes: {},
    });
  });

  it('drops the strikes of bits no longer leaked, and neither strikes nor clears in a run that may not strike', () => {
    expect(planDrift({ missing: [], leaked: [], previous: { '7': 2 }, mayStrike: true, threshold: 3 })).toEqual({
      set: [],
      clear: [],
      strikes: {},
    });
    expect(planDrift({ missing: [], leaked: [7], previous: { '7': 2 }, mayStrike: false, threshold: 3 })).toEqual({
      set: [],
      clear: [],
      strikes: { '7': 2 },
    });
  });

  it('clears at the first strike when the threshold is 1', () => {
    expect(planDrift({ missing: [], leaked: [7], previous: {}, mayStrike: true, threshold: 1 })).toEqual({
      set: [],
      clear: [7],
      strikes: {},
    });
  });
});

describe('Function: needsScan (rows 8-10)', () => {
  const doc = { range: '10.0.0.0/24', data: new Uint8Array([1]), version: 4 };
  const bitmap = Bitmap.decode(doc.data, 254);
  const record = { strikes: {}, checkedCycle: 2, comparedAt: 100, observedAt: 0 };
  const usage = { cidr: '10.0.0.0/24', used: 1, windowItems: 1, countedAt: 200 };

  it('skips a range with nothing pending whose latest count matches its bitmap, or was compared already', () => {
    expect(needsScan({ doc, bitmap, record, usage }, 2)).toBe(false);
    expect(needsScan({ doc, bitmap, record, usage: { ...usage, windowItems: 2, countedAt: 100 } }, 2)).toBe(false);
    expect(needsScan({ doc: { ...doc, version: 9 }, bitmap, record, usage }, 2)).toBe(false);
  });

  it.each([
    ['no bitmap', undefined, bitmap, record, usage, 2],
    ['an unreadable bitmap', doc, undefined, record, usage, 2],
    ['no record yet', doc, bitmap, undefined, usage, 2],
    ['a new count that differs', doc, bitmap, record, { ...usage, windowItems: 2 }, 2],
    ['pending strikes', doc, bitmap, { ...record, strikes: { '3': 1 } }, usage, 2],
    ['a scan under way', doc, bitmap, { ...record, checking: { offset: 4096 } }, usage, 2],
    ['a finished sweep cycle', doc, bitmap, record, usage, 3],
  ] as const)('scans a range with %s', (_, d, b, r, u, cycle) => {
    expect(needsScan({ doc: d, bitmap: b, record: r, usage: u }, cycle)).toBe(true);
  });
});

describe('Function: planDrift with a partial scan', () => {
  it('keeps the strikes of bits outside the scanned spans', () => {
    expect(
      planDrift({
        missing: [],
        leaked: [5],
        previous: { '5': 1, '9000': 2 },
        mayStrike: true,
        threshold: 3,
        scanned: (bit) => bit < 4096,
      }),
    ).toEqual({
      set: [],
      clear: [],
      strikes: { '5': 2, '9000': 2 },
    });
  });
});

describe('Function: usageIntervals and countOrder (utilization)', () => {
  const range = (cidr: string, legacy: boolean): Range => ({
    pool: 'p',
    name: 'r',
    cidr,
    family: cidr.includes(':') ? 'IPv6' : 'IPv4',
    state: 'Ready',
    legacy,
    createdAt: iso(0),
  });

  it('counts a legacy IPv6 range in two parts, its bitmap window first', () => {
    const { intervals, window } = usageIntervals(range('fd00::/108', true));
    expect(window).toBe(0);
    expect(intervals.map(([a, b]) => b - a + 1n)).toEqual([65_535n, 2n ** 20n - 1n - 65_535n]);
  });

  it('counts a legacy IPv4 range and any non-legacy range in one part', () => {
    expect(usageIntervals(range('10.0.0.0/24', true))).toEqual({ intervals: [[0x0a000001n, 0x0a0000fen]], window: 0 });
    expect(usageIntervals(range('10.0.0.0/24', false))).toEqual({ intervals: [[0x0a000001n, 0x0a0000fen]] });
  });

  it('counts passes in progress first, then ranges never counted, then the stalest', () => {
    const records = [
      { cidr: 'c', countedAt: 50 },
      undefined,
      { cidr: 'a', countedAt: 10, pass: { cursor: 'x', used: 0, scanned: [0], startedAt: 40 } },
      { cidr: 'b', countedAt: 20 },
    ];
    // (Sorted by index: Array.prototype.sort never hands `undefined` elements to a comparator.)
    expect([0, 1, 2, 3].sort((a, b) => countOrder(records[a], records[b]))).toEqual([2, 1, 3, 0]);
  });
});

describe('Object: events', () => {
  const labels = { 'cni.ipam/node': 'node-1', app: 'web' };
  const labelled = claim({ spec: { ...claim().spec, labels } });
  const time = iso(NOW);

  it("puts the claim's labels on every event built from a claim", () => {
    // Act
    const built = [
      events.claimExpired(labelled, time),
      events.poolDeleted(labelled, time),
      events.ownerReleased(labelled, time),
      events.leaseNotAllocated(labelled, '10.0.0.5', time),
      events.duplicateAllocation(labelled, lease(), time),
    ];

    // Assess
    expect(built.map((e) => [e.pool, e.time, e.labels])).toEqual(Array(5).fill(['p', time, labels]));
  });

  it('gives {} for a claim without labels, and no labels to an event about a lease alone', () => {
    expect(events.claimExpired(claim(), time).labels).toEqual({});
    expect(events.leaseOrphaned(lease(), 'claimAbsent', time)).not.toHaveProperty('labels');
  });
});
