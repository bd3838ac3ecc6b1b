import { Bitmap } from '../bitmap/bitmap.ts';
import type { IpFamily } from '../ip/address.ts';
import type { Interval } from '../base/intervals.ts';

/**
 * The occupancy summary: per pool and family, the address space cut into aligned chunks of CHUNK_SIZE addresses,
 * each holding one bit per address (set while a lease item for it exists). Only chunks that ever held a lease exist,
 * so an IPv6 /64 costs nothing until used; a /16 is 4 chunks. Chunks belong to the pool's address space, not to a
 * range, so overlapping ranges share them and a family's figures count overlapping space once.
 *
 *   address  a  ->  chunk index a >> 14, bit a & 16383
 *
 * Why 16,384: the stream function writes each chunk a batch touches once, so its cost per allocation is the chunks
 * touched per batch over the batch's allocations. Random picks spread over a range touch every chunk, so fewer,
 * larger chunks amortize better: a chunk's bitmap is 2 KB (2 write units, one strongly consistent read unit), a /16
 * is 4 chunks (one eventually consistent read unit for all of them). Smaller chunks (4,096 were measured first) cost
 * about one chunk write per allocation at the batch sizes a few dozen callers make.
 */
export const CHUNK_BITS = 14;
export const CHUNK_SIZE = 1n << BigInt(CHUNK_BITS);

export interface OccupancyChunk {
  readonly pool: string;
  readonly family: IpFamily;
  /** The chunk's first address divided by CHUNK_SIZE. */
  readonly index: bigint;
  /** Bit i: a lease item exists for address index * CHUNK_SIZE + i. */
  readonly bits: Bitmap;
  /** Bit i: that lease has a TTL (it may be expired and free to take before the reconciler deletes it). */
  readonly expiring: Bitmap;
  /** Optimistic lock: each write expects the version it read. */
  readonly version: number;
  /** ISO time of the consistent lease read this chunk's last write reflects. */
  readonly asOf: string;
  /**
   * The pool's address history mark (HistoryMark.through), carried by the stream function on the chunk writes it makes
   * anyway; kept as it is by every other write.
   */
  readonly historyThrough?: number;
}

/** CHUNK_BITS as a bigint, made once: these run for every position a near-full pick scans. */
const CHUNK_SHIFT = BigInt(CHUNK_BITS);
export const chunkIndexOf = (address: bigint): bigint => address >> CHUNK_SHIFT;
export const chunkBase = (index: bigint): bigint => index << CHUNK_SHIFT;
export const bitOf = (address: bigint): number => Number(address & (CHUNK_SIZE - 1n));

export function emptyChunk(pool: string, family: IpFamily, index: bigint): OccupancyChunk {
  return {
    pool,
    family,
    index,
    bits: Bitmap.empty(CHUNK_SIZE),
    expiring: Bitmap.empty(CHUNK_SIZE),
    version: 0,
    asOf: new Date(0).toISOString(),
  };
}

/** The chunk indexes [first, last] that intervals touch (one span: the reader queries it as one key range). */
export function chunkSpan(intervals: readonly Interval[]): readonly [bigint, bigint] | undefined {
  if (intervals.length === 0) return undefined;
  let from = intervals[0]![0];
  let to = intervals[0]![1];
  for (const [a, b] of intervals) {
    if (a < from) from = a;
    if (b > to) to = b;
  }
  return [chunkIndexOf(from), chunkIndexOf(to)];
}

/** Whether an interval has an address in the chunk of this index. */
export function overlaps(index: bigint, [from, to]: Interval): boolean {
  const base = chunkBase(index);
  return from <= base + CHUNK_SIZE - 1n && to >= base;
}

/** Calls `visit` with each set bit's address of the chunk that lies in one of the intervals. */
export function forEachHeld(
  chunk: Pick<OccupancyChunk, 'index' | 'bits'>,
  intervals: readonly Interval[],
  visit: (address: bigint) => void,
): void {
  const base = chunkBase(chunk.index);
  const last = base + CHUNK_SIZE - 1n;
  const inside = intervals.filter((interval) => overlaps(chunk.index, interval));
  if (inside.length === 0) return;
  const whole = inside.some(([a, b]) => a <= base && b >= last);
  chunk.bits.forEachSet((bit) => {
    const address = base + BigInt(bit);
    if (whole || inside.some(([a, b]) => address >= a && address <= b)) visit(address);
  });
}

/** Set bits of the chunk inside the intervals (the whole count when one interval covers the chunk). */
export function countHeld(chunk: Pick<OccupancyChunk, 'index' | 'bits'>, intervals: readonly Interval[]): bigint {
  const base = chunkBase(chunk.index);
  const last = base + CHUNK_SIZE - 1n;
  if (intervals.some(([a, b]) => a <= base && b >= last)) return BigInt(chunk.bits.count());
  let n = 0n;
  forEachHeld(chunk, intervals, () => (n += 1n));
  return n;
}
