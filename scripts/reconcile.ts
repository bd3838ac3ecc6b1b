/**
 * Runs one reconciler pass against the local stack, through the same handler the schedule invokes:
 *
 *   npm run reconcile
 *
 * The table and endpoint come from TABLE_NAME / DYNAMODB_ENDPOINT, else from the state file a running `npm start`
 * writes (.data/local-stack.json; LOCAL_STACK_STATE names another one), else the local stack's defaults
 * (`ipam-local` on http://127.0.0.1:8000). RECONCILE_* settings are read from the environment as in the function.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { lambdaContext } from './lambda-context.ts';
import { DEFAULT_STATE_FILE, serviceName, type LocalStackState } from './local-stack.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The running local stack's addresses; a state file left behind by a stack that is gone is ignored. */
function readState(): LocalStackState | undefined {
  const file = resolve(process.env.LOCAL_STACK_STATE ?? DEFAULT_STATE_FILE);
  if (!existsSync(file)) return undefined;
  const state = JSON.parse(readFileSync(file, 'utf8')) as LocalStackState;
  try {
    process.kill(state.pids.stack, 0);
    return state;
  } catch {
    console.error(`reconcile: ignoring ${file}: the local stack (pid ${state.pids.stack}) is not running`);
    return undefined;
  }
}

async function main(): Promise<void> {
  const state = readState();
  const stage = process.env.STAGE ?? state?.stage ?? 'local';
  const defaults: Record<string, string> = {
    STAGE: stage,
    LOCAL_STACK: 'true',
    TABLE_NAME: state?.tableName ?? `${serviceName()}-${stage}`,
    DYNAMODB_ENDPOINT: state?.endpoint ?? 'http://127.0.0.1:8000',
    FEATURE_GATES: 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=false',
    AWS_REGION: 'us-east-1',
    POWERTOOLS_SERVICE_NAME: serviceName(),
    POWERTOOLS_METRICS_NAMESPACE: serviceName(),
  };
  for (const [name, value] of Object.entries(defaults)) if (!process.env[name]) process.env[name] = value;
  console.error(`reconcile: table ${process.env.TABLE_NAME} on ${process.env.DYNAMODB_ENDPOINT}`);
  // Imported only now: the handler reads its configuration when its module loads, from the environment set above.
  const { handler } = (await import(pathToFileURL(join(repoRoot, 'functions', 'reconcile.ts')).href)) as {
    handler: (event: ScheduledEvent, context: Context) => Promise<unknown>;
  };
  const event = JSON.parse(readFileSync(join(repoRoot, 'events', 'schedule.json'), 'utf8')) as ScheduledEvent;
  // The deployed function's timeout (serverless.yml: 60 s), so the run stops where a real one would.
  await handler(event, lambdaContext(`${serviceName()}-${stage}-reconciler`, { timeoutMs: 60_000 }));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
