import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr, slotted } from '../../shared/core/ip/cidr.ts';
import { layoutMap } from '../../cli/map/layout.ts';
import {
  blockLengthsText,
  blockSizesText,
  cellText,
  childrenTexts,
  growText,
  heldTexts,
  mapSummaryText,
  rangeSourceText,
} from '../../console/views/blocks.ts';

const v4 = (text: string) => parseAddress(text).value;

describe('Console: what a block pool page says', () => {
  it("names the pool's block sizes per family, and nothing for an address pool", () => {
    expect(blockSizesText({ blockPrefixLength: { IPv4: 26, IPv6: 122 } })).toBe('IPv4 /26, IPv6 /122');
    expect(blockSizesText({ blockPrefixLength: { IPv6: 64 } })).toBe('IPv6 /64');
    expect(blockSizesText({})).toBeUndefined();
  });

  it("lists a pool's block lengths for the pools table, empty for an address pool (issue 35)", () => {
    expect(blockLengthsText({ blockPrefixLength: { IPv4: 26, IPv6: 64 } })).toBe('/26, /64');
    expect(blockLengthsText({ blockPrefixLength: { IPv6: 122 } })).toBe('/122');
    expect(blockLengthsText({})).toBe('');
  });

  it('says when a pool grows from its parent, in blocks for a block pool and in addresses for an address pool (issue 35)', () => {
    expect(growText({ blockPrefixLength: { IPv4: 28 }, grow: { pool: 'org', belowFree: 2, maxBlocks: 2 } })).toBe(
      'one more block when fewer than 2 blocks are free (at most 2 blocks a family)',
    );
    expect(growText({ grow: { pool: 'org', belowFree: 1, maxBlocks: 1 } })).toBe(
      'one more block when fewer than 1 address is free (at most 1 block a family)',
    );
    expect(growText({})).toBeUndefined();
  });

  it("shows a block claim's blocks as CIDRs, an address claim's addresses as they are, and a claim's child ranges", () => {
    const blocks = {
      addresses: [
        { address: '10.244.0.64', family: 'IPv4' as const, range: 'r', prefix: '10.244.0.64/26' },
        { address: 'fd00::40', family: 'IPv6' as const, range: 'r6', prefix: 'fd00::40/122' },
      ],
    };
    expect(heldTexts(blocks)).toEqual(['10.244.0.64/26', 'fd00::40/122']);
    expect(heldTexts({ addresses: [{ address: '10.96.0.9', family: 'IPv4', range: 'r' }] })).toEqual(['10.96.0.9']);
    expect(childrenTexts({ children: [{ pool: 'node-1', range: 'r', cidr: '10.244.0.64/26' }] })).toEqual([
      'node-1/r (10.244.0.64/26)',
    ]);
    expect(childrenTexts({})).toEqual([]);
  });

  it("says which parent pool and claim a nested range's block comes from", () => {
    expect(rangeSourceText({ source: { pool: 'org', claim: 'region-a' } })).toBe('block of claim region-a in pool org');
    expect(rangeSourceText({})).toBeUndefined();
  });

  it("sums up the range map in blocks and names each cell by its block's CIDR", () => {
    const model = layoutMap({
      cidr: slotted(parseCidr('10.244.0.0/24'), 26),
      held: [v4('10.244.0.64')],
      exclude: [],
      maxCells: 1024,
      maxColumns: 32,
    });
    const cells = model.rows.flat();
    expect(mapSummaryText(model)).toBe('1 held, 3 free, 0 excluded of 4 blocks of /26; 1 cell = 1 block.');
    expect(cells.map((c) => cellText(model, c, 'z'))).toEqual([
      '10.244.0.0/26: free, z',
      '10.244.0.64/26: held, z',
      '10.244.0.128/26: free, z',
      '10.244.0.192/26: free, z',
    ]);
    const wide = layoutMap({
      cidr: slotted(parseCidr('10.0.0.0/8'), 24),
      held: [],
      exclude: [],
      maxCells: 1024,
      maxColumns: 64,
    });
    expect(cellText(wide, wide.rows[0]![0]!, 'z')).toBe('10.0.0.0/24 – 10.0.63.0/24: 0 of 64 held, z');
  });

  it('keeps the address wording for an address range', () => {
    const model = layoutMap({
      cidr: parseCidr('10.96.0.0/28'),
      held: [v4('10.96.0.3')],
      exclude: [],
      maxCells: 1024,
      maxColumns: 16,
    });
    expect(mapSummaryText(model)).toBe('1 held, 13 free, 0 excluded of 14 usable; 1 cell = 1 address.');
    expect(cellText(model, model.rows[0]![3]!, 'z')).toBe('10.96.0.3: held, z');
  });
});
