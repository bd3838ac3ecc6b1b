import type { IpFamily } from '../../core/ip/address.ts';
import { isReleased, leaseHoldIdentity, mayTakeBack, type HoldIdentity, type Lease } from '../../core/model.ts';
import type { LeaseIndex, LeaseScope, Page, PageQuery } from '../../core/ports.ts';
import { itemToLease } from './codec.ts';
import { isListPosition, type CursorCodec, type ListPosition } from './cursor.ts';
import { addressBounds, countLeases, filteredPage, takenAddresses, type Intervals } from './index-reads.ts';
import { hasNotExpired } from './conditions.ts';
import { keys } from './keys.ts';
import { queryAll, type Table } from './table.ts';

/** Leases on the table: one item read for one address, the sharded listing index for everything else. */
export class TableLeaseIndex implements LeaseIndex {
  constructor(
    private readonly table: Table,
    private readonly shards: number,
    private readonly cursors: CursorCodec,
  ) {}

  async getLease(pool: string, address: string): Promise<Lease | undefined> {
    const item = await this.table.get(keys.lease(pool, address));
    return item ? itemToLease(item) : undefined;
  }

  async listLeases(
    pool: string,
    scopes: readonly LeaseScope[],
    nowMs: number,
    page: PageQuery & { readonly limit: number },
  ): Promise<Page<Lease>> {
    const { limit, cursor } = page;
    // The scopes are the listing's filter (one range's CIDR, or both families): a cursor of another range is refused.
    const listing = [
      'addresses',
      pool,
      ...scopes.map((s) => `${s.family}:${s.from.toString(16)}-${s.to.toString(16)}`),
    ];
    // A position this listing issued: a scope it has, and a key inside that scope's bounds (or '' for its start).
    const issued = (value: unknown): value is ListPosition => {
      if (!isListPosition(value) || value.s >= scopes.length) return false;
      const scope = scopes[value.s]!;
      const [low, high] = addressBounds(scope.family, scope.from, scope.to);
      return value.k === '' || (value.k >= low && value.k <= high);
    };
    let position: ListPosition | undefined = cursor ? this.cursors.decode(listing, cursor, issued) : undefined;
    const out: Lease[] = [];
    for (let s = position?.s ?? 0; s < scopes.length; s += 1) {
      const scope = scopes[s]!;
      const after = position && position.s === s && position.k !== '' ? position.k : undefined;
      // Expired leases (not yet released by the reconciler) are filtered out after the read, so a page reads at most
      // limit + 1 items a shard however many of them expired, and may come back short with a cursor.
      const bases = Array.from({ length: this.shards }, (_, shard) => ({
        index: 'GSI1' as const,
        partition: keys.leasesListing(pool, scope.family, shard),
      }));
      const page = await filteredPage(this.table, bases, {
        after,
        filter: hasNotExpired(nowMs),
        limit: limit - out.length,
        bounds: addressBounds(scope.family, scope.from, scope.to),
      });
      out.push(...page.items.map(itemToLease));
      if (page.next !== undefined) return { items: out, nextCursor: this.cursors.encode(listing, { s, k: page.next }) };
      position = undefined;
      if (out.length >= limit && s < scopes.length - 1)
        return { items: out, nextCursor: this.cursors.encode(listing, { s: s + 1, k: '' }) };
    }
    return { items: out };
  }

  takenAddresses(pool: string, family: IpFamily, intervals: Intervals, nowMs: number): Promise<bigint[]> {
    return takenAddresses({ table: this.table, shards: this.shards }, { pool, family, intervals }, nowMs);
  }

  countLeases(
    pool: string,
    family: IpFamily,
    intervals: Intervals,
    count: { readonly nowMs: number; readonly releasedOnly?: boolean },
  ): Promise<bigint> {
    const { nowMs, releasedOnly = false } = count;
    return countLeases({ table: this.table, shards: this.shards }, { pool, family, intervals }, nowMs, releasedOnly);
  }

  async heldFor(pool: string, identity: HoldIdentity, nowMs: number): Promise<Lease[]> {
    const items = await queryAll(this.table, {
      index: 'GSI2',
      partition: keys.held(pool, identity.kind, identity.name),
      filter: hasNotExpired(nowMs),
    });
    // The partition is a hash of kind and name: compare the whole identity, so neither a collision nor another
    // allocator naming the same owner is handed the address.
    return items.map(itemToLease).filter((l) => isReleased(l) && mayTakeBack(leaseHoldIdentity(l), identity));
  }
}
