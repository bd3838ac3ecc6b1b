/** Events: why addresses went or came back, with a sentence an operator can act on; the words every layer shares. */
import type { Principal } from './access.ts';
import type { Labels } from './labels.ts';
import { EndReason, prefixOf, type Claim, type Consumer, type Hold, type Lease, type Range } from './model.ts';

export { EndReason };

/** Why an event was recorded; one reason per kind of repair (or report) in the reconciler's table. */
export const EventReason = {
  /** A claim expired more than the grace ago and was released with its leases. */
  ClaimExpired: 'ClaimExpired',
  /** An owner was reported gone (DELETE .../owners/{uid}) and one of its claims was released. */
  OwnerReleased: 'OwnerReleased',
  /** A lease whose claim is gone, is another incarnation, or does not list the address was released. */
  LeaseOrphaned: 'LeaseOrphaned',
  /** A held claim listed an address with no lease; the lease was written back. */
  LeaseNotAllocated: 'LeaseNotAllocated',
  /** A held claim lists an address another claim holds; reported, nothing changed. */
  DuplicateAllocation: 'DuplicateAllocation',
  /** A lease its claim holds lies in no Ready or Terminating range of its pool; reported, nothing changed. */
  LeaseOutsideRange: 'LeaseOutsideRange',
  /** A legacy bitmap missed bits of existing leases; they were set. */
  BitmapRepaired: 'BitmapRepaired',
  /** A legacy bitmap held bits with no lease for the configured number of consecutive runs; they were cleared. */
  BitmapLeakCleared: 'BitmapLeakCleared',
  /** Dual-write is off (DisableAllocatorDualWrite=true) and a legacy bitmap item was deleted. */
  BitmapRemoved: 'BitmapRemoved',
  /** A Terminating range with no dependent lease was removed after its grace period. */
  RangeFinalized: 'RangeFinalized',
  /** A claim of a deleted pool (committed as the pool was deleted, not yet in its claims listing) was released. */
  PoolDeleted: 'PoolDeleted',
  /**
   * A claim committed while its range was being retired (marked Terminating or removed) was released before it was
   * answered (use-cases/claims.ts createClaim), and allocated again elsewhere. Written in the release's transaction.
   */
  RangeRetired: 'RangeRetired',
  /**
   * A lease change the stream function never recorded (skipped past its retries and its records' maximum age): a
   * release repair's event is older than that age, yet the address history has no holding of that claim incarnation
   * at that address. Reported once; nothing changed (shared/core/reconciler/history.ts).
   */
  HistoryGap: 'HistoryGap',
  /**
   * A caller released a claim in a pool with `access` (a pool that says who may do what records who did), without a
   * reuse delay: written by the API in the release's transaction, so the address history names who released each
   * address, and when, exactly (a deletion names no principal by itself).
   */
  ClaimReleased: 'ClaimReleased',
  /** A consumer joined a claim (POST .../claims/{claim}/consumers): written with the change, in its transaction. */
  ConsumerAdded: 'ConsumerAdded',
  /**
   * A consumer left a claim (DELETE .../consumers/{uid}, or its uid's owner release), written with the change; the
   * last one's leaving releases the claim in the same transaction, recorded as any release.
   */
  ConsumerRemoved: 'ConsumerRemoved',
  /**
   * A block a pool took from its parent by growing (owner `Pool/<pool>`) that no range of that pool is made from any
   * more, and that its range's removal did not give back (a failed best-effort release), was released by the reconciler.
   */
  GrownBlockReleased: 'GrownBlockReleased',
  /** A family of the pool fell below one of its free-space thresholds, or filled up (core/occupancy/exhaustion.ts). */
  PoolFreeBelowThreshold: 'PoolFreeBelowThreshold',
  /** A family of the pool is back above a threshold it had fallen below, or no longer full. */
  PoolFreeRecovered: 'PoolFreeRecovered',
  /**
   * A DNS name a claim would publish is held by records the service did not make (or by another claim of the pool):
   * reported once as the claim's name turns taken, nothing written to the zone (core/dns).
   */
  DnsNameTaken: 'DnsNameTaken',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/** A record of one repair, kept 24 hours and listed per pool (Kubernetes' Event, reduced). */
export interface IpamEvent {
  readonly pool: string;
  /** ISO time of the repair. */
  readonly time: string;
  readonly reason: EventReason;
  /** What was repaired, as `<kind>/<name>`: `claim/web`, `lease/10.0.0.7`, `range/blue`, `bitmap/blue`. */
  readonly object: string;
  /** One sentence for an operator. */
  readonly message: string;
  /**
   * The claim incarnation a release repair let go of: stored on the event item (not listed), so the address history
   * tells which lease deletion the repair was (shared/core/history).
   */
  readonly claimUid?: string;
  /**
   * The addresses a release repair let go of (stored on the event item, not listed), so the reconciler can check
   * later that the address history recorded each of them (shared/core/reconciler/history.ts).
   */
  readonly addresses?: readonly string[];
  /** The caller whose request made the repair (an owner reported gone through the API); absent: the reconciler's own. */
  readonly principal?: string;
  /** Made by a request that named no principal (an unsigned call to the local stack), not by the reconciler. */
  readonly anonymous?: boolean;
  /** The labels of the claim the event is about (`{}` when it has none); absent on events about no claim. */
  readonly labels?: Labels;
}

/** How long events are kept and listed. */
export const EVENT_RETENTION_MS = 24 * 3600 * 1000;

const whyText = {
  claimAbsent: 'its claim no longer exists',
  otherIncarnation: 'its claim was deleted and made again (another uid)',
  notListed: 'its claim does not list this address',
} as const;

/** The sentence a release adds when a reuse delay holds the addresses for their owner identity. */
function heldText(owner: { kind: string; name: string }, hold: Hold | undefined): string {
  return hold
    ? ` The addresses are held for ${owner.kind}/${owner.name} until ${new Date(hold.reusableAt).toISOString()} (the pool's reuse delay); that owner gets them back when it claims again.`
    : '';
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
  historyGap: (
    pool: string,
    address: string,
    ended: { readonly claimUid: string; readonly reason: EventReason; readonly atMs: number },
    time: string,
  ): IpamEvent => ({
    pool,
    time,
    reason: EventReason.HistoryGap,
    object: `lease/${address}`,
    message: `The address history of ${address} has no holding of claim uid ${ended.claimUid}, which a ${ended.reason} repair released at ${new Date(ended.atMs).toISOString()}: the stream function skipped that lease change past its retries (see MirrorFailureQueue). Holdings of that time are incomplete; nothing was changed.`,
  }),
  historyGapOfChange: (
    {
      pool,
      address,
      holding,
      atMs,
    }: { readonly pool: string; readonly address: string; readonly holding: string; readonly atMs: number },
    time: string,
  ): IpamEvent => ({
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
  grownBlockReleased: (claim: Claim, grower: string, time: string, hold?: Hold): IpamEvent => ({
    ...aboutClaim(claim, time),
    reason: EventReason.GrownBlockReleased,
    object: `claim/${claim.name}`,
    claimUid: claim.uid,
    message: `Claim ${claim.name} (uid ${claim.uid}) is a block pool ${grower} took by growing, and no range of ${grower} is made from it any more (its range went without giving it back, or the pool is gone); it was released with ${addressList(claim)}.${heldText(claim.spec.owner, hold)}`,
  }),
  consumerAdded: (claim: Claim, consumer: Consumer, time: string, by?: Principal): IpamEvent =>
    consumerEvent(
      claim,
      { time, reason: EventReason.ConsumerAdded, by },
      `Consumer ${consumerName(consumer)} joined claim ${claim.name} (uid ${claim.uid}), which now has ${(claim.consumers?.length ?? 0) + 1} consumer${claim.consumers?.length ? 's' : ''}.`,
    ),
  consumerRemoved: (claim: Claim, consumer: Consumer, time: string, by?: Principal): IpamEvent => {
    const left = (claim.consumers?.length ?? 1) - 1;
    const after =
      left === 0
        ? `its last: the claim was released with ${addressList(claim)}`
        : `which keeps ${left} consumer${left === 1 ? '' : 's'}`;
    return consumerEvent(
      claim,
      { time, reason: EventReason.ConsumerRemoved, by },
      `Consumer ${consumerName(consumer)} left claim ${claim.name} (uid ${claim.uid}), ${after}.`,
    );
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
function consumerEvent(
  claim: Claim,
  { time, reason, by }: { readonly time: string; readonly reason: EventReason; readonly by: Principal | undefined },
  message: string,
): IpamEvent {
  return {
    pool: claim.pool,
    time,
    labels: claim.spec.labels ?? {},
    reason,
    object: `claim/${claim.name}`,
    ...(by ? { principal: by.arn } : {}),
    message,
  };
}

function addressList(claim: Claim): string {
  if (!claim.addresses.length) return 'no address';
  // A block claim's entries are blocks: named as CIDRs, as the API answers them.
  const noun = claim.addresses[0]!.prefixLength === undefined ? ['address', 'addresses'] : ['block', 'blocks'];
  return `${noun[claim.addresses.length > 1 ? 1 : 0]} ${claim.addresses.map(prefixOf).join(', ')}`;
}
