import { parseAddress } from '../ip/address.ts';
import { holdOf, type Claim, type Pool } from '../model.ts';
import { checkOwnerField } from '../names.ts';
import { nowIso, type Deps } from '../use-cases/deps.ts';
import { events } from './plan.ts';

/** Claims read per page of an owner's listing. */
const PAGE = 100;
/** Passes over the owner index: a later pass picks up claims the (eventually consistent) index showed late. */
const PASSES = 3;

/**
 * Row 2 of the reconciler's table: an owner (pod, VM, service) is gone, so every claim it holds in the pool is
 * released, each with its leases in one transaction conditioned on the claim's uid, and an OwnerReleased event.
 * Owners are matched by uid only, never by name: a new owner that reuses an old name keeps its addresses (the
 * whereabouts StatefulSet bug). Idempotent: an owner with no claims releases nothing.
 * @returns the names of the claims released by this call, in release order.
 * @throws NotFoundError for an unknown pool; InvalidArgumentError for a uid that breaks the owner rules (names.ts)
 */
export async function releaseOwner(deps: Deps, pool: string, ownerUid: string): Promise<{ released: string[] }> {
  checkOwnerField(ownerUid, 'uid');
  const { pool: poolItem } = await deps.views.get(pool, deps.clock.nowMs());
  const released: string[] = [];
  const seen = new Set<string>();
  for (let pass = 0; pass < PASSES; pass += 1) {
    let found = 0;
    let cursor: string | undefined;
    do {
      const page = await deps.claims.listClaims(pool, PAGE, cursor, ownerUid);
      for (const listed of page.items) {
        // The index may still list a claim released a moment ago: each incarnation is tried once.
        if (listed.spec.owner.uid !== ownerUid || seen.has(listed.uid)) continue;
        seen.add(listed.uid);
        found += 1;
        if (await releaseOne(deps, poolItem, listed)) released.push(listed.name);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    if (found === 0) break;
  }
  return { released };
}

async function releaseOne(deps: Deps, pool: Pool, claim: Claim): Promise<boolean> {
  // A reuse delay holds the addresses for the owner identity (kind and name): a recreated owner gets them back.
  const hold = holdOf(pool, claim, deps.clock.nowMs());
  const outcome = await deps.reconcile.releaseClaim(claim, events.ownerReleased(claim, nowIso(deps), hold), hold);
  if (outcome !== 'released') return false; // Released by someone else, or another incarnation: not this owner's claim any more.
  if (!hold) for (const a of claim.addresses) deps.hints.markFree(claim.pool, a.family, parseAddress(a.address).value, deps.clock.nowMs());
  return true;
}
