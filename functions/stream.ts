import { buildContainerAtColdStart, servingAfter, tableSettingsGuard } from '../shared/adapters/cold-start.ts';
import { IpamMetrics } from '../shared/adapters/metrics.ts';
import { createMirrorHandler } from '../shared/adapters/stream/mirror-handler.ts';
import { dnsTargets } from '../shared/adapters/dns/targets.ts';

// Built when the module loads (Lambda's init phase): a bad setting fails the cold start with one log line naming it.
// The local target's endpoint is read off the config when first used, after the container exists.
const container = buildContainerAtColdStart(undefined, {
  dnsTargets: dnsTargets({ local: () => container.config.localDns }),
});

/**
 * Stream entry: keeps the occupancy summary (one chunk write per batch and chunk touched), writes the address
 * history (one item per ended holding) and mirrors lease changes into the legacy bitmaps, reporting partial batch
 * failures per chunk, holding and bitmap. Refused
 * until the table's fixed settings are this function's: the batch fails whole and the mapping retries it.
 */
export const handler = servingAfter(
  tableSettingsGuard(container),
  createMirrorHandler(() => container.mirror, undefined, IpamMetrics.create(container.config.metrics)),
);
