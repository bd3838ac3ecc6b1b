import type { Charge } from './meter.ts';

/** Per-partition limits DynamoDB enforces on one partition key value (table or index), whatever the table's mode. */
export interface PartitionLimits {
  readonly writeUnitsPerSecond: number;
  readonly readUnitsPerSecond: number;
}

export const DYNAMODB_PARTITION_LIMITS: PartitionLimits = { writeUnitsPerSecond: 1000, readUnitsPerSecond: 3000 };

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * The model of DynamoDB's hot-key throttling (DynamoDB Local enforces none): a token bucket per partition key value
 * and kind (read, write), refilled continuously at the limit and holding at most one second of it. An attempt is
 * admitted only when every partition it touches has the units it is expected to take; they are taken on admission
 * and corrected once the answer says what it really cost (a Query's size is only known then), so a bucket may go
 * below zero and refuse the next attempts until it refills, as DynamoDB does after a large read.
 *
 * Not modelled: adaptive capacity splitting a hot partition, burst credit beyond one second, table-level limits.
 */
export class PartitionLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Attempts refused, per partition: which key was hot. */
  readonly refusals = new Map<string, number>();

  constructor(
    private readonly limits: PartitionLimits = DYNAMODB_PARTITION_LIMITS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  private rate(kind: Charge['kind']): number {
    return kind === 'write' ? this.limits.writeUnitsPerSecond : this.limits.readUnitsPerSecond;
  }

  private bucket(charge: Charge): Bucket {
    const id = `${charge.kind}|${charge.partition}`;
    const now = this.now();
    const rate = this.rate(charge.kind);
    let bucket = this.buckets.get(id);
    if (!bucket) {
      bucket = { tokens: rate, at: now };
      this.buckets.set(id, bucket);
    } else {
      bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.at) / 1000) * rate);
      bucket.at = now;
    }
    return bucket;
  }

  /** Takes the planned units, or returns the partitions that lack them (then nothing is taken). */
  admit(planned: readonly Charge[]): string[] {
    const merged = merge(planned);
    const short = merged.filter((c) => this.bucket(c).tokens < c.units).map((c) => c.partition);
    if (short.length > 0) {
      for (const p of short) this.refusals.set(p, (this.refusals.get(p) ?? 0) + 1);
      return short;
    }
    for (const c of merged) this.bucket(c).tokens -= c.units;
    return [];
  }

  /** Corrects the buckets by what the attempt really cost compared with what was planned. */
  settle(planned: readonly Charge[], actual: readonly Charge[]): void {
    const delta = new Map<string, Charge>();
    for (const c of merge(actual)) delta.set(`${c.kind}|${c.partition}`, c);
    for (const c of merge(planned)) {
      const id = `${c.kind}|${c.partition}`;
      const a = delta.get(id);
      delta.set(id, { ...c, units: (a?.units ?? 0) - c.units });
    }
    for (const c of delta.values()) if (c.units !== 0) this.bucket(c).tokens -= c.units;
  }

  /** The hottest partitions by refusals, for the report. */
  hottest(limit = 3): { partition: string; refusals: number }[] {
    return [...this.refusals.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([partition, refusals]) => ({ partition, refusals }));
  }
}

function merge(charges: readonly Charge[]): Charge[] {
  const out = new Map<string, Charge>();
  for (const c of charges) {
    const id = `${c.kind}|${c.partition}`;
    const prev = out.get(id);
    out.set(id, prev ? { ...c, units: prev.units + c.units } : c);
  }
  return [...out.values()];
}
