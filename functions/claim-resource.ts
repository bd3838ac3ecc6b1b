import type { Context } from 'aws-lambda';
import { buildContainerAtColdStart, tableSettingsGuard } from '../shared/adapters/cold-start.ts';
import { createClaimResourceHandler } from '../shared/adapters/custom-resource.ts';

// Built when the module loads (Lambda's init phase): a bad setting fails the cold start with one log line naming it.
const container = buildContainerAtColdStart();
const ready = tableSettingsGuard(container);
const provider = createClaimResourceHandler(() => container.deps, {
  ...(container.config.providerRole ? { caller: container.config.providerRole } : {}),
  // A commit sent before the deadline has finished or timed out before the answer goes out.
  commitMarginMs: container.config.requestTimeoutMs + 1000,
});

/** `Custom::IpamClaim` provider: claims from a pool for a CloudFormation stack, answering on the request's ResponseURL. */
export const handler = async (event: unknown, context: Context) => {
  await ready().catch(() => undefined);
  return provider(event, context);
};
