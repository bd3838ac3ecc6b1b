import { TableOccupancyStore } from '../../shared/adapters/dynamodb/occupancy-store.ts';
import { leaseOfKey, type Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { Query, QueryPage, Table, TxVerdict, WriteOp, WriteResult } from '../../shared/adapters/dynamodb/table.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { LeaseItemPresence, type LeaseChange } from '../../shared/core/base/lease-change.ts';
import { SummaryMirror } from '../../shared/core/occupancy/summary-mirror.ts';
import { asIntFunction } from './int-functions.ts';

/** The lease addresses a write touches, read off its keys (LEASE#<pool>#<address>). */
function leaseKeysOf(ops: readonly WriteOp[]): { pool: string; address: string }[] {
  const out: { pool: string; address: string }[] = [];
  for (const op of ops) {
    const lease = leaseOfKey(String(op.kind === 'put' ? op.item.PK : op.key.PK));
    if (lease) out.push(lease);
  }
  return out;
}

/**
 * A table whose writes run the stream function's summary upkeep before they return: a stream with no lag, for tests
 * of the use cases that read utilization or the summary right after a write. The real path (a DynamoDB stream, the
 * poller, redelivery and reordering) has its own tests; the upkeep here is the same SummaryMirror, and it settles
 * each address from the lease item itself, so the state a change claims does not matter.
 */
export class FollowedTable implements Table {
  readonly name: string;
  private readonly mirror: SummaryMirror;
  private sequence = 0;
  /** Changes written but not yet applied; one batch runs at a time, taking everything pending (as a stream batch). */
  private pending: LeaseChange[] = [];
  private running: Promise<void> | undefined;

  /**
   * `lag`: lease changes the summary stays behind by (0: none). With a lag, a write returns at once and the upkeep
   * applies only the changes older than the last `lag`, as a stream that delivers late: the summary then shows
   * addresses free that are taken, which is what the allocator's near-full and "used up" decisions must survive.
   */
  constructor(
    readonly inner: Table,
    private readonly lag = 0,
  ) {
    this.name = inner.name;
    this.mirror = new SummaryMirror({ store: new TableOccupancyStore(inner), clock: systemClock });
  }

  get(key: Key): Promise<Item | undefined> {
    return this.inner.get(key);
  }

  batchGet(keys: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    return this.inner.batchGet(keys, attributes);
  }

  async write(op: WriteOp): Promise<WriteResult> {
    const result = await this.inner.write(op);
    if (result.ok) await this.follow([op]);
    return result;
  }

  async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const verdicts = await this.inner.transact(ops);
    if (!verdicts) await this.follow(ops);
    return verdicts;
  }

  query(query: Query): Promise<QueryPage> {
    return this.inner.query(query);
  }

  describe(): Promise<string> {
    return this.inner.describe();
  }

  /** Returns once the summary reflects these writes (a batch with other writers' changes may carry them). */
  private async follow(ops: readonly WriteOp[]): Promise<void> {
    const changes: LeaseChange[] = leaseKeysOf(ops).map(({ pool, address }) => ({
      id: String((this.sequence += 1)),
      pool,
      address,
      state: LeaseItemPresence.Held,
    }));
    if (changes.length === 0) return;
    this.pending.push(...changes);
    if (this.lag > 0) return this.catchUpTo(this.lag);
    const mine = new Set(changes.map((c) => c.id));
    for (let round = 0; this.pending.some((c) => mine.has(c.id)); round += 1) {
      if (round > 50) throw new Error('The test stream could not settle its lease changes in 50 batches.');
      if (!this.running) {
        this.running = this.applyBatch(this.pending.splice(0));
      }
      await this.running;
    }
  }

  /** Applies the pending changes older than the last `keep` (one batch at a time, as the stream function runs). */
  private async catchUpTo(keep: number): Promise<void> {
    while (!this.running && this.pending.length > keep) {
      this.running = this.applyBatch(this.pending.splice(0, this.pending.length - keep));
      await this.running;
    }
  }

  /** Applies one batch as the stream function would; its failed changes go back to the front of the queue. */
  private applyBatch(batch: typeof this.pending): Promise<void> {
    return asIntFunction('mirror', () => this.mirror.apply(batch))
      .then((result) => {
        const failed = new Set(result.failed);
        this.pending.unshift(...batch.filter((c) => failed.has(c.id)));
      })
      .finally(() => {
        this.running = undefined;
      });
  }
}
