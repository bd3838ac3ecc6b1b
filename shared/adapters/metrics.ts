import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricsConfig } from '../config.ts';
import type { ErrorCode } from '../core/errors.ts';
import type { ReconcileReport } from '../core/reconciler/reconcile.ts';
import type { Crossing, Observation } from '../core/occupancy/exhaustion.ts';

/** How an address was asked for: a named address (static) or any free one (dynamic). */
export const AllocationScope = { Static: 'static', Dynamic: 'dynamic' } as const;
export type AllocationScope = (typeof AllocationScope)[keyof typeof AllocationScope];

/** Metric names, as they appear in CloudWatch under the namespace (config.metrics: POWERTOOLS_METRICS_NAMESPACE, `ipam` by default). */
export const MetricName = {
  /** Per range (dimensions Pool, Range), every run, idle ranges included. */
  RangeSize: 'RangeSize',
  RangeUsed: 'RangeUsed',
  RangeFree: 'RangeFree',
  /** Per repair kind (dimension Kind = the event reason), every run, zeros included so alarms see data. */
  Repairs: 'Repairs',
  /** Per run (no dimension beyond service). */
  ReconcileErrors: 'ReconcileErrors',
  ReconcileIncomplete: 'ReconcileIncomplete',
  SweepChecked: 'SweepChecked',
  /**
   * Per pool (dimension Pool), every run: the address history's lag, the stream function's delay (ms) on the last
   * batch that moved the pool's completeness mark (its processing time minus the records' time; DynamoDB stamps
   * records to the second). A pool whose leases do not change keeps its last value.
   */
  HistoryLag: 'HistoryLag',
  /**
   * From the stream function, per batch: stream records it handed back for retry (a bitmap or summary chunk write
   * failed). The mapping retries them; past its retries it skips them (MirrorFailureQueue), so a steady count here is
   * the warning before that.
   */
  MirrorRecordsFailed: 'MirrorRecordsFailed',
  /** From the API (dimension Scope; errors also Code). */
  Allocations: 'Allocations',
  AllocationErrors: 'AllocationErrors',
  Collisions: 'Collisions',
  /**
   * From the stream function (dimensions Pool, Family), on every batch that changed the pool's leases: the share of
   * the family's space free, in percent. Alarm on it per pool (docs/deploy.md, "Warnings before a pool runs out").
   */
  PoolFreePercent: 'PoolFreePercent',
  /** From the stream function (dimensions Pool, Family, Direction): each threshold crossed, once (the same as the pool's events). */
  PoolThresholdCrossings: 'PoolThresholdCrossings',
} as const;

/** CloudWatch takes doubles; counts beyond 2^53 (IPv6) are approximated, which is what a graph needs. */
const count = (value: bigint | number): number => Number(value);

/**
 * The service's CloudWatch metrics, as embedded metric format (EMF) lines on stdout, through Powertools. One
 * instance per container; each `publish*`/`flush` call writes and clears what was added.
 *
 * From the API (the claim route calls these, shared/adapters/http/routes.ts):
 *
 *   const metrics = IpamMetrics.create(config.metrics);
 *   metrics.allocated('dynamic');                  // after a claim got its addresses
 *   metrics.failed('static', error.code);          // when an allocation was refused (AlreadyAllocated, RangeFull...)
 *   metrics.collided('dynamic', 3);                // lost conditional writes before the allocation committed
 *   metrics.flush();                               // once per request (or Powertools' logMetrics middy middleware
 *                                                  // on metrics.powertools)
 */
export class IpamMetrics {
  constructor(readonly powertools: Metrics) {}

  /** Namespace and service as shared/config.ts read them (POWERTOOLS_METRICS_NAMESPACE / POWERTOOLS_SERVICE_NAME). */
  static create(options: MetricsConfig): IpamMetrics {
    return new IpamMetrics(new Metrics({ namespace: options.namespace, serviceName: options.serviceName }));
  }

  /** One allocation that committed. */
  allocated(scope: AllocationScope): void {
    this.single(MetricName.Allocations, 1, { Scope: scope });
  }

  /** One allocation refused with a domain error code. */
  failed(scope: AllocationScope, code: ErrorCode): void {
    this.single(MetricName.AllocationErrors, 1, { Scope: scope, Code: code });
  }

  /** Conditional writes an allocation lost to other writers before it committed (or gave up). */
  collided(scope: AllocationScope, collisions: number): void {
    if (collisions > 0) this.single(MetricName.Collisions, collisions, { Scope: scope });
  }

  /** Writes what was added since the last flush. */
  flush(): void {
    if (this.powertools.hasStoredMetrics()) this.powertools.publishStoredMetrics();
  }

  /** A reconciler run: utilization per range, repairs per kind, and the run's own health. */
  publishRun(report: ReconcileReport): void {
    for (const u of report.utilization) {
      this.powertools.addDimensions({ Pool: u.pool, Range: u.range });
      this.powertools.addMetric(MetricName.RangeSize, MetricUnit.Count, count(u.size));
      this.powertools.addMetric(MetricName.RangeUsed, MetricUnit.Count, count(u.used));
      this.powertools.addMetric(MetricName.RangeFree, MetricUnit.Count, count(u.free));
      this.powertools.publishStoredMetrics();
    }
    for (const [kind, n] of Object.entries(report.repairs)) this.single(MetricName.Repairs, n, { Kind: kind });
    this.powertools.addMetric(MetricName.ReconcileErrors, MetricUnit.Count, report.errors.length);
    this.powertools.addMetric(MetricName.ReconcileIncomplete, MetricUnit.Count, report.complete ? 0 : 1);
    this.powertools.addMetric(MetricName.SweepChecked, MetricUnit.Count, report.sweep.checked);
    this.powertools.publishStoredMetrics();
    for (const [pool, lagMs] of Object.entries(report.history.lagMs))
      this.single(MetricName.HistoryLag, lagMs, { Pool: pool }, MetricUnit.Milliseconds);
  }

  /** The stream function's count of records handed back for retry in one batch (zeros included, so alarms see data). */
  publishMirror(failed: number): void {
    this.flush();
    this.powertools.addMetric(MetricName.MirrorRecordsFailed, MetricUnit.Count, failed);
    this.powertools.publishStoredMetrics();
  }

  /** What the stream function's exhaustion checks read and decided in one batch. */
  publishExhaustion(observed: readonly Observation[], crossings: readonly Crossing[]): void {
    for (const o of observed)
      this.single(MetricName.PoolFreePercent, o.freePercent, { Pool: o.pool, Family: o.family }, MetricUnit.Percent);
    for (const c of crossings)
      this.single(MetricName.PoolThresholdCrossings, 1, { Pool: c.pool, Family: c.family, Direction: c.direction });
  }

  /** One metric under its own dimensions, written at once (dimensions differ per line in EMF). */
  private single(
    name: string,
    value: number,
    dimensions: Record<string, string>,
    unit: (typeof MetricUnit)[keyof typeof MetricUnit] = MetricUnit.Count,
  ): void {
    this.flush();
    this.powertools.addDimensions(dimensions);
    this.powertools.addMetric(name, unit, value);
    this.powertools.publishStoredMetrics();
  }
}
