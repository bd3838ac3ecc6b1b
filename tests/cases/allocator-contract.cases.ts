import { describe, expect, it } from 'vitest';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { BitmapAllocator } from '../../shared/core/allocator/bitmap-allocator.ts';
import { LeaseAllocator } from '../../shared/core/allocator/lease-allocator.ts';
import { Bitmap, bitOf, legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { AlreadyAllocatedError, NotInRangeError, RangeFullError } from '../../shared/core/errors.ts';
import { parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import * as claims from '../../shared/core/use-cases/claims.ts';
import * as pools from '../../shared/core/use-cases/pools.ts';
import * as ranges from '../../shared/core/use-cases/ranges.ts';
import type { Deps } from '../../shared/core/use-cases/deps.ts';
import { loadConfig } from '../../shared/config.ts';
import type { TestEngine } from '../support/engines.ts';

/**
 * One contract, every allocation strategy (as Kubernetes runs bitmap_test.go and ipallocator_test.go on one table of
 * cases): the same cases run against the lease allocator (dual-write on and off) and the legacy bitmap allocator, on
 * each table engine (DynamoDB Local in the integration tier, memory in the unit tier) through the real stores, each
 * strategy picked by the composition root from its feature gates.
 */
const strategies = [
  {
    name: 'LeaseAllocator (dual-write on)',
    gates: 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=false',
    allocator: LeaseAllocator,
  },
  {
    name: 'LeaseAllocator (dual-write off)',
    gates: 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true',
    allocator: LeaseAllocator,
  },
  { name: 'BitmapAllocator (legacy mode)', gates: 'MultiCIDRServiceAllocator=false', allocator: BitmapAllocator },
] as const;

/** Ranges of the contract: every host, the reserved addresses, an address just outside. */
const rows = [
  {
    cidr: '10.20.0.0/29',
    hosts: ['10.20.0.1', '10.20.0.2', '10.20.0.3', '10.20.0.4', '10.20.0.5', '10.20.0.6'],
    reserved: ['10.20.0.0', '10.20.0.7'],
    outside: '10.20.0.8',
  },
  {
    cidr: '10.20.0.0/30',
    hosts: ['10.20.0.1', '10.20.0.2'],
    reserved: ['10.20.0.0', '10.20.0.3'],
    outside: '10.20.0.4',
  },
  { cidr: '10.20.0.9/32', hosts: [], reserved: ['10.20.0.9'], outside: '10.20.0.10' },
  {
    cidr: 'fd00::/125',
    hosts: ['fd00::1', 'fd00::2', 'fd00::3', 'fd00::4', 'fd00::5', 'fd00::6', 'fd00::7'],
    reserved: ['fd00::'],
    outside: 'fd00::8',
  },
] as const;

const owner = (uid: string) => ({ kind: 'Pod', name: `pod-${uid}`, uid });

let pools_ = 0;

/** A container of the strategy on a fresh table, and a pool with one legacy range of the row. */
async function setup(
  engine: TestEngine,
  gates: string,
  cidr: string,
  exclude: string[] = [],
): Promise<{
  deps: Deps;
  pool: string;
  range: string;
  bitmaps: ReturnType<typeof buildContainer>['stores']['bitmaps'];
}> {
  const { table, env } = await engine.fresh('contract');
  const container = buildContainer(loadConfig({ ...env, LEASE_INDEX_SHARDS: '2', FEATURE_GATES: gates }), { table });
  const pool = `p${(pools_ += 1)}`;
  await pools.createPool(container.deps, { name: pool, exclude });
  const { range } = await ranges.createRange(container.deps, { pool, cidr, legacy: true });
  return { deps: container.deps, pool, range: range.name, bitmaps: container.stores.bitmaps };
}

const allocate = (deps: Deps, pool: string, name: string, addresses?: string[]) =>
  claims
    .createClaim(deps, { pool, name, owner: owner(name), ...(addresses ? { addresses } : {}) })
    .then((r) => r.claim.addresses[0]!.address);

/** The allocator contract on one table engine. */
export function allocatorContract(engine: TestEngine): void {
  describe.each(strategies)(`Contract on ${engine.name}: $name`, ({ gates, allocator }) => {
    it('is the strategy the composition root picks for its gates', async () => {
      // Prepare
      const { deps } = await setup(engine, gates, '10.20.0.0/30');
      // Assess
      expect(deps.allocator).toBeInstanceOf(allocator);
    });

    describe.each(rows)('range $cidr', ({ cidr, hosts, reserved, outside }) => {
      it('fills the range with every host address once, then throws RangeFullError', async () => {
        // Prepare
        const { deps, pool } = await setup(engine, gates, cidr);
        // Act
        const got: string[] = [];
        for (let i = 0; i < hosts.length; i += 1) got.push(await allocate(deps, pool, `c${i}`));
        // Assess
        expect([...got].sort()).toEqual([...hosts].sort());
        await expect(allocate(deps, pool, 'one-too-many')).rejects.toThrow(RangeFullError);
      });

      it('refuses reserved and out-of-range addresses with NotInRangeError', async () => {
        // Prepare
        const { deps, pool } = await setup(engine, gates, cidr);
        // Act, Assess
        for (const [i, address] of [...reserved, outside].entries()) {
          await expect(allocate(deps, pool, `x${i}`, [address])).rejects.toThrow(NotInRangeError);
        }
      });
    });

    describe.each(rows.filter((r) => r.hosts.length > 0))('range $cidr (with hosts)', ({ cidr, hosts }) => {
      it('after one release in a full range, the next allocation returns exactly that address', async () => {
        // Prepare
        const { deps, pool } = await setup(engine, gates, cidr);
        const got: string[] = [];
        for (let i = 0; i < hosts.length; i += 1) got.push(await allocate(deps, pool, `c${i}`));
        const victim = Math.floor(hosts.length / 2);
        // Act
        await claims.deleteClaim(deps, pool, `c${victim}`);
        const again = await allocate(deps, pool, 'again');
        // Assess
        expect(again).toBe(got[victim]);
        await expect(allocate(deps, pool, 'still-full')).rejects.toThrow(RangeFullError);
      });

      it('takes an explicit address once: a second claim gets AlreadyAllocatedError naming the holder', async () => {
        // Prepare
        const { deps, pool } = await setup(engine, gates, cidr);
        const address = hosts[hosts.length - 1]!;
        expect(await allocate(deps, pool, 'first', [address])).toBe(address);
        // Act
        const second = allocate(deps, pool, 'second', [address]);
        // Assess
        await expect(second).rejects.toThrow(AlreadyAllocatedError);
        await expect(second).rejects.toMatchObject({ holder: { claim: 'first' } });
      });

      it('answers a repeated request with the same claim (idempotent), not with a conflict', async () => {
        // Prepare
        const { deps, pool } = await setup(engine, gates, cidr);
        const address = hosts[0]!;
        const first = await claims.createClaim(deps, {
          pool,
          name: 'same',
          owner: owner('same'),
          addresses: [address],
        });
        // Act
        const again = await claims.createClaim(deps, {
          pool,
          name: 'same',
          owner: owner('same'),
          addresses: [address],
        });
        // Assess
        expect(first.created).toBe(true);
        expect(again).toMatchObject({ created: false, claim: { uid: first.claim.uid, addresses: [{ address }] } });
      });
    });

    it('never hands out an excluded address dynamically, but gives it when asked for by name', async () => {
      // Prepare
      const { deps, pool } = await setup(engine, gates, '10.30.0.0/29', ['10.30.0.3/32', '10.30.0.5/32']);
      // Act
      const got: string[] = [];
      for (let i = 0; i < 4; i += 1) got.push(await allocate(deps, pool, `c${i}`));
      // Assess
      expect(got.sort()).toEqual(['10.30.0.1', '10.30.0.2', '10.30.0.4', '10.30.0.6']);
      await expect(allocate(deps, pool, 'dyn')).rejects.toThrow(RangeFullError);
      expect(await allocate(deps, pool, 'named', ['10.30.0.5'])).toBe('10.30.0.5');
    });
  });

  describe('Class: BitmapAllocator', () => {
    describe('Method: allocate', () => {
      it('builds a missing bitmap from each range own leases, so a rollback to legacy mode never hands out a held address', async () => {
        // Prepare: a lease-mode fleet with dual-write off filled all but one address of each family; no bitmap exists.
        const { table, env: base } = await engine.fresh('contract');
        const env = { ...base, LEASE_INDEX_SHARDS: '2' };
        const leaseMode = buildContainer(loadConfig({ ...env, FEATURE_GATES: strategies[1].gates }), { table });
        await pools.createPool(leaseMode.deps, { name: 'p' });
        await ranges.createRange(leaseMode.deps, { pool: 'p', cidr: '10.50.0.0/29', name: 'v4', legacy: true });
        await ranges.createRange(leaseMode.deps, { pool: 'p', cidr: 'fd00:50::/125', name: 'v6', legacy: true });
        for (let i = 0; i < 5; i += 1)
          await claims.createClaim(leaseMode.deps, {
            pool: 'p',
            name: `l${i}`,
            owner: owner(`l${i}`),
            ipFamilyPolicy: 'RequireDualStack',
          });
        await claims.createClaim(leaseMode.deps, { pool: 'p', name: 'l5', owner: owner('l5'), ipFamilies: ['IPv6'] });
        const held = (
          await Promise.all(['l0', 'l1', 'l2', 'l3', 'l4', 'l5'].map((n) => claims.getClaim(leaseMode.deps, 'p', n)))
        ).flatMap((c) => c.addresses.map((a) => a.address));
        const legacy = buildContainer(loadConfig({ ...env, FEATURE_GATES: strategies[2].gates }), { table });
        // Act
        const last = await claims.createClaim(legacy.deps, {
          pool: 'p',
          name: 'last',
          owner: owner('last'),
          ipFamilyPolicy: 'RequireDualStack',
        });
        // Assess: the one free address of each family, then full; each bitmap names its own range's CIDR.
        const got = last.claim.addresses.map((a) => a.address);
        expect(got.filter((a) => held.includes(a))).toEqual([]);
        await expect(
          claims.createClaim(legacy.deps, { pool: 'p', name: 'more', owner: owner('more'), ipFamilies: ['IPv4'] }),
        ).rejects.toThrow(RangeFullError);
        const v4 = await legacy.stores.bitmaps.getBitmap('p', 'v4');
        const v6 = await legacy.stores.bitmaps.getBitmap('p', 'v6');
        expect(v4).toMatchObject({ range: '10.50.0.0/29', version: 1 });
        expect(v6).toMatchObject({ range: 'fd00:50::/125', version: 1 });
        expect(Bitmap.decode(v4!.data, 6).count()).toBe(6);
        expect(Bitmap.decode(v6!.data, 7).count()).toBe(7);
      });

      it('keeps the bitmap equal to the leases after every allocation and release, without the mirror', async () => {
        // Prepare
        const { deps, pool, range, bitmaps } = await setup(engine, strategies[2].gates, '10.40.0.0/29');
        const cidr = parseCidr('10.40.0.0/29');
        const expectBits = async (held: string[]) => {
          const doc = await bitmaps.getBitmap(pool, range);
          const bitmap = Bitmap.decode(doc!.data, legacyWindow(cidr));
          expect(bitmap.count()).toBe(held.length);
          for (const address of held) expect(bitmap.has(bitOf(cidr, parseAddress(address).value)!)).toBe(true);
        };
        // Act, Assess
        const b = await allocate(deps, pool, 'b', ['10.40.0.2']);
        const a = await allocate(deps, pool, 'a');
        await expectBits([a, b]);
        await claims.deleteClaim(deps, pool, 'a');
        await expectBits([b]);
        expect((await bitmaps.getBitmap(pool, range))!.version).toBe(3);
      });
    });
  });
}
