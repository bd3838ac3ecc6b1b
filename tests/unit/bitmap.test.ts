import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addressOfBit, Bitmap, bitOf, legacyWindow, validateLegacyCidr } from '../../shared/core/bitmap/bitmap.ts';
import { InvalidArgumentError } from '../../shared/core/errors.ts';
import { parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
const address = (text: string): bigint => parseAddress(text).value;

/** A bitmap of the legacy window of `cidr` holding the given addresses. */
function holding(cidrText: string, addresses: readonly string[]): Bitmap {
  const cidr = parseCidr(cidrText);
  const bitmap = Bitmap.empty(legacyWindow(cidr));
  for (const text of addresses) bitmap.set(bitOf(cidr, address(text))!);
  return bitmap;
}

/** Random sizes and a random subset of [0, size), biased towards the byte edges where off-by-ones live. */
const sizedBits = fc
  .oneof(
    fc.integer({ min: 0, max: 64 }),
    fc.integer({ min: 0, max: 5000 }),
    fc.constantFrom(1, 7, 8, 9, 15, 16, 17, 65_535),
  )
  .chain((size) =>
    fc.record({
      size: fc.constant(size),
      bits:
        size === 0
          ? fc.constant([] as number[])
          : fc.uniqueArray(fc.integer({ min: 0, max: size - 1 }), { maxLength: 200 }),
    }),
  );

describe('Class: Bitmap', () => {
  describe('Method: encode', () => {
    it('writes 192.168.0.0/24 holding .1, .2 and .10 as big.Int.Bytes() 0x02 0x03 (base64 AgM=)', () => {
      // Prepare
      const bitmap = holding('192.168.0.0/24', ['192.168.0.1', '192.168.0.2', '192.168.0.10']);

      // Act
      const bytes = bitmap.encode();

      // Assess
      expect([...bytes]).toEqual([0x02, 0x03]);
      expect(base64(bytes)).toBe('AgM=');
    });

    it('writes an empty bitmap as no bytes at all (big.Int.Bytes() of zero), base64 ""', () => {
      // Prepare
      const bitmap = Bitmap.empty(254);

      // Act
      const bytes = bitmap.encode();

      // Assess
      expect(bytes).toEqual(new Uint8Array(0));
      expect(base64(bytes)).toBe('');
    });

    it('writes fd00::/112 holding fd00::1 and fd00::ffff (bit 65534, the last of the window) as 8192 bytes 0x40 .. 0x01', () => {
      // Prepare
      const bitmap = holding('fd00::/112', ['fd00::1', 'fd00::ffff']);

      // Act
      const bytes = bitmap.encode();

      // Assess
      expect(bytes.length).toBe(8192);
      expect(bytes[0]).toBe(0x40);
      expect(bytes[8191]).toBe(0x01);
      expect(bytes.subarray(1, 8191).every((byte) => byte === 0)).toBe(true);
    });

    it('drops leading zero bytes once the high bits are cleared again', () => {
      // Prepare
      const bitmap = Bitmap.empty(1000);
      bitmap.set(3);
      bitmap.set(999);

      // Act
      bitmap.clear(999);

      // Assess
      expect([...bitmap.encode()]).toEqual([0x08]);
    });
  });

  describe('Method: decode', () => {
    it('reads back the /24 example', () => {
      // Prepare
      const bytes = Uint8Array.of(0x02, 0x03);

      // Act
      const bitmap = Bitmap.decode(bytes, 254);

      // Assess
      expect([...bitmap.setBits()]).toEqual([0, 1, 9]);
      expect(bitmap.count()).toBe(3);
    });

    it('round-trips the IPv6 golden bitmap', () => {
      // Prepare
      const original = holding('fd00::/112', ['fd00::1', 'fd00::ffff']);

      // Act
      const decoded = Bitmap.decode(original.encode(), 65_535n);

      // Assess
      expect(decoded.equals(original)).toBe(true);
      expect([...decoded.setBits()]).toEqual([0, 65_534]);
    });

    it('tolerates leading zero bytes, as Go big.Int.SetBytes does', () => {
      // Act
      const bitmap = Bitmap.decode(Uint8Array.of(0, 0, 0, 0x80), 8);

      // Assess
      expect([...bitmap.setBits()]).toEqual([7]);
    });

    it('throws when the bytes set a bit beyond the size, in the partial last byte', () => {
      // Act & Assess: bit 9 in a 9-bit map (bits 0..8)
      expect(() => Bitmap.decode(Uint8Array.of(0x02, 0x00), 9)).toThrow(InvalidArgumentError);
      expect(() => Bitmap.decode(Uint8Array.of(0x02, 0x00), 9)).toThrow(/sets bit 9, but the bitmap holds only 9 bits/);
    });

    it('throws when the bytes are longer than the bitmap', () => {
      // Act & Assess
      expect(() => Bitmap.decode(Uint8Array.of(0x01, 0x00, 0x00), 16)).toThrow(/sets bit 16/);
    });

    it('accepts the highest bit of the size exactly', () => {
      // Act
      const bitmap = Bitmap.decode(Uint8Array.of(0x01, 0x00), 9);

      // Assess
      expect(bitmap.has(8)).toBe(true);
    });

    it('holds for any set of bits in any size: decode(encode(bits)) is the set, and encode has no leading zero byte', () => {
      fc.assert(
        fc.property(sizedBits, ({ size, bits }) => {
          // Prepare
          const bitmap = Bitmap.empty(size);
          for (const bit of bits) bitmap.set(bit);

          // Act
          const bytes = bitmap.encode();
          const decoded = Bitmap.decode(bytes, size);

          // Assess
          expect(bytes[0]).not.toBe(0);
          expect(bytes.length).toBe(bits.length === 0 ? 0 : Math.floor(Math.max(...bits) / 8) + 1);
          const visited: number[] = [];
          decoded.forEachSet((bit) => visited.push(bit));
          expect([...decoded.setBits()]).toEqual([...bits].sort((a, b) => a - b));
          expect(visited).toEqual([...decoded.setBits()]);
          expect(decoded.count()).toBe(bits.length);
          expect(decoded.equals(bitmap)).toBe(true);
        }),
      );
    });

    it('agrees with a bigint model of big.Int.Bytes()', () => {
      fc.assert(
        fc.property(sizedBits, ({ size, bits }) => {
          // Prepare
          const bitmap = Bitmap.empty(size);
          for (const bit of bits) bitmap.set(bit);
          const value = bits.reduce((acc, bit) => acc | (1n << BigInt(bit)), 0n);
          const hex = value === 0n ? '' : value.toString(16);

          // Act
          const bytes = bitmap.encode();

          // Assess
          expect(Buffer.from(bytes).toString('hex')).toBe(hex.length % 2 === 1 ? `0${hex}` : hex);
        }),
      );
    });
  });

  describe('Method: set', () => {
    it('returns whether it changed the bitmap, and keeps the count', () => {
      // Prepare
      const bitmap = Bitmap.empty(10);

      // Act
      const first = bitmap.set(4);
      const second = bitmap.set(4);

      // Assess
      expect([first, second]).toEqual([true, false]);
      expect(bitmap.has(4)).toBe(true);
      expect(bitmap.count()).toBe(1);
    });

    it('throws a RangeError for a bit outside the bitmap', () => {
      // Prepare
      const bitmap = Bitmap.empty(10);

      // Act & Assess
      expect(() => bitmap.set(10)).toThrow(RangeError);
      expect(() => bitmap.set(-1)).toThrow(RangeError);
      expect(() => bitmap.has(1.5)).toThrow(RangeError);
    });
  });

  describe('Method: clear', () => {
    it('returns whether it changed the bitmap, and keeps the count', () => {
      // Prepare
      const bitmap = Bitmap.empty(10);
      bitmap.set(9);

      // Act
      const first = bitmap.clear(9);
      const second = bitmap.clear(9);

      // Assess
      expect([first, second]).toEqual([true, false]);
      expect(bitmap.has(9)).toBe(false);
      expect(bitmap.count()).toBe(0);
    });
  });

  describe('Method: forEachSet', () => {
    it('visits set bits in ascending order', () => {
      // Prepare
      const bitmap = Bitmap.empty(100);
      for (const bit of [99, 0, 8, 7, 64]) bitmap.set(bit);
      const seen: number[] = [];

      // Act
      bitmap.forEachSet((bit) => seen.push(bit));

      // Assess
      expect(seen).toEqual([0, 7, 8, 64, 99]);
    });
  });

  describe('Method: equals', () => {
    it('tells sizes apart even when no bit is set', () => {
      // Act & Assess
      expect(Bitmap.empty(8).equals(Bitmap.empty(9))).toBe(false);
      expect(Bitmap.empty(9).equals(Bitmap.empty(9n))).toBe(true);
    });
  });

  describe('Method: firstClear', () => {
    it('returns the start itself when it is clear', () => {
      // Prepare
      const bitmap = Bitmap.empty(20);

      // Act & Assess
      expect(bitmap.firstClear(13)).toBe(13);
    });

    it('wraps past the end to the lowest clear bit', () => {
      // Prepare
      const bitmap = Bitmap.empty(20);
      for (let bit = 0; bit < 20; bit += 1) if (bit !== 2) bitmap.set(bit);

      // Act & Assess
      expect(bitmap.firstClear(15)).toBe(2);
      expect(bitmap.firstClear(2)).toBe(2);
      expect(bitmap.firstClear(3)).toBe(2);
    });

    it('returns undefined when every bit is set, and for an empty bitmap', () => {
      // Prepare
      const bitmap = Bitmap.empty(9);
      for (let bit = 0; bit < 9; bit += 1) bitmap.set(bit);

      // Act & Assess
      expect(bitmap.firstClear(4)).toBeUndefined();
      expect(Bitmap.empty(0).firstClear(0)).toBeUndefined();
    });

    it('throws a RangeError for a start outside the bitmap', () => {
      // Act & Assess
      expect(() => Bitmap.empty(9).firstClear(9)).toThrow(RangeError);
    });

    it('agrees with a linear scan with wrap-around', () => {
      fc.assert(
        fc.property(
          sizedBits
            .filter(({ size }) => size > 0)
            .chain((sb) => fc.record({ sb: fc.constant(sb), start: fc.integer({ min: 0, max: sb.size - 1 }) })),
          fc.boolean(),
          ({ sb: { size, bits }, start }, fillAll) => {
            // Prepare: sometimes the complement, so nearly-full maps (long runs of 0xff) are covered too
            const bitmap = Bitmap.empty(size);
            const chosen = new Set(bits);
            for (let bit = 0; bit < size; bit += 1) if (chosen.has(bit) !== fillAll) bitmap.set(bit);
            let expected: number | undefined;
            for (let k = 0; k < size && expected === undefined; k += 1) {
              const at = (start + k) % size;
              if (!bitmap.has(at)) expected = at;
            }

            // Act
            const found = bitmap.firstClear(start);

            // Assess
            expect(found).toBe(expected);
          },
        ),
      );
    });
  });

  describe('Method: empty', () => {
    it('throws a RangeError for a negative or fractional size', () => {
      // Act & Assess
      expect(() => Bitmap.empty(-1)).toThrow(RangeError);
      expect(() => Bitmap.empty(2.5)).toThrow(RangeError);
      expect(() => Bitmap.empty(1n << 40n)).toThrow(RangeError);
    });
  });
});

describe('Function: legacyWindow', () => {
  it.each([
    ['192.168.0.0/24', 254n],
    ['10.0.0.0/12', 1_048_574n],
    ['fd00::/108', 65_535n],
    ['fd00::/112', 65_535n],
    ['fd00::/113', 32_767n],
    ['fd00::/64', 65_535n],
  ])('covers %s with %d bits', (text, expected) => {
    // Act
    const window = legacyWindow(parseCidr(text));

    // Assess
    expect(window).toBe(expected);
  });
});

describe('Function: bitOf', () => {
  it('maps fd00::ffff of fd00::/112 to the last bit of the window, and a /108 network + 65536 to nothing', () => {
    // Prepare
    const small = parseCidr('fd00::/112');
    const large = parseCidr('fd00::/108');

    // Act & Assess
    expect(bitOf(small, address('fd00::ffff'))).toBe(65_534);
    expect(bitOf(small, address('fd00::1'))).toBe(0);
    expect(bitOf(large, address('fd00::ffff'))).toBe(65_534);
    expect(bitOf(large, address('fd00::1:0'))).toBeUndefined();
  });

  it('returns undefined for the IPv4 network and broadcast addresses and addresses outside the range', () => {
    // Prepare
    const cidr = parseCidr('192.168.0.0/24');

    // Act & Assess
    expect(bitOf(cidr, address('192.168.0.0'))).toBeUndefined();
    expect(bitOf(cidr, address('192.168.0.255'))).toBeUndefined();
    expect(bitOf(cidr, address('192.168.1.1'))).toBeUndefined();
    expect(bitOf(cidr, address('192.168.0.254'))).toBe(253);
  });
});

describe('Function: addressOfBit', () => {
  it('is the inverse of bitOf over the window', () => {
    // Prepare
    const cidr = parseCidr('fd00::/108');

    // Act & Assess
    expect(addressOfBit(cidr, 65_534)).toBe(address('fd00::ffff'));
    expect(addressOfBit(cidr, 0)).toBe(address('fd00::1'));
    expect(() => addressOfBit(cidr, 65_535)).toThrow(RangeError);
  });
});

describe('Function: validateLegacyCidr', () => {
  it('accepts the largest legacy ranges, /12 and /108', () => {
    // Act & Assess
    expect(() => validateLegacyCidr(parseCidr('10.0.0.0/12'))).not.toThrow();
    expect(() => validateLegacyCidr(parseCidr('fd00::/108'))).not.toThrow();
  });

  it('throws for an IPv4 /11, naming the /12 limit', () => {
    // Act & Assess
    expect(() => validateLegacyCidr(parseCidr('10.0.0.0/11'))).toThrow(InvalidArgumentError);
    expect(() => validateLegacyCidr(parseCidr('10.0.0.0/11'))).toThrow(
      'IPv4 range 10.0.0.0/11 is too large for a legacy RangeAllocation bitmap: the prefix must be /12 or longer.',
    );
  });

  it('throws for an IPv6 /107, naming the /108 limit', () => {
    // Act & Assess
    expect(() => validateLegacyCidr(parseCidr('fd00::/107'))).toThrow(InvalidArgumentError);
    expect(() => validateLegacyCidr(parseCidr('fd00::/107'))).toThrow(/must be \/108 or longer/);
  });
});
