import { itemIsAbsent } from './conditions.ts';
import { Entity, keys, SCHEMA_VERSION } from './keys.ts';
import type { Table } from './table.ts';

/**
 * Settings fixed for a table's life. LEASE_INDEX_SHARDS spreads the listing index keys (ADDR#<pool>#<family>#<s>,
 * CLAIMS#<pool>#<s>) over that many shards: items written under one count are not where listings under another look,
 * so a function started with a different count would silently miss them (and write where the others do not look).
 */
export interface TableSettings {
  readonly leaseIndexShards: number;
}

/** The configured settings differ from the ones the table was first used with: the function must not serve. */
export class TableSettingsMismatchError extends Error {
  override readonly name = 'TableSettingsMismatchError';
  constructor(
    readonly tableName: string,
    readonly configured: TableSettings,
    readonly recorded: TableSettings & { readonly recordedAt?: string },
  ) {
    super(
      `LEASE_INDEX_SHARDS is ${configured.leaseIndexShards}, but table ${tableName} was first used with ${recorded.leaseIndexShards}` +
        `${recorded.recordedAt ? ` (${recorded.recordedAt})` : ''}: the shard count is fixed for a table's life, so this function refuses to serve. ` +
        `Set leaseIndexShards back to ${recorded.leaseIndexShards} in serverless.yml's params for this stage and deploy again (docs/deploy.md).`,
    );
  }
}

/**
 * Records the settings on the table's first use, or reads the ones recorded then, in one conditional write:
 *
 *   put TABLE/SETTINGS if the item is absent  -> recorded now: these settings are the table's
 *   ... else the item that failed the check    -> the table's settings; they must equal these
 *
 * Two functions racing on a new table with different counts meet on the one item: the first write wins and the other
 * is refused. A table used before this record existed gets the count of the first function that starts after it.
 *
 * @throws TableSettingsMismatchError when the table's recorded settings differ from `configured`.
 */
export async function assertTableSettings(table: Table, configured: TableSettings, nowIso: string): Promise<void> {
  const result = await table.write({
    kind: 'put',
    item: {
      ...keys.tableSettings(),
      entity: Entity.TableSettings,
      schema: SCHEMA_VERSION,
      leaseIndexShards: configured.leaseIndexShards,
      recordedAt: nowIso,
    },
    condition: itemIsAbsent(),
    returnOld: true,
  });
  if (result.ok) return;
  const recorded = result.old ?? (await table.get(keys.tableSettings()));
  const shards = Number(recorded?.leaseIndexShards);
  if (shards === configured.leaseIndexShards) return;
  const recordedAt = typeof recorded?.recordedAt === 'string' ? recorded.recordedAt : undefined;
  throw new TableSettingsMismatchError(table.name, configured, {
    leaseIndexShards: shards,
    ...(recordedAt ? { recordedAt } : {}),
  });
}
