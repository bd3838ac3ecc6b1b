import type { Context, ScheduledEvent } from 'aws-lambda';
import { loadConfig } from '../shared/config.ts';
import { buildContainer, type Container } from '../shared/adapters/composition.ts';
import { IpamMetrics } from '../shared/adapters/metrics.ts';
import { runReconciler, type RunSummary } from '../shared/adapters/reconcile-runner.ts';

// Built once per warm container, on first use, so a bad setting fails at cold start with a clear message.
let container: Container | undefined;
const get = (): Container => (container ??= buildContainer(loadConfig()));
const metrics = IpamMetrics.create();

/** Scheduled reconciler entry: one bounded pass that stops before the function's timeout (docs/reconciler.md). */
export const handler = async (_event: ScheduledEvent, context: Context): Promise<RunSummary> =>
  runReconciler(get().deps, get().config.reconciler, context.getRemainingTimeInMillis(), { metrics });
