/**
 * SimTable: DynamoDB as the simulator sees it. MemoryTable keeps the items and judges conditions, transactions and
 * queries by DynamoDB's rules; this engine around it adds what MemoryTable leaves out on purpose:
 *
 * - time: every call takes virtual time, drawn per call (LATENCY below, with its source);
 * - capacity: the buckets of quotas.ts (partitions, the on-demand ramp, the table-level quota, per table and per
 *   GSI); a call that would overdraw any bucket it draws on (a write: its items' partitions and the index partitions
 *   whose entries it changes, DynamoDB's GSI back-pressure) is throttled whole (ProvisionedThroughputExceeded, which
 *   SdkTable turns into NotReadyError). Units by DynamoDB's rules (capacity.ts);
 * - transactions in flight: a transaction holds its items from arrival to commit; another transaction touching one
 *   of them meanwhile is cancelled with TransactionConflict on that item, and a single write to one of them fails
 *   with TransactionConflictException, which it answers as SdkTable does: NotReadyError (DynamoDB's documented
 *   behaviour; DynamoDB Local serializes instead);
 * - eventually consistent reads (indexes, and table queries without ConsistentRead) behind the writes by a lag drawn
 *   per read, converted to MemoryTable's "writes not seen yet";
 * - the stream: every committed change of a lease item becomes a record (INSERT, MODIFY, REMOVE), in commit order;
 * - faults chosen by the run's fault plan: throttles, timeouts after which the write did or did not commit, and the
 *   caller's container dying right after its write committed.
 *
 * Each caller (a container) gets its own facade (`tableFor`), so a dead container's later calls never return, and
 * what each caller spent is counted apart.
 *
 * Without `quotas`, one partition per partition-key value and no table-level limit (quotas.ts PER_KEY, the closed-loop
 * projection's model); the simulator's scenarios pass AWS's defaults.
 */
import { NotReadyError } from '../shared/core/errors.ts';
import type { Item } from '../shared/adapters/dynamodb/codec.ts';
import type { Key } from '../shared/adapters/dynamodb/keys.ts';
import { translateError } from '../shared/adapters/dynamodb/sdk-table.ts';
import type { Query, QueryPage, Table, TxVerdict, WriteOp, WriteResult } from '../shared/adapters/dynamodb/table.ts';
import { MemoryTable, type Fault, type TableCall } from '../shared/adapters/memory/memory-table.ts';
import { indexEntries, itemBytes, queryReadUnits, readUnitsOf, sizing, writeUnitsOf, type Sizer } from './capacity.ts';
import { Prng } from './prng.ts';
import { PER_KEY, Throughput, type Quotas } from './quotas.ts';
import { Scheduler } from './scheduler.ts';

/**
 * Request latency as the caller sees it, lognormal per call (median, p99 in ms). Sources: DynamoDB's documentation
 * promises "single-digit millisecond" reads and writes in-region; AWS's published CloudWatch
 * SuccessfulRequestLatency figures for GetItem/PutItem in the same region are typically 2-5 ms median with a p99
 * around 10-20 ms; TransactWriteItems does a prepare and a commit round (two writes per item, which is also why it
 * costs twice the units), so about twice a write; a Query's time grows with the pages it reads. The Lambda-to-DynamoDB
 * hop adds under a millisecond. These are assumptions of the model, stated in SIMULATION.md.
 */
export const LATENCY = {
  get: { median: 3, p99: 12 },
  batchGet: { median: 4, p99: 15 },
  write: { median: 4, p99: 15 },
  transact: { median: 9, p99: 30 },
  query: { median: 5, p99: 20 },
  describe: { median: 2, p99: 8 },
} as const;

/**
 * How far behind an eventually consistent read is, lognormal (ms). DynamoDB: "changes to the table data are
 * propagated to the global secondary indexes within a fraction of a second, under normal conditions".
 */
export const INDEX_LAG = { median: 20, p99: 600 } as const;

/** A fault the plan injects into one call. */
export type CallFault =
  | { readonly kind: 'throttle' }
  | { readonly kind: 'timeout'; readonly committed: boolean }
  /** The write commits, then the caller's container dies before it sees the answer. */
  | { readonly kind: 'die' };

/** A caller of the table: a container (API, stream mirror, reconciler) or the harness. */
export interface Caller {
  readonly id: string;
  /** What the caller's spending is counted under ('api', 'mirror', 'reconciler', ...); a caller may switch it between calls. */
  role: string;
  alive: boolean;
}

/** One change of a lease item, as the stream delivers it. */
export interface StreamChange {
  readonly seq: number;
  readonly atMs: number;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly key: Key;
  /** True for DynamoDB's own TTL deletions. */
  readonly ttl: boolean;
}

/** What one role spent. */
export interface Spend {
  requests: number;
  throttled: number;
  conflicts: number;
  failedConditions: number;
  readUnits: number;
  writeUnits: number;
  indexWriteUnits: number;
  byMethod: Record<string, number>;
}

export function emptySpend(): Spend {
  return {
    requests: 0,
    throttled: 0,
    conflicts: 0,
    failedConditions: 0,
    readUnits: 0,
    writeUnits: 0,
    indexWriteUnits: 0,
    byMethod: {},
  };
}

export interface SimTableOptions {
  readonly scheduler: Scheduler;
  readonly rng: Prng;
  /** Decides the fault of each call (undefined: none). */
  readonly faults?: (call: {
    readonly method: string;
    readonly caller: Caller;
    readonly keys: readonly Key[];
  }) => CallFault | undefined;
  /** Milliseconds after which a caller gives up on a call (DYNAMODB_REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs: number;
  /** Multiplies every latency and the index's lag (a slow region, the sensitivity table, or 0 for a model check of counts only). */
  readonly latencyScale?: number;
  /** Capacity limits off (a model check of counts). */
  readonly unlimited?: boolean;
  /** DynamoDB's quotas and ramps (quotas.ts); PER_KEY when absent: one partition per key, no table-level limit. */
  readonly quotas?: Quotas;
  /**
   * A deliberately broken store, for the checker's own tests: rewrites the operations of each write before
   * MemoryTable sees them (e.g. drops a condition); an empty list skips the write and answers success.
   */
  readonly mutate?: (ops: readonly WriteOp[], caller: Caller) => WriteOp[];
  /** A planted bug (plants.ts): what a caller is told of a transaction's outcome (undefined: committed). */
  readonly misreport?: (verdicts: TxVerdict[] | undefined, caller: Caller) => TxVerdict[] | undefined;
  /** A deliberately broken store, for the checker's own tests: queries it picks are answered as if empty. */
  readonly hideQuery?: (query: Query) => boolean;
  /** Observes every committed item write (the invariant checker's commit log). */
  readonly onCommit?: (change: {
    readonly caller: Caller;
    readonly atMs: number;
    readonly key: Key;
    readonly before: Item | undefined;
    readonly after: Item | undefined;
  }) => void;
}

const THROTTLED = 'The address store is throttling requests; retry shortly.';
const TIMED_OUT = 'The address store did not answer in time; retry shortly.';

const keyId = (key: Key): string => `${key.PK}\u0000${key.SK}`;
const keyOfOp = (op: WriteOp): Key =>
  op.kind === 'put' ? { PK: op.item.PK as string, SK: op.item.SK as string } : { PK: op.key.PK, SK: op.key.SK };

function conflictError(): Error {
  const error = new Error('Transaction is ongoing for the item');
  error.name = 'TransactionConflictException';
  return error;
}

/** The shared engine: items, buckets, locks, the stream log and the counters. */
export class SimEngine {
  readonly memory: MemoryTable;
  /** The stream's records not yet dropped by its reader (`dropStream`), in commit order. */
  readonly stream: StreamChange[] = [];
  readonly spend = new Map<string, Spend>();
  /** The current claims, leases, ranges, bitmaps and summary chunks (the checker's view, kept from the commit log, no copies). */
  readonly state = new Map<string, Item>();
  /** DynamoDB's throughput rules as the account meets them (quotas.ts). */
  readonly throughput: Throughput;
  /** Refusals per bucket (`partition|write|GSI1|<start>`, `partition|read|table|<start>`, `ramp|table`, `quota|write|GSI1`): what was short. */
  readonly throttledBy = new Map<string, number>();
  /** Keys charged in refused calls, per scope and kind (`table|write`): what `describeBucket` names a partition by. */
  private readonly chargedKeys = new Map<string, Set<string>>();
  /** Items held by transactions in flight. */
  private readonly locks = new Set<string>();
  /** Virtual time of each item write MemoryTable stored, oldest first (for lag in writes). */
  private readonly writeTimes: number[] = [];
  private writeTimesHead = 0;
  private pendingLag = 0;
  private pendingFault: Fault | undefined;
  private streamSeq = 0;
  private readonly latencyRng: Prng;
  private readonly lagRng: Prng;
  /**
   * Sizes of stored items, by identity: MemoryTable replaces an item on a write and never changes it, so a stored
   * object's size is fixed. A consistent read of go-ipam's ~390 KB parent document was sized per call (a pass over
   * every character), more than half the CPU of a cell whose reads are mostly refused for capacity.
   */
  private readonly storedSizes = new WeakMap<Item, number>();

  constructor(private readonly options: SimTableOptions) {
    this.memory = new MemoryTable({
      name: 'sim',
      history: 50_000,
      indexLag: () => this.pendingLag,
      faults: (_call: TableCall) => this.pendingFault,
    });
    this.throughput = new Throughput(options.quotas ?? PER_KEY);
    this.latencyRng = options.rng.fork('latency');
    this.lagRng = options.rng.fork('lag');
  }

  get now(): number {
    return this.options.scheduler.now;
  }

  /** Stream records written so far, dropped ones included. */
  get streamRecords(): number {
    return this.streamSeq;
  }

  /** Drops the first `count` records of `stream`, which its reader is done with: a long run keeps only what is unread. */
  dropStream(count: number): void {
    this.stream.splice(0, count);
  }

  tableFor(caller: Caller): Table {
    return new SimTable(this, caller);
  }

  spendOf(role: string): Spend {
    let spend = this.spend.get(role);
    if (!spend) {
      spend = emptySpend();
      this.spend.set(role, spend);
    }
    return spend;
  }

  /** A call's virtual duration. */
  latency(method: keyof typeof LATENCY): number {
    const { median, p99 } = LATENCY[method];
    return this.latencyRng.lognormal(median, p99) * (this.options.latencyScale ?? 1);
  }

  /** Waits `ms`; a dead caller never wakes (its container is gone, and so is everything it was doing). */
  async pass(caller: Caller, ms: number): Promise<void> {
    await this.options.scheduler.sleep(ms);
    if (!caller.alive) await new Promise<never>(() => undefined);
  }

  fault(method: string, caller: Caller, keys: readonly Key[]): CallFault | undefined {
    return this.options.faults?.({ method, caller, keys });
  }

  timeoutMs(): number {
    return this.options.requestTimeoutMs;
  }

  /**
   * Takes `units` from every bucket the charges draw on (quotas.ts: partitions, the ramp, the table-level quota), all
   * or none; false when one of them is short (throttled), counted under that bucket in `throttledBy`.
   */
  take(
    charges: readonly { readonly partition: string; readonly units: number; readonly kind: 'read' | 'write' }[],
  ): boolean {
    if (this.options.unlimited) return true;
    const short = this.throughput.take(
      charges.map((c) => {
        const bar = c.partition.indexOf('|');
        return { scope: c.partition.slice(0, bar), key: c.partition.slice(bar + 1), kind: c.kind, units: c.units };
      }),
      this.now,
    );
    if (short === undefined) return true;
    this.throttledBy.set(short, (this.throttledBy.get(short) ?? 0) + 1);
    if (short.startsWith('partition|'))
      for (const c of charges) {
        const bar = c.partition.indexOf('|');
        const id = `${c.partition.slice(0, bar)}|${c.kind}`;
        let keys = this.chargedKeys.get(id);
        if (!keys) this.chargedKeys.set(id, (keys = new Set()));
        if (keys.size < 10_000) keys.add(c.partition.slice(bar + 1));
      }
    return false;
  }

  /**
   * A refused bucket in words: `partition|write|table|<start>` as the partition holding the keys that were charged
   * there (`write units of the table's partition holding BENCHMAP#p`), the quota and ramp buckets as they are.
   */
  describeBucket(id: string): string {
    const [kind, what, scope, start] = id.split('|');
    if (kind !== 'partition' || scope === undefined || start === undefined) return id;
    const keys = [...(this.chargedKeys.get(`${scope}|${what}`) ?? [])]
      .filter((k) => this.throughput.holds(scope, Number(start), k))
      .sort();
    const shown = keys.slice(0, 3).join(', ') + (keys.length > 3 ? ` and ${keys.length - 3} more` : '');
    return `${what} units of a ${scope === 'table' ? 'table' : scope} partition (${shown || 'no key seen'})`;
  }

  isLocked(keys: readonly Key[]): boolean[] {
    return keys.map((k) => this.locks.has(keyId(k)));
  }

  lock(keys: readonly Key[]): void {
    for (const k of keys) this.locks.add(keyId(k));
  }

  unlock(keys: readonly Key[]): void {
    for (const k of keys) this.locks.delete(keyId(k));
  }

  /**
   * Current items, read without cost, lag or faults. As stored, not copied (MemoryTable.stored): they go to the commit
   * log and the checker's `state`, which only read them, and MemoryTable replaces an item on a write, never changes it.
   */
  async peek(keys: readonly Key[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    try {
      for (const item of await this.memory.stored(keys))
        found.set(keyId({ PK: item.PK as string, SK: item.SK as string }), item);
    } catch {
      // An invalid key: the real call refuses it.
    }
    return found;
  }

  /** A call's sizer (capacity.ts `sizing`) that knows the stored items' sizes taken so far. */
  sizer(): Sizer {
    return sizing((item) => this.storedSizes.get(item));
  }

  /** The size of an item as stored (one MemoryTable gave out, uncopied), remembered for as long as it is stored. */
  storedBytes(item: Item): number {
    let bytes = this.storedSizes.get(item);
    if (bytes === undefined) {
      bytes = itemBytes(item);
      this.storedSizes.set(item, bytes);
    }
    return bytes;
  }

  /** Runs one MemoryTable call with a fault (or none) and a read lag (in writes) set for it alone. */
  async inner<T>(call: () => Promise<T>, options: { fault?: Fault; lagMs?: number } = {}): Promise<T> {
    this.pendingFault = options.fault;
    this.pendingLag = options.lagMs ? this.writesSince(this.now - options.lagMs) : 0;
    const promise = call();
    this.pendingFault = undefined;
    this.pendingLag = 0;
    return promise;
  }

  hidden(query: Query): boolean {
    return this.options.hideQuery?.(query) ?? false;
  }

  mutate(ops: readonly WriteOp[], caller: Caller): readonly WriteOp[] {
    return this.options.mutate ? this.options.mutate(ops, caller) : ops;
  }

  misreport(verdicts: TxVerdict[] | undefined, caller: Caller): TxVerdict[] | undefined {
    return this.options.misreport ? this.options.misreport(verdicts, caller) : verdicts;
  }

  /** A draw of how far behind an eventually consistent read is. */
  drawLag(): number {
    return this.lagRng.lognormal(INDEX_LAG.median, INDEX_LAG.p99) * (this.options.latencyScale ?? 1);
  }

  /** Records committed item writes: lag bookkeeping, stream records of leases, the checker's log. */
  committed(
    caller: Caller,
    writes: readonly { key: Key; before: Item | undefined; after: Item | undefined }[],
    ttl = false,
  ): void {
    const now = this.now;
    for (const w of writes) {
      this.writeTimes.push(now);
      const entity = (w.after ?? w.before)?.entity;
      if (entity === 'claim' || entity === 'lease' || entity === 'range' || entity === 'bitmap' || entity === 'chunk') {
        if (w.after) this.state.set(keyId(w.key), w.after);
        else this.state.delete(keyId(w.key));
      }
      if (w.key.PK.startsWith('LEASE#') && (w.before || w.after)) {
        this.streamSeq += 1;
        const eventName = !w.after ? 'REMOVE' : w.before ? 'MODIFY' : 'INSERT';
        this.stream.push({ seq: this.streamSeq, atMs: now, eventName, key: w.key, ttl });
      }
      this.options.onCommit?.({ caller, atMs: now, key: w.key, before: w.before, after: w.after });
    }
    if (this.writeTimesHead > 4096 && this.writeTimesHead * 2 > this.writeTimes.length) {
      this.writeTimes.splice(0, this.writeTimesHead);
      this.writeTimesHead = 0;
    }
  }

  /**
   * DynamoDB's TTL deletion of items whose `ttl` passed before `nowSeconds`. Nothing in the simulator calls it yet:
   * the reconciler deletes what it must first, and DynamoDB's own deletion (days late) is not simulated.
   */
  async expireTtl(nowSeconds: number): Promise<number> {
    const harness: Caller = { id: 'dynamodb-ttl', role: 'ttl', alive: true };
    const before = this.memory.items().filter((item) => typeof item.ttl === 'number' && item.ttl <= nowSeconds);
    const deleted = this.memory.expireTtl(nowSeconds);
    const byId = new Map(before.map((item) => [keyId({ PK: item.PK as string, SK: item.SK as string }), item]));
    this.committed(
      harness,
      deleted.map((key) => ({ key, before: byId.get(keyId(key)), after: undefined })),
      true,
    );
    return deleted.length;
  }

  /** How many item writes happened after `sinceMs` (a read `lag` ms behind does not see them). */
  private writesSince(sinceMs: number): number {
    let lo = this.writeTimesHead;
    let hi = this.writeTimes.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.writeTimes[mid]! > sinceMs) hi = mid;
      else lo = mid + 1;
    }
    // Keep the window bounded: entries older than the longest lag asked for are no longer needed.
    const keepFrom = Math.max(this.writeTimesHead, this.writeTimes.length - 50_000);
    this.writeTimesHead = keepFrom;
    return this.writeTimes.length - lo;
  }
}

/** One caller's view of the engine: the Table port the caller's stores write through. */
export class SimTable implements Table {
  readonly name = 'sim';

  constructor(
    private readonly engine: SimEngine,
    private readonly caller: Caller,
  ) {}

  private spend(method: string): Spend {
    const spend = this.engine.spendOf(this.caller.role);
    spend.requests += 1;
    spend.byMethod[method] = (spend.byMethod[method] ?? 0) + 1;
    return spend;
  }

  /** The common path of a read: fault, latency, capacity, then MemoryTable at the call's middle. */
  private async read<T>(
    method: 'get' | 'batchGet' | 'query' | 'describe',
    keys: readonly Key[],
    units: (result: T) => { partition: string; units: number }[],
    run: (lagMs: number) => Promise<T>,
    eventual: boolean,
  ): Promise<T> {
    const spend = this.spend(method);
    const fault = this.engine.fault(method, this.caller, keys);
    const total = this.engine.latency(method);
    await this.engine.pass(this.caller, total / 2);
    if (fault?.kind === 'throttle') {
      spend.throttled += 1;
      await this.engine.pass(this.caller, total / 2);
      throw new NotReadyError(THROTTLED);
    }
    const result = await this.engine.inner(() => run(eventual ? this.engine.drawLag() : 0));
    const charges = units(result).map((c) => ({ ...c, kind: 'read' as const }));
    if (!this.engine.take(charges)) {
      spend.throttled += 1;
      await this.engine.pass(this.caller, total / 2);
      throw new NotReadyError(THROTTLED);
    }
    spend.readUnits += charges.reduce((sum, c) => sum + c.units, 0);
    if (fault?.kind === 'timeout') {
      await this.engine.pass(this.caller, this.engine.timeoutMs() - total / 2);
      throw new NotReadyError(TIMED_OUT);
    }
    await this.engine.pass(this.caller, total / 2);
    return result;
  }

  get(key: Key): Promise<Item | undefined> {
    // Sized as stored (the same bytes as the copy it answers with), so a large item is sized once, not per read.
    let stored: Item | undefined;
    return this.read(
      'get',
      [key],
      () => [{ partition: `table|${key.PK}`, units: readUnitsOf(stored ? this.engine.storedBytes(stored) : 0, true) }],
      async () => {
        stored = (await this.engine.peek([key])).get(keyId(key));
        return this.engine.memory.get(key);
      },
      false,
    );
  }

  batchGet(keyList: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    // Units are charged on the whole stored item, projections notwithstanding (DynamoDB's rule).
    return this.read(
      'batchGet',
      keyList,
      () => keyList.map((k) => ({ partition: `table|${k.PK}`, units: 1 })),
      () => this.engine.memory.batchGet(keyList, attributes),
      false,
    );
  }

  query(query: Query): Promise<QueryPage> {
    const eventual = query.index !== undefined || !query.consistent;
    return this.read(
      'query',
      [],
      (page) => [{ partition: `${query.index ?? 'table'}|${query.partition}`, units: queryReadUnits(page, !eventual) }],
      (lagMs) =>
        this.engine.hidden(query)
          ? Promise.resolve({ items: [], count: 0, scanned: 0 })
          : this.engine.inner(() => this.engine.memory.query(query), { lagMs }),
      eventual,
    );
  }

  describe(): Promise<string> {
    return this.read(
      'describe',
      [],
      () => [],
      () => this.engine.memory.describe(),
      false,
    );
  }

  async write(op: WriteOp): Promise<WriteResult> {
    const spend = this.spend('write');
    const key = keyOfOp(op);
    const fault = this.engine.fault('write', this.caller, [key]);
    const total = this.engine.latency('write');
    await this.engine.pass(this.caller, total / 2);
    if (fault?.kind === 'throttle') return this.refuse(spend, total, THROTTLED);
    const before = (await this.engine.peek([key])).get(keyId(key));
    const after =
      op.kind === 'put' ? op.item : op.kind === 'update' ? { ...(before ?? key), ...(op.update.set ?? {}) } : undefined;
    const size = this.engine.sizer();
    const units = writeUnitsOf(before, after, size);
    // The table partition and the index partitions the write will change: a short index throttles the write too
    // (DynamoDB's GSI back-pressure).
    const charges = [
      { partition: `table|${key.PK}`, units, kind: 'write' as const },
      ...indexEntries(before, after, size).map((c) => ({ ...c, kind: 'write' as const })),
    ];
    if (!this.engine.take(charges)) return this.refuse(spend, total, THROTTLED);
    if (this.engine.isLocked([key])[0]) {
      spend.conflicts += 1;
      await this.engine.pass(this.caller, total / 2);
      // What SdkTable makes of DynamoDB's TransactionConflictException on a single write: retryable, nothing applied.
      throw translateError(conflictError());
    }
    const [mutated] = this.engine.mutate([op], this.caller);
    const applied = fault?.kind !== 'timeout' || fault.committed;
    let result: WriteResult = { ok: false };
    if (applied) {
      result = mutated ? await this.engine.inner(() => this.engine.memory.write(mutated)) : { ok: true };
      spend.writeUnits += units;
      if (result.ok) {
        const stored = (await this.engine.peek([key])).get(keyId(key));
        this.indexCharges(spend, [{ before, after: stored }], size);
        this.engine.committed(this.caller, [{ key, before, after: stored }]);
      } else spend.failedConditions += 1;
    }
    return this.finish(fault, total, result);
  }

  async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    // An empty request is refused up front (ValidationException), before a broken store's mutate could skip it.
    if (ops.length === 0) return this.engine.memory.transact(ops);
    const spend = this.spend('transact');
    const keys = ops.map(keyOfOp);
    const fault = this.engine.fault('transact', this.caller, keys);
    const total = this.engine.latency('transact');
    await this.engine.pass(this.caller, total / 4);
    if (fault?.kind === 'throttle') return this.refuse(spend, total, THROTTLED);
    const locked = this.engine.isLocked(keys);
    if (locked.some(Boolean)) {
      // DynamoDB cancels a transaction that meets another in flight on one of its items (TransactionConflict).
      spend.conflicts += 1;
      await this.engine.pass(this.caller, (total * 3) / 4);
      return locked.map((l): TxVerdict => (l ? { code: 'TransactionConflict' } : { code: 'None' }));
    }
    const beforeNow = await this.engine.peek(keys);
    const size = this.engine.sizer();
    const befores = keys.map((key) => beforeNow.get(keyId(key)));
    // Each op's item after it (a check's: the item as it is), sized once for the table's units and the index entries.
    const afters = ops.map((op, i) =>
      op.kind === 'put'
        ? op.item
        : op.kind === 'update'
          ? { ...(befores[i] ?? keys[i]!), ...(op.update.set ?? {}) }
          : op.kind === 'check'
            ? befores[i]
            : undefined,
    );
    const perPartition = ops.map((_, i) => ({
      partition: `table|${keys[i]!.PK}`,
      units: 2 * writeUnitsOf(befores[i], afters[i], size),
      kind: 'write' as const,
    }));
    const units = perPartition.reduce((sum, c) => sum + c.units, 0);
    const indexCharges = ops.flatMap((op, i) =>
      op.kind === 'check'
        ? []
        : indexEntries(befores[i], afters[i], size).map((c) => ({ ...c, kind: 'write' as const })),
    );
    if (!this.engine.take([...perPartition, ...indexCharges])) return this.refuse(spend, total, THROTTLED);
    // Prepare and commit: the items are held for the middle half of the call.
    this.engine.lock(keys);
    try {
      await this.engine.pass(this.caller, total / 2);
    } finally {
      this.engine.unlock(keys);
    }
    spend.writeUnits += units;
    const applied = fault?.kind !== 'timeout' || fault.committed;
    let verdicts: TxVerdict[] | undefined = ops.map(() => ({ code: 'None' }));
    if (applied) {
      const before = await this.engine.peek(keys);
      const mutated = this.engine.mutate(ops, this.caller);
      verdicts = mutated.length ? await this.engine.inner(() => this.engine.memory.transact(mutated)) : undefined;
      if (verdicts === undefined) {
        const after = await this.engine.peek(keys);
        // The writes that happened: a broken store (mutate) may have dropped some of the asked ones.
        const written = new Set(mutated.filter((op) => op.kind !== 'check').map((op) => keyId(keyOfOp(op))));
        const writes = ops.flatMap((op, i) =>
          op.kind === 'check' || !written.has(keyId(keys[i]!))
            ? []
            : [{ key: keys[i]!, before: before.get(keyId(keys[i]!)), after: after.get(keyId(keys[i]!)) }],
        );
        this.indexCharges(spend, writes, size);
        this.engine.committed(this.caller, writes);
      } else spend.failedConditions += 1;
    }
    return this.finish(fault, (total * 3) / 4, this.engine.misreport(verdicts, this.caller));
  }

  /** Index entries the committed writes changed (their partitions were charged when the write was admitted). */
  private indexCharges(
    spend: Spend,
    writes: readonly { before: Item | undefined; after: Item | undefined }[],
    size: Sizer,
  ): void {
    spend.indexWriteUnits += writes
      .flatMap((w) => indexEntries(w.before, w.after, size))
      .reduce((sum, c) => sum + c.units, 0);
  }

  private async refuse(spend: Spend, total: number, message: string): Promise<never> {
    spend.throttled += 1;
    await this.engine.pass(this.caller, total / 2);
    throw new NotReadyError(message);
  }

  /** The answer leg: lost (timeout), never sent (the container died), or returned after the rest of the latency. */
  private async finish<T>(fault: CallFault | undefined, rest: number, result: T): Promise<T> {
    if (fault?.kind === 'die') {
      this.caller.alive = false;
      await new Promise<never>(() => undefined);
    }
    if (fault?.kind === 'timeout') {
      await this.engine.pass(this.caller, Math.max(0, this.engine.timeoutMs() - rest));
      throw new NotReadyError(TIMED_OUT);
    }
    await this.engine.pass(this.caller, rest);
    return result;
  }
}

/**
 * A SimTable outside a simulation, for the Table contract tests: one caller, no faults, no capacity limits; each call
 * runs the engine's virtual time until it settles.
 */
export function standaloneSimTable(seed = 1): Table {
  const scheduler = new Scheduler();
  const engine = new SimEngine({ scheduler, rng: new Prng(seed), requestTimeoutMs: 3000, unlimited: true });
  const table = engine.tableFor({ id: 'contract', role: 'contract', alive: true });
  const drive = async <T>(call: () => Promise<T>): Promise<T> => {
    let settled = false;
    const running = call();
    running.then(
      () => (settled = true),
      () => (settled = true),
    );
    while (!settled) await scheduler.runUntil(scheduler.now + 1000);
    return running;
  };
  return {
    name: table.name,
    get: (key) => drive(() => table.get(key)),
    batchGet: (keys, attributes) => drive(() => table.batchGet(keys, attributes)),
    write: (op) => drive(() => table.write(op)),
    transact: (ops) => drive(() => table.transact(ops)),
    query: (query) => drive(() => table.query(query)),
    describe: () => drive(() => table.describe()),
  };
}
