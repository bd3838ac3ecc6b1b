import type { Claim, ClaimAddress } from '../../../core/model.ts';
import { expiryIndex, ttlOf } from '../codec.ts';
import {
  both,
  claimUidIs,
  expiresAtIs,
  belongsToClaim,
  hasNoChildren,
  hasNoConsumers,
  versionIs,
  type Condition,
} from '../conditions.ts';
import { keys } from '../keys.ts';
import type { TxVerdict, Update, WriteOp } from '../table.ts';
import { freedBumps, packFreeing } from './freed.ts';

/**
 * `claimChanged`: the claim is gone, another incarnation, or its expiry is no longer the one read (a renewal
 * meanwhile); `lost`: a lease expired and went to another claim; `conflict`: another transaction was writing one of
 * its items (which one DynamoDB names is not telling: two renewals of one claim may conflict on a lease).
 */
export type RenewVerdict = 'claimChanged' | 'lost' | 'conflict';

/** What a claim without an expiry drops: its expiry, DynamoDB's TTL attribute and its expiry index keys. */
const EXPIRY_ATTRIBUTES = ['expiresAt', 'ttl', 'GSI3PK', 'GSI3SK'] as const;

/** The expiry an item moves to: `expiresAt` plus `extra`, with its TTL and (indexed items) its expiry index entry. */
function movedExpiry(
  to: { readonly pool: string; readonly expiresAt: number | undefined },
  name: string,
  indexed: boolean,
  extra: number,
): Update {
  const { pool, expiresAt } = to;
  if (expiresAt === undefined) return { remove: indexed ? [...EXPIRY_ATTRIBUTES] : ['expiresAt', 'ttl'] };
  return {
    set: {
      expiresAt: expiresAt + extra,
      ...ttlOf(expiresAt + extra),
      ...(indexed ? expiryIndex(pool, name, expiresAt + extra) : {}),
    },
  };
}

/**
 * The renewal's claim condition: still this incarnation at the expiry read. An expiry is never set on a claim whose
 * block is another pool's range (Claim.children), nor on one with consumers: it would let the block go, or the
 * reconciler release the addresses its consumers share.
 */
function renewalCondition(claim: Claim, expiresAt: number | undefined): Condition {
  return expiresAt === undefined
    ? both(claimUidIs(claim.uid), expiresAtIs(claim.expiresAt))
    : both(claimUidIs(claim.uid), expiresAtIs(claim.expiresAt), hasNoChildren(), hasNoConsumers());
}

/**
 * A renewal: one TransactWriteItems moving the claim, its marker and every lease to the new expiry together:
 *
 *   Update claim       uid = claim.uid, expiresAt as read   SET expiresAt, ttl, expiry index; ADD version 1   -> claimChanged
 *                      (for an expiry: no children, no consumers)
 *   Update generated   claimUid = claim.uid                 SET expiresAt, ttl                                 (when held)
 *   Update lease       claimUid = claim.uid                 SET expiresAt + holdMs, ttl, expiry index          -> lost
 *   Update freed       ADD n 1 (one shard per range; only for an expiry earlier than the one read, or a first one)
 *
 * Leases move to their new expiry bucket with the claim, so the expiry index never points at a stale hour. In a pool
 * with a reuse delay a lease outlives its claim's expiry by `holdMs`, so an expired claim's addresses stay held for
 * its owner until the delay has passed, whenever the reconciler releases the claim.
 *
 * `expiresAt` undefined makes the claim permanent: the same items, with the same conditions, REMOVE expiresAt, ttl and the
 * expiry index keys instead, so the claim is permanent (the reconciler's expiry query and DynamoDB's TTL no longer
 * see any of them) and its leases are held like those of a claim made without a TTL.
 *
 * An earlier expiry over more ranges than one transaction holds with their bumps (packFreeing) moves the
 * other leases in `later` transactions once the first committed, each with its ranges' bumps and a check that the
 * claim is still the one this renewal wrote (its version): a renewal that wrote it since moves every lease itself.
 * Until they commit, those leases keep their later expiry: they outlive the claim, as a reuse delay makes them, never
 * the other way round, and its release (by anyone) frees them with it.
 *
 *   Check claim        uid = claim.uid, version = claim.version + 1                                        -> claimChanged
 *   Update lease       claimUid = claim.uid                 SET expiresAt + holdMs, ttl, expiry index          -> lost
 *   Update freed       ADD n 1 (each range of these leases)
 */
export function claimRenewal(
  claim: Claim,
  expiresAt: number | undefined,
  markerHeld: boolean,
  holdMs = 0,
): {
  ops: WriteOp[];
  later: WriteOp[][];
  decode: (verdicts: readonly TxVerdict[], leasesFrom?: number) => RenewVerdict;
} {
  const mine = belongsToClaim(claim.uid);
  const moved = (name: string, indexed: boolean, extra = 0): Update =>
    movedExpiry({ pool: claim.pool, expiresAt }, name, indexed, extra);
  const ops: WriteOp[] = [
    {
      kind: 'update',
      key: keys.claim(claim.pool, claim.name),
      update: { ...moved(claim.name, true), add: { version: 1 } },
      condition: renewalCondition(claim, expiresAt),
    },
  ];
  if (markerHeld)
    ops.push({
      kind: 'update',
      key: keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName!),
      update: moved(claim.name, false),
      condition: mine,
    });
  // A used-up seal read each lease's expiry (its `until` is the earliest): only an expiry earlier than that, or one
  // where there was none, can free an address before the seal says. The leases' expiry is the claim's plus the pool's
  // reuse delay, and the claim's write holds only while its expiry is the one read, so a later one needs no bump.
  const earlier = expiresAt !== undefined && (claim.expiresAt === undefined || expiresAt < claim.expiresAt);
  const leaseOps = (addresses: readonly ClaimAddress[]): WriteOp[] => [
    ...addresses.map(
      (a): WriteOp => ({
        kind: 'update',
        key: keys.lease(claim.pool, a.address),
        update: moved(a.address, true, holdMs),
        condition: mine,
      }),
    ),
    ...(earlier
      ? freedBumps(
          claim.pool,
          addresses.map((a) => a.range),
          claim.uid,
        )
      : []),
  ];
  const byRange = [...claim.addresses].sort((a, b) => a.range.localeCompare(b.range));
  const firstLease = ops.length;
  const [now = [], ...rest] = packFreeing(byRange, (a) => (earlier ? a.range : undefined), {
    first: firstLease,
    later: 1,
  });
  ops.push(...leaseOps(now));
  const check: WriteOp = {
    kind: 'check',
    key: keys.claim(claim.pool, claim.name),
    condition: both(claimUidIs(claim.uid), versionIs(claim.version + 1)),
  };
  const later = rest.map((share) => [check, ...leaseOps(share)]);
  // The claim's verdict comes first in every one of them; the leases' after the marker's (first) or the check (later).
  const decode = (verdicts: readonly TxVerdict[], leasesFrom = firstLease): RenewVerdict => {
    if (verdicts[0]?.code === 'ConditionalCheckFailed') return 'claimChanged';
    if (verdicts.slice(leasesFrom).some((v) => v.code === 'ConditionalCheckFailed')) return 'lost';
    return 'conflict';
  };
  return { ops, later, decode };
}
