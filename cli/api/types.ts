/**
 * The HTTP contract's documents as the CLI reads them (openapi.yaml is the source; a test there keeps it equal to the
 * routes the handler serves). Counts are exact: a number, or a decimal string beyond 2^53.
 */

export type Count = number | string;
export type Family = 'IPv4' | 'IPv6';

export interface Owner {
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface Pool {
  readonly name: string;
  readonly exclude: readonly string[];
  /** Seconds a released address stays held for its previous owner identity; 0, or absent from older servers: none. */
  readonly reuseDelaySeconds?: number;
  readonly createdAt: string;
}

/** used + releasing + free = size. */
export interface Utilization {
  readonly size: Count;
  readonly used: Count;
  /** Held for a previous owner during the pool's reuse delay; absent from servers older than the reuse delay. */
  readonly releasing?: Count;
  readonly free: Count;
}

export interface Range extends Utilization {
  readonly name: string;
  readonly cidr: string;
  readonly family: Family;
  readonly state: 'Ready' | 'Terminating';
  readonly legacy: boolean;
  readonly createdAt?: string;
  readonly deletionRequestedAt?: string;
}

export interface PoolDetails extends Pool {
  readonly ranges: readonly Range[];
  readonly utilization: Partial<Record<Family, Utilization>>;
}

export interface ClaimAddress {
  readonly address: string;
  readonly family: Family;
  readonly range: string;
}

export interface Claim {
  readonly name: string;
  readonly uid: string;
  readonly owner: Owner;
  readonly ipFamilyPolicy: string;
  readonly ipFamilies: readonly Family[];
  /** Addresses per family; present when above 1. */
  readonly count?: number;
  readonly addresses: readonly ClaimAddress[];
  readonly generateName?: string;
  readonly ttlSeconds?: number;
  /** Key/value labels; servers older than labels send none. */
  readonly labels?: Labels;
  readonly expiresAt?: string;
  readonly createdAt: string;
  readonly version: number;
}

/** A claim's labels: key to value (openapi.yaml's Labels). */
export type Labels = Readonly<Record<string, string>>;

/** An address held by a claim. Servers older than the reuse delay send no `state`. */
export interface AllocatedLease {
  readonly address: string;
  readonly state?: 'Allocated';
  readonly family: Family;
  readonly range: string;
  readonly claim: string;
  readonly owner: Owner;
  readonly createdAt: string;
  readonly expiresAt?: string;
}

/** An address released in a pool with a reuse delay, held for its previous owner identity until `reusableAt`. */
export interface ReleasedLease {
  readonly address: string;
  readonly state: 'Released';
  readonly family: Family;
  readonly range: string;
  readonly previousOwner: Owner;
  readonly previousClaim: string;
  readonly releasedAt?: string;
  readonly reusableAt: string;
}

/** GET .../addresses and .../addresses/{address}: an Allocated or a Released lease. */
export type Lease = AllocatedLease | ReleasedLease;

export function isReleased(lease: Lease): lease is ReleasedLease {
  return lease.state === 'Released';
}

export interface RepairEvent {
  readonly time: string;
  readonly reason: string;
  readonly object: string;
  readonly message: string;
  /** The labels of the claim the event is about. */
  readonly labels?: Labels;
}

export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string;
}

/** The body of POST /v1/pools. */
export interface PoolSpec {
  readonly name: string;
  readonly exclude?: readonly string[];
  /** 0 to 604800. */
  readonly reuseDelaySeconds?: number;
}

/** The body of POST /v1/pools/{pool}/claims. */
export interface ClaimSpec {
  readonly name?: string;
  readonly generateName?: string;
  readonly owner: Owner;
  readonly ipFamilyPolicy?: 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';
  readonly ipFamilies?: readonly Family[];
  readonly addresses?: readonly string[];
  readonly ttlSeconds?: number;
  /** Addresses per family (1-32), all or none; not with `addresses`. */
  readonly count?: number;
  /** At most 32; part of the spec (another set under an existing name is 409). */
  readonly labels?: Labels;
}

/** An RFC 9457 problem document with the service's machine-readable `code`. */
export interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly status: number;
  readonly detail?: string;
  readonly code: string;
}

/** GET .../ranges/{range}/occupancy: slices of the occupancy summary (bit i, LSB first in byte i >> 3, is first + i). */
export interface RangeOccupancy {
  readonly range: string;
  readonly cidr: string;
  readonly used: number | string;
  readonly source: 'summary' | 'listing';
  readonly slices: readonly { readonly first: string; readonly count: number; readonly used: number; readonly bits: string; readonly asOf: string }[];
}
