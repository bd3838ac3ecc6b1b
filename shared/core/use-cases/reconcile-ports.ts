/**
 * The reconciler's store, as a port: it sits beside Deps (deps.ts), which names it for the container, so the use cases
 * never import the reconciler that drives them.
 */
import type { IpFamily } from '../ip/address.ts';
import type { Claim, Hold, Lease, PoolView, Range } from '../model.ts';
import type { Page } from '../ports.ts';
import type { BitmapExpectation } from '../bitmap/ports.ts';
import type { RangeAllocation } from '../bitmap/range-allocation.ts';

export { EventReason, EVENT_RETENTION_MS, type IpamEvent } from '../events.ts';
import type { IpamEvent } from '../events.ts';

/** A claim or a lease found in the expiry index with an indexed expiry at or before the cutoff. */
export type ExpiredRef =
  | { readonly kind: 'claim'; readonly pool: string; readonly name: string }
  | { readonly kind: 'lease'; readonly pool: string; readonly address: string };

/** A page of the slow sweep over every claim and lease; `next` is absent once a whole cycle is done. */
export interface SweepPage {
  readonly claims: readonly Claim[];
  readonly leases: readonly Lease[];
  readonly next?: string;
}

/** Every pool with its ranges, as one run reads them. */
export type PoolViewList = readonly PoolView[];

/** A persisted checkpoint and its optimistic-lock version. */
export interface Checkpoint<T> {
  readonly value: T;
  readonly version: number;
}

/** What the drift check of one legacy range remembers between runs (the strike item). */
export interface DriftRecord {
  /** Leak candidates: bit -> consecutive checks that saw it set with no lease. */
  readonly strikes: Readonly<Record<string, number>>;
  /** The sweep cycle during which the last full check finished (each legacy range is fully checked once per cycle). */
  readonly checkedCycle: number;
  /** The usage count (its `countedAt`) last compared with the bitmap's set bits. */
  readonly comparedAt: number;
  /** Epoch ms of the last check; a run that started before it does not strike again (one strike per run). */
  readonly observedAt: number;
  /** A full check in progress: the next bit of the window to look at. */
  readonly checking?: { readonly offset: number };
}

/** A range's lease count: the last complete one, and the one in progress (a pass spans runs when the range is big). */
export interface UsageRecord {
  /** The range's CIDR when counted (a range made again under its name starts over). */
  readonly cidr: string;
  /** Unexpired leases among the range's host addresses, at the end of the last complete pass. */
  readonly used?: number;
  /** Lease items (expired ones included) in a legacy range's bitmap window, same pass. */
  readonly windowItems?: number;
  /** Epoch ms the last complete pass ended. */
  readonly countedAt?: number;
  /** The pass in progress: where it stands and what it has counted so far. */
  readonly pass?: {
    readonly cursor: string;
    readonly used: number;
    readonly scanned: readonly number[];
    readonly startedAt: number;
  };
}

/** One slice of a bounded count over some intervals of a pool's family. */
export interface CountSlice {
  /** Unexpired leases counted in this slice. */
  readonly unexpired: number;
  /** Lease items read in this slice, per interval. */
  readonly scanned: readonly number[];
  /** Index items read (at least one per query), to charge against the run's budget. */
  readonly cost: number;
  /** Where the next slice starts; absent when the intervals are done. */
  readonly cursor?: string;
}

/** A bitmap write of the drift repair: the whole new document and what the write expects to find. */
export interface BitmapRepair {
  readonly pool: string;
  readonly rangeName: string;
  readonly allocation: RangeAllocation;
  readonly expected: BitmapExpectation;
  /** Addresses whose lease item must exist (bits being set), checked in the same transaction. */
  readonly leasesPresent: readonly string[];
  /** Addresses whose lease item must not exist (bits being cleared), checked in the same transaction. */
  readonly leasesAbsent: readonly string[];
}

/** The expiry index and the repairs of expired claims and leases (reconcile.ts). */
export interface ExpiryRepairs {
  /** Shards of each hourly expiry bucket. */
  readonly expiryShards: number;

  /**
   * Claims and leases of one expiry bucket (hour, shard) whose indexed expiry is at or before `cutoffMs`, in expiry
   * order; only those are read, whatever else the bucket holds.
   */
  expiredRefs(
    bucket: { readonly hour: number; readonly shard: number },
    page: { readonly cutoffMs: number; readonly limit: number; readonly after?: string },
  ): Promise<{ refs: ExpiredRef[]; next?: string }>;
  /** Strongly consistent reads of claims (absent ones are left out). */
  getClaims(refs: readonly { pool: string; name: string }[]): Promise<Claim[]>;
  /** Strongly consistent reads of leases (absent ones are left out). */
  getLeases(refs: readonly { pool: string; address: string }[]): Promise<Lease[]>;
  /**
   * Deletes an expired claim, the leases it still holds and its generateName marker, if the claim is still this
   * incarnation at this version and still expired at `cutoffMs` (a renew in between wins).
   */
  releaseExpiredClaim(claim: Claim, cutoffMs: number, event: IpamEvent, hold?: Hold): Promise<'released' | 'changed'>;
  /**
   * Deletes a lease if it is still this incarnation (claimUid) and was created at or before `createdBeforeIso`. With
   * `hold` (each release above too) the lease becomes a Released lease held for its owner instead (a reuse delay).
   */
  releaseLease(lease: Lease, createdBeforeIso: string, event: IpamEvent, hold?: Hold): Promise<'released' | 'changed'>;
  /** Deletes a Released lease whose delay is over at `nowMs` (clean-up: the address is already free); 'changed' otherwise. */
  dropReleased(lease: Lease, nowMs: number): Promise<'released' | 'changed'>;
  /** Writes a lease back for a held claim: only if the claim is unchanged and the address is absent or expired at nowMs. */
  restoreLease(
    claim: Claim,
    lease: Lease,
    nowMs: number,
    event: IpamEvent,
  ): Promise<'restored' | 'taken' | 'claimChanged'>;
}

/** A claim released with its event (an owner release, a deleted pool). */
export interface ClaimRelease {
  /**
   * Deletes a claim, its held leases and marker, if it is still this incarnation (release by owner); with `unconsumed`,
   * only while it lists no consumer.
   */
  releaseClaim(
    claim: Claim,
    event: IpamEvent,
    hold?: Hold,
    options?: { readonly unconsumed?: boolean },
  ): Promise<'released' | 'changed'>;
}

/** Ranges and pools as the reconciler finishes them. */
export interface RangeRepairs {
  /** Removes a range that is still Terminating, with its bitmap and strike items. */
  finalizeRange(range: Range, event: IpamEvent): Promise<'finalized' | 'changed'>;
  /**
   * The pools deleted at or after `sinceMs` (their pool-gone tombstones, consistent read), and every pool whose deletion
   * is not finished (Terminating: PoolStore.finalizePool), each once.
   */
  poolsDeletedSince(sinceMs: number): Promise<string[]>;
  /** Every pool with its ranges. */
  listPoolViews(): Promise<PoolViewList>;
  /** Whether any lease item (expired ones included) lies in the intervals: one item read at most per shard and interval. */
  leaseExists(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[]): Promise<boolean>;
}

/** Events: written once per report, listed by the API. */
export interface EventLog {
  /**
   * Records an event that goes with no repair (a duplicate, a lease outside every range), at most once per `what` (a
   * stable identity of the finding) while the previous report is under 24 hours old: false when it was already
   * reported.
   */
  reportOnce(event: IpamEvent, what: string, nowMs: number): Promise<boolean>;
  /** Events of a pool newer than `sinceIso`, newest first. */
  listEvents(pool: string, sinceIso: string, limit: number, cursor?: string): Promise<Page<IpamEvent>>;
}

/** Owners reported gone (owner release). */
export interface OwnerRecords {
  /**
   * Records that an owner was reported gone at `nowMs` (an owner-gone tombstone, kept a day), so later runs can look for
   * its claims again: the owner index may not show a claim committed just before the report, or during it.
   */
  markOwnerGone(pool: string, ownerUid: string, nowMs: number): Promise<void>;
  /** The owner uids of a pool reported gone at or after `sinceMs` (consistent read), each once, oldest report first. */
  ownersGoneSince(pool: string, sinceMs: number): Promise<string[]>;
  /** When the owner uid was last reported gone in the pool (epoch ms, consistent read), or undefined if never (in a day). */
  ownerReportedGoneAt(pool: string, ownerUid: string): Promise<number | undefined>;
}

/** Where a run resumes. */
export interface Checkpoints {
  getCheckpoint<T>(name: string): Promise<Checkpoint<T> | undefined>;
  /** Saves a checkpoint if it is still at `expectedVersion` (undefined: absent); false when another run moved it. */
  saveCheckpoint<T>(name: string, value: T, expectedVersion: number | undefined): Promise<boolean>;
  /** Up to `limit` claims and leases from `cursor` on, across every pool (a bounded slice of the slow sweep). */
  sweep(cursor: string | undefined, limit: number): Promise<SweepPage>;
}

/** The per-range usage counts. */
export interface UsageRecords {
  /** Counts leases in the intervals, reading at most about `limit` index items from `cursor` on. */
  countSlice(
    span: {
      readonly pool: string;
      readonly family: IpFamily;
      readonly intervals: readonly (readonly [bigint, bigint])[];
    },
    slice: { readonly nowMs: number; readonly limit: number; readonly cursor?: string },
  ): Promise<CountSlice>;
  /** The usage records of a pool's ranges, by range name, with their versions. */
  getUsage(pool: string): Promise<Map<string, Checkpoint<UsageRecord>>>;
  /** Saves a range's usage record if it is still at `expectedVersion` (undefined: absent). */
  saveUsage(
    pool: string,
    rangeName: string,
    record: UsageRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean>;
}

/** The legacy bitmaps compared and repaired. */
export interface DriftRepairs {
  /** The drift record of a legacy range, with its optimistic-lock version. */
  getDriftRecord(pool: string, rangeName: string): Promise<Checkpoint<DriftRecord> | undefined>;
  /** Saves a drift record if it is still at `expectedVersion` (undefined: absent); false when another run moved it. */
  saveDriftRecord(
    pool: string,
    rangeName: string,
    record: DriftRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean>;
  /**
   * Writes a repaired bitmap, its events, and checks of the lease items it relies on, in one transaction: 'changed'
   * when the bitmap moved or a checked lease appeared or went meanwhile (nothing is written then).
   */
  repairBitmap(repair: BitmapRepair, events: readonly IpamEvent[]): Promise<'written' | 'changed'>;
  /** Deletes a bitmap at the version read, with its drift record (dual-write is off). */
  removeBitmap(pool: string, rangeName: string, version: number, event: IpamEvent): Promise<'removed' | 'changed'>;
}

/**
 * The reconciler's persistence port. Every write is conditional and records its event in the same transaction, so
 * a repair and its event happen together exactly once, whatever runs in parallel. DynamoReconcileStore is the adapter.
 */
export type ReconcileStore = ExpiryRepairs &
  ClaimRelease &
  RangeRepairs &
  EventLog &
  OwnerRecords &
  Checkpoints &
  UsageRecords &
  DriftRepairs;
