import { InvalidArgumentError, quote } from '../errors.ts';
import { familyBits, formatAddress, IpFamily, parseAddress, type IpAddress } from './address.ts';

/** A canonical CIDR block: `base` has no host bits set. */
export interface Cidr {
  readonly family: IpFamily;
  readonly base: bigint;
  readonly prefix: number;
  /**
   * A block pool's block prefix length: the range is then counted in aligned blocks of that length, not in
   * addresses. Slot i is the i-th block and its value is the block's network address, so capacity, hostAt, hostOffset
   * and the lower band count blocks, and every caller of them (the picker, the used-up rule, utilization) serves
   * blocks unchanged. Absent: an address range (the network and broadcast addresses reserved).
   */
  readonly slot?: number;
}

/** The range counted in aligned blocks of `slot` bits of prefix (Cidr.slot). */
export function slotted(cidr: Cidr, slot: number | undefined): Cidr {
  return slot === undefined ? cidr : { ...cidr, slot };
}

/** Bits a slot's offset is shifted by to give its address: the host bits of one block. */
function slotShift(cidr: Cidr & { slot: number }): bigint {
  return BigInt(familyBits(cidr.family) - cidr.slot);
}

/**
 * The offset of the slot holding `value` (an address at or past the range's first slot): the block containing it in
 * a block range, `value - base - 1` in an address range. Jumps past an exclusion land on the slot after this one.
 */
export function slotFloor(cidr: Cidr, value: bigint): bigint {
  return cidr.slot === undefined
    ? value - cidr.base - 1n
    : (value - cidr.base) >> slotShift(cidr as Cidr & { slot: number });
}

/**
 * Parses a CIDR and insists on canonical form, so `10.0.0.1/24` is refused with a hint naming `10.0.0.0/24`.
 * @throws InvalidArgumentError
 */
export function parseCidr(text: string, field = 'cidr'): Cidr {
  if (typeof text !== 'string')
    throw new InvalidArgumentError(`${field} must be a CIDR string such as 10.96.0.0/16.`, field);
  const slash = text.indexOf('/');
  if (slash < 0)
    throw new InvalidArgumentError(
      `${field} ${quote(text)} is not a CIDR: it needs a /prefix, as in 10.96.0.0/16.`,
      field,
    );
  const prefixText = text.slice(slash + 1);
  const address = parseAddress(text.slice(0, slash), field);
  const bits = familyBits(address.family);
  if (
    !/^\d{1,3}$/.test(prefixText) ||
    Number(prefixText) > bits ||
    (prefixText.length > 1 && prefixText.startsWith('0'))
  ) {
    throw new InvalidArgumentError(
      `${field} ${quote(text)} has an invalid prefix length: ${address.family} prefixes run from 0 to ${bits}.`,
      field,
    );
  }
  const prefix = Number(prefixText);
  const cidr: Cidr = { family: address.family, base: address.value & networkMask(address.family, prefix), prefix };
  const canonical = formatCidr(cidr);
  if (cidr.base !== address.value || canonical !== text) {
    throw new InvalidArgumentError(
      `${field} ${quote(text)} is not canonical; its canonical form is ${canonical}.`,
      field,
    );
  }
  return cidr;
}

/** Writes a CIDR canonically (RFC 5952 for IPv6). */
export function formatCidr(cidr: Cidr): string {
  return `${formatAddress({ family: cidr.family, value: cidr.base })}/${cidr.prefix}`;
}

function networkMask(family: IpFamily, prefix: number): bigint {
  const bits = BigInt(familyBits(family));
  const all = (1n << bits) - 1n;
  return ((all >> (bits - BigInt(prefix))) << (bits - BigInt(prefix))) & all;
}

/** Number of addresses in the block, reserved ones included. */
export function blockSize(cidr: Cidr): bigint {
  return 1n << BigInt(familyBits(cidr.family) - cidr.prefix);
}

/** Last address of the block (broadcast for IPv4). */
export function lastAddress(cidr: Cidr): bigint {
  return cidr.base + blockSize(cidr) - 1n;
}

/**
 * Addresses that may be handed out. IPv4 reserves the network and broadcast addresses (/31 and /32 hold none);
 * IPv6 reserves only the network (subnet-router anycast) address, so /128 holds none and /127 holds one.
 */
export function capacity(cidr: Cidr): bigint {
  if (cidr.slot !== undefined) return cidr.slot < cidr.prefix ? 0n : 1n << BigInt(cidr.slot - cidr.prefix);
  const size = blockSize(cidr);
  if (cidr.family === IpFamily.IPv4) return size <= 2n ? 0n : size - 2n;
  return size - 1n;
}

/** The usable address at `offset` (0-based) counted from network + 1; in a block range, the offset-th block's network address. */
export function hostAt(cidr: Cidr, offset: bigint): bigint {
  if (cidr.slot !== undefined) return cidr.base + (offset << slotShift(cidr as Cidr & { slot: number }));
  return cidr.base + 1n + offset;
}

/** The offset of a usable address (a block range: of a block's network address), or undefined when reserved, unaligned or outside. */
export function hostOffset(cidr: Cidr, value: bigint): bigint | undefined {
  if (cidr.slot !== undefined) {
    const shift = slotShift(cidr as Cidr & { slot: number });
    const offset = (value - cidr.base) >> shift;
    return value >= cidr.base && offset << shift === value - cidr.base && offset < capacity(cidr) ? offset : undefined;
  }
  const offset = value - cidr.base - 1n;
  return offset >= 0n && offset < capacity(cidr) ? offset : undefined;
}

/** True when the address lies in the block at all (reserved addresses included). */
export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  return address.family === cidr.family && address.value >= cidr.base && address.value <= lastAddress(cidr);
}

/** True when the address may be handed out from this block. */
export function isHostOf(cidr: Cidr, address: IpAddress): boolean {
  return address.family === cidr.family && hostOffset(cidr, address.value) !== undefined;
}

/** True when `outer` covers every address of `inner`. */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return (
    outer.family === inner.family &&
    outer.prefix <= inner.prefix &&
    (inner.base & networkMask(outer.family, outer.prefix)) === outer.base
  );
}

/** The aligned block of `prefix` bits that contains the address (a block pool's block holding it). */
export function blockContaining(address: IpAddress, prefix: number): Cidr {
  return { family: address.family, base: address.value & networkMask(address.family, prefix), prefix };
}

/**
 * Size of the lower band (KEP-3070), kept for static allocation: min(max(16, size/16), 256) addresses,
 * none when the range has 16 or fewer. Dynamic allocation takes the upper band first.
 *
 *   network  [ lower band: offsets 0 .. L-1 ][ upper band: offsets L .. capacity-1 ]  (broadcast)
 */
export function lowerBandSize(cidr: Cidr): bigint {
  const size = capacity(cidr);
  if (size <= 16n) return 0n;
  const sixteenth = size / 16n;
  const atLeast = sixteenth > 16n ? sixteenth : 16n;
  return atLeast < 256n ? atLeast : 256n;
}

/** Capacity as JSON carries it: a number when exact, a decimal string beyond 2^53. */
export function countToJson(count: bigint): number | string {
  return count <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(count) : count.toString();
}
