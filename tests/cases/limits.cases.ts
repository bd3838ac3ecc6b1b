import { describe, expect, it } from 'vitest';
import type { TestEngine } from '../support/engines.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { SeededRandom } from '../unit/fakes.ts';
import { allItems } from '../support/items.ts';
import { EXPIRED_PAST_GRACE, reconcilerHarness, T0, type ReconcilerHarness } from '../support/reconciler.ts';
import type { TestApi } from '../support/api.ts';
import { tableStores } from '../../shared/adapters/dynamodb/stores.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { ITEM_BYTES_LIMIT } from '../../shared/adapters/dynamodb/table.ts';
import { plainItemSize } from '../../aws-emulation/item-size.ts';
import { BandReading, countersOf, partsOf, sealHolds, type Band } from '../../shared/core/used-up/rule.ts';
import { TUNING } from '../../shared/core/allocator/tuning.ts';
import { parseCidr, capacity, lowerBandSize } from '../../shared/core/ip/cidr.ts';
import { ownerIdentity } from '../../shared/core/occupancy/ports.ts';
import { NameLimits } from '../../shared/core/names.ts';

/**
 * Issue 33, item 1: a wide batch claim (dual-stack, count 32, its addresses spread over many ranges) is written in one
 * transaction, but every write that frees its addresses also bumps one freed counter per range it touches
 * (writes/freed.ts): 1 claim + 64 leases + one counter per range passes DynamoDB's 100 items a transaction. Each case
 * makes such a claim and frees it by one of the paths that do, on both engines (MemoryTable refuses a transaction of
 * more than 100 operations as DynamoDB does).
 *
 * The pool is the issue's: 40 IPv4 /29s (6 addresses each) and 40 IPv6 /125s (7 each); a dual-stack count-32 claim
 * draws its picks range by range and lands in about 44 of them (a seeded random, so the same ones each run). The old
 * code's release needed 1 + 64 + one per range: over 100 from 36 ranges on, which each case checks first.
 */
/** The i-th IPv6 block of `bits` host bits in fd<prefix>::/64, as the API writes it (fd33::/125 for the first). */
const v6 = (prefix: string, i: number, bits = 3): string =>
  `${prefix}::${i === 0 ? '' : (i << bits).toString(16)}/${128 - bits}`;
const V4 = Array.from({ length: 40 }, (_, i) => `10.33.${i}.0/29`);
const V6 = Array.from({ length: 40 }, (_, i) => v6('fd33', i));
const WIDE = { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'], count: 32 } as const;

type Addr = { address: string; family: string; range: string };

/** Wide pool 'p' (with a reuse delay when asked). */
async function widePool(h: ReconcilerHarness, reuseDelaySeconds = 0): Promise<void> {
  const created = await h.api.call('POST', '/v1/pools', {
    name: 'p',
    ...(reuseDelaySeconds ? { reuseDelaySeconds } : {}),
  });
  expect(created.status).toBe(201);
  for (const cidr of [...V4, ...V6])
    expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
}

/** The lease items of the table (Allocated and Released). */
async function leases(api: TestApi): Promise<Record<string, unknown>[]> {
  return (await allItems(api.container.table)).filter((i) => i.entity === 'lease');
}

/** Sum of the freed counters of each range (every shard). */
async function freedByRange(api: TestApi): Promise<Map<string, number>> {
  const sums = new Map<string, number>();
  for (const item of await allItems(api.container.table)) {
    if (item.entity !== 'freed') continue;
    const range = (item.PK as string).split('#')[2]!;
    sums.set(range, (sums.get(range) ?? 0) + (item.n as number));
  }
  return sums;
}

const rangesOf = (addresses: readonly Addr[]): string[] => [...new Set(addresses.map((a) => a.range))].sort();

export function limitsCases(engine: TestEngine): void {
  describe(`Wide batch claims stay within 100 items a transaction (${engine.name}; issue 33, item 1)`, () => {
    const harness = (): Promise<ReconcilerHarness> =>
      reconcilerHarness({ engine, overrides: { random: new SeededRandom(33) } });

    async function wideClaim(
      h: ReconcilerHarness,
      body: Record<string, unknown> = {},
    ): Promise<{ name: string; uid: string; addresses: Addr[] }> {
      const made = await h.claim('p', { name: 'wide', owner: owner('w'), ...WIDE, ...body });
      expect(made.addresses).toHaveLength(64);
      // The case is only one if the claim is wide (see the pool).
      expect(rangesOf(made.addresses).length).toBeGreaterThanOrEqual(36);
      return made;
    }

    it('releases a wide claim by DELETE, freeing every address and bumping each of its ranges once', async () => {
      // Prepare
      const h = await harness();
      await widePool(h);
      const made = await wideClaim(h);
      // Act
      const res = await h.api.call('DELETE', '/v1/pools/p/claims/wide');
      // Assess
      expect(res.status).toBe(204);
      expect(await leases(h.api)).toEqual([]);
      expect((await h.api.call('GET', '/v1/pools/p/claims/wide')).status).toBe(404);
      const freed = await freedByRange(h.api);
      expect([...freed.keys()].sort()).toEqual(rangesOf(made.addresses));
      expect([...freed.values()].every((n) => n === 1)).toBe(true);
    });

    it('releases a wide claim by owner release', async () => {
      const h = await harness();
      await widePool(h);
      await wideClaim(h);
      const res = await h.api.call('DELETE', '/v1/pools/p/owners/w');
      expect(res.status).toBe(200);
      expect(await leases(h.api)).toEqual([]);
      expect((await h.api.call('GET', '/v1/pools/p/claims/wide')).status).toBe(404);
    });

    it('releases an expired wide claim from the reconciler, and its expiry checkpoint moves on', async () => {
      const h = await harness();
      await widePool(h);
      await wideClaim(h, { ttlSeconds: 60 });
      h.clock.advance(EXPIRED_PAST_GRACE);
      const report = await h.run();
      expect(report.errors ?? []).toEqual([]);
      expect(await leases(h.api)).toEqual([]);
      expect((await h.api.call('GET', '/v1/pools/p/claims/wide')).status).toBe(404);
    });

    it('releases into a reuse delay: every address Released for the owner, and a second wide claim of another owner takes other addresses', async () => {
      const h = await harness();
      await widePool(h, 3600);
      const made = await wideClaim(h);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/wide')).status).toBe(204);
      const released = await leases(h.api);
      expect(released.map((l) => l.address).sort()).toEqual(made.addresses.map((a) => a.address).sort());
      expect(released.every((l) => l.state === 'Released')).toBe(true);
    });

    it('renews a wide claim to an earlier expiry', async () => {
      const h = await harness();
      await widePool(h);
      const made = await wideClaim(h, { ttlSeconds: 3600 });
      const res = await h.api.call('POST', '/v1/pools/p/claims/wide/renew', { ttlSeconds: 60 });
      expect(res.status).toBe(200);
      expect(res.body.expiresAt).toBe(new Date(T0 + 60_000).toISOString());
      const held = await leases(h.api);
      expect(held).toHaveLength(64);
      expect(held.every((l) => l.expiresAt === T0 + 60_000)).toBe(true);
      // An earlier expiry may free an address before a seal says: each range's counter moved.
      expect([...(await freedByRange(h.api)).keys()].sort()).toEqual(rangesOf(made.addresses));
    });

    it('commits a wide claim that replaces an expired wide claim of another owner in a reuse-delay pool', async () => {
      // Prepare: the expired claim holds 32 of the pool's 240 IPv4 and 280 IPv6 addresses
      const h = await harness();
      await widePool(h, 3600);
      const old = await wideClaim(h, { ttlSeconds: 60 });
      h.clock.advance(61_000);
      // Act: another owner asks for the same name
      const res = await h.api.call('POST', '/v1/pools/p/claims', {
        name: 'wide',
        owner: owner('x'),
        ...WIDE,
        ttlSeconds: 60,
      });
      // Assess: committed; the old claim's addresses are held for its owner, none of them given to the new one
      expect(res.status).toBe(201);
      const mine = new Set((res.body.addresses as Addr[]).map((a) => a.address));
      expect(old.addresses.some((a) => mine.has(a.address))).toBe(false);
      const held = (await leases(h.api)).filter((l) => l.state === 'Released');
      expect(held.map((l) => l.address).sort()).toEqual(old.addresses.map((a) => a.address).sort());
    });

    it('releases a wide claim committed in a range marked Terminating meanwhile (the retired-range path)', async () => {
      // Prepare: range 'going' (an IPv6 /126: c0 holds one address, two are free) is marked Terminating while a warm
      // container's cached view still says Ready; the view then offers exactly 32 free IPv6 addresses (30 /127s and
      // the two of 'going'), so the wide claim takes them all: 31 IPv6 ranges and about 22 IPv4 ones.
      const h = await harness();
      expect((await h.api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      for (const cidr of V4) expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
      for (const cidr of Array.from({ length: 30 }, (_, i) => v6('fd36', i, 1)))
        expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
      expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: 'fd35::/126', name: 'going' })).status).toBe(201);
      expect(
        (await h.api.call('POST', '/v1/pools/p/claims', { name: 'c0', owner: owner('c0'), addresses: ['fd35::3'] }))
          .status,
      ).toBe(201);
      const warm = h.api.sibling({ clock: new ManualClock(Date.now()), viewMaxAgeMs: 3_600_000 });
      expect((await warm.call('GET', '/v1/pools/p/ranges/going')).body.state).toBe('Ready');
      expect((await warm.call('GET', '/v1/pools/p')).status).toBe(200);
      expect((await h.api.call('DELETE', '/v1/pools/p/ranges/going')).status).toBe(202);
      // Act
      const res = await warm.call('POST', '/v1/pools/p/claims', { name: 'wide', owner: owner('w'), ...WIDE });
      // Assess: not an internal error; the fresh view has 30 IPv6 addresses, so the claim cannot be served, and the
      // commit made on the stale view was released whole
      expect(res.status).toBe(409);
      expect((await leases(h.api)).map((l) => l.claim)).toEqual(['c0']);
    });
  });

  describe(`A seals item stays within 400 KB at its widest (${engine.name}; issue 33, item 7)`, () => {
    it('holds a seal of every part of a /16 (34 parts), each listing 32 owners whose kind and name are 253 three-byte characters', async () => {
      // Prepare: the range's two bands cut into their parts (32 upper, 2 lower), and a reading that saw 32 holders
      const { table } = await engine.fresh('seals');
      const seals = tableStores(table, { shards: 4, cursorSecret: 'limits' }).seals;
      const cidr = parseCidr('10.40.0.0/16');
      const range = {
        range: {
          pool: 'p',
          name: 'wide',
          cidr: '10.40.0.0/16',
          family: 'IPv4',
          state: 'Ready',
          legacy: false,
          createdAt: '2035-01-01T00:00:00.000Z',
        },
        cidr,
      } as const;
      const lower = lowerBandSize(cidr);
      const band = (name: 'upper' | 'lower', from: bigint, to: bigint): Band => ({
        name,
        part: name,
        range,
        counters: ['wide'],
        from,
        to,
        excluded: [],
      });
      const parts = [...partsOf(band('upper', lower, capacity(cidr))), ...partsOf(band('lower', 0n, lower))];
      expect(parts).toHaveLength(34);
      const long = (tag: string): string => `${tag}${'\u20AC'.repeat(NameLimits.ownerField - tag.length)}`;
      const holders = Array.from({ length: TUNING.sealHoldersMax }, (_, i) => ({
        kind: long(`K${i}`),
        name: long(`n${i}`),
      }));
      const read = await seals.readSeals('p', ['wide']);
      // Act
      for (const part of parts) {
        const reading = new BandReading();
        for (const holder of holders) reading.taken({ expiring: false, heldFor: ownerIdentity(holder) }, part.counters);
        await seals.seal('p', 'wide', part.part, reading.sealAt(countersOf(read, part), part));
      }
      // Assess: every seal is there and holds, for anyone but its holders
      const item = await table.get(keys.seals('p', 'wide'));
      expect(plainItemSize(item!)).toBeLessThanOrEqual(ITEM_BYTES_LIMIT);
      const again = await seals.readSeals('p', ['wide']);
      const stranger = ownerIdentity({ kind: 'Pod', name: 'other' });
      expect(parts.filter((part) => sealHolds(again, part, stranger, T0)).length).toBe(34);
      expect(parts.filter((part) => sealHolds(again, part, ownerIdentity(holders[7]!), T0)).length).toBe(0);
    });
  });
}
