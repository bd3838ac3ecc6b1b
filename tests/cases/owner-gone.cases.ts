import { describe, expect, it } from 'vitest';
import type { TestEngine } from '../support/engines.ts';
import { tableSnapshot } from '../support/items.ts';
import { owner, reconcilerHarness, T0 } from '../support/reconciler.ts';

/**
 * An owner reported gone (DELETE .../owners/{uid}): a later claim for that uid is refused, with its own code, until the
 * report's mark ends; and the events of its release name who reported it.
 */
export function ownerGoneCases(engine: TestEngine): void {
  const MARK_MS = 10 * 60_000;
  const ADMIN = 'arn:aws:iam::123456789012:role/ops';

  describe(`Owner reported gone (${engine.name})`, () => {
    it('refuses a claim for an owner uid reported gone (OwnerGone, 409, nothing written) until the mark ends, then keeps it', async () => {
      // Prepare: z9 holds a claim and is reported gone
      const h = await reconcilerHarness({ engine, start: T0 });
      await h.pool('p', ['10.61.0.0/24']);
      await h.claim('p', { name: 'laptop-a', owner: owner('z9') });
      expect((await h.api.call('DELETE', '/v1/pools/p/owners/z9')).body).toMatchObject({ released: ['laptop-a'] });
      const reportedAt = h.clock.t;
      h.clock.advance(30_000);
      const before = await tableSnapshot(h.table);
      // Act: a claim for z9 within the mark, one for another uid, and one for z9 after the mark
      const refused = await h.api.call('POST', '/v1/pools/p/claims', { name: 'laptop-b', owner: owner('z9') });
      const preview = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'laptop-b',
        owner: owner('z9'),
        dryRun: true,
      });
      const after = await tableSnapshot(h.table);
      const other = await h.api.call('POST', '/v1/pools/p/claims', { name: 'laptop-c', owner: owner('z10') });
      h.clock.t = reportedAt + MARK_MS;
      const later = await h.api.call('POST', '/v1/pools/p/claims', { name: 'laptop-d', owner: owner('z9') });
      await h.run();
      // Assess
      const until = new Date(reportedAt + MARK_MS).toISOString();
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        code: 'OwnerGone',
        detail: `Owner uid "z9" was reported gone at ${new Date(reportedAt).toISOString()} (DELETE .../owners/z9): claims for it are refused until ${until}, so a late or retried request cannot take addresses for an owner that no longer exists. A new owner has a new uid.`,
      });
      expect(preview.status).toBe(409);
      expect(preview.body.code).toBe('OwnerGone');
      expect(after).toEqual(before);
      expect(other.status).toBe(201);
      expect(later.status).toBe(201);
      expect((await h.api.call('GET', '/v1/pools/p/claims/laptop-d')).status).toBe(200);
    });

    it('refuses a claim for a gone owner in a growing pool with no room before growing it (OwnerGone, nothing written)', async () => {
      // Prepare: pods has no range and grows from top's /28 blocks; z9 is reported gone
      const h = await reconcilerHarness({ engine, start: T0 });
      const made = [
        await h.api.call('POST', '/v1/pools', { name: 'top', blockPrefixLength: { IPv4: 28 }, openToChildPools: true }),
        await h.api.call('POST', '/v1/pools/top/ranges', { cidr: '10.63.0.0/26' }),
        await h.api.call('POST', '/v1/pools', { name: 'pods', grow: { pool: 'top', belowFree: 2 } }),
        await h.api.call('DELETE', '/v1/pools/pods/owners/z9'),
      ];
      expect(made.map((r) => r.status)).toEqual([201, 201, 201, 200]);
      const before = await tableSnapshot(h.table);
      // Act
      const refused = await h.api.call('POST', '/v1/pools/pods/claims', { name: 'late', owner: owner('z9') });
      // Assess: the growth would have been a block of top's and a range of pods', taken for a claim then refused
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('OwnerGone');
      expect(await tableSnapshot(h.table)).toEqual(before);
      expect((await h.api.call('POST', '/v1/pools/pods/claims', { name: 'next', owner: owner('z10') })).status).toBe(
        201,
      );
    });

    it("names the caller of DELETE .../owners/{uid} as the events' actor, 'anonymous' for an unsigned local call", async () => {
      // Prepare
      const h = await reconcilerHarness({ engine, start: T0 });
      await h.pool('p', ['10.62.0.0/24']);
      await h.claim('p', { name: 'a', owner: owner('u1') });
      await h.claim('p', { name: 'b', owner: owner('u2') });
      // Act
      expect(
        (await h.api.call('DELETE', '/v1/pools/p/owners/u1', undefined, { 'x-ipam-principal': ADMIN })).status,
      ).toBe(200);
      expect((await h.api.call('DELETE', '/v1/pools/p/owners/u2')).status).toBe(200);
      const listed = await h.api.call('GET', '/v1/pools/p/events');
      // Assess
      const items = listed.body.items as { object: string; reason: string; by: string }[];
      const byObject = Object.fromEntries(items.map((e) => [e.object, { reason: e.reason, by: e.by }]));
      expect(byObject).toEqual({
        'claim/a': { reason: 'OwnerReleased', by: ADMIN },
        'claim/b': { reason: 'OwnerReleased', by: 'anonymous' },
      });
    });
  });
}
