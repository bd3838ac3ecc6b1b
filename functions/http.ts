import { loadConfig } from '../shared/config.ts';
import { buildContainer, type Container } from '../shared/adapters/composition.ts';
import { createHttpHandler } from '../shared/adapters/http/api.ts';
import { IpamMetrics } from '../shared/adapters/metrics.ts';

// Built once per warm container, on first use, so a bad setting fails at cold start with a clear message.
let container: Container | undefined;
const get = (): Container => (container ??= buildContainer(loadConfig()));

/** HTTP API entry: every route of /v1. */
export const handler = createHttpHandler(() => get().deps, { version: '0.1.0', health: () => get().deps.health.health() }, undefined, IpamMetrics.create());
