import type { Principal } from '../access.ts';
import { rangeCidr } from '../allocator/pool-geometry.ts';
import { parseAddress } from '../ip/address.ts';
import { isHostOf } from '../ip/cidr.ts';
import { isExpired, isReleased, RangeState, type Claim, type ClaimAddress, type Consumer, type Hold, type Lease, type PoolView, type Range } from '../model.ts';
import { EventReason, type IpamEvent } from './ports.ts';

/**
 * The reconciler's pure decisions: what to do about one claim, one lease, one range, given what was read. The table of
 * cases is at the top of reconcile.ts; each function here names the rows it decides.
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
  return claim.expiresAt !== undefined && claim.expiresAt <= cutoffMs;
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
export function judgeClaim(claim: Claim, leases: ReadonlyMap<string, Lease>, nowMs: number, graceMs: number): ClaimVerdict {
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
export function judgeLeaseRange(lease: Lease, view: PoolView | undefined, nowMs: number, graceMs: number): RangeVerdict {
  if (!outsideEveryRange(view, lease)) return 'inRange';
  return isExpired(lease, nowMs) || Date.parse(lease.createdAt) > nowMs - graceMs ? 'notYet' : 'outside';
}

const whyText = {
  claimAbsent: 'its claim no longer exists',
  otherIncarnation: 'its claim was deleted and made again (another uid)',
  notListed: 'its claim does not list this address',
} as const;

/** The sentence a release adds when a reuse delay holds the addresses for their owner identity. */
function heldText(owner: { kind: string; name: string }, hold: Hold | undefined): string {
  return hold ? ` The addresses are held for ${owner.kind}/${owner.name} until ${new Date(hold.reusableAt).toISOString()} (the pool's reuse delay); that owner gets them back when it claims again.` : '';
}

/** What every event about a claim carries: its pool, the time, and the claim's labels. */
function aboutClaim(claim: Claim, time: string): Pick<IpamEvent, 'pool' | 'time' | 'labels' | 'addresses'> {
  return { pool: claim.pool, time, labels: claim.spec.labels ?? {}, addresses: claim.addresses.map((a) => a.address) };
}

/** The event of each repair, with a sentence an operator can act on; an event built from a claim carries its labels. */
export const events = {
  claimExpired: (claim: Claim, time: string, hold?: Hold): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.ClaimExpired,
    object: `claim/${claim.name}`,
    claimUid: claim.uid,
    message: `Claim ${claim.name} (uid ${claim.uid}, owner ${claim.spec.owner.kind}/${claim.spec.owner.name}) expired at ${new Date(claim.expiresAt ?? 0).toISOString()} and was released with ${addressList(claim)}.${heldText(claim.spec.owner, hold)}`,
  }),
  historyGap: (pool: string, address: string, ended: { readonly claimUid: string; readonly reason: EventReason; readonly atMs: number }, time: string): IpamEvent => ({
    pool,
    time,
    reason: EventReason.HistoryGap,
    object: `lease/${address}`,
    message: `The address history of ${address} has no holding of claim uid ${ended.claimUid}, which a ${ended.reason} repair released at ${new Date(ended.atMs).toISOString()}: the stream function skipped that lease change past its retries (see MirrorFailureQueue). Holdings of that time are incomplete; nothing was changed.`,
  }),
  historyGapOfChange: (pool: string, address: string, holding: string, atMs: number, time: string): IpamEvent => ({
    pool,
    time,
    reason: EventReason.HistoryGap,
    object: `lease/${address}`,
    message: `The address history of ${address} has no holding ${holding}, which a lease change of ${new Date(atMs).toISOString()} ended: the stream function failed to record it and the stream skipped it past its retries (see MirrorFailureQueue). Holdings of that time are incomplete; nothing was changed.`,
  }),
  rangeRetired: (claim: Claim, time: string): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.RangeRetired,
    object: `claim/${claim.name}`,
    claimUid: claim.uid,
    message: `A range of pool ${claim.pool} was marked Terminating or removed while claim ${claim.name} (uid ${claim.uid}, owner ${claim.spec.owner.kind}/${claim.spec.owner.name}) was being committed; the claim was released with ${addressList(claim)} before it was answered, and allocated again.`,
  }),
  poolDeleted: (claim: Claim, time: string): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.PoolDeleted,
    object: `claim/${claim.name}`,
    claimUid: claim.uid,
    message: `Pool ${claim.pool} was deleted while claim ${claim.name} (uid ${claim.uid}, owner ${claim.spec.owner.kind}/${claim.spec.owner.name}) was being committed; the claim was released with ${addressList(claim)}.`,
  }),
  claimReleased: (claim: Claim, time: string, by: Principal): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.ClaimReleased,
    object: `claim/${claim.name}`,
    claimUid: claim.uid,
    principal: by.arn,
    message: `Claim ${claim.name} (uid ${claim.uid}, owner ${claim.spec.owner.kind}/${claim.spec.owner.name}) was released by ${by.arn}${by.session ? ` (session ${by.session})` : ''} with ${addressList(claim)}.`,
  }),
  ownerReleased: (claim: Claim, time: string, hold?: Hold): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.OwnerReleased,
    object: `claim/${claim.name}`,
    claimUid: claim.uid,
    message: `Owner ${claim.spec.owner.kind}/${claim.spec.owner.name} (uid ${claim.spec.owner.uid}) is gone; claim ${claim.name} was released with ${addressList(claim)}.${heldText(claim.spec.owner, hold)}`,
  }),
  consumerAdded: (claim: Claim, consumer: Consumer, time: string, by?: Principal): IpamEvent =>
    consumerEvent(claim, time, EventReason.ConsumerAdded, by, `Consumer ${consumerName(consumer)} joined claim ${claim.name} (uid ${claim.uid}), which now has ${(claim.consumers?.length ?? 0) + 1} consumer${claim.consumers?.length ? 's' : ''}.`),
  consumerRemoved: (claim: Claim, consumer: Consumer, time: string, by?: Principal): IpamEvent => {
    const left = (claim.consumers?.length ?? 1) - 1;
    const after = left === 0 ? `its last: the claim was released with ${addressList(claim)}` : `which keeps ${left} consumer${left === 1 ? '' : 's'}`;
    return consumerEvent(claim, time, EventReason.ConsumerRemoved, by, `Consumer ${consumerName(consumer)} left claim ${claim.name} (uid ${claim.uid}), ${after}.`);
  },
  leaseOrphaned: (lease: Lease, why: keyof typeof whyText, time: string, hold?: Hold): IpamEvent => ({
    pool: lease.pool,
    time,
    reason: EventReason.LeaseOrphaned,
    object: `lease/${lease.address}`,
    claimUid: lease.claimUid,
    addresses: [lease.address],
    message: `Lease of ${lease.address} (claim ${lease.claim}, uid ${lease.claimUid}) was released: ${whyText[why]}.${heldText(lease.owner, hold)}`,
  }),
  leaseNotAllocated: (claim: Claim, address: string, time: string): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.LeaseNotAllocated,
    object: `lease/${address}`,
    message: `Claim ${claim.name} lists ${address} but had no lease for it; the lease was written back.`,
  }),
  duplicateAllocation: (claim: Claim, holder: Lease, time: string): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.DuplicateAllocation,
    object: `lease/${holder.address}`,
    message: `Claim ${claim.name} lists ${holder.address}, which claim ${holder.claim} (uid ${holder.claimUid}) holds; nothing was changed.`,
  }),
  leaseOutsideRange: (lease: Lease, time: string): IpamEvent => ({
    pool: lease.pool,
    time,
    reason: EventReason.LeaseOutsideRange,
    object: `lease/${lease.address}`,
    message: `Lease of ${lease.address} (claim ${lease.claim}, uid ${lease.claimUid}, range ${lease.range}) lies in no Ready or Terminating range of pool ${lease.pool}; its claim still holds it, so nothing was changed: release the claim, or create a range that covers the address.`,
  }),
  rangeFinalized: (range: Range, time: string): IpamEvent => ({
    pool: range.pool,
    time,
    reason: EventReason.RangeFinalized,
    object: `range/${range.name}`,
    message: `Range ${range.name} (${range.cidr}) was Terminating since ${range.deletionRequestedAt ?? 'an unknown time'} with no dependent lease and was removed.`,
  }),
} as const;

const consumerName = (c: Consumer): string => `${c.kind}/${c.name} (uid ${c.uid})`;

/** An event about a claim's consumers: no claim uid nor addresses (it releases nothing the address history reads). */
function consumerEvent(claim: Claim, time: string, reason: EventReason, by: Principal | undefined, message: string): IpamEvent {
  return { pool: claim.pool, time, labels: claim.spec.labels ?? {}, reason, object: `claim/${claim.name}`, ...(by ? { principal: by.arn } : {}), message };
}

function addressList(claim: Claim): string {
  return claim.addresses.length ? `address${claim.addresses.length > 1 ? 'es' : ''} ${claim.addresses.map((a) => a.address).join(', ')}` : 'no address';
}
