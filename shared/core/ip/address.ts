import { IPv4, IPv6, Validator } from 'ip-num';
import { InvalidArgumentError } from '../errors.ts';

/** Address families, named as Kubernetes names them. */
export const IpFamily = { IPv4: 'IPv4', IPv6: 'IPv6' } as const;
export type IpFamily = (typeof IpFamily)[keyof typeof IpFamily];

/** An address as a number: exact BigInt arithmetic, never a materialized range. */
export interface IpAddress {
  readonly family: IpFamily;
  readonly value: bigint;
}

/** Bits in an address of the family. */
export function familyBits(family: IpFamily): 32 | 128 {
  return family === IpFamily.IPv4 ? 32 : 128;
}

/** Parses an address in any valid textual form; throws InvalidArgumentError with a sentence saying why not. */
export function parseAddress(text: string, field = 'address'): IpAddress {
  if (typeof text !== 'string' || text.length === 0 || text.length > 64) {
    throw new InvalidArgumentError(`${field} must be an IPv4 or IPv6 address.`, field);
  }
  if (text.includes(':')) {
    // Zone indexes (fe80::1%eth0) name an interface, not an address.
    if (!/^[0-9a-fA-F:.]+$/.test(text) || text.split(':').some((group) => group.length > 4 && !group.includes('.'))) {
      throw new InvalidArgumentError(`${field} ${JSON.stringify(text)} is not a valid IPv6 address.`, field);
    }
    const [valid] = Validator.isValidIPv6String(text);
    if (!valid) throw new InvalidArgumentError(`${field} ${JSON.stringify(text)} is not a valid IPv6 address.`, field);
    return { family: IpFamily.IPv6, value: parseIpv6(text, field) };
  }
  const [valid] = Validator.isValidIPv4String(text);
  if (!valid || !/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) {
    throw new InvalidArgumentError(
      `${field} ${JSON.stringify(text)} is not a valid IPv4 address (four decimal octets, no leading zeros).`,
      field,
    );
  }
  return { family: IpFamily.IPv4, value: IPv4.fromString(text).getValue() };
}

function parseIpv6(text: string, field: string): bigint {
  // Embedded IPv4 tails (::ffff:1.2.3.4) are rewritten as two hex groups before ip-num reads the text.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  let normalized = text;
  if (tail.includes('.')) {
    const v4 = parseAddress(tail, field).value;
    normalized = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  try {
    return IPv6.fromString(normalized).getValue();
  } catch {
    throw new InvalidArgumentError(`${field} ${JSON.stringify(text)} is not a valid IPv6 address.`, field);
  }
}

/** Writes an address canonically: dotted quad for IPv4, RFC 5952 for IPv6 (lower case, longest zero run as `::`). */
export function formatAddress(address: IpAddress): string {
  const { value } = address;
  if (address.family === IpFamily.IPv4) {
    return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join('.');
  }
  // RFC 5952 section 5: IPv4-mapped addresses keep their dotted tail (::ffff:192.0.2.1).
  if (value >> 32n === 0xffffn) return `::ffff:${formatAddress({ family: IpFamily.IPv4, value: value & 0xffffffffn })}`;
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((value >> shift) & 0xffffn));
  // RFC 5952 4.2: compress the longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Normalizes any valid textual address to its canonical form. */
export function canonicalAddress(text: string, field = 'address'): string {
  return formatAddress(parseAddress(text, field));
}

/** A fixed-width hex key that sorts in address order (8 digits for IPv4, 32 for IPv6). */
export function addressSortKey(address: IpAddress): string {
  return address.value.toString(16).padStart(familyBits(address.family) / 4, '0');
}

/** Reads back a key written by addressSortKey. */
export function addressFromSortKey(family: IpFamily, key: string): IpAddress {
  return { family, value: BigInt(`0x${key}`) };
}
