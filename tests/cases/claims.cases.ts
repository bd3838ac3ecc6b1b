import { describe, expect, it } from 'vitest';
import { testApi as testApiOn, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import type { ContainerOverrides } from '../../shared/adapters/composition.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import type { Table } from '../../shared/adapters/dynamodb/table.ts';
import { allItems, tableSnapshot } from '../support/items.ts';
import { reconcilerHarness, T0 } from '../support/reconciler.ts';
import { countingStores } from '../support/counting.ts';
import { bitmapHolds } from '../support/legacy.ts';
import { cryptoRandom } from '../../shared/adapters/system.ts';

/** Claims through the real HTTP handler, on one table engine. */
export function claimsCases(engine: TestEngine): void {
  const testApi = (overrides: ContainerOverrides = {}): Promise<TestApi> => testApiOn(overrides, {}, undefined, engine);

  type Addr = { address: string; family: string; range: string };
  const addressesOf = (body: Record<string, unknown>) => (body.addresses as Addr[]).map((a) => a.address);

  async function poolWith(api: TestApi, pool: string, cidrs: string[], exclude?: string[]): Promise<void> {
    expect((await api.call('POST', '/v1/pools', { name: pool, ...(exclude ? { exclude } : {}) })).status).toBe(201);
    for (const cidr of cidrs) expect((await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr })).status).toBe(201);
  }

  async function leaseItems(api: TestApi): Promise<Record<string, unknown>[]> {
    return (await allItems(api.container.table)).filter((i) => i.entity === 'lease');
  }

  describe(`Claims: dynamic allocation under concurrency (${engine.name})`, () => {
    it('gives 50 concurrent dynamic claims on a /20 50 distinct addresses, across several warm containers', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.0.0.0/20']);
      const containers = [api, api.sibling(), api.sibling(), api.sibling()];
      // Act
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          containers[i % containers.length]!.call('POST', '/v1/pools/p/claims', {
            name: `c${i}`,
            owner: owner(`u${i}`),
          }),
        ),
      );
      // Assess
      expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
      const addresses = results.flatMap((r) => addressesOf(r.body));
      expect(new Set(addresses).size).toBe(50);
      expect(new Set((await leaseItems(api)).map((l) => l.address)).size).toBe(50);
      // No hot key: each lease is its own partition.
      expect(new Set((await leaseItems(api)).map((l) => l.PK)).size).toBe(50);
    });

    it('gives exactly one of 16 concurrent requests for the same address a 201, the rest AlreadyAllocated', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.96.0.0/24']);
      const containers = [api, api.sibling()];
      // Act
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          containers[i % 2]!.call('POST', '/v1/pools/p/claims', {
            name: `c${i}`,
            owner: owner(`u${i}`),
            addresses: ['10.96.0.10'],
          }),
        ),
      );
      // Assess
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, ...Array(15).fill(409)]);
      expect(results.filter((r) => r.status === 409).every((r) => r.body.code === 'AlreadyAllocated')).toBe(true);
      const leases = await leaseItems(api);
      expect(leases.map((l) => l.address)).toEqual(['10.96.0.10']);
      // The losers left no claim behind.
      expect(((await api.call('GET', '/v1/pools/p/claims')).body.items ?? []).length).toBe(1);
    });

    it('fills a /24 with exactly 254 distinct addresses and then answers RangeFull', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['192.168.7.0/24']);
      const containers = [api, api.sibling(), api.sibling(), api.sibling()];
      // Act: 16 callers over 4 warm containers take turns until 254 claims are made.
      const results: Awaited<ReturnType<TestApi['call']>>[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async (_, worker) => {
          while (next < 254) {
            const i = next++;
            results.push(
              await containers[worker % 4]!.call('POST', '/v1/pools/p/claims', {
                name: `c${i}`,
                owner: owner(`u${i}`),
              }),
            );
          }
        }),
      );
      const extra = await api.sibling().call('POST', '/v1/pools/p/claims', { name: 'one-more', owner: owner('x') });
      // Assess
      expect(results.filter((r) => r.status !== 201).map((r) => r.body)).toEqual([]);
      expect(results.filter((r) => r.status === 201)).toHaveLength(254);
      const addresses = results.flatMap((r) => addressesOf(r.body));
      expect(new Set(addresses).size).toBe(254);
      expect(addresses).not.toContain('192.168.7.0');
      expect(addresses).not.toContain('192.168.7.255');
      expect(extra.status).toBe(409);
      expect(extra.body.code).toBe('RangeFull');
      expect((await api.call('GET', '/v1/pools/p')).body.utilization).toEqual({
        IPv4: { size: 254, used: 254, releasing: 0, free: 0 },
      });
    });

    it('returns the one freed address after a release on a full /29', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.1.0.0/29']);
      for (let i = 0; i < 6; i += 1)
        expect((await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(
          201,
        );
      const full = await api.call('POST', '/v1/pools/p/claims', { name: 'c6', owner: owner('u6') });
      expect(full.body.code).toBe('RangeFull');
      const freed = addressesOf((await api.call('GET', '/v1/pools/p/claims/c3')).body)[0];
      // Act
      expect((await api.call('DELETE', '/v1/pools/p/claims/c3')).status).toBe(204);
      const again = await api.sibling().call('POST', '/v1/pools/p/claims', { name: 'c7', owner: owner('u7') });
      // Assess
      expect(again.status).toBe(201);
      expect(addressesOf(again.body)).toEqual([freed]);
    });

    it('never hands out excluded addresses dynamically, but gives one when asked explicitly', async () => {
      // Prepare: a /28 (14 hosts, .1-.14) with .1-.10 excluded leaves 4 dynamic addresses.
      const api = await testApi();
      await poolWith(api, 'p', ['10.2.0.0/28'], ['10.2.0.0/29', '10.2.0.8', '10.2.0.9', '10.2.0.10']);
      // Act
      const dynamic = [];
      for (let i = 0; i < 5; i += 1)
        dynamic.push(await api.call('POST', '/v1/pools/p/claims', { name: `d${i}`, owner: owner(`d${i}`) }));
      const explicit = await api.call('POST', '/v1/pools/p/claims', {
        name: 'x',
        owner: owner('x'),
        addresses: ['10.2.0.9'],
      });
      // Assess
      expect(
        dynamic
          .slice(0, 4)
          .map((r) => addressesOf(r.body)[0])
          .sort(),
      ).toEqual(['10.2.0.11', '10.2.0.12', '10.2.0.13', '10.2.0.14']);
      expect(dynamic[4]!.body.code).toBe('RangeFull');
      expect(explicit.status).toBe(201);
    });

    it('allocates from an IPv6 /64 without materializing it and writes addresses canonically', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['2001:db8:0:1::/64']);
      // Act
      const dynamic = await api.call('POST', '/v1/pools/p/claims', {
        name: 'a',
        owner: owner('a'),
        ipFamilies: ['IPv6'],
      });
      const explicit = await api.call('POST', '/v1/pools/p/claims', {
        name: 'b',
        owner: owner('b'),
        addresses: ['2001:0DB8:0000:0001:0000:0000:0000:00fc'],
      });
      const pool = await api.call('GET', '/v1/pools/p');
      // Assess
      expect(dynamic.status).toBe(201);
      expect(addressesOf(dynamic.body)[0]).toMatch(/^2001:db8:0:1:/);
      expect(addressesOf(explicit.body)).toEqual(['2001:db8:0:1::fc']);
      expect((await api.call('GET', '/v1/pools/p/addresses/2001:db8:0:1:0:0:0:fc')).body.claim).toBe('b');
      expect(pool.body.utilization).toEqual({
        IPv6: { size: '18446744073709551615', used: 2, releasing: 0, free: '18446744073709551613' },
      });
    });
  });

  /** A pool 'p' whose one range, a /30, is full (its two hosts claimed as c0 and c1). */
  async function fullSlash30(): Promise<TestApi> {
    const api = await testApi();
    await poolWith(api, 'p', ['10.1.0.0/30']);
    for (let i = 0; i < 2; i += 1)
      expect((await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(201);
    return api;
  }

  /** A pool 'p' with one range 'old' (10.1.0.0/29) holding claim c0, so a DELETE of 'old' leaves it Terminating. */
  async function poolWithOld(): Promise<TestApi> {
    const api = await testApi();
    await poolWith(api, 'p', []);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.1.0.0/29', name: 'old' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/claims', { name: 'c0', owner: owner('u0') })).status).toBe(201);
    return api;
  }

  describe(`Claims: what RangeFull costs (${engine.name})`, () => {
    it('answers a cold container on a full range after one pool-view read and one read of the occupancy summary', async () => {
      // Prepare: a full /30
      const api = await fullSlash30();
      const counts = new Map<string, number>();
      const cold = api.sibling({ wrapStores: countingStores(counts), clock: new ManualClock(Date.now()) });
      // Act
      const full = await cold.call('POST', '/v1/pools/p/claims', { name: 'c2', owner: owner('u2') });
      // Assess
      expect(full.body.code).toBe('RangeFull');
      expect(counts.get('getPoolView')).toBe(1);
      expect(counts.get('readChunks')).toBe(1);
      expect(counts.get('takenAddresses') ?? 0).toBe(0);
      expect(counts.get('commitClaim') ?? 0).toBe(0);
    });

    it('answers a retry at once from the view it just read full, reading only one copy of the range generation', async () => {
      // Prepare: a container that has just been told RangeFull (its clock does not move: the retry comes at once)
      const api = await fullSlash30();
      const counts = new Map<string, number>();
      const warm = api.sibling({ wrapStores: countingStores(counts), clock: new ManualClock(Date.now()) });
      expect((await warm.call('POST', '/v1/pools/p/claims', { name: 'c2', owner: owner('u2') })).body.code).toBe(
        'RangeFull',
      );
      counts.clear();
      // Act
      const again = await warm.call('POST', '/v1/pools/p/claims', { name: 'c2', owner: owner('u2') });
      // Assess: the cached view's refusal is checked against the range generation (unchanged: the view is current);
      // neither the view nor the taken addresses are read again
      expect(again.body.code).toBe('RangeFull');
      expect(counts.get('takenAddresses') ?? 0).toBe(0);
      expect(counts.get('getPoolView') ?? 0).toBe(0);
      expect(counts.get('rangeGeneration')).toBe(1);
    });

    it('answers a warm container whose summary copy lags after reading the addresses it shows free, then the whole range, in bulk; and its retry after one bulk read', async () => {
      // Prepare: a /29 (6 hosts); a warm container takes 4 and keeps its summary copy (its clock does not move),
      // then another container takes the last 2, which that copy still shows free (as the stream's lag would)
      const api = await testApi();
      await poolWith(api, 'p', ['10.1.0.0/29']);
      const counts = new Map<string, number>();
      const warm = api.sibling({ wrapStores: countingStores(counts), clock: new ManualClock(Date.now()) });
      for (let i = 0; i < 4; i += 1)
        expect((await warm.call('POST', '/v1/pools/p/claims', { name: `w${i}`, owner: owner(`w${i}`) })).status).toBe(
          201,
        );
      for (let i = 0; i < 2; i += 1)
        expect((await api.call('POST', '/v1/pools/p/claims', { name: `o${i}`, owner: owner(`o${i}`) })).status).toBe(
          201,
        );
      counts.clear();
      // Act
      const full = await warm.call('POST', '/v1/pools/p/claims', { name: 'w4', owner: owner('w4') });
      const first = new Map(counts);
      counts.clear();
      const again = await warm.call('POST', '/v1/pools/p/claims', { name: 'w4', owner: owner('w4') });
      // Assess: the two addresses its copy shows free are read in one batch and found taken; RangeFull rests on a
      // consistent read of the range's six leases (issue 20: the summary never decides "used up"); the view is
      // confirmed by the generation; nothing is listed, no transaction is tried. The bulk read seals the range used up
      // (one write, at the counters read before its leases): the retry reads only the range's counters and seal
      // (nothing freed since), not its leases.
      expect(full.body.code).toBe('RangeFull');
      expect(Object.fromEntries(first)).toEqual({ leaseStates: 2, readSeals: 1, seal: 1, rangeGeneration: 1 });
      expect(again.body.code).toBe('RangeFull');
      expect(Object.fromEntries(counts)).toEqual({ readSeals: 1, rangeGeneration: 1 });
    });

    it('finds a range another container added when its cached view said RangeFull', async () => {
      // Prepare: a warm container sees its only range full; another container then adds a second range
      const api = await testApi();
      await poolWith(api, 'p', ['10.1.0.0/30']);
      const warm = api.sibling({ clock: new ManualClock(Date.now()) });
      for (let i = 0; i < 2; i += 1)
        expect((await warm.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(
          201,
        );
      expect((await warm.call('POST', '/v1/pools/p/claims', { name: 'c2', owner: owner('u2') })).body.code).toBe(
        'RangeFull',
      );
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/30' })).status).toBe(201);
      // Act: same instant for the warm container, so its view and full hint are both still cached
      const again = await warm.call('POST', '/v1/pools/p/claims', { name: 'c2', owner: owner('u2') });
      // Assess
      expect(again.status).toBe(201);
      expect(addressesOf(again.body)[0]).toMatch(/^10\.2\.0\.[12]$/);
    });
  });

  describe(`Claims: a range retired under a warm container's view (${engine.name}; issue 15, defect 5)`, () => {
    /** A pool 'p' with one range 'old' (10.1.0.0/29) holding claim c0, and a warm container whose cached view says 'old' is Ready. */
    async function warmViewOfOld(counts: Map<string, number>): Promise<{ api: TestApi; warm: TestApi }> {
      const api = await poolWithOld();
      // The warm container's clock does not move: its view of the pool stays cached however long the test takes.
      const warm = api.sibling({ wrapStores: countingStores(counts), clock: new ManualClock(Date.now()) });
      expect((await warm.call('GET', '/v1/pools/p/ranges/old')).body.state).toBe('Ready');
      // Another container marks 'old' Terminating (c0 depends on it, so it stays).
      expect((await api.call('DELETE', '/v1/pools/p/ranges/old')).status).toBe(202);
      counts.clear();
      return { api, warm };
    }

    it('releases a claim committed in a range marked Terminating meanwhile, and answers from the fresh view', async () => {
      // Prepare
      const counts = new Map<string, number>();
      const { api, warm } = await warmViewOfOld(counts);
      // Act: the cached view offers only 'old'
      const res = await warm.call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1') });
      // Assess: it did commit in 'old' (the cached view was used), found the range Terminating on the consistent
      // re-read, released the claim, and the fresh view serves no IPv4 range
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('MismatchedNetwork');
      expect(counts.get('commitClaim')).toBe(1);
      expect(counts.get('getPoolView')).toBe(1);
      const leases = await leaseItems(api);
      expect(leases.map((l) => l.claim)).toEqual(['c0']);
      expect((await allItems(api.container.table)).filter((i) => i.entity === 'claim').map((i) => i.name)).toEqual([
        'c0',
      ]);
    });

    it('gives the claim an address of a Ready range the warm view did not know yet', async () => {
      // Prepare: a second range, added after the warm container cached its view
      const counts = new Map<string, number>();
      const { api, warm } = await warmViewOfOld(counts);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/29', name: 'new' })).status).toBe(201);
      // Act
      const res = await warm.call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1') });
      // Assess: one commit in 'old' released, one in 'new' kept; 'old' holds only c0
      expect(res.status).toBe(201);
      expect(res.body.addresses).toEqual([
        expect.objectContaining({ range: 'new', address: expect.stringMatching(/^10\.2\.0\.[1-6]$/) }),
      ]);
      expect(counts.get('commitClaim')).toBe(2);
      const leases = await leaseItems(api);
      expect(leases.map((l) => [l.claim, l.range]).sort()).toEqual([
        ['c0', 'old'],
        ['c1', 'new'],
      ]);
    });

    it('gives back the addresses of a released dual-stack claim as free: the last IPv6 address it had taken is taken again', async () => {
      // Prepare: 'old' (IPv4, holding c0) and an IPv6 range with one free address left, both in a warm container's
      // cached view; then another container marks 'old' Terminating and adds a Ready IPv4 range 'new'
      const api = await poolWithOld();
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: 'fd00:1::/125', name: 'v6' })).status).toBe(201);
      const freeV6 = async () =>
        ((await api.call('GET', '/v1/pools/p')).body.utilization as { IPv6: { free: number } }).IPv6.free;
      for (let i = 0; (await freeV6()) > 1; i += 1)
        expect(
          (await api.call('POST', '/v1/pools/p/claims', { name: `v${i}`, owner: owner(`v${i}`), ipFamilies: ['IPv6'] }))
            .status,
        ).toBe(201);
      const counts = new Map<string, number>();
      const warm = api.sibling({ wrapStores: countingStores(counts), clock: new ManualClock(Date.now()) });
      expect((await warm.call('GET', '/v1/pools/p/ranges/old')).body.state).toBe('Ready');
      expect((await api.call('DELETE', '/v1/pools/p/ranges/old')).status).toBe(202);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/29', name: 'new' })).status).toBe(201);
      // Act: the warm view offers IPv4 only in 'old'; the claim commits there and with the last IPv6 address, is
      // released (its range was retired), and is allocated again on the fresh view
      const res = await warm.call('POST', '/v1/pools/p/claims', {
        name: 'c1',
        owner: owner('u1'),
        ipFamilyPolicy: 'RequireDualStack',
        ipFamilies: ['IPv4', 'IPv6'],
      });
      // Assess: the released IPv6 address is not kept as taken by the container's own mark
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect((res.body.addresses as Addr[]).map((a) => a.range)).toEqual(['new', 'v6']);
      expect(counts.get('commitClaim')).toBe(2);
    });

    it('releases a whole batch committed in the retired range and takes it again, whole, from the Ready range', async () => {
      // Prepare
      const counts = new Map<string, number>();
      const { api, warm } = await warmViewOfOld(counts);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/29', name: 'new' })).status).toBe(201);
      // Act
      const res = await warm.call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1'), count: 3 });
      // Assess: two commits (the first in 'old', released whole); every address of the answer is in 'new'
      expect(res.status).toBe(201);
      expect((res.body.addresses as Addr[]).map((a) => a.range)).toEqual(['new', 'new', 'new']);
      expect(counts.get('commitClaim')).toBe(2);
      const leases = await leaseItems(api);
      expect(leases.map((l) => [l.claim, l.range]).sort()).toEqual([
        ['c0', 'old'],
        ['c1', 'new'],
        ['c1', 'new'],
        ['c1', 'new'],
      ]);
    });
  });

  /** Picks a store call of a watched table: its method, the partitions it touches, and whether it committed. */
  type CallMatch = (method: string, partitions: readonly string[], committed: boolean) => boolean;

  /**
   * The shared table as one container sees it: its reads counted per partition key (`reads`), and hooks that run once,
   * right after the first call they match returns (`after`), for another container to act between two of its calls.
   */
  function watchedTable(table: Table): {
    table: Table;
    reads: Map<string, number>;
    after: (match: CallMatch, run: () => Promise<void>) => void;
  } {
    const reads = new Map<string, number>();
    const hooks: { match: CallMatch; run: () => Promise<void> }[] = [];
    const read = (partitions: readonly string[]) => partitions.forEach((pk) => reads.set(pk, (reads.get(pk) ?? 0) + 1));
    const fire = async (method: string, partitions: readonly string[], committed: boolean) => {
      const at = hooks.findIndex((h) => h.match(method, partitions, committed));
      if (at >= 0) await hooks.splice(at, 1)[0]!.run();
    };
    const watched: Table = {
      name: table.name,
      async get(key) {
        read([key.PK]);
        const out = await table.get(key);
        await fire('get', [key.PK], false);
        return out;
      },
      async batchGet(keys, attributes) {
        read(keys.map((k) => k.PK));
        return table.batchGet(keys, attributes);
      },
      async query(query) {
        if (!query.index) read([query.partition]);
        const out = await table.query(query);
        await fire('query', [query.partition], false);
        return out;
      },
      write: (op) => table.write(op),
      async transact(ops) {
        const out = await table.transact(ops);
        await fire(
          'transact',
          ops.map((op) => (op.kind === 'put' ? (op.item.PK as string) : op.key.PK)),
          out === undefined,
        );
        return out;
      },
      describe: () => table.describe(),
    };
    return { table: watched, reads, after: (match, run) => hooks.push({ match, run }) };
  }

  /**
   * Once, right after the store call `match` picks, another container marks 'old' Terminating (DELETE: 202) and adds
   * 'new' (10.2.0.0/29: 201); the statuses they got, for the test to check that the hook ran.
   */
  function retireOldAfter(api: TestApi, watch: ReturnType<typeof watchedTable>, match: CallMatch): number[] {
    const between: number[] = [];
    watch.after(match, async () => {
      between.push((await api.call('DELETE', '/v1/pools/p/ranges/old')).status);
      between.push((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/29', name: 'new' })).status);
    });
    return between;
  }

  const readsOf = (reads: Map<string, number>, prefix: string) =>
    [...reads].filter(([pk]) => pk.startsWith(prefix)).reduce((sum, [, n]) => sum + n, 0);

  describe(`Claims: the post-commit check without the pool's partition (${engine.name})`, () => {
    it("checks each claim of a warm container with one read of one range-generation copy, and reads nothing of the pool's partition", async () => {
      // Prepare: a warm container (its clock does not move, so its view stays cached) that has made one claim
      const api = await testApi();
      await poolWith(api, 'p', ['10.9.0.0/24']);
      const watch = watchedTable(api.container.table);
      const warm = api.sibling({ table: watch.table, clock: new ManualClock(Date.now()) });
      expect((await warm.call('POST', '/v1/pools/p/claims', { name: 'w0', owner: owner('w0') })).status).toBe(201);
      watch.reads.clear();
      // Act
      const results = [];
      for (let i = 1; i <= 5; i += 1)
        results.push(await warm.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) }));
      // Assess: every pool-level read of the five allocations was one GetItem of a generation copy (RGEN#p#<copy>)
      expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(readsOf(watch.reads, 'POOL#')).toBe(0);
      expect(readsOf(watch.reads, 'RGEN#p#')).toBe(5);
    });

    it("keeps a busy container's view past its maximum age while each check finds its generation current", async () => {
      // Prepare: a container whose clock moves 600 ms between claims: past the view's 1 s maximum age every other claim
      const api = await testApi();
      await poolWith(api, 'p', ['10.9.0.0/24']);
      const watch = watchedTable(api.container.table);
      const clock = new ManualClock(Date.now());
      const busy = api.sibling({ table: watch.table, clock });
      expect((await busy.call('POST', '/v1/pools/p/claims', { name: 'w0', owner: owner('w0') })).status).toBe(201);
      watch.reads.clear();
      // Act
      const results = [];
      for (let i = 1; i <= 5; i += 1) {
        clock.advance(600);
        results.push(await busy.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) }));
      }
      // Assess: 3 s of claims read the pool's partition not once (each check renewed the view it confirmed)
      expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(readsOf(watch.reads, 'POOL#')).toBe(0);
      expect(readsOf(watch.reads, 'RGEN#p#')).toBe(5);
    });

    it('catches a range marked Terminating between the commit and the check, and answers from a Ready range', async () => {
      // Prepare: range 'old' (c0 depends on it, so a DELETE leaves it Terminating); a warm container whose view shows 'old' only
      const api = await poolWithOld();
      const watch = watchedTable(api.container.table);
      const warm = api.sibling({ table: watch.table, clock: new ManualClock(Date.now()) });
      expect((await warm.call('GET', '/v1/pools/p/ranges/old')).body.state).toBe('Ready');
      // Right after c1's claim transaction commits (before its check), another container marks 'old' Terminating and adds 'new'.
      const between = retireOldAfter(
        api,
        watch,
        (method, partitions, committed) => method === 'transact' && committed && partitions.includes('CLAIM#p#c1'),
      );
      // Act
      const res = await warm.call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1') });
      // Assess: the hook ran; the claim committed in 'old' was released and taken again from 'new'
      expect(between).toEqual([202, 201]);
      expect(res.status).toBe(201);
      expect((res.body.addresses as Addr[]).map((a) => a.range)).toEqual(['new']);
      expect((await leaseItems(api)).map((l) => [l.claim, l.range]).sort()).toEqual([
        ['c0', 'old'],
        ['c1', 'new'],
      ]);
    });

    it('never frees an address that an identical request was answered with meanwhile (issue 33, item 2)', async () => {
      for (const request of [{ name: 'c1' }, { generateName: 'c-' }]) {
        // Prepare: a warm container whose view shows 'old' only
        const api = await poolWithOld();
        const watch = watchedTable(api.container.table);
        const warm = api.sibling({ table: watch.table, clock: new ManualClock(Date.now()) });
        expect((await warm.call('GET', '/v1/pools/p/ranges/old')).body.state).toBe('Ready');
        const body = { ...request, owner: owner('u1') };
        // Right after the warm container's claim commits in 'old' (before its check), another container retires 'old',
        // adds 'new', and answers an identical request (a client's retry)
        const between: number[] = [];
        let retry: { status: number; body: Record<string, unknown> } | undefined;
        const isClaimCommit = (method: string, partitions: readonly string[], committed: boolean) =>
          method === 'transact' &&
          committed &&
          partitions.some((pk) => pk.startsWith('CLAIM#p#c') && pk !== 'CLAIM#p#c0');
        watch.after(isClaimCommit, async () => {
          between.push((await api.call('DELETE', '/v1/pools/p/ranges/old')).status);
          between.push((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/29', name: 'new' })).status);
          retry = await api.call('POST', '/v1/pools/p/claims', body);
        });
        // Act
        const res = await warm.call('POST', '/v1/pools/p/claims', body);
        // Assess: the retry ran between the commit and the check; both answers name the same addresses (the claim is
        // kept as answered, in the retired range, which drains it), which the store holds for that claim and no other
        expect(between).toEqual([202, 201]);
        expect(retry?.status).toBe(200);
        expect([200, 201]).toContain(res.status);
        expect(addressesOf(retry!.body)).toEqual(addressesOf(res.body));
        const leases = (await leaseItems(api)).filter((l) => l.claim !== 'c0');
        expect(leases.map((l) => l.address)).toEqual(addressesOf(res.body));
      }
    });

    it('answers a retry of a claim whose range was retired since with that claim, and frees nothing (issue 33, item 2; black-box run)', async () => {
      // Prepare: claim c answered 201 in 'old'; 'old' retired (202, c holds it) and 'new' added
      const api = await poolWithOld();
      const first = await api.call('POST', '/v1/pools/p/claims', { name: 'c', owner: owner('uc') });
      expect(first.status).toBe(201);
      expect((await api.call('DELETE', '/v1/pools/p/ranges/old')).status).toBe(202);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.2.0.0/29', name: 'new' })).status).toBe(201);
      // Act: the client's retry of the same request, then another client asking for c's address
      const retry = await api.call('POST', '/v1/pools/p/claims', { name: 'c', owner: owner('uc') });
      const thief = await api.call('POST', '/v1/pools/p/claims', {
        name: 'thief',
        owner: owner('t'),
        addresses: addressesOf(first.body),
      });
      // Assess: the same claim, byte for byte; its address still its own
      expect(retry.status).toBe(200);
      expect(JSON.stringify(retry.body)).toBe(JSON.stringify(first.body));
      expect(thief.status).toBe(422);
      expect((await api.call('GET', `/v1/pools/p/addresses/${addressesOf(first.body)[0]}`)).body).toMatchObject({
        claim: 'c',
      });
    });

    it("catches a range marked Terminating right after the view's query, before the claim commits", async () => {
      // Prepare: as above, but the container is cold: the claim reads the view itself, and 'old' is marked right after
      // that read's query of the pool's partition returns (so the view says Ready, and its generation must be the older one)
      const api = await poolWithOld();
      const watch = watchedTable(api.container.table);
      const cold = api.sibling({ table: watch.table, clock: new ManualClock(Date.now()) });
      const between = retireOldAfter(
        api,
        watch,
        (method, partitions) => method === 'query' && partitions.includes('POOL#p'),
      );
      // Act
      const res = await cold.call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1') });
      // Assess
      expect(between).toEqual([202, 201]);
      expect(res.status).toBe(201);
      expect((res.body.addresses as Addr[]).map((a) => a.range)).toEqual(['new']);
      expect((await leaseItems(api)).map((l) => [l.claim, l.range]).sort()).toEqual([
        ['c0', 'old'],
        ['c1', 'new'],
      ]);
    });
  });

  describe(`Claims: dual-stack, idempotency and release (${engine.name})`, () => {
    it('writes a dual-stack claim all or nothing', async () => {
      // Prepare: the IPv6 range holds exactly one address (a /127), then it is taken.
      const api = await testApi();
      await poolWith(api, 'p', ['10.3.0.0/24', 'fd00::/127']);
      const first = await api.call('POST', '/v1/pools/p/claims', {
        name: 'a',
        owner: owner('a'),
        ipFamilyPolicy: 'RequireDualStack',
      });
      expect(first.status).toBe(201);
      expect((first.body.addresses as Addr[]).map((a) => a.family)).toEqual(['IPv4', 'IPv6']);
      expect(addressesOf(first.body)[1]).toBe('fd00::1');
      // Act
      const second = await api.call('POST', '/v1/pools/p/claims', {
        name: 'b',
        owner: owner('b'),
        ipFamilyPolicy: 'RequireDualStack',
      });
      // Assess: no IPv4 lease was left behind by the failed claim.
      expect(second.status).toBe(409);
      expect(second.body.code).toBe('RangeFull');
      expect((await leaseItems(api)).map((l) => l.claim)).toEqual(['a', 'a']);
      expect((await api.call('GET', '/v1/pools/p/claims/b')).status).toBe(404);
    });

    it('returns the same claim for a repeated request and 409 for a different spec', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.4.0.0/24']);
      const spec = { name: 'web', owner: owner('w'), ipFamilies: ['IPv4'] };
      const first = await api.call('POST', '/v1/pools/p/claims', spec);
      // Act
      const again = await api.sibling().call('POST', '/v1/pools/p/claims', spec);
      const different = await api.call('POST', '/v1/pools/p/claims', { ...spec, ttlSeconds: 60 });
      // Assess
      expect(first.status).toBe(201);
      expect(again.status).toBe(200);
      expect(addressesOf(again.body)).toEqual(addressesOf(first.body));
      expect(different.status).toBe(409);
      expect(different.body.code).toBe('Conflict');
      expect(await leaseItems(api)).toHaveLength(1);
    });

    it('finds a claim made from generateName again when the same owner retries', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.5.0.0/24']);
      const spec = { generateName: 'vm-nic', owner: owner('vm-1', 'VirtualMachine') };
      // Act
      const first = await api.call('POST', '/v1/pools/p/claims', spec);
      const retry = await api.sibling().call('POST', '/v1/pools/p/claims', spec);
      const otherOwner = await api.call('POST', '/v1/pools/p/claims', {
        ...spec,
        owner: owner('vm-2', 'VirtualMachine'),
      });
      // Assess
      expect(first.status).toBe(201);
      expect(first.body.name).toMatch(/^vm-nic-[a-z0-9]{5}$/);
      expect(retry.status).toBe(200);
      expect(retry.body.name).toBe(first.body.name);
      expect(addressesOf(retry.body)).toEqual(addressesOf(first.body));
      expect(otherOwner.status).toBe(201);
      expect(otherOwner.body.name).not.toBe(first.body.name);
    });

    it('draws another suffix when a generated name is taken by another claim (issue 33, item 8)', async () => {
      // Prepare: claim 'vm-nic-aaaaa' of another owner, and a container whose first suffix is 'aaaaa'
      const api = await testApi();
      await poolWith(api, 'p', ['10.5.0.0/24']);
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'vm-nic-aaaaa', owner: owner('vm-0', 'VirtualMachine') }))
          .status,
      ).toBe(201);
      const suffixes = ['aaaaa', 'bbbbb'];
      const random = { ...cryptoRandom, suffix: (length: number) => suffixes.shift() ?? cryptoRandom.suffix(length) };
      // Act
      const res = await api
        .sibling({ random })
        .call('POST', '/v1/pools/p/claims', { generateName: 'vm-nic-', owner: owner('vm-1', 'VirtualMachine') });
      // Assess
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.name).toBe('vm-nic-bbbbb');
      expect((await leaseItems(api)).map((l) => l.claim).sort()).toEqual(['vm-nic-aaaaa', 'vm-nic-bbbbb']);
    });

    it('deletes idempotently, honours If-Match, and a stale release cannot free a reassigned address', async () => {
      // Prepare
      const clock = new ManualClock();
      const api = await testApi({ clock });
      await poolWith(api, 'p', ['10.6.0.0/30']);
      const a = await api.call('POST', '/v1/pools/p/claims', {
        name: 'a',
        owner: owner('a'),
        addresses: ['10.6.0.1'],
        ttlSeconds: 30,
      });
      expect(a.status).toBe(201);
      // Act: a's lease expires and b takes the address; then a stale delete of a arrives.
      clock.advance(31_000);
      const b = await api.call('POST', '/v1/pools/p/claims', { name: 'b', owner: owner('b'), addresses: ['10.6.0.1'] });
      const mismatch = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': '"7"' });
      const staleDelete = await api.call('DELETE', '/v1/pools/p/claims/a');
      const absentDelete = await api.call('DELETE', '/v1/pools/p/claims/a');
      // Assess
      expect(b.status).toBe(201);
      expect(mismatch.status).toBe(412);
      expect(mismatch.body.code).toBe('PreconditionFailed');
      expect(staleDelete.status).toBe(204);
      expect(absentDelete.status).toBe(204);
      expect((await api.call('GET', '/v1/pools/p/addresses/10.6.0.1')).body.claim).toBe('b');
    });
  });

  describe(`Claims: labels (${engine.name}; issue 21)`, () => {
    const cni = {
      'cni.ipam/network': 'pods',
      'cni.ipam/node': 'node-1',
      'cni.ipam/container-id': 'f'.repeat(64),
      'cni.ipam/ifname': 'eth0',
    };

    /** Every claim name a selector lists, page by page (`limit` each); the pages' sizes too. */
    async function listAll(api: TestApi, query: string, limit: number): Promise<{ names: string[]; pages: number[] }> {
      const names: string[] = [];
      const pages: number[] = [];
      let cursor: string | undefined;
      do {
        const res = await api.call(
          'GET',
          `/v1/pools/p/claims?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(res.status).toBe(200);
        const items = res.body.items ?? [];
        names.push(...items.map((c) => c.name as string));
        pages.push(items.length);
        cursor = res.body.nextCursor as string | undefined;
      } while (cursor !== undefined && pages.length < 1000);
      return { names, pages };
    }

    it('returns the labels with every representation, answers a repeat 200 and other labels 409, and copies them onto the lease (the address history reads them there)', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.30.0.0/24']);
      const spec = { name: 'web', owner: owner('w'), labels: cni };
      // Act
      const made = await api.call('POST', '/v1/pools/p/claims', spec);
      // The same labels in another order are the same request.
      const again = await api
        .sibling()
        .call('POST', '/v1/pools/p/claims', { ...spec, labels: Object.fromEntries(Object.entries(cni).reverse()) });
      const otherValue = await api.call('POST', '/v1/pools/p/claims', {
        ...spec,
        labels: { ...cni, 'cni.ipam/ifname': 'eth1' },
      });
      const fewer = await api.call('POST', '/v1/pools/p/claims', { ...spec, labels: { 'cni.ipam/network': 'pods' } });
      const none = await api.call('POST', '/v1/pools/p/claims', { name: 'web', owner: owner('w') });
      const got = await api.call('GET', '/v1/pools/p/claims/web');
      const listed = await api.call('GET', '/v1/pools/p/claims');
      // Assess
      expect(made.status).toBe(201);
      expect(made.body.labels).toEqual(cni);
      expect(again.status).toBe(200);
      expect(again.body.labels).toEqual(cni);
      expect(addressesOf(again.body)).toEqual(addressesOf(made.body));
      for (const conflict of [otherValue, fewer, none]) {
        expect(conflict.status).toBe(409);
        expect(conflict.body.code).toBe('Conflict');
      }
      expect(got.body.labels).toEqual(cni);
      expect(listed.body.items!.map((c) => c.labels)).toEqual([cni]);
      const leases = await leaseItems(api);
      expect(leases).toHaveLength(1);
      expect(leases[0]!.labels).toEqual(cni);
    });

    it('answers {} for a claim without labels, and takes labels {} as the same request as no labels', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.31.0.0/24']);
      // Act
      const made = await api.call('POST', '/v1/pools/p/claims', { name: 'plain', owner: owner('a') });
      const again = await api.call('POST', '/v1/pools/p/claims', { name: 'plain', owner: owner('a'), labels: {} });
      const labelled = await api.call('POST', '/v1/pools/p/claims', {
        name: 'plain',
        owner: owner('a'),
        labels: { app: 'web' },
      });
      // Assess
      expect(made.status).toBe(201);
      expect(made.body.labels).toEqual({});
      expect(again.status).toBe(200);
      expect((await api.call('GET', '/v1/pools/p/claims/plain')).body.labels).toEqual({});
      expect(labelled.status).toBe(409);
    });

    it('refuses bad labels with 400 InvalidArgument naming the label and the rule, and writes nothing', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.32.0.0/24']);
      const before = await tableSnapshot(api.container.table);
      const tooMany = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
      // Act
      const answers = await Promise.all([
        api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), labels: tooMany }),
        api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), labels: { 'Bad/key': 'v' } }),
        api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), labels: { id: 'f'.repeat(129) } }),
        api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), labels: { app: 7 } }),
        api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), labels: ['app=web'] }),
      ]);
      // Assess
      expect(answers.map((a) => [a.status, a.body.code])).toEqual(Array(5).fill([400, 'InvalidArgument']));
      expect(answers[0]!.body.detail).toBe('labels holds 33 labels; a claim may have at most 32.');
      expect(answers[1]!.body.detail).toMatch(/^Label "Bad\/key" is not valid: its prefix must be a DNS subdomain/);
      expect(answers[2]!.body.detail).toMatch(/^Label "id" is not valid: its value must be empty or 1-128/);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
      // 32 labels at every limit are accepted.
      const longest = Object.fromEntries(
        Array.from({ length: 32 }, (_, i) => [
          `${'p'.repeat(250)}${String(i).padStart(2, '0')}/${'n'.repeat(63)}`,
          'v'.repeat(128),
        ]),
      );
      const full = await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), labels: longest });
      expect(full.status).toBe(201);
      expect(full.body.labels).toEqual(longest);
    });

    it('lists only the claims a selector matches, across pages, even when a page matches none', async () => {
      // Prepare: 60 claims; every third is on node-1, every fifth is on the other network too.
      const api = await testApi();
      await poolWith(api, 'p', ['10.33.0.0/24']);
      const names = Array.from({ length: 60 }, (_, i) => `c${String(i).padStart(2, '0')}`);
      const labelsOf = (i: number) => ({
        'cni.ipam/node': i % 3 === 0 ? 'node-1' : 'node-2',
        'cni.ipam/network': i % 5 === 0 ? 'storage' : 'pods',
        ...(i >= 56 ? { last: '' } : {}),
      });
      for (let i = 0; i < names.length; i += 10) {
        const batch = names
          .slice(i, i + 10)
          .map((name, j) =>
            api.call('POST', '/v1/pools/p/claims', { name, owner: owner(name), labels: labelsOf(i + j) }),
          );
        expect((await Promise.all(batch)).map((r) => r.status)).toEqual(Array(batch.length).fill(201));
      }
      const expected = (pick: (i: number) => boolean) => names.filter((_, i) => pick(i));
      // Act
      const node1 = await listAll(api, 'labelSelector=cni.ipam/node=node-1', 4);
      const both = await listAll(
        api,
        `labelSelector=${encodeURIComponent('cni.ipam/node=node-1,cni.ipam/network==storage')}`,
        3,
      );
      const last = await listAll(api, 'labelSelector=last=', 5);
      const nothing = await listAll(api, 'labelSelector=cni.ipam/node=node-3', 7);
      const everything = await listAll(api, 'labelSelector=', 25);
      // Assess: every match once, in name order, on pages no longer than the limit.
      expect(node1.names).toEqual(expected((i) => i % 3 === 0));
      expect(Math.max(...node1.pages)).toBeLessThanOrEqual(4);
      expect(both.names).toEqual(expected((i) => i % 15 === 0));
      expect(last.names).toEqual(['c56', 'c57', 'c58', 'c59']);
      // The matches are all at the end: the first pages filtered out everything and still carried a cursor.
      expect(last.pages[0]).toBe(0);
      expect(last.pages.length).toBeGreaterThan(1);
      expect(nothing.names).toEqual([]);
      expect(everything.names).toEqual(names);
    });

    it('combines a selector with the owner filter', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.34.0.0/24']);
      for (const [name, uid, app] of [
        ['a', 'u1', 'web'],
        ['b', 'u1', 'db'],
        ['c', 'u2', 'web'],
        ['d', 'u1', 'web'],
      ] as const) {
        expect(
          (await api.call('POST', '/v1/pools/p/claims', { name, owner: owner(uid), labels: { app } })).status,
        ).toBe(201);
      }
      // Act
      const listed = await listAll(api, 'owner=u1&labelSelector=app=web', 1);
      // Assess
      expect(listed.names).toEqual(['a', 'd']);
    });

    it.each([['app!=web'], ['app'], ['app in (web)'], ['-app=web'], ['app=web,']])(
      'refuses the selector %j with 400 InvalidArgument',
      async (selector) => {
        // Prepare
        const api = await testApi();
        await poolWith(api, 'p', ['10.35.0.0/24']);
        // Act
        const res = await api.call('GET', `/v1/pools/p/claims?labelSelector=${encodeURIComponent(selector)}`);
        // Assess
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('InvalidArgument');
      },
    );

    it('refuses a selector of more pairs than a claim may have labels with 400 InvalidArgument, never a 500', async () => {
      // Prepare: a claim could match 32 pairs at most; 33 distinct ones, or 300 (an expression DynamoDB refuses), match nothing
      const api = await testApi();
      await poolWith(api, 'p', ['10.37.0.0/24']);
      const selector = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',');
      // Act
      const most = await api.call('GET', `/v1/pools/p/claims?labelSelector=${selector(32)}`);
      const answers = await Promise.all(
        [33, 300].map((n) => api.call('GET', `/v1/pools/p/claims?labelSelector=${selector(n)}`)),
      );
      // Assess
      expect(most.status).toBe(200);
      expect(answers.map((a) => [a.status, a.body.code])).toEqual([
        [400, 'InvalidArgument'],
        [400, 'InvalidArgument'],
      ]);
      expect(answers[0]!.body.detail).toMatch(/at most 32/);
    });

    it("puts a claim's labels on the reconciler's event about it", async () => {
      // Prepare: a labelled claim expires
      const h = await reconcilerHarness({ engine });
      await h.pool('p', ['10.36.0.0/24']);
      const made = await h.claim('p', { name: 'web', owner: owner('w'), ttlSeconds: 60, labels: cni });
      h.clock.advance(3_600_000);
      // Act
      await h.run();
      // Assess
      const events = (await h.api.call('GET', '/v1/pools/p/events')).body.items!;
      const expired = events.filter((e) => e.object === `claim/${made.name}`);
      expect(expired.map((e) => [e.reason, e.labels])).toEqual([['ClaimExpired', cni]]);
    });
  });

  describe(`Claims: batches (${engine.name}; issue 13)`, () => {
    it('refuses a batch of 32 in a /27 with 30 free as a whole, writing nothing, and then gives a batch of 30', async () => {
      // Prepare: a /27 holds 30 hosts, all free
      const api = await testApi();
      await poolWith(api, 'p', ['10.8.0.0/27']);
      const before = await tableSnapshot(api.container.table);
      // Act
      const refused = await api.call('POST', '/v1/pools/p/claims', { name: 'big', owner: owner('b'), count: 32 });
      const after = await tableSnapshot(api.container.table);
      const fits = await api.call('POST', '/v1/pools/p/claims', { name: 'fits', owner: owner('f'), count: 30 });
      // Assess
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('RangeFull');
      expect(after).toEqual(before);
      expect(fits.status).toBe(201);
      expect(new Set(addressesOf(fits.body)).size).toBe(30);
      expect((await leaseItems(api)).every((l) => l.claim === 'fits')).toBe(true);
      expect((await api.call('GET', '/v1/pools/p')).body.utilization).toEqual({
        IPv4: { size: 30, used: 30, releasing: 0, free: 0 },
      });
    });

    it('refuses a batch bigger than what is left after other claims, and leaves the other claims as they were', async () => {
      // Prepare: a /28 (14 hosts) with 10 taken by single claims leaves 4
      const api = await testApi();
      await poolWith(api, 'p', ['10.8.1.0/28']);
      for (let i = 0; i < 10; i += 1)
        expect((await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(
          201,
        );
      const before = await tableSnapshot(api.container.table);
      // Act: from a cold container too, whose view of the summary is fresh
      const refused = await api
        .sibling()
        .call('POST', '/v1/pools/p/claims', { name: 'five', owner: owner('five'), count: 5 });
      const after = await tableSnapshot(api.container.table);
      const four = await api.call('POST', '/v1/pools/p/claims', { name: 'four', owner: owner('four'), count: 4 });
      // Assess
      expect(refused.body.code).toBe('RangeFull');
      expect(after).toEqual(before);
      expect(four.status).toBe(201);
      expect(addressesOf(four.body)).toHaveLength(4);
      expect(new Set((await leaseItems(api)).map((l) => l.address)).size).toBe(14);
    });

    it('gives 16 concurrent batch claims of 8 on a /24 128 distinct addresses, each claim all its 8 leases', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.9.0.0/24']);
      const containers = [api, api.sibling(), api.sibling(), api.sibling()];
      // Act
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          containers[i % containers.length]!.call('POST', '/v1/pools/p/claims', {
            name: `b${i}`,
            owner: owner(`u${i}`),
            count: 8,
          }),
        ),
      );
      // Assess
      expect(results.map((r) => r.status)).toEqual(Array(16).fill(201));
      expect(results.every((r) => addressesOf(r.body).length === 8)).toBe(true);
      const addresses = results.flatMap((r) => addressesOf(r.body));
      expect(new Set(addresses).size).toBe(128);
      // The leases are exactly the claims' addresses, each held by the claim that answered it.
      const leases = await leaseItems(api);
      const answered = results.flatMap((r) => addressesOf(r.body).map((a) => `${a} ${String(r.body.name)}`)).sort();
      expect(leases.map((l) => `${String(l.address)} ${String(l.claim)}`).sort()).toEqual(answered);
    });

    it('never leaves a partial batch when 16 concurrent batches of 8 contend for a /25 that holds only 15 of them', async () => {
      // Prepare: 126 hosts, 128 asked for: at least one batch must be refused
      const api = await testApi();
      await poolWith(api, 'p', ['10.9.1.0/25']);
      const containers = [api, api.sibling(), api.sibling(), api.sibling()];
      // Act
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          containers[i % containers.length]!.call('POST', '/v1/pools/p/claims', {
            name: `b${i}`,
            owner: owner(`u${i}`),
            count: 8,
          }),
        ),
      );
      // Assess: every answer is a whole batch or RangeFull (never a 5xx), and the table holds exactly the whole batches
      const won = results.filter((r) => r.status === 201);
      const refused = results.filter((r) => r.status !== 201);
      // RangeFull only when fewer than 8 are free (issue 20: read, not assumed): at least 119 taken, so 15 batches won.
      expect(won).toHaveLength(15);
      expect(refused).toHaveLength(1);
      expect(refused.map((r) => r.body.code)).toEqual(refused.map(() => 'RangeFull'));
      expect(won.every((r) => addressesOf(r.body).length === 8)).toBe(true);
      const leases = await leaseItems(api);
      expect(leases).toHaveLength(8 * won.length);
      expect(new Set(leases.map((l) => l.address)).size).toBe(8 * won.length);
      const claimItems = (await allItems(api.container.table))
        .filter((i) => i.entity === 'claim')
        .map((i) => i.name)
        .sort();
      expect(claimItems).toEqual(won.map((r) => r.body.name).sort());
      for (const r of won)
        expect(
          leases
            .filter((l) => l.claim === r.body.name)
            .map((l) => l.address)
            .sort(),
        ).toEqual([...addressesOf(r.body)].sort());
    });

    it('returns the same set for an idempotent retry, by name and by generateName, and 409 for another count', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.10.0.0/24']);
      const named = { name: 'set', owner: owner('s'), count: 6 };
      const generated = { generateName: 'vm', owner: owner('vm-1', 'VirtualMachine'), count: 3 };
      const first = await api.call('POST', '/v1/pools/p/claims', named);
      const firstGenerated = await api.call('POST', '/v1/pools/p/claims', generated);
      // Act
      const again = await api.sibling().call('POST', '/v1/pools/p/claims', named);
      const againGenerated = await api.sibling().call('POST', '/v1/pools/p/claims', generated);
      const otherCount = await api.call('POST', '/v1/pools/p/claims', { ...named, count: 5 });
      // Assess
      expect(first.status).toBe(201);
      expect(first.body.count).toBe(6);
      expect(first.body.ipFamilies).toEqual(['IPv4']);
      expect(again.status).toBe(200);
      expect(addressesOf(again.body)).toEqual(addressesOf(first.body));
      expect(againGenerated.status).toBe(200);
      expect(againGenerated.body.name).toBe(firstGenerated.body.name);
      expect(addressesOf(againGenerated.body)).toEqual(addressesOf(firstGenerated.body));
      expect(otherCount.status).toBe(409);
      expect(otherCount.body.code).toBe('Conflict');
      expect(await leaseItems(api)).toHaveLength(9);
    });

    it('treats count 1 as the request without count', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.10.1.0/24']);
      const first = await api.call('POST', '/v1/pools/p/claims', { name: 'one', owner: owner('o') });
      // Act
      const again = await api.call('POST', '/v1/pools/p/claims', { name: 'one', owner: owner('o'), count: 1 });
      // Assess
      expect(again.status).toBe(200);
      expect(addressesOf(again.body)).toEqual(addressesOf(first.body));
      expect(again.body.count).toBeUndefined();
    });

    it('refuses count with explicit addresses, and a count of the wrong type or range, with a 400 and nothing written', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.11.0.0/24']);
      const before = await tableSnapshot(api.container.table);
      // Act
      const withAddresses = await api.call('POST', '/v1/pools/p/claims', {
        name: 'x',
        owner: owner('x'),
        count: 2,
        addresses: ['10.11.0.10'],
      });
      const bad = await Promise.all(
        [0, 33, -1, 2.5, '4', true].map((count) =>
          api.call('POST', '/v1/pools/p/claims', { name: 'x', owner: owner('x'), count }),
        ),
      );
      // Assess
      expect(withAddresses.status).toBe(400);
      expect(withAddresses.body.code).toBe('InvalidArgument');
      expect(withAddresses.body.detail).toMatch(/count greater than 1 takes its addresses dynamically/);
      expect(bad.map((r) => r.status)).toEqual(Array(6).fill(400));
      expect(bad[0]!.body.detail).toBe('count must be a whole number from 1 to 32.');
      expect(bad[3]!.body.detail).toBe('Field "count" must be a whole number.');
      expect(await tableSnapshot(api.container.table)).toEqual(before);
      // One explicit address with count 1 is still a plain claim.
      expect(
        (
          await api.call('POST', '/v1/pools/p/claims', {
            name: 'x',
            owner: owner('x'),
            count: 1,
            addresses: ['10.11.0.10'],
          })
        ).status,
      ).toBe(201);
    });

    it('gives a dual-stack batch of 2 two addresses of each family, in family then address order, and releases all four', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.12.0.0/24', 'fd00:12::/120']);
      // Act
      const made = await api.call('POST', '/v1/pools/p/claims', {
        name: 'ds',
        owner: owner('d'),
        ipFamilyPolicy: 'RequireDualStack',
        ipFamilies: ['IPv6', 'IPv4'],
        count: 2,
      });
      // Assess
      expect(made.status).toBe(201);
      const addresses = made.body.addresses as Addr[];
      expect(addresses.map((a) => a.family)).toEqual(['IPv6', 'IPv6', 'IPv4', 'IPv4']);
      expect(made.body.ipFamilies).toEqual(['IPv6', 'IPv4']);
      expect(new Set(addressesOf(made.body)).size).toBe(4);
      const v4 = addressesOf(made.body)
        .slice(2)
        .map((a) => Number(a.split('.')[3]));
      expect(v4[0]!).toBeLessThan(v4[1]!);
      expect((await leaseItems(api)).map((l) => l.address).sort()).toEqual([...addressesOf(made.body)].sort());
      expect((await api.call('GET', '/v1/pools/p')).body.utilization).toMatchObject({
        IPv4: { used: 2 },
        IPv6: { used: 2 },
      });
      expect((await api.call('DELETE', '/v1/pools/p/claims/ds')).status).toBe(204);
      expect(await leaseItems(api)).toEqual([]);
    });

    it('takes a batch in legacy mode as count bits of the bitmap in the same transaction, refuses one too big whole, and clears all its bits on release', async () => {
      // Prepare: legacy mode; a legacy /28 (14 hosts)
      const api = await testApiOn(
        {},
        { FEATURE_GATES: 'MultiCIDRServiceAllocator=false,DisableAllocatorDualWrite=false' },
        undefined,
        engine,
      );
      expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect(
        (await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.17.0.0/28', name: 'legacy', legacy: true })).status,
      ).toBe(201);
      // Act
      const made = await api.call('POST', '/v1/pools/p/claims', { name: 'five', owner: owner('f'), count: 5 });
      const bits = await bitmapHolds(api.container, 'p', 'legacy');
      const before = await tableSnapshot(api.container.table);
      const tooBig = await api.call('POST', '/v1/pools/p/claims', { name: 'ten', owner: owner('t'), count: 10 });
      const after = await tableSnapshot(api.container.table);
      const released = await api.call('DELETE', '/v1/pools/p/claims/five');
      // Assess: the bitmap holds exactly the batch (no mirror ran: the commit wrote it), one version for the batch
      expect(made.status).toBe(201);
      expect(new Set(addressesOf(made.body)).size).toBe(5);
      expect(bits).toMatchObject({ version: 1, addresses: [...addressesOf(made.body)].sort() });
      expect(tooBig.body.code).toBe('RangeFull');
      expect(after).toEqual(before);
      expect(released.status).toBe(204);
      expect((await bitmapHolds(api.container, 'p', 'legacy'))?.addresses).toEqual([]);
      expect(await leaseItems(api)).toEqual([]);
    });

    it('reads the few free addresses of a nearly full range, and its used-up upper band, once per batch, not once per address', async () => {
      // Prepare: a /27 (30 hosts) with 24 taken leaves 6 (all in the lower band .1-.16), few enough that the summary's
      // free addresses are read first
      const api = await testApi();
      await poolWith(api, 'p', ['10.18.0.0/27']);
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'most', owner: owner('m'), count: 24 })).status,
      ).toBe(201);
      const counts = new Map<string, number>();
      const cold = api.sibling({ wrapStores: countingStores(counts) });
      // Act
      const made = await cold.call('POST', '/v1/pools/p/claims', { name: 'four', owner: owner('f'), count: 4 });
      // Assess
      // Assess: one read of the six shown free, one of the upper band (.17-.30) before the batch takes the lower band
      expect(made.status).toBe(201);
      expect(counts.get('leaseStates')).toBe(2);
      expect(counts.get('commitClaim')).toBe(1);
    });

    it('commits, renews, confirms and releases the largest batch (dual-stack, 32 each, with a generateName marker: 66 items a transaction)', async () => {
      // Prepare
      const api = await testApi();
      await poolWith(api, 'p', ['10.19.0.0/24', 'fd00:19::/120']);
      // Act
      const made = await api.call('POST', '/v1/pools/p/claims', {
        generateName: 'big',
        owner: owner('g'),
        ipFamilyPolicy: 'RequireDualStack',
        count: 32,
        ttlSeconds: 600,
      });
      const name = String(made.body.name);
      const renewed = await api.call('POST', `/v1/pools/p/claims/${name}/renew`, {});
      const confirmed = await api.call('POST', `/v1/pools/p/claims/${name}/renew`, { ttlSeconds: null });
      const leasesHeld = await leaseItems(api);
      const released = await api.call('DELETE', `/v1/pools/p/claims/${name}`);
      // Assess
      expect(made.status).toBe(201);
      expect((made.body.addresses as Addr[]).filter((a) => a.family === 'IPv4')).toHaveLength(32);
      expect((made.body.addresses as Addr[]).filter((a) => a.family === 'IPv6')).toHaveLength(32);
      expect(renewed.status).toBe(200);
      expect(confirmed.status).toBe(200);
      expect(leasesHeld).toHaveLength(64);
      expect(leasesHeld.every((l) => l.claim === name && l.expiresAt === undefined)).toBe(true);
      expect(released.status).toBe(204);
      expect(
        (await allItems(api.container.table)).filter(
          (i) => i.entity === 'lease' || i.entity === 'claim' || i.entity === 'generated',
        ),
      ).toEqual([]);
    });

    it('refuses a dual-stack batch whole when one family lacks addresses, writing nothing for the other', async () => {
      // Prepare: IPv6 /126 has 3 hosts
      const api = await testApi();
      await poolWith(api, 'p', ['10.13.0.0/24', 'fd00:13::/126']);
      const before = await tableSnapshot(api.container.table);
      // Act
      const refused = await api.call('POST', '/v1/pools/p/claims', {
        name: 'ds',
        owner: owner('d'),
        ipFamilyPolicy: 'RequireDualStack',
        count: 4,
      });
      // Assess
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('RangeFull');
      expect(refused.body.detail).toMatch(/IPv6/);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });
  });

  describe(`Claims: leases with a TTL (${engine.name})`, () => {
    it('renews a lease, stops reporting it once expired, and lets another claim take it', async () => {
      // Prepare
      const clock = new ManualClock();
      const api = await testApi({ clock });
      await poolWith(api, 'p', ['10.7.0.0/30']);
      const made = await api.call('POST', '/v1/pools/p/claims', {
        name: 'a',
        owner: owner('a'),
        addresses: ['10.7.0.2'],
        ttlSeconds: 60,
      });
      expect(made.status).toBe(201);
      // Act + Assess: renew at 50 s moves expiry to 110 s.
      clock.advance(50_000);
      const renewed = await api.call('POST', '/v1/pools/p/claims/a/renew', {});
      expect(renewed.status).toBe(200);
      expect(renewed.body.version).toBe(2);
      expect(renewed.body.expiresAt).toBe(new Date(clock.nowMs() + 60_000).toISOString());
      clock.advance(40_000);
      expect((await api.call('GET', '/v1/pools/p/claims/a')).status).toBe(200);
      const taken = await api.call('POST', '/v1/pools/p/claims', {
        name: 'b',
        owner: owner('b'),
        addresses: ['10.7.0.2'],
      });
      expect(taken.body.code).toBe('AlreadyAllocated');
      clock.advance(30_000);
      expect((await api.call('GET', '/v1/pools/p/claims/a')).status).toBe(404);
      expect((await api.call('GET', '/v1/pools/p/addresses/10.7.0.2')).status).toBe(404);
      expect((await api.call('GET', '/v1/pools/p')).body.utilization).toEqual({
        IPv4: { size: 2, used: 0, releasing: 0, free: 2 },
      });
      const takeover = await api.call('POST', '/v1/pools/p/claims', {
        name: 'b',
        owner: owner('b'),
        addresses: ['10.7.0.2'],
      });
      expect(takeover.status).toBe(201);
      const lost = await api.call('POST', '/v1/pools/p/claims/a/renew', {});
      expect(lost.status).toBe(404);
      expect(lost.body.detail).toMatch(/taken by another claim/);
    });

    it('confirms a hold with ttlSeconds null: the claim, its marker and its leases lose their expiry and outlive the TTL and the reconciler', async () => {
      // Prepare: two leased batch claims made from generateName; only the first is confirmed
      const h = await reconcilerHarness({ engine });
      await h.pool('p', ['10.14.0.0/24']);
      const held = await h.claim('p', {
        generateName: 'vpn',
        owner: owner('laptop', 'Client'),
        ttlSeconds: 60,
        count: 2,
      });
      const other = await h.claim('p', { generateName: 'vpn', owner: owner('phone', 'Client'), ttlSeconds: 60 });
      h.clock.advance(30_000);
      // Act
      const confirmed = await h.api.call('POST', `/v1/pools/p/claims/${held.name}/renew`, { ttlSeconds: null });
      // Assess: the answer and every item of the claim carry no expiry, no TTL attribute, no expiry index keys
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.expiresAt).toBeUndefined();
      expect(confirmed.body.version).toBe(2);
      expect(confirmed.headers.etag).toBe('"2"');
      const items = (await allItems(h.table)).filter((i) => i.claim === held.name || i.name === held.name);
      expect(items.map((i) => i.entity).sort()).toEqual(['claim', 'generated', 'lease', 'lease']);
      for (const item of items)
        for (const attribute of ['expiresAt', 'ttl', 'GSI3PK', 'GSI3SK']) expect(item).not.toHaveProperty(attribute);
      // Time passes far beyond the TTL and the reconciler runs: the confirmed claim stays, the other one is released
      h.clock.advance(3_600_000);
      await h.run();
      expect((await h.api.call('GET', `/v1/pools/p/claims/${held.name}`)).status).toBe(200);
      expect((await h.api.call('GET', `/v1/pools/p/claims/${other.name}`)).status).toBe(404);
      for (const a of held.addresses)
        expect((await h.api.call('GET', `/v1/pools/p/addresses/${a.address}`)).body.claim).toBe(held.name);
      const leases = (await allItems(h.table)).filter((i) => i.entity === 'lease').map((l) => l.claim);
      expect(leases).toEqual([held.name, held.name]);
      // The owner's retry of its original request still finds the claim (the spec is kept as asked for)
      const retry = await h.api.call('POST', '/v1/pools/p/claims', {
        generateName: 'vpn',
        owner: owner('laptop', 'Client'),
        ttlSeconds: 60,
        count: 2,
      });
      expect(retry.status).toBe(200);
      expect(retry.body.name).toBe(held.name);
      expect(retry.body.expiresAt).toBeUndefined();
    });

    it('answers a renewal of a confirmed claim with 409, a second confirmation with the claim unchanged, and 404 for a gone claim', async () => {
      // Prepare
      const clock = new ManualClock(T0);
      const api = await testApi({ clock });
      await poolWith(api, 'p', ['10.15.0.0/24']);
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), ttlSeconds: 60 })).status,
      ).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/claims/a/renew', { ttlSeconds: null })).status).toBe(200);
      const before = await tableSnapshot(api.container.table);
      // Act
      const renewed = await api.call('POST', '/v1/pools/p/claims/a/renew', {});
      const again = await api.call('POST', '/v1/pools/p/claims/a/renew', { ttlSeconds: null });
      const gone = await api.call('POST', '/v1/pools/p/claims/nope/renew', { ttlSeconds: null });
      // Assess
      expect(renewed.status).toBe(409);
      expect(renewed.body.detail).toMatch(/has no TTL and needs no renewal/);
      expect(again.status).toBe(200);
      expect(again.body.version).toBe(2);
      expect(again.body.expiresAt).toBeUndefined();
      expect(gone.status).toBe(404);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });

    it('answers renewals and a confirmation racing on one claim without a 5xx, and leaves the claim and its leases agreeing', async () => {
      // Prepare: a leased claim of two addresses, renewed by 6 callers with different TTLs while another confirms it
      const clock = new ManualClock(T0);
      const api = await testApi({ clock });
      await poolWith(api, 'p', ['10.17.0.0/24']);
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), ttlSeconds: 60, count: 2 }))
          .status,
      ).toBe(201);
      const containers = [api, api.sibling({ clock })];
      // Act
      const renewals = Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          containers[i % 2]!.call('POST', '/v1/pools/p/claims/a/renew', { ttlSeconds: 100 + i }),
        ),
      );
      const confirm = containers[1]!.call('POST', '/v1/pools/p/claims/a/renew', { ttlSeconds: null });
      const [answers, confirmed] = await Promise.all([renewals, confirm]);
      // Assess: a renewal that lost to the confirmation is told the claim needs none (409); every other one renewed
      expect(confirmed.status).toBe(200);
      for (const answer of answers) {
        if (answer.status === 409) expect(answer.body.detail).toMatch(/has no TTL and needs no renewal/);
        else expect(answer.status).toBe(200);
      }
      const got = await api.call('GET', '/v1/pools/p/claims/a');
      expect(got.status).toBe(200);
      const claim = got.body;
      const leases = await leaseItems(api);
      expect(leases).toHaveLength(2);
      expect(claim.version).toBe(1 + answers.filter((a) => a.status === 200).length + 1);
      for (const lease of leases)
        expect(lease.expiresAt).toBe(claim.expiresAt === undefined ? undefined : Date.parse(claim.expiresAt as string));
    });

    it('does not confirm a claim whose lease expired and went to another claim', async () => {
      // Prepare
      const clock = new ManualClock(T0);
      const api = await testApi({ clock });
      await poolWith(api, 'p', ['10.16.0.0/30']);
      expect(
        (
          await api.call('POST', '/v1/pools/p/claims', {
            name: 'a',
            owner: owner('a'),
            addresses: ['10.16.0.1'],
            ttlSeconds: 30,
          })
        ).status,
      ).toBe(201);
      clock.advance(31_000);
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'b', owner: owner('b'), addresses: ['10.16.0.1'] }))
          .status,
      ).toBe(201);
      // Act
      const lost = await api.call('POST', '/v1/pools/p/claims/a/renew', { ttlSeconds: null });
      // Assess
      expect(lost.status).toBe(404);
      expect(lost.body.detail).toMatch(/taken by another claim/);
      expect((await api.call('GET', '/v1/pools/p/addresses/10.16.0.1')).body.claim).toBe('b');
    });
  });
}
