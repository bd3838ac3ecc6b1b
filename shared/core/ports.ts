import type { IpFamily } from './ip/address.ts';
import type { LabelSelector } from './labels.ts';
import type { Claim, Consumer, Hold, HoldIdentity, Lease, Pool, PoolView, Range } from './model.ts';
import type { IpamEvent } from './events.ts';

/** Time, passed in so the core never reads the system clock. */
export interface Clock {
  nowMs(): number;
}

/** Waiting, passed in so the simulator waits in virtual time (the system timer is setTimeout). */
export interface Timer {
  sleep(ms: number): Promise<void>;
}

/** Randomness, passed in so tests can pin it. */
export interface Random {
  /** A uniform integer in [0, bound). */
  below(bound: bigint): bigint;
  /** A uniform float in [0, 1). */
  unit(): number;
  /** `length` characters of [a-z0-9] (the system adapter draws from Kubernetes' generateName alphabet, a subset). */
  suffix(length: number): string;
  /** A fresh unique id. */
  uid(): string;
}

/** A page of a listing with an opaque cursor to the next one. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string;
}

/** Which page a listing is asked for: its size (default pageLimit's) and where the previous page stopped. */
export interface PageQuery {
  readonly limit?: number;
  readonly cursor?: string;
}

/** A family's addresses in [from, to]. */
export interface LeaseScope {
  readonly family: IpFamily;
  readonly from: bigint;
  readonly to: bigint;
}

/** An expired claim a commit replaces, and how long its addresses stay held for its owner (see commitClaim). */
export interface Replacing {
  readonly claim: Claim;
  readonly hold: Hold;
}

/** Why a claim transaction did not commit. */
export type CommitOutcome =
  | { readonly kind: 'committed' }
  | { readonly kind: 'claimExists'; readonly existing: Claim }
  /**
   * `inFlight`: the address's item met another transaction in flight (TransactionConflict), so whether it is taken is
   * not known: a dynamic pick is given up like a taken one, an explicit address is tried again.
   */
  | { readonly kind: 'addressesTaken'; readonly taken: readonly { address: string; holder?: Lease; inFlight?: true }[] }
  | { readonly kind: 'generatedNameExists'; readonly claimName: string };

/**
 * The persistence ports, one per role; each use case asks for the ones it uses. The adapters
 * (shared/adapters/dynamodb/*-store.ts) implement them over one table engine: DynamoDB, or memory in tests.
 */

/** Pools and their ranges. */
export interface PoolStore {
  /** 'terminating': a pool of that name exists and is being deleted. */
  createPool(pool: Pool): Promise<'created' | 'exists' | 'terminating'>;
  /** The pool and its ranges, read consistently, with the range generation read before them; undefined when absent or Terminating. */
  getPoolView(pool: string): Promise<PoolView | undefined>;
  /**
   * The pool's range generation, read consistently: a fresh value written in the same transaction as every range add,
   * mark Terminating and removal (and gone with the pool), so a view's is still current only when no change committed
   * after the view's was read. One small item of several equal copies, not the pool's partition. Undefined: none yet.
   */
  rangeGeneration(pool: string): Promise<string | undefined>;
  /** Pools in name order, Terminating ones left out. */
  listPools(limit: number, cursor?: string): Promise<Page<Pool>>;
  /**
   * The first phase of a pool's deletion: one transaction marks the pool Terminating (every request then finds it gone,
   * and its name is not free), writes a pool-gone tombstone (kept a day: the claims listing is eventually consistent,
   * so a claim committed just before may not be listed, and the reconciler releases it) and a new range generation (a
   * claim committed from an older view sees it and gives its addresses back). 'notEmpty' when a claim is listed;
   * 'terminating' also when the pool was Terminating already. The rest is finalizePool's.
   */
  deletePool(pool: string, nowMs: number): Promise<'terminating' | 'notEmpty' | 'absent'>;
  /**
   * The second phase: removes everything a Terminating pool left that a pool created again under its name could
   * inherit, item by item in an order that a stop anywhere leaves resumable, and the pool item last; 'absent' when there
   * is no Terminating pool of that name (finished, or never marked). Idempotent. @throws on a failed write (resume later)
   * `unmarked` is called for each of its nested ranges once the range's marker is off its source claim, before the
   * range item goes (a resumed call calls it again), so the caller may give back a block the pool took by growing.
   * Nothing is deleted on an eventually consistent listing's word alone: what a listing shows is read again, and a
   * nested range's block goes back only once no lease of the pool is left in it (read key by key, or, for a range
   * too large for that, once the mark is INDEX_SETTLE_MS older than `nowMs`).
   * @throws ClaimHasChildrenError, before anything is removed, while a claim of the pool is the source of another
   *   pool's range (Claim.children): the deletion waits for that range to go (a later call finishes it)
   */
  finalizePool(
    pool: string,
    options?: {
      readonly nowMs?: number;
      readonly unmarked?: (range: Pick<Range, 'pool' | 'name' | 'source'>) => Promise<void>;
    },
  ): Promise<'finalized' | 'absent'>;
  /**
   * Writes the range if its name is free and, for a legacy range, if no other legacy range of its family holds the
   * pool's lock for that family ('legacyTaken'); 'exists' also when a concurrent write got in the way (read again).
   */
  createRange(range: Range, parent?: Claim): Promise<'created' | 'exists' | 'legacyTaken' | 'parentChanged'>;
  /** Moves a Ready range to Terminating; idempotent. */
  markRangeTerminating(range: Range, atIso: string): Promise<Range>;
  /** Removes a range (and its legacy lock) that is still this Terminating incarnation; false when it changed or is gone. */
  deleteRange(range: Range): Promise<boolean>;
}

/** Claims, committed and released with their leases in one transaction each. */
export interface ClaimStore {
  /**
   * Writes the claim and all its leases in one transaction: the claim only if absent, each lease only if absent or
   * expired at `nowMs`. With `replacing` (an expired claim of the same name in a pool with a reuse delay, whose leases
   * are still held: their expiry is the claim's plus the delay), the same transaction turns each of its leases the new
   * claim does not take into a Released lease held for its owner until `replacing.hold`, and lets the new claim take
   * the others; all only while they are still that claim's (else the transaction is cancelled: NotReady).
   */
  commitClaim(claim: Claim, leases: readonly Lease[], nowMs: number, replacing?: Replacing): Promise<CommitOutcome>;
  getClaim(pool: string, name: string): Promise<Claim | undefined>;
  /** Strongly consistent reads of many claims of a pool (a batch read a 100 names); absent ones left out, any order. */
  getClaims(pool: string, names: readonly string[]): Promise<Claim[]>;
  /** Finds the claim an owner made from a generateName (the DRA recovery after a lost response). */
  findGeneratedClaim(pool: string, ownerUid: string, generateName: string): Promise<string | undefined>;
  /**
   * A page of the pool's claims in name order, at most `limit`; each index partition it reads yields at most
   * `limit + 1` claims whatever the filter, so with a label selector the page may be short or empty and still carry a
   * cursor (paging on reaches every claim).
   */
  listClaims(pool: string, limit: number, cursor?: string, filter?: ClaimFilter): Promise<Page<Claim>>;
  /**
   * Deletes the claim and each lease still held by it, in one transaction; `expectedVersion` makes it conditional.
   * With `hold` (a pool's reuse delay), each lease becomes a Released lease held for the claim's owner instead.
   * With `event`, the event is written in the same transaction.
   */
  releaseClaim(claim: Claim, expectedVersion?: number, hold?: Hold, event?: IpamEvent): Promise<ReleaseOutcome>;
  /**
   * Extends the claim to `expiresAt` and its leases to `expiresAt + holdMs` (the pool's reuse delay), or makes them
   * permanent when it is undefined (no expiry, out of the expiry index); 'lost' when a lease was taken by someone else;
   * 'changed' when the claim is no longer as read (renewed or confirmed meanwhile): read it again and decide anew;
   * 'busy' when another transaction was writing one of its items: nothing written, try again.
   */
  renewClaim(
    claim: Claim,
    expiresAt: number | undefined,
    holdMs?: number,
  ): Promise<'renewed' | 'lost' | 'absent' | 'changed' | 'busy'>;
  /**
   * Pins the claim if it is still at the version read (one conditional write of the claim item; its document and
   * version stay as they are): an identical request answers a claim its creator has not yet answered only after this,
   * so the creator's release of a claim whose range was retired under its commit (conditioned on the claim as read,
   * unpinned) no longer applies.
   * @returns the claim, pinned, or undefined when it is gone or no longer at the version read
   */
  pinClaim(claim: Claim): Promise<Claim | undefined>;
  /**
   * Writes the claim's consumer list with one consumer added or removed (and that consumer's index item put or
   * deleted, and `event`), in one transaction, only while the claim is this incarnation at the version read:
   * 'claimChanged' when it is not (read it again), 'busy' when another transaction was writing one of its items.
   */
  changeConsumers(claim: Claim, change: ConsumerChange): Promise<'written' | 'claimChanged' | 'busy'>;
  /** The claims whose consumers list `uid` in the pool, from the consumer index (strongly consistent). */
  consumedBy(pool: string, uid: string): Promise<ConsumedClaim[]>;
  /** Deletes an index item of `uid` left by a claim incarnation that no longer lists it (released, or made again). */
  dropConsumerIndex(pool: string, uid: string, consumed: ConsumedClaim): Promise<void>;
}

/** One consumer added to, or removed from, a claim's list (ClaimStore.changeConsumers). */
export type ConsumerChange =
  | { readonly add: Consumer; readonly event?: IpamEvent }
  | { readonly remove: Consumer; readonly event?: IpamEvent };

/** A claim a consumer index item names: the claim's name and the incarnation it was written for. */
export interface ConsumedClaim {
  readonly claim: string;
  readonly claimUid: string;
}

/** Which claims a listing keeps: those of one owner uid, and those whose labels hold every pair of the selector. */
export interface ClaimFilter {
  readonly ownerUid?: string;
  readonly labels?: LabelSelector;
}

export type ReleaseOutcome = 'released' | 'versionMismatch' | 'absent';

/** Reads of the leases (the listing index is eventually consistent; getLease is not). */
export interface LeaseIndex {
  getLease(pool: string, address: string): Promise<Lease | undefined>;
  /** Leases not expired at `nowMs` whose addresses lie in the scopes (visited in order), each scope in address order. */
  listLeases(
    pool: string,
    scopes: readonly LeaseScope[],
    nowMs: number,
    page: PageQuery & { readonly limit: number },
  ): Promise<Page<Lease>>;
  /** Addresses with a lease not expired at `nowMs` in the intervals: the allocator's hint. */
  takenAddresses(
    pool: string,
    family: IpFamily,
    intervals: readonly (readonly [bigint, bigint])[],
    nowMs: number,
  ): Promise<bigint[]>;
  /**
   * Counts leases not expired at `nowMs` in each interval (the intervals must not overlap); `releasedOnly` counts the
   * Released ones alone (addresses held for a previous owner).
   */
  countLeases(
    pool: string,
    family: IpFamily,
    intervals: readonly (readonly [bigint, bigint])[],
    count: { readonly nowMs: number; readonly releasedOnly?: boolean },
  ): Promise<bigint>;
  /** Released leases not expired at `nowMs` held for an owner identity (eventually consistent: the owner index). */
  heldFor(pool: string, identity: HoldIdentity, nowMs: number): Promise<Lease[]>;
}

/** The health route's look at the table. */
export interface HealthProbe {
  health(): Promise<{ table: string; status: string }>;
}

/** The gates that change allocation behaviour (Kubernetes' names). */
export interface AllocationGates {
  readonly MultiCIDRServiceAllocator: boolean;
  readonly DisableAllocatorDualWrite: boolean;
}
