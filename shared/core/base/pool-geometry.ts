import { familyBits, formatAddress, type IpAddress, type IpFamily } from '../ip/address.ts';
import {
  blockContaining,
  capacity,
  cidrContains,
  hostAt,
  isHostOf,
  lastAddress,
  parseCidr,
  slotted,
  type Cidr,
} from '../ip/cidr.ts';
import { MismatchedNetworkError, NotInRangeError } from '../errors.ts';
import { RangeState, type Pool, type PoolView, type Range } from '../model.ts';
import { intervalsSize, mergeIntervals, subtractIntervals, type Interval } from './intervals.ts';

/** A range with its parsed CIDR. */
export interface ParsedRange {
  readonly range: Range;
  readonly cidr: Cidr;
}

/** Parsed ranges of a family, optionally only the Ready ones. */
export function rangesOf(view: PoolView, family: IpFamily, readyOnly = true): ParsedRange[] {
  return view.ranges
    .filter((r) => r.family === family && (!readyOnly || r.state === RangeState.Ready))
    .map((range) => ({ range, cidr: rangeCidr(range) }));
}

/** A range's CIDR as allocation counts it: in blocks for a block pool's range (Cidr.slot), else in addresses. */
export function rangeCidr(range: Pick<Range, 'cidr' | 'blockPrefixLength'>): Cidr {
  return slotted(parseCidr(range.cidr), range.blockPrefixLength);
}

/** The usable (host) addresses of a range as one interval, or none for a range without capacity. */
export function hostInterval(cidr: Cidr): Interval | undefined {
  const size = capacity(cidr);
  return size > 0n ? [hostAt(cidr, 0n), hostAt(cidr, size - 1n)] : undefined;
}

/** Host addresses of several ranges, merged: overlapping space counted once. */
export function hostIntervals(ranges: readonly ParsedRange[]): Interval[] {
  return mergeIntervals(ranges.map((r) => hostInterval(r.cidr)).filter((i): i is Interval => i !== undefined));
}

/** Whole blocks of several ranges, merged (for reading leases, reserved addresses included). */
export function blockIntervals(ranges: readonly ParsedRange[]): Interval[] {
  return mergeIntervals(ranges.map((r): Interval => [r.cidr.base, lastAddress(r.cidr)]));
}

/**
 * The positions a dynamic claim of a family may be given, as sorted, disjoint intervals: the host positions of the
 * pool's Ready ranges merged (space two ranges share counted once), less its exclusions (in a block pool, every block
 * one touches); and how many positions they hold (addresses, or in a block pool blocks).
 */
export function claimableSpace(view: PoolView, family: IpFamily): { intervals: Interval[]; size: bigint } {
  const intervals = subtractIntervals(hostIntervals(rangesOf(view, family)), excludedIntervals(view, family));
  return { intervals, size: slotsIn(intervals, family, view.pool.blockPrefixLength?.[family]) };
}

/**
 * Positions in disjoint intervals of host positions: addresses, or in a block pool blocks. A block pool's interval runs
 * from a block's network address to the last block's, or to a block's last address where an exclusion cut it, so it
 * holds (hi - lo) / block size + 1 of them.
 */
function slotsIn(intervals: readonly Interval[], family: IpFamily, block: number | undefined): bigint {
  if (block === undefined) return intervalsSize(intervals);
  const shift = BigInt(familyBits(family) - block);
  return intervals.reduce((sum, [lo, hi]) => sum + ((hi - lo) >> shift) + 1n, 0n);
}

/** The pool's exclusions of a family as sorted, disjoint intervals. */
export function excludedIntervals(view: PoolView, family: IpFamily): Interval[] {
  // In a block pool an exclusion takes out every block it touches: widened to block bounds, a block's network
  // address lies in it exactly when the block holds an excluded address.
  const block = view.pool.blockPrefixLength?.[family];
  return mergeIntervals(
    view.pool.exclude
      .map((text) => parseCidr(text))
      .filter((c) => c.family === family)
      .map((c): Interval => (block === undefined || c.prefix <= block ? [c.base, lastAddress(c)] : widen(c, block))),
  );
}

/** The aligned block of prefix length `block` that holds `cidr` (which is narrower), as an interval. */
function widen(cidr: Cidr, block: number): Interval {
  const size = 1n << BigInt(familyBits(cidr.family) - block);
  const base = cidr.base - (cidr.base % size);
  return [base, base + size - 1n];
}

/**
 * The Ready range an explicit address is taken through: the first (narrowest) Ready range holding it as a host
 * address. An address that is the network address of one range but a host of a covering range is allocatable.
 * @throws MismatchedNetworkError when the pool has no Ready range of the family; NotInRangeError otherwise.
 */
export function rangeForExplicit(view: PoolView, address: IpAddress): ParsedRange {
  const ready = rangesOf(view, address.family);
  const text = formatAddress(address);
  if (ready.length === 0) {
    throw new MismatchedNetworkError(
      `Address ${text} is ${address.family}, and pool ${JSON.stringify(view.pool.name)} has no Ready ${address.family} range.`,
      address.family,
    );
  }
  const holders = ready.filter((r) => isHostOf(r.cidr, address)).sort((a, b) => b.cidr.prefix - a.cidr.prefix);
  if (holders[0]) return holders[0];
  const reservedIn = ready.find((r) => cidrContains(r.cidr, address));
  if (reservedIn) {
    throw new NotInRangeError(
      text,
      `Address ${text} is a reserved address (network or broadcast) of range ${JSON.stringify(reservedIn.range.name)} and no other Ready range holds it.`,
    );
  }
  const terminating = rangesOf(view, address.family, false).find(
    (r) => r.range.state !== RangeState.Ready && isHostOf(r.cidr, address),
  );
  if (terminating) {
    throw new NotInRangeError(
      text,
      `Address ${text} lies only in range ${JSON.stringify(terminating.range.name)}, which is Terminating and serves no new allocations.`,
    );
  }
  throw new NotInRangeError(
    text,
    `Address ${text} is not in any Ready range of pool ${JSON.stringify(view.pool.name)}.`,
  );
}

/** Where an address's lease is kept: the address, or in a block pool the block containing it (keyed by its network address). */
export interface LeasePlace {
  /** The lease item's address. */
  readonly key: string;
  /** In a block pool: the block of the pool's size (for the address's family) containing the address. */
  readonly block?: Cidr;
}

/** The lease place of an address in a pool: each held block is one lease, so any of its addresses reads that one. */
export function leasePlaceOf(pool: Pick<Pool, 'blockPrefixLength'>, address: IpAddress): LeasePlace {
  const length = pool.blockPrefixLength?.[address.family];
  if (length === undefined) return { key: formatAddress(address) };
  const block = blockContaining(address, length);
  return { key: formatAddress({ family: block.family, value: block.base }), block };
}
