import { familyBits, formatAddress, type IpFamily } from '../../shared/core/ip/address.ts';
import { blockSize, capacity, formatCidr, lowerBandSize, parseCidr, type Cidr } from '../../shared/core/ip/cidr.ts';
import { mergeIntervals, type Interval } from '../../shared/core/base/intervals.ts';

/**
 * A range drawn as a grid of cells. The whole CIDR block is drawn, reserved addresses included, so cells and rows
 * fall on CIDR boundaries and a row's label is a round address. A cell is one address, or for a large range an
 * aligned block of 2^k addresses, shaded by how much of it is held.
 *
 *   address   base | base+1 ........ base+L | base+L+1 ............. last host | broadcast (IPv4)
 *   zone      net  |  lower band (static)   |  upper band (dynamic picks first)  | reserved
 *                     ^ a legacy range's bitmap window starts here and covers `window` hosts
 */
export interface MapCell {
  /** First address of the cell. */
  readonly first: bigint;
  /** Addresses that may be handed out (the block less network and broadcast). */
  readonly usable: bigint;
  readonly held: bigint;
  /** Usable addresses in the pool's exclusions. */
  readonly excluded: bigint;
  /** Usable addresses in the lower band. */
  readonly lower: bigint;
  /** Usable addresses beyond a legacy range's bitmap window. */
  readonly outside: bigint;
}

export interface MapModel {
  /** The range; with `slot` set (a block pool's range) every count below is in blocks, not addresses. */
  readonly cidr: Cidr;
  /** Addresses (blocks in a block range) per cell: a power of two. */
  readonly cellSize: bigint;
  /** Addresses a counted unit spans: 1, or a block's size in a block range. */
  readonly unit: bigint;
  readonly columns: number;
  readonly rows: readonly (readonly MapCell[])[];
  readonly counts: { readonly usable: bigint; readonly held: bigint; readonly excluded: bigint; readonly free: bigint };
  /** Host offsets [0, lowerBand) are the lower band (none for ranges of 16 addresses or fewer). */
  readonly lowerBand: bigint;
  /** A legacy range's bitmap window in host offsets, when it is smaller than the range. */
  readonly window?: bigint;
}

export interface MapInput {
  /** The range; give it `slot` (rangeCidr) to draw a block pool's range a block to a unit. */
  readonly cidr: Cidr;
  /** Values of held addresses (any order; those outside the block are ignored). */
  readonly held: readonly bigint[];
  /** The pool's exclusions as address intervals (any family; other families are ignored). */
  readonly exclude: readonly Interval[];
  /** A legacy range's bitmap window, in host offsets. */
  readonly window?: bigint;
  /** At most this many cells (rounded down to a power of two); each cell is then 2^k addresses. */
  readonly maxCells: number;
  /** At most this many cells a row (rounded down to a power of two). */
  readonly maxColumns: number;
}

const floorPow2 = (n: number): number => 2 ** Math.floor(Math.log2(Math.max(1, n)));

/** Size of the overlap of [a0, a1] and [b0, b1]. */
function overlap(a0: bigint, a1: bigint, b0: bigint, b1: bigint): bigint {
  const lo = a0 > b0 ? a0 : b0;
  const hi = a1 < b1 ? a1 : b1;
  return hi >= lo ? hi - lo + 1n : 0n;
}

/**
 * Lays a range out in cells. Work is O(cells x exclusions + held addresses), whatever the range's size. Counting is
 * done on unit indexes (address - base) / unit: an address range's hosts are indexes 1..capacity (network and
 * broadcast reserved), a block range's blocks are 0..capacity-1 (none reserved; a held block is its network address).
 */
export function layoutMap(input: MapInput): MapModel {
  const { cidr } = input;
  const unit = cidr.slot === undefined ? 1n : 1n << BigInt(familyBits(cidr.family) - cidr.slot);
  const total = blockSize(cidr) / unit;
  const maxCells = BigInt(floorPow2(input.maxCells));
  const cellSize = total > maxCells ? total / maxCells : 1n;
  const cellCount = Number(total / cellSize);
  const columns = Math.min(cellCount, floorPow2(input.maxColumns));
  const hosts = capacity(cidr);
  const firstHost = cidr.slot === undefined ? 1n : 0n;
  const lastHost = firstHost + hosts - 1n; // below firstHost when the block holds no host
  const lowerBand = lowerBandSize(cidr) < hosts ? lowerBandSize(cidr) : 0n;
  const window = input.window !== undefined && input.window < hosts ? input.window : undefined;
  const end = cidr.base + blockSize(cidr) - 1n;
  // Exclusions as unit indexes: a unit is excluded when the exclusion touches any of its addresses.
  const exclude = mergeIntervals(
    input.exclude
      .filter(([from, to]) => to >= cidr.base && from <= end)
      .map(
        ([from, to]): Interval => [
          ((from > cidr.base ? from : cidr.base) - cidr.base) / unit,
          ((to < end ? to : end) - cidr.base) / unit,
        ],
      )
      .filter(([from, to]) => to >= firstHost && from <= lastHost),
  );
  const held = input.held
    .filter((value) => value >= cidr.base && value <= end)
    .map((value) => (value - cidr.base) / unit)
    .filter((index) => index >= firstHost && index <= lastHost);

  // Held units per cell: one pass, bucketed by index / cellSize.
  const heldPerCell = new Map<number, bigint>();
  let heldTotal = 0n;
  for (const value of held) {
    const index = Number(value / cellSize);
    heldPerCell.set(index, (heldPerCell.get(index) ?? 0n) + 1n);
    heldTotal += 1n;
  }

  const rows: MapCell[][] = [];
  let excludedFree = 0n;
  for (let i = 0; i < cellCount; i += 1) {
    const first = BigInt(i) * cellSize;
    const last = first + cellSize - 1n;
    const usable = overlap(first, last, firstHost, lastHost);
    // Exclusions count only where they cover usable addresses (a /29 exclusion also covers the network address).
    const hostFrom = first > firstHost ? first : firstHost;
    const hostTo = last < lastHost ? last : lastHost;
    const excluded = exclude.reduce((sum, [from, to]) => sum + overlap(hostFrom, hostTo, from, to), 0n);
    const cell: MapCell = {
      first: cidr.base + first * unit,
      usable,
      held: heldPerCell.get(i) ?? 0n,
      excluded,
      lower: lowerBand > 0n ? overlap(first, last, firstHost, firstHost + lowerBand - 1n) : 0n,
      outside: window !== undefined ? overlap(first, last, firstHost + window, lastHost) : 0n,
    };
    if (i % columns === 0) rows.push([]);
    rows[rows.length - 1]!.push(cell);
    excludedFree += excluded;
  }
  // Held addresses that are also excluded (claimed statically) count as held, not as excluded.
  const heldExcluded = held.filter((v) => exclude.some(([from, to]) => v >= from && v <= to)).length;
  const excludedCount = excludedFree - BigInt(heldExcluded);
  return {
    cidr,
    cellSize,
    unit,
    columns,
    rows,
    counts: { usable: hosts, held: heldTotal, excluded: excludedCount, free: hosts - heldTotal - excludedCount },
    lowerBand,
    ...(window !== undefined ? { window } : {}),
  };
}

/** What a cell mostly is, for its glyph and colour. */
export const Zone = {
  Reserved: 'reserved',
  Excluded: 'excluded',
  Outside: 'outside',
  Lower: 'lower',
  Upper: 'upper',
} as const;
export type Zone = (typeof Zone)[keyof typeof Zone];

/** The zone of at least half of a cell's usable addresses, in that order of precedence. */
export function zoneOf(cell: MapCell): Zone {
  if (cell.usable === 0n) return Zone.Reserved;
  if (cell.excluded * 2n >= cell.usable) return Zone.Excluded;
  if (cell.outside * 2n >= cell.usable) return Zone.Outside;
  if (cell.lower * 2n >= cell.usable) return Zone.Lower;
  return Zone.Upper;
}

/** Held share of a cell's usable addresses, 0..1. */
export function fillOf(cell: MapCell): number {
  return cell.usable === 0n ? 0 : Number((cell.held * 1000n) / cell.usable) / 1000;
}

/** A pool's exclusions (canonical CIDRs: the API normalizes single addresses to /32 and /128) as intervals of one family. */
export function exclusionIntervals(exclude: readonly string[], family: IpFamily): Interval[] {
  return exclude.flatMap((text) => {
    const cidr = parseCidr(text);
    return cidr.family === family ? [[cidr.base, cidr.base + blockSize(cidr) - 1n] as const] : [];
  });
}

/** A cell's first address as text, for row labels: the first block's CIDR in a block range. */
export function labelOf(cidr: Cidr, value: bigint): string {
  return cidr.slot === undefined
    ? formatAddress({ family: cidr.family, value })
    : formatCidr({ family: cidr.family, base: value, prefix: cidr.slot });
}

/** "1 address", "4 addresses", "1 block", "4 blocks": the unit the model counts in. */
export function countOf(model: Pick<MapModel, 'cidr'>, n: bigint): string {
  if (model.cidr.slot !== undefined) return `${n} block${n === 1n ? '' : 's'}`;
  return `${n} address${n === 1n ? '' : 'es'}`;
}
