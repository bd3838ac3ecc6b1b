import { describe, expect, it } from 'vitest';
import type { TestEngine } from '../support/engines.ts';
import { allItems, tableSnapshot } from '../support/items.ts';
import { reconcilerHarness, T0, type ReconcilerHarness } from '../support/reconciler.ts';
import { bitmapHolds } from '../support/legacy.ts';

/**
 * Issue 13's address lifecycle through the real HTTP handler and reconciler on a hand-moved clock: a pool's reuse
 * delay holds released addresses for their previous owner identity (kind and name), which gets them back (sticky
 * addresses); everyone else waits until reusableAt.
 */
export function lifecycleCases(engine: TestEngine): void {
  const DELAY_S = 300;
  const web = (uid: string) => ({ kind: 'Pod', name: 'web-0', uid });
  const other = (uid: string) => ({ kind: 'Pod', name: `other-${uid}`, uid });
  type Addr = { address: string; family: string; range: string };
  const addressesOf = (body: Record<string, unknown>) => (body.addresses as Addr[]).map((a) => a.address);

  async function delayedPool(h: ReconcilerHarness, cidrs: string[], reuseDelaySeconds = DELAY_S): Promise<void> {
    expect((await h.api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds })).status).toBe(201);
    for (const cidr of cidrs) expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
  }

  const leaseItems = async (h: ReconcilerHarness) => (await allItems(h.table)).filter((i) => i.entity === 'lease');

  describe(`Reuse delay (${engine.name})`, () => {
    it('holds a released address for its previous owner: others never get it within the delay, get it after, and utilization adds up', async () => {
      // Prepare: a /29 has 6 hosts; web-0 takes one and releases it
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.40.0.0/29']);
      const first = await h.claim('p', { name: 'web-a', owner: web('a') });
      const [held] = first.addresses.map((a) => a.address);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/web-a')).status).toBe(204);
      const releasedAt = h.clock.t;
      h.clock.advance(1_000);
      // Act: others fill the range, then ask for the held address by name
      const fills = [];
      for (let i = 0; i < 5; i += 1)
        fills.push(await h.api.call('POST', '/v1/pools/p/claims', { name: `o${i}`, owner: other(`${i}`) }));
      const full = await h.api.call('POST', '/v1/pools/p/claims', { name: 'o5', owner: other('5') });
      const explicit = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'o6',
        owner: other('6'),
        addresses: [held],
      });
      const address = await h.api.call('GET', `/v1/pools/p/addresses/${held}`);
      const pool = await h.api.call('GET', '/v1/pools/p');
      // Assess: within the delay
      expect(fills.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(fills.flatMap((r) => addressesOf(r.body))).not.toContain(held);
      expect(full.body.code).toBe('RangeFull');
      expect(explicit.status).toBe(409);
      expect(explicit.body).toMatchObject({ code: 'AddressReleasing' });
      const reusableAt = new Date(releasedAt + DELAY_S * 1000).toISOString();
      expect(explicit.body.detail).toBe(
        `Address ${held} was released recently and is held for its previous owner "Pod"/"web-0" until ${reusableAt}; only that owner may claim it before then.`,
      );
      expect(address.status).toBe(200);
      expect(address.body).toMatchObject({
        address: held,
        state: 'Released',
        previousOwner: web('a'),
        previousClaim: 'web-a',
        reusableAt,
      });
      expect(address.body.owner).toBeUndefined();
      expect(pool.body).toMatchObject({
        reuseDelaySeconds: DELAY_S,
        utilization: { IPv4: { size: 6, used: 5, releasing: 1, free: 0 } },
      });
      expect((pool.body.ranges as Record<string, unknown>[])[0]).toMatchObject({
        size: 6,
        used: 5,
        releasing: 1,
        free: 0,
      });

      // Act: the delay passes, with no write in between
      h.clock.t = releasedAt + DELAY_S * 1000;
      const after = await h.api.call('POST', '/v1/pools/p/claims', { name: 'o7', owner: other('7') });
      // Assess: the address is anyone's again, and the new claim's lease replaced the Released one
      expect(after.status).toBe(201);
      expect(addressesOf(after.body)).toEqual([held]);
      expect((await h.api.call('GET', `/v1/pools/p/addresses/${held}`)).body).toMatchObject({
        state: 'Allocated',
        claim: 'o7',
        owner: other('7'),
      });
      expect((await h.api.call('GET', '/v1/pools/p')).body.utilization).toEqual({
        IPv4: { size: 6, used: 6, releasing: 0, free: 0 },
      });
    });

    it('gives the same owner identity its addresses back, dual-stack, after its uid changed, with a new claim name and uid', async () => {
      // Prepare: web-0 (uid a) holds one IPv4 and one IPv6 address; a neighbour claims around it
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.41.0.0/24', 'fd00:41::/120']);
      const first = await h.claim('p', { name: 'web-a', owner: web('a'), ipFamilyPolicy: 'RequireDualStack' });
      await h.claim('p', { name: 'n1', owner: other('n1'), ipFamilyPolicy: 'RequireDualStack' });
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/web-a')).status).toBe(204);
      h.clock.advance(10_000);
      // Act: the pod is recreated (new uid) and claims dynamically under a generated name
      const again = await h.api.call('POST', '/v1/pools/p/claims', {
        generateName: 'web-',
        owner: web('b'),
        ipFamilyPolicy: 'RequireDualStack',
      });
      // Assess
      expect(again.status).toBe(201);
      expect(addressesOf(again.body)).toEqual(first.addresses.map((a) => a.address));
      expect(again.body.name).not.toBe('web-a');
      expect(again.body.uid).not.toBe(first.uid);
      for (const a of first.addresses) {
        expect((await h.api.call('GET', `/v1/pools/p/addresses/${a.address}`)).body).toMatchObject({
          state: 'Allocated',
          claim: again.body.name,
          owner: web('b'),
        });
      }
      expect((await h.api.call('GET', '/v1/pools/p')).body.utilization).toMatchObject({
        IPv4: { used: 2, releasing: 0 },
        IPv6: { used: 2, releasing: 0 },
      });
    });

    it('lets the previous owner identity ask for its held address by name, and refuses anyone else', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.42.0.0/28']);
      const [held] = (await h.claim('p', { name: 'web-a', owner: web('a') })).addresses.map((a) => a.address);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/web-a')).status).toBe(204);
      // Act
      const stranger = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'x',
        owner: { kind: 'Pod', name: 'web-1', uid: 'a' },
        addresses: [held],
      });
      const otherKind = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'y',
        owner: { kind: 'VirtualMachine', name: 'web-0', uid: 'c' },
        addresses: [held],
      });
      const owner = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'web-b',
        owner: web('b'),
        addresses: [held],
      });
      // Assess: the identity is kind and name, not uid
      expect(stranger.body.code).toBe('AddressReleasing');
      expect(otherKind.body.code).toBe('AddressReleasing');
      expect(owner.status).toBe(201);
      expect(addressesOf(owner.body)).toEqual([held]);
    });

    it('changes nothing with a delay of 0: a released address is free at once and its lease item is gone', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.43.0.0/30'], 0);
      const [address] = (await h.claim('p', { name: 'a', owner: web('a') })).addresses.map((a) => a.address);
      // Act
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      // Assess
      expect(await leaseItems(h)).toEqual([]);
      expect((await h.api.call('GET', `/v1/pools/p/addresses/${address}`)).status).toBe(404);
      expect((await h.api.call('GET', '/v1/pools/p')).body).toMatchObject({ reuseDelaySeconds: 0 });
      expect(
        (await h.api.call('POST', '/v1/pools/p/claims', { name: 'b', owner: other('b'), addresses: [address] })).status,
      ).toBe(201);
    });

    it('counts the delay of an expired claim from its expiresAt, before and after the reconciler releases it, and cleans the item up after', async () => {
      // Prepare: a /30 has 2 hosts; a 60 s claim takes one
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.44.0.0/30']);
      const claim = await h.claim('p', { name: 'web-a', owner: web('a'), ttlSeconds: 60 });
      const [held] = claim.addresses.map((a) => a.address);
      const expiresAt = T0 + 60_000;
      const reusableAt = expiresAt + DELAY_S * 1000;
      const [neighbour] = (await h.claim('p', { name: 'n', owner: other('n') })).addresses.map((a) => a.address);
      // Act 1: expired, not yet released: nobody else gets it
      h.clock.t = expiresAt + 1_000;
      const beforeRelease = await h.api.call('POST', '/v1/pools/p/claims', { name: 'o1', owner: other('1') });
      // Act 2: the reconciler releases it into a hold counted from expiresAt
      h.clock.t = expiresAt + 40_000;
      const run = await h.run();
      const address = await h.api.call('GET', `/v1/pools/p/addresses/${held}`);
      const stillHeld = await h.api.call('POST', '/v1/pools/p/claims', { name: 'o2', owner: other('2') });
      const events = await h.events('p');
      // Assess
      expect(beforeRelease.body.code).toBe('RangeFull');
      expect(run.repairs.ClaimExpired).toBe(1);
      expect(address.body).toMatchObject({
        state: 'Released',
        previousOwner: web('a'),
        reusableAt: new Date(reusableAt).toISOString(),
      });
      expect(stillHeld.body.code).toBe('RangeFull');
      expect(events.find((e) => e.reason === 'ClaimExpired')?.message).toContain(
        `The addresses are held for Pod/web-0 until ${new Date(reusableAt).toISOString()}`,
      );
      // Act 3: the delay is over: free for anyone; a reconciler run after its grace deletes the Released item
      h.clock.t = reusableAt;
      const after = await h.api.call('POST', '/v1/pools/p/claims', { name: 'o3', owner: other('3') });
      expect(after.status).toBe(201);
      expect(addressesOf(after.body)).toEqual([held]);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/o3')).status).toBe(204);
      h.clock.t = reusableAt + DELAY_S * 1000 + 40_000;
      await h.run();
      expect((await leaseItems(h)).map((l) => l.address)).toEqual([neighbour]);
    });

    it("gives an expired claim's owner its address back under the same name before the reconciler runs, in one transaction with no lease left behind (issue 20)", async () => {
      // Prepare: a /29 (6 hosts); a 60 s claim of web-0 takes one, and expires; the reconciler has not run
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.45.0.0/29']);
      const first = await h.claim('p', { name: 'web', owner: web('a'), ttlSeconds: 60 });
      const [held] = first.addresses.map((a) => a.address);
      h.clock.t = T0 + 61_000;
      // Act: the same owner identity (a recreated pod: new uid) claims under the same name
      const again = await h.api.call('POST', '/v1/pools/p/claims', { name: 'web', owner: web('b') });
      // Assess: the same address, its lease now the new claim's; nothing of the old claim is left
      expect(again.status).toBe(201);
      expect(addressesOf(again.body)).toEqual([held]);
      const leases = await leaseItems(h);
      expect(leases.map((l) => [l.address, l.claim, l.claimUid])).toEqual([[held, 'web', again.body.uid]]);
    });

    it("holds an expired claim's addresses for its owner when another owner's claim replaces it under the same name (issue 20)", async () => {
      // Prepare: as above, but the replacing claim belongs to someone else
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.46.0.0/29']);
      const first = await h.claim('p', { name: 'web', owner: web('a'), ttlSeconds: 60 });
      const [held] = first.addresses.map((a) => a.address);
      h.clock.t = T0 + 61_000;
      // Act
      const replaced = await h.api.call('POST', '/v1/pools/p/claims', { name: 'web', owner: other('x') });
      const address = await h.api.call('GET', `/v1/pools/p/addresses/${held}`);
      const sticky = await h.api.call('POST', '/v1/pools/p/claims', { name: 'web-again', owner: web('c') });
      // Assess: the old lease became a Released one held for web-0 from the old claim's expiry (not an Allocated lease
      // without its claim), and web-0's next claim gets it back
      expect(replaced.status).toBe(201);
      expect(addressesOf(replaced.body)).not.toContain(held);
      expect(address.body).toMatchObject({
        state: 'Released',
        previousOwner: web('a'),
        reusableAt: new Date(T0 + 60_000 + DELAY_S * 1000).toISOString(),
      });
      expect(addressesOf(sticky.body)).toEqual([held]);
    });

    it('holds the addresses of a released owner for a recreated owner of the same kind and name', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine, start: T0 });
      await delayedPool(h, ['10.45.0.0/24']);
      const first = await h.claim('p', { name: 'web-a', owner: web('a') });
      // Act
      const released = await h.api.call('DELETE', '/v1/pools/p/owners/a');
      const again = await h.api.call('POST', '/v1/pools/p/claims', { name: 'web-b', owner: web('b') });
      // Assess
      expect(released.body).toMatchObject({ released: ['web-a'] });
      expect(addressesOf(again.body)).toEqual(first.addresses.map((a) => a.address));
    });

    it("keeps a held address's bit set in legacy mode, where the bitmap allocates, and refuses it to others", async () => {
      // Prepare: legacy mode; a legacy /29 in a pool with a delay
      const h = await reconcilerHarness({
        engine,
        start: T0,
        env: { FEATURE_GATES: 'MultiCIDRServiceAllocator=false,DisableAllocatorDualWrite=false' },
      });
      expect((await h.api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: DELAY_S })).status).toBe(201);
      expect(
        (await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.46.0.0/29', name: 'legacy', legacy: true })).status,
      ).toBe(201);
      const [held] = (await h.claim('p', { name: 'web-a', owner: web('a') })).addresses.map((a) => a.address);
      // Act
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/web-a')).status).toBe(204);
      const fills = [];
      for (let i = 0; i < 5; i += 1)
        fills.push(await h.api.call('POST', '/v1/pools/p/claims', { name: `o${i}`, owner: other(`${i}`) }));
      const explicit = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'x',
        owner: other('x'),
        addresses: [held],
      });
      // Assess: old consumers of the bitmap see it taken; the bitmap allocator never hands it out
      expect((await bitmapHolds(h.api.container, 'p', 'legacy'))?.addresses).toContain(held);
      expect(fills.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(fills.flatMap((r) => addressesOf(r.body))).not.toContain(held);
      expect(explicit.body.code).toBe('AddressReleasing');
    });

    it('refuses a reuse delay that is not a whole number of seconds from 0 to a week, writing nothing', async () => {
      const h = await reconcilerHarness({ engine, start: T0 });
      const before = await tableSnapshot(h.table);
      for (const bad of [-1, 604_801, 1.5, '60', true]) {
        const res = await h.api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: bad });
        expect(res.status, JSON.stringify(bad)).toBe(400);
        expect(res.body.code).toBe('InvalidArgument');
      }
      expect(await tableSnapshot(h.table)).toEqual(before);
      expect((await h.api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: 604_800 })).body).toMatchObject({
        reuseDelaySeconds: 604_800,
      });
    });
  });
}
