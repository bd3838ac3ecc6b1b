import { describe, expect, it } from 'vitest';
import { testApi as testApiOn, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { allItems, tableSnapshot } from '../support/items.ts';
import { EXPIRED_PAST_GRACE, reconcilerHarness, T0 } from '../support/reconciler.ts';
import { PassThroughTable } from '../support/pass-through-table.ts';
import { keys, type Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Query, QueryPage, Table, TxVerdict, WriteOp } from '../../shared/adapters/dynamodb/table.ts';
import { createClaim } from '../../shared/core/use-cases/create-claim.ts';

/**
 * Block pools (issue 35): a pool whose claims take aligned blocks instead of addresses, each held block one lease item
 * keyed by its network address; nested pools whose ranges are block claims of another pool; dryRun. Through the real
 * HTTP handler, on one table engine.
 */
export function blocksCases(engine: TestEngine): void {
  const testApi = (): Promise<TestApi> => testApiOn({}, {}, undefined, engine);

  type Block = { address: string; family: string; range: string; prefix?: string };
  const prefixesOf = (body: Record<string, unknown>) => (body.addresses as Block[]).map((a) => a.prefix);

  async function blockPool(
    api: TestApi,
    pool: string,
    block: Record<string, number>,
    cidrs: string[],
    exclude?: string[],
  ): Promise<void> {
    // Open to child pools: most of these are parents of nested ranges or growth.
    const made = await api.call('POST', '/v1/pools', {
      name: pool,
      blockPrefixLength: block,
      openToChildPools: true,
      ...(exclude ? { exclude } : {}),
    });
    expect(made.status).toBe(201);
    for (const cidr of cidrs) expect((await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr })).status).toBe(201);
  }

  const leaseItems = async (api: TestApi) => (await allItems(api.container.table)).filter((i) => i.entity === 'lease');
  /** The names of pool top's claims, sorted: the blocks a growing pool took from it. */
  const parentClaims = async (api: TestApi) =>
    ((await api.call('GET', '/v1/pools/top/claims')).body.items as { name: string }[]).map((c) => c.name).sort();

  describe(`Block pools: the pool and its ranges (${engine.name})`, () => {
    it('keeps blockPrefixLength per family on the pool and refuses sizes no family has, with the field named', async () => {
      // Prepare
      const api = await testApi();
      // Act
      const made = await api.call('POST', '/v1/pools', { name: 'pods', blockPrefixLength: { IPv4: 26, IPv6: 122 } });
      const bad = await Promise.all(
        [{ IPv4: 33 }, { IPv4: 0 }, { IPv6: 129 }, { IPv4: 26.5 }, { IPX: 24 }, {}].map((b, i) =>
          api.call('POST', '/v1/pools', { name: `bad${i}`, blockPrefixLength: b }),
        ),
      );
      // Assess
      expect(made.status).toBe(201);
      expect(made.body.blockPrefixLength).toEqual({ IPv4: 26, IPv6: 122 });
      expect((await api.call('GET', '/v1/pools/pods')).body.blockPrefixLength).toEqual({ IPv4: 26, IPv6: 122 });
      for (const r of bad) {
        expect(r.status).toBe(400);
        expect(r.body.code).toBe('InvalidArgument');
        expect(r.body.detail).toMatch(/blockPrefixLength/);
      }
      expect(((await api.call('GET', '/v1/pools')).body.items as unknown[]).length).toBe(1);
    });

    it('refuses a range smaller than one block, or of a family the pool has no block size for, writing nothing', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, []);
      const before = await tableSnapshot(api.container.table);
      // Act
      const small = await api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/27' });
      const v6 = await api.call('POST', '/v1/pools/pods/ranges', { cidr: 'fd00::/64' });
      // Assess
      expect(small.status).toBe(400);
      expect(small.body.code).toBe('InvalidArgument');
      expect(small.body.detail).toMatch(/\/26/);
      expect(v6.status).toBe(400);
      expect(v6.body.detail).toMatch(/IPv6/);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });
  });

  describe(`Block pools: claims take aligned blocks (${engine.name})`, () => {
    it('gives concurrent claims distinct aligned /26 blocks, one lease item each keyed by the network address, then RangeFull', async () => {
      // Prepare: a /24 cut into four /26 blocks
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      // Act
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          [api, api.sibling()][i % 2]!.call('POST', '/v1/pools/pods/claims', {
            name: `node${i}`,
            owner: owner(`n${i}`),
          }),
        ),
      );
      const full = await api.call('POST', '/v1/pools/pods/claims', { name: 'node4', owner: owner('n4') });
      // Assess
      expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
      const prefixes = results.flatMap((r) => prefixesOf(r.body)).sort();
      expect(prefixes).toEqual(['10.244.0.0/26', '10.244.0.128/26', '10.244.0.192/26', '10.244.0.64/26']);
      const leases = await leaseItems(api);
      expect(leases.map((l) => l.address).sort()).toEqual([
        '10.244.0.0',
        '10.244.0.128',
        '10.244.0.192',
        '10.244.0.64',
      ]);
      expect(leases.every((l) => l.prefixLength === 26)).toBe(true);
      expect(full.status).toBe(409);
      expect(full.body.code).toBe('RangeFull');
      expect(full.body.detail).toMatch(/block/);
    });

    it('serves count, dual-stack, labels and TTL on blocks in one claim, and answers a repeated request with the same blocks', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26, IPv6: 64 }, ['10.244.0.0/24', 'fd00:10::/62']);
      const request = {
        name: 'n1',
        owner: owner('n1'),
        ipFamilyPolicy: 'RequireDualStack',
        count: 2,
        ttlSeconds: 600,
        labels: { zone: 'a' },
      };
      // Act
      const made = await api.call('POST', '/v1/pools/pods/claims', request);
      const again = await api.call('POST', '/v1/pools/pods/claims', request);
      // Assess
      expect(made.status).toBe(201);
      const blocks = made.body.addresses as Block[];
      expect(blocks.map((b) => b.family)).toEqual(['IPv4', 'IPv4', 'IPv6', 'IPv6']);
      expect(blocks.every((b) => b.prefix === `${b.address}/${b.family === 'IPv4' ? 26 : 64}`)).toBe(true);
      expect(blocks.filter((b) => b.family === 'IPv6').every((b) => /^fd00:10(:0:[1-3])?::$/.test(b.address))).toBe(
        true,
      );
      expect(again.status).toBe(200);
      expect(prefixesOf(again.body)).toEqual(prefixesOf(made.body));
      expect((await leaseItems(api)).length).toBe(4);
      expect(made.body.labels).toEqual({ zone: 'a' });
      const zone = (value: string) => api.call('GET', `/v1/pools/pods/claims?labelSelector=zone=${value}`);
      expect(((await zone('a')).body.items as { name: string }[]).map((c) => c.name)).toEqual(['n1']);
      expect((await zone('b')).body.items).toEqual([]);
    });

    it('takes an explicit block, and refuses a block of another size, a non-canonical one, an address, or one held by another claim', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      // Act
      const exact = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'a',
        owner: owner('a'),
        prefixes: ['10.244.0.64/26'],
      });
      const before = await tableSnapshot(api.container.table);
      const taken = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'b',
        owner: owner('b'),
        prefixes: ['10.244.0.64/26'],
      });
      const size = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'c',
        owner: owner('c'),
        prefixes: ['10.244.0.128/25'],
      });
      const crooked = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'd',
        owner: owner('d'),
        prefixes: ['10.244.0.65/26'],
      });
      const address = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'e',
        owner: owner('e'),
        addresses: ['10.244.0.130'],
      });
      const outside = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'f',
        owner: owner('f'),
        prefixes: ['10.9.0.0/26'],
      });
      // Assess
      expect(exact.status).toBe(201);
      expect(prefixesOf(exact.body)).toEqual(['10.244.0.64/26']);
      expect(taken.status).toBe(409);
      expect(taken.body.code).toBe('AlreadyAllocated');
      expect(size.status).toBe(400);
      expect(size.body.code).toBe('InvalidArgument');
      expect(size.body.detail).toMatch(/\/26/);
      expect(crooked.status).toBe(400);
      expect(crooked.body.detail).toMatch(/canonical/);
      expect(address.status).toBe(400);
      expect(address.body.detail).toMatch(/prefixes/);
      expect(outside.status).toBe(422);
      expect(outside.body.code).toBe('NotInRange');
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });

    it('refuses prefixes in an address pool', async () => {
      // Prepare
      const api = await testApi();
      expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24' })).status).toBe(201);
      // Act
      const r = await api.call('POST', '/v1/pools/p/claims', {
        name: 'a',
        owner: owner('a'),
        prefixes: ['10.0.0.0/26'],
      });
      // Assess
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('InvalidArgument');
      expect(r.body.detail).toMatch(/hands out addresses/);
    });

    it('never hands out a block that holds an excluded address, and answers RangeFull once the others are taken', async () => {
      // Prepare: 10.244.0.70 lies in the second /26 of four
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24'], ['10.244.0.70']);
      // Act
      const made = [];
      for (let i = 0; i < 3; i += 1)
        made.push(await api.call('POST', '/v1/pools/pods/claims', { name: `n${i}`, owner: owner(`n${i}`) }));
      const full = await api.call('POST', '/v1/pools/pods/claims', { name: 'n3', owner: owner('n3') });
      // Assess
      expect(made.map((r) => r.status)).toEqual([201, 201, 201]);
      expect(made.flatMap((r) => prefixesOf(r.body)).sort()).toEqual([
        '10.244.0.0/26',
        '10.244.0.128/26',
        '10.244.0.192/26',
      ]);
      expect(full.status).toBe(409);
      expect(full.body.code).toBe('RangeFull');
    });

    it('frees a released block for the next claim, and reports utilization in blocks', async () => {
      // Prepare: a /25 of two /26 blocks, both taken
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/25']);
      await api.call('POST', '/v1/pools/pods/claims', { name: 'a', owner: owner('a') });
      const b = await api.call('POST', '/v1/pools/pods/claims', { name: 'b', owner: owner('b') });
      const range = (await api.call('GET', '/v1/pools/pods/ranges/10.244.0.0-25')).body;
      const pool = (await api.call('GET', '/v1/pools/pods')).body;
      // Act
      expect((await api.call('DELETE', '/v1/pools/pods/claims/b')).status).toBe(204);
      const c = await api.call('POST', '/v1/pools/pods/claims', { name: 'c', owner: owner('c') });
      // Assess
      expect(range).toMatchObject({ size: 2, used: 2, free: 0, blockPrefixLength: 26 });
      expect(pool.utilization).toEqual({
        IPv4: { size: 2, used: 2, releasing: 0, free: 0, addresses: { size: 128, used: 128, releasing: 0, free: 0 } },
      });
      expect(c.status).toBe(201);
      expect(prefixesOf(c.body)).toEqual(prefixesOf(b.body));
    });
  });

  describe(`Block pools: occupancy in blocks (${engine.name})`, () => {
    it("counts a block range's occupancy in blocks, the block at the range's network address included", async () => {
      // Prepare: a /24 of four /26 blocks; the first and the third held
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      for (const [name, prefix] of [
        ['a', '10.244.0.0/26'],
        ['b', '10.244.0.128/26'],
      ] as const) {
        expect(
          (await api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name), prefixes: [prefix] })).status,
        ).toBe(201);
      }
      // Act
      const map = await api.call('GET', '/v1/pools/pods/ranges/10.244.0.0-24/occupancy');
      // Assess: bits stay addresses (bit i = first + i), one per held block at its network address
      expect(map.status).toBe(200);
      expect(map.body).toMatchObject({ cidr: '10.244.0.0/24', blockPrefixLength: 26, size: 4, used: 2 });
      const slices = map.body.slices as { first: string; count: number; used: number; bits: string }[];
      expect(slices.map((s) => [s.first, s.count, s.used])).toEqual([['10.244.0.0', 256, 2]]);
      const bytes = Buffer.from(slices[0]!.bits, 'base64');
      const held = [...Array(256).keys()].filter((i) => bytes[i >> 3]! & (1 << (i & 7)));
      expect(held).toEqual([0, 128]);
    });
  });

  describe(`Block pools: reads inside blocks, who holds an address and utilization in addresses (${engine.name})`, () => {
    it("answers an address inside a held block with the block's lease (its prefix), a free block's address and one in no range 404", async () => {
      // Prepare: a /15 of two /16 blocks; 10.17.0.0/16 held
      const api = await testApi();
      await blockPool(api, 'org', { IPv4: 16 }, ['10.16.0.0/15']);
      const made = await api.call('POST', '/v1/pools/org/claims', {
        name: 'eu',
        owner: owner('eu'),
        prefixes: ['10.17.0.0/16'],
      });
      expect(made.status).toBe(201);
      // Act
      const inside = await api.call('GET', '/v1/pools/org/addresses/10.17.3.4');
      const last = await api.call('GET', '/v1/pools/org/addresses/10.17.255.255');
      const network = await api.call('GET', '/v1/pools/org/addresses/10.17.0.0');
      const freeBlock = await api.call('GET', '/v1/pools/org/addresses/10.16.3.4');
      const noRange = await api.call('GET', '/v1/pools/org/addresses/10.18.0.1');
      const listed = await api.call('GET', '/v1/pools/org/addresses');
      // Assess: the block's lease, whichever of its addresses is asked about
      expect(inside.status).toBe(200);
      expect(inside.body).toMatchObject({
        address: '10.17.0.0',
        prefix: '10.17.0.0/16',
        state: 'Allocated',
        claim: 'eu',
        range: '10.16.0.0-15',
      });
      expect(last.body).toEqual(inside.body);
      expect(network.body).toEqual(inside.body);
      for (const r of [freeBlock, noRange]) {
        expect(r.status).toBe(404);
        expect(r.body.code).toBe('NotFound');
      }
      expect(freeBlock.body.detail).toMatch(/10\.16\.0\.0\/16/);
      expect(listed.body.items).toEqual([inside.body]);
    });

    it('reports utilization in blocks and in addresses, per range and per family, exact beyond 2^53 as decimal strings', async () => {
      // Prepare: a /8 of /16 blocks and a /48 of /64 blocks; one block of each held
      const api = await testApi();
      await blockPool(api, 'org', { IPv4: 16, IPv6: 64 }, ['10.0.0.0/8', 'fd00::/48']);
      const made = await api.call('POST', '/v1/pools/org/claims', {
        name: 'eu',
        owner: owner('eu'),
        ipFamilyPolicy: 'RequireDualStack',
      });
      expect(made.status).toBe(201);
      // Act
      const pool = (await api.call('GET', '/v1/pools/org')).body;
      const range = (await api.call('GET', '/v1/pools/org/ranges/10.0.0.0-8')).body;
      // Assess: a /16 block is 65,536 addresses, a /64 block 2^64
      const v4 = { size: 256, used: 1, releasing: 0, free: 255 };
      const v4Addresses = { size: 16_777_216, used: 65_536, releasing: 0, free: 16_711_680 };
      expect(pool.utilization).toEqual({
        IPv4: { ...v4, addresses: v4Addresses },
        IPv6: {
          size: 65_536,
          used: 1,
          releasing: 0,
          free: 65_535,
          addresses: {
            size: (1n << 80n).toString(),
            used: (1n << 64n).toString(),
            releasing: 0,
            free: ((1n << 80n) - (1n << 64n)).toString(),
          },
        },
      });
      expect(range).toMatchObject({ ...v4, blockPrefixLength: 16, addresses: v4Addresses });
    });
  });

  describe(`Block pools: reuse delay and sticky blocks (${engine.name})`, () => {
    it("holds a released block for its owner, refuses it to others, and gives it back to the owner's next claim", async () => {
      // Prepare: a /25 of two /26 blocks, a reuse delay
      const api = await testApi();
      expect(
        (await api.call('POST', '/v1/pools', { name: 'pods', blockPrefixLength: { IPv4: 26 }, reuseDelaySeconds: 600 }))
          .status,
      ).toBe(201);
      expect((await api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.244.0.0/25' })).status).toBe(201);
      const first = await api.call('POST', '/v1/pools/pods/claims', { name: 'n1', owner: owner('n1') });
      const [block] = prefixesOf(first.body);
      expect((await api.call('DELETE', '/v1/pools/pods/claims/n1')).status).toBe(204);
      // Act
      const other = await api.call('POST', '/v1/pools/pods/claims', {
        name: 'x',
        owner: owner('x'),
        prefixes: [block],
      });
      const again = await api.call('POST', '/v1/pools/pods/claims', { name: 'n1-again', owner: owner('n1') });
      // Assess
      expect(other.status).toBe(409);
      expect(other.body.code).toBe('AddressReleasing');
      expect(again.status).toBe(201);
      expect(prefixesOf(again.body)).toEqual([block]);
    });
  });

  describe(`Block pools: the shared claim paths on blocks (${engine.name})`, () => {
    it("renews a block claim (its block lease's expiry moves), and releases an owner's block claims by owner release, leaving others'", async () => {
      // Prepare: four /26 blocks; owner n1 holds two claims, n2 one
      const clock = new ManualClock(T0);
      const api = await testApiOn({ clock }, {}, undefined, engine);
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      const made = [];
      for (const [name, uid] of [
        ['a', 'n1'],
        ['b', 'n1'],
        ['c', 'n2'],
      ] as const)
        made.push(await api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(uid), ttlSeconds: 600 }));
      expect(made.map((r) => r.status)).toEqual([201, 201, 201]);
      const [blockA] = prefixesOf(made[0]!.body);
      // Act
      const renewed = await api.call('POST', '/v1/pools/pods/claims/a/renew', { ttlSeconds: 60 });
      const leaseA = (await leaseItems(api)).find((l) => `${l.address}/26` === blockA);
      const released = await api.call('DELETE', '/v1/pools/pods/owners/n1');
      // Assess
      expect(renewed.status).toBe(200);
      expect(renewed.body.expiresAt).toBe(new Date(T0 + 60_000).toISOString());
      expect(prefixesOf(renewed.body)).toEqual([blockA]);
      expect(leaseA?.expiresAt).toBe(T0 + 60_000);
      expect(released.status).toBe(200);
      expect(released.body.released).toHaveLength(2);
      expect((await leaseItems(api)).map((l) => `${l.address}/${l.prefixLength}`)).toEqual(prefixesOf(made[2]!.body));
      expect((await api.call('GET', '/v1/pools/pods/claims/a')).status).toBe(404);
      // The two freed blocks and the one never taken are the next claim's
      const again = await api.call('POST', '/v1/pools/pods/claims', { name: 'd', owner: owner('n3'), count: 3 });
      expect(again.status).toBe(201);
      expect(prefixesOf(again.body)).not.toContain(prefixesOf(made[2]!.body)[0]);
      expect(prefixesOf(again.body)).toEqual(expect.arrayContaining([blockA, ...prefixesOf(made[1]!.body)]));
    });

    it('releases an expired block claim from the reconciler, with a ClaimExpired event naming the block', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine });
      await blockPool(h.api, 'pods', { IPv4: 26 }, ['10.244.0.0/25']);
      const made = await h.api.call('POST', '/v1/pools/pods/claims', { name: 'x', owner: owner('x'), ttlSeconds: 60 });
      const [block] = prefixesOf(made.body);
      h.clock.advance(EXPIRED_PAST_GRACE);
      // Act
      const report = await h.run();
      // Assess
      expect(report.errors ?? []).toEqual([]);
      expect(report.repairs.ClaimExpired).toBe(1);
      expect(await leaseItems(h.api)).toEqual([]);
      expect((await h.api.call('GET', '/v1/pools/pods/claims/x')).status).toBe(404);
      const events = (await h.api.call('GET', '/v1/pools/pods/events')).body.items as Record<string, string>[];
      const expired = events.find((e) => e.reason === 'ClaimExpired');
      expect(expired?.object).toBe('claim/x');
      expect(expired?.message).toContain(block);
      const next = await h.api.call('POST', '/v1/pools/pods/claims', {
        name: 'y',
        owner: owner('y'),
        prefixes: [block],
      });
      expect(next.status).toBe(201);
    });
  });

  describe(`Grow on demand (${engine.name})`, () => {
    it('claims one more block from its parent when free space falls below the threshold, once per crossing under racing callers, up to maxBlocks', async () => {
      // Prepare: top hands out /28 blocks (14 addresses each) of a /26; pods is an address pool that grows from it
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 28 }, ['10.9.0.0/26']);
      expect(
        (await api.call('POST', '/v1/pools', { name: 'pods', grow: { pool: 'top', belowFree: 4, maxBlocks: 2 } }))
          .status,
      ).toBe(201);
      const claim = (i: number, on: TestApi = api) =>
        on.call('POST', '/v1/pools/pods/claims', { name: `p${i}`, owner: owner(`p${i}`) });
      const pools = async () => ({
        top: ((await api.call('GET', '/v1/pools/top/claims')).body.items as unknown[]).length,
        ranges: ((await api.call('GET', '/v1/pools/pods/ranges')).body.items as { source?: unknown }[]).map(
          (r) => r.source,
        ),
      });
      // Act: 8 racing first claims on an empty pool, over two containers
      const first = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(i, i % 2 ? api.sibling() : api)));
      const afterFirst = await pools();
      for (let i = 8; i < 11; i += 1) expect((await claim(i)).status).toBe(201);
      const afterCrossing = await pools();
      const rest = [];
      for (let i = 11; i < 29; i += 1) rest.push((await claim(i)).status);
      // Assess: one block for the racing callers, a second when free fell below 4, none past maxBlocks
      expect(first.map((r) => r.status)).toEqual(Array(8).fill(201));
      expect(afterFirst).toEqual({ top: 1, ranges: [{ pool: 'top', claim: 'pods-g4-1' }] });
      expect(afterCrossing.top).toBe(2);
      expect(afterCrossing.ranges).toHaveLength(2);
      expect(rest.slice(0, 17)).toEqual(Array(17).fill(201));
      expect(rest[17]).toBe(409);
      expect((await pools()).top).toBe(2);
    });
  });

  describe(`Grow on demand: the threshold counts positions a claim can take (${engine.name})`, () => {
    // top hands out /26 blocks. In each pool, `leaving` claims leave exactly belowFree positions free, and one more
    // claim crosses: an excluded position, or space two ranges share, is not one more free position.
    for (const { what, pool, cidrs, belowFree, leaving } of [
      {
        what: 'excluded addresses',
        pool: { exclude: ['10.8.0.5', '10.8.0.6'] },
        cidrs: ['10.8.0.0/29'],
        belowFree: 2,
        leaving: 2,
      },
      { what: 'space two ranges share', pool: {}, cidrs: ['10.8.0.0/29', '10.8.0.0/30'], belowFree: 3, leaving: 3 },
      {
        what: 'blocks of a block pool that overlap or touch an exclusion',
        pool: { blockPrefixLength: { IPv4: 28 }, exclude: ['10.8.0.20'] },
        cidrs: ['10.8.0.0/26', '10.8.0.0/27'],
        belowFree: 2,
        leaving: 1,
      },
    ]) {
      it(`grows at the claim that leaves fewer than belowFree positions free, not counting ${what}`, async () => {
        // Prepare
        const api = await testApi();
        await blockPool(api, 'top', { IPv4: 26 }, ['10.9.0.0/24']);
        const made = await api.call('POST', '/v1/pools', { name: 'pods', ...pool, grow: { pool: 'top', belowFree } });
        expect(made.status).toBe(201);
        for (const cidr of cidrs) expect((await api.call('POST', '/v1/pools/pods/ranges', { cidr })).status).toBe(201);
        const claim = (name: string) => api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name) });
        for (let i = 0; i < leaving; i += 1) expect((await claim(`p${i}`)).status).toBe(201);
        const atThreshold = await parentClaims(api);
        // Act
        const crossing = await claim('crossing');
        // Assess: no block while belowFree positions were free, one at the claim that crossed
        expect(crossing.status).toBe(201);
        expect(atThreshold).toEqual([]);
        expect(await parentClaims(api)).toEqual(['pods-g4-1']);
      });
    }
  });

  describe(`Grow on demand: racing crossings (${engine.name})`, () => {
    it('takes no second block for a crossing when another caller grew the pool after this one measured its free space', async () => {
      // Prepare: top hands out /29 blocks (6 addresses each); pods grows below 3 free. Three claims leave 3 free.
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 29 }, ['10.9.0.0/26']);
      expect((await api.call('POST', '/v1/pools', { name: 'pods', grow: { pool: 'top', belowFree: 3 } })).status).toBe(
        201,
      );
      const claim = (on: TestApi, name: string) =>
        on.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name) });
      for (const name of ['p0', 'p1', 'p2']) expect((await claim(api, name)).status).toBe(201);
      // a's claim crosses (2 free); just after a's growth read the parent, b's claim crosses too and grows the pool.
      let b: Promise<unknown> | undefined;
      // Act
      const a = await claim(
        afterPoolRead(api, 'top', () => (b = claim(api, 'b'))),
        'a',
      );
      await b;
      // Assess: one crossing, one block (b's); a's growth finds the pool above the threshold again
      expect(a.status).toBe(201);
      const top = (await api.call('GET', '/v1/pools/top/claims')).body.items as { name: string }[];
      expect(top.map((c) => c.name).sort()).toEqual(['pods-g4-1', 'pods-g4-2']);
    });
  });

  describe(`Grow on demand: racing callers on a full family (${engine.name})`, () => {
    // top hands out /29 blocks (6 addresses each) from a /28: room for two. pods grows from it; `own` is its own range.
    async function racing(api: TestApi, own?: string): Promise<(on: TestApi, name: string) => Promise<number>> {
      expect(
        (await api.call('POST', '/v1/pools', { name: 'top', openToChildPools: true, blockPrefixLength: { IPv4: 29 } }))
          .status,
      ).toBe(201);
      expect((await api.call('POST', '/v1/pools', { name: 'pods', grow: { pool: 'top', belowFree: 1 } })).status).toBe(
        201,
      );
      const claim = async (on: TestApi, name: string) =>
        (await on.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name) })).status;
      if (own) {
        // Filled while top has no range, so the crossing of its last address takes nothing: pods is full.
        expect((await api.call('POST', '/v1/pools/pods/ranges', { cidr: own })).status).toBe(201);
        for (const name of ['p0', 'p1']) expect(await claim(api, name)).toBe(201);
      }
      expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.9.0.0/28' })).status).toBe(201);
      return claim;
    }

    for (const [what, own] of [
      ['full', '10.8.0.0/30'],
      ['absent', undefined],
    ] as const) {
      it(`takes one block when two callers find the family ${what}: the second claims into the first one's block`, async () => {
        // Prepare: b's claim finds no room; just after b's growth read the parent, a's claim finds none either, grows
        // the pool by a block and is answered from it. Then b's growth reads pods, which has room again.
        const api = await testApi();
        const claim = await racing(api, own);
        let a: Promise<number> | undefined;
        // Act
        const b = await claim(
          afterPoolRead(api, 'top', () => (a = claim(api, 'a'))),
          'b',
        );
        // Assess: both answered from the one block the parent holds for pods
        expect([await a, b]).toEqual([201, 201]);
        const top = (await api.call('GET', '/v1/pools/top/claims')).body.items as { name: string }[];
        expect(top.map((c) => c.name)).toEqual(['pods-g4-1']);
        const ranges = (await api.call('GET', '/v1/pools/pods/ranges')).body.items as { name: string }[];
        expect(ranges.map((r) => r.name).filter((n) => n.startsWith('g4-'))).toEqual(['g4-1']);
      });
    }

    it('grows one block of each family for a dual-stack claim in a pool with no range yet, and previews the same', async () => {
      // Prepare: top serves both families in blocks; pods (an address pool) grows from it and has no range
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 29, IPv6: 125 }, ['10.9.0.0/28', 'fd00:9::/124']);
      expect((await api.call('POST', '/v1/pools', { name: 'pods', grow: { pool: 'top', belowFree: 1 } })).status).toBe(
        201,
      );
      const body = { name: 'dual', owner: owner('dual'), ipFamilyPolicy: 'RequireDualStack' };
      // Act
      const preview = await api.call('POST', '/v1/pools/pods/claims', { ...body, dryRun: true });
      const made = await api.call('POST', '/v1/pools/pods/claims', body);
      // Assess: one block of each family, the claim's addresses in them, as the preview said
      expect(preview.status, JSON.stringify(preview.body)).toBe(200);
      expect((preview.body.grows as { range: string }[]).map((g) => g.range)).toEqual(['g4-1', 'g6-1']);
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      expect((made.body.addresses as Block[]).map((a) => [a.family, a.range])).toEqual([
        ['IPv4', 'g4-1'],
        ['IPv6', 'g6-1'],
      ]);
      const top = (await api.call('GET', '/v1/pools/top/claims')).body.items as { name: string }[];
      expect(top.map((c) => c.name).sort()).toEqual(['pods-g4-1', 'pods-g6-1']);
    });

    it('grows both families for a dual-stack claim that finds each full but for excluded addresses', async () => {
      // Prepare: pods' IPv4 /29 and IPv6 /125 are full but for excluded addresses, filled while top had no range (so
      // no crossing grew them)
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 29, IPv6: 125 }, []);
      const pods = {
        name: 'pods',
        exclude: ['10.8.0.6', 'fd00:8::6', 'fd00:8::7'],
        grow: { pool: 'top', belowFree: 1 },
      };
      expect((await api.call('POST', '/v1/pools', pods)).status).toBe(201);
      for (const cidr of ['10.8.0.0/29', 'fd00:8::/125'])
        expect((await api.call('POST', '/v1/pools/pods/ranges', { cidr })).status).toBe(201);
      const claim = (name: string) =>
        api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name), ipFamilyPolicy: 'RequireDualStack' });
      for (let i = 0; i < 5; i += 1) expect((await claim(`p${i}`)).status).toBe(201);
      for (const cidr of ['10.9.0.0/26', 'fd00:9::/120'])
        expect((await api.call('POST', '/v1/pools/top/ranges', { cidr })).status).toBe(201);
      // Act
      const next = await claim('d');
      // Assess: answered from one new block of each family
      expect(next.status, JSON.stringify(next.body)).toBe(201);
      expect((next.body.addresses as Block[]).map((a) => a.range)).toEqual(['g4-1', 'g6-1']);
    });

    it('grows a full family whose only free addresses are excluded', async () => {
      // Prepare: pods' own /29 holds 6 addresses, 2 of them excluded; 4 claims fill the rest while top has no range
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 29 }, []);
      const pods = { name: 'pods', exclude: ['10.8.0.5', '10.8.0.6'], grow: { pool: 'top', belowFree: 1 } };
      expect((await api.call('POST', '/v1/pools', pods)).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.8.0.0/29' })).status).toBe(201);
      const claim = (name: string) => api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name) });
      for (let i = 0; i < 4; i += 1) expect((await claim(`p${i}`)).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.9.0.0/28' })).status).toBe(201);
      // Act
      const next = await claim('p4');
      // Assess: answered from a block taken from top
      expect(next.status).toBe(201);
      expect((next.body.addresses as Block[])[0]!.range).toBe('g4-1');
      expect(await parentClaims(api)).toEqual(['pods-g4-1']);
    });
  });

  describe(`Grow on demand: giving blocks back (${engine.name})`, () => {
    // top hands out /29 blocks (6 addresses each); pods is an address pool that grows from it at the last free address.
    async function growing(api: TestApi): Promise<(name: string) => Promise<number>> {
      await blockPool(api, 'top', { IPv4: 29 }, ['10.9.0.0/26']);
      const pods = { name: 'pods', grow: { pool: 'top', belowFree: 1, maxBlocks: 4 } };
      expect((await api.call('POST', '/v1/pools', pods)).status).toBe(201);
      return async (name) => (await api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name) })).status;
    }

    it("releases the parent's grown blocks when the child pool is deleted", async () => {
      // Prepare: one claim grows pods by one block; then it is released
      const api = await testApi();
      const claim = await growing(api);
      expect(await claim('a')).toBe(201);
      expect(await parentClaims(api)).toEqual(['pods-g4-1']);
      expect((await api.call('DELETE', '/v1/pools/pods/claims/a')).status).toBe(204);
      // Act
      const deleted = await api.call('DELETE', '/v1/pools/pods');
      // Assess
      expect(deleted.status).toBe(204);
      expect(await parentClaims(api)).toEqual([]);
    });

    it('releases a grown block with its range, and grows again under the freed name when space runs out', async () => {
      // Prepare: six claims fill block 1 and grow block 2; block 1's claims are released and its range removed
      const clock = new ManualClock(T0);
      const api = await testApiOn({ clock }, {}, undefined, engine);
      const claim = await growing(api);
      for (let i = 0; i < 6; i += 1) expect(await claim(`a${i}`)).toBe(201);
      expect(await parentClaims(api)).toEqual(['pods-g4-1', 'pods-g4-2']);
      for (let i = 0; i < 6; i += 1) expect((await api.call('DELETE', `/v1/pools/pods/claims/a${i}`)).status).toBe(204);
      expect((await api.call('DELETE', '/v1/pools/pods/ranges/g4-1')).status).toBe(202);
      clock.advance(5_000);
      // Act
      const removed = await api.call('DELETE', '/v1/pools/pods/ranges/g4-1');
      const afterRemoval = await parentClaims(api);
      const statuses = [];
      for (let i = 0; i < 7; i += 1) statuses.push(await claim(`b${i}`));
      // Assess: block 2 fills, the crossing takes a block again (as g4-1), and the seventh claim lands in it
      expect(removed.status).toBe(204);
      expect(afterRemoval).toEqual(['pods-g4-2']);
      expect(statuses).toEqual(Array(7).fill(201));
      const ranges = (await api.call('GET', '/v1/pools/pods/ranges')).body.items as { name: string }[];
      expect(ranges.map((r) => r.name).sort()).toEqual(['g4-1', 'g4-2']);
      expect(await parentClaims(api)).toEqual(['pods-g4-1', 'pods-g4-2']);
    });
  });

  describe(`Grow on demand: after the commit (${engine.name})`, () => {
    it('answers a committed claim 201 when the free-space count after it fails (a throttled read), and grows at the next claim', async () => {
      // Prepare: pods grows from top; its free-space counts fail until told otherwise.
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 28 }, ['10.9.0.0/26']);
      expect((await api.call('POST', '/v1/pools', { name: 'pods', grow: { pool: 'top', belowFree: 13 } })).status).toBe(
        201,
      );
      expect((await api.call('POST', '/v1/pools/pods/claims', { name: 'p0', owner: owner('p0') })).status).toBe(201);
      let throttled = true;
      const flaky = api.sibling({
        wrapStores: (stores) => {
          const countLeases: typeof stores.leases.countLeases = (...args) => {
            if (throttled)
              return Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
            return stores.leases.countLeases(...args);
          };
          return {
            ...stores,
            leases: Object.assign(Object.create(stores.leases) as typeof stores.leases, { countLeases }),
          };
        },
      });
      // Act
      const committed = await flaky.call('POST', '/v1/pools/pods/claims', { name: 'p1', owner: owner('p1') });
      throttled = false;
      const next = await flaky.call('POST', '/v1/pools/pods/claims', { name: 'p2', owner: owner('p2') });
      // Assess: answered as committed, no block taken for it; the next claim's crossing takes the second block.
      expect(committed.status, JSON.stringify(committed.body)).toBe(201);
      expect((await api.call('GET', '/v1/pools/pods/claims/p1')).status).toBe(200);
      expect(next.status).toBe(201);
      expect(await parentClaims(api)).toEqual(['pods-g4-1', 'pods-g4-2']);
    });
  });

  describe(`Grow on demand: bad rules (${engine.name})`, () => {
    it('never grows from a parent pool the caller is no member of: no block taken there, the claim answered as without growth', async () => {
      // Prepare: the parent names only its administrator; the child lets a node allocate.
      const api = await testApi();
      const admin = 'arn:aws:iam::123456789012:role/netops';
      const node = 'arn:aws:iam::123456789012:role/node-a';
      const as = (arn: string) => ({ 'x-ipam-principal': arn });
      const top = { name: 'top', blockPrefixLength: { IPv4: 28 }, access: { administrators: [admin] } };
      expect((await api.call('POST', '/v1/pools', top, as(admin))).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.9.0.0/24' }, as(admin))).status).toBe(201);
      const pods = {
        name: 'pods',
        grow: { pool: 'top', belowFree: 1 },
        access: { administrators: [admin], allocators: [node] },
      };
      expect((await api.call('POST', '/v1/pools', pods, as(admin))).status).toBe(201);
      // Act
      const claim = await api.call('POST', '/v1/pools/pods/claims', { name: 'p', owner: owner('p') }, as(node));
      // Assess: the pool has no range yet and may not take one from a parent the node has no role in (as without
      // growth: 422), and nothing is held in the parent.
      expect(claim.status).toBe(422);
      expect((await api.call('GET', '/v1/pools/top/claims', undefined, as(admin))).body.items).toEqual([]);
    });

    it("grows into a parent claim another allocator's growth made (a race, or a growth that stopped before its range)", async () => {
      // Prepare: top lets two allocators claim; team-a's growth of pods took pods-g4-1 and stopped before its range.
      const api = await testApi();
      const arn = (role: string) => `arn:aws:iam::123456789012:role/${role}`;
      const as = (role: string) => ({ 'x-ipam-principal': arn(role) });
      const access = { administrators: [arn('netops')], allocators: [arn('team-a'), arn('team-b')] };
      const top = { name: 'top', blockPrefixLength: { IPv4: 29 }, access };
      expect((await api.call('POST', '/v1/pools', top, as('netops'))).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.9.0.0/26' }, as('netops'))).status).toBe(201);
      const pods = { name: 'pods', grow: { pool: 'top', belowFree: 1 } };
      expect((await api.call('POST', '/v1/pools', pods, as('netops'))).status).toBe(201);
      const grown = {
        name: 'pods-g4-1',
        owner: { kind: 'Pool', name: 'pods', uid: 'pool-pods' },
        ipFamilies: ['IPv4'],
        labels: { 'ipam/grown-for': 'pods' },
      };
      expect((await api.call('POST', '/v1/pools/top/claims', grown, as('team-a'))).status).toBe(201);
      // Act: team-b's claim in pods, which has no range yet
      const claim = await api.call('POST', '/v1/pools/pods/claims', { name: 'b', owner: owner('b') }, as('team-b'));
      // Assess: answered from that block, made pods' range g4-1; no second block taken
      expect(claim.status, JSON.stringify(claim.body)).toBe(201);
      expect((claim.body.addresses as Block[])[0]!.range).toBe('g4-1');
      const held = (await api.call('GET', '/v1/pools/top/claims', undefined, as('netops'))).body.items as Block[];
      expect(held.map((c) => (c as unknown as { name: string }).name)).toEqual(['pods-g4-1']);
    });

    it('takes no parent block for a claim a new block cannot serve: a family without a block size, a named address', async () => {
      // Prepare: a child block pool with an IPv4 block size only, and a child address pool; both grow from 'top'.
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 24, IPv6: 64 }, ['10.0.0.0/16', 'fd00::/56']);
      const kid = { name: 'kid', blockPrefixLength: { IPv4: 26 }, grow: { pool: 'top', belowFree: 1 } };
      expect((await api.call('POST', '/v1/pools', kid)).status).toBe(201);
      expect((await api.call('POST', '/v1/pools', { name: 'flat', grow: { pool: 'top', belowFree: 1 } })).status).toBe(
        201,
      );
      // Act
      const answers = [];
      for (let i = 0; i < 2; i += 1) {
        const v6 = { name: `v6-${i}`, owner: owner(`v6-${i}`), ipFamilies: ['IPv6'] };
        answers.push((await api.call('POST', '/v1/pools/kid/claims', v6)).status);
        const named = { name: `n-${i}`, owner: owner(`n-${i}`), addresses: ['fd00::5'] };
        answers.push((await api.call('POST', '/v1/pools/flat/claims', named)).status);
      }
      // Assess: each refused as without growth, and the parent holds nothing for them.
      for (const status of answers) expect(status).toBeGreaterThanOrEqual(400);
      expect((await api.call('GET', '/v1/pools/top/claims')).body.items).toEqual([]);
    });

    it("refuses growth for a pool whose name leaves no room for its grown blocks' claim names, writing nothing", async () => {
      // Prepare: grown claims are named <pool>-g4-<k> (k up to maxBlocks), and a claim name has at most 63 characters
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 28 }, ['10.9.0.0/24']);
      const before = await tableSnapshot(api.container.table);
      const base = 'a'.repeat(58);
      // Act
      const long = await Promise.all(
        [`${base}-one`, `${base}-two`].map((name) =>
          api.call('POST', '/v1/pools', { name, grow: { pool: 'top', belowFree: 1 } }),
        ),
      );
      const afterRefusals = await tableSnapshot(api.container.table);
      const fits = await api.call('POST', '/v1/pools', { name: 'b'.repeat(57), grow: { pool: 'top', belowFree: 1 } });
      // Assess
      for (const r of long) {
        expect(r.status).toBe(400);
        expect(r.body.code).toBe('InvalidArgument');
        expect(r.body.detail).toMatch(/57 characters/);
      }
      expect(afterRefusals).toEqual(before);
      expect(fits.status).toBe(201);
    });

    it('refuses growth for an address pool from a parent whose blocks hold no usable address (/32, /31, /128)', async () => {
      // Prepare
      const api = await testApi();
      for (const [name, block] of [
        ['p32', { IPv4: 32 }],
        ['p31', { IPv4: 31 }],
        ['p128', { IPv4: 24, IPv6: 128 }],
        ['p30', { IPv4: 30 }],
      ] as const)
        expect(
          (await api.call('POST', '/v1/pools', { name, blockPrefixLength: block, openToChildPools: true })).status,
        ).toBe(201);
      const before = await tableSnapshot(api.container.table);
      // Act
      const refused = await Promise.all(
        ['p32', 'p31', 'p128'].map((pool) =>
          api.call('POST', '/v1/pools', { name: `from-${pool}`, grow: { pool, belowFree: 1 } }),
        ),
      );
      const afterRefusals = await tableSnapshot(api.container.table);
      const fits = await api.call('POST', '/v1/pools', { name: 'from-p30', grow: { pool: 'p30', belowFree: 1 } });
      // Assess
      for (const r of refused) {
        expect(r.status).toBe(400);
        expect(r.body.code).toBe('InvalidArgument');
        expect(r.body.detail).toMatch(/no usable address/);
      }
      expect(afterRefusals).toEqual(before);
      expect(fits.status).toBe(201);
    });

    it('refuses a growth rule naming no block pool, itself, or a parent with smaller blocks, writing nothing', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 28 }, ['10.9.0.0/26']);
      expect((await api.call('POST', '/v1/pools', { name: 'plain' })).status).toBe(201);
      const before = await tableSnapshot(api.container.table);
      // Act
      const answers = await Promise.all(
        [
          { name: 'a', grow: { pool: 'nope', belowFree: 2 } },
          { name: 'b', grow: { pool: 'plain', belowFree: 2 } },
          { name: 'c', grow: { pool: 'c', belowFree: 2 } },
          { name: 'd', grow: { pool: 'top', belowFree: 0 } },
          { name: 'e', grow: { pool: 'top', belowFree: 2, maxBlocks: 65 } },
          { name: 'f', grow: { pool: 'top', belowFree: 2 }, blockPrefixLength: { IPv4: 26 } },
        ].map((body) => api.call('POST', '/v1/pools', body)),
      );
      // Assess
      for (const r of answers) {
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body.code).toBe('InvalidArgument');
      }
      expect(answers[5]!.body.detail).toMatch(/smaller than this pool's \/26 blocks/);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });
  });

  describe(`Block pools: dryRun (${engine.name})`, () => {
    it('answers the block a claim would get now, says it is no hold, and writes nothing', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      await api.call('POST', '/v1/pools/pods/claims', { name: 'a', owner: owner('a') });
      const before = await tableSnapshot(api.container.table);
      // Act
      const preview = await api.call('POST', '/v1/pools/pods/claims', { name: 'b', owner: owner('b'), dryRun: true });
      // Assess
      expect(preview.status).toBe(200);
      expect(preview.body.dryRun).toBe(true);
      expect(preview.body.detail).toMatch(/not a hold/);
      expect(prefixesOf(preview.body)).toHaveLength(1);
      expect(prefixesOf(preview.body)[0]).toMatch(/^10\.244\.0\.(0|64|128|192)\/26$/);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });

    it('writes nothing for a preview that a real claim of the same owner and generateName races: the claim it finds is answered, not pinned', async () => {
      // Prepare: the real claim commits just after the preview's first look for the owner's generateName found nothing.
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      const body = { generateName: 'c-', owner: owner('c') };
      let snapshot: Awaited<ReturnType<typeof tableSnapshot>> | undefined;
      const racing = api.sibling({
        table: new HookTable(
          api.container.table,
          (read) => read.PK === keys.generated('pods', owner('c').uid, 'c-').PK,
          async () => {
            expect((await api.call('POST', '/v1/pools/pods/claims', body)).status).toBe(201);
            snapshot = await tableSnapshot(api.container.table);
          },
        ),
      });
      // Act
      const preview = await racing.call('POST', '/v1/pools/pods/claims', { ...body, dryRun: true });
      // Assess: the preview answers the claim as it is; the table is as the real claim left it (no pin).
      expect([preview.status, preview.body.dryRun]).toEqual([200, true]);
      expect(snapshot).toBeDefined();
      expect(await tableSnapshot(api.container.table)).toEqual(snapshot);
    });

    it('previews a generateName claim just made as a repeat, without pinning it', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      const body = { generateName: 'p-', owner: owner('p') };
      const made = await api.call('POST', '/v1/pools/pods/claims', body);
      expect(made.status).toBe(201);
      const before = await tableSnapshot(api.container.table);
      // Act
      const preview = await api.call('POST', '/v1/pools/pods/claims', { ...body, dryRun: true });
      // Assess
      expect(preview.status).toBe(200);
      expect(preview.body.dryRun).toBe(true);
      expect(preview.body.name).toBe(made.body.name);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });

    it('answers RangeFull on a full pool without sealing it', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      for (const name of ['a', 'b', 'c', 'd'])
        expect((await api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name) })).status).toBe(201);
      const before = await tableSnapshot(api.container.table);
      // Act
      const preview = await api.call('POST', '/v1/pools/pods/claims', { name: 'e', owner: owner('e'), dryRun: true });
      // Assess
      expect(preview.status).toBe(409);
      expect(preview.body.code).toBe('RangeFull');
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });
  });

  describe(`Nested pools: a range made from a block claim (${engine.name})`, () => {
    async function hierarchy(api: TestApi): Promise<string> {
      await blockPool(api, 'org', { IPv4: 16 }, ['10.0.0.0/8']);
      const region = await api.call('POST', '/v1/pools/org/claims', {
        name: 'eu-west',
        owner: owner('eu', 'Region'),
        ttlSeconds: 600,
      });
      expect(region.status).toBe(201);
      expect((await api.call('POST', '/v1/pools', { name: 'eu-west', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      return prefixesOf(region.body)[0]!;
    }

    it("creates the child range only with its claim's exact block, and refuses any other CIDR writing nothing", async () => {
      // Prepare
      const api = await testApi();
      const block = await hierarchy(api);
      const before = await tableSnapshot(api.container.table);
      const [a, b] = block.split('.');
      // Act
      const narrower = await api.call('POST', '/v1/pools/eu-west/ranges', {
        cidr: `${a}.${b}.0.0/17`,
        source: { pool: 'org', claim: 'eu-west' },
      });
      const other = await api.call('POST', '/v1/pools/eu-west/ranges', {
        cidr: `${a}.${Number(b) ^ 1}.0.0/16`,
        source: { pool: 'org', claim: 'eu-west' },
      });
      const noClaim = await api.call('POST', '/v1/pools/eu-west/ranges', {
        cidr: block,
        source: { pool: 'org', claim: 'nope' },
      });
      const afterRefusals = await tableSnapshot(api.container.table);
      const made = await api.call('POST', '/v1/pools/eu-west/ranges', {
        cidr: block,
        source: { pool: 'org', claim: 'eu-west' },
      });
      // Assess
      for (const r of [narrower, other]) {
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('SourceMismatch');
        expect(r.body.detail).toContain(block);
      }
      expect(noClaim.status).toBe(404);
      expect(afterRefusals).toEqual(before);
      expect(made.status).toBe(201);
      expect(made.body.source).toEqual({ pool: 'org', claim: 'eu-west' });
      const child = await api.call('POST', '/v1/pools/eu-west/claims', { name: 'node-1', owner: owner('node-1') });
      expect(prefixesOf(child.body)[0]).toMatch(new RegExp(`^${a}\\.${b}\\.\\d+\\.0/24$`));
    });

    it('refuses with 409 a range of that name and CIDR that exists without the source, writing nothing', async () => {
      // Prepare
      const api = await testApi();
      const block = await hierarchy(api);
      expect((await api.call('POST', '/v1/pools/eu-west/ranges', { cidr: block, name: 'main' })).status).toBe(201);
      const before = await tableSnapshot(api.container.table);
      // Act
      const nested = await api.call('POST', '/v1/pools/eu-west/ranges', {
        cidr: block,
        name: 'main',
        source: { pool: 'org', claim: 'eu-west' },
      });
      // Assess
      expect(nested.status).toBe(409);
      expect(nested.body.code).toBe('Conflict');
      expect(nested.body.detail).toMatch(/source/);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });

    it("refuses the parent claim's release with 409 naming the child while the child range lives, and lets it go after", async () => {
      // Prepare
      const clock = new ManualClock(T0);
      const api = await testApiOn({ clock }, {}, undefined, engine);
      const block = await hierarchy(api);
      expect(
        (
          await api.call('POST', '/v1/pools/eu-west/ranges', {
            cidr: block,
            name: 'main',
            source: { pool: 'org', claim: 'eu-west' },
          })
        ).status,
      ).toBe(201);
      // Act
      const refused = await api.call('DELETE', '/v1/pools/org/claims/eu-west');
      const ownerRelease = await api.call('DELETE', '/v1/pools/org/owners/eu');
      const renewed = await api.call('POST', '/v1/pools/org/claims/eu-west/renew', { ttlSeconds: 60 });
      const parent = await api.call('GET', '/v1/pools/org/claims/eu-west');
      // Assess
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('ClaimHasChildren');
      expect(refused.body.detail).toContain('eu-west/main');
      expect(ownerRelease.status).toBe(409);
      expect(ownerRelease.body.code).toBe('ClaimHasChildren');
      expect(renewed.status).toBe(409);
      expect(renewed.body.code).toBe('ClaimHasChildren');
      expect(parent.status).toBe(200);
      // The child range made the parent's hold permanent: it cannot expire out from under the child.
      expect(parent.body.expiresAt).toBeUndefined();
      expect(parent.body.children).toEqual([{ pool: 'eu-west', range: 'main', cidr: block }]);
      // A Terminating child range still lives (202); once it is gone, the parent claim is released as any other.
      expect((await api.call('DELETE', '/v1/pools/eu-west/ranges/main')).status).toBe(202);
      expect((await api.call('DELETE', '/v1/pools/org/claims/eu-west')).body.code).toBe('ClaimHasChildren');
      clock.advance(5_000);
      expect((await api.call('DELETE', '/v1/pools/eu-west/ranges/main')).status).toBe(204);
      expect((await api.call('GET', '/v1/pools/org/claims/eu-west')).body.children ?? []).toEqual([]);
      expect((await api.call('DELETE', '/v1/pools/org/claims/eu-west')).status).toBe(204);
    });

    it('gives the parent claim back when the child pool is deleted with its range', async () => {
      // Prepare
      const api = await testApi();
      const block = await hierarchy(api);
      expect(
        (await api.call('POST', '/v1/pools/eu-west/ranges', { cidr: block, source: { pool: 'org', claim: 'eu-west' } }))
          .status,
      ).toBe(201);
      // Act
      const deleted = await api.call('DELETE', '/v1/pools/eu-west');
      // Assess
      expect(deleted.status).toBe(204);
      expect((await api.call('GET', '/v1/pools/org/claims/eu-west')).body.children).toBeUndefined();
      expect((await api.call('DELETE', '/v1/pools/org/claims/eu-west')).status).toBe(204);
    });

    it("releases a gone owner's other claims and keeps only the one with a child range (409 naming it)", async () => {
      // Prepare: the owner holds five blocks; a child range is made from the second.
      const api = await testApi();
      await blockPool(api, 'org', { IPv4: 16 }, ['10.0.0.0/8']);
      const made: Record<string, string> = {};
      for (const name of ['a1', 'a2', 'a3', 'a4', 'a5']) {
        const claim = await api.call('POST', '/v1/pools/org/claims', { name, owner: owner('eu', 'Region') });
        expect(claim.status).toBe(201);
        made[name] = prefixesOf(claim.body)[0]!;
      }
      expect((await api.call('POST', '/v1/pools', { name: 'child', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      const source = { pool: 'org', claim: 'a2' };
      expect((await api.call('POST', '/v1/pools/child/ranges', { cidr: made.a2, source })).status).toBe(201);
      // Act
      const released = await api.call('DELETE', '/v1/pools/org/owners/eu');
      // Assess: the one claim is kept and named; the owner's other four are released all the same.
      expect(released.status).toBe(409);
      expect(released.body.code).toBe('ClaimHasChildren');
      const left = (await api.call('GET', '/v1/pools/org/claims')).body.items as { name: string }[];
      expect(left.map((c) => c.name)).toEqual(['a2']);
    });

    it('lets the last consumer of a claim with a child range leave (the claim kept), and releases the claim once the child is gone', async () => {
      // Prepare: two org claims, each with one consumer and a child range; one consumer leaves, the other's owner goes
      const clock = new ManualClock(T0);
      const api = await testApiOn({ clock }, {}, undefined, engine);
      await blockPool(api, 'org', { IPv4: 16 }, ['10.0.0.0/8']);
      expect((await api.call('POST', '/v1/pools', { name: 'child', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      for (const name of ['c', 'd']) {
        const made = await api.call('POST', '/v1/pools/org/claims', { name, owner: owner('eu', 'Region') });
        const pod = { kind: 'Pod', name: `pod-${name}`, uid: `pod-${name}` };
        expect((await api.call('POST', `/v1/pools/org/claims/${name}/consumers`, pod)).status).toBeLessThan(300);
        const range = { cidr: prefixesOf(made.body)[0], name, source: { pool: 'org', claim: name } };
        expect((await api.call('POST', '/v1/pools/child/ranges', range)).status).toBe(201);
      }
      // Act
      const leave = await api.call('DELETE', '/v1/pools/org/claims/c/consumers/pod-c');
      const ownerGone = await api.call('DELETE', '/v1/pools/org/owners/pod-d');
      const kept = await Promise.all(['c', 'd'].map((name) => api.call('GET', `/v1/pools/org/claims/${name}`)));
      for (const name of ['c', 'd'])
        expect((await api.call('DELETE', `/v1/pools/child/ranges/${name}`)).status).toBe(202);
      clock.advance(5_000);
      for (const name of ['c', 'd'])
        expect((await api.call('DELETE', `/v1/pools/child/ranges/${name}`)).status).toBe(204);
      const released = await Promise.all(['c', 'd'].map((name) => api.call('DELETE', `/v1/pools/org/claims/${name}`)));
      // Assess
      expect(leave.status).toBe(200);
      expect(leave.body).toMatchObject({ removed: true, released: false });
      expect(ownerGone.status).toBeLessThan(300);
      for (const claim of kept) {
        expect(claim.status).toBe(200);
        expect(claim.body.consumers).toBeUndefined();
      }
      expect(released.map((r) => r.status)).toEqual([204, 204]);
    });

    it('refuses to remove a child range while a claim of the child pool holds space in it, a covering range or not', async () => {
      // Prepare: the child pool also has a plain range covering its nested one, and a claim inside the nested one.
      const api = await testApi();
      const block = await hierarchy(api);
      const source = { pool: 'org', claim: 'eu-west' };
      const nested = await api.call('POST', '/v1/pools/eu-west/ranges', { cidr: block, name: 'r', source });
      expect(nested.status).toBe(201);
      const [a, b] = block.split('.');
      const explicit = `${a}.${b}.3.0/24`;
      const held = await api.call('POST', '/v1/pools/eu-west/claims', {
        name: 'k',
        owner: owner('k'),
        prefixes: [explicit],
      });
      expect(held.status).toBe(201);
      const cover = await api.call('POST', '/v1/pools/eu-west/ranges', { cidr: `${a}.0.0.0/12`, name: 'cover' });
      expect(cover.status).toBe(201);
      // Act
      const removed = await api.call('DELETE', '/v1/pools/eu-west/ranges/r');
      const parentRelease = await api.call('DELETE', '/v1/pools/org/claims/eu-west');
      // Assess: the nested range stays while k lives, and so does the parent claim whose block it is.
      expect(removed.status).toBe(202);
      expect(parentRelease.status).toBe(409);
      expect((await api.call('GET', '/v1/pools/org/claims/eu-west')).status).toBe(200);
    });

    it("answers 204 for a child range's removal only once it is gone, when a sibling's removal changed the parent claim first", async () => {
      // Prepare: one org claim of two blocks, a child range from each, both marked Terminating and settled
      const clock = new ManualClock(T0);
      const api = await testApiOn({ clock }, {}, undefined, engine);
      await blockPool(api, 'org', { IPv4: 16 }, ['10.0.0.0/8']);
      const made = await api.call('POST', '/v1/pools/org/claims', { name: 'c', owner: owner('eu'), count: 2 });
      expect((await api.call('POST', '/v1/pools', { name: 'child', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      for (const [i, cidr] of prefixesOf(made.body).entries()) {
        const range = { cidr, name: `r${i}`, source: { pool: 'org', claim: 'c' } };
        expect((await api.call('POST', '/v1/pools/child/ranges', range)).status).toBe(201);
      }
      for (const name of ['r0', 'r1'])
        expect((await api.call('DELETE', `/v1/pools/child/ranges/${name}`)).status).toBe(202);
      clock.advance(5_000);
      // r0's removal reads the parent claim; just then r1's removal takes its own marker off it (a new version)
      const claimKey = keys.claim('org', 'c');
      const hooked = new HookTable(
        api.container.table,
        (read) => read.PK === claimKey.PK && read.SK === claimKey.SK,
        () => api.call('DELETE', '/v1/pools/child/ranges/r1'),
      );
      // Act
      const removed = await api.sibling({ clock, table: hooked }).call('DELETE', '/v1/pools/child/ranges/r0');
      // Assess
      expect(removed.status).toBe(204);
      expect((await api.call('GET', '/v1/pools/child/ranges')).body.items).toEqual([]);
      expect((await api.call('DELETE', '/v1/pools/org/claims/c')).status).toBe(204);
    });

    it("finishes a parent pool's deletion only after its claims' child ranges are gone, when the listing missed the claim", async () => {
      // Prepare: the org claim and its child range are made just before org's DELETE, which the index does not show them
      const h = await reconcilerHarness({ engine });
      const block = await hierarchy(h.api);
      const source = { pool: 'org', claim: 'eu-west' };
      expect((await h.api.call('POST', '/v1/pools/eu-west/ranges', { cidr: block, name: 'r', source })).status).toBe(
        201,
      );
      const lagging = h.api.sibling({ clock: h.clock, table: new ListingLagTable(h.table, 'org') });
      const orgItems = async (entity: string) =>
        (await allItems(h.table)).filter((i) => i.pool === 'org' && i.entity === entity);
      // Act: two reconciler runs while the child range lives wait for it (row 20), then it goes
      const deleted = await lagging.call('DELETE', '/v1/pools/org');
      const kept = await orgItems('claim');
      const waits = [await h.run(), await h.run()];
      expect((await h.api.call('DELETE', '/v1/pools/eu-west/ranges/r')).status).toBe(202);
      h.clock.advance(5_000);
      expect((await h.api.call('DELETE', '/v1/pools/eu-west/ranges/r')).status).toBe(204);
      await h.run();
      // Assess: accepted, but the parent claim (and its block) stay while the child range lives; then all goes
      expect(deleted.status).toBe(202);
      expect(kept.map((c) => c.name)).toEqual(['eu-west']);
      for (const run of waits) {
        expect(run.errors).toEqual([]);
        expect(run.waiting).toEqual([expect.stringMatching(/^pool org: .*eu-west\/r\b/)]);
      }
      expect(await orgItems('claim')).toEqual([]);
      expect(await orgItems('lease')).toEqual([]);
      expect(await orgItems('pool')).toEqual([]);
    });

    it('refuses a nested range whose source pool is Terminating', async () => {
      // Prepare: the claim is confirmed (no expiry), then org is marked Terminating (its listing missed the claim; its
      // finalizer not run yet)
      const api = await testApi();
      const block = await hierarchy(api);
      const confirmed = await api.call('POST', '/v1/pools/org/claims/eu-west/renew', { ttlSeconds: null });
      expect(confirmed.status).toBe(200);
      const lagging = api.sibling({ table: new ListingLagTable(api.container.table, 'org') });
      expect(await lagging.container.deps.pools.deletePool('org', Date.now())).toBe('terminating');
      const claim = (await api.container.deps.claims.getClaim('org', 'eu-west'))!;
      const range = {
        pool: 'eu-west',
        name: 'r',
        cidr: block,
        family: 'IPv4',
        state: 'Ready',
        legacy: false,
        createdAt: new Date().toISOString(),
        blockPrefixLength: 24,
        source: { pool: 'org', claim: 'eu-west' },
      } as Parameters<typeof api.container.deps.pools.createRange>[0];
      // Act
      const made = api.container.deps.pools.createRange(range, claim);
      // Assess
      await expect(made).rejects.toThrow(/org/);
      expect((await api.container.deps.claims.getClaim('org', 'eu-west'))?.children).toBeUndefined();
    });

    it('keeps a parent claim with a child range through its TTL and the reconciler', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine });
      const block = await hierarchy(h.api);
      expect(
        (
          await h.api.call('POST', '/v1/pools/eu-west/ranges', {
            cidr: block,
            name: 'main',
            source: { pool: 'org', claim: 'eu-west' },
          })
        ).status,
      ).toBe(201);
      // Act
      h.clock.advance(3_600_000);
      await h.run();
      // Assess
      expect((await h.api.call('GET', '/v1/pools/org/claims/eu-west')).status).toBe(200);
      expect((await allItems(h.table)).filter((i) => i.entity === 'lease' && i.pool === 'org').length).toBe(1);
    });
  });

  // Review of issue 35's block claims (claims35): explicit blocks and exclusions, renewal of a parent claim, dryRun in
  // a growing pool, and the coverage gaps (lower band, access rules, a repeated generateName claim).
  describe(`Block claims: explicit blocks holding an excluded address (${engine.name})`, () => {
    it('refuses an explicit block that holds an excluded address (422 NotInRange naming both), preview or not, writing nothing', async () => {
      // Prepare: 10.244.0.70 lies in 10.244.0.64/26; the exclusion 10.244.1.0/25 covers 10.244.1.0/26 and .64/26
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/23'], ['10.244.0.70', '10.244.1.0/25']);
      const before = await tableSnapshot(api.container.table);
      const claim = (name: string, prefix: string, extra: Record<string, unknown> = {}) =>
        api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name), prefixes: [prefix], ...extra });
      // Act
      const address = await claim('a', '10.244.0.64/26');
      const covered = await claim('b', '10.244.1.64/26');
      const preview = await claim('c', '10.244.0.64/26', { dryRun: true });
      const afterRefusals = await tableSnapshot(api.container.table);
      const clean = await claim('d', '10.244.0.128/26');
      // Assess
      for (const [r, block, excluded] of [
        [address, '10.244.0.64/26', '10.244.0.70'],
        [covered, '10.244.1.64/26', '10.244.1.0/25'],
        [preview, '10.244.0.64/26', '10.244.0.70'],
      ] as const) {
        expect(r.status, JSON.stringify(r.body)).toBe(422);
        expect(r.body.code).toBe('NotInRange');
        expect(r.body.detail).toContain(block);
        expect(r.body.detail).toContain(excluded);
      }
      expect(afterRefusals).toEqual(before);
      expect(clean.status).toBe(201);
    });
  });

  describe(`Block claims: renewing a claim with a child range (${engine.name})`, () => {
    it('refuses a TTL on a parent claim in words of renewal, and confirms it (ttlSeconds null) as it is', async () => {
      // Prepare: org's claim eu-west (made with a TTL) is the source of range eu-west/main, which confirmed it
      const api = await testApi();
      await blockPool(api, 'org', { IPv4: 16 }, ['10.0.0.0/8']);
      const made = await api.call('POST', '/v1/pools/org/claims', {
        name: 'eu-west',
        owner: owner('eu', 'Region'),
        ttlSeconds: 600,
      });
      expect((await api.call('POST', '/v1/pools', { name: 'eu-west', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      const source = { pool: 'org', claim: 'eu-west' };
      const range = { cidr: prefixesOf(made.body)[0], name: 'main', source };
      expect((await api.call('POST', '/v1/pools/eu-west/ranges', range)).status).toBe(201);
      const parent = await api.call('GET', '/v1/pools/org/claims/eu-west');
      // Act
      const ttl = await api.call('POST', '/v1/pools/org/claims/eu-west/renew', { ttlSeconds: 60 });
      const ownTtl = await api.call('POST', '/v1/pools/org/claims/eu-west/renew');
      const confirmed = await api.call('POST', '/v1/pools/org/claims/eu-west/renew', { ttlSeconds: null });
      // Assess
      for (const r of [ttl, ownTtl]) {
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('ClaimHasChildren');
        expect(r.body.detail).toContain('range "main" of pool "eu-west"');
        expect(r.body.detail).toMatch(/cannot take a TTL/);
        expect(r.body.detail).not.toMatch(/releasing/);
      }
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.expiresAt).toBeUndefined();
      expect(confirmed.body.version).toBe(parent.body.version);
      expect(await api.call('GET', '/v1/pools/org/claims/eu-west')).toMatchObject({ status: 200, body: parent.body });
    });
  });

  describe(`Block claims: dryRun in a pool that grows (${engine.name})`, () => {
    it('previews the block the pool would take from its parent when it has no range or is full, writing nothing', async () => {
      // Prepare: top hands out /29 blocks of a /28 (two). `fresh` grows from it and has no range; `pods` grows from it
      // and has a /30 range its two addresses are taken from (claimed past the growth, which a claim would set off).
      const api = await testApi();
      await blockPool(api, 'top', { IPv4: 29 }, ['10.9.0.0/28']);
      const grow = { pool: 'top', belowFree: 1, maxBlocks: 2 };
      for (const name of ['fresh', 'pods'])
        expect((await api.call('POST', '/v1/pools', { name, grow })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.8.0.0/30' })).status).toBe(201);
      await createClaim(api.container.deps, { pool: 'pods', name: 'full', owner: owner('full'), count: 2 });
      const before = await tableSnapshot(api.container.table);
      const preview = (pool: string, name: string) =>
        api.call('POST', `/v1/pools/${pool}/claims`, { name, owner: owner(name), dryRun: true });
      // Act
      const previews = [await preview('fresh', 'a'), await preview('pods', 'b')];
      const eight = { name: 'e', owner: owner('e'), count: 8, dryRun: true };
      const twoBlocks = await api.call('POST', '/v1/pools/fresh/claims', eight);
      const afterPreviews = await tableSnapshot(api.container.table);
      const real = await api.call('POST', '/v1/pools/pods/claims', { name: 'b', owner: owner('b') });
      await api.call('POST', '/v1/pools/top/claims', { name: 'other', owner: owner('other') });
      await createClaim(api.container.deps, { pool: 'pods', name: 'rest', owner: owner('rest'), count: 5 });
      const parentFull = await preview('pods', 'c');
      // Assess: each preview names the parent's block, its claim and range, and answers an address inside that block
      for (const [r, pool] of [
        [previews[0]!, 'fresh'],
        [previews[1]!, 'pods'],
      ] as const) {
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.dryRun).toBe(true);
        const [grows, more] = r.body.grows as { pool: string; claim: string; range: string; cidr: string }[];
        expect(more).toBeUndefined();
        expect(grows).toMatchObject({ pool: 'top', claim: `${pool}-g4-1`, range: 'g4-1' });
        expect(['10.9.0.0/29', '10.9.0.8/29']).toContain(grows!.cidr);
        const [address] = r.body.addresses as Block[];
        expect(address!.range).toBe('g4-1');
        expect(address!.address.startsWith(grows!.cidr.slice(0, -4))).toBe(true);
        expect(r.body.detail).toContain(`take block ${grows!.cidr} from pool "top"`);
        expect(r.body.detail).toMatch(/not a hold/);
      }
      // Eight addresses need both /29 blocks of top (six each), as a real claim's second round would take them.
      expect(twoBlocks.status, JSON.stringify(twoBlocks.body)).toBe(200);
      const two = twoBlocks.body.grows as { range: string; cidr: string }[];
      expect(two.map((g) => g.range)).toEqual(['g4-1', 'g4-2']);
      expect(two.map((g) => g.cidr).sort()).toEqual(['10.9.0.0/29', '10.9.0.8/29']);
      expect(twoBlocks.body.addresses).toHaveLength(8);
      expect(afterPreviews).toEqual(before);
      expect(real.status).toBe(201);
      expect((real.body.addresses as Block[])[0]!.range).toBe('g4-1');
      expect(parentFull.status).toBe(409);
      expect(parentFull.body.code).toBe('RangeFull');
    });
  });

  describe(`Block claims: the lower band (${engine.name})`, () => {
    it('takes upper-band blocks first in a range of more than 16 blocks, and gives a named lower-band block', async () => {
      // Prepare: a /21 of /26 is 32 blocks; its lower band is the first 16 (10.0.0.0-10.0.3.192), the upper 10.0.4.0/22
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.0.0.0/21']);
      const claim = (name: string, extra: Record<string, unknown>) =>
        api.call('POST', '/v1/pools/pods/claims', { name, owner: owner(name), ...extra });
      const third = (prefix: string) => Number(prefix.split('.')[2]);
      // Act
      const first = await claim('a', { count: 3 });
      const named = await claim('b', { prefixes: ['10.0.1.64/26'] });
      const rest = await claim('c', { count: 13 });
      const lower = await claim('d', {});
      // Assess: the 16 upper-band blocks went to the dynamic claims; then the lower band, less the named block
      for (const r of [first, named, rest, lower]) expect(r.status, JSON.stringify(r.body)).toBe(201);
      const upper = [...prefixesOf(first.body), ...prefixesOf(rest.body)] as string[];
      expect(new Set(upper).size).toBe(16);
      expect(upper.every((p) => third(p) >= 4)).toBe(true);
      expect(prefixesOf(named.body)).toEqual(['10.0.1.64/26']);
      const [low] = prefixesOf(lower.body) as string[];
      expect(third(low!)).toBeLessThan(4);
      expect(low).not.toBe('10.0.1.64/26');
    });
  });

  describe(`Block claims: access rules (${engine.name})`, () => {
    const arn = (role: string) => `arn:aws:iam::123456789012:role/${role}`;
    const as = (role: string) => ({ 'x-ipam-principal': arn(role) });
    /** A block pool org of /16 blocks, administered by netops, team-a and team-b its allocators. */
    async function orgWithAccess(): Promise<TestApi> {
      const api = await testApi();
      const access = { administrators: [arn('netops')], allocators: [arn('team-a'), arn('team-b')] };
      const org = { name: 'org', blockPrefixLength: { IPv4: 16 }, access };
      expect((await api.call('POST', '/v1/pools', org, as('netops'))).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/org/ranges', { cidr: '10.0.0.0/8' }, as('netops'))).status).toBe(201);
      return api;
    }

    it("refuses a block claim to a caller with no role in the pool, and another allocator's release of a block claim", async () => {
      // Prepare
      const api = await orgWithAccess();
      const before = await tableSnapshot(api.container.table);
      // Act
      const stranger = await api.call('POST', '/v1/pools/org/claims', { name: 's', owner: owner('s') }, as('mallory'));
      const afterStranger = await tableSnapshot(api.container.table);
      const a = await api.call('POST', '/v1/pools/org/claims', { name: 'a', owner: owner('a') }, as('team-a'));
      const releasedByB = await api.call('DELETE', '/v1/pools/org/claims/a', undefined, as('team-b'));
      // Assess
      expect(stranger.status).toBe(403);
      expect(stranger.body.code).toBe('Forbidden');
      expect(afterStranger).toEqual(before);
      expect(a.status).toBe(201);
      expect(releasedByB.status).toBe(403);
      expect((await api.call('GET', '/v1/pools/org/claims/a', undefined, as('netops'))).status).toBe(200);
    });

    it("lets only the parent claim's creator or a parent administrator make a range from it", async () => {
      // Prepare: team A and team B each claim a /16 of org; the child pool kid has no access list (IAM decides)
      const api = await orgWithAccess();
      const blocks: Record<string, string> = {};
      for (const team of ['a', 'b']) {
        const made = await api.call(
          'POST',
          '/v1/pools/org/claims',
          { name: team, owner: owner(team) },
          as(`team-${team}`),
        );
        expect(made.status).toBe(201);
        blocks[team] = prefixesOf(made.body)[0]!;
      }
      expect((await api.call('POST', '/v1/pools', { name: 'kid', blockPrefixLength: { IPv4: 24 } })).status).toBe(201);
      const range = (team: string, name: string) => ({
        cidr: blocks[team],
        name,
        source: { pool: 'org', claim: team },
      });
      const before = await tableSnapshot(api.container.table);
      // Act
      const byOther = await api.call('POST', '/v1/pools/kid/ranges', range('a', 'ra'), as('team-b'));
      const afterRefusal = await tableSnapshot(api.container.table);
      const byCreator = await api.call('POST', '/v1/pools/kid/ranges', range('a', 'ra'), as('team-a'));
      const byAdministrator = await api.call('POST', '/v1/pools/kid/ranges', range('b', 'rb'), as('netops'));
      // Assess
      expect(byOther.status).toBe(403);
      expect(byOther.body.code).toBe('Forbidden');
      expect(afterRefusal).toEqual(before);
      expect(byCreator.status).toBe(201);
      expect(byAdministrator.status).toBe(201);
    });
  });

  describe(`Cross-pool writes need the parent's consent (${engine.name})`, () => {
    const arn = (role: string) => `arn:aws:iam::123456789012:role/${role}`;
    const as = (role: string) => ({ 'x-ipam-principal': arn(role) });

    it('refuses a nested range and a growth rule into a parent without access that is not openToChildPools, writing nothing; allows them once it is', async () => {
      // Prepare: team B's pool has no access list; B holds a TTL block claim in it.
      const api = await testApi();
      for (const [name, open] of [
        ['team-b', false],
        ['shared', true],
      ] as const) {
        const body = { name, blockPrefixLength: { IPv4: 24 }, ...(open ? { openToChildPools: true } : {}) };
        expect((await api.call('POST', '/v1/pools', body)).status).toBe(201);
        expect((await api.call('POST', `/v1/pools/${name}/ranges`, { cidr: '10.8.0.0/16' })).status).toBe(201);
      }
      const held = await api.call('POST', '/v1/pools/team-b/claims', { name: 'b', owner: owner('b'), ttlSeconds: 600 });
      const sharedClaim = await api.call('POST', '/v1/pools/shared/claims', { name: 's', owner: owner('s') });
      expect(
        (await api.call('POST', '/v1/pools', { name: 'team-a-kid', blockPrefixLength: { IPv4: 26 } })).status,
      ).toBe(201);
      const before = await tableSnapshot(api.container.table);

      // Act: team A, on its own pool's routes, into team B's pool
      const nested = await api.call(
        'POST',
        '/v1/pools/team-a-kid/ranges',
        { cidr: prefixesOf(held.body)[0], source: { pool: 'team-b', claim: 'b' } },
        as('team-a'),
      );
      const rule = await api.call(
        'POST',
        '/v1/pools',
        { name: 'team-a-grow', grow: { pool: 'team-b', belowFree: 1 } },
        as('team-a'),
      );
      const afterRefusals = await tableSnapshot(api.container.table);
      const openNested = await api.call(
        'POST',
        '/v1/pools/team-a-kid/ranges',
        { cidr: prefixesOf(sharedClaim.body)[0], source: { pool: 'shared', claim: 's' } },
        as('team-a'),
      );
      const openRule = await api.call(
        'POST',
        '/v1/pools',
        { name: 'team-a-grow', grow: { pool: 'shared', belowFree: 1 } },
        as('team-a'),
      );
      const withAccess = await api.call('POST', '/v1/pools', {
        name: 'x',
        openToChildPools: true,
        access: { administrators: [arn('a')] },
      });

      // Assess: both refused with the rule named and nothing written (B's claim keeps its TTL); both allowed into the open pool.
      for (const res of [nested, rule]) {
        expect([res.status, res.body.code, res.body.rule], JSON.stringify(res.body)).toEqual([
          403,
          'Forbidden',
          'parent-consent',
        ]);
        expect(res.body.detail).toMatch(/"team-b" has no access list and is not open to child pools/);
      }
      expect(afterRefusals).toEqual(before);
      expect((await api.call('GET', '/v1/pools/team-b/claims/b')).body.expiresAt).toBe(held.body.expiresAt);
      expect([openNested.status, openRule.status]).toEqual([201, 201]);
      expect((await api.call('GET', '/v1/pools/shared')).body.openToChildPools).toBe(true);
      expect([withAccess.status, withAccess.body.detail]).toEqual([
        400,
        expect.stringMatching(/^openToChildPools is for a pool without access/),
      ]);
    });

    it('refuses a growth rule to a caller with no role in a parent with access, and takes it from a member', async () => {
      // Prepare
      const api = await testApi();
      const top = {
        name: 'top',
        blockPrefixLength: { IPv4: 28 },
        access: { administrators: [arn('netops')], allocators: [arn('node')] },
      };
      expect((await api.call('POST', '/v1/pools', top, as('netops'))).status).toBe(201);
      // Act
      const stranger = await api.call(
        'POST',
        '/v1/pools',
        { name: 'p1', grow: { pool: 'top', belowFree: 1 } },
        as('mallory'),
      );
      const member = await api.call(
        'POST',
        '/v1/pools',
        { name: 'p2', grow: { pool: 'top', belowFree: 1 } },
        as('node'),
      );
      // Assess
      expect([stranger.status, stranger.body.rule]).toEqual([403, 'members-only']);
      expect((await api.call('GET', '/v1/pools/p1')).status).toBe(404);
      expect(member.status).toBe(201);
    });
  });

  describe(`Block claims: a repeated generateName claim (${engine.name})`, () => {
    it('answers a repeated (owner uid, generateName) block claim with the claim the first made, taking nothing more', async () => {
      // Prepare
      const api = await testApi();
      await blockPool(api, 'pods', { IPv4: 26 }, ['10.244.0.0/24']);
      const body = { generateName: 'node-', owner: owner('n1'), count: 2 };
      // Act
      const made = await api.call('POST', '/v1/pools/pods/claims', body);
      const again = await api.call('POST', '/v1/pools/pods/claims', body);
      // Assess
      expect(made.status).toBe(201);
      expect(made.body.name).toMatch(/^node-/);
      expect(again.status).toBe(200);
      expect(again.body.name).toBe(made.body.name);
      expect(prefixesOf(again.body)).toEqual(prefixesOf(made.body));
      expect((await leaseItems(api)).length).toBe(2);
      expect(((await api.call('GET', '/v1/pools/pods/claims')).body.items as unknown[]).length).toBe(1);
    });
  });
}

/** A container on `api`'s table that runs `hook` once, just after its first read of `pool`'s partition: a race made exact. */
export function afterPoolRead(api: TestApi, pool: string, hook: () => Promise<unknown>): TestApi {
  const when = (read: Partial<Query & Key>) => read.partition === keys.poolPartition(pool);
  return api.sibling({ table: new HookTable(api.container.table, when, hook) });
}

/** A table that runs `hook` once, just after the first read `when` picks and before its answer is handed back: a race made exact. */
class HookTable extends PassThroughTable {
  private armed = true;
  constructor(
    inner: Table,
    private readonly when: (read: Partial<Query & Key>) => boolean,
    private readonly hook: () => Promise<unknown>,
  ) {
    super(inner);
  }
  private async fire<T>(read: Partial<Query & Key>, answer: T): Promise<T> {
    if (this.armed && this.when(read)) {
      this.armed = false;
      await this.hook();
    }
    return answer;
  }
  override async query(query: Query): Promise<QueryPage> {
    return this.fire(query, await this.inner.query(query));
  }
  override async get(key: Key): Promise<Item | undefined> {
    return this.fire(key, await this.inner.get(key));
  }
}

/** A table whose pool claims listing (the index) shows none of `pool`'s claims until a transaction passes: its lag. */
class ListingLagTable extends PassThroughTable {
  private lagging = true;
  constructor(
    inner: Table,
    private readonly pool: string,
  ) {
    super(inner);
  }
  override query(query: Query): Promise<QueryPage> {
    if (this.lagging && query.partition.startsWith(keys.claimsListing(this.pool, 0).slice(0, -1)))
      return Promise.resolve({ items: [], scanned: 0 } as unknown as QueryPage);
    return this.inner.query(query);
  }
  override async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const verdicts = await this.inner.transact(ops);
    this.lagging = false;
    return verdicts;
  }
}
