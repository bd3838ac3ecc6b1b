/**
 * Runs one function's handler with an event file, against DynamoDB Local:
 *
 *   npm run invoke -- <api|mirror|reconciler|claimResource> <event-file> [--offline]
 *
 * By default the handler module is imported here (TypeScript source, through tsx) with the environment the
 * deployed function gets. TABLE_NAME and DYNAMODB_ENDPOINT come from the environment, or else from the state
 * file a running `npm start` writes (.data/local-stack.json; LOCAL_STACK_STATE names another one).
 * `--offline` sends the event through the running stack's Lambda API instead (the esbuild bundle, as deployed).
 * A claimResource event whose ResponseURL is `local` has its response PUT taken and printed here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { lambdaContext } from './lambda-context.ts';
import { offlineLambda } from './offline-lambda.ts';
import { serviceName, type FunctionKey, type LocalStackState } from './local-stack.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Each function's handler module, as serverless.yml names it. */
export const handlerModules: Record<FunctionKey, string> = {
  api: 'functions/http.ts',
  mirror: 'functions/stream.ts',
  reconciler: 'functions/reconcile.ts',
  claimResource: 'functions/claim-resource.ts',
};

/** What serverless.yml gives every function, for the settings the environment does not set. */
function environmentDefaults(): Record<string, string> {
  return {
    STAGE: 'local',
    LOCAL_STACK: 'true',
    FEATURE_GATES: 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=false',
    AWS_REGION: 'us-east-1',
    POWERTOOLS_SERVICE_NAME: serviceName(),
    POWERTOOLS_METRICS_NAMESPACE: serviceName(),
  };
}

function readState(): LocalStackState | undefined {
  const file = resolve(process.env.LOCAL_STACK_STATE ?? join(repoRoot, '.data', 'local-stack.json'));
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as LocalStackState;
}

function isFunctionKey(name: string | undefined): name is FunctionKey {
  return name !== undefined && name in handlerModules;
}

/**
 * A custom resource event whose ResponseURL is `local`: a loopback server here takes the provider's PUT in its place
 * and prints it, so the protocol can be tried without CloudFormation (any other ResponseURL is used as it is).
 */
async function localResponseUrl(event: unknown): Promise<{ url: string; close(): Promise<void> } | undefined> {
  if ((event as { ResponseURL?: unknown }).ResponseURL !== 'local') return undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      console.error(`${req.method} ${req.url} (content-type ${JSON.stringify(req.headers['content-type'] ?? null)}):`);
      console.error(JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')), null, 2));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/response`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { offline: { type: 'boolean' } },
  });
  const [fn, eventFile] = positionals;
  if (!isFunctionKey(fn) || eventFile === undefined) {
    throw new Error('usage: npm run invoke -- <api|mirror|reconciler|claimResource> <event-file> [--offline]');
  }
  const event: unknown = JSON.parse(readFileSync(resolve(eventFile), 'utf8'));
  const state = readState();

  if (values.offline) {
    if (state === undefined) throw new Error('--offline needs a running `npm start` (no .data/local-stack.json)');
    const lambda = offlineLambda({
      endpoint: state.lambdaEndpoint,
      functionName: `${serviceName()}-${state.stage}-${fn}`,
    });
    try {
      console.log(JSON.stringify(await lambda.invoke(event), null, 2));
    } finally {
      lambda.destroy();
    }
    return;
  }

  for (const [name, value] of Object.entries(environmentDefaults())) process.env[name] ??= value;
  // (Assigning undefined to process.env would store the string "undefined".)
  if (!process.env.TABLE_NAME && state) process.env.TABLE_NAME = state.tableName;
  if (!process.env.DYNAMODB_ENDPOINT && state) process.env.DYNAMODB_ENDPOINT = state.endpoint;
  if (!process.env.TABLE_NAME || !process.env.DYNAMODB_ENDPOINT) {
    throw new Error('set TABLE_NAME and DYNAMODB_ENDPOINT, or start the local stack (`npm start`) first');
  }
  console.error(
    `invoke ${fn} (${handlerModules[fn]}) with ${eventFile} on ${process.env.DYNAMODB_ENDPOINT} table ${process.env.TABLE_NAME}`,
  );
  // Imported only now: handlers read their configuration at module load.
  const module = (await import(pathToFileURL(join(repoRoot, handlerModules[fn])).href)) as {
    handler?: (event: unknown, context: unknown) => Promise<unknown>;
  };
  if (typeof module.handler !== 'function') throw new Error(`${handlerModules[fn]} exports no \`handler\` function`);
  const local = fn === 'claimResource' ? await localResponseUrl(event) : undefined;
  try {
    const sent = local ? { ...(event as object), ResponseURL: local.url } : event;
    const result = await module.handler(sent, lambdaContext(`${serviceName()}-${process.env.STAGE}-${fn}`));
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await local?.close();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
