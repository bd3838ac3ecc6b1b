import { parseAddress } from '../ip/address.ts';
import { rangeCidr } from '../base/pool-geometry.ts';
import { isHostOf } from '../ip/cidr.ts';
import { RangeState, type Claim, type PoolView } from '../model.ts';
import { nowIso } from '../base/time.ts';
import { events } from '../events.ts';
import { EventReason } from '../events.ts';
import { Phase, type Run } from './run.ts';
import { finalizePool } from '../use-cases/pools.ts';
import { ClaimHasChildrenError } from '../errors.ts';

/** Claims read per page of a deleted pool's listing. */
const PAGE = 100;
/**
 * How long after a pool's deletion each run looks for its claims: more than the claims listing's lag plus a run's
 * period and length, with room for failed runs (as OWNER_RECHECK_MS for owners).
 */
export const POOL_RECHECK_MS = 10 * 60_000;

/**
 * Whether the claim is the pool's as it is now: made since the pool was (an earlier pool of the name ended before), with
 * every address a host address of a Ready or Terminating range.
 */
function servedBy(view: PoolView | undefined, claim: Claim): boolean {
  if (!view || claim.createdAt < view.pool.createdAt) return false;
  return claim.addresses.every((a) =>
    view.ranges.some(
      (r) =>
        (r.state === RangeState.Ready || r.state === RangeState.Terminating) &&
        isHostOf(rangeCidr(r), parseAddress(a.address)),
    ),
  );
}

/**
 * A pool's DELETE answers 409 while its claims listing shows a claim, but the listing is an eventually consistent
 * index: a claim committed (and answered 201) just before the delete may not be listed yet, and would outlive its
 * pool for good (the sweep walks existing pools). The delete writes a pool-gone tombstone in its transaction; for
 * POOL_RECHECK_MS each run lists the claims of every pool deleted lately and releases, with their leases and a
 * PoolDeleted event, those whose addresses lie in no Ready or Terminating range of the pool as it is now (absent, or
 * created again since: the new pool's own claims lie in its ranges and stay). A claim made before the pool as it is
 * now was created is an earlier pool's, whatever its addresses.
 *
 * The same read lists every pool whose deletion is not finished (still Terminating: its DELETE's request failed or
 * stopped on the way), whenever it was deleted; each run finishes it (PoolStore.finalizePool, the pool item last),
 * row 19, or, while one of its claims is the source of another pool's range, reports that it waits (row 20).
 */
export async function releaseDeletedPoolClaims(run: Run): Promise<void> {
  // Retried within the run (Run.read); a listing that still fails leaves the deleted pools to later runs of the window.
  const deleted = await run.read('list pools deleted', () =>
    run.deps.reconcile.poolsDeletedSince(run.now() - POOL_RECHECK_MS),
  );
  if (!deleted.ok) return;
  await run.each(Phase.Owners, deleted.value, (pool) =>
    run.repair(`release claims of deleted pool ${pool}`, async () => {
      const view = await run.deps.pools.getPoolView(pool);
      let cursor: string | undefined;
      do {
        const page = await run.deps.claims.listClaims(pool, PAGE, cursor);
        for (const claim of page.items) {
          if (servedBy(view, claim)) continue;
          if (
            (await run.deps.reconcile.releaseClaim(claim, events.poolDeleted(claim, nowIso(run.deps)))) === 'released'
          )
            run.repairs[EventReason.PoolDeleted] += 1;
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      // A deletion not finished (the DELETE's request failed or stopped on the way): finish it, the pool item last.
      try {
        await finalizePool(run.deps, pool);
      } catch (error) {
        // Row 20: a claim of the pool is the source of another pool's range, an expected wait, reported as one.
        if (!(error instanceof ClaimHasChildrenError)) throw error;
        run.waiting.push(`pool ${pool}: ${waitText(error)}`);
      }
      return true;
    }),
  );
}

/** What a deleted pool's deletion waits for: the ranges of other pools made from one of its claims. */
function waitText(error: ClaimHasChildrenError): string {
  const ranges = error.children.map((c) => `${c.pool}/${c.range}`).join(', ');
  const one = error.children.length === 1;
  return `its deletion waits for range${one ? '' : 's'} ${ranges}, made from its claim ${error.claim}; a run after ${one ? 'that range is' : 'those ranges are'} gone finishes it.`;
}
