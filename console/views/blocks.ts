import type { Claim, Pool, Range } from '../../cli/api/types.ts';
import { blockLengths } from '../../cli/format/blocks.ts';
import { countOf, labelOf, type MapCell, type MapModel } from '../../cli/map/layout.ts';

/**
 * What the console says of block pools, as text: kept apart from the views (no DOM here) so the unit tests
 * can read it without a browser.
 */

export { blockSizesText, growText } from '../../cli/format/blocks.ts';

/** The pool's block lengths for the pools table, `/26, /64`; empty for an address pool. */
export function blockLengthsText(pool: Pick<Pool, 'blockPrefixLength'>): string {
  return blockLengths(pool).join(', ');
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
