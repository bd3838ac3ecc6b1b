import type { IpAddress, IpFamily } from '../ip/address.ts';
import type { Claim, PoolView } from '../model.ts';
import type { ReleaseOutcome } from '../ports.ts';

/** One address a claim needs: a family, and the exact address when the client named one. */
export interface FamilyRequest {
  readonly family: IpFamily;
  readonly explicit?: IpAddress;
}

/** A claim to allocate: everything but its addresses. */
export type ClaimDraft = Omit<Claim, 'addresses'>;

export type AllocationResult =
  /** `collisions`: conditional writes lost to other writers before this one committed. */
  | { readonly kind: 'allocated'; readonly claim: Claim; readonly collisions?: number }
  | { readonly kind: 'exists'; readonly claim: Claim }
  | { readonly kind: 'generatedExists'; readonly claimName: string };

/**
 * One interface, several storage strategies behind it (as Kubernetes' ipallocator.Interface over bitmap and
 * IPAddress storage): per-IP leases (LeaseAllocator) and the legacy bitmap (BitmapAllocator).
 * Every strategy writes (and releases) the claim and all its addresses atomically, or nothing.
 *
 * @throws AlreadyAllocatedError when an explicit address is held, RangeFullError when a family has no free address,
 *   NotInRangeError / MismatchedNetworkError for addresses outside the pool, NotReadyError when the store cannot serve.
 */
export interface Allocator {
  allocate(view: PoolView, draft: ClaimDraft, requests: readonly FamilyRequest[]): Promise<AllocationResult>;
  /**
   * Releases a claim and the leases it still holds, in one transaction (at `expectedVersion` when given). The legacy
   * strategy clears the claim's bits in the same transaction, as Kubernetes' legacy allocator releases an IP.
   */
  release(claim: Claim, expectedVersion?: number): Promise<ReleaseOutcome>;
}
