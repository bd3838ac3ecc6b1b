import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import type { ReconcileStore } from '../../shared/core/use-cases/reconcile-ports.ts';
import { reconcile, type ReconcileReport } from '../../shared/core/reconciler/reconcile.ts';
import { claimOf, leaseOf, owner, reconcilerHarness, T0, testSettings } from '../support/reconciler.ts';

/** A store whose `method` first runs `before` (once), so a test can put another writer exactly in between. */
function interleave<K extends keyof ReconcileStore>(
  store: ReconcileStore,
  method: K,
  before: () => Promise<void>,
): ReconcileStore {
  let done = false;
  return Object.assign(Object.create(store) as ReconcileStore, {
    [method]: async (...args: unknown[]) => {
      if (!done) {
        done = true;
        await before();
      }
      return (store[method] as (...a: unknown[]) => Promise<unknown>).apply(store, args);
    },
  });
}

describe('Reconciler races: renew vs expiry', () => {
  it("a renew that lands between the reconciler's read and its release wins", async () => {
    // Prepare
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const c = await h.claim('p', { name: 'c', owner: owner('a'), ttlSeconds: 60 });
    h.clock.advance(91_000);
    // Act: the renew goes in after the claim was read as expired, before the conditional release.
    let renewed = 0;
    const report = await h.run({
      settings: { sweepItems: 0 },
      wrap: (store) =>
        interleave(store, 'releaseExpiredClaim', async () => {
          renewed = (await h.api.call('POST', '/v1/pools/p/claims/c/renew', {})).status;
        }),
    });
    // Assess
    expect(renewed).toBe(200);
    expect(report.repairs.ClaimExpired).toBe(0);
    expect(await h.get(keys.claim('p', 'c'))).toMatchObject({ version: 2, expiresAt: h.clock.t + 60_000 });
    expect(await h.get(keys.lease('p', c.addresses[0]!.address))).toMatchObject({
      claimUid: c.uid,
      expiresAt: h.clock.t + 60_000,
    });
    expect(await h.events('p')).toEqual([]);
  });

  it('with a renew in flight against each release, every claim ends either renewed and whole, or released with its leases', async () => {
    // Prepare: 24 expired claims.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const claims = [];
    for (let i = 0; i < 24; i += 1)
      claims.push(await h.claim('p', { name: `c${i}`, owner: owner(`o${i}`), ttlSeconds: 60 }));
    h.clock.advance(91_000);
    // Act: as the reconciler sends each release, the owner's renew of the same claim goes out too.
    const renews = new Map<string, Promise<number>>();
    const report = await h.run({
      settings: { sweepItems: 0 },
      wrap: (store) =>
        Object.assign(Object.create(store) as ReconcileStore, {
          releaseExpiredClaim: (...args: Parameters<ReconcileStore['releaseExpiredClaim']>) => {
            renews.set(
              args[0].name,
              h.api.call('POST', `/v1/pools/p/claims/${args[0].name}/renew`, {}).then((r) => r.status),
            );
            return store.releaseExpiredClaim(...args);
          },
        }),
    });
    // Assess
    const events = await h.events('p');
    let released = 0;
    for (const c of claims) {
      const renew = await renews.get(c.name);
      const claim = await h.get(keys.claim('p', c.name));
      const lease = await h.get(keys.lease('p', c.addresses[0]!.address));
      if (claim) {
        expect(renew).toBe(200);
        expect(claim.version).toBe(2);
        expect(lease).toMatchObject({ claimUid: c.uid, expiresAt: claim.expiresAt });
        expect(events.some((e) => e.object === `claim/${c.name}`)).toBe(false);
      } else {
        released += 1;
        expect(renew).toBe(404);
        expect(lease).toBeUndefined();
        expect(events.filter((e) => e.object === `claim/${c.name}`)).toHaveLength(1);
      }
    }
    expect(renews.size).toBe(24);
    expect(report.repairs.ClaimExpired).toBe(released);
  });
});

describe('Reconciler races: two reconcilers at once', () => {
  it('every repair is done, and recorded, exactly once', async () => {
    // Prepare: one finding of each kind (several for expired claims and orphans). Dynamic claims come from pool p; the
    // planted states live in pool s, where nothing is allocated dynamically.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.pool('s', [{ cidr: '10.1.0.0/24', name: 'r' }]);
    for (let i = 0; i < 8; i += 1) await h.claim('p', { name: `exp${i}`, owner: owner(`e${i}`), ttlSeconds: 60 });
    for (let i = 0; i < 6; i += 1)
      await h.putLease(leaseOf('s', `10.1.0.${200 + i}`, 'r', `gone${i}`, `uid-gone${i}`, T0 - 3600_000));
    await h.putClaim(claimOf('s', 'lost', 'uid-lost', [{ address: '10.1.0.150', range: 'r' }], T0 - 3600_000));
    const holder = await h.claim('s', { name: 'holder', owner: owner('h'), addresses: ['10.1.0.151'] });
    await h.putClaim(claimOf('s', 'dup', 'uid-dup', [{ address: '10.1.0.151', range: 'r' }], T0 - 3600_000));
    await h.pool('q', [{ cidr: '10.8.0.0/24', name: 'ending' }]);
    await h.claim('q', { name: 'last', owner: owner('l'), ttlSeconds: 60 });
    expect((await h.api.call('DELETE', '/v1/pools/q/ranges/ending')).status).toBe(202);
    h.clock.advance(91_000);
    // Act: two containers, two runs, at the same time.
    const other = h.api.sibling({ clock: h.clock, viewMaxAgeMs: 0 });
    const [a, b] = await Promise.all([
      h.run(),
      reconcile({ ...other.container.deps, settings: testSettings }, { deadlineMs: h.clock.t + 60_000 }),
    ]);
    // The range can go only once its last claim is released, which one of the two did; a third run finalizes it.
    const c = await h.run();
    // Assess
    const total = (kind: keyof ReconcileReport['repairs']) => a.repairs[kind] + b.repairs[kind] + c.repairs[kind];
    expect(total('ClaimExpired')).toBe(9);
    expect(total('LeaseOrphaned')).toBe(6);
    expect(total('LeaseNotAllocated')).toBe(1);
    expect(total('DuplicateAllocation')).toBe(1);
    expect(total('RangeFinalized')).toBe(1);
    const events = [...(await h.events('p')), ...(await h.events('s')), ...(await h.events('q'))];
    expect(events).toHaveLength(9 + 6 + 1 + 1 + 1);
    expect(new Set(events.map((e) => `${e.reason} ${e.object}`)).size).toBe(events.length);
    expect((await h.get(keys.lease('s', '10.1.0.150')))!.claimUid).toBe('uid-lost');
    expect((await h.get(keys.lease('s', '10.1.0.151')))!.claimUid).toBe(holder.uid);
    expect(await h.get(keys.range('q', 'ending'))).toBeUndefined();
    expect(a.errors.concat(b.errors, c.errors)).toEqual([]);
  });
});
