import { describe, expect, it } from 'vitest';
import type { Claim, Lease, Range } from '../../shared/core/model.ts';
import {
  CLOCK_SKEW_MS,
  expiryHours,
  FIRST_RUN_LOOKBACK_HOURS,
  HOUR_MS,
  isReleasable,
  judgeClaim,
  judgeLease,
  leaseForClaim,
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
    spec: { owner: { kind: 'Pod', name: 'web-0', uid: 'o1' }, ipFamilyPolicy: 'SingleStack', ipFamilies: [], addresses: [] },
    addresses: [{ address: '10.0.0.5', family: 'IPv4', range: 'r' }],
    createdAt: iso(NOW - 3600_000),
    version: 1,
    ...overrides,
  };
}

function lease(overrides: Partial<Lease> = {}): Lease {
  return { pool: 'p', address: '10.0.0.5', family: 'IPv4', range: 'r', claim: 'web', claimUid: 'u1', owner: { kind: 'Pod', name: 'web-0', uid: 'o1' }, createdAt: iso(NOW - 3600_000), ...overrides };
}

describe('Function: expiryHours (row 1)', () => {
  it('reads from the checkpoint hour up to the hour of the cutoff', () => {
    const cutoff = NOW - 30_000;
    expect(expiryHours(Math.floor(cutoff / HOUR_MS) - 2, cutoff)).toEqual([0, 1, 2].map((i) => Math.floor(cutoff / HOUR_MS) - 2 + i));
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
    expect(judgeLease(lease({ createdAt: iso(NOW - grace + 1) }), undefined, NOW, grace)).toEqual({ kind: 'tooYoung', why: 'claimAbsent' });
    expect(judgeLease(lease({ createdAt: iso(NOW - grace) }), undefined, NOW, grace).kind).toBe('orphaned');
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
    const verdict = judgeClaim(c, new Map([['10.0.0.5', lease()], ['10.0.0.7', expired], ['10.0.0.8', other]]), NOW, grace);
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

  it('builds the lease a claim should have, with the claim\'s expiry', () => {
    const c = claim({ expiresAt: NOW + 5 });
    expect(leaseForClaim(c, c.addresses[0]!, iso(NOW))).toEqual(lease({ createdAt: iso(NOW), expiresAt: NOW + 5 }));
  });
});

describe('Function: terminationGraceOver (rows 11-12)', () => {
  const range = (overrides: Partial<Range>): Range => ({ pool: 'p', name: 'r', cidr: '10.0.0.0/24', family: 'IPv4', state: 'Terminating', legacy: false, createdAt: iso(0), ...overrides });

  it('waits the grace after deletion was requested', () => {
    expect(terminationGraceOver(range({ deletionRequestedAt: iso(NOW - 10_000) }), NOW, 10_000)).toBe(true);
    expect(terminationGraceOver(range({ deletionRequestedAt: iso(NOW - 9_999) }), NOW, 10_000)).toBe(false);
  });

  it('never finalizes a Ready range, nor one without a readable request time', () => {
    expect(terminationGraceOver(range({ state: 'Ready', deletionRequestedAt: iso(0) }), NOW, 0)).toBe(false);
    expect(terminationGraceOver(range({}), NOW, 0)).toBe(false);
  });
});
