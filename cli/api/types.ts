/**
 * The HTTP contract's documents, as every client of the API reads them (the CLI, the console, the CNI plugin): names
 * for the types `npm run gen:api` generates from openapi.yaml into openapi.gen.ts (openapi-typescript; typecheck runs
 * it first, so the types cannot lag the document). Nothing here is written by hand but the names and a type guard;
 * openapi.yaml is checked against the routes (tests/unit/openapi.test.ts) and the handler's answers against it
 * (tests/support/contract.ts).
 */
import type { components } from './openapi.gen.ts';

type Schemas = components['schemas'];

/** Exact: a number, or a decimal string beyond 2^53. */
export type Count = Schemas['Count'];
export type Family = Schemas['Range']['family'];
export type Owner = Schemas['Owner'];
export type Labels = Schemas['Labels'];
export type Principal = Schemas['Principal'];
export type Pool = Schemas['Pool'];
export type PoolDetails = Schemas['PoolDetails'];
/** used + releasing + free = size. */
export type Utilization = Schemas['Utilization'];
export type Range = Schemas['Range'];
export type Claim = Schemas['Claim'];
export type ClaimRenewal = Schemas['ClaimRenewal'];
export type RenewalResults = Schemas['RenewalResults'];
export type ClaimAddress = Claim['addresses'][number];
/** GET .../addresses and .../addresses/{address}: an Allocated or a Released lease (`state` tells which). */
export type Lease = Schemas['Lease'];
export type AllocatedLease = Schemas['AllocatedLease'];
/** An address released in a pool with a reuse delay, held for its previous owner identity until `reusableAt`. */
export type ReleasedLease = Schemas['ReleasedLease'];
export type RepairEvent = Schemas['Event'];
/** A workload using a claim (its `consumers`); DELETE .../consumers/{uid} answers a ConsumerRemoval. */
export type Consumer = Schemas['Consumer'];
export type ConsumerRemoval = Schemas['ConsumerRemoval'];
export type OwnerRelease = Schemas['OwnerRelease'];
/** An RFC 9457 problem document with the service's machine-readable `code`. */
export type Problem = Schemas['Problem'];
/** One holding of an address: a claim's, or a reuse delay's hold for the previous owner identity. */
export type Holding = Schemas['Holding'];
export type HoldingPage = Schemas['HoldingPage'];
/** Who held an address at an instant (`holding` null: nobody). */
export type HoldingAt = Schemas['HoldingAt'];

/** The body of POST /v1/pools. */
export type PoolSpec = Schemas['PoolSpec'];
/** The body of POST /v1/pools/{pool}/ranges. */
export type RangeSpec = Schemas['RangeSpec'];
/** The body of POST /v1/pools/{pool}/claims. */
export type ClaimSpec = Schemas['ClaimSpec'];

/** GET .../ranges/{range}/occupancy: slices of the occupancy summary (bit i, LSB first in byte i >> 3, is first + i). */
export type RangeOccupancy = Schemas['RangeOccupancy'];

/** A page of any list route. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string;
}

export function isReleased(lease: Lease): lease is ReleasedLease {
  return lease.state === 'Released';
}
