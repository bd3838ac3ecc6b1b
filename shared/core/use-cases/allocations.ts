import { NotFoundError } from '../errors.ts';
import { parseCidr } from '../ip/cidr.ts';
import { bitmapOf, bitmapOfDocument, bitmapsMaintained, windowInterval } from '../bitmap/legacy.ts';
import type { RangeAllocation } from '../bitmap/range-allocation.ts';
import type { Deps } from './deps.ts';

/**
 * The legacy `RangeAllocation` of a pool's legacy range, as old consumers read it.
 *
 * - Bitmaps kept (legacy mode, or dual-write on) and the item exists for this CIDR: the stored document.
 * - Bitmaps kept but no item yet (a new environment, before the first allocation or mirror batch): computed from the
 *   range's lease items with version 0, and NOT written: a GET stays read-only, and the first writer (a legacy
 *   allocation or the mirror) creates the item from the same leases, at version 1.
 * - Dual-write off: the stored item is no longer maintained (and the reconciler deletes it), so the answer is
 *   computed from the leases, version 0.
 *
 * @throws NotFoundError when the pool or the range does not exist, or the range is not a legacy range.
 */
export async function getRangeAllocation(
  deps: Pick<Deps, 'views' | 'clock' | 'gates' | 'bitmaps' | 'leases'>,
  pool: string,
  rangeName: string,
): Promise<RangeAllocation> {
  const view = await deps.views.get(pool, deps.clock.nowMs(), true);
  const range = view.ranges.find((r) => r.name === rangeName);
  if (!range) throw new NotFoundError('range', rangeName);
  if (!range.legacy) {
    throw new NotFoundError(
      'allocation',
      rangeName,
      `Range ${JSON.stringify(rangeName)} is not a legacy range and has no RangeAllocation bitmap.`,
    );
  }
  const parsed = { range, cidr: parseCidr(range.cidr) };
  if (bitmapsMaintained(deps.gates)) {
    const doc = await deps.bitmaps.getBitmap(pool, rangeName);
    if (doc && bitmapOfDocument(doc, parsed)) return doc;
  }
  const window = windowInterval(parsed.cidr);
  const taken = window ? await deps.leases.takenAddresses(pool, range.family, [window], 0) : [];
  return { range: range.cidr, data: bitmapOf(parsed.cidr, taken).encode(), version: 0 };
}
