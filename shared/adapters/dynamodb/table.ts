import type { Condition } from './conditions.ts';
import type { Item } from './codec.ts';
import type { Key } from './keys.ts';

/**
 * The table engine: the handful of DynamoDB moves the stores make, on plain items. Two engines implement it:
 * SdkTable (DynamoDB through the AWS SDK) and MemoryTable (in memory, with DynamoDB's rules and injectable lag and
 * faults). The stores and the write shapes are written once above it, so every test that runs a store on the memory
 * engine runs the code that ships.
 *
 * Errors: throttling and timeouts surface as the domain's NotReadyError; anything else is an internal error.
 */
export interface Table {
  readonly name: string;
  /** A strongly consistent read of one item. */
  get(key: Key): Promise<Item | undefined>;
  /** Strongly consistent reads of many items (absent ones left out, order not kept); `attributes` projects. */
  batchGet(keys: readonly Key[], attributes?: readonly string[]): Promise<Item[]>;
  /** One conditional write outside a transaction. */
  write(op: WriteOp): Promise<WriteResult>;
  /**
   * Up to 100 operations, all or none. Undefined when it committed; otherwise one verdict per operation, in order
   * (DynamoDB's cancellation reasons).
   */
  transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined>;
  /** One page of a query on the table or an index. */
  query(query: Query): Promise<QueryPage>;
  /** The table's status, for the health route. */
  describe(): Promise<string>;
}

/**
 * DynamoDB's limits on one request, which both engines enforce (SdkTable by DynamoDB's answer, MemoryTable by its own
 * checks): operations a TransactWriteItems, bytes an item (attribute names and values), bytes a transaction's items,
 * keys a BatchGetItem request (batchGet sends its keys in requests of this many) and a BatchWriteItem request.
 */
export const TRANSACTION_LIMIT = 100;
export const ITEM_BYTES_LIMIT = 400 * 1024;
export const TRANSACTION_BYTES_LIMIT = 4 * 1024 * 1024;
export const BATCH_GET_LIMIT = 100;
export const BATCH_WRITE_LIMIT = 25;

/** Names of the table's secondary indexes (infra/table.ts says what each one serves). */
export type IndexName = 'GSI1' | 'GSI2' | 'GSI3';

export type WriteOp =
  | { readonly kind: 'put'; readonly item: Item; readonly condition?: Condition; readonly returnOld?: boolean }
  | { readonly kind: 'delete'; readonly key: Key; readonly condition?: Condition }
  | { readonly kind: 'update'; readonly key: Key; readonly update: Update; readonly condition?: Condition }
  | { readonly kind: 'check'; readonly key: Key; readonly condition: Condition };

/** An update of some attributes: SET, SET if_not_exists, ADD of numbers, and REMOVE. */
export interface Update {
  readonly set?: Readonly<Record<string, unknown>>;
  readonly setIfAbsent?: Readonly<Record<string, unknown>>;
  readonly add?: Readonly<Record<string, number>>;
  /** Attributes removed (absent ones are no error, as in DynamoDB). */
  readonly remove?: readonly string[];
}

/** `item`: the item after an update; `old`: the item that failed the condition, when asked for (returnOld). */
export type WriteResult = { readonly ok: true; readonly item?: Item } | { readonly ok: false; readonly old?: Item };

/** Why an operation of a cancelled transaction did not commit. */
export type TxVerdict =
  | { readonly code: 'None' }
  | { readonly code: 'ConditionalCheckFailed'; readonly old?: Item }
  /** Another transaction on the same item was in flight (DynamoDB cancels rather than waits). */
  | { readonly code: 'TransactionConflict' };

export interface Query {
  /** Undefined: the table itself (PK, SK). */
  readonly index?: IndexName;
  /** The partition key's value. */
  readonly partition: string;
  /** A key condition on the sort key. */
  readonly sort?:
    | { readonly between: readonly [string, string] }
    | { readonly after: string }
    | { readonly before: string };
  /** Applied after the read: filtered items still count in `scanned` (and in what DynamoDB charges). */
  readonly filter?: Condition;
  /** Items read (before the filter) at most. */
  readonly limit?: number;
  /** The `lastKey` of the previous page. */
  readonly start?: Item;
  readonly descending?: boolean;
  /** Strong consistency; only on the table (indexes are eventually consistent). */
  readonly consistent?: boolean;
  readonly attributes?: readonly string[];
  /** Counts only (items is empty). */
  readonly countOnly?: boolean;
}

export interface QueryPage {
  readonly items: Item[];
  /** Items that passed the filter. */
  readonly count: number;
  /** Items read. */
  readonly scanned: number;
  /** Where the next page starts; undefined when the query read everything. */
  readonly lastKey?: Item;
}

/** The key attributes of the table and of each index. */
export const KEY_ATTRIBUTES: Readonly<Record<IndexName | 'table', readonly [string, string]>> = {
  table: ['PK', 'SK'],
  GSI1: ['GSI1PK', 'GSI1SK'],
  GSI2: ['GSI2PK', 'GSI2SK'],
  GSI3: ['GSI3PK', 'GSI3SK'],
};

/** Every page of a query. */
export async function queryAll(table: Table, query: Query): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await table.query({ ...query, ...(start ? { start } : {}) });
    items.push(...page.items);
    start = page.lastKey;
  } while (start);
  return items;
}
