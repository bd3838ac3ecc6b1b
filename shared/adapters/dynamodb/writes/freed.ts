import type { RangeSeals, UsedUpSeal } from '../../../core/used-up/ports.ts';
import type { Item } from '../codec.ts';
import { Entity, keys, SCHEMA_VERSION, shardOf } from '../keys.ts';
import { attributeIs } from '../conditions.ts';
import { TRANSACTION_LIMIT, type Table, type WriteOp } from '../table.ts';

/**
 * Shards of a range's freed counter. Every write that frees an address bumps one shard of its range in its own
 * transaction, and DynamoDB cancels a transaction that meets another in flight on one of its items: the transactions
 * in flight on one shard at once are about (the range's releases a second x a transaction's ~10 ms) / shards, so
 * many shards keep a busy range's releases from cancelling each other. 99: a range's shards and its seals item are
 * 100 keys, one BatchGetItem request. Shard numbers start at 0 and keep their keys, so a table whose writers used
 * fewer shards holds only items this layout reads. Figures: docs/decisions/0001-freed-counter-shards.md.
 */
export const FREED_SHARDS = 99;

/**
 * The bumps a write that frees addresses adds to its transaction: one `ADD n 1` per distinct range, on the shard
 * `by` (a claim uid) falls on, so a release of a batch of one range touches one item.
 *
 *   Update freed   (no condition)   ADD n 1     (each range of the freed addresses)
 */
export function freedBumps(pool: string, ranges: Iterable<string>, by: string): WriteOp[] {
  return [...new Set(ranges)].map((range) => ({
    kind: 'update' as const,
    key: keys.freed(pool, range, shardOf(by, FREED_SHARDS)),
    update: { add: { n: 1 }, set: { entity: Entity.Freed, schema: SCHEMA_VERSION } },
  }));
}

/**
 * A write that frees addresses, cut into transactions of at most TRANSACTION_LIMIT operations: each address's
 * operation goes with the bump of its range in the same transaction (every freeing does), so one transaction holds
 * its addresses' operations plus one bump per distinct range among them. A claim of 64 addresses in 64 ranges needs
 * 128 such operations besides its own: one transaction cannot hold them. `fixed`: the operations the first
 * transaction holds besides (the claim, its marker, an event), and each later one (a condition check). Entries are
 * placed in the order given; callers group them by range, so most ranges are bumped in one transaction only.
 * Returns one list of entries a transaction, the first one's first (empty when `entries` is).
 */
export function packFreeing<T>(
  entries: readonly T[],
  rangeOf: (entry: T) => string | undefined,
  fixed: { readonly first: number; readonly later: number },
): T[][] {
  const shares: T[][] = [[]];
  let ranges = new Set<string>();
  let room = TRANSACTION_LIMIT - fixed.first;
  for (const entry of entries) {
    const range = rangeOf(entry);
    const cost = (r: ReadonlySet<string>) => 1 + (range !== undefined && !r.has(range) ? 1 : 0);
    if (cost(ranges) > room && shares.at(-1)!.length > 0) {
      shares.push([]);
      ranges = new Set();
      room = TRANSACTION_LIMIT - fixed.later;
    }
    room -= cost(ranges);
    shares.at(-1)!.push(entry);
    if (range !== undefined) ranges.add(range);
  }
  return shares;
}

/** The attribute of the seals item holding a part's seal (as JSON: one string, the same on both engines). */
const SEAL_PREFIX = 'seal_';
const sealAttribute = (part: string): string => `${SEAL_PREFIX}${part}`;

/**
 * A used-up seal: one plain UpdateItem of the seals item (its own item, so the counters a release bumps stay small),
 * with no condition on the counters. Checking them here would add nothing a reader relies on: the seal records the
 * counters as read before the part's leases were read, and a reader trusts it only while the counters it reads with
 * it (sealHolds, one consistent bulk read) still equal them. So every address of the part was read held after that
 * counter read and before the seal was written, hence before the reader read it; an address freed after it was read
 * bumped a counter the seal names, and a reader still seeing the old value read that counter before the freeing, so
 * inside its own call. Each address was thus held at a moment of the reader's call: what a bulk read of the part
 * would have told it (confirmFree: an address free for the whole call is found). A stale seal overwriting a newer one
 * only makes readers read the part again. One item whatever the number of ranges overlapping the band (a transaction
 * checking 4 shards a range plus the seal held 24 ranges' counters at most: 100 items a transaction).
 *
 *   Update seals (the band's range)   (no condition)   SET seal_<part>
 */
export function sealWrite(pool: string, range: string, part: string, seal: UsedUpSeal): WriteOp {
  return {
    kind: 'update',
    key: keys.seals(pool, range),
    update: { set: { entity: Entity.Seals, schema: SCHEMA_VERSION, [sealAttribute(part)]: JSON.stringify(seal) } },
  };
}

/** Every shard key of each range and its seals item, for one bulk read (or the range's removal). */
export function freedKeys(pool: string, ranges: readonly string[]): ReturnType<typeof keys.freed>[] {
  return ranges.flatMap((range) => [
    ...Array.from({ length: FREED_SHARDS }, (_, shard) => keys.freed(pool, range, shard)),
    keys.seals(pool, range),
  ]);
}

/** The counters and seals of each range from the items read (absent shards read 0). */
export function rangeSealsOf(pool: string, ranges: readonly string[], items: readonly Item[]): Map<string, RangeSeals> {
  const byKey = new Map(items.map((i) => [i.PK as string, i]));
  return new Map(
    ranges.map((range) => {
      const shards = Array.from({ length: FREED_SHARDS }, (_, shard) => byKey.get(keys.freed(pool, range, shard).PK));
      return [
        range,
        {
          freed: shards.map((s) => (typeof s?.n === 'number' ? s.n : 0)),
          seals: sealsIn(byKey.get(keys.seals(pool, range).PK)),
        },
      ];
    }),
  );
}

/** The seals of each range from its seals item alone (`freed` empty: the counters were not read). */
export function sealsOnlyOf(pool: string, ranges: readonly string[], items: readonly Item[]): Map<string, RangeSeals> {
  const byKey = new Map(items.map((i) => [i.PK as string, i]));
  return new Map(ranges.map((range) => [range, { freed: [], seals: sealsIn(byKey.get(keys.seals(pool, range).PK)) }]));
}

/** The seals a seals item holds, by part. */
function sealsIn(item: Item | undefined): Record<string, UsedUpSeal> {
  const seals: Record<string, UsedUpSeal> = {};
  for (const [name, value] of Object.entries(item ?? {})) {
    if (name.startsWith(SEAL_PREFIX) && typeof value === 'string')
      seals[name.slice(SEAL_PREFIX.length)] = JSON.parse(value) as UsedUpSeal;
  }
  return seals;
}

/**
 * Deletes the freed counters and seals of ranges that are gone (a range finalized, a pool deleted): one bulk read of
 * their keys, then a delete of each item there (most shards of a range are never bumped). Not in the removal's
 * transaction, which FREED_SHARDS + 1 items a range would overflow. A counter is deleted only while it still reads as
 * read, so a bump that lands meanwhile (a range re-created under the name) is kept; a leftover seal names its range's
 * incarnation (shapeOf) and says nothing about a new one.
 */
export async function dropFreed(table: Table, pool: string, ranges: readonly string[]): Promise<void> {
  if (ranges.length === 0) return;
  const items = await table.batchGet(freedKeys(pool, ranges), ['PK', 'SK', 'n']);
  await Promise.all(
    items.map((i) =>
      table.write({
        kind: 'delete',
        key: { PK: i.PK as string, SK: i.SK as string },
        ...(typeof i.n === 'number' ? { condition: attributeIs('n', i.n) } : {}),
      }),
    ),
  );
}
