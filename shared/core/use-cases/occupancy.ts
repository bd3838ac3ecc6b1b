import { formatAddress } from '../ip/address.ts';
import { blockSize, capacity } from '../ip/cidr.ts';
import { NotFoundError } from '../errors.ts';
import type { Range } from '../model.ts';
import type { Interval } from '../base/intervals.ts';
import { hostInterval, rangeCidr } from '../base/pool-geometry.ts';
import { chunkBase, chunkIndexOf, CHUNK_SIZE } from '../occupancy/chunk.ts';
import { readSummary } from '../occupancy/reader.ts';
import type { Deps } from './deps.ts';

/** One stretch of a range's addresses, at most one chunk long: bit i (LSB first in byte i >> 3) is address first + i. */
export interface OccupancySlice {
  readonly first: string;
  readonly count: number;
  readonly used: number;
  readonly bits: Uint8Array;
  /** When the summary chunk was last written (the listing's read time where the pool has no summary). */
  readonly asOf: string;
}

export interface RangeOccupancy {
  readonly range: Range;
  /** Host addresses of the range (its capacity) and how many of them are held; blocks in a block pool's range. */
  readonly size: bigint;
  readonly used: bigint;
  /** summary: the stream-kept chunks (behind the leases by the stream's lag); listing: read from the leases now. */
  readonly source: 'summary' | 'listing';
  readonly chunkSize: number;
  /** Stretches holding at least one lease, in address order; the others are free. */
  readonly slices: readonly OccupancySlice[];
}

/**
 * A range's occupancy in bulk, for drawing or checking a range without listing its addresses: the summary's chunks
 * that touch the range, cut to its CIDR. A pool without a summary yet is answered from the lease listing.
 * @throws NotFoundError
 */
export async function getRangeOccupancy(
  deps: Pick<Deps, 'views' | 'clock' | 'occupancy' | 'leases'>,
  pool: string,
  name: string,
): Promise<RangeOccupancy> {
  const view = await deps.views.get(pool, deps.clock.nowMs(), true);
  const range = view.ranges.find((r) => r.name === name);
  if (!range) throw new NotFoundError('range', name);
  // A block range's hosts are its blocks' network addresses (the first block's is the range's own): one lease a block.
  const cidr = rangeCidr(range);
  const hosts = hostInterval(cidr);
  const span: Interval = [cidr.base, cidr.base + blockSize(cidr) - 1n];
  const nowIso = new Date(deps.clock.nowMs()).toISOString();
  // Held addresses per chunk index, with the time each chunk reflects.
  const held = new Map<bigint, { values: bigint[]; asOf: string }>();
  let source: RangeOccupancy['source'] = 'summary';
  if (view.pool.summarySince !== undefined && hosts) {
    const summary = await readSummary(deps.occupancy, pool, range.family, [hosts]);
    for (const chunk of summary.chunks) {
      const values: bigint[] = [];
      const base = chunkBase(chunk.index);
      chunk.bits.forEachSet((bit) => {
        const value = base + BigInt(bit);
        if (value >= hosts[0] && value <= hosts[1]) values.push(value);
      });
      if (values.length) held.set(chunk.index, { values, asOf: chunk.asOf });
    }
  } else if (hosts) {
    source = 'listing';
    for (const value of await deps.leases.takenAddresses(pool, range.family, [hosts], deps.clock.nowMs())) {
      const index = chunkIndexOf(value);
      const entry = held.get(index) ?? { values: [], asOf: nowIso };
      entry.values.push(value);
      held.set(index, entry);
    }
  }
  const slices: OccupancySlice[] = [...held.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([index, { values, asOf }]) => {
      const from = chunkBase(index) > span[0] ? chunkBase(index) : span[0];
      const end = chunkBase(index) + CHUNK_SIZE - 1n;
      const to = end < span[1] ? end : span[1];
      const count = Number(to - from + 1n);
      const bits = new Uint8Array(Math.ceil(count / 8));
      for (const value of values) {
        const i = Number(value - from);
        bits[i >> 3]! |= 1 << (i & 7);
      }
      return { first: formatAddress({ family: range.family, value: from }), count, used: values.length, bits, asOf };
    });
  return {
    range,
    size: capacity(cidr),
    used: slices.reduce((sum, s) => sum + BigInt(s.used), 0n),
    source,
    chunkSize: Number(CHUNK_SIZE),
    slices,
  };
}
