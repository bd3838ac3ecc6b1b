import { buildContainerAtColdStart, servingHttpAfter, tableSettingsGuard } from '../shared/adapters/cold-start.ts';
import { createHttpHandler } from '../shared/adapters/http/api.ts';
import { IpamMetrics } from '../shared/adapters/metrics.ts';

// Built when the module loads (Lambda's init phase): a bad setting fails the cold start with one log line naming it.
const container = buildContainerAtColdStart();

/** HTTP API entry: every route of /v1, once the table's fixed settings are this function's (503 while the check cannot run). */
export const handler = servingHttpAfter(
  tableSettingsGuard(container),
  createHttpHandler(
    () => container.deps,
    { version: '0.1.0', health: () => container.deps.health.health(), localStack: container.config.localStack },
    undefined,
    IpamMetrics.create(container.config.metrics),
  ),
);
