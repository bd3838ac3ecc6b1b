import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  intervalHolding,
  intervalsSize,
  mergeIntervals,
  subtractIntervals,
  type Interval,
} from '../../shared/core/base/intervals.ts';

/** Small closed intervals in [0, 63], so a Set of numbers is a complete model of them. */
const interval = fc
  .tuple(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 0, max: 63 }))
  .map(([a, b]): Interval => (a <= b ? [BigInt(a), BigInt(b)] : [BigInt(b), BigInt(a)]));
const intervals = fc.array(interval, { maxLength: 8 });

/** The naive model: every address the intervals hold. */
function members(list: readonly Interval[]): Set<number> {
  const out = new Set<number>();
  for (const [from, to] of list) for (let v = Number(from); v <= Number(to); v += 1) out.add(v);
  return out;
}

/** Sorted, disjoint, and not even touching (touching intervals must have been merged). */
function expectCanonical(list: readonly Interval[]): void {
  for (const [from, to] of list) expect(from).toBeLessThanOrEqual(to);
  for (let i = 1; i < list.length; i += 1) expect(list[i]![0]).toBeGreaterThan(list[i - 1]![1] + 1n);
}

describe('Function: mergeIntervals', () => {
  it('merges overlapping and touching intervals and sorts the result', () => {
    // Prepare
    const input: Interval[] = [
      [20n, 30n],
      [1n, 5n],
      [6n, 8n],
      [25n, 40n],
      [50n, 50n],
    ];

    // Act
    const merged = mergeIntervals(input);

    // Assess
    expect(merged).toEqual([
      [1n, 8n],
      [20n, 40n],
      [50n, 50n],
    ]);
  });

  it('keeps an interval nested in another once', () => {
    // Act
    const merged = mergeIntervals([
      [0n, 100n],
      [10n, 20n],
    ]);

    // Assess
    expect(merged).toEqual([[0n, 100n]]);
  });

  it('does not change its input', () => {
    // Prepare
    const input: Interval[] = [
      [5n, 6n],
      [1n, 2n],
    ];

    // Act
    mergeIntervals(input);

    // Assess
    expect(input).toEqual([
      [5n, 6n],
      [1n, 2n],
    ]);
  });

  it('holds exactly the addresses of its input, as a canonical list', () => {
    fc.assert(
      fc.property(intervals, (list) => {
        // Act
        const merged = mergeIntervals(list);

        // Assess
        expectCanonical(merged);
        expect(members(merged)).toEqual(members(list));
        expect(intervalsSize(merged)).toBe(BigInt(members(list).size));
      }),
    );
  });
});

describe('Function: subtractIntervals', () => {
  it('cuts holes and trims edges', () => {
    // Act
    const rest = subtractIntervals(
      [[0n, 100n]],
      [
        [0n, 9n],
        [50n, 59n],
        [95n, 200n],
      ],
    );

    // Assess
    expect(rest).toEqual([
      [10n, 49n],
      [60n, 94n],
    ]);
  });

  it('leaves nothing when the cut covers the base', () => {
    // Act
    const rest = subtractIntervals(
      [[10n, 20n]],
      [
        [0n, 5n],
        [5n, 30n],
      ],
    );

    // Assess
    expect(rest).toEqual([]);
  });

  it('works with /64-sized intervals without walking them', () => {
    // Prepare
    const base: Interval = [1n, 2n ** 64n - 1n];

    // Act
    const rest = subtractIntervals([base], [[2n, 2n ** 64n - 2n]]);

    // Assess
    expect(rest).toEqual([
      [1n, 1n],
      [2n ** 64n - 1n, 2n ** 64n - 1n],
    ]);
  });

  it('holds exactly the addresses of the base that no cut holds, as a canonical list', () => {
    fc.assert(
      fc.property(intervals, intervals, (base, cut) => {
        // Act
        const rest = subtractIntervals(base, cut);

        // Assess
        const cutMembers = members(cut);
        expectCanonical(rest);
        expect(members(rest)).toEqual(new Set([...members(base)].filter((v) => !cutMembers.has(v))));
      }),
    );
  });
});

describe('Function: intervalHolding', () => {
  it('finds the interval holding a value, including at both ends', () => {
    // Prepare
    const list: Interval[] = [
      [1n, 3n],
      [10n, 20n],
      [30n, 30n],
    ];

    // Act
    const found = [0n, 1n, 3n, 4n, 10n, 20n, 21n, 30n, 31n].map((v) => intervalHolding(list, v));

    // Assess
    expect(found).toEqual([
      undefined,
      [1n, 3n],
      [1n, 3n],
      undefined,
      [10n, 20n],
      [10n, 20n],
      undefined,
      [30n, 30n],
      undefined,
    ]);
  });

  it('finds nothing in an empty list', () => {
    // Act
    const found = intervalHolding([], 0n);

    // Assess
    expect(found).toBeUndefined();
  });

  it('answers like the model for every value of a merged list', () => {
    fc.assert(
      fc.property(intervals, fc.integer({ min: -1, max: 64 }), (list, v) => {
        // Prepare
        const merged = mergeIntervals(list);

        // Act
        const found = intervalHolding(merged, BigInt(v));

        // Assess
        expect(found !== undefined).toBe(members(list).has(v));
        if (found) expect(found[0] <= BigInt(v) && BigInt(v) <= found[1]).toBe(true);
      }),
    );
  });
});
