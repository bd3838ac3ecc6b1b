import type { IpAddress, IpFamily } from '../ip/address.ts';
import { hostAt, parseCidr, type Cidr } from '../ip/cidr.ts';
import type { Interval } from '../base/intervals.ts';
import type { ParsedRange } from '../base/pool-geometry.ts';
import { RangeState, type PoolView } from '../model.ts';
import type { AllocationGates } from '../ports.ts';
import { Bitmap, bitOf, legacyWindow } from './bitmap.ts';
import type { RangeAllocation } from './range-allocation.ts';

/**
 * Whether the legacy bitmaps are kept: always in legacy mode (the bitmap is the allocator there), and in lease mode
 * until DisableAllocatorDualWrite turns dual-write off. As in Kubernetes, DisableAllocatorDualWrite only means
 * something once MultiCIDRServiceAllocator is on.
 *
 *   MultiCIDRServiceAllocator | DisableAllocatorDualWrite | bitmaps kept
 *   false                     | any                       | yes (they allocate)
 *   true                      | false                     | yes (mirrored from leases)
 *   true                      | true                      | no
 */
export function bitmapsMaintained(gates: AllocationGates): boolean {
  return !gates.MultiCIDRServiceAllocator || !gates.DisableAllocatorDualWrite;
}

/**
 * The offset window a lease allocator must keep dynamic picks under: a legacy range's bitmap window while bitmaps are
 * kept (so no lease ever falls outside its bitmap: the Kubernetes /108 "range is full" bug), nothing otherwise.
 */
export function dynamicWindowOf(gates: AllocationGates): (range: ParsedRange) => bigint | undefined {
  const kept = bitmapsMaintained(gates);
  return (range) => (kept && range.range.legacy ? legacyWindow(range.cidr) : undefined);
}

/** The pool's legacy range of a family (at most one exists), parsed; Ready ones only unless `anyState`. */
export function legacyRangeOf(view: PoolView, family: IpFamily, anyState = false): ParsedRange | undefined {
  const range = view.ranges.find((r) => r.legacy && r.family === family && (anyState || r.state === RangeState.Ready));
  return range ? { range, cidr: parseCidr(range.cidr) } : undefined;
}

/** The legacy range whose bitmap window holds an address, and the address's bit; undefined when no bitmap covers it. */
export function legacyBitOf(view: PoolView, address: IpAddress): { range: ParsedRange; bit: number } | undefined {
  const range = legacyRangeOf(view, address.family, true);
  if (!range) return undefined;
  const bit = bitOf(range.cidr, address.value);
  return bit === undefined ? undefined : { range, bit };
}

/** The addresses of a legacy range's bitmap window as one interval (none for a range without hosts). */
export function windowInterval(cidr: Cidr): Interval | undefined {
  const window = legacyWindow(cidr);
  return window > 0n ? [hostAt(cidr, 0n), hostAt(cidr, window - 1n)] : undefined;
}

/** The bitmap of `cidr`'s window with the bit of every given address that lies in the window set (others ignored). */
export function bitmapOf(cidr: Cidr, addresses: Iterable<bigint>): Bitmap {
  const bitmap = Bitmap.empty(legacyWindow(cidr));
  for (const value of addresses) {
    const bit = bitOf(cidr, value);
    if (bit !== undefined) bitmap.set(bit);
  }
  return bitmap;
}

/**
 * Reads a stored document as the bitmap of `range`, or undefined when it cannot stand for it: it names another CIDR
 * (a leftover of a deleted range of the same name, or a bitmap initialized from another family's range), or it sets
 * bits beyond the window. Callers rebuild such a bitmap from the range's leases and overwrite it.
 */
export function bitmapOfDocument(doc: RangeAllocation, range: ParsedRange): Bitmap | undefined {
  if (doc.range !== range.range.cidr) return undefined;
  try {
    return Bitmap.decode(doc.data, legacyWindow(range.cidr));
  } catch {
    return undefined;
  }
}
