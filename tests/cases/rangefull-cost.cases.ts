import { describe, expect, it } from 'vitest';
import type { TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { leaseOf, owner, reconcilerHarness, T0 } from '../support/reconciler.ts';
import { RequestMeter, type Metered } from '../support/request-meter.ts';
import { Prng } from '../../sim/prng.ts';

/**
 * What a RangeFull costs, in DynamoDB requests and read units (counted at the table, so both engines count the same
 * calls), on a smaller cut of the bench's exhaustion case (bench/scenarios/exhaustion.ts fills a /20): a /23 whose 510 hosts
 * are all held. The used-up rule answers RangeFull
 * only after a consistent read (docs/decisions/0005-rangefull-cost.md says what that costs at the least); these
 * figures are pinned so that a change that moves them fails here, the figures side by side.
 */
export function rangeFullCostCases(engine: TestEngine): void {
  // The figures reached (docs/decisions/0005-rangefull-cost.md): the same on both engines. None reads the owner's
  // gone-mark: it is read only once a claim has its addresses, before the commit
  // (docs/decisions/0008-claims-for-a-gone-owner.md).
  const PINNED: Record<'created' | 'warm' | 'retry' | 'cold', Metered> = {
    // A claim that is made (the fill's second, on the warm container), for comparison: the owner's gone-mark, the
    // picked lease read, the commit, the view's generation. The mark is read here as it was before it moved.
    created: { requests: 4, readUnits: 2, operations: { GetItem: 2, BatchGetItem: 1, TransactWriteItems: 1 } },
    // The first RangeFull after the fill: the range's counters and seals, the lower band (the one part no seal covers:
    // its 31 leases), its seal, the view's generation.
    warm: { requests: 4, readUnits: 33, operations: { GetItem: 1, BatchGetItem: 2, UpdateItem: 1 } },
    // The same container at once: the counters and seals (every part's seal holds), the view's generation.
    retry: { requests: 2, readUnits: 2, operations: { BatchGetItem: 1, GetItem: 1 } },
    // A new container: the view (generation and pool), the summary, the counters and seals, and the generation
    // again for the view the HTTP layer read before the claim's round.
    cold: { requests: 5, readUnits: 4.5, operations: { GetItem: 2, Query: 2, BatchGetItem: 1 } },
  };

  describe(`What a RangeFull costs on a full /23 (${engine.name})`, () => {
    it('answers a warm RangeFull, its retry and a cold one, and makes a claim, in the requests and read units pinned', async () => {
      // Prepare: a /23 (lower band hosts 1-31, upper band 32-510 in 3 seal parts) with every host held but every 50th
      // (11 free, host 1 in the lower band), the leases written directly (the summary follows them); a warm container
      // with seeded picks takes the 11 free ones.
      const h = await reconcilerHarness({ engine });
      await h.pool('p', ['10.0.0.0/23']);
      const hosts = Array.from({ length: 510 }, (_, i) => i + 1).filter((host) => (host - 1) % 50 !== 0);
      for (let i = 0; i < hosts.length; i += 64)
        await Promise.all(
          hosts.slice(i, i + 64).map((host) => {
            const address = `10.0.${Math.floor(host / 256)}.${host % 256}`;
            return h.putLease(leaseOf('p', address, '10.0.0.0-23', `seed-${host}`, `seed-uid-${host}`, T0 - 60_000));
          }),
        );
      const meter = new RequestMeter(h.table);
      const container = (seed: number): TestApi =>
        h.api.sibling({ clock: h.clock, table: meter, random: new Prng(seed) });
      const claim = async (api: TestApi, name: string): Promise<number> =>
        (await api.call('POST', '/v1/pools/p/claims', { name, owner: owner(name) })).status;
      const warm = container(1);
      const taken: number[] = [];
      let createdCost: Metered | undefined;
      for (let i = 0; i < 11; i += 1) {
        meter.take();
        taken.push(await claim(warm, `fill-${i}`));
        if (i === 1) createdCost = meter.take();
        h.clock.advance(10);
      }
      expect(taken.filter((status) => status !== 201)).toEqual([]);
      // Act
      meter.take();
      const answers = [await claim(warm, 'warm')];
      const warmCost = meter.take();
      answers.push(await claim(warm, 'retry'));
      const retryCost = meter.take();
      answers.push(await claim(container(2), 'cold'));
      const coldCost = meter.take();
      // Assess
      expect(answers).toEqual([409, 409, 409]);
      expect({ created: createdCost, warm: warmCost, retry: retryCost, cold: coldCost }).toEqual(PINNED);
    });
  });
}
