import type { Claim, Lease } from '../../core/model.ts';
import type { RangeAllocation } from '../../core/bitmap/range-allocation.ts';
import type { BitmapCommitOutcome, BitmapReleaseOutcome, BitmapStore, BitmapWrite } from '../../core/bitmap/ports.ts';
import { bitmapToItem, itemToBitmap, newEventId } from './codec.ts';
import { bitmapIs, claimIsAsRead, claimUidIs, stillAsRead } from './conditions.ts';
import { Entity, keys } from './keys.ts';
import type { TableClaimStore } from './claim-store.ts';
import type { Table } from './table.ts';
import { claimCommit } from './writes/commit.ts';
import { claimRelease, markerHeld, releaseLater } from './writes/release.ts';
import type { IpamEvent } from '../../core/use-cases/reconcile-ports.ts';

/**
 * The legacy bitmaps on the table. The claim and lease items it writes come from the same write shapes as the claim
 * store's (writes/), so either allocator's claims can be read and released by the other.
 */
export class TableBitmapStore implements BitmapStore {
  constructor(
    private readonly table: Table,
    private readonly shards: number,
    private readonly claims: TableClaimStore,
  ) {}

  async getBitmap(pool: string, rangeName: string): Promise<RangeAllocation | undefined> {
    const item = await this.table.get(keys.bitmap(pool, rangeName));
    return item ? itemToBitmap(item) : undefined;
  }

  async putBitmap(write: BitmapWrite): Promise<'written' | 'changed'> {
    return (await this.table.write({ kind: 'put', item: bitmapToItem(write), condition: bitmapIs(write.expected) })).ok
      ? 'written'
      : 'changed';
  }

  async commitClaim(
    claim: Claim,
    leases: readonly Lease[],
    bitmaps: readonly BitmapWrite[],
    nowMs: number,
  ): Promise<BitmapCommitOutcome> {
    const { ops, decode } = claimCommit({ claim, leases, nowMs, shards: this.shards }, { bitmaps });
    const verdicts = await this.table.transact(ops);
    if (!verdicts) return { kind: 'committed' };
    const verdict = decode(verdicts);
    return verdict.kind === 'bitmapsChanged' ? verdict : this.claims.outcomeOf(claim, verdict);
  }

  async releaseClaim(
    claim: Claim,
    held: readonly string[],
    bitmaps: readonly BitmapWrite[],
    options: { readonly expectedVersion?: number; readonly event?: IpamEvent } = {},
  ): Promise<BitmapReleaseOutcome> {
    const { expectedVersion, event } = options;
    const condition = expectedVersion === undefined ? claimUidIs(claim.uid) : claimIsAsRead(claim, expectedVersion);
    const holdings = { addresses: held, marker: await markerHeld(this.table, claim) };
    const { ops, later, decode } = claimRelease(claim, condition, holdings, {
      bitmaps,
      ...(event ? { event: { event, id: newEventId() } } : {}),
    });
    const verdicts = await this.table.transact(ops);
    if (!verdicts) {
      await releaseLater(this.table, claim, later, {});
      return 'released';
    }
    if (decode(verdicts) === 'claimChanged') {
      const current = await this.claims.getClaim(claim.pool, claim.name);
      if (!current || current.uid !== claim.uid) return 'absent';
      if (expectedVersion !== undefined && !stillAsRead(current, claim, expectedVersion)) return 'versionMismatch';
    }
    // A bitmap or a lease changed between the read and the write: the caller reads both again.
    return 'bitmapsChanged';
  }

  async leaseHolders(pool: string, addresses: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const items = await this.table.batchGet(
      addresses.map((a) => keys.lease(pool, a)),
      ['address', 'claimUid', 'entity'],
    );
    return new Map(
      items.filter((i) => i.entity === Entity.Lease).map((i) => [i.address as string, i.claimUid as string]),
    );
  }
}
