import type { ReconcilerConfig } from '../config.ts';
import type { ReconcileSettings } from '../core/reconciler/plan.ts';
import { reconcile, type ReconcileDeps, type ReconcileReport } from '../core/reconciler/reconcile.ts';
import type { Pause } from '../core/reconciler/run.ts';
import type { Deps } from '../core/use-cases/deps.ts';
import type { IpamMetrics } from './metrics.ts';

/** The reconciler's settings from the validated configuration. */
export function settingsOf(config: ReconcilerConfig): ReconcileSettings {
  return {
    expiredClaimGraceMs: config.expiredClaimGraceSeconds * 1000,
    orphanLeaseGraceMs: config.orphanLeaseGraceSeconds * 1000,
    terminatingRangeGraceMs: config.terminatingRangeGraceSeconds * 1000,
    leakStrikes: config.leakStrikes,
    sweepItems: config.sweepItems,
    countItems: config.countItems,
  };
}

/** A structured log line (one JSON object per line, as CloudWatch Logs Insights reads them). */
export type StructuredLog = (entry: Record<string, unknown>) => void;

export const jsonLog: StructuredLog = (entry) => console.log(JSON.stringify(entry));

/** What the scheduled function returns and logs: the report with counts as JSON numbers or decimal strings. */
export interface RunSummary {
  readonly complete: boolean;
  readonly stoppedIn?: string;
  readonly durationMs: number;
  readonly repairs: Readonly<Record<string, number>>;
  readonly expiry: ReconcileReport['expiry'];
  readonly sweep: ReconcileReport['sweep'];
  readonly bitmapsChecked: number;
  /** The address history's lag per pool (ms), as the HistoryLag metric. */
  readonly historyLagMs: Readonly<Record<string, number>>;
  readonly ranges: number;
  readonly errors: number;
  /** Items left to a later run because they wait for something expected (not errors; one log line each). */
  readonly waiting: number;
  /** Rows 22-24: DNS names published and removed, over every pool with `dns`. */
  readonly dns: { readonly published: number; readonly removed: number; readonly taken: number };
}

export interface RunOptions {
  readonly metrics?: IpamMetrics;
  readonly log?: StructuredLog;
  /** How a retried repair waits (default: a timer; the simulator waits in virtual time). */
  readonly pause?: Pause;
}

const timer: Pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One scheduled run: stops `deadlineMarginMs` before the Lambda's own deadline, publishes utilization and repair
 * counters as EMF metrics, and logs a summary line, one line per range, one per failed unit of work and one per
 * unit of work that waits.
 */
export async function runReconciler(
  deps: Deps,
  config: ReconcilerConfig,
  remainingMs: number,
  options: RunOptions = {},
): Promise<RunSummary> {
  const log = options.log ?? jsonLog;
  const started = deps.clock.nowMs();
  const reconcileDeps: ReconcileDeps = { ...deps, settings: settingsOf(config), pause: options.pause ?? timer };
  const report = await reconcile(reconcileDeps, { deadlineMs: started + remainingMs - config.deadlineMarginMs });
  options.metrics?.publishRun(report);
  for (const u of report.utilization) {
    log({
      level: 'info',
      message: 'range utilization',
      pool: u.pool,
      range: u.range,
      cidr: u.cidr,
      state: u.state,
      legacy: u.legacy,
      size: big(u.size),
      used: big(u.used),
      free: big(u.free),
      countedAt: new Date(u.countedAt).toISOString(),
    });
  }
  for (const error of report.errors) log({ level: 'warn', message: 'reconcile step failed', error });
  for (const waiting of report.waiting) log({ level: 'info', message: 'reconcile step waits', waiting });
  for (const d of report.dns) {
    const { taken, ...counts } = d;
    log({ level: 'info', message: 'dns repair', ...counts, taken: taken.length });
    for (const t of taken) log({ level: 'warn', message: 'dns name taken', pool: d.pool, ...t });
  }
  const summary: RunSummary = {
    complete: report.complete,
    ...(report.stoppedIn !== undefined ? { stoppedIn: report.stoppedIn } : {}),
    durationMs: deps.clock.nowMs() - started,
    repairs: report.repairs,
    expiry: report.expiry,
    sweep: report.sweep,
    bitmapsChecked: report.bitmapsChecked,
    historyLagMs: report.history.lagMs,
    ranges: report.utilization.length,
    errors: report.errors.length,
    waiting: report.waiting.length,
    dns: {
      published: report.dns.reduce((n, d) => n + d.published, 0),
      removed: report.dns.reduce((n, d) => n + d.removed, 0),
      taken: report.dns.reduce((n, d) => n + d.taken.length, 0),
    },
  };
  log({ level: report.errors.length ? 'warn' : 'info', message: 'reconcile run', ...summary });
  return summary;
}

function big(value: bigint): number | string {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
}
