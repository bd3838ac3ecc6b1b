import type { Item } from './codec.ts';
import { SCHEMA_VERSION, type Entity, type Key } from './keys.ts';
import { queryAll, type Table } from './table.ts';

/**
 * Tombstones: one item per report that something is gone (an owner, a pool), in a partition of its own, sorted by the
 * ISO time of the report (`<ISO time>#...`), so the reconciler reads only the last minutes of them. DynamoDB TTL
 * removes them after TOMBSTONE_RETENTION_MS, far longer than the reconciler looks back (OWNER_RECHECK_MS,
 * POOL_RECHECK_MS).
 */
export const TOMBSTONE_RETENTION_MS = 24 * 3_600_000;

/** A tombstone reported at `nowMs`: its key (from the report's ISO time), `entity`, what it names (`fields`), and its TTL. */
export function tombstoneItem(
  entity: Entity,
  nowMs: number,
  keyAt: (isoTime: string) => Key,
  fields: Readonly<Record<string, string>>,
): Item {
  const at = new Date(nowMs).toISOString();
  return {
    ...keyAt(at),
    entity,
    schema: SCHEMA_VERSION,
    ...fields,
    at,
    ttl: Math.ceil((nowMs + TOMBSTONE_RETENTION_MS) / 1000),
  };
}

/**
 * The `field` of every `entity` tombstone (or of any of the entities) of `partition` reported at or after `sinceMs` (consistent read), each value
 * once, oldest report first. `<ISO time>#...` sorts after the bare ISO time of the same millisecond, so the query
 * starts exactly there and leaves out older tombstones whose TTL deletion is still pending.
 */
export async function tombstonesSince(
  table: Table,
  of: {
    readonly partition: string;
    readonly entity: Entity | readonly Entity[];
    readonly field: string;
    readonly sinceMs: number;
  },
): Promise<string[]> {
  const { partition, entity, field, sinceMs } = of;
  const items = await queryAll(table, {
    partition,
    sort: { after: new Date(sinceMs).toISOString() },
    consistent: true,
  });
  const entities: readonly Entity[] = typeof entity === 'string' ? [entity] : entity;
  return [...new Set(items.filter((i) => entities.includes(i.entity as Entity)).map((i) => i[field] as string))];
}
