import { describe, expect, it } from 'vitest';
import { testApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { withSummaryLag, type TestEngine } from '../support/engines.ts';
import { owner } from '../support/fakes.ts';

/**
 * Issue 20: the occupancy summary may choose candidates, never decide that a band or a range is used up. The summary
 * here stays `SUMMARY_LAG` lease changes behind the leases (a stream delivering late), and the callers race.
 */
export function usedUpCases(engine: TestEngine): void {
  const SUMMARY_LAG = 16;
  const lagging = withSummaryLag(engine, SUMMARY_LAG);

  async function poolWith(api: TestApi, cidr: string): Promise<void> {
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
  }

  /** A promise and its resolve (Promise.withResolvers, which Node 20 lacks). */
  const signal = (): { promise: Promise<void>; resolve: () => void } => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  };

  const addressOf = (r: ApiResponse): string => (r.body.addresses as { address: string }[])[0]!.address;


  describe(`Used-up decisions are exact (${lagging.name}; issue 20)`, () => {
    it('keeps all 110 dynamic claims of 8 racing callers on a /25 in its upper band (.17-.126), the lower band untouched', async () => {
      // Prepare: 126 hosts, the lower band .1-.16 kept for static addresses, exactly 110 in the upper band
      const api = await testApi({}, {}, undefined, lagging);
      await poolWith(api, '10.0.0.0/25');
      const containers = [api, api.sibling(), api.sibling(), api.sibling()];
      let next = 0;
      const results: ApiResponse[] = [];
      // Act: 8 callers over 4 warm containers take the 110 claims between them
      await Promise.all(
        Array.from({ length: 8 }, async (_, caller) => {
          while (next < 110) {
            const i = next++;
            results.push(await containers[caller % containers.length]!.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) }));
          }
        }),
      );
      // Assess
      expect(results.filter((r) => r.status !== 201).map((r) => r.body)).toEqual([]);
      const lastOctets = results.map((r) => Number(addressOf(r).split('.')[3]));
      expect(new Set(lastOctets).size).toBe(110);
      expect(lastOctets.filter((o) => o < 17).sort((a, b) => a - b)).toEqual([]);
      // The lower band is still there for a static address.
      expect((await api.call('POST', '/v1/pools/p/claims', { name: 'dns', owner: owner('dns'), addresses: ['10.0.0.10'] })).status).toBe(201);
    });

    it('answers no RangeFull while an address is free when 16 racing callers fill a /24 and take back 24 released addresses (count them: none)', async () => {
      // Prepare
      const api = await testApi({}, {}, undefined, lagging);
      await poolWith(api, '10.0.1.0/24');
      // One container per caller, as serverless-offline and a busy deployment give each concurrent request its own.
      const containers = [api, ...Array.from({ length: 15 }, () => api.sibling())];
      const size = 254;
      const released = 24;
      // Every request's start and end on one counter of events, so "before" and "after" are exact whatever the
      // engine's speed: per address, the requests that took it and those that released it.
      let tick = 0;
      const spans = new Map<string, { taken: { start: number; end: number }[]; freed: { start: number; end: number }[] }>();
      const spansOf = (address: string) => spans.get(address) ?? spans.set(address, { taken: [], freed: [{ start: 0, end: 0 }] }).get(address)!;
      const names: string[] = [];
      const refusals: { start: number; end: number }[] = [];
      let filled!: () => void;
      const whenFilled = new Promise<void>((resolve) => (filled = resolve));
      // A caller told RangeFull tries again at the next release (or once the releaser is done), not in a tight loop.
      let release = signal();
      let releaserDone = false;
      const nextRelease = (): Promise<void> => (releaserDone ? Promise.resolve() : release.promise);
      // Act: each caller claims until the fill and the refill are done, going on after a RangeFull (a client retrying);
      // once the range is full, another client releases 24 claims one after the other
      const releaser = whenFilled.then(async () => {
        for (const name of names.slice(0, released)) {
          const address = addressOf(await api.call('GET', `/v1/pools/p/claims/${name}`));
          const start = (tick += 1);
          expect((await api.call('DELETE', `/v1/pools/p/claims/${name}`)).status).toBe(204);
          spansOf(address).freed.push({ start, end: (tick += 1) });
          release.resolve();
          release = signal();
        }
        releaserDone = true;
        release.resolve();
      });
      await Promise.all([
        releaser,
        ...Array.from({ length: 16 }, async (_, caller) => {
          for (let n = 0; names.length < size + released && n < 4 * size; n += 1) {
            const start = (tick += 1);
            const res = await containers[caller]!.call('POST', '/v1/pools/p/claims', { name: `c${caller}-${n}`, owner: owner(`u${caller}-${n}`) });
            const end = (tick += 1);
            if (res.status === 201) {
              spansOf(addressOf(res)).taken.push({ start, end });
              names.push(res.body.name as string);
              if (names.length === size) filled();
            } else if (res.body.code === 'RangeFull') {
              refusals.push({ start, end });
              if (names.length < size + released) await nextRelease();
            }
            else if (res.status !== 503) throw new Error(`caller ${caller}: ${res.status} ${JSON.stringify(res.body)}`);
          }
        }),
      ]);
      // Assess: a RangeFull is false when some address was surely free during the whole refused request: a release of it
      // (or the start) ended before the request started, and no request that got it could have taken it before the
      // refused one ended (none ended after that release began and started before the refusal ended)
      const surelyFree = (address: string, from: number, to: number): boolean => {
        const { taken, freed } = spansOf(address);
        return freed.some((r) => r.end < from && !taken.some((t) => t.end > r.start && t.start < to));
      };
      const hosts = Array.from({ length: size }, (_, i) => `10.0.1.${i + 1}`);
      const falseRangeFull = refusals.filter((r) => hosts.some((h) => surelyFree(h, r.start, r.end)));
      expect({ allocated: names.length, falseRangeFull: falseRangeFull.length }).toEqual({ allocated: size + released, falseRangeFull: 0 });
      expect((await api.sibling().call('POST', '/v1/pools/p/claims', { name: 'one-more', owner: owner('x') })).body.code).toBe('RangeFull');
    }, 120_000);
  });
}
