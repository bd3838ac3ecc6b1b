import { describe, expect, it } from 'vitest';
import { HintCache, HintSource } from '../../shared/core/allocator/hint.ts';
import type { SummarySnapshot } from '../../shared/core/occupancy/reader.ts';
import { TUNING } from '../../shared/core/allocator/tuning.ts';
import { IpFamily } from '../../shared/core/ip/address.ts';

const POOL = 'p';
const INTERVALS = [[0n, 255n]] as const;
const T0 = 1_000_000;

/** A cache over a summary that shows `taken` taken (and nothing else), read again whenever its copy is 2 s old. */
function cacheOver(taken: readonly bigint[]): HintCache {
  const shown = new Set(taken);
  const snapshot: SummarySnapshot = { has: (v) => shown.has(v), count: () => BigInt(shown.size), expiring: false };
  return new HintCache(async () => [...shown], TUNING.hintMaxAgeMs, { read: async () => snapshot });
}

const hintAt = (cache: HintCache, nowMs: number) =>
  cache.get({ pool: POOL, family: IpFamily.IPv4, intervals: INTERVALS, nowMs, source: HintSource.Summary });

/** The container saw these addresses taken (a collision, a commit, a read), each at its time, in this order. */
const sawTaken = (cache: HintCache, sightings: readonly (readonly [bigint, number])[]) =>
  sightings.forEach(([value, atMs]) => cache.markTaken(POOL, IpFamily.IPv4, value, atMs));

describe('Class: HintCache', () => {
  describe('Method: get (what the container saw itself)', () => {
    it('overrides the summary with what the container saw for TUNING.localMemoryMs, then gives the summary its word back', async () => {
      const cache = cacheOver([20n]);
      cache.markTaken(POOL, IpFamily.IPv4, 10n, T0);
      cache.markFree(POOL, IpFamily.IPv4, 20n, T0);
      const during = await hintAt(cache, T0 + TUNING.localMemoryMs - 1);
      expect([during.has(10n), during.has(20n)]).toEqual([true, false]);
      const after = await hintAt(cache, T0 + TUNING.localMemoryMs);
      expect([after.has(10n), after.has(20n)]).toEqual([false, true]);
    });

    it('forgets the oldest sightings first and keeps the younger ones', async () => {
      const cache = cacheOver([]);
      sawTaken(cache, [
        [1n, T0],
        [2n, T0 + 10_000],
        [3n, T0 + 20_000],
      ]);
      const hint = await hintAt(cache, T0 + TUNING.localMemoryMs + 10_000);
      expect([1n, 2n, 3n].map((v) => hint.has(v))).toEqual([false, false, true]);
    });

    it('counts the memory of an address seen again from the last sighting, not the first', async () => {
      const cache = cacheOver([]);
      // 1 seen again later (a collision on it, say): remembered from there.
      sawTaken(cache, [
        [1n, T0],
        [2n, T0 + 5_000],
        [1n, T0 + 20_000],
      ]);
      const hint = await hintAt(cache, T0 + TUNING.localMemoryMs + 10_000);
      expect([hint.has(1n), hint.has(2n)]).toEqual([true, false]);
    });
  });
});
