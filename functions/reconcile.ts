import type { Context, ScheduledEvent } from 'aws-lambda';
import { buildContainerAtColdStart, tableSettingsGuard } from '../shared/adapters/cold-start.ts';
import { IpamMetrics } from '../shared/adapters/metrics.ts';
import { runReconciler, type RunSummary } from '../shared/adapters/reconcile-runner.ts';
import { dnsTargets } from '../shared/adapters/dns/targets.ts';

// Built when the module loads (Lambda's init phase): a bad setting fails the cold start with one log line naming it.
// The local target's endpoint is read off the config when first used (the local stack's zones, repaired as any).
const container = buildContainerAtColdStart(undefined, {
  dnsTargets: dnsTargets({ local: () => container.config.localDns }),
});
const metrics = IpamMetrics.create(container.config.metrics);
const ready = tableSettingsGuard(container);

/** Scheduled reconciler entry: one bounded pass that stops before the function's timeout (docs/reconciler.md). */
export const handler = async (_event: ScheduledEvent, context: Context): Promise<RunSummary> => {
  await ready();
  return runReconciler(container.deps, container.config.reconciler, context.getRemainingTimeInMillis(), { metrics });
};
