import type { RangeSeals, UsedUpSeal } from '../../../core/occupancy/ports.ts';
import type { Item } from '../codec.ts';
import { attributeIs, either, type Condition } from '../conditions.ts';
import { Entity, keys, SCHEMA_VERSION, shardOf } from '../keys.ts';
import type { WriteOp } from '../table.ts';

/**
 * Shards of a range's freed counter. Every write that frees an address bumps one shard of its range in its own
 * transaction, so releases of one range spread over this many items (DynamoDB cancels a transaction that meets
 * another on the same item); a used-up check reads all of them (one read unit each, consistent). Four: a range takes
 * about four times the concurrent releases one item would, for four read units per check.
 */
export const FREED_SHARDS = 4;

/**
 * The bumps a write that frees addresses adds to its transaction: one `ADD n 1` per distinct range, on the shard
 * `by` (a claim uid) falls on, so a release of a batch of one range touches one item.
 *
 *   Update freed   (no condition)   ADD n 1     (each range of the freed addresses)
 */
export function freedBumps(pool: string, ranges: Iterable<string>, by: string): WriteOp[] {
  return [...new Set(ranges)].map((range) => ({ kind: 'update' as const, key: keys.freed(pool, range, shardOf(by, FREED_SHARDS)), update: { add: { n: 1 }, set: { entity: Entity.Freed, schema: SCHEMA_VERSION } } }));
}

/** The counter still reads `n` (an item never bumped reads 0). */
function counterIs(n: number): Condition {
  return n === 0 ? either({ op: 'notExists', attribute: 'n' }, attributeIs('n', 0)) : attributeIs('n', n);
}

/** The attribute of the seals item holding a part's seal (as JSON: one string, the same on both engines). */
const SEAL_PREFIX = 'seal_';
const sealAttribute = (part: string): string => `${SEAL_PREFIX}${part}`;

/**
 * A used-up seal: one TransactWriteItems, committed only while every shard of every counter it names (its range's,
 * and those of ranges overlapping it) is still as read before the part's leases were read (so nothing that could lie
 * in it was freed since). The seals live on an item of their own, so the counters a release bumps stay small:
 *
 *   Check freed (each shard of each counter)   n = seal.freed[range][shard]
 *   Update seals (the band's range)            SET seal_<part>
 */
export function sealWrite(pool: string, range: string, part: string, seal: UsedUpSeal): WriteOp[] {
  const ops: WriteOp[] = Object.entries(seal.freed).flatMap(([counter, shards]) => shards.map((n, shard): WriteOp => ({ kind: 'check', key: keys.freed(pool, counter, shard), condition: counterIs(n) })));
  ops.push({ kind: 'update', key: keys.seals(pool, range), update: { set: { entity: Entity.Seals, schema: SCHEMA_VERSION, [sealAttribute(part)]: JSON.stringify(seal) } } });
  return ops;
}

/** Every shard key of each range and its seals item, for one bulk read (or the range's removal). */
export function freedKeys(pool: string, ranges: readonly string[]): ReturnType<typeof keys.freed>[] {
  return ranges.flatMap((range) => [...Array.from({ length: FREED_SHARDS }, (_, shard) => keys.freed(pool, range, shard)), keys.seals(pool, range)]);
}

/** The counters and seals of each range from the items read (absent shards read 0). */
export function rangeSealsOf(pool: string, ranges: readonly string[], items: readonly Item[]): Map<string, RangeSeals> {
  const byKey = new Map(items.map((i) => [i.PK as string, i]));
  return new Map(
    ranges.map((range) => {
      const shards = Array.from({ length: FREED_SHARDS }, (_, shard) => byKey.get(keys.freed(pool, range, shard).PK));
      const sealsItem = byKey.get(keys.seals(pool, range).PK) ?? {};
      const seals: Record<string, UsedUpSeal> = {};
      for (const [name, value] of Object.entries(sealsItem)) {
        if (name.startsWith(SEAL_PREFIX) && typeof value === 'string') seals[name.slice(SEAL_PREFIX.length)] = JSON.parse(value) as UsedUpSeal;
      }
      return [range, { freed: shards.map((s) => (typeof s?.n === 'number' ? s.n : 0)), seals }];
    }),
  );
}
