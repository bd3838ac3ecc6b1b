// Over 300 lines: the one file that builds DynamoDB requests and translates DynamoDB's errors, the Table port's engine.
import {
  BatchGetItemCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { NotReadyError } from '../../core/errors.ts';
import type { Item } from './codec.ts';
import { render, type Condition } from './conditions.ts';
import type { Key } from './keys.ts';
import {
  BATCH_GET_LIMIT,
  KEY_ATTRIBUTES,
  type Query,
  type QueryPage,
  type Table,
  type TxVerdict,
  type Update,
  type WriteOp,
  type WriteResult,
} from './table.ts';

const THROTTLES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'LimitExceededException',
]);
const TIMEOUTS = new Set(['TimeoutError', 'AbortError', 'RequestTimeout', 'RequestTimeoutException']);

/** Turns throttling, timeouts and a single write's transaction conflict into the domain's retryable NotReadyError; anything else stays an internal error. */
export function translateError(error: unknown): unknown {
  const name = (error as { name?: string })?.name ?? '';
  if (THROTTLES.has(name))
    return new NotReadyError('The address store is throttling requests; retry shortly.', { cause: error });
  if (TIMEOUTS.has(name) || (error as { code?: string })?.code === 'ETIMEDOUT')
    return new NotReadyError('The address store did not answer in time; retry shortly.', { cause: error });
  // A single write on an item a transaction is writing (dropReleased, a checkpoint save): it did nothing, and may be
  // tried again (a transaction's own conflicts come back as its cancellation reasons instead).
  if (name === 'TransactionConflictException')
    return new NotReadyError('Another transaction was writing the same item; retry shortly.', { cause: error });
  return error;
}

const marshallOpts = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/** Placeholders and the expression parts of one request, merged from its condition, key condition and update. */
class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};

  condition(condition: Condition, prefix: string): string {
    const rendered = render(condition, prefix);
    Object.assign(this.names, rendered.names);
    Object.assign(this.values, rendered.values);
    return rendered.expression;
  }

  name(attribute: string): string {
    const placeholder = `#a${Object.keys(this.names).length}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:x${Object.keys(this.values).length}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /** The placeholders as request parameters (omitted when empty: DynamoDB refuses empty maps). */
  params(): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, AttributeValue>;
  } {
    return {
      ...(Object.keys(this.names).length ? { ExpressionAttributeNames: this.names } : {}),
      ...(Object.keys(this.values).length ? { ExpressionAttributeValues: marshall(this.values, marshallOpts) } : {}),
    };
  }
}

function updateExpression(update: Update, expr: Expression): string {
  const set = [
    ...Object.entries(update.set ?? {}).map(([a, v]) => `${expr.name(a)} = ${expr.value(v)}`),
    ...Object.entries(update.setIfAbsent ?? {}).map(([a, v]) => {
      const name = expr.name(a);
      return `${name} = if_not_exists(${name}, ${expr.value(v)})`;
    }),
  ];
  const add = Object.entries(update.add ?? {}).map(([a, v]) => `${expr.name(a)} ${expr.value(v)}`);
  const remove = (update.remove ?? []).map((a) => expr.name(a));
  return [
    set.length ? `SET ${set.join(', ')}` : '',
    add.length ? `ADD ${add.join(', ')}` : '',
    remove.length ? `REMOVE ${remove.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** The condition and placeholders of a write, as DynamoDB takes them alone or in a transaction. */
function conditionParts(op: WriteOp, expr: Expression): { ConditionExpression?: string } {
  return op.condition ? { ConditionExpression: expr.condition(op.condition, 'c') } : {};
}

function putInput(table: string, op: Extract<WriteOp, { kind: 'put' }>) {
  const expr = new Expression();
  const condition = conditionParts(op, expr);
  return { TableName: table, Item: marshall(op.item, marshallOpts), ...condition, ...expr.params() };
}

function keyedInput(table: string, op: Extract<WriteOp, { kind: 'delete' | 'check' }>) {
  const expr = new Expression();
  const condition = conditionParts(op, expr);
  return { TableName: table, Key: marshall(op.key), ...condition, ...expr.params() };
}

function updateInput(table: string, op: Extract<WriteOp, { kind: 'update' }>) {
  const expr = new Expression();
  const condition = conditionParts(op, expr);
  const UpdateExpression = updateExpression(op.update, expr);
  return { TableName: table, Key: marshall(op.key), UpdateExpression, ...condition, ...expr.params() };
}

function toTransactItem(table: string, op: WriteOp): TransactWriteItem {
  switch (op.kind) {
    case 'put':
      return {
        Put: {
          ...putInput(table, op),
          ...(op.returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
        },
      };
    case 'delete':
      return { Delete: keyedInput(table, op) };
    case 'update':
      return { Update: updateInput(table, op) };
    case 'check': {
      const input = keyedInput(table, op);
      return { ConditionCheck: { ...input, ConditionExpression: input.ConditionExpression ?? '' } };
    }
  }
}

function verdictOf(reason: CancellationReason): TxVerdict {
  if (reason.Code === 'ConditionalCheckFailed')
    return { code: 'ConditionalCheckFailed', ...(reason.Item ? { old: unmarshall(reason.Item) } : {}) };
  if (reason.Code === 'TransactionConflict') return { code: 'TransactionConflict' };
  return { code: 'None' };
}

/** The Table engine on DynamoDB, through the AWS SDK: the one place that builds DynamoDB requests. */
export class SdkTable implements Table {
  constructor(
    readonly client: DynamoDBClient,
    readonly name: string,
  ) {}

  async get(key: Key): Promise<Item | undefined> {
    const out = await this.send(() =>
      this.client.send(new GetItemCommand({ TableName: this.name, Key: marshall(key), ConsistentRead: true })),
    );
    return out.Item ? unmarshall(out.Item) : undefined;
  }

  async batchGet(keyList: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    const unique = [...new Map(keyList.map((k) => [`${k.PK}\u0000${k.SK}`, k])).values()];
    const projection = attributes
      ? (() => {
          const expr = new Expression();
          return {
            ProjectionExpression: attributes.map((a) => expr.name(a)).join(', '),
            ExpressionAttributeNames: expr.names,
          };
        })()
      : {};
    // DynamoDB takes 100 keys a request: the requests go out together (a "used up" check reads up to 16 at once).
    const chunks = Array.from({ length: Math.ceil(unique.length / BATCH_GET_LIMIT) }, (_, c) =>
      unique.slice(BATCH_GET_LIMIT * c, BATCH_GET_LIMIT * (c + 1)),
    );
    const items: Item[] = [];
    await Promise.all(
      chunks.map(async (chunk) => {
        let pending: Record<string, AttributeValue>[] = chunk.map((k) => marshall(k));
        for (let attempt = 0; pending.length > 0; attempt += 1) {
          if (attempt >= 8) throw new NotReadyError('The address store left keys unprocessed; retry shortly.');
          const out = await this.send(() =>
            this.client.send(
              new BatchGetItemCommand({
                RequestItems: { [this.name]: { Keys: pending, ConsistentRead: true, ...projection } },
              }),
            ),
          );
          for (const raw of out.Responses?.[this.name] ?? []) items.push(unmarshall(raw));
          pending = out.UnprocessedKeys?.[this.name]?.Keys ?? [];
          // Unprocessed keys are DynamoDB's way of throttling a batch: back off before asking again.
          if (pending.length) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
        }
      }),
    );
    return items;
  }

  async write(op: WriteOp): Promise<WriteResult> {
    try {
      switch (op.kind) {
        case 'put':
          await this.client.send(
            new PutItemCommand({
              ...putInput(this.name, op),
              ...(op.returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
            }),
          );
          return { ok: true };
        case 'delete':
          await this.client.send(new DeleteItemCommand(keyedInput(this.name, op)));
          return { ok: true };
        case 'update': {
          const out = await this.client.send(
            new UpdateItemCommand({ ...updateInput(this.name, op), ReturnValues: 'ALL_NEW' }),
          );
          return { ok: true, ...(out.Attributes ? { item: unmarshall(out.Attributes) } : {}) };
        }
        case 'check':
          throw new Error('A condition check is only valid inside a transaction.');
      }
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') {
        const old = (error as { Item?: Record<string, AttributeValue> }).Item;
        return { ok: false, ...(old ? { old: unmarshall(old) } : {}) };
      }
      throw translateError(error);
    }
  }

  async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    try {
      await this.client.send(
        new TransactWriteItemsCommand({ TransactItems: ops.map((op) => toTransactItem(this.name, op)) }),
      );
      return undefined;
    } catch (error) {
      const reasons = (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons;
      if ((error as Error).name === 'TransactionCanceledException' && reasons) {
        if (
          reasons.every(
            (r) =>
              !r.Code || r.Code === 'None' || r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict',
          )
        )
          return reasons.map(verdictOf);
        if (reasons.some((r) => r.Code === 'ThrottlingError' || r.Code === 'ProvisionedThroughputExceeded')) {
          throw new NotReadyError('The address store is throttling requests; retry shortly.', { cause: error });
        }
      }
      // DynamoDB Local gives up on a lock held by a concurrent transaction with an InternalServerError saying so
      // ("...waiting for a lock. This request will succeed in actual DynamoDB API"): DynamoDB itself cancels such a
      // transaction with TransactionConflict reasons, which is what callers are told, so they retry as they would there.
      if ((error as Error).name === 'InternalServerError' && /waiting for a lock/.test((error as Error).message ?? ''))
        return ops.map(() => ({ code: 'TransactionConflict' as const }));
      throw translateError(error);
    }
  }

  async query(query: Query): Promise<QueryPage> {
    const [pkName, skName] = KEY_ATTRIBUTES[query.index ?? 'table'];
    const expr = new Expression();
    let keyCondition = `${expr.name(pkName)} = ${expr.value(query.partition)}`;
    const sort = query.sort;
    if (sort && 'between' in sort)
      keyCondition += ` AND ${expr.name(skName)} BETWEEN ${expr.value(sort.between[0])} AND ${expr.value(sort.between[1])}`;
    else if (sort && 'after' in sort) keyCondition += ` AND ${expr.name(skName)} > ${expr.value(sort.after)}`;
    else if (sort && 'before' in sort) keyCondition += ` AND ${expr.name(skName)} < ${expr.value(sort.before)}`;
    const filter = query.filter ? { FilterExpression: expr.condition(query.filter, 'f') } : {};
    const projection =
      query.attributes && !query.countOnly
        ? { ProjectionExpression: query.attributes.map((a) => expr.name(a)).join(', ') }
        : {};
    const out = await this.send(() =>
      this.client.send(
        new QueryCommand({
          TableName: this.name,
          ...(query.index ? { IndexName: query.index } : {}),
          KeyConditionExpression: keyCondition,
          ...filter,
          ...projection,
          ...expr.params(),
          ...(query.limit !== undefined ? { Limit: query.limit } : {}),
          ...(query.start ? { ExclusiveStartKey: marshall(query.start) } : {}),
          ...(query.descending ? { ScanIndexForward: false } : {}),
          ...(query.consistent ? { ConsistentRead: true } : {}),
          ...(query.countOnly ? { Select: 'COUNT' as const } : {}),
        }),
      ),
    );
    const items = (out.Items ?? []).map((raw) => unmarshall(raw));
    return {
      items,
      count: out.Count ?? items.length,
      scanned: out.ScannedCount ?? items.length,
      ...(out.LastEvaluatedKey ? { lastKey: unmarshall(out.LastEvaluatedKey) } : {}),
    };
  }

  async describe(): Promise<string> {
    const out = await this.send(() => this.client.send(new DescribeTableCommand({ TableName: this.name })));
    return out.Table?.TableStatus ?? 'UNKNOWN';
  }

  private async send<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw translateError(error);
    }
  }
}
