import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chooseWeighted,
  pickableSize,
  pickBlind,
  pickInRange,
  type PickContext,
  type PickRange,
} from '../../shared/core/allocator/candidates.ts';
import type { Interval } from '../../shared/core/base/intervals.ts';
import { formatAddress, IpFamily, parseAddress } from '../../shared/core/ip/address.ts';
import { capacity, hostAt, lastAddress, parseCidr } from '../../shared/core/ip/cidr.ts';
import type { Random } from '../../shared/core/ports.ts';
import { ScriptedRandom, SeededRandom } from './fakes.ts';

const v = (text: string): bigint => parseAddress(text).value;
const v4 = (value: bigint | undefined): string | undefined =>
  value === undefined ? undefined : formatAddress({ family: IpFamily.IPv4, value });

const range = (cidr: string, window?: bigint): PickRange =>
  window === undefined ? { name: 'r', cidr: parseCidr(cidr) } : { name: 'r', cidr: parseCidr(cidr), window };

/** A pick context: exclusions as [from, to] address texts, taken addresses as texts. */
function context(
  random: Random,
  options: { taken?: readonly string[]; excluded?: readonly [string, string][] } = {},
): PickContext {
  return {
    random,
    taken: new Set((options.taken ?? []).map(v)),
    excluded: (options.excluded ?? []).map(([from, to]): Interval => [v(from), v(to)]),
  };
}

/** The texts of 10.0.0.<from> .. 10.0.0.<to>. */
const hosts = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `10.0.0.${from + i}`);

// 10.0.0.0/24: 254 hosts; the lower band is offsets 0..15 (.1-.16), the upper band offsets 16..253 (.17-.254), 238 wide.
const SLASH24 = '10.0.0.0/24';
const UPPER_WIDTH = 238n;

describe('Function: pickInRange', () => {
  it('starts at the random offset of the upper band', () => {
    // Prepare
    const random = new ScriptedRandom([0n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random));

    // Assess
    expect(v4(picked)).toBe('10.0.0.17');
    expect(random.bounds).toEqual([UPPER_WIDTH]);
  });

  it('reaches the last host of the upper band with the highest roll', () => {
    // Prepare
    const random = new ScriptedRandom([UPPER_WIDTH - 1n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random));

    // Assess
    expect(v4(picked)).toBe('10.0.0.254');
  });

  it('never picks from the lower band while the upper band has a free address', () => {
    fc.assert(
      fc.property(fc.integer({ min: 17, max: 254 }), fc.integer(), (free, seed) => {
        // Prepare
        const taken = hosts(17, 254).filter((t) => t !== `10.0.0.${free}`);

        // Act
        const picked = pickInRange(range(SLASH24), context(new SeededRandom(seed), { taken }));

        // Assess
        expect(v4(picked)).toBe(`10.0.0.${free}`);
      }),
      { numRuns: 100 },
    );
  });

  it('falls back to the lower band, from its own random start, when the upper band is taken', () => {
    // Prepare
    const random = new ScriptedRandom([100n, 5n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { taken: hosts(17, 254) }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.6');
    expect(random.bounds).toEqual([UPPER_WIDTH, 16n]);
  });

  it('wraps around to the start of the upper band, not into the lower band', () => {
    // Prepare
    const random = new ScriptedRandom([UPPER_WIDTH - 1n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { taken: ['10.0.0.254'] }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.17');
  });

  it('wraps around within the lower band', () => {
    // Prepare
    const random = new ScriptedRandom([0n, 15n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { taken: [...hosts(17, 254), '10.0.0.16'] }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.1');
  });

  it('treats the skip set like taken addresses', () => {
    // Prepare
    const random = new ScriptedRandom([0n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random), new Set([v('10.0.0.17'), v('10.0.0.18')]));

    // Assess
    expect(v4(picked)).toBe('10.0.0.19');
  });

  it('jumps over an excluded interval it starts in', () => {
    // Prepare: start at .150, inside the exclusion .100-.200
    const random = new ScriptedRandom([150n - 17n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { excluded: [['10.0.0.100', '10.0.0.200']] }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.201');
  });

  it('wraps around past an exclusion that runs beyond the end of the range', () => {
    // Prepare: start at .220, inside the exclusion .200-10.0.1.255
    const random = new ScriptedRandom([220n - 17n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { excluded: [['10.0.0.200', '10.0.1.255']] }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.17');
  });

  it('skips an exclusion met after the wrap-around and stops at the start', () => {
    // Prepare: start at .200; .200-.254 taken; .17-.199 excluded: nothing left in the upper band
    const random = new ScriptedRandom([200n - 17n, 0n]);

    // Act
    const picked = pickInRange(
      range(SLASH24),
      context(random, { taken: hosts(200, 254), excluded: [['10.0.0.17', '10.0.0.199']] }),
    );

    // Assess
    expect(v4(picked)).toBe('10.0.0.1');
  });

  it('falls to the lower band when exclusions cover the whole upper band', () => {
    // Prepare
    const random = new ScriptedRandom([7n, 0n]);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { excluded: [['10.0.0.17', '10.0.0.255']] }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.1');
  });

  it('returns undefined when every address is taken', () => {
    // Prepare
    const random = new SeededRandom(1);

    // Act
    const picked = pickInRange(range(SLASH24), context(random, { taken: hosts(1, 254) }));

    // Assess
    expect(picked).toBeUndefined();
  });

  it('returns undefined when every address is taken or excluded', () => {
    // Prepare
    const random = new SeededRandom(2);

    // Act
    const picked = pickInRange(
      range(SLASH24),
      context(random, { taken: hosts(1, 100), excluded: [['10.0.0.101', '10.0.0.254']] }),
    );

    // Assess
    expect(picked).toBeUndefined();
  });

  it('finds the one address a /64 leaves outside its exclusions, jumping over 2^63 addresses at a time', () => {
    // Prepare: everything but fd00::8000:0:0:1 is excluded; the scan starts at the last host, after the free one
    const cidr = parseCidr('fd00::/64');
    const free = hostAt(cidr, 2n ** 63n);
    const random = new ScriptedRandom([capacity(cidr) - 256n - 1n]);
    const ctx: PickContext = {
      random,
      taken: new Set(),
      excluded: [
        [cidr.base, free - 1n],
        [free + 1n, lastAddress(cidr)],
      ],
    };

    // Act
    const picked = pickInRange({ name: 'r', cidr }, ctx);

    // Assess
    expect(picked).toBe(free);
    expect(formatAddress({ family: IpFamily.IPv6, value: picked! })).toBe('fd00::8000:0:0:1');
  });

  it('finds the first host of a /64 when everything after it is excluded, after one roll per band', () => {
    // Prepare: the lower band scan starts at offset 200, jumps to the band end and wraps to offset 0
    const cidr = parseCidr('fd00::/64');
    const random = new ScriptedRandom([12345n, 200n]);
    const ctx: PickContext = { random, taken: new Set(), excluded: [[hostAt(cidr, 1n), lastAddress(cidr)]] };

    // Act
    const picked = pickInRange({ name: 'r', cidr }, ctx);

    // Assess
    expect(formatAddress({ family: IpFamily.IPv6, value: picked! })).toBe('fd00::1');
    expect(random.bounds).toEqual([capacity(cidr) - 256n, 256n]);
  });

  it('returns undefined for a /64 whose only host outside the exclusions is taken', () => {
    // Prepare
    const cidr = parseCidr('fd00::/64');
    const ctx: PickContext = {
      random: new SeededRandom(8),
      taken: new Set([hostAt(cidr, 0n)]),
      excluded: [[hostAt(cidr, 1n), lastAddress(cidr)]],
    };

    // Act
    const picked = pickInRange({ name: 'r', cidr }, ctx);

    // Assess
    expect(picked).toBeUndefined();
  });

  it('returns undefined for a /64 excluded entirely', () => {
    // Prepare
    const cidr = parseCidr('fd00::/64');
    const ctx: PickContext = {
      random: new SeededRandom(3),
      taken: new Set(),
      excluded: [[cidr.base, lastAddress(cidr)]],
    };

    // Act
    const picked = pickInRange({ name: 'r', cidr }, ctx);

    // Assess
    expect(picked).toBeUndefined();
  });

  it('keeps picks under the window, with the upper band inside it', () => {
    // Prepare: window 20: lower band offsets 0..15, upper band 16..19 (.17-.20)
    const random = new ScriptedRandom([3n]);

    // Act
    const picked = pickInRange(range(SLASH24, 20n), context(random));

    // Assess
    expect(v4(picked)).toBe('10.0.0.20');
    expect(random.bounds).toEqual([4n]);
  });

  it('never picks past the window, whatever the rolls', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 1, max: 254 }), (seed, window) => {
        // Act
        const picked = pickInRange(range(SLASH24, BigInt(window)), context(new SeededRandom(seed)));

        // Assess
        expect(picked).toBeGreaterThanOrEqual(v('10.0.0.1'));
        expect(picked).toBeLessThanOrEqual(v('10.0.0.0') + BigInt(window));
      }),
      { numRuns: 100 },
    );
  });

  it('scans a window narrower than the lower band as one band', () => {
    // Prepare
    const random = new ScriptedRandom([9n]);

    // Act
    const picked = pickInRange(range(SLASH24, 10n), context(random, { taken: ['10.0.0.10'] }));

    // Assess
    expect(v4(picked)).toBe('10.0.0.1');
    expect(random.bounds).toEqual([10n]);
  });

  it('returns undefined when the window is full even if the range beyond it is free', () => {
    // Prepare
    const random = new SeededRandom(4);

    // Act
    const picked = pickInRange(range(SLASH24, 20n), context(random, { taken: hosts(1, 20) }));

    // Assess
    expect(picked).toBeUndefined();
  });

  it('scans a range of 16 or fewer hosts as one band', () => {
    // Prepare: a /28 has 14 hosts and no lower band
    const random = new ScriptedRandom([0n]);

    // Act
    const picked = pickInRange(range('10.0.0.0/28'), context(random));

    // Assess
    expect(v4(picked)).toBe('10.0.0.1');
    expect(random.bounds).toEqual([14n]);
  });

  it.each(['10.0.0.0/31', '10.0.0.0/32', 'fd00::/128'])(
    'returns undefined without rolling for %s, which has no hosts',
    (cidr) => {
      // Prepare
      const random = new ScriptedRandom([]);

      // Act
      const picked = pickInRange(range(cidr), context(random));

      // Assess
      expect(picked).toBeUndefined();
    },
  );
});

describe('Function: pickableSize', () => {
  it.each([
    [undefined, 254n],
    [20n, 20n],
    [1000n, 254n],
  ])('gives a /24 with window %s a pickable size of %s', (window, expected) => {
    // Act
    const size = pickableSize(range(SLASH24, window));

    // Assess
    expect(size).toBe(expected);
  });
});

describe('Function: pickBlind', () => {
  it('stays among the hosts under the window and outside the exclusions', () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        // Prepare
        const random = new SeededRandom(seed);
        const excluded: Interval[] = [[v('10.0.0.5'), v('10.0.0.9')]];

        // Act
        const picked = pickBlind(range(SLASH24, 30n), { random, excluded });

        // Assess
        expect(picked).toBeGreaterThanOrEqual(v('10.0.0.1'));
        expect(picked).toBeLessThanOrEqual(v('10.0.0.30'));
        expect(picked! >= v('10.0.0.5') && picked! <= v('10.0.0.9')).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('stays within a /64', () => {
    // Prepare
    const cidr = parseCidr('fd00::/64');
    const random = new SeededRandom(5);

    // Act
    const picks = Array.from({ length: 100 }, () => pickBlind({ name: 'r', cidr }, { random, excluded: [] }));

    // Assess
    for (const picked of picks) {
      expect(picked).toBeGreaterThan(cidr.base);
      expect(picked).toBeLessThanOrEqual(lastAddress(cidr));
    }
  });

  it('gives up with undefined after 64 rolls that all land in exclusions', () => {
    // Prepare
    const random = new SeededRandom(6);

    // Act
    const picked = pickBlind(range(SLASH24), { random, excluded: [[v('10.0.0.0'), v('10.0.0.255')]] });

    // Assess
    expect(picked).toBeUndefined();
    expect(random.rolls).toBe(64);
  });

  it('returns undefined without rolling for a range with no hosts', () => {
    // Prepare
    const random = new ScriptedRandom([]);

    // Act
    const picked = pickBlind(range('10.0.0.0/31'), { random, excluded: [] });

    // Assess
    expect(picked).toBeUndefined();
  });
});

describe('Function: chooseWeighted', () => {
  const items = [
    { item: 'a', weight: 1n },
    { item: 'b', weight: 0n },
    { item: 'c', weight: 3n },
    { item: 'd', weight: -5n },
  ];

  it.each([
    [0n, 'a'],
    [1n, 'c'],
    [2n, 'c'],
    [3n, 'c'],
  ])('maps the roll %s of 4 to %s (zero and negative weights are never chosen)', (roll, expected) => {
    // Prepare
    const random = new ScriptedRandom([roll]);

    // Act
    const chosen = chooseWeighted(items, random);

    // Assess
    expect(chosen).toBe(expected);
    expect(random.bounds).toEqual([4n]);
  });

  it('returns undefined without rolling when every weight is zero', () => {
    // Prepare
    const random = new ScriptedRandom([]);

    // Act
    const chosen = chooseWeighted(
      [
        { item: 'a', weight: 0n },
        { item: 'b', weight: 0n },
      ],
      random,
    );

    // Assess
    expect(chosen).toBeUndefined();
  });

  it('weighs exactly with /64-sized weights', () => {
    // Prepare
    const random = new ScriptedRandom([2n ** 64n - 2n, 2n ** 64n - 1n]);
    const big = [
      { item: 'big', weight: 2n ** 64n - 1n },
      { item: 'small', weight: 1n },
    ];

    // Act
    const chosen = [chooseWeighted(big, random), chooseWeighted(big, random)];

    // Assess
    expect(chosen).toEqual(['big', 'small']);
    expect(random.bounds).toEqual([2n ** 64n, 2n ** 64n]);
  });

  it('chooses in proportion to the weights over many rolls', () => {
    // Prepare
    const random = new SeededRandom(7);
    const counts = { a: 0, c: 0 };

    // Act
    for (let i = 0; i < 8000; i += 1) counts[chooseWeighted(items, random) as 'a' | 'c'] += 1;

    // Assess
    expect(counts.a / 8000).toBeGreaterThan(0.22);
    expect(counts.a / 8000).toBeLessThan(0.28);
  });
});
