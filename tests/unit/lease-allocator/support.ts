/** What the LeaseAllocator's stage tests share: an in-memory lease store that counts what it is asked, and fixtures. */
import type { ClaimDraft, FamilyRequest } from '../../../shared/core/allocator/allocator.ts';
import { HintCache } from '../../../shared/core/allocator/hint.ts';
import type { Interval } from '../../../shared/core/base/intervals.ts';
import { hostIntervals, rangesOf } from '../../../shared/core/base/pool-geometry.ts';
import { LeaseAllocator } from '../../../shared/core/allocator/lease-allocator.ts';
import { IpFamily, parseAddress } from '../../../shared/core/ip/address.ts';
import {
  IpFamilyPolicy,
  isExpired,
  RangeState,
  type Claim,
  type Lease,
  type PoolView,
  type Range,
} from '../../../shared/core/model.ts';
import type { ClaimStore, Clock, CommitOutcome, LeaseIndex, Random } from '../../../shared/core/ports.ts';
import type { LeaseExpiry } from '../../../shared/core/occupancy/ports.ts';
import { SeededRandom } from '../fakes.ts';

export const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
export const POOL = 'pool-a';

/** A clock that stays where a test puts it. */
export const clockAt = (nowMs: number): Clock => ({ nowMs: () => nowMs });

/**
 * The store's commitClaim in memory, with the adapter's semantics: the claim is written only if absent or expired,
 * each lease only if absent or expired at `nowMs`, all or nothing. `commits` counts every call.
 */
export class InMemoryLeaseStore
  implements Pick<ClaimStore, 'commitClaim' | 'releaseClaim' | 'getClaim'>, Pick<LeaseIndex, 'takenAddresses'>
{
  readonly leases = new Map<string, Lease>();
  readonly claims = new Map<string, Claim>();
  readonly commitCalls: { claim: Claim; leases: readonly Lease[]; nowMs: number }[] = [];
  reads = 0;
  /** When set, commitClaim throws it (a throttle, a timeout, a bug). */
  failWith: Error | undefined;
  /** When set, commitClaim waits for it before answering (a transaction in flight). */
  gate: Promise<void> | undefined;

  get commits(): number {
    return this.commitCalls.length;
  }

  async getClaim(_pool: string, name: string): Promise<Claim | undefined> {
    return this.claims.get(name);
  }

  async releaseClaim(claim: Claim): Promise<'released'> {
    this.claims.delete(claim.name);
    for (const a of claim.addresses)
      if (this.leases.get(a.address)?.claimUid === claim.uid) this.leases.delete(a.address);
    return 'released';
  }

  async commitClaim(claim: Claim, leases: readonly Lease[], nowMs: number): Promise<CommitOutcome> {
    this.commitCalls.push({ claim, leases, nowMs });
    if (this.gate) await this.gate;
    if (this.failWith) throw this.failWith;
    const existing = this.claims.get(claim.name);
    if (existing && !isExpired(existing, nowMs)) return { kind: 'claimExists', existing };
    const taken = leases.flatMap((lease) => {
      const holder = this.leases.get(lease.address);
      return holder && !isExpired(holder, nowMs) ? [{ address: lease.address, holder }] : [];
    });
    if (taken.length) return { kind: 'addressesTaken', taken };
    this.claims.set(claim.name, claim);
    for (const lease of leases) this.leases.set(lease.address, lease);
    return { kind: 'committed' };
  }

  /** Consistent bulk reads of lease items (the occupancy store's leaseStates): calls, and addresses read. */
  bulkReads = 0;
  bulkAddresses = 0;

  /** Every address those reads asked for, in order. */
  readonly statesRead: string[] = [];

  async leaseStates(_pool: string, addresses: readonly string[]): Promise<ReadonlyMap<string, LeaseExpiry>> {
    this.bulkReads += 1;
    this.bulkAddresses += addresses.length;
    this.statesRead.push(...addresses);
    const out = new Map<string, LeaseExpiry>();
    for (const address of addresses) {
      const lease = this.leases.get(address);
      if (lease)
        out.set(
          address,
          lease.expiresAt === undefined ? { expiring: false } : { expiring: true, expiresAt: lease.expiresAt },
        );
    }
    return out;
  }

  async takenAddresses(
    _pool: string,
    family: IpFamily,
    intervals: readonly Interval[],
    nowMs: number,
  ): Promise<bigint[]> {
    this.reads += 1;
    return [...this.leases.values()]
      .filter((l) => l.family === family && !isExpired(l, nowMs))
      .map((l) => parseAddress(l.address).value)
      .filter((value) => intervals.some(([from, to]) => value >= from && value <= to));
  }

  /** Another container's claim holds these addresses. */
  hold(addresses: readonly string[], claim = 'other', expiresAt?: number): void {
    for (const address of addresses) {
      const { family } = parseAddress(address);
      this.leases.set(address, {
        pool: POOL,
        address,
        family,
        range: 'r',
        claim,
        claimUid: `${claim}-uid`,
        owner: { kind: 'Pod', name: claim, uid: `${claim}-owner` },
        createdAt: new Date(NOW).toISOString(),
        ...(expiresAt === undefined ? {} : { expiresAt }),
      });
    }
  }
}

export function rangeOf(name: string, cidr: string, state: Range['state'] = RangeState.Ready): Range {
  return {
    pool: POOL,
    name,
    cidr,
    family: cidr.includes(':') ? IpFamily.IPv6 : IpFamily.IPv4,
    state,
    legacy: false,
    createdAt: new Date(NOW).toISOString(),
  };
}

export function viewOf(cidrs: readonly string[], exclude: readonly string[] = []): PoolView {
  return {
    pool: { name: POOL, exclude, createdAt: new Date(NOW).toISOString() },
    ranges: cidrs.map((cidr) => rangeOf(cidr.replace('/', '-'), cidr)),
  };
}

export function draftOf(name = 'claim-1'): ClaimDraft {
  return {
    pool: POOL,
    name,
    uid: `${name}-uid`,
    spec: {
      owner: { kind: 'Pod', name: 'web', uid: 'owner-1' },
      ipFamilyPolicy: IpFamilyPolicy.SingleStack,
      ipFamilies: [],
      addresses: [],
    },
    createdAt: new Date(NOW).toISOString(),
    version: 1,
  };
}

export const dynamic = (family: IpFamily = IpFamily.IPv4): FamilyRequest => ({ family });
export const explicit = (text: string): FamilyRequest => ({
  family: parseAddress(text).family,
  explicit: parseAddress(text),
});

/** The texts of <prefix><from> .. <prefix><to>. */
export const hosts = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${from + i}`);

/** An allocator over the store with a real HintCache whose reads the store counts. */
export function allocatorOver(store: InMemoryLeaseStore, random: Random = new SeededRandom(1), nowMs = NOW) {
  const hints = new HintCache((pool, family, intervals, at) => store.takenAddresses(pool, family, intervals, at));
  // The scripted rolls drive the scan; random probes are covered in candidates.test.ts.
  const allocator = new LeaseAllocator({
    claims: store,
    hints,
    clock: clockAt(nowMs),
    random,
    probes: 0,
    leaseStates: (pool, addresses) => store.leaseStates(pool, addresses),
  });
  return { allocator, hints };
}

/** Reads the hint now, as a warm container did before other containers moved on (over the intervals the allocator reads). */
export async function warmHint(
  hints: HintCache,
  view: PoolView,
  family: IpFamily = IpFamily.IPv4,
  nowMs = NOW,
): Promise<void> {
  await hints.get({ pool: POOL, family, intervals: hostIntervals(rangesOf(view, family)), nowMs });
}
