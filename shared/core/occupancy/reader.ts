import type { IpFamily } from '../ip/address.ts';
import type { Interval } from '../base/intervals.ts';
import { bitOf, chunkIndexOf, chunkSpan, countHeld, overlaps, type OccupancyChunk } from './chunk.ts';
import type { OccupancyStore } from './ports.ts';

/** What a read of the occupancy summary gives the hint: a membership test and whether any taken address has a TTL. */
export interface SummarySnapshot {
  has(value: bigint): boolean;
  /** Taken addresses in [from, to] by the summary. */
  count(from: bigint, to: bigint): bigint;
  /** Some lease it shows in the intervals has a TTL (it may be expired, so free to take, before the reconciler acts). */
  readonly expiring: boolean;
}

/** A read of a pool family's summary over some intervals. */
export interface Summary extends SummarySnapshot {
  readonly chunks: readonly OccupancyChunk[];
  /** Taken addresses within the intervals: the sum of the chunks' counts (reads proportional to chunks, not leases). */
  readonly used: bigint;
}

/** Reads the chunks the intervals touch (one query) and answers membership and counts from their bits. */
export async function readSummary(
  store: Pick<OccupancyStore, 'readChunks'>,
  pool: string,
  family: IpFamily,
  intervals: readonly Interval[],
): Promise<Summary> {
  const span = chunkSpan(intervals);
  const chunks = span
    ? (await store.readChunks(pool, family, span)).filter((c) => intervals.some((i) => overlaps(c.index, i)))
    : [];
  const byIndex = new Map(chunks.map((c) => [c.index, c]));
  const used = chunks.reduce((sum, c) => sum + countHeld(c, intervals), 0n);
  const counted = new Map<string, bigint>();
  const expiring = chunks.some(
    (c) => c.expiring.count() > 0 && countHeld({ index: c.index, bits: c.expiring }, intervals) > 0n,
  );
  return {
    chunks,
    used,
    expiring,
    has: (value) => byIndex.get(chunkIndexOf(value))?.bits.has(bitOf(value)) ?? false,
    count: (from, to) => {
      // A read never changes, and near full each pick asks it for the same bands (iterating every set bit of a chunk).
      const key = `${from}-${to}`;
      let n = counted.get(key);
      if (n === undefined) counted.set(key, (n = chunks.reduce((sum, c) => sum + countHeld(c, [[from, to]]), 0n)));
      return n;
    },
  };
}
