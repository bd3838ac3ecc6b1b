import type { Claim, Pool, PoolDetails, Range } from '../../cli/api/types.ts';
import { countOf, labelOf, type MapCell, type MapModel } from '../../cli/map/layout.ts';

/**
 * What the console says of block pools (issue 35), as text: kept apart from the views (no DOM here) so the unit tests
 * can read it without a browser.
 */

/** The pool's block sizes, `IPv4 /26, IPv6 /122`; undefined for an address pool. */
export function blockSizesText(pool: Pick<PoolDetails, 'blockPrefixLength'>): string | undefined {
  const sizes = pool.blockPrefixLength;
  if (!sizes) return undefined;
  const parts = (['IPv4', 'IPv6'] as const).flatMap((family) =>
    sizes[family] === undefined ? [] : [`${family} /${sizes[family]}`],
  );
  return parts.length ? parts.join(', ') : undefined;
}

/** The pool's block lengths for the pools table, `/26, /64`; empty for an address pool. */
export function blockLengthsText(pool: Pick<Pool, 'blockPrefixLength'>): string {
  const sizes = pool.blockPrefixLength ?? {};
  return (['IPv4', 'IPv6'] as const)
    .flatMap((family) => (sizes[family] === undefined ? [] : [`/${sizes[family]}`]))
    .join(', ');
}

/** When a pool takes one more block from its parent (its grow rule), in its own unit; undefined without a rule. */
export function growText(pool: Pick<Pool, 'blockPrefixLength' | 'grow'>): string | undefined {
  if (!pool.grow) return undefined;
  const { belowFree, maxBlocks = 16 } = pool.grow;
  const unit = pool.blockPrefixLength ? ['block', 'blocks'] : ['address', 'addresses'];
  const free = `${belowFree} ${belowFree === 1 ? `${unit[0]} is` : `${unit[1]} are`} free`;
  return `one more block when fewer than ${free} (at most ${maxBlocks} ${maxBlocks === 1 ? 'block' : 'blocks'} a family)`;
}

/** What a claim holds, one entry per address: the block's CIDR in a block pool, else the address. */
export function heldTexts(claim: Pick<Claim, 'addresses'>): string[] {
  return claim.addresses.map((a) => a.prefix ?? a.address);
}

/** Where a nested pool's range comes from: `block of claim region-a in pool org`; undefined for a plain range. */
export function rangeSourceText(range: Pick<Range, 'source'>): string | undefined {
  return range.source ? `block of claim ${range.source.claim} in pool ${range.source.pool}` : undefined;
}

/** The ranges of other pools made from a claim's blocks, `pool/range (cidr)` each. */
export function childrenTexts(claim: Pick<Claim, 'children'>): string[] {
  return (claim.children ?? []).map((c) => `${c.pool}/${c.range} (${c.cidr})`);
}

/** The map's counts as a sentence: in addresses, or in blocks for a block pool's range. */
export function mapSummaryText(model: MapModel): string {
  const { counts } = model;
  const of =
    model.cidr.slot === undefined
      ? `${counts.usable} usable`
      : `${countOf(model, counts.usable)} of /${model.cidr.slot}`;
  return `${counts.held} held, ${counts.free} free, ${counts.excluded} excluded of ${of}; 1 cell = ${countOf(model, model.cellSize)}.`;
}

/** A cell's accessible name: its address (a block's CIDR) or span, and what it holds. */
export function cellText(model: MapModel, cell: MapCell, zoneText: string): string {
  const first = labelOf(model.cidr, cell.first);
  if (model.cellSize === 1n)
    return `${first}: ${cell.held > 0n ? 'held' : cell.usable === 0n ? 'reserved' : cell.excluded > 0n ? 'excluded' : 'free'}, ${zoneText}`;
  const last = labelOf(model.cidr, cell.first + (model.cellSize - 1n) * model.unit);
  return `${first} – ${last}: ${cell.held} of ${cell.usable} held, ${zoneText}`;
}
