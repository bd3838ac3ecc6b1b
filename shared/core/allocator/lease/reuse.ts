import { parseAddress } from '../../ip/address.ts';
import {
  holdIdentityOf,
  holdOf,
  isExpired,
  reuseDelayMs,
  sameHoldIdentity,
  type Claim,
  type HoldIdentity,
  type PoolView,
} from '../../model.ts';
import type { Replacing } from '../../ports.ts';
import type { ClaimDraft, FamilyRequest } from '../allocator.ts';
import { rangeForExplicit, type ParsedRange } from '../../base/pool-geometry.ts';
import type { AllocatorEnv, Choice } from './context.ts';

/** What the claim of this name is now, in a pool with a reuse delay (replacedClaim). */
export type Predecessor =
  | { readonly kind: 'none' }
  /** Held: it is the answer (the commit would be refused). */
  | { readonly kind: 'exists'; readonly claim: Claim }
  /** Expired with leases still held: this commit replaces it and converts its leases. */
  | { readonly kind: 'replacing'; readonly replacing: Replacing };

/**
 * Stage "predecessor": in a pool with a reuse delay, the claim of this name as it is now (one consistent read). Held,
 * it is the answer; expired but with leases still held (a lease of such a pool outlives its claim by the delay, until
 * the reconciler releases it), it is replaced by this commit, which converts its leases: else they stay Allocated
 * without their claim, and its owner's next claim gets other addresses.
 */
export async function predecessorOf(env: AllocatorEnv, view: PoolView, draft: ClaimDraft): Promise<Predecessor> {
  const { ports } = env;
  if (reuseDelayMs(view.pool) <= 0) return { kind: 'none' };
  const nowMs = ports.clock.nowMs();
  const current = await ports.claims.getClaim(view.pool.name, draft.name);
  if (!current) return { kind: 'none' };
  if (!isExpired(current, nowMs)) return { kind: 'exists', claim: current };
  const hold = holdOf(view.pool, current, nowMs);
  return hold ? { kind: 'replacing', replacing: { claim: current, hold } } : { kind: 'none' };
}

/** The claim's slots: one per address it takes, a family's explicit address or `count` dynamic picks of it. */
export interface Slots {
  readonly slots: readonly FamilyRequest[];
  /** Each slot's candidate so far: explicit ones from the start, dynamic ones as the stages pick them. */
  readonly picks: (Choice | undefined)[];
}

/**
 * Stage "sticky addresses": in a pool with a reuse delay, the dynamic slots of each family first get the addresses the
 * pool still holds for this owner identity (HoldIdentity: kind, name and creator), if they lie in a Ready range of the
 * view. One read of the owner index, only in such pools. The index is eventually consistent: an address released a
 * moment ago may be missed, and the claim then gets another one (the held one stays held until its delay is over).
 * The commit's condition lets this owner take its own held addresses (writes/commit.ts).
 */
export async function pickSticky(
  env: AllocatorEnv,
  view: PoolView,
  claim: { readonly owner: HoldIdentity; readonly replacing?: Replacing; readonly slots: Slots },
): Promise<void> {
  const { ports } = env;
  const { owner, replacing } = claim;
  const { slots, picks } = claim.slots;
  if (!ports.heldFor || reuseDelayMs(view.pool) === 0 || picks.every((p) => p !== undefined)) return;
  // The expired claim this one replaces, when its owner identity is this one's: its addresses first (the commit
  // converts them in the same transaction), then those the owner index shows held.
  const previous =
    replacing && sameHoldIdentity(holdIdentityOf(replacing.claim), owner) ? replacing.claim.addresses : [];
  const held = [...previous, ...(await ports.heldFor(view.pool.name, owner, ports.clock.nowMs()))];
  const taken = new Set<string>();
  for (const [i, slot] of slots.entries()) {
    if (picks[i]) continue;
    for (const lease of held) {
      if (lease.family !== slot.family || taken.has(lease.address)) continue;
      const address = parseAddress(lease.address);
      let range: ParsedRange;
      try {
        range = rangeForExplicit(view, address);
      } catch {
        continue; // Its range is no longer Ready (or gone): not offered again.
      }
      taken.add(lease.address);
      picks[i] = { value: address.value, range, explicit: false, sticky: true };
      break;
    }
  }
}
