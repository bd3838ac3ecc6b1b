import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';
import tableJson from '../../infra/table.json' with { type: 'json' };

/**
 * What IAM decides an AWS call on: one line per distinct call a function made, written only when the tests ask for it
 * (AWS_IPAM_CALL_LOG names the file: Config.callLog). tests/unit/template.test.ts evaluates each line against the
 * function's role in the packaged template (scripts/record-aws-calls.ts writes the committed fixture it reads).
 *
 * A DynamoDB transaction is authorized item by item as the item's own action (TransactWriteItems has no action of its
 * own in a policy), so each item is one line; a batch read is one line per table with all of its partition keys,
 * as `dynamodb:LeadingKeys` sees them.
 */
export interface AwsCall {
  /** The function's name (AWS_LAMBDA_FUNCTION_NAME), e.g. ipam-local-mirror. */
  readonly function: string;
  /** IAM's action, e.g. dynamodb:PutItem. */
  readonly action: string;
  /** The SDK command that made it, when another than the action's own (TransactWriteItems). */
  readonly via?: string;
  /** DynamoDB: the table, and the index of a Query. */
  readonly table?: string;
  readonly index?: string;
  /** DynamoDB: the partition key values the request touches (what `dynamodb:LeadingKeys` reads), sorted. */
  readonly leadingKeys?: readonly string[];
  /** EventBridge: the bus of each entry. */
  readonly eventBus?: string;
  /** Route 53: the hosted zone id. */
  readonly hostedZoneId?: string;
}

export interface CallLog {
  readonly file: string;
  readonly functionName: string;
}

type Attr = { S?: string; N?: string; B?: Uint8Array };
type Item = Record<string, Attr>;
interface TransactItem {
  Put?: { TableName?: string; Item?: Item };
  Update?: { TableName?: string; Key?: Item };
  Delete?: { TableName?: string; Key?: Item };
  ConditionCheck?: { TableName?: string; Key?: Item };
  Get?: { TableName?: string; Key?: Item };
}
type Input = Record<string, unknown> & {
  TableName?: string;
  IndexName?: string;
  Key?: Item;
  Item?: Item;
  KeyConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
  RequestItems?: Record<string, { Keys?: Item[] } | { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]>;
  TransactItems?: TransactItem[];
  Entries?: { EventBusName?: string }[];
};

const partitionKeyOf = (index: string | undefined): string =>
  (index === undefined
    ? tableJson.KeySchema
    : tableJson.GlobalSecondaryIndexes.find((i) => i.IndexName === index)?.KeySchema
  )?.find((k) => k.KeyType === 'HASH')?.AttributeName ?? 'PK';
const text = (value: Attr | undefined): string | undefined => value?.S ?? value?.N;
const sorted = (values: (string | undefined)[]): string[] =>
  [...new Set(values.filter((v): v is string => v !== undefined))].sort();

/** The partition key a Query's key condition fixes (`#pk = :pk` or `PK = :pk`). */
function queriedKey(input: Input): string | undefined {
  const attribute = partitionKeyOf(input.IndexName);
  for (const [, name, value] of (input.KeyConditionExpression ?? '').matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
    if ((input.ExpressionAttributeNames?.[name!] ?? name) === attribute)
      return text(input.ExpressionAttributeValues?.[value!]);
  }
  return undefined;
}

/** The lines IAM would decide for one SDK command (`PutItemCommand` and its input). */
export function awsCallsOf(functionName: string, service: string, command: string, input: Input): AwsCall[] {
  const operation = command.replace(/Command$/, '');
  const base = { function: functionName };
  if (service === 'events')
    return [
      {
        ...base,
        action: `events:${operation}`,
        eventBus: [...new Set((input.Entries ?? []).map((e) => e.EventBusName ?? 'default'))].sort().join(','),
      },
    ];
  if (service !== 'dynamodb') return [{ ...base, action: `${service}:${operation}` }];
  const pk = partitionKeyOf(undefined);
  switch (operation) {
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (input.TransactItems ?? []).map((item) => {
        const [kind, body] = Object.entries(item)[0] as [
          keyof TransactItem,
          { TableName?: string; Key?: Item; Item?: Item },
        ];
        const action = {
          Put: 'PutItem',
          Update: 'UpdateItem',
          Delete: 'DeleteItem',
          ConditionCheck: 'ConditionCheckItem',
          Get: 'GetItem',
        }[kind];
        return {
          ...base,
          action: `dynamodb:${action}`,
          via: operation,
          table: body.TableName ?? '',
          leadingKeys: sorted([text((body.Key ?? body.Item)?.[pk])]),
        };
      });
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.entries(input.RequestItems ?? {}).map(([table, request]) => {
        const keys = Array.isArray(request)
          ? request.map((r) => text((r.PutRequest?.Item ?? r.DeleteRequest?.Key)?.[pk]))
          : (request.Keys ?? []).map((k) => text(k[pk]));
        return { ...base, action: `dynamodb:${operation}`, table, leadingKeys: sorted(keys) };
      });
    case 'Query':
      return [
        {
          ...base,
          action: 'dynamodb:Query',
          table: input.TableName ?? '',
          ...(input.IndexName ? { index: input.IndexName } : {}),
          leadingKeys: sorted([queriedKey(input)]),
        },
      ];
    default: {
      const key = text((input.Key ?? input.Item)?.[pk]);
      return [
        {
          ...base,
          action: `dynamodb:${operation}`,
          table: input.TableName ?? '',
          ...(key !== undefined ? { leadingKeys: [key] } : {}),
        },
      ];
    }
  }
}

interface MiddlewareClient {
  middlewareStack: { add(middleware: unknown, options: { step: 'initialize'; name: string }): void };
}

/**
 * Whose role a call runs under when one process plays several functions (the int tier builds the API, the stream
 * function's projections and the reconciler in process): the function a caller's work is scoped to, else the log's.
 */
const functionScope = new AsyncLocalStorage<string>();

/** Runs `work` as the function `functionName` for the recording (a deployed function never enters a scope). */
export function asFunction<T>(functionName: string, work: () => T): T {
  return functionScope.run(functionName, work);
}

/** Appends each distinct call of this client to the log's file (JSON lines), before it is sent: IAM decides first. */
export function recordAwsCalls(client: MiddlewareClient, service: string, log: CallLog | undefined): void {
  if (log === undefined) return;
  const seen = new Set<string>();
  client.middlewareStack.add(
    (next: (args: { input: Input }) => Promise<unknown>, context: { commandName?: string }) =>
      async (args: { input: Input }) => {
        for (const call of awsCallsOf(
          functionScope.getStore() ?? log.functionName,
          service,
          context.commandName ?? 'Unknown',
          args.input,
        )) {
          const line = JSON.stringify(call);
          if (seen.has(line)) continue;
          seen.add(line);
          appendFileSync(log.file, `${line}\n`);
        }
        return next(args);
      },
    { step: 'initialize', name: 'ipamAwsCallLog' },
  );
}
