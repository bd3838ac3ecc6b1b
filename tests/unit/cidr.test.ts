import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../shared/core/errors.ts';
import { IpFamily, parseAddress } from '../../shared/core/ip/address.ts';
import {
  blockSize,
  capacity,
  cidrContains,
  cidrCovers,
  countToJson,
  formatCidr,
  hostAt,
  hostOffset,
  slotFloor,
  slotted,
  isHostOf,
  lastAddress,
  lowerBandSize,
  parseCidr,
} from '../../shared/core/ip/cidr.ts';

const value = (text: string): bigint => parseAddress(text).value;

describe('Function: parseCidr', () => {
  it.each([
    ['10.96.0.0/12', IpFamily.IPv4, 0x0a600000n, 12],
    ['0.0.0.0/0', IpFamily.IPv4, 0n, 0],
    ['192.168.1.7/32', IpFamily.IPv4, 0xc0a80107n, 32],
    ['fd00::/64', IpFamily.IPv6, 0xfd00n << 112n, 64],
    ['::/0', IpFamily.IPv6, 0n, 0],
    ['2001:db8::1/128', IpFamily.IPv6, (0x20010db8n << 96n) | 1n, 128],
  ])('reads the canonical CIDR %s', (text, family, base, prefix) => {
    // Act
    const cidr = parseCidr(text);

    // Assess
    expect(cidr).toEqual({ family, base, prefix });
    expect(formatCidr(cidr)).toBe(text);
  });

  it('throws a hint naming the canonical CIDR when host bits are set', () => {
    // Act
    const parse = () => parseCidr('10.0.0.1/24');

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
    expect(parse).toThrow('its canonical form is 10.0.0.0/24.');
  });

  it.each([
    ['host bits set in IPv6', 'fd00::1/64', 'fd00::/64'],
    ['a non-canonical IPv6 text', '2001:0db8::/32', '2001:db8::/32'],
    ['upper-case IPv6', 'FD00::/64', 'fd00::/64'],
  ])('throws with a hint when the CIDR has %s (%s)', (_why, text, canonical) => {
    // Act
    const parse = () => parseCidr(text);

    // Assess
    expect(parse).toThrow(`its canonical form is ${canonical}.`);
  });

  it.each([
    ['an IPv4 prefix of 33', '10.0.0.0/33', 'IPv4 prefixes run from 0 to 32'],
    ['an IPv6 prefix of 129', 'fd00::/129', 'IPv6 prefixes run from 0 to 128'],
    ['a negative prefix', '10.0.0.0/-1', 'IPv4 prefixes run from 0 to 32'],
    ['a prefix with a leading zero', '10.0.0.0/024', 'IPv4 prefixes run from 0 to 32'],
    ['an empty prefix', '10.0.0.0/', 'IPv4 prefixes run from 0 to 32'],
    ['two prefixes', '10.0.0.0/8/8', 'IPv4 prefixes run from 0 to 32'],
    ['no prefix', '10.0.0.0', 'it needs a /prefix'],
  ])('throws when the CIDR has %s (%s)', (_why, text, sentence) => {
    // Act
    const parse = () => parseCidr(text);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
    expect(parse).toThrow(sentence);
  });

  it.each([
    ['a triple colon', '2001:db8:::/64'],
    ['a fifth IPv4 part', '192.168.1.1.x/24'],
    ['a zone index', 'fe80::%eth0/64'],
  ])('throws when the address part has %s (%s)', (_why, text) => {
    // Act
    const parse = () => parseCidr(text);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
  });

  it('names the field in the error it throws', () => {
    // Act
    const parse = () => parseCidr('10.0.0.1/24', 'exclude[0]');

    // Assess
    expect(parse).toThrow(expect.objectContaining({ field: 'exclude[0]' }));
  });
});

describe('Function: capacity', () => {
  it.each([
    ['10.0.0.0/32', 0n],
    ['10.0.0.0/31', 0n],
    ['10.0.0.0/30', 2n],
    ['10.0.0.0/29', 6n],
    ['10.0.0.0/24', 254n],
    ['10.0.0.0/8', 16_777_214n],
    ['0.0.0.0/0', 2n ** 32n - 2n],
    ['fd00::/128', 0n],
    ['fd00::/127', 1n],
    ['fd00::/126', 3n],
    ['fd00::/120', 255n],
    ['fd00::/64', 2n ** 64n - 1n],
    ['::/0', 2n ** 128n - 1n],
  ])('holds exactly the usable addresses of %s: %s', (text, expected) => {
    // Act
    const size = capacity(parseCidr(text));

    // Assess
    expect(size).toBe(expected);
  });

  it('counts the reserved addresses in the block size but not in the capacity', () => {
    // Prepare
    const cidr = parseCidr('10.0.0.0/24');

    // Act
    const [size, last] = [blockSize(cidr), lastAddress(cidr)];

    // Assess
    expect(size).toBe(256n);
    expect(last).toBe(value('10.0.0.255'));
  });
});

describe('Function: countToJson', () => {
  it.each([
    [0n, 0],
    [254n, 254],
    [BigInt(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER],
    [BigInt(Number.MAX_SAFE_INTEGER) + 1n, '9007199254740992'],
    [2n ** 64n - 1n, '18446744073709551615'],
    [2n ** 128n - 1n, '340282366920938463463374607431768211455'],
  ])('writes %s as %j', (count, json) => {
    // Act
    const written = countToJson(count);

    // Assess
    expect(written).toBe(json);
  });
});

describe('Function: lowerBandSize', () => {
  it.each([
    ['10.0.0.0/24', 16n, '254/16 = 15, raised to 16'],
    ['10.0.0.0/20', 255n, '4094/16 = 255'],
    ['10.0.0.0/19', 256n, '8190/16 = 511, capped at 256'],
    ['10.0.0.0/16', 256n, 'capped at 256'],
    ['10.0.0.0/27', 16n, '30 addresses: at least 16'],
    ['10.0.0.0/28', 0n, '14 addresses: no lower band'],
    ['10.0.0.0/30', 0n, '2 addresses: no lower band'],
    ['10.0.0.0/32', 0n, 'no addresses at all'],
    ['fd00::/124', 0n, '15 addresses: no lower band'],
    ['fd00::/123', 16n, '31 addresses: at least 16'],
    ['fd00::/120', 16n, '255/16 = 15, raised to 16'],
    ['fd00::/64', 256n, 'capped at 256'],
  ])('gives %s a lower band of %s (%s)', (text, expected) => {
    // Act
    const size = lowerBandSize(parseCidr(text));

    // Assess
    expect(size).toBe(expected);
  });
});

describe('Function: hostOffset', () => {
  it.each<[string, bigint | undefined, string]>([
    ['10.0.0.0', undefined, 'the network address'],
    ['10.0.0.1', 0n, 'the first host'],
    ['10.0.0.254', 253n, 'the last host'],
    ['10.0.0.255', undefined, 'the broadcast address'],
    ['10.0.1.1', undefined, 'outside the block'],
    ['9.255.255.255', undefined, 'below the block'],
  ])('gives %s in 10.0.0.0/24 the offset %s (%s)', (text, expected) => {
    // Act
    const offset = hostOffset(parseCidr('10.0.0.0/24'), value(text));

    // Assess
    expect(offset).toBe(expected);
  });

  it('counts the IPv6 all-ones address as a host (only the network address is reserved)', () => {
    // Prepare
    const cidr = parseCidr('fd00::/64');

    // Act
    const [network, allOnes] = [
      hostOffset(cidr, value('fd00::')),
      hostOffset(cidr, value('fd00::ffff:ffff:ffff:ffff')),
    ];

    // Assess
    expect(network).toBeUndefined();
    expect(allOnes).toBe(2n ** 64n - 2n);
  });

  it('is the inverse of hostAt over the whole capacity', () => {
    // Prepare
    const cidr = parseCidr('10.0.0.0/29');

    // Act
    const offsets = Array.from({ length: 6 }, (_, i) => hostOffset(cidr, hostAt(cidr, BigInt(i))));

    // Assess
    expect(offsets).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
  });
});

describe('Function: isHostOf', () => {
  it.each([
    ['10.0.0.0/24', '10.0.0.0', false],
    ['10.0.0.0/24', '10.0.0.1', true],
    ['10.0.0.0/24', '10.0.0.255', false],
    ['10.0.0.0/31', '10.0.0.0', false],
    ['10.0.0.0/31', '10.0.0.1', false],
    ['10.0.0.7/32', '10.0.0.7', false],
    ['fd00::/127', 'fd00::', false],
    ['fd00::/127', 'fd00::1', true],
    ['fd00::/128', 'fd00::', false],
    ['fd00::/64', 'fd00::ffff:ffff:ffff:ffff', true],
    ['fd00::/64', 'fd00:0:0:1::', false],
  ])('in %s, %s is a host: %s', (cidrText, address, expected) => {
    // Act
    const host = isHostOf(parseCidr(cidrText), parseAddress(address));

    // Assess
    expect(host).toBe(expected);
  });

  it('refuses an address of the other family with the same numeric value', () => {
    // Prepare
    const cidr = parseCidr('0.0.0.0/0');

    // Act
    const host = isHostOf(cidr, { family: IpFamily.IPv6, value: 1n });

    // Assess
    expect(host).toBe(false);
  });
});

describe('Function: cidrContains', () => {
  it('holds the reserved addresses of the block, and nothing of the other family', () => {
    // Prepare
    const cidr = parseCidr('10.0.0.0/24');

    // Act
    const held = ['10.0.0.0', '10.0.0.255', '10.0.1.0'].map((t) => cidrContains(cidr, parseAddress(t)));

    // Assess
    expect(held).toEqual([true, true, false]);
    expect(cidrContains(cidr, { family: IpFamily.IPv6, value: value('10.0.0.1') })).toBe(false);
  });
});

describe('Function: cidrCovers', () => {
  it.each([
    ['10.0.0.0/24', '10.0.0.0/28', true],
    ['10.0.0.0/24', '10.0.0.240/28', true],
    ['10.0.0.0/24', '10.0.0.0/24', true],
    ['0.0.0.0/0', '192.168.0.0/16', true],
    ['10.0.0.0/28', '10.0.0.0/24', false],
    ['10.0.0.0/24', '10.0.1.0/28', false],
    ['10.0.0.0/25', '10.0.0.128/25', false],
    ['fd00::/64', 'fd00::/120', true],
    ['fd00::/64', 'fd00:0:0:1::/120', false],
    ['::/0', '0.0.0.0/0', false],
  ])('%s covers %s: %s', (outer, inner, expected) => {
    // Act
    const covers = cidrCovers(parseCidr(outer), parseCidr(inner));

    // Assess
    expect(covers).toBe(expected);
  });
});

describe('Block ranges: slots are aligned blocks (issue 35)', () => {
  const slot = (text: string, length: number) => slotted(parseCidr(text), length);
  const v = (text: string) => parseAddress(text).value;

  it.each([
    ['10.244.0.0/24', 26, 4n],
    ['10.244.0.0/16', 24, 256n],
    ['10.0.0.0/8', 16, 256n],
    ['10.244.0.0/26', 26, 1n],
    ['10.244.0.0/27', 26, 0n],
    ['fd00:10::/62', 64, 4n],
    ['fd00::/64', 122, 1n << 58n],
  ])('counts %s in /%i blocks: %s of them', (text, length, expected) => {
    expect(capacity(slot(text, length))).toBe(expected);
  });

  it.each([
    ['10.244.0.0/24', 26, 0n, '10.244.0.0'],
    ['10.244.0.0/24', 26, 3n, '10.244.0.192'],
    ['10.0.0.0/8', 16, 255n, '10.255.0.0'],
    ['fd00:10::/62', 64, 1n, 'fd00:10:0:1::'],
  ])(
    'puts slot of %s (/%i) at offset %s on the block network address %s, and back',
    (text, length, offset, address) => {
      const cidr = slot(text, length);
      expect(hostAt(cidr, offset)).toBe(v(address));
      expect(hostOffset(cidr, v(address))).toBe(offset);
      expect(isHostOf(cidr, parseAddress(address))).toBe(true);
    },
  );

  it.each([
    ['an address inside a block', '10.244.0.65'],
    ['the last address of the range', '10.244.0.255'],
    ['an address before the range', '10.243.255.192'],
    ['the block past the range', '10.244.1.0'],
  ])('holds no slot at %s', (_, address) => {
    const cidr = slot('10.244.0.0/24', 26);
    expect(hostOffset(cidr, v(address))).toBeUndefined();
    expect(isHostOf(cidr, parseAddress(address))).toBe(false);
  });

  it.each([
    ['a block network address', '10.244.0.64', 1n],
    ['an address inside the second block', '10.244.0.70', 1n],
    ['the last address of the range', '10.244.0.255', 3n],
  ])('floors %s to the slot holding it', (_, address, expected) => {
    expect(slotFloor(slot('10.244.0.0/24', 26), v(address))).toBe(expected);
  });

  it('floors an address of an address range to its host offset, as the scans always counted it', () => {
    expect(slotFloor(parseCidr('10.244.0.0/24'), v('10.244.0.70'))).toBe(69n);
  });
});
