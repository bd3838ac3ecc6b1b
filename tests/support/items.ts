import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import type { Table } from '../../shared/adapters/dynamodb/table.ts';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { FollowedTable } from './stream-follower.ts';
import { StreamedMemoryTable } from './lease-stream.ts';

/** Every item of a test's table, read consistently: a Scan on DynamoDB Local, the engine's own copy in memory. */
export async function allItems(table: Table): Promise<Item[]> {
  if (table instanceof FollowedTable || table instanceof StreamedMemoryTable) return allItems(table.inner);
  // A wrapper of an engine (the memory engine with a stream): its items are the engine's.
  if ('inner' in table && typeof table.inner === 'object' && table.inner !== null)
    return allItems(table.inner as Table);
  if (table instanceof MemoryTable) return table.items();
  if (!(table instanceof SdkTable)) throw new Error('allItems: unknown table engine');
  const items: Item[] = [];
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const out = await table.client.send(
      new ScanCommand({ TableName: table.name, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    for (const raw of out.Items ?? []) items.push(unmarshall(raw));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Every item of a test's table as sorted JSON lines: equal snapshots show a refused request changed nothing. */
export async function tableSnapshot(table: Table): Promise<string[]> {
  return (await allItems(table)).map((item) => JSON.stringify(item)).sort();
}
