import { describe, expect, it } from 'vitest';
import { HintCache } from '../../../shared/core/allocator/hint.ts';
import { TUNING } from '../../../shared/core/allocator/tuning.ts';
import { LeaseAllocator } from '../../../shared/core/allocator/lease-allocator.ts';
import { RangeFullError } from '../../../shared/core/errors.ts';
import { IpFamily } from '../../../shared/core/ip/address.ts';
import { SeededRandom } from '../fakes.ts';
import {
  NOW,
  clockAt,
  InMemoryLeaseStore,
  viewOf,
  draftOf,
  dynamic,
  hosts,
  allocatorOver,
  warmHint,
} from './support.ts';

describe('Class: LeaseAllocator', () => {
  describe('Method: allocate, RangeFull only once the leases say used up: fresh and stale views, the trust window, the bands', () => {
    it('answers RangeFull for a batch larger than the free addresses, without committing anything', async () => {
      // Prepare: a /29 (6 hosts) with 2 held leaves 4
      const store = new InMemoryLeaseStore();
      store.hold(['10.0.0.1', '10.0.0.2']);
      const { allocator } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/29']), draftOf(), [{ family: IpFamily.IPv4, count: 5 }]);

      // Assess
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.commits).toBe(0);
      expect(
        (await allocator.allocate(viewOf(['10.0.0.0/29']), draftOf(), [{ family: IpFamily.IPv4, count: 4 }])).kind,
      ).toBe('allocated');
    });

    it('answers RangeFull without a single commit when a fresh hint shows the range full', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      store.hold(hosts('10.0.0.', 1, 254));
      const { allocator, hints } = allocatorOver(store);
      await warmHint(hints, view);

      // Act
      const allocation = allocator.allocate(view, draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.commits).toBe(0);
    });

    it('answers RangeFull from a full view read within the trust window only after reading every lease of the range in bulk', async () => {
      // Prepare: the hint was read 999 ms ago and showed the range full
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      store.hold(hosts('10.0.0.', 1, 254));
      const { allocator, hints } = allocatorOver(store, new SeededRandom(1), NOW + TUNING.fullTrustMs - 1);
      await warmHint(hints, view);
      const readsBefore = store.reads;

      // Act
      const allocation = allocator.allocate(view, draftOf(), [dynamic()]);

      // Assess: the hint is not read again; its "full" is confirmed by the leases, all 254 read in waves
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.reads - readsBefore).toBe(0);
      expect(store.bulkAddresses).toBe(254);
      expect(store.commits).toBe(0);
    });

    it('finds, within the trust window, an address another container freed: the view may not decide the range is full (issue 20)', async () => {
      // Prepare: full when read; another container has freed .200 since
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      store.hold(hosts('10.0.0.', 1, 254));
      const { allocator, hints } = allocatorOver(store, new SeededRandom(1), NOW + 500);
      await warmHint(hints, view);
      store.leases.delete('10.0.0.200');

      // Act
      const result = await allocator.allocate(view, draftOf(), [dynamic()]);

      // Assess
      expect(result.kind === 'allocated' && result.claim.addresses[0]!.address).toBe('10.0.0.200');
      expect(store.commits).toBe(1);
    });

    it('takes a lower-band address only after reading the whole upper band taken, and an upper one the hint missed first (issue 20)', async () => {
      // Prepare: the hint shows the upper band (.17-.254) full; .100 was freed since, the lower band is free
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      store.hold(hosts('10.0.0.', 17, 254));
      const { allocator, hints } = allocatorOver(store, new SeededRandom(1), NOW + 500);
      await warmHint(hints, view);
      store.leases.delete('10.0.0.100');

      // Act
      const first = await allocator.allocate(view, draftOf('a'), [dynamic()]);
      const second = await allocator.allocate(view, draftOf('b'), [dynamic()]);

      // Assess: .100 first; then the upper band is read whole (238 addresses) before a lower-band address is given
      expect(first.kind === 'allocated' && first.claim.addresses[0]!.address).toBe('10.0.0.100');
      const bulkBefore = store.bulkAddresses;
      expect(second.kind === 'allocated' && Number(second.claim.addresses[0]!.address.split('.')[3])).toBeLessThan(17);
      expect(bulkBefore).toBeGreaterThan(0);
    });

    it('reads a full view again once it is older than the trust window, and takes the address freed since', async () => {
      // Prepare: full when read (within the hint's max age, past the 1 s trust window); .7 freed since
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      store.hold(hosts('10.0.0.', 1, 254));
      const { allocator, hints } = allocatorOver(store, new SeededRandom(1), NOW + TUNING.fullTrustMs);
      await warmHint(hints, view);
      store.leases.delete('10.0.0.7');
      const readsBefore = store.reads;

      // Act
      const result = await allocator.allocate(view, draftOf(), [dynamic()]);

      // Assess
      expect(store.reads - readsBefore).toBe(1);
      expect(result.kind === 'allocated' && result.claim.addresses[0]!.address).toBe('10.0.0.7');
    });

    it('trusts nothing when the trust window is zero: a full view is read again before RangeFull', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      store.hold(hosts('10.0.0.', 1, 254));
      const hints = new HintCache((pool, family, intervals, at) => store.takenAddresses(pool, family, intervals, at));
      const allocator = new LeaseAllocator({
        claims: store,
        hints,
        clock: clockAt(NOW),
        random: new SeededRandom(1),
        fullTrustMs: 0,
        leaseStates: (pool, addresses) => store.leaseStates(pool, addresses),
      });
      await warmHint(hints, view);
      const readsBefore = store.reads;

      // Act
      const allocation = allocator.allocate(view, draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.reads - readsBefore).toBe(1);
    });

    it('answers RangeFull without a single commit on a cold container', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      store.hold(hosts('10.0.0.', 1, 254));
      const { allocator } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/24']), draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.commits).toBe(0);
    });

    it('answers RangeFull after at most two commits when a stale hint still shows free addresses', async () => {
      // Prepare: the hint was read on an empty range; the range has filled since
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      const { allocator, hints } = allocatorOver(store, new SeededRandom(11));
      await warmHint(hints, view);
      store.hold(hosts('10.0.0.', 1, 254));

      // Act
      const allocation = allocator.allocate(view, draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.commits).toBeLessThanOrEqual(2);
    });

    it('answers RangeFull without committing when the only Ready range has no hosts (/32)', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const { allocator } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.7/32']), draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(RangeFullError);
      expect(store.commits).toBe(0);
    });
  });
});
