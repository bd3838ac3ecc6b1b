import type { BitmapWrite } from '../../../core/bitmap/ports.ts';
import {
  holdIdentityOf,
  leaseOfClaim,
  releasedLease,
  sameHoldIdentity,
  type Claim,
  type Lease,
} from '../../../core/model.ts';
import type { CommitOutcome, Replacing } from '../../../core/ports.ts';
import { bitmapToItem, claimToItem, generatedToItem, itemToClaim, itemToLease, leaseToItem } from '../codec.ts';
import { bitmapIs, either, belongsToClaim, isFreeAt, isTakeableBy } from '../conditions.ts';
import type { TxVerdict, WriteOp } from '../table.ts';
import { freedBumps } from './freed.ts';
import { lostRace } from './verdicts.ts';

/** What a claim commit writes besides the claim, its marker and its leases. */
export interface CommitExtras {
  /** Legacy bitmaps written in the same transaction (the bitmap allocator). */
  readonly bitmaps?: readonly BitmapWrite[];
  /** The expired claim of the same name this one replaces (a reuse delay): its leases are converted here (ClaimStore). */
  readonly replacing?: Replacing;
}

/**
 * What a claim commit's cancellation means. `existing` and `claimName` are missing when DynamoDB did not return the
 * item that failed the condition; the store reads it then.
 */
export type CommitVerdict =
  | CommitOutcome
  | { readonly kind: 'claimExistsUnread' }
  | { readonly kind: 'generatedNameExistsUnread' }
  | { readonly kind: 'bitmapsChanged'; readonly ranges: readonly string[] }
  /** Another transaction on the claim or its marker was in flight: the request may be retried. */
  | { readonly kind: 'conflict' };

/**
 * A claim commit: one TransactWriteItems, in this order (the order the verdicts come back in):
 *
 *   Put claim       absent OR expired            -> claimExists
 *   Put generated   absent OR expired            -> generatedNameExists      (only with generateName)
 *   Put lease       absent OR expired OR held for this owner identity -> addressesTaken (with the holder, ALL_OLD)
 *                   [OR still the replaced claim's]
 *   Put Released    still the replaced claim's   -> conflict (NotReady)     (extras.replacing: its other leases)
 *   Put bitmap      version = v | absent         -> bitmapsChanged           (extras.bitmaps)
 *   Update freed    ADD n 1                                                  (each range of the Released ones)
 *
 * "Expired" uses `nowMs`: an expired lease is free before anything deletes it. "Held for this owner identity": a
 * Released lease of a pool with a reuse delay, whose previous owner kind and name and creator are the claim's (a
 * sticky address; model.ts HoldIdentity).
 */
export function claimCommit(
  commit: { readonly claim: Claim; readonly leases: readonly Lease[]; readonly nowMs: number; readonly shards: number },
  extras: CommitExtras = {},
): { ops: WriteOp[]; decode: (verdicts: readonly TxVerdict[]) => CommitVerdict } {
  const { claim, leases, nowMs, shards } = commit;
  const free = isFreeAt(nowMs);
  const generated = claim.spec.generateName !== undefined;
  const ops: WriteOp[] = [{ kind: 'put', item: claimToItem(claim, shards), condition: free, returnOld: true }];
  if (generated) ops.push({ kind: 'put', item: generatedToItem(claim), condition: free, returnOld: true });
  const firstLease = ops.length;
  const takeable = isTakeableBy(holdIdentityOf(claim), nowMs);
  const replaced = extras.replacing?.claim;
  // Its owner identity (HoldIdentity) takes its addresses back at once; another owner's claim may not.
  const sameOwner = replaced !== undefined && sameHoldIdentity(holdIdentityOf(replaced), holdIdentityOf(claim));
  const ofReplaced = new Set(sameOwner ? replaced.addresses.map((a) => a.address) : []);
  for (const lease of leases)
    ops.push({
      kind: 'put',
      item: leaseToItem(lease, shards),
      condition: ofReplaced.has(lease.address) ? either(takeable, belongsToClaim(replaced!.uid)) : takeable,
      returnOld: true,
    });
  // The replaced claim's other leases: held for its owner until the reuse delay ends, as its release would have.
  const taking = new Set(leases.map((l) => l.address));
  const heldBack = (replaced?.addresses ?? []).filter((a) => !taking.has(a.address));
  for (const address of heldBack) {
    ops.push({
      kind: 'put',
      item: leaseToItem(releasedLease(leaseOfClaim(replaced!, address), extras.replacing!.hold), shards),
      condition: belongsToClaim(replaced!.uid),
    });
  }
  const firstBitmap = ops.length;
  const bitmaps = extras.bitmaps ?? [];
  for (const bitmap of bitmaps)
    ops.push({ kind: 'put', item: bitmapToItem(bitmap), condition: bitmapIs(bitmap.expected) });
  // Held for the replaced claim's owner: free for that owner from now on (a used-up seal must not outlive it).
  if (replaced && heldBack.length)
    ops.push(
      ...freedBumps(
        claim.pool,
        heldBack.map((a) => a.range),
        replaced.uid,
      ),
    );

  const decode = (verdicts: readonly TxVerdict[]): CommitVerdict =>
    decodeCommit(verdicts, { leases, generated, firstLease, bitmaps, firstBitmap });
  return { ops, decode };
}

/** Which condition of a commit failed, first the claim's, then the generated name's, the leases', the bitmaps'. */
function decodeCommit(
  verdicts: readonly TxVerdict[],
  shape: {
    readonly leases: readonly Lease[];
    readonly generated: boolean;
    readonly firstLease: number;
    readonly bitmaps: readonly BitmapWrite[];
    readonly firstBitmap: number;
  },
): CommitVerdict {
  const { leases, generated, firstLease, bitmaps, firstBitmap } = shape;
  const claimVerdict = verdicts[0];
  if (claimVerdict?.code === 'ConditionalCheckFailed')
    return claimVerdict.old
      ? { kind: 'claimExists', existing: itemToClaim(claimVerdict.old) }
      : { kind: 'claimExistsUnread' };
  const marker = generated ? verdicts[1] : undefined;
  if (marker?.code === 'ConditionalCheckFailed')
    return marker.old
      ? { kind: 'generatedNameExists', claimName: marker.old.claim as string }
      : { kind: 'generatedNameExistsUnread' };
  const taken = leases
    .map((lease, i) => ({ lease, verdict: verdicts[firstLease + i] }))
    .filter(({ verdict }) => lostRace(verdict))
    .map(({ lease, verdict }) =>
      verdict?.code === 'ConditionalCheckFailed' && verdict.old
        ? { address: lease.address, holder: itemToLease(verdict.old) }
        : verdict?.code === 'TransactionConflict'
          ? { address: lease.address, inFlight: true as const }
          : { address: lease.address },
    );
  if (taken.length) return { kind: 'addressesTaken', taken };
  const changed = bitmaps.filter((_, i) => lostRace(verdicts[firstBitmap + i])).map((b) => b.rangeName);
  if (changed.length) return { kind: 'bitmapsChanged', ranges: changed };
  return { kind: 'conflict' };
}
