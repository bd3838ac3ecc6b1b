import { readUnits, plainItemSize } from '../../aws-emulation/item-size.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Key } from '../../shared/adapters/dynamodb/keys.ts';
import {
  BATCH_GET_LIMIT,
  type Query,
  type QueryPage,
  type TxVerdict,
  type WriteOp,
  type WriteResult,
} from '../../shared/adapters/dynamodb/table.ts';
import { PassThroughTable } from './pass-through-table.ts';

/** What a stretch of calls cost as DynamoDB would bill it: requests by operation, and read units. */
export interface Metered {
  requests: number;
  readUnits: number;
  operations: Record<string, number>;
}

const WRITE_OPERATION = {
  put: 'PutItem',
  update: 'UpdateItem',
  delete: 'DeleteItem',
  check: 'ConditionCheck',
} as const;

/**
 * A Table that counts the DynamoDB requests a container's calls make and the read units they are billed, on either
 * engine (it sits above the engine, so both count the same calls): a batch read is one BatchGetItem per 100 keys, a
 * query page one Query. Read units follow the bench's meter (bench/lib/meter.ts): each item returned, by its size
 * (consistent unless an index query), a GetItem of an absent item one unit; a batch read's absent keys nothing.
 */
export class RequestMeter extends PassThroughTable {
  private usage: Metered = { requests: 0, readUnits: 0, operations: {} };

  /** What was counted since the last take, and a fresh count from now. */
  take(): Metered {
    const usage = this.usage;
    this.usage = { requests: 0, readUnits: 0, operations: {} };
    return { ...usage, readUnits: Math.round(usage.readUnits * 10) / 10 };
  }

  private count(operation: string, requests: number, items: readonly Item[], consistent = true): void {
    this.usage.requests += requests;
    this.usage.operations[operation] = (this.usage.operations[operation] ?? 0) + requests;
    this.usage.readUnits += items.reduce((sum, item) => sum + readUnits(plainItemSize(item), consistent), 0);
  }

  override async get(key: Key): Promise<Item | undefined> {
    const item = await super.get(key);
    this.count('GetItem', 1, [item ?? {}]);
    return item;
  }

  override async batchGet(keys: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    const items = await super.batchGet(keys, attributes);
    this.count('BatchGetItem', Math.ceil(keys.length / BATCH_GET_LIMIT), items);
    return items;
  }

  override async write(op: WriteOp): Promise<WriteResult> {
    const result = await super.write(op);
    this.count(WRITE_OPERATION[op.kind], 1, []);
    return result;
  }

  override async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const verdicts = await super.transact(ops);
    this.count('TransactWriteItems', 1, []);
    return verdicts;
  }

  override async query(query: Query): Promise<QueryPage> {
    const page = await super.query(query);
    this.count('Query', 1, [], query.consistent === true);
    this.usage.readUnits += readUnits(
      page.items.reduce((s, i) => s + plainItemSize(i), 0),
      query.consistent === true,
    );
    return page;
  }
}
