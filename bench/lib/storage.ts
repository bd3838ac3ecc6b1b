import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  type BatchGetItemCommandOutput,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/** A plain item (before marshalling), as the codec writes it. */
export type PlainItem = Record<string, unknown>;

/** Runs `work` over `items` with at most `concurrency` in flight. */
export async function forEachLimit<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      await work(items[index]!, index);
    }
  });
  await Promise.all(workers);
}

/** Writes (puts or deletes) with BatchWriteItem, 25 per request, `concurrency` requests in flight, resending unprocessed items. */
export async function batchWrite(
  client: DynamoDBClient,
  table: string,
  requests: readonly WriteRequest[],
  concurrency = 8,
): Promise<void> {
  const chunks: WriteRequest[][] = [];
  for (let i = 0; i < requests.length; i += 25) chunks.push(requests.slice(i, i + 25));
  await forEachLimit(chunks, concurrency, async (chunk) => {
    let pending: WriteRequest[] = chunk;
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      if (attempt > 20)
        throw new Error(`BatchWriteItem on ${table}: ${pending.length} items still unprocessed after 20 attempts`);
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      pending = out.UnprocessedItems?.[table] ?? [];
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** Math.min(attempt, 5)));
    }
  });
}

export const putRequest = (item: PlainItem): WriteRequest => ({
  PutRequest: { Item: marshall(item, { removeUndefinedValues: true }) },
});
export const deleteRequest = (key: PlainItem): WriteRequest => ({ DeleteRequest: { Key: marshall(key) } });

/** Every item of a table matching an optional filter on `entity` (a full Scan; for checks, not for measurements). */
export async function scanEntities(client: DynamoDBClient, table: string, entity?: string): Promise<PlainItem[]> {
  const out: PlainItem[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: table,
        ...(entity
          ? {
              FilterExpression: '#e = :e',
              ExpressionAttributeNames: { '#e': 'entity' },
              ExpressionAttributeValues: { ':e': { S: entity } },
            }
          : {}),
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) out.push(unmarshall(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** The items found at these keys (BatchGetItem, 100 keys per request, unprocessed keys sent again). */
export async function batchGet(
  client: DynamoDBClient,
  table: string,
  keys: readonly PlainItem[],
): Promise<PlainItem[]> {
  const out: PlainItem[] = [];
  for (let i = 0; i < keys.length; i += 100) {
    let pending: Record<string, AttributeValue>[] | undefined = keys.slice(i, i + 100).map((k) => marshall(k));
    for (let attempt = 0; pending && pending.length > 0; attempt += 1) {
      if (attempt > 20)
        throw new Error(`BatchGetItem on ${table}: ${pending.length} keys still unprocessed after 20 attempts`);
      const page: BatchGetItemCommandOutput = await client.send(
        new BatchGetItemCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }),
      );
      for (const item of page.Responses?.[table] ?? []) out.push(unmarshall(item));
      pending = page.UnprocessedKeys?.[table]?.Keys;
      if (pending && pending.length > 0) await sleep(20 * 2 ** Math.min(attempt, 5));
    }
  }
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
