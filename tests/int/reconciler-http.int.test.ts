import { describe, expect, it } from 'vitest';
import { eventToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { OWNER_RECHECK_MS } from '../../shared/core/reconciler/owners.ts';
import { EventReason } from '../../shared/core/use-cases/reconcile-ports.ts';
import { createClaim } from '../../shared/core/use-cases/create-claim.ts';
import { owner, reconcilerHarness } from '../support/reconciler.ts';

describe('HTTP: DELETE /v1/pools/{pool}/owners/{uid} (row 2)', () => {
  it('releases every claim of the owner uid, and none of another owner that reuses its name', async () => {
    // Prepare: web-0 (uid A) made two claims; a new web-0 (uid B, the StatefulSet pod made again) made one.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const a1 = await h.claim('p', { name: 'a1', owner: owner('A', 'web-0') });
    const a2 = await h.claim('p', { name: 'a2', owner: owner('A', 'web-0'), ttlSeconds: 600 });
    const b = await h.claim('p', { name: 'b', owner: owner('B', 'web-0') });
    // Act
    const res = await h.api.call('DELETE', '/v1/pools/p/owners/A');
    // Assess
    expect(res).toMatchObject({ status: 200, body: { owner: { uid: 'A' }, released: ['a1', 'a2'] } });
    for (const c of [a1, a2]) {
      expect(await h.get(keys.claim('p', c.name))).toBeUndefined();
      expect(await h.get(keys.lease('p', c.addresses[0]!.address))).toBeUndefined();
    }
    expect((await h.get(keys.lease('p', b.addresses[0]!.address)))!.claimUid).toBe(b.uid);
    const events = await h.events('p');
    expect(events.map((e) => [e.reason, e.object]).sort()).toEqual([
      ['OwnerReleased', 'claim/a1'],
      ['OwnerReleased', 'claim/a2'],
    ]);
    expect(events[0]!.message).toContain('uid A');
  });

  it('is idempotent: a second signal releases nothing and still answers 200', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'a1', owner: owner('A') });
    expect((await h.api.call('DELETE', '/v1/pools/p/owners/A')).body).toMatchObject({ released: ['a1'] });
    expect(await h.api.call('DELETE', '/v1/pools/p/owners/A')).toMatchObject({
      status: 200,
      body: { owner: { uid: 'A' }, released: [] },
    });
    expect(await h.events('p')).toHaveLength(1);
  });

  it('leaves a tombstone, so runs in the next 10 minutes release a claim the owner made after the report (a create in flight)', async () => {
    // Prepare: the report finds nothing; then a create that was in flight commits a claim for the gone owner: its
    // check of the owner's gone-mark ran before the report (a claim asked for after it is refused: OwnerGone).
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const reportedAt = h.clock.t;
    expect(await h.api.call('DELETE', '/v1/pools/p/owners/A')).toMatchObject({ status: 200, body: { released: [] } });
    const deps = h.api.container.deps;
    const checkedBeforeReport = new Proxy(deps.reconcile, {
      get(target, prop) {
        if (prop === 'ownerReportedGoneAt') return async () => undefined;
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const { claim: late } = await createClaim(
      { ...deps, reconcile: checkedBeforeReport },
      { pool: 'p', name: 'late', owner: owner('A') },
    );
    const other = await h.claim('p', { name: 'other', owner: owner('B') });
    // Act
    h.clock.advance(60_000);
    const report = await h.run();
    // Assess
    expect(report.repairs.OwnerReleased).toBe(1);
    expect(await h.get(keys.claim('p', 'late'))).toBeUndefined();
    expect(await h.get(keys.lease('p', late.addresses[0]!.address))).toBeUndefined();
    expect((await h.get(keys.lease('p', other.addresses[0]!.address)))!.claimUid).toBe(other.uid);
    expect((await h.events('p')).map((e) => [e.reason, e.object])).toEqual([['OwnerReleased', 'claim/late']]);
    const [tombstone] = (await h.table.query({ partition: keys.ownersGone('p'), consistent: true })).items;
    expect(tombstone).toMatchObject({
      entity: 'ownerGone',
      uid: 'A',
      ttl: Math.ceil((reportedAt + 24 * 3600_000) / 1000),
    });
    // Past the window the tombstone is not read: a claim made then for the uid is left alone.
    h.clock.t = reportedAt + OWNER_RECHECK_MS + 1;
    await h.claim('p', { name: 'after', owner: owner('A') });
    expect((await h.run()).repairs.OwnerReleased).toBe(0);
    expect(await h.get(keys.claim('p', 'after'))).toMatchObject({ name: 'after' });
  });

  it('answers 404 for an unknown pool', async () => {
    const h = await reconcilerHarness();
    expect(await h.api.call('DELETE', '/v1/pools/nope/owners/A')).toMatchObject({
      status: 404,
      body: { code: 'NotFound' },
    });
  });
});

describe('HTTP: GET /v1/pools/{pool}/events', () => {
  it('lists the last 24 hours newest first, in pages, and never an older event (TTL deletion is lazy)', async () => {
    // Prepare: five events a minute apart, and one 25 hours old that DynamoDB's TTL has not deleted yet.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    // The events below lie within the pool's life: a listing reads none from before its createdAt (issue 33, item 3).
    h.clock.advance(10 * 60_000);
    const at = (minutesAgo: number) => h.clock.iso(h.clock.t - minutesAgo * 60_000);
    for (let i = 0; i < 5; i += 1) {
      await h.put(
        eventToItem(
          { pool: 'p', time: at(i), reason: EventReason.LeaseOrphaned, object: `lease/10.0.0.${i}`, message: `m${i}` },
          `id${i}`,
        ),
      );
    }
    const old = eventToItem(
      { pool: 'p', time: at(25 * 60), reason: EventReason.ClaimExpired, object: 'claim/old', message: 'old' },
      'old',
    );
    await h.put({ ...old, ttl: Math.ceil(Date.now() / 1000) + 3600 });
    // Act
    const first = await h.api.call('GET', '/v1/pools/p/events?limit=2');
    const second = await h.api.call(
      'GET',
      `/v1/pools/p/events?limit=2&cursor=${encodeURIComponent(first.body.nextCursor as string)}`,
    );
    const third = await h.api.call(
      'GET',
      `/v1/pools/p/events?limit=2&cursor=${encodeURIComponent(second.body.nextCursor as string)}`,
    );
    // Assess
    expect(first.status).toBe(200);
    expect(first.body.items).toEqual([
      { time: at(0), reason: 'LeaseOrphaned', object: 'lease/10.0.0.0', message: 'm0', by: 'reconciler' },
      { time: at(1), reason: 'LeaseOrphaned', object: 'lease/10.0.0.1', message: 'm1', by: 'reconciler' },
    ]);
    expect(second.body.items!.map((e) => e.object)).toEqual(['lease/10.0.0.2', 'lease/10.0.0.3']);
    expect(third.body.items!.map((e) => e.object)).toEqual(['lease/10.0.0.4']);
    expect(third.body.nextCursor).toBeUndefined();
  });

  it('stores events with a DynamoDB TTL 24 hours after their time', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'a1', owner: owner('A') });
    await h.api.call('DELETE', '/v1/pools/p/owners/A');
    const [event] = await h.events('p');
    expect((event as unknown as { ttl: number }).ttl).toBe(Math.ceil((h.clock.t + 24 * 3600_000) / 1000));
  });

  it('refuses a cursor that was not made here (400) and an unknown pool (404)', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    expect(await h.api.call('GET', '/v1/pools/p/events?cursor=forged.cursor')).toMatchObject({
      status: 400,
      body: { code: 'InvalidArgument' },
    });
    expect(await h.api.call('GET', '/v1/pools/nope/events')).toMatchObject({ status: 404 });
    expect(await h.api.call('GET', '/v1/pools/p/events')).toMatchObject({ status: 200, body: { items: [] } });
  });
});
