import { describe, expect, it } from 'vitest';
import { AlreadyAllocatedError, RangeFullError } from '../../../shared/core/errors.ts';
import { SeededRandom } from '../fakes.ts';
import { NOW, InMemoryLeaseStore, viewOf, draftOf, dynamic, explicit, allocatorOver } from './support.ts';

describe('Class: LeaseAllocator', () => {
  describe('Method: allocate, explicit addresses and exclusions', () => {
    it('throws AlreadyAllocatedError with the holder when an explicit address is held, after one commit', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      store.hold(['10.0.0.10'], 'holder-claim');
      const { allocator } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/24']), draftOf(), [explicit('10.0.0.10')]);

      // Assess
      await expect(allocation).rejects.toThrow(AlreadyAllocatedError);
      await expect(allocation).rejects.toMatchObject({
        address: '10.0.0.10',
        holder: { claim: 'holder-claim', owner: { uid: 'holder-claim-owner' } },
      });
      expect(store.commits).toBe(1);
    });

    it('takes an explicit address whose lease has expired', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      store.hold(['10.0.0.10'], 'expired-claim', NOW - 1);
      const { allocator } = allocatorOver(store);

      // Act
      const result = await allocator.allocate(viewOf(['10.0.0.0/24']), draftOf(), [explicit('10.0.0.10')]);

      // Assess
      expect(result.kind).toBe('allocated');
      expect(store.leases.get('10.0.0.10')!.claim).toBe('claim-1');
      expect(store.commitCalls[0]!.nowMs).toBe(NOW);
    });

    it('takes an explicit address in the lower band and inside an exclusion (exclusions bind dynamic picks only)', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const { allocator } = allocatorOver(store);

      // Act
      const result = await allocator.allocate(viewOf(['10.0.0.0/24'], ['10.0.0.0/28']), draftOf(), [
        explicit('10.0.0.3'),
      ]);

      // Assess
      expect(result.kind === 'allocated' && result.claim.addresses[0]!.address).toBe('10.0.0.3');
    });

    it('never hands out an excluded address dynamically', async () => {
      // Prepare: a /28 (14 hosts, no lower band) with everything but .9 excluded
      const store = new InMemoryLeaseStore();
      const { allocator } = allocatorOver(store, new SeededRandom(12));
      const view = viewOf(['10.0.0.0/28'], ['10.0.0.0/29', '10.0.0.8/32', '10.0.0.10/31', '10.0.0.12/30']);

      // Act
      const first = await allocator.allocate(view, draftOf('claim-1'), [dynamic()]);
      const second = allocator.allocate(view, draftOf('claim-2'), [dynamic()]);

      // Assess
      expect(first.kind === 'allocated' && first.claim.addresses[0]!.address).toBe('10.0.0.9');
      await expect(second).rejects.toThrow(RangeFullError);
    });
  });
});
