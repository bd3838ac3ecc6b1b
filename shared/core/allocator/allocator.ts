import type { IpAddress, IpFamily } from '../ip/address.ts';
import { AddressReleasingError, AlreadyAllocatedError, DeadlineExceededError, type IpamError } from '../errors.ts';
import { isReleased, type Claim, type Hold, type Lease, type PoolView } from '../model.ts';
import type { ReleaseOutcome } from '../ports.ts';
import type { IpamEvent } from '../events.ts';

/**
 * The addresses a claim needs of one family: the exact address when the client named one, otherwise `count`
 * dynamic picks (default 1; a batch claim asks for more). Never both an explicit address and a count above 1.
 */
export interface FamilyRequest {
  readonly family: IpFamily;
  readonly explicit?: IpAddress;
  readonly count?: number;
}

/** A claim to allocate: everything but its addresses. */
export type ClaimDraft = Omit<Claim, 'addresses'>;

export type AllocationResult =
  /** `collisions`: conditional writes lost to other writers before this one committed. */
  | { readonly kind: 'allocated'; readonly claim: Claim; readonly collisions?: number }
  | { readonly kind: 'exists'; readonly claim: Claim }
  | { readonly kind: 'generatedExists'; readonly claimName: string }
  /** A dryRun's answer: the claim as it would be committed now; nothing was written. */
  | { readonly kind: 'preview'; readonly claim: Claim };

/**
 * One interface, several storage strategies behind it (as Kubernetes' ipallocator.Interface over bitmap and
 * IPAddress storage): per-IP leases (LeaseAllocator) and the legacy bitmap (BitmapAllocator).
 * Every strategy writes (and releases) the claim and all its addresses atomically, or nothing: a batch (`count` > 1)
 * is one transaction too, and a family that cannot give all `count` addresses is RangeFull with nothing written.
 * The claim's addresses are the requests' families in order, each family's addresses in address order.
 *
 * @throws AlreadyAllocatedError when an explicit address is held, RangeFullError when a family has no free address,
 *   NotInRangeError / MismatchedNetworkError for addresses outside the pool, NotReadyError when the store cannot serve.
 */
export interface Allocator {
  allocate(
    view: PoolView,
    draft: ClaimDraft,
    requests: readonly FamilyRequest[],
    options?: AllocateOptions,
  ): Promise<AllocationResult>;
  /**
   * Releases a claim and the leases it still holds, in one transaction (at `expectedVersion` when given). The legacy
   * strategy clears the claim's bits in the same transaction, as Kubernetes' legacy allocator releases an IP. With
   * `hold` (a pool's reuse delay) the leases stay as Released leases held for the claim's owner (and the legacy
   * strategy keeps their bits set: see bitmap-release.ts). With `event`, the event is written in the same
   * transaction (it tells the address history why the leases went).
   */
  release(claim: Claim, expectedVersion?: number, hold?: Hold, event?: IpamEvent): Promise<ReleaseOutcome>;
}

export interface AllocateOptions {
  /** Epoch milliseconds at and after which no commit is sent (CreateClaimCommand.commitBy). */
  readonly commitBy?: number;
  /** Pick as for a commit, and answer the claim without writing it (a preview, AWS's PreviewNextCidr). */
  readonly dryRun?: boolean;
  /**
   * Awaited once the picks are made, before each commit is sent and before a preview is answered; what it throws is
   * the call's answer, with nothing written. A check that only a claim about to be made needs (the owner's gone-mark):
   * a call refused before it (RangeFull, an explicit address held, an existing claim) never pays for it.
   */
  readonly beforeCommit?: () => Promise<void>;
}

/** Called right before each commit is sent. @throws DeadlineExceededError once `nowMs` has reached `commitBy` */
export function checkCommitDeadline(nowMs: number, options: AllocateOptions): void {
  if (options.commitBy !== undefined && nowMs >= options.commitBy)
    throw new DeadlineExceededError(new Date(options.commitBy).toISOString());
}

/** Why an explicit address could not be taken: another claim holds it, or it is held for its previous owner. */
export function explicitTakenError(address: string, holder: Lease | undefined): IpamError {
  if (holder && isReleased(holder) && holder.expiresAt !== undefined) {
    return new AddressReleasingError(address, holder.owner, new Date(holder.expiresAt).toISOString());
  }
  return new AlreadyAllocatedError(
    address,
    holder ? { claim: holder.claim, owner: { uid: holder.owner.uid } } : undefined,
  );
}
