import { describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { allItems } from '../support/items.ts';
import { LaggingListings } from '../support/lagging-listings.ts';
import type { WriteOp } from '../../shared/adapters/dynamodb/table.ts';

/**
 * What a pool tree's deletion leaves when the claims and leases listings (eventually consistent indexes) lag behind
 * the writes: nothing destructive may rest on a listing alone, so a block is never held twice, by a pool deleted and
 * by another.
 */

type Item = Record<string, unknown>;
const NEVER = Number.MAX_SAFE_INTEGER;

/** The table key's partition of a write. */
const partitionOf = (op: WriteOp): string => (op.kind === 'put' ? (op.item.PK as string) : op.key.PK);

/** An API on `engine` whose claims and leases listings never show the items of the partitions `hidden` picks. */
async function laggingApi(
  engine: TestEngine,
  hidden: (partition: string) => boolean,
): Promise<{ api: TestApi; clock: ManualClock; listings: LaggingListings }> {
  const clock = new ManualClock();
  const base = await testApi({ clock, viewMaxAgeMs: 0 }, {}, undefined, engine);
  const listings = new LaggingListings(base.container.table, (op) => (hidden(partitionOf(op)) ? NEVER : 0));
  return { api: base.sibling({ clock, table: listings }), clock, listings };
}

const live = (i: Item, nowMs: number) =>
  i.entity === 'lease' && i.state !== 'Released' && (i.expiresAt === undefined || (i.expiresAt as number) > nowMs);

export function poolTreeDeleteCases(engine: TestEngine): void {
  describe(`Pool tree deletion under lagging listings (${engine.name})`, () => {
    it("keeps a parent pool's claim that is a child range's block, and the block, when its claims listing lags the DELETE", async () => {
      // Prepare: org's claim eu-west is the block of range eu-west/main; org's claims listing never shows it, its
      // leases listing has caught up.
      const { api, clock, listings } = await laggingApi(engine, (p) => p.startsWith('CLAIM#org#'));
      expect(
        (await api.call('POST', '/v1/pools', { name: 'org', openToChildPools: true, blockPrefixLength: { IPv4: 16 } }))
          .status,
      ).toBe(201);
      expect((await api.call('POST', '/v1/pools/org/ranges', { cidr: '10.0.0.0/8' })).status).toBe(201);
      const region = await api.call('POST', '/v1/pools/org/claims', { name: 'eu-west', owner: owner('eu') });
      expect(region.status).toBe(201);
      const block = (region.body.addresses as { prefix: string }[])[0]!.prefix;
      expect((await api.call('POST', '/v1/pools', { name: 'eu-west', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      const source = { pool: 'org', claim: 'eu-west' };
      expect((await api.call('POST', '/v1/pools/eu-west/ranges', { cidr: block, name: 'main', source })).status).toBe(
        201,
      );
      // Act
      const deleted = await api.call('DELETE', '/v1/pools/org');
      const again = await api.call('POST', '/v1/pools', {
        name: 'org',
        openToChildPools: true,
        blockPrefixLength: { IPv4: 16 },
      });
      const items = await allItems(listings.inner);
      // Assess: accepted, but the claim and its block stay while the child range lives; the name is not free
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
      expect(items.filter((i) => i.entity === 'claim' && i.pool === 'org').map((c) => c.children)).toEqual([
        [{ pool: 'eu-west', range: 'main', cidr: block }],
      ]);
      expect(items.filter((i) => live(i, clock.nowMs()) && i.pool === 'org').map((l) => l.address)).toEqual([
        block.split('/')[0],
      ]);
      expect(again.status).toBe(409);
      // Then the child range goes, and a repeated DELETE finishes the deletion
      expect((await api.call('DELETE', '/v1/pools/eu-west/ranges/main')).status).toBe(202);
      clock.advance(5_000);
      expect((await api.call('DELETE', '/v1/pools/eu-west/ranges/main')).status).toBe(204);
      expect((await api.call('DELETE', '/v1/pools/org')).status).toBe(204);
      // (the pool-gone tombstone stays its day)
      expect((await allItems(listings.inner)).filter((i) => i.pool === 'org' && i.entity !== 'poolGone')).toEqual([]);
    });

    it("takes a growing pool's claims out of its grown block before giving the block back, when its listings lag the DELETE", async () => {
      // Prepare: node-1 grows from top; its claim pod is answered; node-1's claims and leases listings never show it.
      const { api, clock, listings } = await laggingApi(
        engine,
        (p) => p.startsWith('CLAIM#node-1#') || p.startsWith('LEASE#node-1#'),
      );
      expect(
        (await api.call('POST', '/v1/pools', { name: 'top', openToChildPools: true, blockPrefixLength: { IPv4: 28 } }))
          .status,
      ).toBe(201);
      expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.0.0.0/24' })).status).toBe(201);
      const grow = { pool: 'top', belowFree: 1, maxBlocks: 2 };
      for (const name of ['node-1', 'node-2'])
        expect((await api.call('POST', '/v1/pools', { name, grow })).status).toBe(201);
      const pod = await api.call('POST', '/v1/pools/node-1/claims', { name: 'pod', owner: owner('pod') });
      expect(pod.status, JSON.stringify(pod.body)).toBe(201);
      // Act: node-1 goes; node-2 grows and claims
      const deleted = await api.call('DELETE', '/v1/pools/node-1');
      const other = await api.call('POST', '/v1/pools/node-2/claims', { name: 'pod', owner: owner('pod-2') });
      const items = await allItems(listings.inner);
      // Assess: no address is held by both pools: a lease node-1 still has lies in a block top still holds for it
      expect(deleted.status).toBeLessThan(300);
      expect(other.status, JSON.stringify(other.body)).toBe(201);
      const leases = items.filter((i) => live(i, clock.nowMs()) && (i.pool === 'node-1' || i.pool === 'node-2'));
      const addresses = leases.map((l) => l.address);
      expect(new Set(addresses).size, JSON.stringify(leases)).toBe(addresses.length);
      const node1Blocks = items.filter((i) => i.entity === 'claim' && i.pool === 'top' && i.name === 'node-1-g4-1');
      if (leases.some((l) => l.pool === 'node-1')) expect(node1Blocks).toHaveLength(1);
    });

    it("shows a pool made again under a deleted pool's name none of its exhaustion warnings", async () => {
      // Prepare: p's one /30 is full (its two addresses claimed) and the stream function said so
      const api = await testApi({}, {}, undefined, engine);
      expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/30' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/claims', { name: 'c', owner: owner('c'), count: 2 })).status).toBe(
        201,
      );
      await api.container.mirror.exhaustion!.check('p');
      expect((await api.call('GET', '/v1/pools/p')).body.warnings).toEqual({
        IPv4: { below: 'full', since: expect.any(String) },
      });
      // Act: the claim and the pool go, and p is made again
      expect((await api.call('DELETE', '/v1/pools/p/claims/c')).status).toBe(204);
      expect((await api.call('DELETE', '/v1/pools/p')).status).toBe(204);
      expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/30' })).status).toBe(201);
      const again = await api.call('GET', '/v1/pools/p');
      // Assess
      expect(again.body.warnings).toEqual({});
      expect((await allItems(api.container.table)).filter((i) => i.entity === 'exhaustion')).toEqual([]);
      // A level an earlier pool of the name left (a deletion before WARN# was deleted with the pool) is not shown
      const stale = { PK: 'WARN#p', SK: 'IPv4', entity: 'exhaustion', schema: 1, pool: 'p', family: 'IPv4' };
      const since = new Date(Date.parse(again.body.createdAt as string) - 60_000).toISOString();
      await api.container.table.write({ kind: 'put', item: { ...stale, level: 3, version: 7, since } });
      expect((await api.call('GET', '/v1/pools/p')).body.warnings).toEqual({});
    });
  });

  describe(`Growth from a parent pool made again (${engine.name})`, () => {
    it('refuses a claim that would grow from a parent whose blocks no longer fit the pool, taking nothing, with the growth rule named', async () => {
      // Prepare: g (/28 blocks) and a (addresses) grow from top; top is deleted and made again with /32 blocks
      const api = await testApi({}, {}, undefined, engine);
      const top = async (length: number) => {
        expect(
          (
            await api.call('POST', '/v1/pools', {
              name: 'top',
              openToChildPools: true,
              blockPrefixLength: { IPv4: length },
            })
          ).status,
        ).toBe(201);
        expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.0.0.0/24' })).status).toBe(201);
      };
      await top(26);
      const grow = { pool: 'top', belowFree: 1, maxBlocks: 2 };
      const g = await api.call('POST', '/v1/pools', { name: 'g', blockPrefixLength: { IPv4: 28 }, grow });
      expect(g.status).toBe(201);
      expect((await api.call('POST', '/v1/pools', { name: 'a', grow })).status).toBe(201);
      expect((await api.call('DELETE', '/v1/pools/top')).status).toBe(204);
      await top(32);
      // Act
      const refused = await Promise.all(
        ['g', 'a'].map((pool) => api.call('POST', `/v1/pools/${pool}/claims`, { name: 'c', owner: owner('c') })),
      );
      // Assess: a 4xx about the growth rule, not about a range; nothing taken from top, no range made
      for (const [i, r] of refused.entries()) {
        expect(r.status, JSON.stringify(r.body)).toBe(409);
        expect(r.body.code).toBe('Conflict');
        expect(r.body.detail).toMatch(/grow/);
        expect(r.body.detail).toContain('/32');
        expect(r.body.detail).toContain(i === 0 ? '"g"' : '"a"');
      }
      expect((await api.call('GET', '/v1/pools/top/claims')).body.items).toEqual([]);
      for (const pool of ['g', 'a']) expect((await api.call('GET', `/v1/pools/${pool}/ranges`)).body.items).toEqual([]);
    });
  });
}
