import type { IpFamily } from './ip/address.ts';

/** Range lifecycle, as Kubernetes' ServiceCIDR: Ready serves allocations; Terminating serves none and waits for its leases to go. */
export const RangeState = { Ready: 'Ready', Terminating: 'Terminating' } as const;
export type RangeState = (typeof RangeState)[keyof typeof RangeState];

export const IpFamilyPolicy = {
  SingleStack: 'SingleStack',
  PreferDualStack: 'PreferDualStack',
  RequireDualStack: 'RequireDualStack',
} as const;
export type IpFamilyPolicy = (typeof IpFamilyPolicy)[keyof typeof IpFamilyPolicy];

/** A named set of ranges with pool-wide exclusions (never handed out dynamically). */
export interface Pool {
  readonly name: string;
  /** Canonical CIDRs; single addresses are stored as /32 or /128. */
  readonly exclude: readonly string[];
  readonly createdAt: string;
  /**
   * Since when the pool's occupancy summary reflects all its leases: its creation for pools created with the
   * summary, the end of the reconciler's first build for older ones; absent until then (reads use the listing).
   */
  readonly summarySince?: string;
}

/** A CIDR of a pool. Immutable once created, except for its state. */
export interface Range {
  readonly pool: string;
  readonly name: string;
  readonly cidr: string;
  readonly family: IpFamily;
  readonly state: RangeState;
  /** The pool's legacy (bitmap-mirrored) range of its family. */
  readonly legacy: boolean;
  readonly createdAt: string;
  /** When deletion was asked for (Terminating only). */
  readonly deletionRequestedAt?: string;
}

/** A pool with its ranges, as one consistent read. */
export interface PoolView {
  readonly pool: Pool;
  readonly ranges: readonly Range[];
  /**
   * The pool's range generation when the view was read (PoolStore.rangeGeneration): every change of the ranges the
   * view misses has changed it since. Absent when the pool has none (no range change since generations exist): such a
   * view is never taken as current.
   */
  readonly generation?: string;
}

export interface Owner {
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface ClaimAddress {
  readonly address: string;
  readonly family: IpFamily;
  /** The range the address was taken through. */
  readonly range: string;
}

/** What the client asked for; two requests with equal specs are the same request (idempotency). */
export interface ClaimSpec {
  readonly owner: Owner;
  readonly ipFamilyPolicy: IpFamilyPolicy;
  readonly ipFamilies: readonly IpFamily[];
  readonly addresses: readonly string[];
  readonly ttlSeconds?: number;
  readonly generateName?: string;
  /** Addresses per family (a batch claim); absent means 1, so claims made before batches compare equal. */
  readonly count?: number;
}

/** The owner-facing unit: the addresses of one owner's request, written in one transaction with their leases. */
export interface Claim {
  readonly pool: string;
  readonly name: string;
  /** Unique per incarnation: a claim deleted and made again under the same name is another claim. */
  readonly uid: string;
  readonly spec: ClaimSpec;
  readonly addresses: readonly ClaimAddress[];
  readonly createdAt: string;
  /** Epoch milliseconds; absent when the claim has no TTL. */
  readonly expiresAt?: number;
  readonly version: number;
}

/** One held address: the item is the lease (a Kubernetes IPAddress object). */
export interface Lease {
  readonly pool: string;
  readonly address: string;
  readonly family: IpFamily;
  readonly range: string;
  readonly claim: string;
  readonly claimUid: string;
  readonly owner: Owner;
  readonly createdAt: string;
  readonly expiresAt?: number;
}

/** Size, used and free addresses; exact, so BigInt. */
export interface Utilization {
  readonly size: bigint;
  readonly used: bigint;
  readonly free: bigint;
}

/** True when a claim or lease with this expiry is no longer held at `nowMs`. */
export function isExpired(item: { readonly expiresAt?: number }, nowMs: number): boolean {
  return item.expiresAt !== undefined && item.expiresAt <= nowMs;
}

/** The lease a claim holds for one of its addresses (its expiry is the claim's); `createdAt` defaults to the claim's. */
export function leaseOfClaim(claim: Claim, address: ClaimAddress, createdAt: string = claim.createdAt): Lease {
  const lease: Lease = {
    pool: claim.pool,
    address: address.address,
    family: address.family,
    range: address.range,
    claim: claim.name,
    claimUid: claim.uid,
    owner: claim.spec.owner,
    createdAt,
  };
  return claim.expiresAt === undefined ? lease : { ...lease, expiresAt: claim.expiresAt };
}
