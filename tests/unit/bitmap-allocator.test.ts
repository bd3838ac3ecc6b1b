import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pickBit } from '../../shared/core/allocator/bitmap-allocator.ts';
import { Bitmap, legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import type { Random } from '../../shared/core/ports.ts';
import type { Range } from '../../shared/core/model.ts';

const rangeOf = (cidr: string) => ({ range: { name: 'r', cidr, legacy: true } as Range, cidr: parseCidr(cidr) });

/** A Random whose below() answers `roll % bound`. */
const fixed = (roll: bigint): Random => ({
  below: (bound) => roll % bound,
  unit: () => 0,
  suffix: () => 'x',
  uid: () => 'u',
});

/** A pick in a range's whole legacy window, nothing set, excluded or skipped. */
const pickInEmptyWindow = (range: ReturnType<typeof rangeOf>, random: ReturnType<typeof fixed>) =>
  pickBit({ bitmap: Bitmap.empty(legacyWindow(range.cidr)), range, excluded: [], skip: new Set(), random });

describe('Function: pickBit', () => {
  it('takes the upper band first (KEP-3070): on a /24 no pick falls in the 16-address lower band while the upper has room', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 1000n }), (roll) => {
        const range = rangeOf('10.0.0.0/24');
        expect(pickInEmptyWindow(range, fixed(roll))).toBeGreaterThanOrEqual(16);
      }),
    );
  });

  it('scans from the random start with wrap-around, then falls back to the lower band once the upper is full', () => {
    // Prepare
    const range = rangeOf('10.0.0.0/24');
    const bitmap = Bitmap.empty(254);
    for (let bit = 16; bit < 254; bit += 1) if (bit !== 20) bitmap.set(bit);
    // Act, Assess: a start past 20 wraps round to it; with 20 taken too, the lower band serves.
    expect(pickBit({ bitmap, range, excluded: [], skip: new Set(), random: fixed(200n) })).toBe(20);
    bitmap.set(20);
    expect(pickBit({ bitmap, range, excluded: [], skip: new Set(), random: fixed(3n) })).toBe(3);
  });

  it('never returns an excluded address, nor one this call found leased', () => {
    // Prepare: a /29, .1-.3 excluded, bit 4 (.5) found leased: only .4 (bit 3) and .6 (bit 5) remain.
    const range = rangeOf('10.0.0.0/29');
    const excluded = [[parseCidr('10.0.0.0/30').base, parseCidr('10.0.0.0/30').base + 3n] as const];
    const got = new Set(
      [0n, 1n, 2n, 3n, 4n, 5n].map((roll) =>
        pickBit({ bitmap: Bitmap.empty(6), range, excluded, skip: new Set([4]), random: fixed(roll) }),
      ),
    );
    // Assess
    expect([...got].sort()).toEqual([3, 5]);
  });

  it('answers undefined when no bit is left, and for a range without hosts', () => {
    const full = Bitmap.empty(6);
    for (let bit = 0; bit < 6; bit += 1) full.set(bit);
    expect(
      pickBit({ bitmap: full, range: rangeOf('10.0.0.0/29'), excluded: [], skip: new Set(), random: fixed(0n) }),
    ).toBeUndefined();
    expect(
      pickBit({
        bitmap: Bitmap.empty(0),
        range: rangeOf('10.0.0.9/32'),
        excluded: [],
        skip: new Set(),
        random: fixed(0n),
      }),
    ).toBeUndefined();
  });

  it('stays inside the 65,535-bit window of an IPv6 /108', () => {
    const range = rangeOf('fd00::/108');
    expect(pickInEmptyWindow(range, fixed(10n ** 9n))).toBeLessThan(65_535);
  });
});
