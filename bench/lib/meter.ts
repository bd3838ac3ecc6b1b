import type {
  AttributeValue,
  BatchGetItemCommandInput,
  BatchGetItemCommandOutput,
  BatchWriteItemCommandInput,
  BatchWriteItemCommandOutput,
  CancellationReason,
  DeleteItemCommandInput,
  GetItemCommandInput,
  GetItemCommandOutput,
  PutItemCommandInput,
  QueryCommandInput,
  QueryCommandOutput,
  ScanCommandInput,
  TransactWriteItemsCommandInput,
  UpdateItemCommandInput,
  UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { itemSize, readUnits, valueSize, writeUnits, type WireItem } from '../../aws-emulation/item-size.ts';
import type { LedgerEntry, SizeLedger } from './ledger.ts';
import type { TableSchema } from './schema.ts';

/** What a run of requests cost, counted per attempt as DynamoDB would bill it. */
export interface Usage {
  /** Attempts sent, SDK retries and attempts refused by the per-key limiter included. */
  requests: number;
  /** Attempts the per-key limiter refused (DynamoDB's throttling, modelled). */
  throttled: number;
  /** Conditional writes (or transactions) refused by their condition: billed all the same. */
  failedConditions: number;
  /** Write units of the table (transactional writes doubled). */
  writeUnits: number;
  /** Write units of the global secondary indexes the writes changed. */
  indexWriteUnits: number;
  readUnits: number;
  /** Items read: returned by a get, evaluated (ScannedCount) by a query or scan. */
  itemsRead: number;
  /** Attempts per operation name (PutItem, TransactWriteItems, ...). */
  operations: Record<string, number>;
}

export function emptyUsage(): Usage {
  return {
    requests: 0,
    throttled: 0,
    failedConditions: 0,
    writeUnits: 0,
    indexWriteUnits: 0,
    readUnits: 0,
    itemsRead: 0,
    operations: {},
  };
}

/** b - a, for measuring a window. */
export function usageBetween(a: Usage, b: Usage): Usage {
  const operations: Record<string, number> = {};
  for (const [op, n] of Object.entries(b.operations)) {
    const d = n - (a.operations[op] ?? 0);
    if (d) operations[op] = d;
  }
  return {
    requests: b.requests - a.requests,
    throttled: b.throttled - a.throttled,
    failedConditions: b.failedConditions - a.failedConditions,
    writeUnits: b.writeUnits - a.writeUnits,
    indexWriteUnits: b.indexWriteUnits - a.indexWriteUnits,
    readUnits: b.readUnits - a.readUnits,
    itemsRead: b.itemsRead - a.itemsRead,
    operations,
  };
}

export function addUsage(into: Usage, more: Usage): void {
  into.requests += more.requests;
  into.throttled += more.throttled;
  into.failedConditions += more.failedConditions;
  into.writeUnits += more.writeUnits;
  into.indexWriteUnits += more.indexWriteUnits;
  into.readUnits += more.readUnits;
  into.itemsRead += more.itemsRead;
  for (const [op, n] of Object.entries(more.operations)) into.operations[op] = (into.operations[op] ?? 0) + n;
}

/** Capacity taken from one partition (of the table or of an index); the limiter keeps a bucket per partition. */
export interface Charge {
  /** `table|index|partition key value` (index empty for the table itself). */
  readonly partition: string;
  readonly kind: 'read' | 'write';
  readonly units: number;
}

/** One write of one item, before it is billed. */
interface ItemWrite {
  readonly table: string;
  readonly key: WireItem;
  readonly before: LedgerEntry | undefined;
  /** The entry after the write; undefined for a delete or a condition check. */
  readonly after: LedgerEntry | undefined;
  readonly kind: 'put' | 'update' | 'delete' | 'check';
}

/** The cost of one attempt: usage counters and the charges per partition. */
export interface Assessment {
  readonly usage: Usage;
  readonly charges: Charge[];
}

const TX_FACTOR = 2;

function partitionId(table: string, index: string | undefined, pk: string): string {
  return `${table}|${index ?? ''}|${pk}`;
}

/**
 * Prices requests by DynamoDB's rules, from the request, the response and the size ledger:
 *
 *   PutItem / UpdateItem     units of max(size before, size after)        per started KB, at least 1
 *   DeleteItem               units of the size before                     (a miss costs 1)
 *   failed condition         units of the size before (at least 1)        the write is billed, nothing changes
 *   TransactWriteItems       every item as above, times 2 (prepare + commit), cancelled ones included
 *   index writes             per index whose entry the write adds, changes or removes (a key change: 2 writes)
 *   GetItem / BatchGetItem   per item, per started 4 KB of the stored item, halved when eventually consistent
 *   Query / Scan             per request, started 4 KB of the items evaluated (before filters, whole items)
 *
 * Index writes are not doubled for transactions: DynamoDB propagates them after the commit.
 */
export class Pricer {
  constructor(
    private readonly schema: TableSchema,
    private readonly ledger: SizeLedger,
  ) {}

  private keyOf(item: WireItem): WireItem {
    const key: WireItem = {};
    for (const name of [this.schema.pk, this.schema.sk]) {
      const value = item[name];
      if (value !== undefined) key[name] = value;
    }
    return key;
  }

  /** Entry after an update we cannot see (inside a transaction): at least what it writes, at least what was there. */
  private estimateUpdate(
    before: LedgerEntry | undefined,
    key: WireItem,
    values: Record<string, AttributeValue> | undefined,
  ): LedgerEntry {
    const written = itemSize(key) + Object.values(values ?? {}).reduce((sum, v) => sum + valueSize(v), 0);
    if (before && before.size >= written) return before;
    return {
      size: written,
      indexKeys: before?.indexKeys ?? this.schema.indexes.map(() => undefined),
      indexSizes: before?.indexSizes ?? this.schema.indexes.map(() => 0),
    };
  }

  /** The writes of a write request, for planning (before) or billing (after). */
  writesOf(op: string, input: unknown, output?: unknown): ItemWrite[] {
    switch (op) {
      case 'PutItem': {
        const { TableName, Item } = input as PutItemCommandInput;
        const key = this.keyOf(Item!);
        return [
          {
            table: TableName!,
            key,
            before: this.ledger.get(TableName!, key),
            after: this.ledger.entryOf(Item!),
            kind: 'put',
          },
        ];
      }
      case 'UpdateItem': {
        const { TableName, Key, ExpressionAttributeValues } = input as UpdateItemCommandInput;
        const before = this.ledger.get(TableName!, Key!);
        const attributes = (output as UpdateItemCommandOutput | undefined)?.Attributes;
        const after = attributes
          ? this.ledger.entryOf({ ...attributes, ...Key })
          : this.estimateUpdate(before, Key!, ExpressionAttributeValues);
        return [{ table: TableName!, key: Key!, before, after, kind: 'update' }];
      }
      case 'DeleteItem': {
        const { TableName, Key } = input as DeleteItemCommandInput;
        return [
          { table: TableName!, key: Key!, before: this.ledger.get(TableName!, Key!), after: undefined, kind: 'delete' },
        ];
      }
      case 'TransactWriteItems': {
        const { TransactItems } = input as TransactWriteItemsCommandInput;
        return (TransactItems ?? []).map((item): ItemWrite => {
          if (item.Put) {
            const key = this.keyOf(item.Put.Item!);
            return {
              table: item.Put.TableName!,
              key,
              before: this.ledger.get(item.Put.TableName!, key),
              after: this.ledger.entryOf(item.Put.Item!),
              kind: 'put',
            };
          }
          if (item.Update) {
            const before = this.ledger.get(item.Update.TableName!, item.Update.Key!);
            return {
              table: item.Update.TableName!,
              key: item.Update.Key!,
              before,
              after: this.estimateUpdate(before, item.Update.Key!, item.Update.ExpressionAttributeValues),
              kind: 'update',
            };
          }
          if (item.Delete)
            return {
              table: item.Delete.TableName!,
              key: item.Delete.Key!,
              before: this.ledger.get(item.Delete.TableName!, item.Delete.Key!),
              after: undefined,
              kind: 'delete',
            };
          const check = item.ConditionCheck!;
          return {
            table: check.TableName!,
            key: check.Key!,
            before: this.ledger.get(check.TableName!, check.Key!),
            after: undefined,
            kind: 'check',
          };
        });
      }
      case 'BatchWriteItem': {
        const { RequestItems } = input as BatchWriteItemCommandInput;
        const unprocessed = (output as BatchWriteItemCommandOutput | undefined)?.UnprocessedItems ?? {};
        const writes: ItemWrite[] = [];
        for (const [table, requests] of Object.entries(RequestItems ?? {})) {
          const skipped = new Set(
            (unprocessed[table] ?? []).map((r) =>
              this.ledger.keyOf(table, r.PutRequest ? this.keyOf(r.PutRequest.Item!) : r.DeleteRequest!.Key!),
            ),
          );
          for (const r of requests) {
            const key = r.PutRequest ? this.keyOf(r.PutRequest.Item!) : r.DeleteRequest!.Key!;
            if (skipped.has(this.ledger.keyOf(table, key))) continue;
            writes.push({
              table,
              key,
              before: this.ledger.get(table, key),
              after: r.PutRequest ? this.ledger.entryOf(r.PutRequest.Item!) : undefined,
              kind: r.PutRequest ? 'put' : 'delete',
            });
          }
        }
        return writes;
      }
      default:
        return [];
    }
  }

  /** Charges of item writes: table units (times `factor`) on the item's partition, index units on each index partition. */
  private writeCharges(
    writes: readonly ItemWrite[],
    factor: number,
    succeeded: boolean,
  ): { table: number; index: number; charges: Charge[] } {
    let table = 0;
    let index = 0;
    const charges: Charge[] = [];
    for (const w of writes) {
      const pk = w.key[this.schema.pk]?.S ?? '';
      // A failed condition (or a check) is billed on the item that is there; a write on the larger of before and after.
      const bytes =
        !succeeded || w.kind === 'check' || w.kind === 'delete'
          ? (w.before?.size ?? 0)
          : Math.max(w.before?.size ?? 0, w.after?.size ?? 0);
      const units = writeUnits(bytes) * factor;
      table += units;
      charges.push({ partition: partitionId(w.table, undefined, pk), kind: 'write', units });
      if (!succeeded || w.kind === 'check') continue;
      this.schema.indexes.forEach((ix, i) => {
        const oldKey = w.before?.indexKeys[i];
        const newKey = w.after?.indexKeys[i];
        const entries: [string, number][] = [];
        if (oldKey !== undefined && newKey !== undefined && oldKey === newKey) {
          entries.push([newKey, Math.max(w.before!.indexSizes[i]!, w.after!.indexSizes[i]!)]);
        } else {
          if (oldKey !== undefined) entries.push([oldKey, w.before!.indexSizes[i]!]);
          if (newKey !== undefined) entries.push([newKey, w.after!.indexSizes[i]!]);
        }
        for (const [entryKey, size] of entries) {
          const u = writeUnits(size);
          index += u;
          charges.push({
            partition: partitionId(w.table, ix.name, entryKey.slice(0, entryKey.indexOf('\u0000'))),
            kind: 'write',
            units: u,
          });
        }
      });
    }
    return { table, index, charges };
  }

  /** The partition a Query reads: the equality on the (index's) partition key in its key condition. */
  queryPartition(input: QueryCommandInput): { index: string | undefined; pk: string } {
    const pkName = input.IndexName ? this.schema.indexes.find((i) => i.name === input.IndexName)?.pk : this.schema.pk;
    for (const match of (input.KeyConditionExpression ?? '').matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
      const name = match[1]!.startsWith('#') ? input.ExpressionAttributeNames?.[match[1]!] : match[1];
      if (name === pkName) return { index: input.IndexName, pk: input.ExpressionAttributeValues?.[match[2]!]?.S ?? '' };
    }
    return { index: input.IndexName, pk: '' };
  }

  /** What an attempt is expected to cost, to decide admission before it is sent (reads of unknown size: 1 unit). */
  plan(op: string, input: unknown): Charge[] {
    switch (op) {
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem':
      case 'BatchWriteItem':
        return this.writeCharges(this.writesOf(op, input), 1, true).charges;
      case 'TransactWriteItems':
        return this.writeCharges(this.writesOf(op, input), TX_FACTOR, true).charges;
      case 'GetItem': {
        const { TableName, Key, ConsistentRead } = input as GetItemCommandInput;
        const size = this.ledger.get(TableName!, Key!)?.size ?? 0;
        return [
          {
            partition: partitionId(TableName!, undefined, Key![this.schema.pk]?.S ?? ''),
            kind: 'read',
            units: readUnits(size, ConsistentRead === true),
          },
        ];
      }
      case 'BatchGetItem': {
        const { RequestItems } = input as BatchGetItemCommandInput;
        return Object.entries(RequestItems ?? {}).flatMap(([table, { Keys, ConsistentRead }]) =>
          (Keys ?? []).map((key) => ({
            partition: partitionId(table, undefined, key[this.schema.pk]?.S ?? ''),
            kind: 'read' as const,
            units: readUnits(this.ledger.get(table, key)?.size ?? 0, ConsistentRead === true),
          })),
        );
      }
      case 'Query': {
        const q = input as QueryCommandInput;
        const { index, pk } = this.queryPartition(q);
        return [
          {
            partition: partitionId(q.TableName!, index, pk),
            kind: 'read',
            units: readUnits(0, q.ConsistentRead === true),
          },
        ];
      }
      default:
        return [];
    }
  }

  /** What an attempt cost, once answered (`error` set when it failed). */
  assess(op: string, input: unknown, output: unknown, error: unknown): Assessment {
    const usage = emptyUsage();
    usage.requests = 1;
    usage.operations[op] = 1;
    const name = (error as { name?: string } | undefined)?.name;
    switch (op) {
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem':
      case 'BatchWriteItem':
      case 'TransactWriteItems': {
        const conditionFailed = name === 'ConditionalCheckFailedException' || name === 'TransactionCanceledException';
        if (error !== undefined && !conditionFailed) return { usage, charges: [] };
        // A refused condition returns the item that is there (ALL_OLD) when asked: learn its size before billing on it.
        if (conditionFailed) this.learnFromFailure(op, input, error);
        const writes = this.writesOf(op, input, output);
        const { table, index, charges } = this.writeCharges(
          writes,
          op === 'TransactWriteItems' ? TX_FACTOR : 1,
          !conditionFailed,
        );
        usage.writeUnits = table;
        usage.indexWriteUnits = index;
        if (conditionFailed) {
          usage.failedConditions = 1;
        } else {
          for (const w of writes) if (w.kind !== 'check') this.ledger.set(w.table, w.key, w.after);
        }
        return { usage, charges };
      }
      case 'GetItem': {
        if (error !== undefined) return { usage, charges: [] };
        const { TableName, Key, ConsistentRead, ProjectionExpression } = input as GetItemCommandInput;
        const item = (output as GetItemCommandOutput).Item;
        if (item && ProjectionExpression === undefined) this.ledger.set(TableName!, Key!, this.ledger.entryOf(item));
        const size = this.ledger.get(TableName!, Key!)?.size ?? (item ? itemSize(item) : 0);
        usage.readUnits = readUnits(size, ConsistentRead === true);
        usage.itemsRead = item ? 1 : 0;
        return {
          usage,
          charges: [
            {
              partition: partitionId(TableName!, undefined, Key![this.schema.pk]?.S ?? ''),
              kind: 'read',
              units: usage.readUnits,
            },
          ],
        };
      }
      case 'BatchGetItem': {
        if (error !== undefined) return { usage, charges: [] };
        const { RequestItems } = input as BatchGetItemCommandInput;
        const responses = (output as BatchGetItemCommandOutput).Responses ?? {};
        const charges: Charge[] = [];
        for (const [table, items] of Object.entries(responses)) {
          const request = RequestItems?.[table];
          const consistent = request?.ConsistentRead === true;
          // A projected answer carries no key: bill each returned item at the mean stored size of the keys asked for.
          const known = (request?.Keys ?? [])
            .map((k) => this.ledger.get(table, k)?.size)
            .filter((v): v is number => v !== undefined);
          const meanAsked = known.length ? known.reduce((a, b) => a + b, 0) / known.length : undefined;
          for (const item of items) {
            const key = this.keyOf(item);
            const stored =
              this.ledger.get(table, key)?.size ??
              (request?.ProjectionExpression !== undefined ? meanAsked : undefined);
            const units = readUnits(stored ?? itemSize(item), consistent);
            usage.readUnits += units;
            usage.itemsRead += 1;
            charges.push({
              partition: partitionId(table, undefined, key[this.schema.pk]?.S ?? ''),
              kind: 'read',
              units,
            });
          }
        }
        return { usage, charges };
      }
      case 'Query':
      case 'Scan': {
        if (error !== undefined) return { usage, charges: [] };
        const q = input as QueryCommandInput & ScanCommandInput;
        const out = output as QueryCommandOutput;
        const items = out.Items ?? [];
        const scanned = out.ScannedCount ?? items.length;
        const { index, pk } = op === 'Query' ? this.queryPartition(q) : { index: q.IndexName, pk: '' };
        const whole =
          q.ProjectionExpression === undefined && q.Select !== 'COUNT' && q.Select !== 'ALL_PROJECTED_ATTRIBUTES';
        let bytes = 0;
        let sized = 0;
        if (whole) {
          for (const item of items) bytes += itemSize(item);
          sized = items.length;
        }
        if (scanned > sized) {
          // Items the answer does not show (filtered out, projected away, counted only): the partition's average entry.
          const average =
            (op === 'Query'
              ? this.ledger.averageSize(q.TableName!, index, pk)
              : this.ledger.averageTableSize(q.TableName!)) ?? (sized ? bytes / sized : 0);
          bytes += (scanned - sized) * average;
        }
        usage.readUnits = readUnits(bytes, q.ConsistentRead === true);
        usage.itemsRead = scanned;
        return {
          usage,
          charges:
            op === 'Query'
              ? [{ partition: partitionId(q.TableName!, index, pk), kind: 'read', units: usage.readUnits }]
              : [],
        };
      }
      default:
        return { usage, charges: [] };
    }
  }

  /** Learns the size of the item a refused condition found, from the ALL_OLD image the error carries. */
  private learnFromFailure(op: string, input: unknown, error: unknown): void {
    if (op === 'TransactWriteItems') {
      const items = (input as TransactWriteItemsCommandInput).TransactItems ?? [];
      const reasons: readonly CancellationReason[] =
        (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
      reasons.forEach((reason, i) => {
        const item = items[i];
        const table =
          item?.Put?.TableName ?? item?.Update?.TableName ?? item?.Delete?.TableName ?? item?.ConditionCheck?.TableName;
        if (reason.Item && table !== undefined)
          this.ledger.set(table, this.keyOf(reason.Item), this.ledger.entryOf(reason.Item));
      });
      return;
    }
    const old = (error as { Item?: WireItem }).Item;
    const table = (input as { TableName?: string }).TableName;
    if (old && table !== undefined) this.ledger.set(table, this.keyOf(old), this.ledger.entryOf(old));
  }
}
