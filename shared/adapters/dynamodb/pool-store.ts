import { NotReadyError } from '../../core/errors.ts';
import { RangeState, type Pool, type PoolView, type Range } from '../../core/model.ts';
import type { Page, PoolStore, Random } from '../../core/ports.ts';
import { IpFamily } from '../../core/ip/address.ts';
import { itemToPool, itemToRange, legacySlotToItem, poolToItem, rangeToItem } from './codec.ts';
import { itemExists, itemIsAbsent } from './conditions.ts';
import { isSingleScopePosition, type CursorCodec } from './cursor.ts';
import { indexPage, mergeShards } from './index-reads.ts';
import { Entity, keys, RANGE_GENERATION_COPIES } from './keys.ts';
import { queryAll, type Table, type WriteOp } from './table.ts';
import { dropFreed } from './writes/freed.ts';
import { dropRangeGeneration, stampRangeGeneration, transactRangeChange } from './writes/range-generation.ts';
import { removeRange } from './writes/range-removal.ts';
import { tombstoneItem } from './tombstones.ts';

/** Most operations of one TransactWriteItems. */
const MAX_TRANSACTION_OPS = 100;

/**
 * Pools and ranges on the table: a pool and its ranges share one partition, so a view is one consistent query. Every
 * change of the ranges also stamps the pool's range generation (writes/range-generation.ts) with a fresh id from
 * `random`, which also picks the copy each read of the generation goes to.
 */
export class TablePoolStore implements PoolStore {
  constructor(private readonly table: Table, private readonly shards: number, private readonly cursors: CursorCodec, private readonly random: Pick<Random, 'below' | 'uid'>) {}

  async createPool(pool: Pool): Promise<'created' | 'exists'> {
    return (await this.table.write({ kind: 'put', item: poolToItem(pool), condition: itemIsAbsent() })).ok ? 'created' : 'exists';
  }

  /**
   * The generation first, then the partition: a range change that committed before the generation was read is in
   * the query's answer, and one the answer misses committed after it, so it changed the generation (a query is not
   * serialized with a transaction as a whole, so the generation is not read in it).
   */
  async getPoolView(pool: string): Promise<PoolView | undefined> {
    const generation = await this.rangeGeneration(pool);
    const items = await queryAll(this.table, { partition: keys.poolPartition(pool), consistent: true });
    const poolItem = items.find((i) => i.entity === Entity.Pool);
    if (!poolItem) return undefined;
    const view = { pool: itemToPool(poolItem), ranges: items.filter((i) => i.entity === Entity.Range).map(itemToRange) };
    return generation === undefined ? view : { ...view, generation };
  }

  async rangeGeneration(pool: string): Promise<string | undefined> {
    const copy = Number(this.random.below(BigInt(RANGE_GENERATION_COPIES)));
    const item = await this.table.get(keys.rangeGeneration(pool, copy));
    return typeof item?.generation === 'string' ? item.generation : undefined;
  }

  async listPools(limit: number, cursor?: string): Promise<Page<Pool>> {
    const after = cursor ? this.cursors.decode(['pools'], cursor, isSingleScopePosition).k : undefined;
    const page = await indexPage(this.table, { index: 'GSI1', partition: keys.poolsListing() }, after, undefined, limit);
    const items = page.items.map(itemToPool);
    return page.more && items.length ? { items, nextCursor: this.cursors.encode(['pools'], { s: 0, k: items[items.length - 1]!.name }) } : { items };
  }

  async deletePool(pool: string, nowMs: number): Promise<'deleted' | 'notEmpty' | 'absent'> {
    const view = await this.getPoolView(pool);
    if (!view) return 'absent';
    const claims = await mergeShards(this.table, this.shards, (shard) => keys.claimsListing(pool, shard), undefined, undefined, 1);
    if (claims.items.length > 0) return 'notEmpty';
    // The generation's copies go in the pool item's transaction: a claim checked after it no longer finds the view's.
    // The claims listing (an index) can lag a claim committed just before: the tombstone, in the pool item's
    // transaction, has the reconciler look for such claims again (releaseDeletedPoolClaims).
    const tombstone = tombstoneItem(Entity.PoolGone, nowMs, (at) => keys.poolGone(pool, at), { pool });
    const ops: WriteOp[] = [{ kind: 'delete', key: keys.pool(pool), condition: itemExists() }, { kind: 'put', item: tombstone }, ...dropRangeGeneration(pool)];
    for (const r of view.ranges) {
      ops.push({ kind: 'delete', key: keys.range(pool, r.name), condition: itemExists() });
      // Bitmap items of legacy ranges go with the pool.
      ops.push({ kind: 'delete', key: keys.bitmap(pool, r.name) });
    }
    // The legacy slots go with the pool, whether or not a range still names them (a delete of an absent item is a no-op).
    for (const family of [IpFamily.IPv4, IpFamily.IPv6]) ops.push({ kind: 'delete', key: keys.legacySlot(pool, family) });
    for (let i = 0; i < ops.length; i += MAX_TRANSACTION_OPS) {
      if (await transactRangeChange(this.table, ops.slice(i, i + MAX_TRANSACTION_OPS))) return 'absent';
    }
    // Its occupancy summary goes too (emptied chunks stay while the pool lives; see OccupancyStore.putChunk). The
    // stream writes no chunk for a lease that is gone, so none comes back.
    for (const family of [IpFamily.IPv4, IpFamily.IPv6]) {
      const chunks = await queryAll(this.table, { partition: keys.occupancy(pool, family), attributes: ['PK', 'SK'] });
      for (const chunk of chunks) await this.table.write({ kind: 'delete', key: { PK: chunk.PK as string, SK: chunk.SK as string } });
    }
    // And its ranges' freed counters and used-up seals (a seal names its range's incarnation: a leftover says nothing).
    await dropFreed(this.table, pool, view.ranges.map((r) => r.name));
    return 'deleted';
  }

  /**
   * One transaction: the pool still exists, the range is absent, and for a legacy range its family's slot is absent
   * (the slot is the shared item concurrent legacy creates meet on: at most one of them commits); and a new range
   * generation.
   */
  async createRange(range: Range): Promise<'created' | 'exists' | 'legacyTaken'> {
    const verdicts = await transactRangeChange(this.table, [
      { kind: 'check', key: keys.pool(range.pool), condition: itemExists() },
      { kind: 'put', item: rangeToItem(range), condition: itemIsAbsent() },
      ...(range.legacy ? [{ kind: 'put', item: legacySlotToItem(range), condition: itemIsAbsent() } as const] : []),
      ...stampRangeGeneration(range.pool, this.random.uid()),
    ]);
    if (!verdicts) return 'created';
    if (verdicts[0]?.code === 'ConditionalCheckFailed') throw new NotReadyError(`Pool ${JSON.stringify(range.pool)} was deleted meanwhile.`);
    if (verdicts[1]?.code !== 'ConditionalCheckFailed' && verdicts[2]?.code === 'ConditionalCheckFailed') return 'legacyTaken';
    // The name is taken, or another transaction on the range or the slot was in flight: the caller reads again.
    return 'exists';
  }

  /** The mark and a new range generation in one transaction, then the range as it is now (a transaction returns no item). */
  async markRangeTerminating(range: Range, atIso: string): Promise<Range> {
    const key = keys.range(range.pool, range.name);
    const gone = () => new NotReadyError(`Range ${JSON.stringify(range.name)} was deleted meanwhile.`);
    const verdicts = await transactRangeChange(this.table, [
      { kind: 'update', key, update: { set: { state: RangeState.Terminating }, setIfAbsent: { deletionRequestedAt: atIso } }, condition: itemExists() },
      ...stampRangeGeneration(range.pool, this.random.uid()),
    ]);
    if (verdicts?.[0]?.code === 'ConditionalCheckFailed') throw gone();
    if (verdicts) throw new NotReadyError(`Another change of pool ${JSON.stringify(range.pool)}'s ranges was in progress; retry the request.`);
    const item = await this.table.get(key);
    if (!item) throw gone();
    return itemToRange(item);
  }

  async deleteRange(range: Range): Promise<boolean> {
    if ((await this.removeRange(range)) !== 'removed') return false;
    // Its freed counters and seals, as finalizeRange drops them. Claims taken through it while another range covered
    // it keep naming it, so their releases may write a counter again: harmless (no band reads a removed range's
    // counters; a lease naming it keeps its part unsealed), and deleted with the pool.
    await dropFreed(this.table, range.pool, [range.name]);
    return true;
  }

  /** Removes this Terminating incarnation with what goes with it (`more`), under a new range generation (the reconciler's finalize too). */
  removeRange(range: Range, more: readonly WriteOp[] = []): Promise<'removed' | 'changed'> {
    return removeRange(this.table, range, this.random.uid(), more);
  }
}
