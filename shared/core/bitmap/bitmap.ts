import { InvalidArgumentError } from '../errors.ts';
import { IpFamily } from '../ip/address.ts';
import { capacity, formatCidr, hostAt, type Cidr } from '../ip/cidr.ts';

/**
 * The legacy Kubernetes ClusterIP bitmap (`RangeAllocation.data`), as a value object.
 *
 * Bit `i` means "host offset `i` is allocated", that is address `network + 1 + i`:
 *
 *   address:  network | network+1 | network+2 | ... | network+window | (rest of an IPv6 block, broadcast)
 *   bit:         -    |     0     |     1     | ... |   window - 1   |   -  (outside the bitmap)
 *
 * The wire form is Go's `big.Int.Bytes()` of that number: big-endian, leading zero bytes trimmed, and an empty array
 * when no bit is set. In memory the bits live in a Uint8Array in little-endian order (bit `i` is bit `i & 7` of byte
 * `i >> 3`), so has/set/clear are O(1); a bigint would copy the whole 128 KiB number on every set of a /12 (measured:
 * ~15 us per set against ~0.05 us here). Encoding is then one reversed copy of the significant bytes.
 */

/** Kubernetes caps an IPv6 bitmap at 65,536 addresses of which the network one is never used: 65,535 bits. */
const IPV6_WINDOW = 65_535n;
/** Longest IPv4 range the legacy allocator accepts (kube-apiserver: "the mask must be >= 12"). */
const IPV4_MIN_PREFIX = 12;
/** Longest IPv6 range the legacy allocator accepts (kube-apiserver: "the mask must be >= 108"). */
const IPV6_MIN_PREFIX = 108;
/**
 * Largest bitmap we build. An IPv4 /12 needs 1,048,574 bits; 2^31 keeps every index a small integer for the
 * bitwise operators below, which work on 32-bit signed values.
 */
const MAX_SIZE = 2 ** 31;

/** Number of bits the legacy bitmap of `cidr` covers: every host of an IPv4 range, at most 65,535 hosts of an IPv6 one. */
export function legacyWindow(cidr: Cidr): bigint {
  const hosts = capacity(cidr);
  if (cidr.family === IpFamily.IPv6 && hosts > IPV6_WINDOW) return IPV6_WINDOW;
  return hosts;
}

/**
 * Refuses ranges too large for a legacy RangeAllocation, with the limits kube-apiserver enforces:
 * IPv4 /12 (2^20 addresses) and IPv6 /108 (only the first 65,535 hosts of which are ever in the bitmap).
 * @throws InvalidArgumentError when the prefix is shorter than the family's limit.
 */
export function validateLegacyCidr(cidr: Cidr, field = 'range'): void {
  const limit = cidr.family === IpFamily.IPv4 ? IPV4_MIN_PREFIX : IPV6_MIN_PREFIX;
  if (cidr.prefix < limit) {
    throw new InvalidArgumentError(
      `${cidr.family} range ${formatCidr(cidr)} is too large for a legacy RangeAllocation bitmap: the prefix must be /${limit} or longer.`,
      field,
    );
  }
}

/** The bit of `address` in the legacy bitmap of `cidr`, or undefined for reserved addresses and addresses outside the window. */
export function bitOf(cidr: Cidr, address: bigint): number | undefined {
  const offset = address - cidr.base - 1n;
  return offset >= 0n && offset < legacyWindow(cidr) ? Number(offset) : undefined;
}

/**
 * The address that bit `bit` of the legacy bitmap of `cidr` stands for.
 * @throws RangeError when the bit lies outside the window (a caller bug, not a client error).
 */
export function addressOfBit(cidr: Cidr, bit: number): bigint {
  if (!Number.isInteger(bit) || bit < 0 || BigInt(bit) >= legacyWindow(cidr)) {
    throw new RangeError(`Bit ${bit} is outside the ${legacyWindow(cidr)}-bit window of ${formatCidr(cidr)}.`);
  }
  return hostAt(cidr, BigInt(bit));
}

/** Set bits of each byte value, so count() after decode is one pass of lookups. */
const POPCOUNT = Uint8Array.from({ length: 256 }, (_, byte) => {
  let bits = 0;
  for (let b = byte; b !== 0; b &= b - 1) bits += 1;
  return bits;
});

/**
 * A fixed-size set of bit indexes [0, size). Invariant: bits at or beyond `size` in the last byte are always zero,
 * so whole-byte comparisons, counts and encodings need no masking.
 */
export class Bitmap {
  readonly size: number;
  readonly #bytes: Uint8Array;
  #count: number;

  private constructor(size: number, bytes: Uint8Array, count: number) {
    this.size = size;
    this.#bytes = bytes;
    this.#count = count;
  }

  /**
   * A bitmap of `size` bits, none set.
   * @throws RangeError when size is not an integer in [0, 2^31].
   */
  static empty(size: bigint | number): Bitmap {
    const bits = checkSize(size);
    return new Bitmap(bits, new Uint8Array(byteLength(bits)), 0);
  }

  /**
   * Reads `big.Int.Bytes()` output (leading zero bytes tolerated, as Go's SetBytes does) into a bitmap of `size` bits.
   * @throws InvalidArgumentError when the bytes set a bit at or beyond `size`.
   */
  static decode(bytes: Uint8Array, size: bigint | number): Bitmap {
    const bits = checkSize(size);
    const length = byteLength(bits);
    const little = new Uint8Array(length);
    let count = 0;
    // bytes[last] holds bits 0..7, bytes[last - k] holds bits 8k..8k+7.
    for (let k = 0, j = bytes.length - 1; j >= 0; k += 1, j -= 1) {
      const byte = bytes[j]!;
      if (byte === 0) continue;
      if (k >= length || (k === length - 1 && byte >>> (bits - 8 * k) !== 0)) {
        throw new InvalidArgumentError(
          `RangeAllocation data sets bit ${8 * k + 31 - Math.clz32(byte)}, but the bitmap holds only ${bits} bits.`,
          'data',
        );
      }
      little[k] = byte;
      count += POPCOUNT[byte]!;
    }
    return new Bitmap(bits, little, count);
  }

  /**
   * True when bit `i` is set.
   * @throws RangeError when i is not an integer in [0, size): an index from outside the window is a caller bug.
   */
  has(i: number): boolean {
    this.#check(i);
    return (this.#bytes[i >>> 3]! & (1 << (i & 7))) !== 0;
  }

  /** Sets bit `i`; returns false when it was already set (an allocation that lost). @throws RangeError as has(). */
  set(i: number): boolean {
    this.#check(i);
    const mask = 1 << (i & 7);
    const byte = this.#bytes[i >>> 3]!;
    if ((byte & mask) !== 0) return false;
    this.#bytes[i >>> 3] = byte | mask;
    this.#count += 1;
    return true;
  }

  /** Clears bit `i`; returns false when it was already clear. @throws RangeError as has(). */
  clear(i: number): boolean {
    this.#check(i);
    const mask = 1 << (i & 7);
    const byte = this.#bytes[i >>> 3]!;
    if ((byte & mask) === 0) return false;
    this.#bytes[i >>> 3] = byte & ~mask;
    this.#count -= 1;
    return true;
  }

  /** Number of set bits, kept up to date by set/clear so it costs nothing. */
  count(): number {
    return this.#count;
  }

  /** The wire form: Go's `big.Int.Bytes()`, big-endian with no leading zero byte; empty when no bit is set. */
  encode(): Uint8Array {
    const bytes = this.#bytes;
    let top = bytes.length - 1;
    while (top >= 0 && bytes[top] === 0) top -= 1;
    const out = new Uint8Array(top + 1);
    for (let k = 0; k <= top; k += 1) out[top - k] = bytes[k]!;
    return out;
  }

  /** Calls `callback` with every set bit, in ascending order; a plain loop, several times faster than setBits() on full maps. */
  forEachSet(callback: (bit: number) => void): void {
    const bytes = this.#bytes;
    for (let k = 0; k < bytes.length; k += 1) {
      for (let byte = bytes[k]!; byte !== 0; byte &= byte - 1) callback(8 * k + 31 - Math.clz32(byte & -byte));
    }
  }

  /** The set bits in ascending order; skips empty bytes, so a sparse /12 costs one pass over 128 KiB. */
  *setBits(): IterableIterator<number> {
    const bytes = this.#bytes;
    for (let k = 0; k < bytes.length; k += 1) {
      let byte = bytes[k]!;
      while (byte !== 0) {
        const low = byte & -byte;
        yield 8 * k + 31 - Math.clz32(low);
        byte ^= low;
      }
    }
  }

  /** True when both bitmaps have the same size and the same bits set. */
  equals(other: Bitmap): boolean {
    if (other.size !== this.size || other.#count !== this.#count) return false;
    const a = this.#bytes;
    const b = other.#bytes;
    for (let k = 0; k < a.length; k += 1) if (a[k] !== b[k]) return false;
    return true;
  }

  /**
   * The first clear bit at or after `start`, wrapping past the end to 0; undefined when every bit is set.
   * This is Kubernetes' random-scan strategy once the caller has drawn `start` uniformly from [0, size).
   * @throws RangeError when start is not an integer in [0, size); an empty (size 0) bitmap accepts any start.
   */
  firstClear(start: number): number | undefined {
    if (this.size === 0) return undefined;
    this.#check(start);
    if (this.#count === this.size) return undefined;
    return this.#scan(start, this.size) ?? this.#scan(0, start);
  }

  /** A copy that shares nothing with this bitmap. */
  clone(): Bitmap {
    return new Bitmap(this.size, this.#bytes.slice(), this.#count);
  }

  /** First clear bit in [from, to), skipping full bytes whole. */
  #scan(from: number, to: number): number | undefined {
    const bytes = this.#bytes;
    let i = from;
    while (i < to) {
      const byte = bytes[i >>> 3]!;
      if ((i & 7) === 0 && byte === 0xff) {
        i += 8;
        continue;
      }
      // Clear bits of this byte at or above i's position; `~byte & (byte + 1)` would only find the lowest one.
      const free = ~byte & (0xff << (i & 7)) & 0xff;
      if (free === 0) {
        i = (i | 7) + 1;
        continue;
      }
      const bit = (i & ~7) + 31 - Math.clz32(free & -free);
      return bit < to ? bit : undefined;
    }
    return undefined;
  }

  #check(i: number): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.size) {
      throw new RangeError(`Bit ${i} is outside the bitmap of ${this.size} bits.`);
    }
  }
}

function checkSize(size: bigint | number): number {
  const bits = typeof size === 'bigint' ? (size <= BigInt(MAX_SIZE) ? Number(size) : Infinity) : size;
  if (!Number.isInteger(bits) || bits < 0 || bits > MAX_SIZE) {
    throw new RangeError(`A bitmap holds an integer number of bits from 0 to ${MAX_SIZE}, not ${size}.`);
  }
  return bits;
}

function byteLength(bits: number): number {
  return Math.ceil(bits / 8);
}
