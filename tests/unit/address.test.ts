import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../shared/core/errors.ts';
import {
  addressFromSortKey,
  addressSortKey,
  canonicalAddress,
  formatAddress,
  IpFamily,
  parseAddress,
  type IpAddress,
} from '../../shared/core/ip/address.ts';

const v4 = (value: bigint): IpAddress => ({ family: IpFamily.IPv4, value });
const v6 = (value: bigint): IpAddress => ({ family: IpFamily.IPv6, value });

/** 32-bit values, with the edges where octet arithmetic goes wrong. */
const v4Value = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 32n - 1n }),
  fc.constantFrom(0n, 1n, 255n, 256n, 2n ** 24n, 2n ** 32n - 1n),
);

/** 128-bit values built from groups that are often zero, so runs of zero groups (and ties between runs) are common. */
const v6Groups = fc.array(fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff })), {
  minLength: 8,
  maxLength: 8,
});
const groupsToValue = (groups: readonly number[]): bigint => groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
const v6Value = v6Groups.map(groupsToValue);

/** Any valid text of an IPv6 value: groups zero-padded or not, in random case, some run of zero groups as `::` or not. */
const v6AnyText = v6Groups.chain((groups) =>
  fc
    .record({
      pads: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 8, maxLength: 8 }),
      upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      compress: fc.boolean(),
      pick: fc.nat(),
    })
    .map(({ pads, upper, compress, pick }) => {
      const hex = groups.map((g, i) => {
        const text = g.toString(16).padStart(pads[i]!, '0');
        return upper[i] ? text.toUpperCase() : text;
      });
      const runs: [number, number][] = [];
      for (let i = 0; i < 8; ) {
        if (groups[i] !== 0) {
          i += 1;
          continue;
        }
        let j = i;
        while (j < 8 && groups[j] === 0) j += 1;
        runs.push([i, j]);
        i = j;
      }
      const run = runs[pick % Math.max(runs.length, 1)];
      const text =
        compress && run ? `${hex.slice(0, run[0]).join(':')}::${hex.slice(run[1]).join(':')}` : hex.join(':');
      return { text, value: groupsToValue(groups) };
    }),
);

describe('Function: parseAddress', () => {
  it.each([
    ['0.0.0.0', 0n],
    ['10.96.0.10', 0x0a60000an],
    ['192.168.1.1', 0xc0a80101n],
    ['255.255.255.255', 0xffffffffn],
  ])('reads the IPv4 address %s', (text, value) => {
    // Act
    const address = parseAddress(text);

    // Assess
    expect(address).toEqual(v4(value));
  });

  it.each([
    ['a leading zero', '192.168.01.1'],
    ['a leading zero in the first octet', '010.0.0.1'],
    ['a fifth part', '192.168.1.1.x'],
    ['a fifth octet', '1.2.3.4.5'],
    ['three octets', '1.2.3'],
    ['an octet of 256', '192.168.1.256'],
    ['an octet of 300', '300.1.1.1'],
    ['a hex octet', '0x1.2.3.4'],
    ['a sign', '+1.2.3.4'],
    ['surrounding space', ' 1.2.3.4'],
    ['an empty string', ''],
    ['an empty octet', '1..3.4'],
  ])('throws when an IPv4 address has %s (%s)', (_why, text) => {
    // Act
    const parse = () => parseAddress(text);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
  });

  it('throws a sentence naming the field and the value when an octet is out of range', () => {
    // Act
    const parse = () => parseAddress('10.0.0.256', 'addresses[0]');

    // Assess
    expect(parse).toThrow(
      'addresses[0] "10.0.0.256" is not a valid IPv4 address (four decimal octets, no leading zeros).',
    );
  });

  it('names the field in the error it throws', () => {
    // Act
    const parse = () => parseAddress('1.2.3', 'exclude[2]');

    // Assess
    expect(parse).toThrow(expect.objectContaining({ field: 'exclude[2]' }));
  });

  it.each([
    ['::ffff:1.2.3.4', 0xffff01020304n],
    ['::ffff:255.255.255.255', 0xffffffffffffn],
    ['64:ff9b::192.0.2.33', (0x64ff9bn << 96n) | 0xc0000221n],
    ['1:2:3:4:5:6:1.2.3.4', groupsToValue([1, 2, 3, 4, 5, 6, 0x102, 0x304])],
  ])('reads the embedded IPv4 tail of %s', (text, value) => {
    // Act
    const address = parseAddress(text);

    // Assess
    expect(address).toEqual(v6(value));
  });

  it.each([
    ['a zone index', 'fe80::1%eth0'],
    ['a numeric zone index', 'fe80::1%1'],
    ['a triple colon', '2001:db8:::1'],
    ['a triple colon at the end', '2001:db8:::'],
    ['two double colons', '1::2::3'],
    ['nine groups', '1:2:3:4:5:6:7:8:9'],
    ['seven groups and no ::', '1:2:3:4:5:6:7'],
    ['a five-digit group', '12345::1'],
    ['a group of zeros too long', '00000::1'],
    ['a non-hex digit', 'g::1'],
    ['a lone leading colon', ':1::'],
    ['a trailing colon', 'fc::1:'],
    ['an embedded IPv4 tail with a leading zero', '::ffff:01.2.3.4'],
    ['an embedded IPv4 tail of three octets', '::ffff:1.2.3'],
    ['an embedded IPv4 tail after seven groups', '1:2:3:4:5:6:7:1.2.3.4'],
    ['a prefix length', '2001:db8::/64'],
    ['only colons', ':::'],
  ])('throws when an IPv6 address has %s (%s)', (_why, text) => {
    // Act
    const parse = () => parseAddress(text);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
  });

  it('throws a sentence naming the value when an IPv6 address is invalid', () => {
    // Act
    const parse = () => parseAddress('2001:db8:::1', 'addresses[1]');

    // Assess
    expect(parse).toThrow('addresses[1] "2001:db8:::1" is not a valid IPv6 address.');
  });

  it('throws when the text is longer than any address can be', () => {
    // Act
    const parse = () => parseAddress(`${'0'.repeat(60)}::1`);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
  });
});

describe('Function: canonicalAddress', () => {
  it.each([
    ['00fc::1', 'fc::1'],
    ['2001:0db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8:0:0:1:0:0:0', '2001:db8:0:0:1::'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['2001:DB8::A', '2001:db8::a'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['0:0:0:0:0:0:0:0', '::'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['1:0:0:0:0:0:0:0', '1::'],
    ['0001:0002:0003:0004:0005:0006:0007:0008', '1:2:3:4:5:6:7:8'],
    ['fd00:0000:0000:0000:0000:0000:0000:ffff', 'fd00::ffff'],
  ])('writes %s as %s (RFC 5952)', (text, canonical) => {
    // Act
    const written = canonicalAddress(text);

    // Assess
    expect(written).toBe(canonical);
  });

  it('compresses the first of two equally long zero runs', () => {
    // Act
    const written = canonicalAddress('1:0:0:2:3:0:0:4');

    // Assess
    expect(written).toBe('1::2:3:0:0:4');
  });

  it('never compresses a single zero group', () => {
    // Act
    const written = canonicalAddress('2001:db8:0:1:2:3:4:5');

    // Assess
    expect(written).toBe('2001:db8:0:1:2:3:4:5');
  });

  it('keeps IPv4 addresses as dotted quads', () => {
    // Act
    const written = canonicalAddress('10.96.0.10');

    // Assess
    expect(written).toBe('10.96.0.10');
  });

  it('reads any valid textual form of an IPv6 address as its value', () => {
    fc.assert(
      fc.property(v6AnyText, ({ text, value }) => {
        // Act
        const address = parseAddress(text);

        // Assess
        expect(address).toEqual(v6(value));
        expect(canonicalAddress(text)).toBe(formatAddress(address));
      }),
      { numRuns: 300 },
    );
  });
});

describe('Function: formatAddress', () => {
  it('writes IPv6 in RFC 5952 form (mapped IPv4 dotted): lower case, no leading zeros, the longest zero run of two or more (first on a tie) as ::', () => {
    fc.assert(
      fc.property(v6Groups, (groups) => {
        // Act
        const text = formatAddress(v6(groupsToValue(groups)));

        // Assess: IPv4-mapped addresses keep their dotted tail (RFC 5952 section 5).
        if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
          expect(text).toBe(
            `::ffff:${[groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.')}`,
          );
          return;
        }
        expect(text).toBe(text.toLowerCase());
        expect(text.split('::').length).toBeLessThanOrEqual(2);
        for (const group of text.split(':').filter(Boolean)) expect(group).toMatch(/^(0|[1-9a-f][0-9a-f]{0,3})$/);
        let best: [number, number] | undefined;
        for (let i = 0; i < 8; ) {
          if (groups[i] !== 0) {
            i += 1;
            continue;
          }
          let j = i;
          while (j < 8 && groups[j] === 0) j += 1;
          if (j - i >= 2 && (!best || j - i > best[1] - best[0])) best = [i, j];
          i = j;
        }
        if (best) {
          const hex = groups.map((g) => g.toString(16));
          expect(text).toBe(`${hex.slice(0, best[0]).join(':')}::${hex.slice(best[1]).join(':')}`);
        } else {
          expect(text).toBe(groups.map((g) => g.toString(16)).join(':'));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reads back what it writes, and writing again is stable (IPv4)', () => {
    fc.assert(
      fc.property(v4Value, (value) => {
        // Act
        const text = formatAddress(v4(value));

        // Assess
        expect(parseAddress(text)).toEqual(v4(value));
        expect(formatAddress(parseAddress(text))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('reads back what it writes, and writing again is stable (IPv6)', () => {
    fc.assert(
      fc.property(fc.oneof(v6Value, fc.bigInt({ min: 0n, max: 2n ** 128n - 1n })), (value) => {
        // Act
        const text = formatAddress(v6(value));

        // Assess
        expect(parseAddress(text)).toEqual(v6(value));
        expect(formatAddress(parseAddress(text))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});

describe('Function: addressSortKey', () => {
  it('writes fixed-width keys: 8 hex digits for IPv4, 32 for IPv6', () => {
    // Act
    const keys = [addressSortKey(v4(1n)), addressSortKey(v6(1n))];

    // Assess
    expect(keys).toEqual(['00000001', `${'0'.repeat(31)}1`]);
  });

  it('orders keys as it orders values, and reads them back (IPv4)', () => {
    fc.assert(
      fc.property(v4Value, v4Value, (a, b) => {
        // Act
        const [ka, kb] = [addressSortKey(v4(a)), addressSortKey(v4(b))];

        // Assess
        expect(ka < kb).toBe(a < b);
        expect(ka === kb).toBe(a === b);
        expect(addressFromSortKey(IpFamily.IPv4, ka)).toEqual(v4(a));
      }),
      { numRuns: 300 },
    );
  });

  it('orders keys as it orders values, and reads them back (IPv6)', () => {
    fc.assert(
      fc.property(
        fc.oneof(v6Value, fc.bigInt({ min: 0n, max: 2n ** 128n - 1n })),
        fc.oneof(v6Value, fc.bigInt({ min: 0n, max: 2n ** 128n - 1n })),
        (a, b) => {
          // Act
          const [ka, kb] = [addressSortKey(v6(a)), addressSortKey(v6(b))];

          // Assess
          expect(ka < kb).toBe(a < b);
          expect(ka === kb).toBe(a === b);
          expect(addressFromSortKey(IpFamily.IPv6, ka)).toEqual(v6(a));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('Function: formatAddress (IPv4-mapped)', () => {
  it.each([
    ['::ffff:1.2.3.4', '::ffff:1.2.3.4'],
    ['::FFFF:0102:0304', '::ffff:1.2.3.4'],
    ['::fffe:1.2.3.4', '::fffe:102:304'],
  ])('writes %s as %s (RFC 5952 section 5 keeps the dotted tail of mapped addresses only)', (input, expected) => {
    expect(canonicalAddress(input)).toBe(expected);
  });
});
