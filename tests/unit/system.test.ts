import { describe, expect, it } from 'vitest';
import { cryptoRandom } from '../../shared/adapters/system.ts';

describe('Object: cryptoRandom', () => {
  it('unit() draws floats in [0, 1)', () => {
    const draws = Array.from({ length: 2000 }, () => cryptoRandom.unit());
    expect(draws.every((d) => d >= 0 && d < 1)).toBe(true);
    expect(new Set(draws).size).toBeGreaterThan(1990);
  });

  it('below() stays under small and 128-bit bounds and reaches both halves', () => {
    const small = Array.from({ length: 500 }, () => cryptoRandom.below(7n));
    expect(new Set(small)).toEqual(new Set([0n, 1n, 2n, 3n, 4n, 5n, 6n]));
    const bound = (1n << 127n) + 12345n;
    const big = Array.from({ length: 200 }, () => cryptoRandom.below(bound));
    expect(big.every((v) => v >= 0n && v < bound)).toBe(true);
    expect(big.some((v) => v < bound / 2n) && big.some((v) => v >= bound / 2n)).toBe(true);
    expect(() => cryptoRandom.below(0n)).toThrow(RangeError);
  });

  it('suffix() uses the vowel-free generateName alphabet', () => {
    expect(cryptoRandom.suffix(5)).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });
});
