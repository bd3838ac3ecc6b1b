import { loadConfig } from '../config.ts';
import { buildContainer, type Container } from './composition.ts';

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
export function buildContainerAtColdStart(log: ColdStartLogger = defaultLogger): Container {
  try {
    return buildContainer(loadConfig());
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    log({ level: 'error', message: 'cold start failed', error: failure.name, detail: failure.message });
    throw failure;
  }
}
