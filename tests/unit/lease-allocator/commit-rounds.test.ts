import { describe, expect, it } from 'vitest';
import { HintCache } from '../../../shared/core/allocator/hint.ts';
import { LeaseAllocator } from '../../../shared/core/allocator/lease-allocator.ts';
import { AlreadyAllocatedError, NotReadyError } from '../../../shared/core/errors.ts';
import { IpFamily } from '../../../shared/core/ip/address.ts';
import { type Claim } from '../../../shared/core/model.ts';
import type { CommitOutcome } from '../../../shared/core/ports.ts';
import { ScriptedRandom, SeededRandom } from '../fakes.ts';
import {
  NOW,
  POOL,
  clockAt,
  InMemoryLeaseStore,
  viewOf,
  draftOf,
  dynamic,
  explicit,
  allocatorOver,
  warmHint,
} from './support.ts';

describe('Class: LeaseAllocator', () => {
  describe('Method: allocate, commit rounds: one transaction per round, collisions re-picked, batches, dual-stack, errors', () => {
    it('takes a batch in one commit, and after a collision re-picks only the collided address, keeping the rest of the batch', async () => {
      // Prepare: every pick scans from .100; the hint was read before another container took .101
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      const { allocator, hints } = allocatorOver(
        store,
        new ScriptedRandom([100n - 17n, 100n - 17n, 100n - 17n, 100n - 17n]),
      );
      await warmHint(hints, view);
      store.hold(['10.0.0.101']);

      // Act
      const result = await allocator.allocate(view, draftOf(), [{ family: IpFamily.IPv4, count: 3 }]);

      // Assess: the batch's own picks skip each other; the second commit replaces .101 alone
      expect(store.commitCalls.map((c) => c.claim.addresses.map((a) => a.address))).toEqual([
        ['10.0.0.100', '10.0.0.101', '10.0.0.102'],
        ['10.0.0.100', '10.0.0.102', '10.0.0.103'],
      ]);
      expect(result).toMatchObject({ kind: 'allocated', collisions: 1 });
      expect(
        [...store.leases.values()]
          .filter((l) => l.claim === 'claim-1')
          .map((l) => l.address)
          .sort(),
      ).toEqual(['10.0.0.100', '10.0.0.102', '10.0.0.103']);
      // Nothing stays in flight once the call settles.
      expect(hints.inFlight(POOL, IpFamily.IPv4).size).toBe(0);
    });

    it('aborts after one attempt when the store fails with anything but a collision (NotReadyError)', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      store.failWith = new NotReadyError();
      const { allocator, hints } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/24']), draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(NotReadyError);
      expect(store.commits).toBe(1);
      expect(hints.inFlight(POOL, IpFamily.IPv4).size).toBe(0);
    });

    it('aborts after one attempt and passes an unknown store error through unchanged', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const failure = new Error('ValidationException: something the adapter did not expect');
      store.failWith = failure;
      const { allocator } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/24']), draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toBe(failure);
      expect(store.commits).toBe(1);
    });

    it('gives up with NotReadyError after maxCommits commits that all collided', async () => {
      // Prepare: a store where every lease is always taken by someone, and whose reads never show it
      const store = new InMemoryLeaseStore();
      const contended = {
        commits: 0,
        commitClaim: async (claim: Claim): Promise<CommitOutcome> => {
          contended.commits += 1;
          return { kind: 'addressesTaken', taken: claim.addresses.map((a) => ({ address: a.address })) };
        },
        releaseClaim: async (): Promise<'absent'> => 'absent',
        getClaim: async (): Promise<undefined> => undefined,
      };
      const hints = new HintCache((pool, family, intervals, at) => store.takenAddresses(pool, family, intervals, at));
      const allocator = new LeaseAllocator({
        claims: contended,
        hints,
        clock: clockAt(NOW),
        random: new SeededRandom(15),
        maxCommits: 5,
        leaseStates: (pool, addresses) => store.leaseStates(pool, addresses),
      });

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/24']), draftOf(), [dynamic()]);

      // Assess
      await expect(allocation).rejects.toThrow(NotReadyError);
      expect(contended.commits).toBe(5);
    });

    it('returns the existing claim when the claim was already made', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const { allocator } = allocatorOver(store);
      const view = viewOf(['10.0.0.0/24']);
      const first = await allocator.allocate(view, draftOf(), [dynamic()]);

      // Act
      const again = await allocator.allocate(view, { ...draftOf(), uid: 'another-uid' }, [dynamic()]);

      // Assess
      expect(again).toEqual({ kind: 'exists', claim: first.kind === 'allocated' ? first.claim : undefined });
      expect(store.commits).toBe(2);
    });

    it('gives concurrent requests of one container different candidates while the first is in flight', async () => {
      // Prepare: both picks start at .17; the first transaction is still open when the second request picks
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24']);
      const { allocator, hints } = allocatorOver(store, new ScriptedRandom([0n, 0n]));
      await warmHint(hints, view);
      let open: () => void = () => {};
      store.gate = new Promise((resolve) => (open = resolve));

      // Act
      const first = allocator.allocate(view, draftOf('claim-1'), [dynamic()]);
      const second = allocator.allocate(view, draftOf('claim-2'), [dynamic()]);
      await new Promise((resolve) => setImmediate(resolve));
      open();
      const results = await Promise.all([first, second]);

      // Assess
      expect(results.map((r) => r.kind === 'allocated' && r.claim.addresses[0]!.address)).toEqual([
        '10.0.0.17',
        '10.0.0.18',
      ]);
      expect(store.commits).toBe(2);
      expect(hints.inFlight(POOL, IpFamily.IPv4).size).toBe(0);
    });

    it('writes both addresses of a dual-stack claim in one commit', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      const { allocator } = allocatorOver(store);

      // Act
      const result = await allocator.allocate(viewOf(['10.0.0.0/24', 'fd00::/64']), draftOf(), [
        dynamic(IpFamily.IPv4),
        dynamic(IpFamily.IPv6),
      ]);

      // Assess
      expect(store.commits).toBe(1);
      expect(store.commitCalls[0]!.leases.map((l) => l.family)).toEqual([IpFamily.IPv4, IpFamily.IPv6]);
      expect(result.kind === 'allocated' && result.claim.addresses.map((a) => [a.family, a.range])).toEqual([
        [IpFamily.IPv4, '10.0.0.0-24'],
        [IpFamily.IPv6, 'fd00::-64'],
      ]);
    });

    it('keeps the IPv4 pick of a dual-stack claim and picks again only the IPv6 address that collided', async () => {
      // Prepare: an explicit IPv4 address and a stale IPv6 hint; both IPv6 picks start at the held address
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24', 'fd00::/120']);
      const { allocator, hints } = allocatorOver(store, new ScriptedRandom([0n, 0n]));
      await warmHint(hints, view, IpFamily.IPv6);
      store.hold(['fd00::11']);

      // Act
      const result = await allocator.allocate(view, draftOf(), [explicit('10.0.0.10'), dynamic(IpFamily.IPv6)]);

      // Assess
      expect(store.commitCalls.map((c) => c.claim.addresses.map((a) => a.address))).toEqual([
        ['10.0.0.10', 'fd00::11'],
        ['10.0.0.10', 'fd00::12'],
      ]);
      expect(result.kind).toBe('allocated');
      expect(store.leases.get('10.0.0.10')!.claim).toBe('claim-1');
    });

    it('picks both families again when both dynamic addresses of a dual-stack claim collide in one commit', async () => {
      // Prepare: stale hints for both families; both first picks land on held addresses
      const store = new InMemoryLeaseStore();
      const view = viewOf(['10.0.0.0/24', 'fd00::/120']);
      const { allocator, hints } = allocatorOver(store, new ScriptedRandom([0n, 0n, 0n, 0n]));
      await warmHint(hints, view, IpFamily.IPv4);
      await warmHint(hints, view, IpFamily.IPv6);
      store.hold(['10.0.0.17', 'fd00::11']);

      // Act
      const result = await allocator.allocate(view, draftOf(), [dynamic(IpFamily.IPv4), dynamic(IpFamily.IPv6)]);

      // Assess
      expect(store.commitCalls.map((c) => c.claim.addresses.map((a) => a.address))).toEqual([
        ['10.0.0.17', 'fd00::11'],
        ['10.0.0.18', 'fd00::12'],
      ]);
      expect(result).toMatchObject({ kind: 'allocated', collisions: 2 });
    });

    it('writes nothing of a dual-stack claim whose explicit IPv6 address is held', async () => {
      // Prepare
      const store = new InMemoryLeaseStore();
      store.hold(['fd00::5']);
      const { allocator } = allocatorOver(store);

      // Act
      const allocation = allocator.allocate(viewOf(['10.0.0.0/24', 'fd00::/64']), draftOf(), [
        dynamic(IpFamily.IPv4),
        explicit('fd00::5'),
      ]);

      // Assess
      await expect(allocation).rejects.toThrow(AlreadyAllocatedError);
      expect([...store.leases.keys()]).toEqual(['fd00::5']);
    });
  });
});
