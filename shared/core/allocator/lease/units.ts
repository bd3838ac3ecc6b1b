import { formatAddress, type IpFamily } from '../../ip/address.ts';
import { cidrCovers, hostOffset } from '../../ip/cidr.ts';
import type { PoolView } from '../../model.ts';
import { BandName } from '../../used-up/ports.ts';
import { pickableSize, upperBandStart, type PickRange } from '../candidates.ts';
import type { Interval } from '../../base/intervals.ts';
import { hostIntervals, rangesOf, type ParsedRange } from '../../base/pool-geometry.ts';
import type { Band } from '../../used-up/rule.ts';

/**
 * What the stages allocate: positions of a range, each one lease item. The stages never ask what a position is;
 * they ask this object. `addressUnits` serves both kinds of pool: a position is a host address in an address pool and
 * an aligned block in a block pool, since a block range's `Cidr` already counts in blocks (ip/cidr.ts, `slotted`).
 */
export interface Units {
  /** The positions a range offers dynamic picks: its hosts, under a window while a legacy range is dual-written. */
  pickRange(range: ParsedRange): PickRange;
  /** The lease key of a position. */
  keyOf(family: IpFamily, value: bigint): string;
  /** The intervals of values a hint of these ranges covers. */
  intervals(ranges: readonly ParsedRange[]): Interval[];
}

/** Host addresses as units; `windowOf` bounds a range's dynamic picks (a legacy range's mirrored window). */
export function addressUnits(windowOf?: (range: ParsedRange) => bigint | undefined): Units {
  return {
    pickRange(range) {
      const window = windowOf?.(range);
      return window === undefined
        ? { name: range.range.name, cidr: range.cidr }
        : { name: range.range.name, cidr: range.cidr, window };
    },
    keyOf: (family, value) => formatAddress({ family, value }),
    intervals: hostIntervals,
  };
}

/** A range's band boundary (offsets [0, lower) are its lower band) and its pickable size. */
export function bandBounds(units: Units, range: ParsedRange): { lower: bigint; size: bigint } {
  const size = pickableSize(units.pickRange(range));
  return { lower: upperBandStart(units.pickRange(range), size), size };
}

/**
 * Whether a position lies in its range's lower band (offsets [0, L), KEP-3070), which dynamic picks take only once the
 * upper band is used up. A range too small for bands (or a window inside the lower band) has none.
 */
export function inLowerBand(units: Units, pick: { readonly value: bigint; readonly range: ParsedRange }): boolean {
  const { lower } = bandBounds(units, pick.range);
  const offset = hostOffset(pick.range.cidr, pick.value);
  return offset !== undefined && offset < lower;
}

/**
 * One band of a range as a "used up" decision reads it: its offsets, minus the pool's exclusions; its counters are its
 * range's and those of every range of the pool (in any state) overlapping it, through which its addresses may be held.
 */
export function bandOf(
  units: Units,
  where: { readonly view: PoolView; readonly excluded: readonly Interval[] },
  range: ParsedRange,
  name: BandName,
): Band {
  const { view, excluded } = where;
  const { lower, size } = bandBounds(units, range);
  const overlapping = rangesOf(view, range.cidr.family, false).filter(
    (o) => o.range.name !== range.range.name && (cidrCovers(o.cidr, range.cidr) || cidrCovers(range.cidr, o.cidr)),
  );
  const counters = [range.range.name, ...overlapping.map((o) => o.range.name)];
  return name === BandName.Upper
    ? { name, part: name, range, counters, from: lower, to: size, excluded }
    : { name, part: name, range, counters, from: 0n, to: lower, excluded };
}
