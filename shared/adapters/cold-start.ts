import { loadConfig } from '../config.ts';
import { buildContainer, type Container, type ContainerOverrides } from './composition.ts';
import { assertTableSettings, TableSettingsMismatchError } from './dynamodb/table-settings.ts';
import { problemOf, problemResponse } from './http/problem.ts';
import { NotReadyError } from '../core/errors.ts';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** Writes one log line (a JSON object) for a cold start that was refused. */
export type ColdStartLogger = (entry: Record<string, unknown>) => void;

const defaultLogger: ColdStartLogger = (entry) => console.error(JSON.stringify(entry));

/**
 * Reads the configuration and builds the container, for a function module to call at its top level: Lambda runs
 * that in the init phase, so a bad setting fails the cold start (and every retry of it) instead of turning each
 * request into a 500. A failure is logged as one JSON line whose `detail` names the setting, e.g.
 *
 *   {"level":"error","message":"cold start failed","error":"Error","detail":"TABLE_NAME is not set: ..."}
 *
 * and then rethrown, so the runtime reports the init as failed with the same message.
 */
export function buildContainerAtColdStart(
  log: ColdStartLogger = defaultLogger,
  overrides: ContainerOverrides = {},
): Container {
  try {
    return buildContainer(loadConfig(), overrides);
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    log({ level: 'error', message: 'cold start failed', error: failure.name, detail: failure.message });
    throw failure;
  }
}

/**
 * The check a function's environment makes against its table before it serves anything: the table's fixed settings
 * (LEASE_INDEX_SHARDS) must be this function's (dynamodb/table-settings.ts). It runs on the environment's first
 * invocation rather than in the init phase, so that loading a bundle needs no reachable table; what a client sees is
 * the same as a failed init: no invocation is served.
 *
 * - Equal (or recorded now): remembered, never checked again in this environment.
 * - Different: one log line, `{"level":"error","message":"cold start failed","error":"TableSettingsMismatchError",...}`,
 *   and this invocation and every later one of the environment fail with that error (500 on the HTTP API).
 * - The check itself failed (throttling, timeout): this invocation fails, and the next one checks again. On the HTTP
 *   API (servingHttpAfter) that failure is a 503 `NotReady` like any other retryable one, not a 500.
 */
export function tableSettingsGuard(container: Container, log: ColdStartLogger = defaultLogger): () => Promise<void> {
  let checked: Promise<void> | undefined;
  return () => {
    checked ??= assertTableSettings(
      container.table,
      { leaseIndexShards: container.config.leaseIndexShards },
      new Date(container.deps.clock.nowMs()).toISOString(),
    ).catch((error: unknown) => {
      if (error instanceof TableSettingsMismatchError) {
        log({ level: 'error', message: 'cold start failed', error: error.name, detail: error.message });
      } else {
        checked = undefined;
      }
      throw error;
    });
    return checked;
  };
}

/** A handler that first awaits `ready` (tableSettingsGuard): while it rejects, the handler serves nothing. */
export function servingAfter<A extends unknown[], R>(
  ready: () => Promise<void>,
  handler: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args: A) => {
    await ready();
    return handler(...args);
  };
}

/**
 * servingAfter for the HTTP API. A check that failed for a retryable reason (throttling, a timeout: `NotReadyError`)
 * answers 503 with the problem document, as any other request that meets a busy table does, so clients retry; a
 * settings mismatch, or anything else, still fails the invocation (500 from API Gateway, like a failed init).
 */
export function servingHttpAfter<A extends unknown[], R>(
  ready: () => Promise<void>,
  handler: (...args: A) => Promise<R>,
): (...args: A) => Promise<R | APIGatewayProxyStructuredResultV2> {
  return async (...args: A) => {
    try {
      await ready();
    } catch (error) {
      if (error instanceof NotReadyError) return problemResponse(problemOf(error));
      throw error;
    }
    return handler(...args);
  };
}
