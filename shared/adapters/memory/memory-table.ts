// Over 300 lines: one class holding every DynamoDB rule the contract suites rely on (conditions, indexes, transactions, TTL), kept whole so it reads as one engine.
/**
 * MemoryTable: the Table port in memory, with DynamoDB's rules. It exists so the core's tests run without Java, and
 * as the base of a deterministic simulator: index lag and faults come in through constructor options, TTL deletion
 * runs when the caller says so, and nothing reads the clock, randomness or timers.
 *
 * Modelled (checked against DynamoDB Local by tests/int/table-contract.int.test.ts, which runs the same cases on
 * SdkTable and on this engine):
 * - items keyed by (PK, SK), deep-copied in and out (undefined attributes dropped, as the SDK's marshalling does);
 *   puts replace whole items, deletes of absent items succeed, updates create absent items with their key;
 * - conditions evaluated by `holds` (conditions.ts), the same data SdkTable renders to an expression;
 * - transactions: all or none, conditions read the state before the transaction, verdicts in order, at most 100
 *   operations and one operation per item;
 * - validation: key attributes non-empty strings, partition keys <= 2048 bytes and sort keys <= 1024 bytes (UTF-8),
 *   the same for index keys and query bounds; a key attribute cannot be updated; ADD on a non-number (read after
 *   the condition); empty or overlapping updates; BETWEEN bounds in order; no consistent read on an index; Limit >= 1;
 *   start keys with every key attribute, inside the partition and the sort condition; no projection or filter on
 *   attributes a keys-only index does not hold; in a transaction, per-item refusals (key size, key update) cancel it
 *   with TransactionCanceledException as DynamoDB Local does;
 * - where DynamoDB Local departs from DynamoDB (a query's partition value over 2048 bytes is accepted; two ops on one
 *   item are refused only when every condition holds), this engine follows DynamoDB, and the contract test says so;
 * - DynamoDB's size limits (table.ts): 400 KB an item, counted as DynamoDB counts it (aws-emulation/item-size.ts,
 *   which DynamoDB Local matches byte for byte), on a put and on the item an update leaves; 4 MB a transaction's
 *   payload. In a transaction a put over 400 KB refuses the request (ValidationException) and an update that grows
 *   an item over it cancels it (a ValidationError reason), as DynamoDB Local answers. batchGet takes any number of
 *   keys, as the port does (SdkTable sends them 100 a request, BatchGetItem's limit); the port has no batch write;
 * - queries: key conditions and order by UTF-8 bytes (as DynamoDB compares binary and string keys), sparse indexes,
 *   GSI1/GSI2 projecting ALL and GSI3 KEYS_ONLY, Limit counting items read before the filter, LastEvaluatedKey
 *   whenever the read stopped at the Limit (even when nothing is left), exclusive start keys;
 * - index (and eventually consistent table) reads that lag behind the writes, by `indexLag`;
 * - TTL deletion, by `expireTtl`, which the caller runs (DynamoDB's runs within days, not at the expiry).
 *
 * Not modelled: the 1 MB page cap, capacity and its throttling (only as injected faults), real
 * latency, streams, the 38-digit decimal arithmetic of numbers (JS doubles: exact for the integers the stores use),
 * and conflicts between transactions in flight (calls here are atomic; inject `conflict` faults instead).
 *
 * Over 300 lines on purpose: it is one engine whose rules (validation, versions for lag, queries) read each other's
 * state; split across files they would only be harder to check against the contract test.
 */
import { NotReadyError } from '../../core/errors.ts';
import type { Item } from '../dynamodb/codec.ts';
import { holds, type Condition } from '../dynamodb/conditions.ts';
import type { Key } from '../dynamodb/keys.ts';
import { plainItemSize, plainValueSize, utf8Length } from '../../../aws-emulation/item-size.ts';
import {
  ITEM_BYTES_LIMIT,
  KEY_ATTRIBUTES,
  TRANSACTION_BYTES_LIMIT,
  TRANSACTION_LIMIT,
  type IndexName,
  type Query,
  type QueryPage,
  type Table,
  type TxVerdict,
  type Update,
  type WriteOp,
  type WriteResult,
} from '../dynamodb/table.ts';

/** The methods of the Table port, as the fault hook and the call counter name them. */
export const TableMethod = {
  Get: 'get',
  BatchGet: 'batchGet',
  Write: 'write',
  Transact: 'transact',
  Query: 'query',
  Describe: 'describe',
} as const;
export type TableMethod = (typeof TableMethod)[keyof typeof TableMethod];

/** One call, as the fault hook sees it: the keys it touches, and the write operations or the query it carries. */
export interface TableCall {
  readonly method: TableMethod;
  readonly keys: readonly Key[];
  readonly ops?: readonly WriteOp[];
  readonly query?: Query;
}

/**
 * A fault to inject into one call.
 * - `throttle`: nothing is applied; NotReadyError, as SdkTable turns DynamoDB's throttling into.
 * - `timeout`: the write is applied (`committed`) or not, then NotReadyError: the caller cannot tell which.
 * - `conflict`: a transaction is cancelled with TransactionConflict on `ops` (indexes; all when absent) and None on
 *   the others; a single write throws NotReadyError, what SdkTable makes of DynamoDB's TransactionConflictException
 *   (a transaction held the item): nothing is applied.
 */
export type Fault =
  | { readonly kind: 'throttle' }
  | { readonly kind: 'timeout'; readonly committed: boolean }
  | { readonly kind: 'conflict'; readonly ops?: readonly number[] };

export interface MemoryTableOptions {
  /** The table's name (default 'memory'). */
  readonly name?: string;
  /**
   * How many of the most recent item writes a read of this query does not see yet (0, the default: fresh). Asked for
   * index queries and for table queries without `consistent`; get, batchGet and consistent queries are always fresh.
   */
  readonly indexLag?: (query: Query) => number;
  /** Consulted before each call; undefined: no fault. */
  readonly faults?: (call: TableCall) => Fault | undefined;
  /**
   * How many item writes of history are kept (default 1000): lags up to this are answered exactly, larger ones are
   * answered as this. It bounds memory to the live items plus this many versions, however long the run.
   */
  readonly history?: number;
}

/** An error carrying DynamoDB's exception name, so callers and tests match it as they match the SDK's. */
function dynamoError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

const validation = (message: string): Error => dynamoError('ValidationException', message);

const THROTTLED = 'The address store is throttling requests; retry shortly.';
const TIMED_OUT = 'The address store did not answer in time; retry shortly.';

/** DynamoDB's key size limits, in UTF-8 bytes. */
const MAX_PARTITION_BYTES = 2048;
const MAX_SORT_BYTES = 1024;

/** DynamoDB's TTL skips items whose expiry is more than five years in the past (a guard against milliseconds). */
const TTL_IGNORED_AFTER_SECONDS = 5 * 365 * 24 * 3600;

const INDEXES: readonly IndexName[] = ['GSI1', 'GSI2', 'GSI3'];
/** GSI3 projects KEYS_ONLY (infra/table.json); the others ALL. */
const KEYS_ONLY: ReadonlySet<IndexName> = new Set(['GSI3']);

/** Characters where UTF-16 code unit order and UTF-8 byte order can disagree (surrogates and what sorts after them). */
const SURROGATE_OR_ABOVE = /[\uD800-\uFFFF]/;

/**
 * DynamoDB orders and compares string keys by their UTF-8 bytes, not by JS's UTF-16 code units. The two orders agree
 * unless a string holds a surrogate or a character from U+E000 up, so only those pay for the byte comparison.
 */
function compareBytes(a: string, b: string): number {
  if (!SURROGATE_OR_ABOVE.test(a) && !SURROGATE_OR_ABOVE.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * A deep copy without undefined attributes or list elements (marshall's removeUndefinedValues); binary survives.
 * One pass: plain objects and arrays are rebuilt here, anything else (binary, and whatever else an item may hold) is
 * left to structuredClone, as before; the result is what structuredClone of the stripped value gave, at a fraction
 * of its cost (copies in and out were a tenth of the simulator's CPU).
 */
function copy<T>(value: T): T {
  return copyDefined(value) as T;
}

function copyDefined(value: unknown): unknown {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function' && typeof value !== 'symbol'))
    return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const v of value as unknown[]) if (v !== undefined) out.push(copyDefined(v));
    return out;
  }
  if (Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = copyDefined(v);
    return out;
  }
  return structuredClone(value);
}

function project(item: Item, attributes: readonly string[] | undefined): Item {
  if (!attributes) return item;
  return Object.fromEntries(attributes.filter((a) => item[a] !== undefined).map((a) => [a, item[a]]));
}

/** A key attribute's value must be a non-empty string: DynamoDB refuses the whole request otherwise. */
function checkKeyShape(attribute: string, value: unknown): void {
  if (typeof value !== 'string')
    throw validation(`One or more parameter values were invalid: Type mismatch for key ${attribute}; expected S.`);
  if (value === '')
    throw validation(
      `One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: ${attribute}`,
    );
}

/** Why a key attribute's value is over DynamoDB's size limit (undefined: it is not). */
function sizeProblem(attribute: string, value: unknown, maxBytes: number): string | undefined {
  const bytes = typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : 0;
  return bytes > maxBytes ? `Size of ${attribute} is ${bytes} bytes, above the limit of ${maxBytes}.` : undefined;
}

function checkKeyValue(attribute: string, value: unknown, maxBytes: number): void {
  checkKeyShape(attribute, value);
  const problem = sizeProblem(attribute, value, maxBytes);
  if (problem) throw validation(`One or more parameter values were invalid: ${problem}`);
}

function checkKey(key: { readonly PK: unknown; readonly SK: unknown }): void {
  checkKeyValue('PK', key.PK, MAX_PARTITION_BYTES);
  checkKeyValue('SK', key.SK, MAX_SORT_BYTES);
}

/** The key attributes an item carries (table and indexes), with their size limits. */
function keyValuesOf(item: Item): [string, unknown, number][] {
  const present: [string, unknown, number][] = [
    ['PK', item.PK, MAX_PARTITION_BYTES],
    ['SK', item.SK, MAX_SORT_BYTES],
  ];
  for (const index of INDEXES) {
    const [pk, sk] = KEY_ATTRIBUTES[index];
    if (item[pk] !== undefined) present.push([pk, item[pk], MAX_PARTITION_BYTES]);
    if (item[sk] !== undefined) present.push([sk, item[sk], MAX_SORT_BYTES]);
  }
  return present;
}

/** An item about to be stored: its table key, and any index key it has, must be valid keys. */
function checkItem(item: Item): void {
  for (const [attribute, value, max] of keyValuesOf(item)) checkKeyValue(attribute, value, max);
}

const ITEM_TOO_LARGE = 'Item size has exceeded the maximum allowed size';
const UPDATE_TOO_LARGE = 'Item size to update has exceeded the maximum allowed size';

/** Whether an item is over DynamoDB's 400 KB, counted as DynamoDB counts it (attribute names and values: item-size.ts). */
const tooLarge = (item: Item): boolean => plainItemSize(item) > ITEM_BYTES_LIMIT;

/**
 * What a transaction's operations weigh against its 4 MB, as DynamoDB Local counts it (tests/int/table-contract): a
 * put its item; an update its key and the names and values it sets; a delete or a check its key; and each operation
 * its condition's values. Exact for puts (checked at the boundary); for the others DynamoDB Local counts a few bytes
 * more an operation (its expression placeholders), which no write shape comes near.
 */
function payloadBytes(op: WriteOp): number {
  const values = (record: Readonly<Record<string, unknown>> | undefined) =>
    Object.entries(record ?? {}).reduce((sum, [name, value]) => sum + utf8Length(name) + plainValueSize(value), 0);
  const condition = op.condition
    ? conditionValues(op.condition).reduce((sum: number, v) => sum + plainValueSize(v), 0)
    : 0;
  if (op.kind === 'put') return plainItemSize(op.item) + condition;
  const key = plainItemSize({ PK: op.key.PK, SK: op.key.SK });
  if (op.kind !== 'update') return key + condition;
  return key + values(op.update.set) + values(op.update.setIfAbsent) + values(op.update.add) + condition;
}

/** The values a condition compares with. */
function conditionValues(condition: Condition): unknown[] {
  return clausesOf(condition).flatMap((c) => ('value' in c ? [c.value] : []));
}

/** The clauses of a condition that are not and/or. */
function clausesOf(condition: Condition): Exclude<Condition, { op: 'and' | 'or' }>[] {
  if ('clauses' in condition) return condition.clauses.flatMap(clausesOf);
  return [condition];
}

/** The request-level checks of an update expression: not empty, no path twice, no key attribute. */
function checkUpdate(update: Update): void {
  const paths = [
    ...Object.keys(update.set ?? {}),
    ...Object.keys(update.setIfAbsent ?? {}),
    ...Object.keys(update.add ?? {}),
    ...(update.remove ?? []),
  ];
  if (paths.length === 0) throw validation('Invalid UpdateExpression: The expression can not be empty;');
  const seen = new Set<string>();
  for (const path of paths) {
    if (seen.has(path))
      throw validation(`Invalid UpdateExpression: Two document paths overlap with each other; path: [${path}]`);
    seen.add(path);
  }
}

/** An update of a key attribute: refused per item (a cancellation reason inside a transaction). */
function keyUpdateProblem(update: Update): string | undefined {
  const path = [
    ...Object.keys(update.set ?? {}),
    ...Object.keys(update.setIfAbsent ?? {}),
    ...Object.keys(update.add ?? {}),
    ...(update.remove ?? []),
  ].find((p) => p === 'PK' || p === 'SK');
  return path
    ? `One or more parameter values were invalid: Cannot update attribute ${path}. This attribute is part of the key`
    : undefined;
}

/** The attributes a condition reads. */
function attributesOf(condition: Condition): string[] {
  // A document path is projected (or not) as its top-level attribute.
  return clausesOf(condition).map((c) => (typeof c.attribute === 'string' ? c.attribute : c.attribute[0]!));
}

function keyOf(op: WriteOp): Key {
  return op.kind === 'put' ? { PK: op.item.PK as string, SK: op.item.SK as string } : { PK: op.key.PK, SK: op.key.SK };
}

/** The item an update makes of the current one (undefined: absent), as UpdateItem with SET, if_not_exists, ADD and REMOVE. */
function applyUpdate(key: Key, current: Item | undefined, update: Update): Item {
  // Every right-hand side reads the item before the update, as DynamoDB evaluates them.
  const before: Item = current ?? {};
  const next: Item = { ...(current ?? { PK: key.PK, SK: key.SK }) };
  for (const [attribute, value] of Object.entries(update.set ?? {})) next[attribute] = value;
  for (const [attribute, value] of Object.entries(update.setIfAbsent ?? {}))
    next[attribute] = before[attribute] !== undefined ? before[attribute] : value;
  for (const [attribute, value] of Object.entries(update.add ?? {})) {
    const old = before[attribute];
    if (old !== undefined && typeof old !== 'number')
      throw validation('An operand in the update expression has an incorrect data type');
    next[attribute] = (old ?? 0) + value;
  }
  for (const attribute of update.remove ?? []) delete next[attribute];
  const item = copy(next);
  checkItem(item);
  return item;
}

/** One stored version of an item (undefined: deleted), stamped with the write's sequence number. */
interface Version {
  readonly seq: number;
  readonly item: Item | undefined;
}

/** The sort position of a query's items: the sort key, then the table key (ties in an index are not unique). */
interface Positioned {
  readonly item: Item;
  readonly sort: string;
}

export class MemoryTable implements Table {
  readonly name: string;
  private readonly indexLag: (query: Query) => number;
  private readonly faults: (call: TableCall) => Fault | undefined;
  private readonly history: number;
  /** PK -> SK -> versions, oldest first; the last one is the current state. */
  private readonly rows = new Map<string, Map<string, Version[]>>();
  /**
   * Per index and index partition value, the table keys that had an entry there in a version still kept (a query
   * reads only these, not the whole table; keys whose entry moved or went are filtered out by the version read). A
   * key leaves a partition's members when no kept version of it has an entry there (prune), so the members stay
   * bounded like the versions: a key deleted long ago is not read again by every query of its old partition.
   */
  private readonly indexMembers = new Map<string, Map<string, Key>>();
  /** Item writes in order, whose keys get pruned once the write falls out of the history window. */
  private readonly journal: Key[] = [];
  private journalHead = 0;
  /** The sequence number of the last item write. */
  private sequence = 0;
  private readonly counts: Record<TableMethod, number> = {
    get: 0,
    batchGet: 0,
    write: 0,
    transact: 0,
    query: 0,
    describe: 0,
  };

  constructor(options: MemoryTableOptions = {}) {
    this.name = options.name ?? 'memory';
    this.indexLag = options.indexLag ?? (() => 0);
    this.faults = options.faults ?? (() => undefined);
    this.history = Math.max(0, Math.floor(options.history ?? 1000));
  }

  /** The item as stored now, read synchronously and not counted as a call (for test audits of writes, freed-audit.ts). */
  peek(key: Key): Item | undefined {
    const item = this.current(key);
    return item && copy(item);
  }

  async get(key: Key): Promise<Item | undefined> {
    this.enter({ method: 'get', keys: [key] });
    checkKey(key);
    const item = this.current(key);
    return item && copy(item);
  }

  async batchGet(keyList: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    this.enter({ method: 'batchGet', keys: keyList });
    keyList.forEach(checkKey);
    const unique = [...new Map(keyList.map((k) => [`${k.PK}\u0000${k.SK}`, k])).values()];
    return unique.flatMap((key) => {
      const item = this.current(key);
      return item ? [copy(project(item, attributes))] : [];
    });
  }

  /**
   * The current items of these keys as stored, not copied, for a harness that only reads them (the simulator's view
   * of each committed change): not a call of the port, so no fault and not counted. The caller must not modify them.
   * Refuses an invalid key with ValidationException, as batchGet (and, as it, answers through a promise).
   */
  async stored(keyList: readonly Key[]): Promise<Item[]> {
    keyList.forEach(checkKey);
    const out: Item[] = [];
    for (const key of keyList) {
      const item = this.current(key);
      if (item) out.push(item);
    }
    return out;
  }

  async write(op: WriteOp): Promise<WriteResult> {
    this.counts.write += 1;
    if (op.kind === 'check') throw new Error('A condition check is only valid inside a transaction.');
    const fault = this.faults({ method: 'write', keys: [keyOf(op)], ops: [op] });
    // What SdkTable makes of DynamoDB's TransactionConflictException on a single write: nothing applied, retryable.
    if (fault?.kind === 'conflict')
      throw new NotReadyError('Another transaction was writing the same item; retry shortly.', {
        cause: dynamoError('TransactionConflictException', 'Transaction is ongoing for the item'),
      });
    return this.faulted(fault, () => this.applyWrite(op));
  }

  async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    this.counts.transact += 1;
    const fault = this.faults({ method: 'transact', keys: ops.map(keyOf), ops });
    if (fault?.kind === 'conflict') {
      const conflicting = new Set(fault.ops ?? ops.map((_, i) => i));
      return ops.map((_, i) => (conflicting.has(i) ? { code: 'TransactionConflict' } : { code: 'None' }));
    }
    return this.faulted(fault, () => this.applyTransaction(ops));
  }

  async query(query: Query): Promise<QueryPage> {
    this.enter({ method: 'query', keys: [], query });
    const index = query.index;
    const [pkName, skName] = KEY_ATTRIBUTES[index ?? 'table'];
    const keyAttributes = index ? [...KEY_ATTRIBUTES.table, pkName, skName] : [...KEY_ATTRIBUTES.table];
    const inSortRange = sortRangeOf(query.sort);
    refuseInvalidQuery(query, { pkName, skName, keyAttributes, inSortRange });
    const start = query.start;

    // Strongly consistent table reads see every write; the others see the state as of `lag` writes ago.
    const lag = !index && query.consistent ? 0 : Math.min(this.history, Math.max(0, Math.floor(this.indexLag(query))));
    const asOf = this.sequence - lag;
    const direction = query.descending ? -1 : 1;
    const order = (a: Positioned, b: Positioned): number =>
      direction *
      (compareBytes(a.sort, b.sort) ||
        compareBytes(a.item.PK as string, b.item.PK as string) ||
        compareBytes(a.item.SK as string, b.item.SK as string));

    const matches: Positioned[] = [];
    for (const item of this.candidates(index, query.partition, asOf)) {
      if (item[pkName] !== query.partition || typeof item[skName] !== 'string') continue; // sparse index: both keys or out
      const value = item[skName] as string;
      if (!inSortRange(value)) continue;
      matches.push({ item: index && KEYS_ONLY.has(index) ? project(item, keyAttributes) : item, sort: value });
    }
    matches.sort(order);

    const from = start ? { item: start, sort: start[skName] as string } : undefined;
    const remaining = from ? matches.filter((m) => order(m, from) > 0) : matches;
    // The 1 MB page cap is not modelled: a page ends at the Limit or at the end of the partition.
    const read = query.limit !== undefined ? remaining.slice(0, query.limit) : remaining;
    const passed = read.filter((m) => !query.filter || holds(query.filter, m.item));
    const last = read.at(-1);
    // DynamoDB returns LastEvaluatedKey whenever the read stopped at the Limit, even if nothing is left after it.
    const lastKey =
      query.limit !== undefined && read.length === query.limit && last
        ? copy(project(last.item, keyAttributes))
        : undefined;
    return {
      items: query.countOnly ? [] : passed.map((m) => copy(project(m.item, query.attributes))),
      count: passed.length,
      scanned: read.length,
      ...(lastKey ? { lastKey } : {}),
    };
  }

  async describe(): Promise<string> {
    this.enter({ method: 'describe', keys: [] });
    return 'ACTIVE';
  }

  /**
   * DynamoDB's TTL deletion, when the caller decides it runs: deletes the items whose `ttl` (epoch seconds, a number)
   * is at or before `nowSeconds`, except those expired more than five years ago, which DynamoDB's TTL ignores.
   * Returns the keys deleted, in PK then SK order.
   */
  expireTtl(nowSeconds: number): Key[] {
    const expired = this.items().filter(
      (item) =>
        typeof item.ttl === 'number' && item.ttl <= nowSeconds && item.ttl > nowSeconds - TTL_IGNORED_AFTER_SECONDS,
    );
    const deleted = expired.map((item) => ({ PK: item.PK as string, SK: item.SK as string }));
    for (const key of deleted) this.store(key, undefined);
    return deleted;
  }

  /** Every current item (copies), in PK then SK byte order. */
  items(): Item[] {
    const all: Item[] = [];
    for (const pk of [...this.rows.keys()].sort(compareBytes)) {
      const partition = this.rows.get(pk)!;
      for (const sk of [...partition.keys()].sort(compareBytes)) {
        const item = partition.get(sk)!.at(-1)!.item;
        if (item) all.push(copy(item));
      }
    }
    return all;
  }

  /** Calls per method so far (faulted calls included). */
  calls(): Record<TableMethod, number> {
    return { ...this.counts };
  }

  /** Item writes so far (the last one's sequence number): with `indexLag`, a test can hold an index at a moment. */
  writes(): number {
    return this.sequence;
  }

  /** Versions kept (current ones and history), for tests of the history bound. */
  retainedVersions(): number {
    let total = 0;
    for (const partition of this.rows.values()) for (const versions of partition.values()) total += versions.length;
    return total;
  }

  /** Index memberships kept (table keys per index partition), for tests of the history bound. */
  retainedIndexMembers(): number {
    let total = 0;
    for (const members of this.indexMembers.values()) total += members.size;
    return total;
  }

  private enter(call: TableCall): void {
    this.counts[call.method] += 1;
    const fault = this.faults(call);
    if (!fault) return;
    if (fault.kind === 'conflict')
      throw new Error(`A conflict fault applies to writes and transactions, not to ${call.method}.`);
    throw new NotReadyError(fault.kind === 'throttle' ? THROTTLED : TIMED_OUT);
  }

  /** Runs a write under a fault: a throttle applies nothing; a timeout applies it or not, and then throws. */
  private faulted<T>(fault: Fault | undefined, apply: () => T): T {
    if (!fault) return apply();
    if (fault.kind === 'throttle') throw new NotReadyError(THROTTLED);
    if (fault.kind === 'timeout' && fault.committed) apply();
    throw new NotReadyError(TIMED_OUT);
  }

  private applyWrite(op: Exclude<WriteOp, { kind: 'check' }>): WriteResult {
    const key = keyOf(op);
    checkKey(key);
    if (op.kind === 'put') {
      checkItem(copy(op.item));
      if (tooLarge(op.item)) throw validation(ITEM_TOO_LARGE);
    }
    if (op.kind === 'update') {
      checkUpdate(op.update);
      const problem = keyUpdateProblem(op.update);
      if (problem) throw validation(problem);
    }
    const current = this.current(key);
    if (op.condition && !holds(op.condition, current)) {
      // DynamoDB sends the old item only with ReturnValuesOnConditionCheckFailure, which SdkTable asks for on puts.
      return { ok: false, ...(op.kind === 'put' && op.returnOld && current ? { old: copy(current) } : {}) };
    }
    // After the condition, as DynamoDB: an ADD to a string under a failing condition is a failed condition.
    const next = this.outcome(op, key, current);
    if (op.kind === 'update' && tooLarge(next!)) throw validation(UPDATE_TOO_LARGE);
    this.store(key, next);
    return op.kind === 'update' ? { ok: true, item: copy(next!) } : { ok: true };
  }

  /**
   * A transaction, checked as DynamoDB does: malformed requests (count, empty or mistyped keys, empty or overlapping
   * updates, two ops on one item) throw ValidationException; an op DynamoDB refuses per item (a key over its size
   * limit, an update of a key attribute) cancels the transaction with a ValidationError reason, which SdkTable
   * passes on as TransactionCanceledException; then the conditions, all read against the state before the
   * transaction; then the outcomes (an ADD to a string throws ValidationException).
   */
  private applyTransaction(ops: readonly WriteOp[]): TxVerdict[] | undefined {
    if (ops.length === 0 || ops.length > TRANSACTION_LIMIT) {
      throw validation(
        `1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length between 1 and ${TRANSACTION_LIMIT}`,
      );
    }
    const keys = ops.map(keyOf);
    for (const [i, op] of ops.entries()) {
      checkKeyShape('PK', keys[i]!.PK);
      checkKeyShape('SK', keys[i]!.SK);
      if (op.kind === 'put') for (const [attribute, value] of keyValuesOf(op.item)) checkKeyShape(attribute, value);
      if (op.kind === 'update') checkUpdate(op.update);
      // A put's item is known from the request: refused with it, as DynamoDB Local does (an update's only once applied).
      if (op.kind === 'put' && tooLarge(op.item)) throw validation(ITEM_TOO_LARGE);
    }
    const payload = ops.reduce((sum, op) => sum + payloadBytes(op), 0);
    if (payload > TRANSACTION_BYTES_LIMIT)
      throw validation(`Transaction payload size cannot exceed 4MB. Payload Size: ${payload}`);
    // Real DynamoDB refuses this up front; DynamoDB Local only once every condition holds (see the contract test).
    if (new Set(keys.map((k) => `${k.PK}\u0000${k.SK}`)).size < keys.length) {
      throw validation('Transaction request cannot include multiple operations on one item');
    }
    const refused = ops.map((op, i) => {
      const sizes =
        op.kind === 'put'
          ? keyValuesOf(op.item)
          : ([
              ['PK', keys[i]!.PK, MAX_PARTITION_BYTES],
              ['SK', keys[i]!.SK, MAX_SORT_BYTES],
            ] as const);
      const tooLong = sizes.map(([attribute, value, max]) => sizeProblem(attribute, value, max)).find(Boolean);
      return tooLong ?? (op.kind === 'update' ? keyUpdateProblem(op.update) : undefined);
    });
    if (refused.some(Boolean)) {
      const reasons = refused.map((problem) => (problem ? 'ValidationError' : 'None'));
      throw dynamoError(
        'TransactionCanceledException',
        `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.join(', ')}]`,
      );
    }
    const before = keys.map((key) => this.current(key));
    const failed = ops.map((op, i) => op.condition !== undefined && !holds(op.condition, before[i]));
    if (failed.some(Boolean)) {
      return ops.map((op, i): TxVerdict => {
        if (!failed[i]) return { code: 'None' };
        const old = before[i];
        return {
          code: 'ConditionalCheckFailed',
          ...(op.kind === 'put' && op.returnOld && old ? { old: copy(old) } : {}),
        };
      });
    }
    // Every outcome is computed before anything is stored, so a refused one leaves the table as it was. An update whose
    // item would pass 400 KB cancels the transaction with a ValidationError reason (DynamoDB Local's answer).
    const outcomes = ops.map((op, i) => (op.kind === 'check' ? before[i] : this.outcome(op, keys[i]!, before[i])));
    const oversize = ops.map((op, i) => op.kind === 'update' && outcomes[i] !== undefined && tooLarge(outcomes[i]!));
    if (oversize.some(Boolean)) {
      throw dynamoError(
        'TransactionCanceledException',
        `Transaction cancelled, please refer cancellation reasons for specific reasons [${oversize.map((o) => (o ? 'ValidationError' : 'None')).join(', ')}]`,
      );
    }
    ops.forEach((op, i) => {
      if (op.kind !== 'check') this.store(keys[i]!, outcomes[i]);
    });
    return undefined;
  }

  /** The item a write leaves (undefined: none); throws ValidationException where DynamoDB refuses the request. */
  private outcome(op: Exclude<WriteOp, { kind: 'check' }>, key: Key, current: Item | undefined): Item | undefined {
    switch (op.kind) {
      case 'put': {
        const item = copy(op.item);
        checkItem(item);
        return item;
      }
      case 'delete':
        return undefined;
      case 'update':
        return applyUpdate(key, current, op.update);
    }
  }

  private current(key: Key): Item | undefined {
    return this.rows.get(key.PK)?.get(key.SK)?.at(-1)?.item;
  }

  /** The items as of a sequence number: one partition of the table, or every item for an index. */
  private *candidates(index: IndexName | undefined, partition: string, asOf: number): Generator<Item> {
    if (index) {
      for (const key of this.indexMembers.get(`${index}\u0000${partition}`)?.values() ?? []) {
        const versions = this.rows.get(key.PK)?.get(key.SK);
        const item = versions && versionAt(versions, asOf);
        if (item) yield item;
      }
      return;
    }
    const partitions = [this.rows.get(partition) ?? new Map<string, Version[]>()];
    for (const rows of partitions) {
      for (const versions of rows.values()) {
        const item = versionAt(versions, asOf);
        if (item) yield item;
      }
    }
  }

  /** Records one item write (undefined: a delete) at the next sequence number, then prunes what fell out of history. */
  private store(key: Key, item: Item | undefined): void {
    this.sequence += 1;
    let partition = this.rows.get(key.PK);
    if (!partition) {
      partition = new Map();
      this.rows.set(key.PK, partition);
    }
    const versions = partition.get(key.SK) ?? [];
    versions.push({ seq: this.sequence, item });
    partition.set(key.SK, versions);
    if (item) {
      for (const index of INDEXES) {
        const value = item[KEY_ATTRIBUTES[index][0]];
        if (typeof value !== 'string') continue;
        const id = `${index}\u0000${value}`;
        let members = this.indexMembers.get(id);
        if (!members) {
          members = new Map();
          this.indexMembers.set(id, members);
        }
        members.set(`${key.PK}\u0000${key.SK}`, { PK: key.PK, SK: key.SK });
      }
    }
    this.journal.push({ PK: key.PK, SK: key.SK });
    this.prune();
  }

  /** Takes a key out of the index partitions its dropped versions had entries in and its kept versions do not. */
  private leaveIndexes(key: Key, dropped: readonly Version[], kept: readonly Version[]): void {
    for (const version of dropped) {
      const item = version.item;
      if (!item) continue;
      for (const index of INDEXES) {
        const attribute = KEY_ATTRIBUTES[index][0];
        const value = item[attribute];
        if (typeof value !== 'string' || kept.some((v) => v.item?.[attribute] === value)) continue;
        const id = `${index}\u0000${value}`;
        const members = this.indexMembers.get(id);
        if (!members) continue;
        members.delete(`${key.PK}\u0000${key.SK}`);
        if (members.size === 0) this.indexMembers.delete(id);
      }
    }
  }

  /**
   * Keeps what a read within the history window can ask for: per key, the versions newer than the window's start
   * plus the last one before it; a key deleted before the window's start is forgotten. Each write enters the journal
   * once and is pruned once, when it leaves the window, so the work is constant per write.
   */
  private prune(): void {
    const cutoff = this.sequence - this.history;
    while (
      this.journalHead < this.journal.length &&
      this.sequence - (this.journal.length - this.journalHead) < cutoff
    ) {
      const key = this.journal[this.journalHead]!;
      this.journalHead += 1;
      const partition = this.rows.get(key.PK);
      const versions = partition?.get(key.SK);
      if (!partition || !versions) continue;
      let keep = 0;
      for (let i = 0; i < versions.length; i += 1) if (versions[i]!.seq <= cutoff) keep = i;
      const dropped = versions.splice(0, keep);
      if (versions.length === 1 && versions[0]!.item === undefined && versions[0]!.seq <= cutoff) {
        partition.delete(key.SK);
        if (partition.size === 0) this.rows.delete(key.PK);
        dropped.push(...versions.splice(0));
      }
      this.leaveIndexes(key, dropped, versions);
    }
    // Drop the consumed head now and then, so the journal's array does not grow either.
    if (this.journalHead > 1024 && this.journalHead * 2 > this.journal.length) {
      this.journal.splice(0, this.journalHead);
      this.journalHead = 0;
    }
  }
}

/** The item as of a sequence number: the last version written at or before it. */
function versionAt(versions: readonly Version[], asOf: number): Item | undefined {
  for (let i = versions.length - 1; i >= 0; i -= 1) if (versions[i]!.seq <= asOf) return versions[i]!.item;
  return undefined;
}

/** Whether a sort key value meets a query's sort condition (every value when it has none). */
function sortRangeOf(sort: Query['sort']): (value: string) => boolean {
  return (value) => {
    if (!sort) return true;
    if ('between' in sort)
      return compareBytes(value, sort.between[0]) >= 0 && compareBytes(value, sort.between[1]) <= 0;
    if ('after' in sort) return compareBytes(value, sort.after) > 0;
    return compareBytes(value, sort.before) < 0;
  };
}

/** Refuses a query as DynamoDB does, with its messages. @throws a ValidationException */
function refuseInvalidQuery(
  query: Query,
  keys: {
    readonly pkName: string;
    readonly skName: string;
    readonly keyAttributes: readonly string[];
    readonly inSortRange: (value: string) => boolean;
  },
): void {
  const { pkName, skName, keyAttributes, inSortRange } = keys;
  const index = query.index;
  checkKeyValue(pkName, query.partition, MAX_PARTITION_BYTES);
  if (index && query.consistent) throw validation('Consistent reads are not supported on global secondary indexes');
  if (query.limit !== undefined && query.limit < 1) throw validation('Limit must be greater than or equal to 1');
  const sort = query.sort;
  if (sort && 'between' in sort && compareBytes(sort.between[0], sort.between[1]) > 0) {
    throw validation(
      'Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound',
    );
  }
  const start = query.start;
  if (start && keyAttributes.some((a) => typeof start[a] !== 'string'))
    throw validation('The provided starting key is invalid');
  const bounds = !sort ? [] : 'between' in sort ? [...sort.between] : 'after' in sort ? [sort.after] : [sort.before];
  if (bounds.some((b) => sizeProblem(skName, b, MAX_SORT_BYTES)))
    throw validation(
      'One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes',
    );
  if (start && (start[pkName] !== query.partition || !inSortRange(start[skName] as string)))
    throw validation('The provided starting key does not match the range key predicate');
  if (index && KEYS_ONLY.has(index)) {
    // A keys-only index cannot fetch other attributes from the table: DynamoDB refuses to project or filter on them.
    const outside = (attributes: readonly string[]) => attributes.filter((a) => !keyAttributes.includes(a));
    if (!query.countOnly && outside(query.attributes ?? []).length)
      throw validation(
        `One or more parameter values were invalid: Global secondary index ${index} does not project [${outside(query.attributes ?? []).join(', ')}]`,
      );
    if (query.filter && outside(attributesOf(query.filter)).length)
      throw validation(
        `One or more parameter values were invalid: Secondary index ${index} does not project one or more filter attributes: [${outside(attributesOf(query.filter)).join(', ')}]`,
      );
  }
}
