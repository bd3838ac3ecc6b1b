import { describe, expect, it } from 'vitest';
import { testApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { withSummaryLag, type TestEngine } from '../support/engines.ts';
import { owner } from '../support/fakes.ts';
import { countingStores } from '../support/counting.ts';
import {
  leaseOf,
  owner as harnessOwner,
  reconcilerHarness,
  T0,
  testSettings,
  type ReconcilerHarness,
} from '../support/reconciler.ts';
import { digestOfCounters } from '../../shared/core/used-up/rule.ts';
import { releasedLease } from '../../shared/core/model.ts';

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
            results.push(
              await containers[caller % containers.length]!.call('POST', '/v1/pools/p/claims', {
                name: `c${i}`,
                owner: owner(`u${i}`),
              }),
            );
          }
        }),
      );
      // Assess
      expect(results.filter((r) => r.status !== 201).map((r) => r.body)).toEqual([]);
      const lastOctets = results.map((r) => Number(addressOf(r).split('.')[3]));
      expect(new Set(lastOctets).size).toBe(110);
      expect(lastOctets.filter((o) => o < 17).sort((a, b) => a - b)).toEqual([]);
      // The lower band is still there for a static address.
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'dns', owner: owner('dns'), addresses: ['10.0.0.10'] }))
          .status,
      ).toBe(201);
    });

    /**
     * 16 racing callers, one container each, fill the pool's one range (`size` positions: addresses, or blocks by their
     * network address), a client then releases `released` of the claims one after the other, and the callers take them
     * back. No RangeFull may be answered while some position was surely free during the whole refused request.
     */
    async function fillAndRefill(fill: {
      readonly pool: Record<string, unknown>;
      readonly cidr: string;
      readonly size: number;
      readonly released: number;
      readonly position: (i: number) => string;
    }): Promise<void> {
      // Prepare
      const api = await testApi({}, {}, undefined, lagging);
      expect((await api.call('POST', '/v1/pools', { name: 'p', ...fill.pool })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: fill.cidr })).status).toBe(201);
      // One container per caller, as serverless-offline and a busy deployment give each concurrent request its own.
      const containers = [api, ...Array.from({ length: 15 }, () => api.sibling())];
      const { size, released } = fill;
      // Every request's start and end on one counter of events, so "before" and "after" are exact whatever the
      // engine's speed: per address, the requests that took it and those that released it.
      let tick = 0;
      const spans = new Map<
        string,
        { taken: { start: number; end: number }[]; freed: { start: number; end: number }[] }
      >();
      const spansOf = (address: string) =>
        spans.get(address) ?? spans.set(address, { taken: [], freed: [{ start: 0, end: 0 }] }).get(address)!;
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
            const res = await containers[caller]!.call('POST', '/v1/pools/p/claims', {
              name: `c${caller}-${n}`,
              owner: owner(`u${caller}-${n}`),
            });
            const end = (tick += 1);
            if (res.status === 201) {
              spansOf(addressOf(res)).taken.push({ start, end });
              names.push(res.body.name as string);
              if (names.length === size) filled();
            } else if (res.body.code === 'RangeFull') {
              refusals.push({ start, end });
              if (names.length < size + released) await nextRelease();
            } else if (res.status !== 503)
              throw new Error(`caller ${caller}: ${res.status} ${JSON.stringify(res.body)}`);
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
      const hosts = Array.from({ length: size }, (_, i) => fill.position(i));
      const falseRangeFull = refusals.filter((r) => hosts.some((h) => surelyFree(h, r.start, r.end)));
      expect({ allocated: names.length, falseRangeFull: falseRangeFull.length }).toEqual({
        allocated: size + released,
        falseRangeFull: 0,
      });
      expect(
        (await api.sibling().call('POST', '/v1/pools/p/claims', { name: 'one-more', owner: owner('x') })).body.code,
      ).toBe('RangeFull');
    }

    it('answers no RangeFull while an address is free when 16 racing callers fill a /24 and take back 24 released addresses (count them: none)', async () => {
      await fillAndRefill({
        pool: {},
        cidr: '10.0.1.0/24',
        size: 254,
        released: 24,
        position: (i) => `10.0.1.${i + 1}`,
      });
    }, 120_000);

    it('answers no RangeFull while a block is free when 16 racing callers fill a block pool (64 /28 blocks of a /22) and take back 8 released blocks (issue 35)', async () => {
      await fillAndRefill({
        pool: { blockPrefixLength: { IPv4: 28 } },
        cidr: '10.0.4.0/22',
        size: 64,
        released: 8,
        position: (i) => `10.0.${4 + Math.floor(i / 16)}.${(i % 16) * 16}`,
      });
    }, 120_000);
  });

  /** The last octet of an IPv4 address text. */
  const octet = (address: string): number => Number(address.split('.')[3]);

  /**
   * A /27 (hosts .1-.30: lower band .1-.16, upper band .17-.30) whose upper band is full (claims u0-u13, `fill` adds
   * to each body) and sealed: claim `sealer` went to the lower band, which read the upper band used up and sealed it.
   * The summary stays one lease change behind (the engine's lag), so the next claim's summary still shows a freed
   * upper-band address taken: only the seal check (or its bulk read) can find it.
   */
  async function sealedUpperBand(
    h: ReconcilerHarness,
    pool: Record<string, unknown> = {},
    fill: (i: number) => Record<string, unknown> = () => ({}),
  ) {
    expect((await h.api.call('POST', '/v1/pools', { name: 'p', ...pool })).status).toBe(201);
    expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.60.0.0/27' })).status).toBe(201);
    const filled: Awaited<ReturnType<ReconcilerHarness['claim']>>[] = [];
    for (let i = 0; i < 14; i += 1)
      filled.push(await h.claim('p', { name: `u${i}`, owner: harnessOwner(`u${i}`), ...fill(i) }));
    expect(filled.map((c) => octet(c.addresses[0]!.address)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 14 }, (_, i) => 17 + i),
    );
    const sealer = await h.claim('p', { name: 'sealer', owner: harnessOwner('sealer') });
    expect(octet(sealer.addresses[0]!.address)).toBeLessThan(17);
    // The cases below are about what breaks this seal: it must be there (a case would pass with sealing off too).
    expect(
      Object.keys((await h.api.container.stores.seals.readSeals('p', ['10.60.0.0-27'])).get('10.60.0.0-27')!.seals),
    ).toContain('upper_0');
    return { address: (i: number) => filled[i]!.addresses[0]!.address };
  }

  /** A container whose owner index shows nothing held (as it lags a release by up to a second or so). */
  const indexLagging = (h: ReconcilerHarness): TestApi =>
    h.api.sibling({
      clock: h.clock,
      viewMaxAgeMs: 0,
      wrapStores: (s) => ({
        ...s,
        leases: new Proxy(s.leases, { get: (t, p, r) => (p === 'heldFor' ? async () => [] : Reflect.get(t, p, r)) }),
      }),
    });

  /** Another container: what it frees its own hint knows, the claiming container's does not. */
  const elsewhere = (h: ReconcilerHarness): TestApi => h.api.sibling({ clock: h.clock, viewMaxAgeMs: 0 });

  const oneBehind = withSummaryLag(engine, 1);

  describe(`Used-up seals: every way an address gets free breaks them (${oneBehind.name}; issue 20)`, () => {
    it('takes a released upper-band address after the band was sealed, and reads only the seal, not the band, while nothing was freed', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h);
      const counts = new Map<string, number>();
      const counted = h.api.sibling({ clock: h.clock, viewMaxAgeMs: 0, wrapStores: countingStores(counts) });
      // Act: one more claim while the band stays sealed, then a release of u3 and a claim after it
      const lower = await counted.call('POST', '/v1/pools/p/claims', { name: 'cheap', owner: harnessOwner('cheap') });
      const sealedCounts = Object.fromEntries(
        [...counts].filter(([k]) => k === 'readSeals' || k === 'leaseStates' || k === 'seal'),
      );
      expect((await elsewhere(h).call('DELETE', '/v1/pools/p/claims/u3')).status).toBe(204);
      const next = await h.claim('p', { name: 'next', owner: harnessOwner('next') });
      // Assess: the sealed band cost one read of its counters (the lower band's few candidates one batch), no bulk read
      expect(octet(addressOf(lower))).toBeLessThan(17);
      expect(sealedCounts).toEqual({ leaseStates: 1, readSeals: 1 });
      expect(next.addresses[0]!.address).toBe(address(3));
    });

    it('writes a seal at counters a release moved since they were read, which no claim trusts: the next one takes the freed address', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h);
      const { seals } = h.api.container.stores;
      const before = (await seals.readSeals('p', ['10.60.0.0-27'])).get('10.60.0.0-27')!;
      const upper = before.seals.upper_0!;
      expect(upper.freed).toEqual(digestOfCounters([['10.60.0.0-27', before.freed]]));
      // Act: a release, then a late sealer writes the upper band's seal at the counters it read before the release
      expect((await elsewhere(h).call('DELETE', '/v1/pools/p/claims/u1')).status).toBe(204);
      await seals.seal('p', '10.60.0.0-27', 'upper_0', upper);
      const stale = (await seals.readSeals('p', ['10.60.0.0-27'])).get('10.60.0.0-27')!;
      const next = await h.claim('p', { name: 'next', owner: harnessOwner('next') });
      // Assess: the stale seal is there, one counter past it, and the claim read the band again
      expect(stale.seals.upper_0).toEqual(upper);
      expect(stale.freed.reduce((a, b) => a + b, 0)).toBe(before.freed.reduce((a, b) => a + b, 0) + 1);
      expect(next.addresses[0]!.address).toBe(address(1));
    });

    it('seals a large band in parts (3 seals at the counters read before each), and decides from them alone while they hold', async () => {
      // Prepare: a /23 (hosts .0.1-.1.254; lower band the first 31, upper band the other 479, sealed in 3 parts of at
      // least TUNING.sealPartMin) whose upper band is held by leases written directly
      const h = await reconcilerHarness({ engine });
      expect((await h.api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.62.0.0/23' })).status).toBe(201);
      const range = '10.62.0.0-23';
      const upper = Array.from({ length: 479 }, (_, i) => `10.62.${Math.floor((32 + i) / 256)}.${(32 + i) % 256}`);
      for (let i = 0; i < upper.length; i += 32)
        await Promise.all(
          upper
            .slice(i, i + 32)
            .map((address, j) =>
              h.putLease(leaseOf('p', address, range, `seed-${i + j}`, `seed-uid-${i + j}`, T0 - 60_000)),
            ),
        );
      const counts = new Map<string, number>();
      const counted = h.api.sibling({ clock: h.clock, viewMaxAgeMs: 0, wrapStores: countingStores(counts) });
      // Act: a claim goes to the lower band (the upper band read and sealed part by part), then another
      const first = await h.claim('p', { name: 'first', owner: harnessOwner('first') });
      const sealed = (await h.api.container.stores.seals.readSeals('p', [range])).get(range)!;
      const second = await counted.call('POST', '/v1/pools/p/claims', {
        name: 'second',
        owner: harnessOwner('second'),
      });
      // Assess
      const lowerBand = (address: string): boolean => address.startsWith('10.62.0.') && octet(address) < 32;
      expect([lowerBand(first.addresses[0]!.address), lowerBand(addressOf(second))]).toEqual([true, true]);
      expect(Object.keys(sealed.seals).sort()).toEqual(Array.from({ length: 3 }, (_, k) => `upper_${k}`));
      expect(Object.values(sealed.seals).map((seal) => seal.freed)).toEqual(
        Array.from({ length: 3 }, () => digestOfCounters([[range, sealed.freed]])),
      );
      expect([counts.get('readSeals'), counts.get('seal') ?? 0]).toEqual([1, 0]);
    });

    it('answers RangeFull, not a 5xx, in a full pool of 30 overlapping ranges (its seals name the counters of 30 ranges)', async () => {
      // Prepare: a /25 and 29 /30s inside it, every one of its 126 hosts held by a lease written directly. The /25's
      // bands are overlapped by all 29 others, so their seals record 30 ranges' counters: a seal that checked each
      // shard in its transaction would exceed DynamoDB's 100 operations and could never be written.
      const h = await reconcilerHarness({ engine });
      const small = Array.from({ length: 29 }, (_, i) => `10.64.0.${4 * i}/30`);
      await h.pool('p', ['10.64.0.0/25', ...small]);
      const hosts = Array.from({ length: 126 }, (_, i) => `10.64.0.${i + 1}`);
      for (let i = 0; i < hosts.length; i += 32)
        await Promise.all(
          hosts
            .slice(i, i + 32)
            .map((address, j) =>
              h.putLease(leaseOf('p', address, '10.64.0.0-25', `seed-${i + j}`, `seed-uid-${i + j}`, T0 - 60_000)),
            ),
        );
      // Act: two claims, the second after the first sealed what it read
      const first = await h.api.call('POST', '/v1/pools/p/claims', { name: 'first', owner: harnessOwner('first') });
      const second = await h.api
        .sibling({ clock: h.clock, viewMaxAgeMs: 0 })
        .call('POST', '/v1/pools/p/claims', { name: 'second', owner: harnessOwner('second') });
      // Assess
      expect([first.status, first.body.code, second.status, second.body.code]).toEqual([
        409,
        'RangeFull',
        409,
        'RangeFull',
      ]);
      const sealed = (await h.api.container.stores.seals.readSeals('p', ['10.64.0.0-25'])).get('10.64.0.0-25')!;
      expect(Object.keys(sealed.seals).sort()).toEqual(['lower_0', 'upper_0']);
      const read = await h.api.container.stores.seals.readSeals('p', [
        '10.64.0.0-25',
        ...small.map((c) => c.replace('/', '-')),
      ]);
      expect(sealed.seals.upper_0!.freed).toBe(digestOfCounters([...read].map(([range, r]) => [range, r.freed])));
      // One digest of the 30 counters, not their shards (~6 KB) nor a digest each (~1.1 KB): the seal stays small
      // whatever the number of overlapping ranges, so a seals item of 32 parts never nears DynamoDB's 400 KB.
      expect(JSON.stringify(sealed.seals.upper_0).length).toBeLessThan(200);
    });

    it('takes an upper-band address freed by an owner release after the band was sealed', async () => {
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h);
      expect((await elsewhere(h).call('DELETE', '/v1/pools/p/owners/u5')).body.released).toEqual(['u5']);
      expect((await h.claim('p', { name: 'next', owner: harnessOwner('next') })).addresses[0]!.address).toBe(
        address(5),
      );
    });

    it('takes an upper-band address whose orphaned lease the reconciler released after the band was sealed', async () => {
      // Prepare: u7's claim item vanishes (corruption), leaving its lease orphaned
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h);
      await h.remove({ PK: 'CLAIM#p#u7', SK: 'CLAIM' });
      h.clock.advance(testSettings.orphanLeaseGraceMs + 1);
      // Act
      await h.run();
      // Assess
      expect(await h.get({ PK: `LEASE#p#${address(7)}`, SK: 'LEASE' })).toBeUndefined();
      expect((await h.claim('p', { name: 'next', owner: harnessOwner('next') })).addresses[0]!.address).toBe(
        address(7),
      );
    });

    it('takes an upper-band address whose claim was renewed to an earlier expiry that has passed', async () => {
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h, {}, () => ({ ttlSeconds: 3600 }));
      expect((await elsewhere(h).call('POST', '/v1/pools/p/claims/u2/renew', { ttlSeconds: 30 })).status).toBe(200);
      h.clock.advance(31_000);
      expect((await h.claim('p', { name: 'next', owner: harnessOwner('next') })).addresses[0]!.address).toBe(
        address(2),
      );
    });

    it('keeps a seal through a renewal that extends an expiry: no counter moves, and the next lower-band claim reads only the seal', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine: oneBehind });
      await sealedUpperBand(h, {}, () => ({ ttlSeconds: 3600 }));
      const { seals } = h.api.container.stores;
      const counters = async () => (await seals.readSeals('p', ['10.60.0.0-27'])).get('10.60.0.0-27')!.freed;
      const before = await counters();
      const counts = new Map<string, number>();
      const counted = h.api.sibling({ clock: h.clock, viewMaxAgeMs: 0, wrapStores: countingStores(counts) });
      // Act
      expect((await elsewhere(h).call('POST', '/v1/pools/p/claims/u2/renew', { ttlSeconds: 7200 })).status).toBe(200);
      const after = await counters();
      const lower = await counted.call('POST', '/v1/pools/p/claims', { name: 'next', owner: harnessOwner('next') });
      // Assess
      expect(after).toEqual(before);
      expect(octet(addressOf(lower))).toBeLessThan(17);
      expect(
        Object.fromEntries([...counts].filter(([k]) => k === 'readSeals' || k === 'leaseStates' || k === 'seal')),
      ).toEqual({ leaseStates: 1, readSeals: 1 });
    });

    it("renews only while the claim's expiry is the one read: a renewal from a stale read is sent back to read again and moves nothing", async () => {
      // Prepare: u2 read with its first expiry, then renewed by another request
      const h = await reconcilerHarness({ engine: oneBehind });
      await sealedUpperBand(h, {}, () => ({ ttlSeconds: 3600 }));
      const { claims } = h.api.container.stores;
      const stale = (await claims.getClaim('p', 'u2'))!;
      expect((await elsewhere(h).call('POST', '/v1/pools/p/claims/u2/renew', { ttlSeconds: 7200 })).status).toBe(200);
      const renewed = (await claims.getClaim('p', 'u2'))!;
      // Act: a renewal judged against the stale expiry (it would look like an extension and bump nothing)
      const outcome = await claims.renewClaim(stale, stale.expiresAt! + 1_000);
      // Assess: the use case reads the claim again and judges the renewal against the expiry it finds
      expect(outcome).toBe('changed');
      expect((await claims.getClaim('p', 'u2'))!.expiresAt).toBe(renewed.expiresAt);
    });

    it('takes an upper-band address whose lease passed its TTL after the band was sealed (no write at all frees it)', async () => {
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h, {}, (i) => (i === 9 ? { ttlSeconds: 60 } : {}));
      h.clock.advance(61_000);
      expect((await h.claim('p', { name: 'next', owner: harnessOwner('next') })).addresses[0]!.address).toBe(
        address(9),
      );
    });

    it('gives an owner its own held upper-band address back though its owner index lags, while another owner goes to the lower band', async () => {
      // Prepare: a pool with a reuse delay; u4 releases (its address stays held for pod-u4)
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h, { reuseDelaySeconds: 600 });
      expect((await elsewhere(h).call('DELETE', '/v1/pools/p/claims/u4')).status).toBe(204);
      // Act: another owner's claim (reads the band again, finds it used up for anyone but pod-u4, seals it so); then
      // pod-u4's new incarnation, whose owner index shows nothing held yet
      const other = await h.claim('p', { name: 'other', owner: harnessOwner('other') });
      const back = await indexLagging(h).call('POST', '/v1/pools/p/claims', {
        name: 'back',
        owner: harnessOwner('u4-new', 'pod-u4'),
      });
      // Assess
      expect(octet(other.addresses[0]!.address)).toBeLessThan(17);
      expect(back.status).toBe(201);
      expect(addressOf(back)).toBe(address(4));
    });

    it('gives an owner back the upper-band address a replacing claim of another owner left held for it', async () => {
      // Prepare: a pool with a reuse delay; u6's claim has a TTL and expires (its lease stays held for the delay)
      const h = await reconcilerHarness({ engine: oneBehind });
      const { address } = await sealedUpperBand(h, { reuseDelaySeconds: 600 }, (i) =>
        i === 6 ? { ttlSeconds: 60 } : {},
      );
      h.clock.advance(61_000);
      // Act: another owner takes the name u6 (its commit turns u6's lease into one held for pod-u6); then pod-u6's
      // new incarnation claims, its owner index showing nothing held yet
      const replacing = await h.claim('p', { name: 'u6', owner: harnessOwner('z') });
      const back = await indexLagging(h).call('POST', '/v1/pools/p/claims', {
        name: 'back',
        owner: harnessOwner('u6-new', 'pod-u6'),
      });
      // Assess
      expect(octet(replacing.addresses[0]!.address)).toBeLessThan(17);
      expect(back.status).toBe(201);
      expect(addressOf(back)).toBe(address(6));
    });

    it('finds an address freed by a claim taken through a range removed since (covered by another): no seal rests on a counter the band does not read', async () => {
      // Prepare: range A (10.60.0.0/27) and claim x through it; range b with the same CIDR; A removed at once (b
      // covers it), so x keeps naming A, whose counter no band of the pool's view reads any more
      const h = await reconcilerHarness({ engine: oneBehind });
      await h.pool('p', ['10.60.0.0/27']);
      const x = await h.claim('p', { name: 'x', owner: harnessOwner('x') });
      expect(x.addresses[0]!.range).toBe('10.60.0.0-27');
      expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.60.0.0/27', name: 'b' })).status).toBe(201);
      expect((await h.api.call('DELETE', '/v1/pools/p/ranges/10.60.0.0-27')).status).toBe(204);
      // The other 29 hosts through b, then a RangeFull: both bands read used up
      for (let i = 0; i < 29; i += 1) await h.claim('p', { name: `f${i}`, owner: harnessOwner(`f${i}`) });
      expect(
        (await h.api.call('POST', '/v1/pools/p/claims', { name: 'full', owner: harnessOwner('full') })).body.code,
      ).toBe('RangeFull');
      // Act: x released from another container; the summary (one change behind) still shows its address taken
      expect((await elsewhere(h).call('DELETE', '/v1/pools/p/claims/x')).status).toBe(204);
      const next = await h.api.call('POST', '/v1/pools/p/claims', { name: 'next', owner: harnessOwner('next') });
      // Assess: x's address was free for the whole request
      expect([next.status, next.body.code]).toEqual([201, undefined]);
      expect(addressOf(next)).toBe(x.addresses[0]!.address);
    });

    it('sends a claim to the lower band when every upper-band address of a band in several parts is held for one of 479 other owners (a seal cannot hold them; no 503)', async () => {
      // Prepare: a /23 in a pool with a reuse delay (upper band 479 addresses, read in parts); each upper-band address
      // a Released lease held 10 more minutes for its own previous owner, more owners than a seal lists
      const h = await reconcilerHarness({ engine });
      expect((await h.api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: 600 })).status).toBe(201);
      expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.62.0.0/23' })).status).toBe(201);
      const upper = Array.from({ length: 479 }, (_, i) => `10.62.${Math.floor((32 + i) / 256)}.${(32 + i) % 256}`);
      const hold = { reusableAt: T0 + 600_000, releasedAt: new Date(T0).toISOString() };
      for (let i = 0; i < upper.length; i += 32) {
        await Promise.all(
          upper
            .slice(i, i + 32)
            .map((address, j) =>
              h.putLease(
                releasedLease(
                  leaseOf('p', address, '10.62.0.0-23', `seed-${i + j}`, `seed-uid-${i + j}`, T0 - 60_000),
                  hold,
                ),
              ),
            ),
        );
      }
      // Act
      const res = await h.api.call('POST', '/v1/pools/p/claims', { name: 'new', owner: harnessOwner('new') });
      // Assess: a lower-band host (the /23's first 31)
      expect([res.status, res.body.code]).toEqual([201, undefined]);
      const [, , third, fourth] = addressOf(res).split('.').map(Number);
      expect(third === 0 && fourth! >= 1 && fourth! <= 31).toBe(true);
    });
  });
}
