import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { POOL_RECHECK_MS } from '../../shared/core/reconciler/deleted-pools.ts';
import { laggingIndexEngine } from '../support/engines.ts';
import { claimOf, owner, reconcilerHarness } from '../support/reconciler.ts';

const MIN = 60_000;

/**
 * The claims and leases listings (GSI1 `CLAIMS#...`, `ADDR#...`) held at a moment, as an eventually consistent index
 * lags a fresh claim (the finalizer reads what either listing shows, so a claim one of them shows goes with the pool).
 */
const laggingClaimsListing = () =>
  laggingIndexEngine(
    'memory, claims and leases listings held',
    (q) => q.index === 'GSI1' && (q.partition.startsWith('CLAIMS#') || q.partition.startsWith('ADDR#')),
  );

/** Pool 'p' (10.0.0.0/24) and a claim `name` committed (201) while the listings are held, so they do not show it. */
async function claimTheListingMisses(name: string) {
  const lag = laggingClaimsListing();
  const h = await reconcilerHarness({ engine: lag.engine });
  await h.pool('p', ['10.0.0.0/24']);
  lag.hold();
  const claim = await h.claim('p', { name, owner: owner('A') });
  return { lag, h, claim };
}

describe('Pool deletion (DELETE /v1/pools/{pool}) with a claims listing that lags', () => {
  it('releases, on a later run, a claim committed just before the delete that the listing did not show', async () => {
    // Prepare: a claim commits (201) while the claims listing lags behind it; the delete's emptiness check misses it.
    const { lag, h, claim: late } = await claimTheListingMisses('late');
    h.clock.advance(20);
    const deleted = await h.api.call('DELETE', '/v1/pools/p');
    expect(deleted.status).toBe(204);
    // Act 1: a run while the listing still lags finds nothing.
    h.clock.advance(MIN);
    const lagging = await h.run();
    // Assess 1: the claim and its lease outlived their pool (the bug, before the pool-gone tombstone).
    expect(lagging.repairs.PoolDeleted).toBe(0);
    expect(await h.get(keys.claim('p', 'late'))).toMatchObject({ uid: late.uid });
    // Act 2: the listing catches up; the next run looks again.
    lag.catchUp();
    h.clock.advance(MIN);
    const report = await h.run();
    // Assess 2: the claim and its lease are released, with their event.
    expect(report.repairs.PoolDeleted).toBe(1);
    expect(report.errors).toEqual([]);
    expect(await h.get(keys.claim('p', 'late'))).toBeUndefined();
    expect(await h.get(keys.lease('p', late.addresses[0]!.address))).toBeUndefined();
    expect((await h.events('p')).map((e) => [e.reason, e.object])).toEqual([['PoolDeleted', 'claim/late']]);
  });

  it('leaves the claims of a pool created again under the same name alone, and stops looking POOL_RECHECK_MS after the delete', async () => {
    // Prepare: the old pool's claim is left behind in 10.0.0.0/24; the pool comes back with 10.1.0.0/24 and a claim.
    const { lag, h, claim: old } = await claimTheListingMisses('old');
    expect((await h.api.call('DELETE', '/v1/pools/p')).status).toBe(204);
    const deletedAt = h.clock.t;
    lag.catchUp();
    await h.pool('p', ['10.1.0.0/24']);
    const fresh = await h.claim('p', { name: 'fresh', owner: owner('B') });
    // Act 1
    h.clock.advance(MIN);
    const report = await h.run();
    // Assess 1: the left-behind claim goes, the new pool's stays.
    expect(report.repairs.PoolDeleted).toBe(1);
    expect(await h.get(keys.claim('p', 'old'))).toBeUndefined();
    expect(await h.get(keys.lease('p', old.addresses[0]!.address))).toBeUndefined();
    expect(await h.get(keys.claim('p', 'fresh'))).toMatchObject({ uid: fresh.uid });
    // Act 2: past the window the tombstone is not read, whatever the listing holds.
    await h.putClaim({ ...claimOf('p', 'stray', 'stray-uid', [{ address: '10.0.0.9', range: 'x' }], h.clock.t) });
    h.clock.t = deletedAt + POOL_RECHECK_MS + 1;
    const after = await h.run();
    // Assess 2
    expect(after.repairs.PoolDeleted).toBe(0);
    expect(await h.get(keys.claim('p', 'stray'))).toBeDefined();
  });
});
