import type { Claim, Lease } from '../model.ts';
import type { CommitOutcome } from '../ports.ts';
import type { RangeAllocation } from './range-allocation.ts';
import type { IpamEvent } from '../events.ts';

/**
 * What a conditional bitmap write expects to find: the version it read, or no bitmap item at all (a new environment,
 * or a legacy range whose bitmap was never written). Optimistic locking as Kubernetes' RangeAllocation
 * resourceVersion: the write fails when anyone wrote in between, and the writer reads again.
 */
export type BitmapExpectation = { readonly version: number } | 'absent';

/** One bitmap to write for a pool's legacy range: the whole new document (version already bumped) and its precondition. */
export interface BitmapWrite {
  readonly pool: string;
  /** The legacy range's name (the item key); `allocation.range` is its CIDR. */
  readonly rangeName: string;
  readonly allocation: RangeAllocation;
  readonly expected: BitmapExpectation;
}

/** A claim commit that also wrote bitmaps: CommitOutcome, or "a bitmap was not at the expected version" (read again). */
export type BitmapCommitOutcome =
  | CommitOutcome
  | { readonly kind: 'bitmapsChanged'; readonly ranges: readonly string[] };

/** A release that also wrote bitmaps, as ClaimStore.releaseClaim answers, or "a bitmap changed" (read again). */
export type BitmapReleaseOutcome = 'released' | 'versionMismatch' | 'absent' | 'bitmapsChanged';

/**
 * The persistence port of the legacy bitmaps (one `RangeAllocation` item per legacy range);
 * TableBitmapStore is its adapter. Every write is conditional on a BitmapExpectation, so a lost race is an answer ('changed'), never a
 * silent overwrite.
 */
export interface BitmapStore {
  /** The bitmap item of a pool's range, read consistently; undefined when there is none. */
  getBitmap(pool: string, rangeName: string): Promise<RangeAllocation | undefined>;

  /** Writes one bitmap if it is as expected; 'changed' when another writer got there first. */
  putBitmap(write: BitmapWrite): Promise<'written' | 'changed'>;

  /**
   * Writes the claim, its leases and the bitmaps in ONE transaction: the claim only if absent or expired at `nowMs`,
   * each lease only if absent or expired, each bitmap only as expected. So a legacy allocation's lease and bit are
   * written together or not at all, whatever other allocators run against the table.
   */
  commitClaim(
    claim: Claim,
    leases: readonly Lease[],
    bitmaps: readonly BitmapWrite[],
    nowMs: number,
  ): Promise<BitmapCommitOutcome>;

  /**
   * Releases a claim as ClaimStore.releaseClaim does (claim of this uid, at `expectedVersion` when given, and the leases
   * in `held` that it still holds) and writes the bitmaps in the same transaction.
   */
  releaseClaim(
    claim: Claim,
    held: readonly string[],
    bitmaps: readonly BitmapWrite[],
    options?: { readonly expectedVersion?: number; readonly event?: IpamEvent },
  ): Promise<BitmapReleaseOutcome>;

  /**
   * Which lease items exist now among these addresses of a pool, with the claim incarnation holding each one: a
   * strongly consistent read (expired leases included: their item is still there and may be renewed).
   */
  leaseHolders(pool: string, addresses: readonly string[]): Promise<ReadonlyMap<string, string>>;
}
