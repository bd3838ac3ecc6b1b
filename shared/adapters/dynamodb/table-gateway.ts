import {
  BatchGetItemCommand,
  GetItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  type QueryCommandInput,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { NotReadyError } from '../../core/errors.ts';
import type { Item } from './codec.ts';
import type { Condition } from './conditions.ts';
import type { Key } from './keys.ts';

const THROTTLES = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded', 'LimitExceededException']);
const TIMEOUTS = new Set(['TimeoutError', 'AbortError', 'RequestTimeout', 'RequestTimeoutException']);

/** Turns throttling and timeouts into the domain's retryable NotReadyError; anything else stays an internal error. */
export function translateError(error: unknown): unknown {
  const name = (error as { name?: string })?.name ?? '';
  if (THROTTLES.has(name)) return new NotReadyError('The address store is throttling requests; retry shortly.', { cause: error });
  if (TIMEOUTS.has(name) || (error as { code?: string })?.code === 'ETIMEDOUT') return new NotReadyError('The address store did not answer in time; retry shortly.', { cause: error });
  return error;
}

/** True when a transaction item was cancelled by its condition. */
export function isConditionFailure(reason: CancellationReason | undefined): boolean {
  return reason?.Code === 'ConditionalCheckFailed';
}

export const marshallOpts = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/** A condition as the parameters of a write. */
export function conditionParams(condition: Condition): { ConditionExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue> } {
  const values = Object.keys(condition.values).length ? marshall(condition.values, marshallOpts) : undefined;
  return {
    ConditionExpression: condition.expression,
    ExpressionAttributeNames: { ...condition.names },
    ...(values ? { ExpressionAttributeValues: values } : {}),
  };
}

/**
 * The few DynamoDB moves every store of the table makes (send, consistent reads, conditional transaction items,
 * transactions whose condition failures are answers), written once for DynamoStore, DynamoBitmapStore and
 * DynamoReconcileStore.
 */
export class TableGateway {
  constructor(readonly client: DynamoDBClient, readonly table: string) {}

  /** Sends a command, translating throttles and timeouts. */
  async send<T>(command: object): Promise<T> {
    try {
      // Each command's own input type was checked where it was built; send() itself is generic over them.
      return (await this.client.send(command as never)) as T;
    } catch (error) {
      throw translateError(error);
    }
  }

  /** A conditional Put for a transaction; `returnOld` asks for the item that failed the condition. */
  put(item: Item, condition: Condition, returnOld = true): TransactWriteItem {
    return { Put: { TableName: this.table, Item: marshall(item, marshallOpts), ...conditionParams(condition), ...(returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}) } };
  }

  /** A conditional Delete for a transaction. */
  delete(key: Key, condition: Condition): TransactWriteItem {
    return { Delete: { TableName: this.table, Key: marshall(key), ...conditionParams(condition) } };
  }

  /** A strongly consistent GetItem. */
  async getItem(key: Key): Promise<Item | undefined> {
    const out = await this.send<{ Item?: Record<string, AttributeValue> }>(new GetItemCommand({ TableName: this.table, Key: marshall(key), ConsistentRead: true }));
    return out.Item ? unmarshall(out.Item) : undefined;
  }

  /**
   * Runs a transaction; returns the cancellation reasons when conditions failed it or it conflicted (answers the
   * caller acts on), throws NotReadyError when it was throttled and the error itself otherwise.
   */
  async transact(items: TransactWriteItem[]): Promise<CancellationReason[] | undefined> {
    try {
      await this.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
      return undefined;
    } catch (error) {
      const reasons = (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons;
      if ((error as Error).name === 'TransactionCanceledException' && reasons) {
        if (reasons.every((r) => !r.Code || r.Code === 'None' || r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict')) return reasons;
        if (reasons.some((r) => r.Code === 'ThrottlingError' || r.Code === 'ProvisionedThroughputExceeded')) {
          throw new NotReadyError('The address store is throttling requests; retry shortly.', { cause: error });
        }
      }
      throw translateError(error);
    }
  }

  /** Every page of a query. */
  async queryAll(input: QueryCommandInput): Promise<Item[]> {
    const items: Item[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out = await this.send<{ Items?: Record<string, AttributeValue>[]; LastEvaluatedKey?: Record<string, AttributeValue> }>(new QueryCommand({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) }));
      for (const item of out.Items ?? []) items.push(unmarshall(item));
      start = out.LastEvaluatedKey;
    } while (start);
    return items;
  }

  /** Strongly consistent BatchGetItem in chunks of 100, retrying unprocessed keys with backoff. */
  async batchGet(keyList: readonly Key[]): Promise<Item[]> {
    const unique = [...new Map(keyList.map((k) => [`${k.PK}\u0000${k.SK}`, k])).values()];
    const items: Item[] = [];
    for (let i = 0; i < unique.length; i += 100) {
      let pending: Record<string, AttributeValue>[] = unique.slice(i, i + 100).map((k) => marshall(k));
      for (let attempt = 0; pending.length > 0; attempt += 1) {
        if (attempt >= 8) throw new NotReadyError('The address store left keys unprocessed; retry shortly.');
        const out = await this.send<{ Responses?: Record<string, Record<string, AttributeValue>[]>; UnprocessedKeys?: Record<string, { Keys?: Record<string, AttributeValue>[] }> }>(
          new BatchGetItemCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const raw of out.Responses?.[this.table] ?? []) items.push(unmarshall(raw));
        pending = out.UnprocessedKeys?.[this.table]?.Keys ?? [];
        if (pending.length) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      }
    }
    return items;
  }
}
