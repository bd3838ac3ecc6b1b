import { parseAddress } from '../ip/address.ts';
import type { Claim, Hold, PoolView } from '../model.ts';
import type { ClaimStore, PoolStore, ReleaseOutcome } from '../ports.ts';
import type { Bitmap } from './bitmap.ts';
import { bitmapOfDocument, legacyBitOf } from './legacy.ts';
import type { BitmapStore, BitmapWrite } from './ports.ts';
import type { IpamEvent } from '../events.ts';

export interface BitmapReleaseDeps {
  readonly pools: Pick<PoolStore, 'getPoolView'>;
  readonly claims: Pick<ClaimStore, 'releaseClaim'>;
  readonly bitmaps: Pick<BitmapStore, 'getBitmap' | 'releaseClaim' | 'leaseHolders'>;
}

/** How a legacy release is made: as ClaimStore.releaseClaim's arguments, and how many lost bitmap races it takes. */
export interface BitmapReleaseOptions {
  /** The claim's version the release expects, when given. */
  readonly expectedVersion?: number;
  readonly hold?: Hold;
  readonly event?: IpamEvent;
  readonly maxAttempts?: number;
}

/**
 * The release of legacy mode (MultiCIDRServiceAllocator=false): the bits of the released leases are cleared in the
 * same transaction that deletes them, as Kubernetes' legacy allocator releases an IP by clearing its bit. So a
 * release is visible in the bitmap at once, and the address can be claimed again at once, without waiting for the
 * stream mirror.
 *
 * A bitmap that is missing or that keeps changing does not block a release: after `maxAttempts` lost races, or when
 * there is no bitmap to update, the lease-only release runs and the mirror clears the bits (the bitmap never vetoes).
 *
 * With a `hold` (a pool's reuse delay) the bits stay set: the addresses are held, and legacy consumers must not hand
 * them out either. The leases become Released leases; once the reconciler deletes them after the delay, its drift
 * check clears the bits (row 9, after its strikes), as Kubernetes' repair loop frees a leak.
 */
export async function releaseClearingBits(
  deps: BitmapReleaseDeps,
  claim: Claim,
  options: BitmapReleaseOptions = {},
): Promise<ReleaseOutcome> {
  const { expectedVersion, hold, event, maxAttempts = 8 } = options;
  const view = hold ? undefined : await deps.pools.getPoolView(claim.pool);
  if (view) {
    for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
      const holders = await deps.bitmaps.leaseHolders(
        claim.pool,
        claim.addresses.map((a) => a.address),
      );
      const held = claim.addresses.map((a) => a.address).filter((address) => holders.get(address) === claim.uid);
      const writes = await clearing(deps, view, held);
      if (writes === undefined) break;
      const outcome = await deps.bitmaps.releaseClaim(claim, held, writes, { expectedVersion, event });
      if (outcome !== 'bitmapsChanged') return outcome;
    }
  }
  return deps.claims.releaseClaim(claim, expectedVersion, hold, event);
}

/** The bitmap writes clearing these addresses' bits; undefined when a bitmap to clear is missing (the mirror's job). */
async function clearing(
  deps: BitmapReleaseDeps,
  view: PoolView,
  addresses: readonly string[],
): Promise<BitmapWrite[] | undefined> {
  const byRange = new Map<string, { range: NonNullable<ReturnType<typeof legacyBitOf>>['range']; bits: number[] }>();
  for (const address of addresses) {
    const found = legacyBitOf(view, parseAddress(address));
    if (!found) continue;
    const entry = byRange.get(found.range.range.name) ?? { range: found.range, bits: [] };
    entry.bits.push(found.bit);
    byRange.set(found.range.range.name, entry);
  }
  const writes: BitmapWrite[] = [];
  for (const { range, bits } of byRange.values()) {
    const doc = await deps.bitmaps.getBitmap(view.pool.name, range.range.name);
    const bitmap: Bitmap | undefined = doc ? bitmapOfDocument(doc, range) : undefined;
    if (!doc || !bitmap) return undefined;
    let changed = false;
    for (const bit of bits) changed = bitmap.clear(bit) || changed;
    if (changed) {
      writes.push({
        pool: view.pool.name,
        rangeName: range.range.name,
        allocation: { range: range.range.cidr, data: bitmap.encode(), version: doc.version + 1 },
        expected: { version: doc.version },
      });
    }
  }
  return writes;
}
