import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { OWNER_RECHECK_MS } from '../../shared/core/reconciler/owners.ts';
import { laggingIndexEngine } from '../support/engines.ts';
import { owner, reconcilerHarness } from '../support/reconciler.ts';

const MIN = 60_000;

/** The owner index (GSI2) held at a moment, as an eventually consistent index lags a fresh claim. */
const laggingOwnerIndex = () => laggingIndexEngine('memory, owner index held', (q) => q.index === 'GSI2');

describe('Reconciler: row 2, owners reported gone (DELETE /v1/pools/{pool}/owners/{uid})', () => {
  it('releases, on a later run, a claim committed just before the report that the lagging owner index did not list', async () => {
    // Prepare: owner A's claim a1 is a minute old (indexed); a2 commits while the owner index lags behind it.
    const lag = laggingOwnerIndex();
    const h = await reconcilerHarness({ engine: lag.engine });
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'a1', owner: owner('A') });
    const b = await h.claim('p', { name: 'b', owner: owner('B') });
    h.clock.advance(MIN);
    lag.hold();
    const a2 = await h.claim('p', { name: 'a2', owner: owner('A') });
    h.clock.advance(20);
    // Act 1: the report misses a2 (the index does not list it yet), and so does a run while the index still lags.
    const res = await h.api.call('DELETE', '/v1/pools/p/owners/A');
    h.clock.advance(MIN);
    const lagging = await h.run();
    // Assess 1
    expect(res).toMatchObject({ status: 200, body: { released: ['a1'] } });
    expect(lagging.repairs.OwnerReleased).toBe(0);
    expect(await h.get(keys.claim('p', 'a2'))).toMatchObject({ uid: a2.uid });
    // Act 2: the index catches up; the next run looks again.
    lag.catchUp();
    h.clock.advance(MIN);
    const report = await h.run();
    // Assess 2: a2 and its lease are released with their event; B's claim is untouched.
    expect(report.repairs.OwnerReleased).toBe(1);
    expect(report.errors).toEqual([]);
    expect(await h.get(keys.claim('p', 'a2'))).toBeUndefined();
    expect(await h.get(keys.lease('p', a2.addresses[0]!.address))).toBeUndefined();
    expect((await h.get(keys.lease('p', b.addresses[0]!.address)))!.claimUid).toBe(b.uid);
    expect((await h.events('p')).map((e) => [e.reason, e.object]).sort()).toEqual([
      ['OwnerReleased', 'claim/a1'],
      ['OwnerReleased', 'claim/a2'],
    ]);
  });

  it('releases a claim the owner index did not list at the report (a create in flight), and stops looking OWNER_RECHECK_MS after the report', async () => {
    // Prepare: the claim commits as the report runs (a claim made after it is refused: OwnerGone, tests/cases/owner-gone.cases.ts)
    const lag = laggingOwnerIndex();
    const h = await reconcilerHarness({ engine: lag.engine });
    await h.pool('p', ['10.0.0.0/24']);
    lag.hold();
    const late = await h.claim('p', { name: 'late', owner: owner('A') });
    const reportedAt = h.clock.t;
    expect(await h.api.call('DELETE', '/v1/pools/p/owners/A')).toMatchObject({ status: 200, body: { released: [] } });
    // Act 1
    lag.catchUp();
    h.clock.advance(MIN);
    const first = await h.run();
    // Assess 1
    expect(first.repairs.OwnerReleased).toBe(1);
    expect(await h.get(keys.claim('p', 'late'))).toBeUndefined();
    expect(await h.get(keys.lease('p', late.addresses[0]!.address))).toBeUndefined();
    // Act 2: past the window, the tombstone is no longer read (the uid is not looked for any more).
    h.clock.t = reportedAt + OWNER_RECHECK_MS + 1;
    const after = await h.claim('p', { name: 'after', owner: owner('A') });
    const second = await h.run();
    // Assess 2
    expect(second.repairs.OwnerReleased).toBe(0);
    expect(await h.get(keys.claim('p', 'after'))).toMatchObject({ uid: after.uid });
  });

  it('keeps the tombstone a day (DynamoDB TTL), keyed by time, with the uid as an attribute', async () => {
    const h = await reconcilerHarness({ engine: laggingOwnerIndex().engine });
    await h.pool('p', ['10.0.0.0/24']);
    const uid = 'ü'.repeat(253); // the longest uid: its 1,012 UTF-8 bytes would not fit beside the time in a sort key
    expect((await h.api.call('DELETE', `/v1/pools/p/owners/${encodeURIComponent(uid)}`)).status).toBe(200);
    const tombstones = (await h.table.query({ partition: keys.ownersGone('p'), consistent: true })).items;
    expect(tombstones).toEqual([
      expect.objectContaining({
        SK: expect.stringMatching(new RegExp(`^${h.clock.iso().replace(/\./g, '\\.')}#[0-9a-f]{16}$`)),
        entity: 'ownerGone',
        uid,
        ttl: Math.ceil((h.clock.t + 24 * 3600_000) / 1000),
      }),
    ]);
    expect(await h.api.call('DELETE', `/v1/pools/p/owners/${encodeURIComponent(uid)}`)).toMatchObject({ status: 200 });
    expect((await h.table.query({ partition: keys.ownersGone('p'), consistent: true })).items).toHaveLength(1);
  });

  it("holds a released owner's addresses for the whole reuse delay from a renewal the owner index has not seen yet (issue 33, item 8)", async () => {
    // Prepare: a leased claim in a pool with a 5 s reuse delay, renewed while the owner index lags: its copy there
    // still has the first expiry, which has passed when the owner is reported gone
    const lag = laggingOwnerIndex();
    const h = await reconcilerHarness({ engine: lag.engine });
    expect((await h.api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: 5 })).status).toBe(201);
    expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24' })).status).toBe(201);
    const a = await h.claim('p', { name: 'a', owner: owner('A'), ttlSeconds: 60 });
    h.clock.advance(50_000);
    lag.hold();
    expect((await h.api.call('POST', '/v1/pools/p/claims/a/renew', {})).status).toBe(200);
    h.clock.advance(20_000);
    // Act
    const res = await h.api.call('DELETE', '/v1/pools/p/owners/A');
    // Assess: the claim was held when released, so its address is held for the whole delay from now
    expect(res).toMatchObject({ status: 200, body: { released: ['a'] } });
    expect(await h.get(keys.lease('p', a.addresses[0]!.address))).toMatchObject({
      state: 'Released',
      expiresAt: h.clock.t + 5_000,
    });
  });
});
