// Over 300 lines: the PoolStore port's one adapter, a method per port method over the pool and range items.
import { ClaimHasChildrenError, NotReadyError } from '../../core/errors.ts';
import { PoolState, RangeState, type Claim, type Pool, type PoolView, type Range } from '../../core/model.ts';
import type { Page, PoolStore, Random } from '../../core/ports.ts';
import { familyBits, formatAddress, IpFamily } from '../../core/ip/address.ts';
import { parseCidr } from '../../core/ip/cidr.ts';
import { INDEX_SETTLE_MS } from '../../core/use-cases/ranges.ts';
import { itemToClaim, itemToPool, itemToRange, legacyLockToItem, poolToItem, rangeToItem, type Item } from './codec.ts';
import {
  attributeIs,
  both,
  claimIsAsRead,
  hasNoChildren,
  itemExists,
  itemIsAbsent,
  poolIsActive,
  poolIsTerminating,
} from './conditions.ts';
import { isSingleScopePosition, type CursorCodec } from './cursor.ts';
import { indexPage, mergeShards } from './index-reads.ts';
import { Entity, keys, RANGE_GENERATION_COPIES, SCHEMA_VERSION, type Key } from './keys.ts';
import { queryAll, type Table, type WriteOp } from './table.ts';
import { dropFreed, freedKeys } from './writes/freed.ts';
import { markerKeyOf } from './writes/release.ts';
import { dropRangeGeneration, stampRangeGeneration, transactRangeChange } from './writes/range-generation.ts';
import { removeRange, unmarkSource } from './writes/range-removal.ts';
import { tombstoneItem } from './tombstones.ts';

/** Deletes a finalizing pool sends at once. */
const REMOVE_PARALLEL = 25;

const keyOf = (item: Item): Key => ({ PK: item.PK as string, SK: item.SK as string });

/**
 * Pools and ranges on the table: a pool and its ranges share one partition, so a view is one consistent query. Every
 * change of the ranges also stamps the pool's range generation (writes/range-generation.ts) with a fresh id from
 * `random`, which also picks the copy each read of the generation goes to.
 */
export class TablePoolStore implements PoolStore {
  constructor(
    private readonly table: Table,
    private readonly shards: number,
    private readonly cursors: CursorCodec,
    private readonly random: Pick<Random, 'below' | 'uid'>,
  ) {}

  async createPool(pool: Pool): Promise<'created' | 'exists' | 'terminating'> {
    const result = await this.table.write({
      kind: 'put',
      item: poolToItem(pool),
      condition: itemIsAbsent(),
      returnOld: true,
    });
    if (result.ok) return 'created';
    const old = result.old ?? (await this.table.get(keys.pool(pool.name)));
    return old?.state === PoolState.Terminating ? 'terminating' : 'exists';
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
    // A Terminating pool is gone for every request: its deletion was accepted.
    if (!poolItem || poolItem.state === PoolState.Terminating) return undefined;
    const view = {
      pool: itemToPool(poolItem),
      ranges: items.filter((i) => i.entity === Entity.Range).map(itemToRange),
    };
    return generation === undefined ? view : { ...view, generation };
  }

  async rangeGeneration(pool: string): Promise<string | undefined> {
    const copy = Number(this.random.below(BigInt(RANGE_GENERATION_COPIES)));
    const item = await this.table.get(keys.rangeGeneration(pool, copy));
    return typeof item?.generation === 'string' ? item.generation : undefined;
  }

  async listPools(limit: number, cursor?: string): Promise<Page<Pool>> {
    const after = cursor ? this.cursors.decode(['pools'], cursor, isSingleScopePosition).k : undefined;
    const page = await indexPage(this.table, { index: 'GSI1', partition: keys.poolsListing() }, { after, limit });
    const items = page.items.map(itemToPool);
    return page.more && items.length
      ? { items, nextCursor: this.cursors.encode(['pools'], { s: 0, k: items[items.length - 1]!.name }) }
      : { items };
  }

  /**
   * The deletion's first phase, one transaction of 19 operations whatever the pool holds:
   *
   *   Update pool          still active (no state) -> Terminating, off the pools listing        -> absent | terminating
   *   Put tombstone        POOLSGONE / <time>#<pool>, kept a day (releaseDeletedPoolClaims)
   *   Put pending          POOLSGONE / TERMINATING#<pool>, until the finalizer is done (the reconciler's backstop)
   *   Put generation x16   a new range generation: a claim committed from an older view reads it, finds no pool, and gives its addresses back
   */
  async deletePool(pool: string, nowMs: number): Promise<'terminating' | 'notEmpty' | 'absent'> {
    const item = await this.table.get(keys.pool(pool));
    if (!item) return 'absent';
    if (item.state === PoolState.Terminating) return 'terminating';
    const claims = await mergeShards(
      { table: this.table, shards: this.shards },
      (shard) => keys.claimsListing(pool, shard),
      { after: undefined, limit: 1 },
    );
    if (claims.items.length > 0) return 'notEmpty';
    const tombstone = tombstoneItem(Entity.PoolGone, nowMs, (at) => keys.poolGone(pool, at), { pool });
    const deletionRequestedAt = new Date(nowMs).toISOString();
    const mark: WriteOp = {
      kind: 'update',
      key: keys.pool(pool),
      update: { set: { state: PoolState.Terminating, deletionRequestedAt }, remove: ['GSI1PK', 'GSI1SK'] },
      condition: poolIsActive(),
    };
    const pending = {
      ...keys.poolTerminating(pool),
      entity: Entity.PoolTerminating,
      schema: SCHEMA_VERSION,
      pool,
      deletionRequestedAt,
    };
    const verdicts = await transactRangeChange(this.table, [
      mark,
      { kind: 'put', item: tombstone },
      { kind: 'put', item: pending },
      ...stampRangeGeneration(pool, this.random.uid()),
    ]);
    if (!verdicts) return 'terminating';
    if (verdicts[0]?.code !== 'ConditionalCheckFailed')
      throw new NotReadyError(`Another change of pool ${JSON.stringify(pool)} was in progress; retry the request.`);
    const now = await this.table.get(keys.pool(pool));
    return now ? 'terminating' : 'absent';
  }

  /**
   * The deletion's second phase. Each step deletes items one by one (no transaction: nothing reads a Terminating
   * pool's items, so no step needs another's atomicity, and no step's size depends on the pool), and every step is
   * read from the table again on a resumed run, so a stop anywhere leaves the rest for the next call:
   *
   *   0. what it holds (readHoldings), read before anything is deleted; nothing is deleted on a listing's word alone
   *   1. per range (named by the pool's partition, a claim or a lease, all read first): bitmap, strikes, seals, freed
   *      counters; before the items that name the ranges, so a resumed call still finds every name
   *   2. claims with their generateName markers, each while it has no child range; leases of both families, Released
   *      and orphaned ones too: nothing the old pool left may keep an address of a pool made again under the name
   *   3. the pool's partition but the pool item: ranges and legacy locks (a nested range's source claim unmarked first)
   *   4. the occupancy summary, range usage, owner-gone tombstones, exhaustion levels (WARN#), the history mark, the
   *      generation's copies
   *   5. the pool item, while still Terminating; then the pending entry of that deletion
   *
   * Holdings (`HIST#<pool>#<address>`, a partition per address, not enumerable by pool) and events stay until their
   * TTL; reads leave out what began before the pool's createdAt (a later pool of the name never sees them). A claim
   * and a lease that no listing showed yet and no nested range's enumeration found stay too (the reconciler releases
   * such claims, row 19); they keep their addresses held, which is what makes leaving them safe.
   */
  async finalizePool(pool: string, options: FinalizeOptions = {}): Promise<'finalized' | 'absent'> {
    // The pending entry first: one read after it that finds no Terminating pool proves it stale (a later deletion's
    // mark rewrites it, with its own time, in the transaction that makes the pool Terminating).
    const pending = await this.table.get(keys.poolTerminating(pool));
    const poolItem = await this.table.get(keys.pool(pool));
    if (poolItem?.state !== PoolState.Terminating) {
      if (pending)
        await this.table.write({
          kind: 'delete',
          key: keys.poolTerminating(pool),
          condition: attributeIs('deletionRequestedAt', pending.deletionRequestedAt as string),
        });
      return 'absent';
    }
    const deletionRequestedAt = poolItem.deletionRequestedAt as string;
    const held = await this.readHoldings(pool, { deletionRequestedAt, nowMs: options.nowMs });
    const names = [...held.ranges];
    await this.removeAll(
      names.flatMap((range) => [keys.bitmap(pool, range), keys.strikes(pool, range), keys.seals(pool, range)]),
    );
    await this.removeAll((await this.table.batchGet(freedKeys(pool, names), ['PK', 'SK'])).map(keyOf));
    await this.removeClaims(held.claims);
    await this.removeAll(held.leaseKeys);
    // A nested pool's ranges give their source claims back (Claim.children) before they go: the parent claims may then
    // be released. A resumed call finds the ranges still there, and a claim no longer listing one needs nothing.
    for (const item of held.partition) {
      if (item.entity !== Entity.Range || !item.source) continue;
      const range = { pool, name: item.name as string, source: item.source as Range['source'] };
      await this.unmarkUntilDone(range);
      await options.unmarked?.(range);
    }
    await this.removeAll(held.partition.map(keyOf));
    for (const partitionKey of [
      keys.occupancy(pool, IpFamily.IPv4),
      keys.occupancy(pool, IpFamily.IPv6),
      keys.usagePartition(pool),
      keys.ownersGone(pool),
      keys.warnings(pool),
    ]) {
      await this.removeAll(
        (await queryAll(this.table, { partition: partitionKey, attributes: ['PK', 'SK'] })).map(keyOf),
      );
    }
    await this.removeAll([
      keys.historyMark(pool),
      ...dropRangeGeneration(pool).flatMap((op) => (op.kind === 'delete' ? [op.key] : [])),
    ]);
    const last = await this.table.write({ kind: 'delete', key: keys.pool(pool), condition: poolIsTerminating() });
    await this.table.write({
      kind: 'delete',
      key: keys.poolTerminating(pool),
      condition: attributeIs('deletionRequestedAt', deletionRequestedAt),
    });
    return last.ok ? 'finalized' : 'absent';
  }

  /**
   * What a Terminating pool holds, read before anything is deleted. The listings are eventually consistent indexes,
   * so nothing is deleted on their word: each listed lease is read again (its claim may have changed), and each claim
   * a listing or a lease names is read (it may have gained a child range since it was listed, or not be listed yet);
   * none is deleted while a claim read so is the source of another pool's range. After the mark nothing gains a child
   * (createRange checks the parent pool is active), so a claim read without one stays without one.
   *
   * A nested range's block goes back to its source (the parent pool may hand it out again) only once no lease of this
   * pool is left in it, which no listing can say: its lease keys are read, each one (a range of at most
   * NESTED_ENUMERATION_LIMIT of them; leases found join the deletion, with their claims). A larger nested range is
   * unmarked only once the mark is INDEX_SETTLE_MS old, when the listings read are trusted to show every lease
   * committed before it (as a range's removal trusts them); before that the deletion waits (NotReadyError).
   * @throws ClaimHasChildrenError while a claim is the source of another pool's range: the deletion waits for it
   */
  private async readHoldings(
    pool: string,
    mark: { readonly deletionRequestedAt: string; readonly nowMs?: number },
  ): Promise<{ ranges: Set<string>; claims: Claim[]; leaseKeys: Key[]; partition: Item[] }> {
    const partition = (
      await queryAll(this.table, {
        partition: keys.poolPartition(pool),
        consistent: true,
        attributes: ['PK', 'SK', 'entity', 'name', 'source', 'cidr', 'family', 'blockPrefixLength'],
      })
    ).filter((i) => i.entity !== Entity.Pool);
    const nested = partition.filter((i) => i.entity === Entity.Range && i.source !== undefined);
    const large = nested.filter((r) => leaseKeysIn(pool, r) === undefined);
    const settled = mark.nowMs !== undefined && Date.parse(mark.deletionRequestedAt) + INDEX_SETTLE_MS <= mark.nowMs;
    if (large.length > 0 && !settled)
      throw new NotReadyError(
        `Pool ${JSON.stringify(pool)}'s range ${JSON.stringify(large[0]!.name)} goes back to its source once the pool's listings have settled; retried by the next run.`,
      );
    const listedClaims = new Set<string>();
    for (let shard = 0; shard < this.shards; shard += 1)
      for (const item of await queryAll(this.table, {
        index: 'GSI1',
        partition: keys.claimsListing(pool, shard),
        attributes: ['PK', 'SK', 'name'],
      }))
        listedClaims.add(item.name as string);
    const leaseKeys = new Map<string, Key>();
    const add = (key: Key) => leaseKeys.set(`${key.PK}|${key.SK}`, key);
    for (const family of [IpFamily.IPv4, IpFamily.IPv6])
      for (let shard = 0; shard < this.shards; shard += 1)
        for (const lease of await queryAll(this.table, {
          index: 'GSI1',
          partition: keys.leasesListing(pool, family, shard),
          attributes: ['PK', 'SK'],
        }))
          add(keyOf(lease));
    for (const range of nested) for (const key of leaseKeysIn(pool, range) ?? []) add(key);
    const leases = await this.table.batchGet([...leaseKeys.values()], ['PK', 'SK', 'range', 'claim']);
    for (const lease of leases) if (typeof lease.claim === 'string') listedClaims.add(lease.claim);
    const claims = (await this.table.batchGet([...listedClaims].map((name) => keys.claim(pool, name)))).map(
      itemToClaim,
    );
    // Its block is another pool's range: the deletion waits, an expected outcome (not a failure: no retry helps until
    // that range goes), told apart by its class.
    const parent = claims.find((c) => c.children?.length);
    if (parent) throw new ClaimHasChildrenError(parent.name, parent.children!);
    const ranges = new Set<string>();
    for (const claim of claims) for (const a of claim.addresses) ranges.add(a.range);
    for (const lease of leases) if (typeof lease.range === 'string') ranges.add(lease.range);
    for (const item of partition) if (item.entity === Entity.Range) ranges.add(item.name as string);
    return { ranges, claims, leaseKeys: leases.map(keyOf), partition };
  }

  /** Deletes claims with their generateName markers, each only while it has no child range (readHoldings read none). */
  private async removeClaims(claims: readonly Claim[]): Promise<void> {
    await this.removeAll(claims.flatMap((c) => (markerKeyOf(c) ? [markerKeyOf(c)!] : [])));
    for (let i = 0; i < claims.length; i += REMOVE_PARALLEL) {
      const results = await Promise.all(
        claims
          .slice(i, i + REMOVE_PARALLEL)
          .map((c) =>
            this.table.write({ kind: 'delete', key: keys.claim(c.pool, c.name), condition: hasNoChildren() }),
          ),
      );
      if (results.some((r) => !r.ok))
        throw new NotReadyError(
          `A claim of pool ${JSON.stringify(claims[0]!.pool)} changed while the pool was being deleted; retried by the next run.`,
        );
    }
  }

  /** Takes a range's marker off its source claim, reading the claim again when it changed meanwhile. */
  private async unmarkUntilDone(range: Pick<Range, 'pool' | 'name' | 'source'>): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const [op] = await unmarkSource(this.table, range);
      if (!op || (await this.table.write(op)).ok) return;
    }
    throw new NotReadyError(
      `Claim ${JSON.stringify(range.source?.claim)} kept changing while pool ${JSON.stringify(range.pool)} was being deleted; retried by the next run.`,
    );
  }

  /** Deletes items, REMOVE_PARALLEL at a time (a delete of an absent item is a no-op). */
  private async removeAll(all: readonly Key[]): Promise<void> {
    for (let i = 0; i < all.length; i += REMOVE_PARALLEL) {
      await Promise.all(all.slice(i, i + REMOVE_PARALLEL).map((key) => this.table.write({ kind: 'delete', key })));
    }
  }

  /**
   * One transaction: the pool still exists, the range is absent, and for a legacy range its family's lock is absent
   * (the lock is the shared item concurrent legacy creates meet on: at most one of them commits); for a nested range
   * its source claim as read gains the marker, while the claim's pool is still active (a Terminating pool's finalizer
   * may have read its claims already); and a new range generation.
   */
  async createRange(range: Range, parent?: Claim): Promise<'created' | 'exists' | 'legacyTaken' | 'parentChanged'> {
    const verdicts = await transactRangeChange(this.table, [
      { kind: 'check', key: keys.pool(range.pool), condition: poolIsActive() },
      { kind: 'put', item: rangeToItem(range), condition: itemIsAbsent() },
      ...(range.legacy ? [{ kind: 'put', item: legacyLockToItem(range), condition: itemIsAbsent() } as const] : []),
      ...(parent
        ? [
            markChild(parent, { pool: range.pool, range: range.name, cidr: range.cidr }),
            { kind: 'check', key: keys.pool(parent.pool), condition: poolIsActive() } as const,
          ]
        : []),
      ...stampRangeGeneration(range.pool, this.random.uid()),
    ]);
    if (!verdicts) return 'created';
    if (verdicts[0]?.code === 'ConditionalCheckFailed')
      throw new NotReadyError(`Pool ${JSON.stringify(range.pool)} was deleted meanwhile.`);
    // A nested range has no legacy lock: its parent pool's check follows the marker.
    if (parent && verdicts[3]?.code === 'ConditionalCheckFailed')
      throw new NotReadyError(`Pool ${JSON.stringify(parent.pool)}, the source claim's, was deleted meanwhile.`);
    if (parent && verdicts[1]?.code !== 'ConditionalCheckFailed' && verdicts[2]?.code === 'ConditionalCheckFailed')
      return 'parentChanged';
    if (verdicts[1]?.code !== 'ConditionalCheckFailed' && verdicts[2]?.code === 'ConditionalCheckFailed')
      return 'legacyTaken';
    // The name is taken, or another transaction on the range or the lock was in flight: the caller reads again.
    return 'exists';
  }

  /** The mark and a new range generation in one transaction, then the range as it is now (a transaction returns no item). */
  async markRangeTerminating(range: Range, atIso: string): Promise<Range> {
    const key = keys.range(range.pool, range.name);
    const gone = () => new NotReadyError(`Range ${JSON.stringify(range.name)} was deleted meanwhile.`);
    const verdicts = await transactRangeChange(this.table, [
      {
        kind: 'update',
        key,
        update: { set: { state: RangeState.Terminating }, setIfAbsent: { deletionRequestedAt: atIso } },
        condition: itemExists(),
      },
      ...stampRangeGeneration(range.pool, this.random.uid()),
    ]);
    if (verdicts?.[0]?.code === 'ConditionalCheckFailed') throw gone();
    if (verdicts)
      throw new NotReadyError(
        `Another change of pool ${JSON.stringify(range.pool)}'s ranges was in progress; retry the request.`,
      );
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

/**
 * The parent claim's marker of a nested range (Claim.children): the claim as read (this incarnation, this version),
 * without an expiry (createNested confirmed it), gains the child and a new version, so a release decided on an older
 * read no longer applies, and every release is conditioned on the claim having no children (hasNoChildren).
 */
function markChild(parent: Claim, child: { pool: string; range: string; cidr: string }): WriteOp {
  return {
    kind: 'update',
    key: keys.claim(parent.pool, parent.name),
    update: { set: { children: [...(parent.children ?? []), child], version: parent.version + 1 } },
    condition: both(claimIsAsRead(parent, parent.version), { op: 'notExists', attribute: 'expiresAt' }),
  };
}

/** What a pool's finalizer is told: the caller's time (when the listings are trusted) and what it does per nested range. */
export interface FinalizeOptions {
  readonly nowMs?: number;
  readonly unmarked?: (range: Pick<Range, 'pool' | 'name' | 'source'>) => Promise<void>;
}

/** The most lease keys of one nested range a pool's finalizer reads, each (ceil(n / 100) batch reads). */
export const NESTED_ENUMERATION_LIMIT = 4096;

/**
 * Every key a lease of `pool` inside the range item may have: one per address, or per block in a block range (a
 * block's lease is keyed by its network address); undefined past NESTED_ENUMERATION_LIMIT.
 */
function leaseKeysIn(pool: string, range: Item): Key[] | undefined {
  const cidr = parseCidr(range.cidr as string);
  const bits = familyBits(cidr.family);
  const unit = typeof range.blockPrefixLength === 'number' ? range.blockPrefixLength : bits;
  if (unit - cidr.prefix > 30 || 2 ** (unit - cidr.prefix) > NESTED_ENUMERATION_LIMIT) return undefined;
  const step = 1n << BigInt(bits - unit);
  const count = 1n << BigInt(unit - cidr.prefix);
  return Array.from({ length: Number(count) }, (_, i) =>
    keys.lease(pool, formatAddress({ family: cidr.family, value: cidr.base + BigInt(i) * step })),
  );
}
