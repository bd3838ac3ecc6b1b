import { expect, it } from 'vitest';
import fc from 'fast-check';
import { testApi, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { allItems } from '../support/items.ts';
import { LaggingListings } from '../support/lagging-listings.ts';
import { testSettings } from '../support/reconciler.ts';
import { reconcile } from '../../shared/core/reconciler/reconcile.ts';
import { lastAddress, parseCidr } from '../../shared/core/ip/cidr.ts';

// A pool tree deleted and made again while its claims and leases listings lag by a random, unbounded amount. `top`
// hands out /26 blocks of a /24; `c` hands out /28 blocks of a range made from a claim of top; `g` hands out /28
// blocks and grows from top (at most 2 blocks). Steps claim and release in each, make c's range, delete any of the
// three pools and make it again, run the reconciler, and let time pass. Each write's listing entry appears some steps
// later, drawn per write: at once, after 1 to 8 steps, or not within the run. After every step no address may be held
// twice: two live leases overlap only where one is a claim whose block is, right now, a range of the other's pool.

type Step =
  | { op: 'claim'; pool: 'top' | 'c' | 'g'; who: number }
  | { op: 'release'; pool: 'top' | 'c' | 'g'; who: number }
  | { op: 'makeChild'; who: number }
  | { op: 'deletePool'; pool: 'top' | 'c' | 'g' }
  | { op: 'makePool'; pool: 'top' | 'c' | 'g' }
  | { op: 'reconcile' }
  | { op: 'wait'; seconds: number };

const poolName = fc.constantFrom('top' as const, 'top' as const, 'c' as const, 'g' as const);
const who = fc.integer({ min: 0, max: 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('claim' as const), pool: poolName, who }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pool: poolName, who }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('makeChild' as const), who }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('deletePool' as const), pool: poolName }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('makePool' as const), pool: poolName }) },
  { weight: 1, arbitrary: fc.constant({ op: 'reconcile' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('wait' as const), seconds: fc.integer({ min: 1, max: 30 }) }) },
);
/** A write's listing lag in steps: at once, a few steps, or never within the run. */
const lag = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 }), fc.constant(Number.MAX_SAFE_INTEGER));

type Item = Record<string, unknown>;
const span = (cidr: string): [bigint, bigint] => {
  const c = parseCidr(cidr);
  return [c.base, lastAddress(c)];
};
const leaseSpan = (l: Item) => span(`${l.address as string}/${(l.prefixLength as number | undefined) ?? 32}`);
const inside = (a: [bigint, bigint], b: [bigint, bigint]) => b[0] <= a[0] && a[1] <= b[1];
const overlap = (a: [bigint, bigint], b: [bigint, bigint]) => a[0] <= b[1] && b[0] <= a[1];

/**
 * No address held twice, read from the table: for every two overlapping live leases, one (the outer) is a claim of a
 * pool whose block is, now, a range of the other's pool (the range item names it as its source, the claim lists the
 * range as its child) and the other lies inside that range. A lease a deleted pool left counts as live: its claim was
 * answered, and nothing told its holder otherwise.
 */
function checkNoDoubleHold(items: readonly Item[], nowMs: number): void {
  const leases = items.filter(
    (i) =>
      i.entity === 'lease' && i.state !== 'Released' && (i.expiresAt === undefined || (i.expiresAt as number) > nowMs),
  );
  const ranges = items.filter((i) => i.entity === 'range' && i.source !== undefined);
  const claims = items.filter((i) => i.entity === 'claim');
  const delegates = (outer: Item, inner: Item): boolean =>
    ranges.some((r) => {
      const source = r.source as { pool: string; claim: string };
      if (r.pool !== inner.pool || source.pool !== outer.pool || source.claim !== outer.claim) return false;
      if (!inside(leaseSpan(inner), span(r.cidr as string))) return false;
      const claim = claims.find((c) => c.pool === outer.pool && c.name === outer.claim);
      return ((claim?.children as Item[] | undefined) ?? []).some((c) => c.pool === r.pool && c.range === r.name);
    });
  // Every range made from a block is that block's, held by its source claim alone, which lists the range.
  for (const r of ranges) {
    const source = r.source as { pool: string; claim: string };
    const where = `range ${r.pool as string}/${r.name as string} (${r.cidr as string}, from ${source.pool}/${source.claim})`;
    const claim = claims.find((c) => c.pool === source.pool && c.name === source.claim);
    expect(
      ((claim?.children as Item[] | undefined) ?? []).some((c) => c.pool === r.pool && c.range === r.name),
      `${where}: its source claim does not list it`,
    ).toBe(true);
    const holders = leases.filter((l) => l.pool === source.pool && overlap(leaseSpan(l), span(r.cidr as string)));
    expect(
      holders.map((l) => l.claim),
      `${where}: its block is not held by its source claim alone`,
    ).toEqual([source.claim]);
  }
  for (const [i, a] of leases.entries())
    for (const b of leases.slice(i + 1)) {
      if (!overlap(leaseSpan(a), leaseSpan(b))) continue;
      const what = `${a.pool as string}/${a.claim as string} (${a.address as string}) and ${b.pool as string}/${b.claim as string} (${b.address as string})`;
      expect(delegates(a, b) || delegates(b, a), `${what} hold the same addresses`).toBe(true);
    }
}

const SPECS: Record<'top' | 'c' | 'g', Record<string, unknown>> = {
  top: { name: 'top', openToChildPools: true, blockPrefixLength: { IPv4: 26 } },
  c: { name: 'c', blockPrefixLength: { IPv4: 28 } },
  g: { name: 'g', blockPrefixLength: { IPv4: 28 }, grow: { pool: 'top', belowFree: 1, maxBlocks: 2 } },
};

async function makePool(api: TestApi, pool: 'top' | 'c' | 'g'): Promise<void> {
  const made = await api.call('POST', '/v1/pools', SPECS[pool]);
  expect(made.status, JSON.stringify(made.body)).toBeLessThan(500);
  if (made.status === 201 && pool === 'top')
    expect((await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.0.0.0/24' })).status).toBeLessThan(500);
}

async function runStep(api: TestApi, clock: ManualClock, s: Step): Promise<void> {
  const answered = (r: { status: number; body: unknown }) => expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
  switch (s.op) {
    case 'claim':
      answered(
        await api.call('POST', `/v1/pools/${s.pool}/claims`, {
          name: `${s.pool}${s.who}`,
          owner: owner(`${s.pool}${s.who}`),
        }),
      );
      break;
    case 'release':
      answered(await api.call('DELETE', `/v1/pools/${s.pool}/claims/${s.pool}${s.who}`));
      break;
    case 'makeChild': {
      const claim = await api.call('GET', `/v1/pools/top/claims/top${s.who}`);
      if (claim.status !== 200) break;
      const cidr = (claim.body.addresses as { prefix: string }[])[0]!.prefix;
      answered(
        await api.call('POST', '/v1/pools/c/ranges', {
          cidr,
          name: 'r',
          source: { pool: 'top', claim: `top${s.who}` },
        }),
      );
      break;
    }
    case 'deletePool':
      answered(await api.call('DELETE', `/v1/pools/${s.pool}`));
      break;
    case 'makePool':
      await makePool(api, s.pool);
      break;
    case 'reconcile': {
      const report = await reconcile(
        { ...api.container.deps, settings: testSettings },
        { deadlineMs: clock.nowMs() + 60_000 },
      );
      expect(report.errors, JSON.stringify(report.errors)).toEqual([]);
      break;
    }
    case 'wait':
      clock.advance(s.seconds * 1000);
      break;
  }
}

/** The property on an engine: `runs` sequences of up to `maxSteps` steps, the tree checked after each step. */
export function poolTreeDeletePropertyCases(engine: TestEngine, runs: number, maxSteps = 20): void {
  it(`never holds an address twice in a pool tree deleted and made again under lagging listings (${runs} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 4, maxLength: maxSteps }),
        fc.array(lag, { minLength: 1, maxLength: 16 }),
        async (steps, lags) => {
          const clock = new ManualClock();
          const base = await testApi({ clock, viewMaxAgeMs: 0 }, {}, undefined, engine);
          let writes = 0;
          const listings = new LaggingListings(base.container.table, () => lags[writes++ % lags.length]!);
          const api = base.sibling({ clock, table: listings });
          for (const pool of ['top', 'c', 'g'] as const) await makePool(api, pool);
          for (const s of steps) {
            await runStep(api, clock, s);
            listings.step();
            checkNoDoubleHold(await allItems(listings.inner), clock.nowMs());
          }
        },
      ),
      { numRuns: runs },
    );
  });
}
