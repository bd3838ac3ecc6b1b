/**
 * Row 21: the blocks a pool took from its parent by growing (use-cases/grow.ts: a claim of the parent owned by
 * `Pool/<pool>`) are given back, best effort, by whatever removes the range made from them (releaseGrownSource). A
 * release that failed (a timeout, a stop between the range's removal and the release) leaves the parent's block held
 * for a range that no longer exists, for good: nothing else releases a claim of that owner. The sweep reads every
 * claim anyway and the run holds the pools' ranges, so finding such a claim costs nothing; a claim is released when it
 * is older than the orphan grace, no range is made from it (no marker on it, Claim.children) and no range of its pool
 * names it as its source (or that pool is gone), confirmed by consistent reads of the claim and of that pool.
 *
 * The grace covers a growth in flight: growOnce makes the claim, then the range, within one request, which the API's
 * timeout ends well within the orphan grace, the grace the other repairs give in-flight writes (rows 3-7). A growth
 * that takes an older claim again by its name (idempotency) races the release on the claim's marker: the range's write
 * is conditioned on the claim as read, the release on the claim having no marker, so one of them wins and nothing is
 * left half done.
 */
import { events } from '../events.ts';
import { holdOf, type Claim, type PoolView } from '../model.ts';
import { grownBlockOf } from '../use-cases/grown-blocks.ts';
import { Phase, type Run } from './run.ts';

/** Row 21 over the claims of one sweep page; `views` are the run's pools (with their ranges), by name. */
export async function releaseLeftGrownBlocks(
  run: Run,
  claims: readonly Claim[],
  views: ReadonlyMap<string, PoolView>,
): Promise<void> {
  const bornBefore = run.now() - run.deps.settings.orphanLeaseGraceMs;
  const left = claims.filter((claim) => {
    const grower = grownBlockOf(claim);
    return grower !== undefined && isLeft(claim, views.get(grower), bornBefore);
  });
  await run.each(Phase.Sweep, left, (claim) =>
    run.repair(`release grown block ${claim.pool}/${claim.name}`, async () => {
      // The sweep's copy of the claim and the run's views may be stale (a growth made the range since): read again.
      const [current] = await run.deps.reconcile.getClaims([{ pool: claim.pool, name: claim.name }]);
      if (!current || current.uid !== claim.uid) return true;
      const grower = grownBlockOf(current)!;
      if (!isLeft(current, await run.deps.pools.getPoolView(grower), bornBefore)) return true;
      const parent = views.get(current.pool)?.pool;
      // Released as any release of the parent would be: held for its owner identity when the parent has a reuse delay.
      const hold = parent && holdOf(parent, current, run.now());
      const event = events.grownBlockReleased(current, grower, run.iso(), hold);
      if (run.done(event, (await run.deps.reconcile.releaseClaim(current, event, hold)) === 'released'))
        run.deps.hints.forget(current.pool);
      return true;
    }),
  );
}

/**
 * Whether a grown block is left: made before `bornBefore`, the source of no range (no marker), and named as the
 * source of no range of its pool (absent, or Terminating: gone for every request, its ranges' markers say the rest).
 */
function isLeft(claim: Claim, grower: PoolView | undefined, bornBefore: number): boolean {
  if (claim.children?.length || Date.parse(claim.createdAt) > bornBefore) return false;
  return !grower?.ranges.some((r) => r.source?.pool === claim.pool && r.source.claim === claim.name);
}
