import { rangeCidr } from '../base/pool-geometry.ts';
import { parseAddress } from '../ip/address.ts';
import { isHostOf } from '../ip/cidr.ts';
import {
  isExpired,
  isReleased,
  RangeState,
  type Claim,
  type ClaimAddress,
  type Lease,
  type PoolView,
  type Range,
} from '../model.ts';

/**
 * The reconciler's pure decisions: what to do about one claim, one lease, one range, given what was read. The table of
 * cases is docs/reconciler.md, "What it repairs"; each function here names the rows it decides.
 */

/** Settings of one run, all in milliseconds (read once from configuration). */
export interface ReconcileSettings {
  /** Row 1: how long after its expiry a claim is released. */
  readonly expiredClaimGraceMs: number;
  /** Rows 3-5: how old an orphaned or wrong lease must be before it is released (never younger); also rows 6-7 and 13. */
  readonly orphanLeaseGraceMs: number;
  /** Row 11: how long after deletion was requested a Terminating range may be removed. */
  readonly terminatingRangeGraceMs: number;
  /** Row 9: consecutive runs that must see a leaked bit before it is cleared. */
  readonly leakStrikes: number;
  /** Rows 1, 3-7 (sweep): claims and leases the slow sweep reads per run. */
  readonly sweepItems: number;
  /** Utilization, and rows 8-9's window scans: lease index items each may read per run. */
  readonly countItems: number;
  /** Rows 22-24: what a run may spend on each pool's DNS zones (default DNS_REPAIR_BUDGET, reconciler/dns.ts). */
  readonly dns?: Partial<DnsRepairBudget>;
}

/** What one run may spend on one pool's DNS zones (rows 22-24, reconciler/dns.ts). */
export interface DnsRepairBudget {
  /** Calls to the pool's DNS target: each zone's listing and each change call. */
  readonly calls: number;
  /** Names changed (published, fixed or removed). */
  readonly changes: number;
  /** Names the service owns in the zones, compared from the checkpoint's cursor on. */
  readonly names: number;
  /** Claims of the pool read and compared, from the checkpoint's cursor on. */
  readonly claims: number;
}

export const HOUR_MS = 3_600_000;

/**
 * Slack for clocks of other Lambdas: a claim written by a handler whose clock is behind ours may still land in an hour
 * bucket we think is over. The expiry checkpoint stays this far behind the cutoff.
 *
 *   hour h-1        | hour h                       | hour h+1
 *   ----------------+---------------[cutoff-skew]--+---[cutoff]----[now]
 *   closed, drained | still read every run (the checkpoint stays on h until cutoff-skew passes its end)
 */
export const CLOCK_SKEW_MS = 60_000;

/** Without a checkpoint (a first run), buckets this many hours back are read; the sweep is the backstop beyond that. */
export const FIRST_RUN_LOOKBACK_HOURS = 48;

/** The expiry bucket (hour number since the epoch) of a time. */
export function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS);
}

/** Row 1: the expiry buckets a run reads, from the checkpoint (or the lookback) up to the cutoff's hour. */
export function expiryHours(checkpointHour: number | undefined, cutoffMs: number): number[] {
  const last = hourOf(cutoffMs);
  const first = Math.min(checkpointHour ?? last - FIRST_RUN_LOOKBACK_HOURS, last);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/**
 * Row 1: where the expiry checkpoint goes after a run: the first bucket not drained (something left to do, or the run
 * stopped there), and never past the last bucket that no new claim can still enter.
 */
export function nextExpiryCheckpoint(firstUndrained: number | undefined, cutoffMs: number): number {
  const closed = hourOf(cutoffMs - CLOCK_SKEW_MS);
  return Math.min(firstUndrained ?? closed, closed);
}

/** Row 1: a claim is released once its expiry is at or before the cutoff (now minus the grace). */
export function isReleasable(claim: Claim, cutoffMs: number): boolean {
  // A claim with consumers is released only by its last one's leaving, whatever expiry it carries.
  return claim.expiresAt !== undefined && claim.expiresAt <= cutoffMs && !claim.consumers?.length;
}

export type LeaseVerdict =
  | { readonly kind: 'held' }
  /** A Released lease within its reuse delay (row 16): held for its previous owner, nothing to do. */
  | { readonly kind: 'releasing' }
  /** A Released lease whose delay is over (row 16): the address is free already; the item is cleaned up. */
  | { readonly kind: 'reusable' }
  | { readonly kind: 'orphaned'; readonly why: 'claimAbsent' | 'otherIncarnation' | 'notListed' }
  | { readonly kind: 'tooYoung'; readonly why: 'claimAbsent' | 'otherIncarnation' | 'notListed' };

/**
 * Rows 3-5: a lease is held when its claim exists as the same incarnation (uid) and lists its address; otherwise it is
 * orphaned, and released only once it is older than the grace (a lease younger than that may belong to a write
 * still in flight).
 */
export function judgeLease(lease: Lease, claim: Claim | undefined, nowMs: number, graceMs: number): LeaseVerdict {
  if (isReleased(lease)) return isExpired(lease, nowMs) ? { kind: 'reusable' } : { kind: 'releasing' };
  let why: 'claimAbsent' | 'otherIncarnation' | 'notListed';
  if (!claim) why = 'claimAbsent';
  else if (claim.uid !== lease.claimUid) why = 'otherIncarnation';
  else if (!claim.addresses.some((a) => a.address === lease.address)) why = 'notListed';
  else return { kind: 'held' };
  return Date.parse(lease.createdAt) <= nowMs - graceMs ? { kind: 'orphaned', why } : { kind: 'tooYoung', why };
}

export type AddressVerdict =
  | { readonly kind: 'held'; readonly address: ClaimAddress }
  | { readonly kind: 'missing'; readonly address: ClaimAddress; readonly expired?: Lease }
  | { readonly kind: 'duplicate'; readonly address: ClaimAddress; readonly holder: Lease };

export type ClaimVerdict =
  | { readonly kind: 'expired' }
  | { readonly kind: 'young' }
  | { readonly kind: 'checked'; readonly addresses: readonly AddressVerdict[] };

/**
 * Rows 6-7: each address of a held claim has a lease of this claim; an address with no lease, or only an expired lease
 * of another claim, is missing (free: it is written back); one held by another claim is a duplicate (reported only).
 * Expired claims are row 1's, and claims younger than the grace are left alone.
 */
export function judgeClaim(
  claim: Claim,
  leases: ReadonlyMap<string, Lease>,
  nowMs: number,
  graceMs: number,
): ClaimVerdict {
  if (isExpired(claim, nowMs)) return { kind: 'expired' };
  if (Date.parse(claim.createdAt) > nowMs - graceMs) return { kind: 'young' };
  return {
    kind: 'checked',
    addresses: claim.addresses.map((address): AddressVerdict => {
      const lease = leases.get(address.address);
      if (!lease) return { kind: 'missing', address };
      if (lease.claimUid === claim.uid) return { kind: 'held', address };
      if (isExpired(lease, nowMs)) return { kind: 'missing', address, expired: lease };
      return { kind: 'duplicate', address, holder: lease };
    }),
  };
}

/** Rows 11-12: a Terminating range may be removed (if nothing depends on it) once the grace since its deletion passed. */
export function terminationGraceOver(range: Range, nowMs: number, graceMs: number): boolean {
  if (range.state !== RangeState.Terminating) return false;
  const requested = range.deletionRequestedAt === undefined ? Number.NaN : Date.parse(range.deletionRequestedAt);
  // A Terminating range without a readable request time is treated as requested now: it waits a full grace.
  return Number.isFinite(requested) && requested + graceMs <= nowMs;
}

/**
 * Row 13: whether a lease's address is a host address of no range of its pool, Ready or Terminating (a lease inside
 * another range that covers it is served by that one). `view` undefined: the pool itself is gone.
 */
export function outsideEveryRange(view: PoolView | undefined, lease: Lease): boolean {
  if (!view) return true;
  const address = parseAddress(lease.address);
  return !view.ranges.some((r) => isHostOf(rangeCidr(r), address));
}

export type RangeVerdict = 'inRange' | 'outside' | 'notYet';

/**
 * Row 13, for a lease its claim holds (rows 3-5 judge the others): `outside` when it lies outside every range of its
 * pool; `notYet` when it does but is younger than the grace (a claim whose range was retired under its commit
 * releases its own lease, see createClaim) or expired (row 1 releases it, or a renew makes it live again).
 */
export function judgeLeaseRange(
  lease: Lease,
  view: PoolView | undefined,
  nowMs: number,
  graceMs: number,
): RangeVerdict {
  if (!outsideEveryRange(view, lease)) return 'inRange';
  return isExpired(lease, nowMs) || Date.parse(lease.createdAt) > nowMs - graceMs ? 'notYet' : 'outside';
}

export { events } from '../events.ts';
