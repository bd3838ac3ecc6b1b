import type { TransactWriteItemsCommandInput, AttributeValue } from '@aws-sdk/client-dynamodb';
import { leaseOfKey } from '../../shared/adapters/dynamodb/keys.ts';
import { LeaseItemPresence, type LeaseChange } from '../../shared/core/base/lease-change.ts';
import { usageBetween, type Usage } from './meter.ts';

/** Where a bench client reports the lease keys of each write that succeeded. */
export interface WriteTap {
  listener?: (leases: readonly { pool: string; address: string }[]) => void;
}

type Keyed = { Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue> } | undefined;

const leaseOf = (keyed: Keyed): { pool: string; address: string } | undefined =>
  leaseOfKey((keyed?.Key ?? keyed?.Item)?.PK?.S);

/** The lease items a successful write touched, read off its input. */
export function leaseWritesOf(op: string, input: unknown): { pool: string; address: string }[] {
  const found: ({ pool: string; address: string } | undefined)[] = [];
  if (op === 'TransactWriteItems') {
    for (const t of (input as TransactWriteItemsCommandInput).TransactItems ?? [])
      found.push(leaseOf(t.Put), leaseOf(t.Delete), leaseOf(t.Update));
  } else if (op === 'BatchWriteItem') {
    const requests = Object.values(
      (input as { RequestItems?: Record<string, { PutRequest?: Keyed; DeleteRequest?: Keyed }[]> }).RequestItems ?? {},
    ).flat();
    for (const r of requests) found.push(leaseOf(r.PutRequest), leaseOf(r.DeleteRequest));
  } else if (op === 'PutItem' || op === 'DeleteItem' || op === 'UpdateItem') {
    found.push(leaseOf(input as Keyed));
  }
  return found.filter((f): f is { pool: string; address: string } => f !== undefined);
}

/** What the feed hands its batches to: the stream function's projections. */
export interface FeedTarget {
  apply(changes: readonly LeaseChange[]): Promise<{ readonly failed: readonly string[] }>;
}

/**
 * The benchmark's stand-in for a DynamoDB stream and its event source mapping. DynamoDB Local's own stream slows
 * every write down as records pile up (it looks the stream up on each write), which would skew the comparison, so
 * the bench clients report the lease keys of each write that succeeded and this feed delivers them as a stream
 * would: in order, in batches of up to `batchSize`, polled every `pollMs` (Lambda polls a shard about 4 times a
 * second), failed changes delivered again. Redelivery is harmless because the summary settles each address from
 * its lease item. Writes the bench could not see (an SDK retry that committed) are not in it: the reconciler's
 * repair is what catches those in production.
 */
export class StreamFeed {
  private readonly pending: LeaseChange[] = [];
  private sequence = 0;
  private timer: NodeJS.Timeout | undefined;
  private busy: Promise<void> = Promise.resolve();
  /** Records delivered and batches run, for the report; lag is from a write's report to the end of its batch. */
  readonly stats = { records: 0, batches: 0, lagMs: [] as number[] };
  private readonly seenAt = new Map<string, number>();

  constructor(
    private readonly target: FeedTarget,
    private readonly options: { pollMs?: number; batchSize?: number } = {},
  ) {}

  /** Queues the lease changes of one write. */
  push(leases: readonly { pool: string; address: string }[]): void {
    const now = performance.now();
    for (const { pool, address } of leases) {
      const id = String((this.sequence += 1));
      this.seenAt.set(id, now);
      this.pending.push({ id, pool, address, state: LeaseItemPresence.Held });
    }
  }

  /** One batch per poll, as the event source mapping invokes the function once per shard per poll. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.busy = this.busy.then(() => this.deliverOne());
    }, this.options.pollMs ?? 250);
  }

  /** Delivers everything queued so far (outside a measurement: after a pre-fill or an undo). */
  async drain(): Promise<void> {
    await this.busy;
    for (let round = 0; this.pending.length > 0; round += 1) {
      if (round > 2000)
        throw new Error(`stream feed: ${this.pending.length} changes still pending after 2,000 batches`);
      await this.deliverOne();
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.busy;
  }

  private async deliverOne(): Promise<void> {
    if (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.options.batchSize ?? 100);
      let failed: ReadonlySet<string>;
      try {
        failed = new Set((await this.target.apply(batch)).failed);
      } catch {
        failed = new Set(batch.map((c) => c.id));
      }
      this.stats.batches += 1;
      const now = performance.now();
      for (const change of batch) {
        if (failed.has(change.id)) continue;
        this.stats.records += 1;
        const at = this.seenAt.get(change.id);
        if (at !== undefined) this.stats.lagMs.push(now - at);
        this.seenAt.delete(change.id);
      }
      // The mapping retries from the first failed record: put the failed ones back in front, in order.
      const again = batch.filter((c) => failed.has(c.id));
      if (again.length) this.pending.unshift(...again);
    }
  }
}

/** The stream function's cost over a window, per allocation (empty for a strategy that runs none). */
export function streamShare(
  before: Usage | undefined,
  after: Usage | undefined,
  allocations: number,
): Record<string, number> {
  if (!before || !after) return {};
  const d = usageBetween(before, after);
  const per = (n: number) => Math.round((n / Math.max(1, allocations)) * 1000) / 1000;
  return {
    streamRequestsPerAllocation: per(d.requests),
    streamWriteUnitsPerAllocation: per(d.writeUnits + d.indexWriteUnits),
    streamReadUnitsPerAllocation: per(d.readUnits),
  };
}
