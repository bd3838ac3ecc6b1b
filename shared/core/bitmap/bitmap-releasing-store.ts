import { parseAddress } from '../ip/address.ts';
import type { Claim, Lease, Pool, PoolView, Range } from '../model.ts';
import type { CommitOutcome, IpamStore, LeaseScope, Page } from '../ports.ts';
import type { IpFamily } from '../ip/address.ts';
import type { Bitmap } from './bitmap.ts';
import { bitmapOfDocument, legacyBitOf } from './legacy.ts';
import type { BitmapStore, BitmapWrite } from './ports.ts';

/**
 * The store of legacy mode (MultiCIDRServiceAllocator=false): an IpamStore whose releaseClaim clears the bits of the
 * released leases in the same transaction that deletes them, as Kubernetes' legacy allocator releases an IP by
 * clearing its bit. So in legacy mode a release is visible in the bitmap at once, and an address can be claimed
 * again at once, without waiting for the stream mirror. Every other method is the wrapped store's.
 *
 * A bitmap that is missing or that keeps changing does not block a release: after `maxAttempts` lost races, or when
 * there is no bitmap to update, the lease-only release runs and the mirror clears the bits (the bitmap never vetoes).
 */
export class BitmapReleasingStore implements IpamStore {
  constructor(
    private readonly inner: IpamStore,
    private readonly bitmaps: Pick<BitmapStore, 'getBitmap' | 'releaseClaim' | 'leaseHolders'>,
    private readonly maxAttempts = 8,
  ) {}

  async releaseClaim(claim: Claim, expectedVersion?: number): Promise<'released' | 'versionMismatch' | 'absent'> {
    const view = await this.inner.getPoolView(claim.pool);
    if (view) {
      for (let attempt = 0; attempt < this.maxAttempts; attempt += 1) {
        const holders = await this.bitmaps.leaseHolders(claim.pool, claim.addresses.map((a) => a.address));
        const held = claim.addresses.map((a) => a.address).filter((address) => holders.get(address) === claim.uid);
        const writes = await this.clearing(view, held);
        if (writes === undefined) break;
        const outcome = await this.bitmaps.releaseClaim(claim, held, writes, expectedVersion);
        if (outcome !== 'bitmapsChanged') return outcome;
      }
    }
    return this.inner.releaseClaim(claim, expectedVersion);
  }

  /** The bitmap writes clearing these addresses' bits; undefined when a bitmap to clear is missing (the mirror's job). */
  private async clearing(view: PoolView, addresses: readonly string[]): Promise<BitmapWrite[] | undefined> {
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
      const doc = await this.bitmaps.getBitmap(view.pool.name, range.range.name);
      const bitmap: Bitmap | undefined = doc ? bitmapOfDocument(doc, range) : undefined;
      if (!doc || !bitmap) return undefined;
      let changed = false;
      for (const bit of bits) changed = bitmap.clear(bit) || changed;
      if (changed) {
        writes.push({ pool: view.pool.name, rangeName: range.range.name, allocation: { range: range.range.cidr, data: bitmap.encode(), version: doc.version + 1 }, expected: { version: doc.version } });
      }
    }
    return writes;
  }

  // ---- everything else is the wrapped store's ----

  createPool(pool: Pool): Promise<'created' | 'exists'> {
    return this.inner.createPool(pool);
  }
  getPoolView(pool: string): Promise<PoolView | undefined> {
    return this.inner.getPoolView(pool);
  }
  listPools(limit: number, cursor?: string): Promise<Page<Pool>> {
    return this.inner.listPools(limit, cursor);
  }
  deletePool(pool: string): Promise<'deleted' | 'notEmpty' | 'absent'> {
    return this.inner.deletePool(pool);
  }
  createRange(range: Range): Promise<'created' | 'exists'> {
    return this.inner.createRange(range);
  }
  markRangeTerminating(range: Range, atIso: string): Promise<Range> {
    return this.inner.markRangeTerminating(range, atIso);
  }
  deleteRange(pool: string, name: string): Promise<void> {
    return this.inner.deleteRange(pool, name);
  }
  commitClaim(claim: Claim, leases: readonly Lease[], nowMs: number): Promise<CommitOutcome> {
    return this.inner.commitClaim(claim, leases, nowMs);
  }
  getClaim(pool: string, name: string): Promise<Claim | undefined> {
    return this.inner.getClaim(pool, name);
  }
  findGeneratedClaim(pool: string, ownerUid: string, generateName: string): Promise<string | undefined> {
    return this.inner.findGeneratedClaim(pool, ownerUid, generateName);
  }
  listClaims(pool: string, limit: number, cursor?: string, ownerUid?: string): Promise<Page<Claim>> {
    return this.inner.listClaims(pool, limit, cursor, ownerUid);
  }
  renewClaim(claim: Claim, expiresAt: number): Promise<'renewed' | 'lost' | 'absent'> {
    return this.inner.renewClaim(claim, expiresAt);
  }
  getLease(pool: string, address: string): Promise<Lease | undefined> {
    return this.inner.getLease(pool, address);
  }
  listLeases(pool: string, scopes: readonly LeaseScope[], nowMs: number, limit: number, cursor?: string): Promise<Page<Lease>> {
    return this.inner.listLeases(pool, scopes, nowMs, limit, cursor);
  }
  takenAddresses(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[], nowMs: number): Promise<bigint[]> {
    return this.inner.takenAddresses(pool, family, intervals, nowMs);
  }
  countLeases(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[], nowMs: number): Promise<bigint> {
    return this.inner.countLeases(pool, family, intervals, nowMs);
  }
  health(): Promise<{ table: string; status: string }> {
    return this.inner.health();
  }
}
