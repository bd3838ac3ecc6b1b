import type { Principal } from '../access.ts';
import type { IpFamily } from '../ip/address.ts';
import type { Labels } from '../labels.ts';
import { EndReason, isReleased, type Lease, type Owner } from '../model.ts';
import type { LeaseTransition } from '../base/lease-change.ts';

/** What held an address: a claim, or a reuse-delay hold kept for a previous owner identity after its claim let go. */
export const HoldingKind = { Claim: 'claim', Hold: 'hold' } as const;
export type HoldingKind = (typeof HoldingKind)[keyof typeof HoldingKind];

export { EndReason } from '../model.ts';

/**
 * One holding of an address: from its lease's creation (or, for a hold, its release) to its end. Open holdings
 * (`to` absent) are the lease items themselves; the stream function writes a holding once it has ended.
 */
export interface Holding {
  readonly pool: string;
  readonly address: string;
  readonly family: IpFamily;
  readonly range: string;
  readonly kind: HoldingKind;
  readonly claim: string;
  /** The claim incarnation; empty for a hold. */
  readonly claimUid: string;
  readonly owner: Owner;
  /** ISO time the holding began: the lease's `createdAt`, or a hold's `releasedAt`. */
  readonly from: string;
  /** ISO time it ended; absent while it lasts. */
  readonly to?: string;
  /**
   * False when `to` is an upper bound: a client's release deletes the lease, and a deletion carries no time of its
   * own, so its end is when the stream function read it (cut at the next holding's start). True when the change
   * carried its time (an expiry, a release into a hold, a repair's event, a takeover).
   */
  readonly toExact?: boolean;
  readonly endReason?: EndReason;
  /** Epoch ms the lease would have stopped holding the address (its TTL), as last known; absent: no TTL. */
  readonly expiresAt?: number;
  /** The claim's labels (copied onto its leases); absent: none. */
  readonly labels?: Labels;
  /** Who created the claim; absent when unrecorded (unsigned, or a lease written before leases carried it). */
  readonly createdBy?: Principal;
  /**
   * Who ended the holding, where a caller did and the change says so: a release into a reuse-delay hold (the Released
   * lease carries it), an owner reported gone through the API, or any release in a pool with `access` (their events
   * do). Absent for a client's release in a pool with neither a reuse delay nor `access` (a deletion carries no
   * principal: the write's audit line has it) and for the reconciler's own repairs (their `endReason` says why).
   */
  readonly releasedBy?: Principal;
}

/** The first holding sort key after every holding that began at `ms` ('$' sorts right after the '#' of `<from>#<id>`). */
export function afterStart(ms: number): string {
  return `${new Date(ms).toISOString()}$`;
}

/** A holding's identity, from the lease's own version (its creation time and claim incarnation): stable under redelivery. */
export function holdingId(h: Pick<Holding, 'from' | 'claimUid' | 'kind'>): string {
  return `${h.from}#${h.kind === HoldingKind.Hold ? 'hold' : h.claimUid}`;
}

/** The holding a lease item stands for (open: no end). */
export function holdingOfLease(lease: Lease): Holding {
  const hold = isReleased(lease);
  return {
    pool: lease.pool,
    address: lease.address,
    family: lease.family,
    range: lease.range,
    kind: hold ? HoldingKind.Hold : HoldingKind.Claim,
    claim: lease.claim,
    claimUid: hold ? '' : lease.claimUid,
    owner: lease.owner,
    from: hold ? (lease.releasedAt ?? lease.createdAt) : lease.createdAt,
    ...(lease.expiresAt !== undefined ? { expiresAt: lease.expiresAt } : {}),
    ...(lease.labels ? { labels: lease.labels } : {}),
    ...(lease.createdBy ? { createdBy: lease.createdBy } : {}),
  };
}

/**
 * A lease item as the history sees it at `nowMs`: an open holding, or, once its TTL has passed (nothing deleted it
 * yet, but every allocation already treats it as free), the holding ended at its expiry.
 */
export function holdingAt(lease: Lease, nowMs: number): Holding {
  const open = holdingOfLease(lease);
  if (lease.expiresAt === undefined || lease.expiresAt > nowMs) return open;
  return ended(open, {
    toMs: Math.max(lease.expiresAt, Date.parse(open.from)),
    exact: true,
    reason: open.kind === HoldingKind.Hold ? EndReason.HoldEnded : EndReason.Expired,
  });
}

function ended(
  h: Holding,
  {
    toMs,
    exact,
    reason,
    by,
  }: {
    readonly toMs: number;
    readonly exact: boolean;
    readonly reason: EndReason;
    readonly by?: Principal | undefined;
  },
): Holding {
  return {
    ...h,
    to: new Date(toMs).toISOString(),
    toExact: exact,
    endReason: reason,
    ...(by ? { releasedBy: by } : {}),
  };
}

/** A reconciler repair that released a lease, as its event tells (written in the same transaction as the release). */
export interface RepairRecord {
  readonly reason: EndReason;
  /** Epoch ms of the repair. */
  readonly atMs: number;
  /** The caller whose request made it (an owner reported gone through the API); absent: the reconciler's own. */
  readonly by?: Principal;
}

/** Which facts a deletion needs from outside the change: a repair's event (undefined when none). */
export type RepairLookup = (before: Lease) => RepairRecord | undefined;

/**
 * The holding a lease change ended, if any, with its exact end where the change carries one (`seenMs`: when the
 * stream function read the change, the latest its commit can have been):
 *
 *   before      after                        ended holding     to                                   why
 *   -           lease                        -                 (a holding begins: the lease is it)
 *   L           L, same version              -                 (renewal, confirmation: same holding)
 *   claim L     Released of L                L                 min(expiry, releasedAt)              the Released item's endReason
 *   claim L     another claim's lease        L                 min(expiry, its creation)            expired (only an expired lease is taken)
 *   hold H      any lease                    H                 min(expiry, its creation)            holdEnded
 *   claim L     -, TTL, or expired before    L                 expiry                               expired
 *   claim L     -, with a repair event       L                 the repair's time                    the repair's reason
 *   claim L     -, otherwise                 L                 min(expiry, seenMs), an upper bound  released
 *   hold H      -                            H                 expiry (only an expired hold goes)   holdEnded
 *
 * A client's release deletes the lease and a deletion carries no time: DynamoDB stamps its record to the second (the
 * local engine to the minute), so its end is the bound the stream function saw, `toExact` false, and the next
 * holding's exact start cuts it (effectiveEnds). Ends never precede the holding's start.
 */
export function endedHolding(change: LeaseTransition, seenMs: number, repair: RepairLookup): Holding | undefined {
  const { before, after } = change;
  if (!before) return undefined;
  const old = holdingOfLease(before);
  const startMs = Date.parse(old.from);
  const expiry = before.expiresAt ?? Number.POSITIVE_INFINITY;
  const end = (toMs: number, exact: boolean, reason: EndReason, by?: Principal) =>
    ended(old, { toMs: Math.max(startMs, toMs), exact, reason, by });
  if (after) {
    const next = holdingOfLease(after);
    if (holdingId(next) === holdingId(old)) return undefined;
    const nextStart = Date.parse(next.from);
    if (old.kind === HoldingKind.Hold) return end(Math.min(expiry, nextStart), true, EndReason.HoldEnded);
    if (next.kind === HoldingKind.Hold) {
      const why = after.endReason ?? EndReason.Released;
      return expiry <= nextStart ? end(expiry, true, EndReason.Expired) : end(nextStart, true, why, after.releasedBy);
    }
    return end(Math.min(expiry, nextStart), true, EndReason.Expired);
  }
  if (old.kind === HoldingKind.Hold)
    return expiry <= seenMs ? end(expiry, true, EndReason.HoldEnded) : end(seenMs, false, EndReason.HoldEnded);
  if (change.byTtl || expiry <= change.atMs) return end(expiry, true, EndReason.Expired);
  const record = repair(before);
  if (record)
    return record.reason !== EndReason.Expired && expiry <= record.atMs
      ? end(expiry, true, EndReason.Expired)
      : end(Math.min(expiry, record.atMs), true, record.reason, record.by);
  return end(Math.min(expiry, seenMs), false, EndReason.Released);
}

/** The id (holdingId) of the holding a change ends, if it ends one (a release, a takeover, a hold's end). */
export function endedHoldingId(change: LeaseTransition): string | undefined {
  if (!change.before) return undefined;
  const id = holdingId(holdingOfLease(change.before));
  return change.after && holdingId(holdingOfLease(change.after)) === id ? undefined : id;
}

/**
 * Newest-first holdings of one address with each end cut at the next holding's start: a deletion's end is known only
 * to the second, while the next holding's start is exact, so two holdings never overlap. `newerFrom`: the start of the
 * holding just newer than the first (a previous page's last).
 */
export function effectiveEnds(newestFirst: readonly Holding[], newerFrom?: string): Holding[] {
  return newestFirst.map((h, i) => {
    const next = i > 0 ? newestFirst[i - 1]!.from : newerFrom;
    if (next === undefined || h.to === undefined || h.to <= next) return h;
    return { ...h, to: next < h.from ? h.from : next, toExact: true };
  });
}

/** True when the holding covered the instant `atMs` (from inclusive, to exclusive). */
export function heldAt(h: Holding, atMs: number): boolean {
  return Date.parse(h.from) <= atMs && (h.to === undefined || atMs < Date.parse(h.to));
}
