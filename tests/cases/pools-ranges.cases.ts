import { describe, expect, it } from 'vitest';
import { testApi as testApiOn, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import type { ContainerOverrides } from '../../shared/adapters/composition.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { INDEX_SETTLE_MS } from '../../shared/core/use-cases/ranges.ts';
import { allItems } from '../support/items.ts';
import { keys, RANGE_GENERATION_COPIES } from '../../shared/adapters/dynamodb/keys.ts';

/** Pools and ranges through the real HTTP handler, on one table engine. */
export function poolsAndRangesCases(engine: TestEngine): void {
  const testApi = (overrides: ContainerOverrides = {}): Promise<TestApi> => testApiOn(overrides, {}, undefined, engine);

  /** Items of the table, but a deleted pool's tombstone (kept a day by TTL: the reconciler looks for claims the delete's listing missed). */
  async function itemCount(api: TestApi): Promise<number> {
    return (await allItems(api.container.table)).filter((item) => item.entity !== 'poolGone').length;
  }

  describe(`Pools and ranges (${engine.name})`, () => {
    it('refuses a non-canonical CIDR with a hint naming the canonical one', async () => {
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      const res = await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.1/24' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'InvalidArgument', status: 400 });
      expect(res.body.detail).toContain('10.0.0.0/24');
    });

    it("lets ranges overlap, counts overlapping space once, and allocates an address that is one range's network but another's host", async () => {
      // Prepare: a /28 grown into a covering /24.
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.9.0.16/28' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.9.0.0/24', name: 'big' })).status).toBe(201);
      // Act
      const networkOfSmall = await api.call('POST', '/v1/pools/p/claims', {
        name: 'n',
        owner: owner('n'),
        addresses: ['10.9.0.16'],
      });
      const insideBoth = await api.call('POST', '/v1/pools/p/claims', {
        name: 'b',
        owner: owner('b'),
        addresses: ['10.9.0.20'],
      });
      const pool = await api.call('GET', '/v1/pools/p');
      // Assess
      expect(networkOfSmall.status).toBe(201);
      expect((networkOfSmall.body.addresses as { range: string }[])[0]!.range).toBe('big');
      expect(insideBoth.status).toBe(201);
      expect(pool.body.utilization).toEqual({ IPv4: { size: 254, used: 2, releasing: 0, free: 252 } });
      const ranges = Object.fromEntries(
        (pool.body.ranges as { name: string; used: number }[]).map((r) => [r.name, r.used]),
      );
      expect(ranges).toEqual({ '10.9.0.16-28': 1, big: 2 });
    });

    it("answers a range's occupancy in bulk: slices of the summary cut to the range, bit i meaning first + i", async () => {
      // Prepare: a /20 (in one chunk) and a /24 inside it, three leases in the /24 and one outside it
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.8.0.0/20', name: 'wide' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.8.1.0/24', name: 'small' });
      for (const [i, address] of ['10.8.1.1', '10.8.1.9', '10.8.1.254', '10.8.7.7'].entries()) {
        expect(
          (await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`), addresses: [address] }))
            .status,
        ).toBe(201);
      }
      // Act
      const small = await api.call('GET', '/v1/pools/p/ranges/small/occupancy');
      const wide = await api.call('GET', '/v1/pools/p/ranges/wide/occupancy');
      const missing = await api.call('GET', '/v1/pools/p/ranges/none/occupancy');
      // Assess
      const held = (body: Record<string, unknown>): number[] => {
        const slices = body.slices as { bits: string; count: number }[];
        const out: number[] = [];
        for (const slice of slices) {
          const bytes = Buffer.from(slice.bits, 'base64');
          for (let i = 0; i < slice.count; i += 1) if (bytes[i >> 3]! & (1 << (i & 7))) out.push(i);
        }
        return out;
      };
      expect(small.status).toBe(200);
      expect(small.body).toMatchObject({
        range: 'small',
        cidr: '10.8.1.0/24',
        size: 254,
        used: 3,
        source: 'summary',
        chunkSize: 16384,
      });
      expect((small.body.slices as { first: string; count: number }[]).map((s) => [s.first, s.count])).toEqual([
        ['10.8.1.0', 256],
      ]);
      expect(held(small.body)).toEqual([1, 9, 254]);
      expect(wide.body).toMatchObject({ used: 4 });
      expect(held(wide.body)).toEqual([257, 265, 510, 1799]);
      expect(missing.status).toBe(404);
    });

    it('treats a range as immutable: same spec returns it, another CIDR under its name is a conflict', async () => {
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'r' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'r' })).status).toBe(200);
      const other = await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.1.0/24', name: 'r' });
      expect(other.status).toBe(409);
      expect(other.body.code).toBe('Conflict');
    });

    it('deletes a range with no dependent leases at once, and moves one with dependents to Terminating', async () => {
      // Prepare
      const clock = new ManualClock(Date.now());
      const api = await testApi({ clock });
      await api.call('POST', '/v1/pools', { name: 'p' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/28', name: 'small' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'cover' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.1.0.0/24', name: 'lonely' });
      await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
      await api.call('POST', '/v1/pools/p/claims', { name: 'b', owner: owner('b'), addresses: ['10.1.0.5'] });
      // Act
      const covered = await api.call('DELETE', '/v1/pools/p/ranges/small');
      const dependent = await api.call('DELETE', '/v1/pools/p/ranges/lonely');
      // Assess
      expect(covered.status).toBe(204);
      expect(dependent.status).toBe(202);
      expect(dependent.body).toMatchObject({ state: 'Terminating' });
      expect((await api.call('GET', '/v1/pools/p/ranges/small')).status).toBe(404);
      expect((await api.call('GET', '/v1/pools/p/ranges/lonely')).body.state).toBe('Terminating');
      // A Terminating range serves no new allocation, dynamic or explicit.
      const explicit = await api.call('POST', '/v1/pools/p/claims', {
        name: 'c',
        owner: owner('c'),
        addresses: ['10.1.0.6'],
      });
      expect(explicit.status).toBe(422);
      expect(explicit.body.code).toBe('NotInRange');
      // Once the lease goes, deleting again completes, but only once the lease index has had time to settle since the mark.
      await api.call('DELETE', '/v1/pools/p/claims/b');
      expect((await api.call('DELETE', '/v1/pools/p/ranges/lonely')).status).toBe(202);
      clock.advance(INDEX_SETTLE_MS);
      const counters = async () =>
        (await allItems(api.container.table)).filter((i) => String(i.PK).startsWith('FREED#p#lonely#'));
      expect(await counters()).toHaveLength(1);
      expect((await api.call('DELETE', '/v1/pools/p/ranges/lonely')).status).toBe(204);
      // b's release bumped a freed counter of the range: removed with it (issue 20)
      expect(await counters()).toEqual([]);
    });

    it('gives the pool a new range generation, in every copy, with each range add, mark and removal, and drops it with the pool', async () => {
      // The copies the claim check reads one of (createClaim): always equal, and a new value after every change.
      const clock = new ManualClock(Date.now());
      const api = await testApi({ clock });
      const generations = async () => {
        const copies = (await allItems(api.container.table)).filter((i) => i.entity === 'rangeGeneration');
        const values = new Set(copies.map((i) => i.generation));
        return {
          copies: copies.length,
          value: values.size === 1 ? ([...values][0] as string) : `${values.size} values`,
        };
      };
      await api.call('POST', '/v1/pools', { name: 'p' });
      expect(await generations()).toEqual({ copies: 0, value: '0 values' });
      // Act and assess, step by step
      const seen = new Set<string>();
      const step = async (status: number, call: () => Promise<{ status: number }>) => {
        expect((await call()).status).toBe(status);
        const now = await generations();
        expect(now.copies).toBe(RANGE_GENERATION_COPIES);
        expect(seen.has(now.value)).toBe(false);
        seen.add(now.value);
      };
      await step(201, () => api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'a' }));
      await step(201, () => api.call('POST', '/v1/pools/p/ranges', { cidr: '10.1.0.0/24', name: 'b', legacy: true }));
      await step(202, () => api.call('DELETE', '/v1/pools/p/ranges/a'));
      clock.advance(INDEX_SETTLE_MS);
      await step(204, () => api.call('DELETE', '/v1/pools/p/ranges/a'));
      // The generation a view carries is the one stored when it was read.
      expect((await api.container.deps.pools.getPoolView('p'))?.generation).toBe([...seen].at(-1));
      expect((await api.call('DELETE', '/v1/pools/p')).status).toBe(204);
      expect((await generations()).copies).toBe(0);
      expect(await itemCount(api)).toBe(0);
    });

    it('refuses to delete a pool while claims exist, then deletes it', async () => {
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24' });
      await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a') });
      const busy = await api.call('DELETE', '/v1/pools/p');
      expect(busy.status).toBe(409);
      expect(busy.body.code).toBe('PoolNotEmpty');
      await api.call('DELETE', '/v1/pools/p/claims/a');
      expect((await api.call('DELETE', '/v1/pools/p')).status).toBe(204);
      expect((await api.call('GET', '/v1/pools/p')).status).toBe(404);
      expect(await itemCount(api)).toBe(0);
    });

    it('lets exactly one of 6 concurrent legacy creates of different CIDRs in one family win, across containers (issue 15, defect 4)', async () => {
      // Prepare: warm containers that all read the pool with no legacy range
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      const containers = [api, api.sibling(), api.sibling()];
      for (const c of containers) expect((await c.call('GET', '/v1/pools/p/ranges')).status).toBe(200);
      // Act
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          containers[i % containers.length]!.call('POST', '/v1/pools/p/ranges', {
            cidr: `10.66.${i * 4}.0/22`,
            legacy: true,
          }),
        ),
      );
      // Assess
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      for (const lost of results.filter((r) => r.status === 409)) {
        expect(lost.body.code).toBe('Conflict');
        expect(lost.body.detail).toBe('Pool "p" already has a legacy IPv4 range; a pool has at most one per family.');
      }
      const ranges = (await api.call('GET', '/v1/pools/p/ranges')).body.items ?? [];
      expect(ranges.filter((r) => r.legacy)).toHaveLength(1);
      const winner = results.find((r) => r.status === 201)!.body.name;
      const locks = (await allItems(api.container.table)).filter((i) => i.entity === 'legacySlot');
      expect(locks).toEqual([expect.objectContaining({ PK: 'POOL#p', SK: 'LEGACY#IPv4', range: winner })]);
    });

    it('frees the legacy lock with the legacy range, and deleting the pool leaves nothing behind', async () => {
      // Prepare
      const clock = new ManualClock(Date.now());
      const api = await testApi({ clock });
      await api.call('POST', '/v1/pools', { name: 'p' });
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.66.0.0/24', legacy: true })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: 'fd00::/120', legacy: true })).status).toBe(201);
      // Act: the IPv4 legacy range has no lease: a DELETE once the index settled after the mark removes it with its lock
      expect((await api.call('DELETE', '/v1/pools/p/ranges/10.66.0.0-24')).status).toBe(202);
      clock.advance(INDEX_SETTLE_MS);
      expect((await api.call('DELETE', '/v1/pools/p/ranges/10.66.0.0-24')).status).toBe(204);
      const again = await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.67.0.0/24', legacy: true });
      // Assess
      expect(again.status).toBe(201);
      const locks = (await allItems(api.container.table))
        .filter((i) => i.entity === 'legacySlot')
        .map((i) => [i.SK, i.range])
        .sort();
      expect(locks).toEqual([
        ['LEGACY#IPv4', '10.67.0.0-24'],
        ['LEGACY#IPv6', 'fd00::-120'],
      ]);
      expect((await api.call('DELETE', '/v1/pools/p')).status).toBe(204);
      expect(await itemCount(api)).toBe(0);
    });

    it('deletes a legacy range of a table written before locks existed: no lock item, or a lock naming another range', async () => {
      // Prepare: legacy range 'a' without its lock item; then legacy range 'b' whose lock names a third range 'c',
      // as a table where two legacy ranges of one family were created together before locks would look
      const clock = new ManualClock(Date.now());
      const api = await testApi({ clock });
      await api.call('POST', '/v1/pools', { name: 'p' });
      const lock = keys.legacyLock('p', 'IPv4');
      const locks = async () =>
        (await allItems(api.container.table)).filter((i) => i.entity === 'legacySlot').map((i) => i.range);
      expect(
        (await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.66.0.0/24', name: 'a', legacy: true })).status,
      ).toBe(201);
      await api.container.table.write({ kind: 'delete', key: lock });
      expect(
        (await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.67.0.0/24', name: 'b', legacy: true })).status,
      ).toBe(409);
      // Act 1: 'a' goes (the DELETE once the index settled after the mark), though no lock names it
      expect((await api.call('DELETE', '/v1/pools/p/ranges/a')).status).toBe(202);
      clock.advance(INDEX_SETTLE_MS);
      expect((await api.call('DELETE', '/v1/pools/p/ranges/a')).status).toBe(204);
      // Assess 1
      expect((await api.call('GET', '/v1/pools/p/ranges/a')).status).toBe(404);
      expect(await locks()).toEqual([]);
      // Prepare 2: 'b' is created with its lock, which is then made to name 'c'
      expect(
        (await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.67.0.0/24', name: 'b', legacy: true })).status,
      ).toBe(201);
      await api.container.table.write({ kind: 'put', item: { ...(await api.container.table.get(lock))!, range: 'c' } });
      // Act 2
      expect((await api.call('DELETE', '/v1/pools/p/ranges/b')).status).toBe(202);
      clock.advance(INDEX_SETTLE_MS);
      expect((await api.call('DELETE', '/v1/pools/p/ranges/b')).status).toBe(204);
      // Assess 2: 'b' is gone, and the lock naming 'c' is left alone
      expect((await api.call('GET', '/v1/pools/p/ranges/b')).status).toBe(404);
      expect(await locks()).toEqual(['c']);
    });

    it('answers 409 for an existing pool name and lists pools in pages', async () => {
      const api = await testApi();
      for (const name of ['a', 'b', 'c', 'd', 'e'])
        expect((await api.call('POST', '/v1/pools', { name })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools', { name: 'c' })).status).toBe(409);
      const names: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await api.call('GET', `/v1/pools?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.status).toBe(200);
        names.push(...(page.body.items ?? []).map((p) => p.name as string));
        cursor = page.body.nextCursor as string | undefined;
      } while (cursor);
      expect(names).toEqual(['a', 'b', 'c', 'd', 'e']);
    });
  });

  describe(`Listings: claims and addresses (${engine.name})`, () => {
    it('lists addresses in address order across pages, IPv4 before IPv6, and filters by range and owner', async () => {
      // Prepare
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'v4' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: 'fd00::/120', name: 'v6' });
      const wanted = ['10.0.0.200', '10.0.0.3', '10.0.0.30', 'fd00::a', 'fd00::2'];
      for (const [i, address] of wanted.entries()) {
        expect(
          (
            await api.call('POST', '/v1/pools/p/claims', {
              name: `c${i}`,
              owner: owner(i % 2 ? 'odd' : 'even'),
              addresses: [address],
            })
          ).status,
        ).toBe(201);
      }
      // Act
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await api.call(
          'GET',
          `/v1/pools/p/addresses?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        seen.push(...(page.body.items ?? []).map((l) => l.address as string));
        cursor = page.body.nextCursor as string | undefined;
      } while (cursor);
      const v6 = await api.call('GET', '/v1/pools/p/addresses?range=v6');
      const odd = await api.call('GET', '/v1/pools/p/claims?owner=odd');
      // Assess
      expect(seen).toEqual(['10.0.0.3', '10.0.0.30', '10.0.0.200', 'fd00::2', 'fd00::a']);
      expect((v6.body.items ?? []).map((l) => l.address)).toEqual(['fd00::2', 'fd00::a']);
      expect((odd.body.items ?? []).map((c) => c.name).sort()).toEqual(['c1', 'c3']);
    });

    it('lists addresses past many expired leases with pages that read at most limit + 1 items a shard', async () => {
      // Prepare: 24 leases that expired (the reconciler has not released them yet) before two live ones.
      const clock = new ManualClock(Date.now());
      const api = await testApi({ clock });
      await api.call('POST', '/v1/pools', { name: 'p' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'r' });
      for (let i = 1; i <= 24; i += 1) {
        expect(
          (
            await api.call('POST', '/v1/pools/p/claims', {
              name: `t${i}`,
              owner: owner(`t${i}`),
              addresses: [`10.0.0.${i}`],
              ttlSeconds: 30,
            })
          ).status,
        ).toBe(201);
      }
      for (const address of ['10.0.0.100', '10.0.0.101'])
        expect(
          (
            await api.call('POST', '/v1/pools/p/claims', {
              name: `h${address.slice(7)}`,
              owner: owner('h'),
              addresses: [address],
            })
          ).status,
        ).toBe(201);
      clock.advance(60_000);
      const table = api.container.table;
      const query = table.query.bind(table);
      let scanned = 0;
      table.query = async (q) => {
        const page = await query(q);
        scanned += page.scanned;
        return page;
      };
      // Act
      const seen: string[] = [];
      const readPerPage: number[] = [];
      let cursor: string | undefined;
      do {
        scanned = 0;
        const page = await api.call(
          'GET',
          `/v1/pools/p/addresses?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(page.status).toBe(200);
        seen.push(...(page.body.items ?? []).map((l) => l.address as string));
        readPerPage.push(scanned);
        cursor = page.body.nextCursor as string | undefined;
      } while (cursor);
      // Assess: only the live leases, each once; no page read more than LEASE_INDEX_SHARDS (4 here) x (limit + 1).
      expect(seen).toEqual(['10.0.0.100', '10.0.0.101']);
      expect(Math.max(...readPerPage)).toBeLessThanOrEqual(4 * 3);
    });

    it('refuses a tampered cursor', async () => {
      const api = await testApi();
      for (const name of ['a', 'b', 'c']) await api.call('POST', '/v1/pools', { name });
      const page = await api.call('GET', '/v1/pools?limit=1');
      const cursor = page.body.nextCursor as string;
      const [body, sig] = cursor.split('.');
      const forged = `${Buffer.from(JSON.stringify({ s: 0, k: 'zzz' })).toString('base64url')}.${sig}`;
      for (const bad of [forged, `${body}.AAAA`, 'not-a-cursor']) {
        const res = await api.call('GET', `/v1/pools?cursor=${encodeURIComponent(bad)}`);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('InvalidArgument');
      }
    });

    it('refuses, with 400 and never a 500, a genuine cursor reused on another route, range, owner filter or pool', async () => {
      // Prepare: two ranges with two addresses each, three claims, two owners, two pools
      const api = await testApi();
      for (const pool of ['p', 'q']) {
        await api.call('POST', '/v1/pools', { name: pool });
        await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr: '10.0.0.0/24', name: 'v4' });
        await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr: 'fd00::/120', name: 'v6' });
        for (const [i, address] of ['10.0.0.1', '10.0.0.2', 'fd00::1'].entries()) {
          expect(
            (
              await api.call('POST', `/v1/pools/${pool}/claims`, {
                name: `c${i}`,
                owner: owner(i ? 'one' : 'zero'),
                addresses: [address],
              })
            ).status,
          ).toBe(201);
        }
      }
      const next = async (path: string) => {
        const page = await api.call('GET', path);
        expect(page.status).toBe(200);
        return encodeURIComponent(page.body.nextCursor as string);
      };
      const claims = await next('/v1/pools/p/claims?limit=1');
      const v4 = await next('/v1/pools/p/addresses?range=v4&limit=1');
      const all = await next('/v1/pools/p/addresses?limit=1');
      const pools = await next('/v1/pools?limit=1');
      // Act
      const answers = await Promise.all(
        [
          `/v1/pools/p/events?cursor=${claims}`,
          `/v1/pools/p/addresses?cursor=${claims}`,
          `/v1/pools/p/addresses?range=v6&cursor=${v4}`,
          `/v1/pools/p/addresses?cursor=${v4}`,
          `/v1/pools/p/addresses?range=v6&cursor=${all}`,
          `/v1/pools/p/claims?owner=one&cursor=${claims}`,
          `/v1/pools/q/claims?cursor=${claims}`,
          `/v1/pools/p/claims?cursor=${pools}`,
          `/v1/pools?cursor=${claims}`,
        ].map(async (path) => ({ path, status: (await api.call('GET', path)).status })),
      );
      // Assess
      for (const answer of answers) expect(answer).toEqual({ path: answer.path, status: 400 });
      expect((await api.call('GET', `/v1/pools/p/addresses?range=v4&cursor=${v4}`)).status).toBe(200);
    });
  });

  describe(`Bad input: a clear 4xx and nothing written (${engine.name})`, () => {
    const cases: [string, string, string, unknown, number, string][] = [
      ['malformed JSON', 'POST', '/v1/pools/p/claims', '{"name": ', 400, 'InvalidArgument'],
      [
        'unknown field',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), colour: 'red' },
        400,
        'InvalidArgument',
      ],
      [
        'wrong type',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), ttlSeconds: '60' },
        400,
        'InvalidArgument',
      ],
      ['missing owner', 'POST', '/v1/pools/p/claims', { name: 'x' }, 400, 'InvalidArgument'],
      ['prefix /33', 'POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/33' }, 400, 'InvalidArgument'],
      ['triple colon', 'POST', '/v1/pools/p/ranges', { cidr: '2001:db8:::/64' }, 400, 'InvalidArgument'],
      [
        'bad address',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), addresses: ['192.168.1.1.x'] },
        400,
        'InvalidArgument',
      ],
      [
        'oversized body',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: { kind: 'Pod', name: 'n'.repeat(20_000), uid: 'u' } },
        400,
        'InvalidArgument',
      ],
      ['bad limit', 'GET', '/v1/pools/p/claims?limit=0', undefined, 400, 'InvalidArgument'],
      [
        'bad claim name',
        'POST',
        '/v1/pools/p/claims',
        { name: 'Not_A_Name', owner: owner('x') },
        400,
        'InvalidArgument',
      ],
      [
        'address outside the pool',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), addresses: ['172.16.0.1'] },
        422,
        'NotInRange',
      ],
      [
        'broadcast address',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), addresses: ['10.0.0.255'] },
        422,
        'NotInRange',
      ],
      [
        'family the pool lacks',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), addresses: ['fd00::1'] },
        422,
        'MismatchedNetwork',
      ],
      [
        'dual stack on a v4 pool',
        'POST',
        '/v1/pools/p/claims',
        { name: 'x', owner: owner('x'), ipFamilyPolicy: 'RequireDualStack' },
        422,
        'MismatchedNetwork',
      ],
      ['unknown pool', 'POST', '/v1/pools/nope/claims', { name: 'x', owner: owner('x') }, 404, 'NotFound'],
      ['unknown route', 'GET', '/v1/nothing-here', undefined, 404, 'NotFound'],
    ];

    it.each(cases)('%s', async (_label, method, path, body, status, code) => {
      // Prepare
      const api = await testApi();
      await api.call('POST', '/v1/pools', { name: 'p' });
      await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24' });
      const before = await itemCount(api);
      // Act
      const res = await api.call(method, path, body);
      // Assess
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.body).toMatchObject({ status, code });
      expect(typeof res.body.detail).toBe('string');
      expect((res.body.detail as string).length).toBeGreaterThan(10);
      expect(await itemCount(api)).toBe(before);
    });
  });
}
