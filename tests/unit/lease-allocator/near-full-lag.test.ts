import { describe, expect, it } from 'vitest';
import { HintCache } from '../../../shared/core/allocator/hint.ts';
import { TUNING } from '../../../shared/core/allocator/tuning.ts';
import { LeaseAllocator } from '../../../shared/core/allocator/lease-allocator.ts';
import { parseAddress } from '../../../shared/core/ip/address.ts';
import { type Claim, type PoolView } from '../../../shared/core/model.ts';
import type { Random } from '../../../shared/core/ports.ts';
import type { UsedUpSeal, UsedUpSeals } from '../../../shared/core/used-up/ports.ts';
import { SeededRandom } from '../fakes.ts';
import { NOW, clockAt, InMemoryLeaseStore, viewOf, draftOf, dynamic, hosts } from './support.ts';

/** The upper band of 10.0.0.0/22 (.0.64-.3.254): every address past the lower band's 63. */
const upperBandOf22 = (): string[] => [
  ...hosts('10.0.0.', 64, 255),
  ...hosts('10.0.1.', 0, 255),
  ...hosts('10.0.2.', 0, 255),
  ...hosts('10.0.3.', 0, 254),
];

describe('Class: LeaseAllocator', () => {
  describe("Method: allocate, near full from a summary copy that lags (the HTTP fill's last tenth)", () => {
    /**
     * A container whose summary copy shows `shown` taken (the stream's view of a moment ago) while the store holds
     * more: the copy was read just now, so nothing makes the allocator read it again before picking.
     */
    function summaryAllocatorOver(store: InMemoryLeaseStore, shownTaken: readonly string[], random: Random) {
      const taken = new Set(shownTaken.map((a) => parseAddress(a).value));
      const snapshot = {
        has: (value: bigint) => taken.has(value),
        count: (from: bigint, to: bigint) => BigInt([...taken].filter((v) => v >= from && v <= to).length),
        expiring: false,
      };
      const hints = new HintCache(
        (pool, family, intervals, at) => store.takenAddresses(pool, family, intervals, at),
        TUNING.hintMaxAgeMs,
        { read: async () => snapshot },
      );
      return new LeaseAllocator({
        claims: store,
        hints,
        clock: clockAt(NOW),
        random,
        leaseStates: (pool, addresses) => store.leaseStates(pool, addresses),
      });
    }
    const summarized = (cidr: string): PoolView => {
      const view = viewOf([cidr]);
      return { ...view, pool: { ...view.pool, summarySince: new Date(NOW - 60_000).toISOString() } };
    };

    it('reads the few addresses its copy shows free in the upper band before committing, though the lower band shows 63 free', async () => {
      // Prepare: a /22 (lower band .0.1-.0.63, all free); the copy shows 20 upper-band addresses free, 19 of them taken
      // since by other containers; only 10.0.3.250 is still free
      const store = new InMemoryLeaseStore();
      const upper = upperBandOf22();
      const shownFree = hosts('10.0.3.', 235, 254);
      store.hold(upper.filter((a) => a !== '10.0.3.250'));
      const commits: number[] = [];
      for (let seed = 0; seed < 20; seed += 1) {
        store.commitCalls.length = 0;
        const allocator = summaryAllocatorOver(
          store,
          upper.filter((a) => !shownFree.includes(a)),
          new SeededRandom(seed),
        );

        // Act
        const result = await allocator.allocate(summarized('10.0.0.0/22'), draftOf(`c${seed}`), [dynamic()]);

        // Assess: the one free upper-band address, in one commit, every time
        expect(result.kind === 'allocated' && result.claim.addresses[0]!.address).toBe('10.0.3.250');
        commits.push(store.commits);
        await store.releaseClaim((result as { claim: Claim }).claim);
      }
      expect(new Set(commits)).toEqual(new Set([1]));
    });

    it('after reading the few upper-band addresses its copy shows free all taken, decides the upper band alone and picks in the lower band by the copy, reading no lower-band lease', async () => {
      // Prepare: a /22 whose upper band (.0.64-.3.254) is held, its lower band (.0.1-.0.63) free; the copy shows 5 upper-band
      // addresses free (taken since, as the stream lags) and the whole lower band free
      const store = new InMemoryLeaseStore();
      const upper = upperBandOf22();
      store.hold(upper);
      const shownFree = hosts('10.0.3.', 250, 254);
      const lower = new Set(hosts('10.0.0.', 1, 63));
      for (let seed = 0; seed < 10; seed += 1) {
        store.statesRead.length = 0;
        const allocator = summaryAllocatorOver(
          store,
          upper.filter((a) => !shownFree.includes(a)),
          new SeededRandom(seed),
        );

        // Act
        const result = await allocator.allocate(summarized('10.0.0.0/22'), draftOf(`c${seed}`), [dynamic()]);

        // Assess: a lower-band address; the reads were the 5 shown free, then the upper band's decision (its leases in
        // bulk: this allocator has no seals), and no lower-band lease (the whole family's decision read the lower band
        // in bulk too: 63 more)
        expect(result.kind === 'allocated' && lower.has(result.claim.addresses[0]!.address)).toBe(true);
        expect(store.statesRead.filter((a) => lower.has(a))).toEqual([]);
        expect(store.statesRead.slice(0, 5).sort()).toEqual(shownFree);
        await store.releaseClaim((result as { claim: Claim }).claim);
      }
    });

    it("reads a range's freed counters once in a call that decides its upper band used up and later its whole family, the seals alone the second time", async () => {
      // Prepare: a /22 whose upper band (.0.64-.3.254) is held; in its lower band every address is held but .0.9, which
      // the copy shows taken (freed since), while it shows .0.20-.0.59 free (taken since): the first pick there needs the
      // upper band decided (a read of the counters), collides, the sample after it finds nothing, and the family is
      // decided (the counters again, before)
      const store = new InMemoryLeaseStore();
      const upper = upperBandOf22();
      const lower = hosts('10.0.0.', 1, 63);
      store.hold([...upper, ...lower.filter((a) => a !== '10.0.0.9')]);
      const shownFree = hosts('10.0.0.', 20, 59);
      const written = new Map<string, UsedUpSeal>();
      const reads: string[] = [];
      const seals: UsedUpSeals = {
        readSeals: async (_pool, ranges, only) => {
          reads.push(only ?? 'counters');
          return new Map(
            ranges.map((r) => [r, { freed: only ? [] : [0, 0, 0, 0], seals: Object.fromEntries(written) }]),
          );
        },
        seal: async (_pool, _range, part, seal) => {
          written.set(part, seal);
        },
      };
      const taken = new Set(
        [...upper, ...lower].filter((a) => !shownFree.includes(a)).map((a) => parseAddress(a).value),
      );
      const snapshot = {
        has: (v: bigint) => taken.has(v),
        count: (from: bigint, to: bigint) => BigInt([...taken].filter((v) => v >= from && v <= to).length),
        expiring: false,
      };
      const hints = new HintCache(
        (pool, family, intervals, at) => store.takenAddresses(pool, family, intervals, at),
        TUNING.hintMaxAgeMs,
        { read: async () => snapshot },
      );
      const allocator = new LeaseAllocator({
        claims: store,
        hints,
        clock: clockAt(NOW),
        random: new SeededRandom(3),
        seals,
        leaseStates: (pool, addresses) => store.leaseStates(pool, addresses),
      });

      // Act
      const result = await allocator.allocate(summarized('10.0.0.0/22'), draftOf('c'), [dynamic()]);

      // Assess: the free address, after one collision; the counters read once in the call (twice before), the seals
      // alone after that
      expect(result.kind === 'allocated' && result.claim.addresses[0]!.address).toBe('10.0.0.9');
      expect(store.commits).toBe(2);
      expect(reads.filter((r) => r === 'counters')).toHaveLength(1);
      expect(reads.filter((r) => r === 'seals').length).toBeGreaterThan(0);
    });

    it('spreads callers that share a copy over every address it shows free, instead of the one after the longest run of taken ones', async () => {
      // Prepare: a /22's upper band (959 addresses, .0.64-.3.254) where the copy shows 40 free: 39 in a row at .0.101-.0.139 and
      // one, .3.200, after a run of 800 taken. A scan from a random start lands on .3.200 about 8 times in 10.
      const store = new InMemoryLeaseStore();
      const free = [...hosts('10.0.0.', 101, 139), '10.0.3.200'];
      const all = [
        ...hosts('10.0.0.', 1, 255),
        ...hosts('10.0.1.', 0, 255),
        ...hosts('10.0.2.', 0, 255),
        ...hosts('10.0.3.', 0, 254),
      ];
      const shownTaken = all.filter(
        (a) => !free.includes(a) && Number(a.split('.')[2]) * 256 + Number(a.split('.')[3]) >= 64,
      );
      // Every commit fails, so each caller's first candidate is what it tried.
      store.failWith = new Error('first candidate only');
      const random = new SeededRandom(5);

      // Act: 64 callers, each its own container with the same copy
      for (let caller = 0; caller < 64; caller += 1) {
        await summaryAllocatorOver(store, shownTaken, random)
          .allocate(summarized('10.0.0.0/22'), draftOf(`c${caller}`), [dynamic()])
          .catch(() => undefined);
      }

      // Assess: 64 first candidates drawn uniformly from 40 (at most 6 on any one in this seed), not most on .3.200
      const tried = store.commitCalls.map((c) => c.claim.addresses[0]!.address);
      expect(tried).toHaveLength(64);
      expect(tried.every((a) => free.includes(a))).toBe(true);
      const most = Math.max(...[...new Set(tried)].map((a) => tried.filter((t) => t === a).length));
      expect(most).toBeLessThanOrEqual(6);
      expect(new Set(tried).size).toBeGreaterThanOrEqual(25);
    });

    it("reads a /20's full upper band at most 3.5 times over between them when 32 callers decide it used up at once (8 parts of 480: 4 times)", async () => {
      // Prepare: a /20 whose upper band (3,839 addresses, .1.0-.15.254) is held, its lower band (.0.1-.0.255) free; seals
      // in memory, and no address is ever freed, so a seal once written holds
      const store = new InMemoryLeaseStore();
      store.hold(Array.from({ length: 3839 }, (_, i) => `10.0.${Math.floor((256 + i) / 256)}.${(256 + i) % 256}`));
      const written = new Map<string, UsedUpSeal>();
      const seals: UsedUpSeals = {
        readSeals: async (_pool, ranges) =>
          new Map(ranges.map((r) => [r, { freed: [0, 0, 0, 0], seals: Object.fromEntries(written) }])),
        seal: async (_pool, _range, part, seal) => {
          written.set(part, seal);
        },
      };
      const random = new SeededRandom(9);
      const view = viewOf(['10.0.0.0/20']);
      const callers = Array.from({ length: 32 }, () => {
        const hints = new HintCache((pool, family, intervals, at) => store.takenAddresses(pool, family, intervals, at));
        return new LeaseAllocator({
          claims: store,
          hints,
          clock: clockAt(NOW),
          random,
          seals,
          leaseStates: (pool, addresses) => store.leaseStates(pool, addresses),
        });
      });

      // Act
      const results = await Promise.all(
        callers.map((allocator, i) => allocator.allocate(view, draftOf(`c${i}`), [dynamic()])),
      );

      // Assess: every claim in the lower band; the upper band read about 3.3 times over in all, all 32 callers in step
      // (each round every caller reads one unsealed part: parts of ~130 chosen at random among the unsealed ones, not
      // 8 parts of 480 visited in turn, which read it 4 times over)
      const offsets = results.map((r) =>
        r.kind === 'allocated'
          ? parseAddress(r.claim.addresses[0]!.address).value - parseAddress('10.0.0.0').value
          : -1n,
      );
      expect(offsets.every((o) => o >= 1n && o <= 255n)).toBe(true);
      expect(store.bulkAddresses).toBeLessThanOrEqual(3.5 * 3839);
    });
  });
});
