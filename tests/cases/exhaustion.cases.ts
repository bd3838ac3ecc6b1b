import { describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { owner } from '../support/fakes.ts';
import type { Crossing, CrossingAnnouncer } from '../../shared/core/occupancy/exhaustion.ts';

/**
 * Issue 37: warnings before a pool runs out. Callers fill a /27 (30 addresses; thresholds 20 % and 5 % free, and
 * full) while several stream function containers (each its own ExhaustionWatch, as parallel shards' invocations and
 * redeliveries would be) check the pool at the same time: every crossing is written, evented and announced exactly
 * once, each way.
 */
export function exhaustionCases(engine: TestEngine): void {
  const WATCHERS = 3;
  const CALLERS = 8;
  const SIZE = 30;

  /** Containers sharing one table, each with an announcer that records what it announced. */
  async function setup(): Promise<{ api: TestApi; watchers: TestApi[]; announced: Crossing[] }> {
    const announced: Crossing[] = [];
    const announcer: CrossingAnnouncer = { announce: async (crossings) => void announced.push(...crossings) };
    const api = await testApi({ announcer }, {}, undefined, engine);
    const watchers = Array.from({ length: WATCHERS }, () => api.sibling({ announcer }));
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/27' })).status).toBe(201);
    return { api, watchers, announced };
  }

  /** Runs `work` while every watcher checks the pool in a loop, then once more all together; returns what they wrote. */
  async function racing(watchers: TestApi[], work: () => Promise<void>): Promise<Crossing[]> {
    const written: Crossing[] = [];
    let done = false;
    const check = async (w: TestApi) => written.push(...(await w.container.mirror.exhaustion!.check('p')).crossings);
    const loops = watchers.map(async (w) => {
      while (!done) await check(w);
    });
    await work();
    done = true;
    await Promise.all(loops);
    await Promise.all(watchers.map(check));
    return written;
  }

  /** CALLERS callers taking the numbers 0..SIZE-1 between them, each number once. */
  async function byCallers(request: (i: number) => Promise<void>): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        while (next < SIZE) await request(next++);
      }),
    );
  }

  const summary = (crossings: readonly Crossing[]) => crossings.map((c) => `${c.direction} ${c.threshold}`);
  const poolEvents = async (api: TestApi) =>
    ((await api.call('GET', '/v1/pools/p/events')).body.items ?? []).map(
      (e) => `${e.reason as string}: ${e.message as string}${e.by === 'stream' ? '' : ` (by ${String(e.by)})`}`,
    );

  describe(`Warnings before a pool runs out (${engine.name}; issue 37)`, () => {
    it(
      `announces each threshold once while ${CALLERS} callers fill a /27 and ${WATCHERS} stream containers race to decide, and once each on recovery`,
      { timeout: 120_000 },
      async () => {
        // Prepare
        const { api, watchers, announced } = await setup();
        // Act: fill every address, the watchers checking all along
        const filling = await racing(watchers, () =>
          byCallers(async (i) =>
            expect(
              (await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status,
            ).toBe(201),
          ),
        );
        const full = (await api.call('GET', '/v1/pools/p')).body;
        // ... then release them all
        const releasing = await racing(watchers, () =>
          byCallers(async (i) => expect((await api.call('DELETE', `/v1/pools/p/claims/c${i}`)).status).toBe(204)),
        );
        // Assess: each crossing exactly once, in order, on every channel
        expect(summary(filling)).toEqual(['below 20', 'below 5', 'below full']);
        expect(summary(releasing)).toEqual(['recovered full', 'recovered 5', 'recovered 20']);
        expect(summary(announced)).toEqual([...summary(filling), ...summary(releasing)]);
        // (how many were free when a check saw the crossing depends on the race: at most the threshold's share)
        expect(filling.map((c) => c.free <= [5n, 1n, 0n][filling.indexOf(c)]!)).toEqual([true, true, true]);
        const events = (await poolEvents(api)).map((e) => e.split(': ').slice(0, 2).join(': ')).sort();
        expect(events.filter((e) => e.startsWith('PoolFree'))).toEqual([
          'PoolFreeBelowThreshold: IPv4 space of pool p fell below 20 % free',
          'PoolFreeBelowThreshold: IPv4 space of pool p fell below 5 % free',
          'PoolFreeBelowThreshold: IPv4 space of pool p is full',
          'PoolFreeRecovered: IPv4 space of pool p is back above 20 % free',
          'PoolFreeRecovered: IPv4 space of pool p is back above 5 % free',
          'PoolFreeRecovered: IPv4 space of pool p is no longer full',
        ]);
        // The pool's read carries the same signal (the CNI plugin's STATUS hook)
        expect(full.warnings).toEqual({ IPv4: { below: 'full', since: expect.any(String) } });
        expect((await api.call('GET', '/v1/pools/p')).body.warnings).toEqual({
          IPv4: { below: null, since: expect.any(String) },
        });
      },
    );

    it('announces nothing while the free share stays between two thresholds, and nothing for a pool without ranges', async () => {
      // Prepare: 20 of 30 taken (33 % free: above 20 %)
      const { api, watchers, announced } = await setup();
      for (let i = 0; i < 20; i += 1)
        expect((await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(
          201,
        );
      expect((await api.call('POST', '/v1/pools', { name: 'empty' })).status).toBe(201);
      // Act
      const written = await racing(watchers, async () => {
        for (let i = 20; i < 23; i += 1)
          expect((await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(
            201,
          );
      });
      const empty = await watchers[0]!.container.mirror.exhaustion!.check('empty');
      // Assess
      expect(written).toEqual([]);
      expect(announced).toEqual([]);
      expect(empty).toEqual({ crossings: [], observed: [] });
      expect((await poolEvents(api)).filter((e) => e.startsWith('PoolFree'))).toEqual([]);
    });

    // Only space a dynamic claim may be given counts: a pool full but for its exclusions is full. Leases with a TTL
    // are counted from the lease listing, the others from the occupancy summary: the rows take one path each.
    it.each([
      {
        what: 'an address pool, one excluded address held by a claim naming it',
        pool: { exclude: ['10.0.0.1', '10.0.0.12/30'] },
        cidr: '10.0.0.0/28',
        named: '10.0.0.1',
        claim: { ttlSeconds: 3600 },
        counts: { size: 10, used: 10, releasing: 0, free: 0 },
      },
      {
        what: 'a block pool, an exclusion taking a whole block',
        pool: { blockPrefixLength: { IPv4: 28 }, exclude: ['10.8.0.20'] },
        cidr: '10.8.0.0/26',
        counts: { size: 3, used: 3, releasing: 0, free: 0, addresses: { size: 48, used: 48, releasing: 0, free: 0 } },
      },
    ])('counts none of the excluded space in size or free: $what', async ({ pool, cidr, named, claim, counts }) => {
      // Prepare
      const api = await testApi({}, {}, undefined, engine);
      expect((await api.call('POST', '/v1/pools', { name: 'x', ...pool })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/x/ranges', { cidr })).status).toBe(201);
      if (named)
        expect(
          (await api.call('POST', '/v1/pools/x/claims', { name: 'named', owner: owner('n'), addresses: [named] }))
            .status,
        ).toBe(201);
      // Act: claim until no claimable position is left
      for (let i = 0; i < counts.size; i += 1)
        expect(
          (await api.call('POST', '/v1/pools/x/claims', { name: `c${i}`, owner: owner(`u${i}`), ...claim })).status,
        ).toBe(201);
      const written = await api.container.mirror.exhaustion!.check('x');
      const details = (await api.call('GET', '/v1/pools/x')).body;
      // Assess
      expect((await api.call('POST', '/v1/pools/x/claims', { name: 'more', owner: owner('m') })).status).toBe(409);
      expect(summary(written.crossings)).toEqual(['below 20', 'below 5', 'below full']);
      expect(details.utilization).toEqual({ IPv4: counts });
      expect(details.warnings).toEqual({ IPv4: { below: 'full', since: expect.any(String) } });
    });

    it('runs in the stream function: a batch with a change of the pool reports the crossing it wrote and the free share it read', async () => {
      // Prepare: 25 of 30 taken (16.66 % free), nothing checked yet
      const { api, announced } = await setup();
      for (let i = 0; i < 25; i += 1)
        expect((await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) })).status).toBe(
          201,
        );
      const lease = ((await api.call('GET', '/v1/pools/p/claims/c0')).body.addresses as { address: string }[])[0]!
        .address;
      // Act: the batch the stream would deliver for that lease, through the projections the function runs
      const result = await api.container.mirror.apply([{ id: '1', pool: 'p', address: lease, state: 'held' }]);
      const again = await api.container.mirror.apply([{ id: '2', pool: 'p', address: lease, state: 'held' }]);
      // Assess
      expect(result.failed).toEqual([]);
      expect(summary(result.exhaustion!.crossings)).toEqual(['below 20']);
      expect(result.exhaustion!.observed).toEqual([{ pool: 'p', family: 'IPv4', freePercent: 16.66 }]);
      expect(summary(again.exhaustion!.crossings)).toEqual([]);
      expect(summary(announced)).toEqual(['below 20']);
    });

    it("takes the pool's own thresholds, and refuses thresholds that are not percentages (400, nothing written)", async () => {
      // Prepare
      const { api } = await setup();
      // Act
      const made = await api.call('POST', '/v1/pools', { name: 'q', freeThresholds: [5, 50] });
      const refused = await Promise.all(
        [[0], [100], [], [10, 10], [1, 2, 3, 4, 5, 6], [12.345]].map((t) =>
          api.call('POST', '/v1/pools', { name: 'r', freeThresholds: t }),
        ),
      );
      // Assess
      expect(made.status).toBe(201);
      expect(made.body.freeThresholds).toEqual([50, 5]);
      expect((await api.call('GET', '/v1/pools/p')).body.freeThresholds).toEqual([20, 5]);
      expect(
        refused.map((r) => [
          r.status,
          r.body.code,
          String(r.body.detail).startsWith('freeThresholds must be a list of 1 to 5 distinct percentages'),
        ]),
      ).toEqual(Array.from({ length: 6 }, () => [400, 'InvalidArgument', true]));
      expect((await api.call('GET', '/v1/pools/r')).status).toBe(404);
    });
  });
}
