import { NotReadyError } from '../../core/errors.ts';
import { RangeState, type Pool, type PoolView, type Range } from '../../core/model.ts';
import type { Page, PoolStore } from '../../core/ports.ts';
import { IpFamily } from '../../core/ip/address.ts';
import { itemToPool, itemToRange, legacySlotToItem, poolToItem, rangeToItem } from './codec.ts';
import { itemExists, itemIsAbsent } from './conditions.ts';
import { isListPosition, type CursorCodec } from './cursor.ts';
import { indexPage, mergeShards } from './index-reads.ts';
import { Entity, keys } from './keys.ts';
import { queryAll, type Table, type WriteOp } from './table.ts';
import { removeRange } from './writes/range-removal.ts';

/** Pools and ranges on the table: a pool and its ranges share one partition, so a view is one consistent query. */
export class TablePoolStore implements PoolStore {
  constructor(private readonly table: Table, private readonly shards: number, private readonly cursors: CursorCodec) {}

  async createPool(pool: Pool): Promise<'created' | 'exists'> {
    return (await this.table.write({ kind: 'put', item: poolToItem(pool), condition: itemIsAbsent() })).ok ? 'created' : 'exists';
  }

  async getPoolView(pool: string): Promise<PoolView | undefined> {
    const items = await queryAll(this.table, { partition: keys.poolPartition(pool), consistent: true });
    const poolItem = items.find((i) => i.entity === Entity.Pool);
    if (!poolItem) return undefined;
    return { pool: itemToPool(poolItem), ranges: items.filter((i) => i.entity === Entity.Range).map(itemToRange) };
  }

  async listPools(limit: number, cursor?: string): Promise<Page<Pool>> {
    const after = cursor ? this.cursors.decode(cursor, isListPosition).k : undefined;
    const page = await indexPage(this.table, { index: 'GSI1', partition: keys.poolsListing() }, after, undefined, limit);
    const items = page.items.map(itemToPool);
    return page.more && items.length ? { items, nextCursor: this.cursors.encode({ s: 0, k: items[items.length - 1]!.name }) } : { items };
  }

  async deletePool(pool: string): Promise<'deleted' | 'notEmpty' | 'absent'> {
    const view = await this.getPoolView(pool);
    if (!view) return 'absent';
    const claims = await mergeShards(this.table, this.shards, (shard) => keys.claimsListing(pool, shard), undefined, undefined, 1);
    if (claims.items.length > 0) return 'notEmpty';
    const ops: WriteOp[] = [{ kind: 'delete', key: keys.pool(pool), condition: itemExists() }];
    for (const r of view.ranges) {
      ops.push({ kind: 'delete', key: keys.range(pool, r.name), condition: itemExists() });
      // Bitmap items of legacy ranges go with the pool.
      ops.push({ kind: 'delete', key: keys.bitmap(pool, r.name) });
    }
    // The legacy slots go with the pool, whether or not a range still names them (a delete of an absent item is a no-op).
    for (const family of [IpFamily.IPv4, IpFamily.IPv6]) ops.push({ kind: 'delete', key: keys.legacySlot(pool, family) });
    for (let i = 0; i < ops.length; i += 100) {
      if (await this.table.transact(ops.slice(i, i + 100))) return 'absent';
    }
    // Its occupancy summary goes too (emptied chunks stay while the pool lives; see OccupancyStore.putChunk). The
    // stream writes no chunk for a lease that is gone, so none comes back.
    for (const family of [IpFamily.IPv4, IpFamily.IPv6]) {
      const chunks = await queryAll(this.table, { partition: keys.occupancy(pool, family), attributes: ['PK', 'SK'] });
      for (const chunk of chunks) await this.table.write({ kind: 'delete', key: { PK: chunk.PK as string, SK: chunk.SK as string } });
    }
    return 'deleted';
  }

  /**
   * One transaction: the pool still exists, the range is absent, and for a legacy range its family's slot is absent
   * (the slot is the shared item concurrent legacy creates meet on: at most one of them commits).
   */
  async createRange(range: Range): Promise<'created' | 'exists' | 'legacyTaken'> {
    const verdicts = await this.table.transact([
      { kind: 'check', key: keys.pool(range.pool), condition: itemExists() },
      { kind: 'put', item: rangeToItem(range), condition: itemIsAbsent() },
      ...(range.legacy ? [{ kind: 'put', item: legacySlotToItem(range), condition: itemIsAbsent() } as const] : []),
    ]);
    if (!verdicts) return 'created';
    if (verdicts[0]?.code === 'ConditionalCheckFailed') throw new NotReadyError(`Pool ${JSON.stringify(range.pool)} was deleted meanwhile.`);
    if (verdicts[1]?.code !== 'ConditionalCheckFailed' && verdicts[2]?.code === 'ConditionalCheckFailed') return 'legacyTaken';
    // The name is taken, or another transaction on the range or the slot was in flight: the caller reads again.
    return 'exists';
  }

  async markRangeTerminating(range: Range, atIso: string): Promise<Range> {
    const result = await this.table.write({
      kind: 'update',
      key: keys.range(range.pool, range.name),
      update: { set: { state: RangeState.Terminating }, setIfAbsent: { deletionRequestedAt: atIso } },
      condition: itemExists(),
    });
    if (!result.ok || !result.item) throw new NotReadyError(`Range ${JSON.stringify(range.name)} was deleted meanwhile.`);
    return itemToRange(result.item);
  }

  async deleteRange(range: Range): Promise<boolean> {
    return (await removeRange(this.table, range)) === 'removed';
  }
}
