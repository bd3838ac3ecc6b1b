/**
 * The embedded local stack, run by `npm start`: DynamoDB Local (Java), the table from infra/table.json,
 * serverless-offline serving the HTTP API and the reconciler's schedule, and a stream poller that feeds the
 * table's stream to the mirror function with Lambda's partial-batch semantics. The API's port is the web console's
 * server (cli/console/server.ts): the page at /console/, every other request passed through to serverless-offline,
 * which listens on a port of its own.
 *
 *   npm start [-- --port 3000] [--lambda-port N] [--dynamodb-port N] [--dns-port 5300] [--data .data/dynamodb] [--stage local]
 *
 * It also answers DNS (UDP and TCP, 127.0.0.1:5300; `--dns-port 0` for none) for the zones of its pools with dns:
 * their default target, `local`, is the zones this process holds, written by the stream function through
 * scripts/local-zone-service.ts and served by scripts/local-dns-server.ts.
 *
 * `startLocalStack()` does the same from a test and returns the addresses and a `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../shared/adapters/dynamodb/client.ts';
import { createTable } from '../shared/adapters/dynamodb/table-setup.ts';
import { startConsoleServer, type ConsoleServer } from '../cli/console/server.ts';
import { assertJava, freePort, startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { offlineLambda } from './offline-lambda.ts';
import { startStreamPoller, type StreamPoller } from './stream-poller.ts';
import { randomBytes } from 'node:crypto';
import { MemoryZones } from '../shared/adapters/dns/memory-zone.ts';
import { startLocalDns, type LocalDns } from './local-dns-server.ts';
import { startZoneService, type ZoneService } from './local-zone-service.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The AWS SDK warns on Node < 22 (its releases after early January 2027 will need 22) once per process, in 8 lines:
 * the stack and serverless-offline each printed it at start. The banner says it once, in one line, instead.
 */
const SDK_NODE_WARNING_OFF = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } as const;

/** The functions of serverless.yml, by their key there. */
export type FunctionKey = 'api' | 'mirror' | 'reconciler' | 'claimResource';

export interface LocalStackOptions {
  /** HTTP API port. Default: a free port (the CLI defaults to $PORT or 3000). */
  port?: number;
  /** serverless-offline's Lambda API port. Default: a free port. */
  lambdaPort?: number;
  /** DynamoDB Local port. Default: a free port. */
  dynamoPort?: number;
  /**
   * The DNS server's port, UDP and TCP on 127.0.0.1, for the zones of pools with the `local` target. Default: a free
   * port; 'off': no DNS server (the stream function still keeps the zones).
   */
  dnsPort?: number | 'off';
  /** Folder that persists DynamoDB Local's data (and the local zones, in dns-zones.json); in memory when absent. */
  dataDir?: string;
  /** Serverless stage; the table is `<service>-<stage>`. Default `local`. */
  stage?: string;
  /** Stage parameters of serverless.yml to override, as `--param name=value` (e.g. reconcileExpiredGraceSeconds). */
  params?: Record<string, string>;
  /** Extra environment for serverless-offline (serverless.yml reads a few `${env:...}`, e.g. CURSOR_SECRET). */
  env?: Record<string, string>;
  /** Run the stream poller that delivers the table's stream to the mirror function. Default true. */
  streamPoller?: boolean;
  /** Receives every output line of serverless-offline and of the poller. Default: stdout with a prefix. */
  log?: (line: string) => void;
  /** Milliseconds to wait for serverless-offline to answer. Default 120 000. */
  readyTimeoutMs?: number;
  /**
   * Run handlers in serverless-offline's own process (`--useInProcess`) instead of a worker per concurrent request.
   * A cold worker loads the whole bundle, so a burst of N parallel requests on a small machine pays N cold starts
   * (past the function's timeout on a loaded 2-core box); in process, the loaded handler serves them all, as warm
   * Lambda instances would. Default false.
   */
  inProcess?: boolean;
  /** JVM options for DynamoDB Local (scripts/dynamodb-local.ts); none by default. */
  dynamoJvmOptions?: readonly string[];
  /**
   * The endpoint the functions send their DynamoDB requests to instead of DynamoDB Local's own (a counting proxy in
   * front of it, bench/lib/dynamo-tally.ts); told DynamoDB Local's endpoint once it started. The stream poller and
   * table setup keep the direct endpoint.
   */
  functionsEndpoint?: { readonly endpoint: string; readonly onDynamo: (endpoint: string) => void };
}

export interface LocalStack {
  /** Base URL of the HTTP API, e.g. http://127.0.0.1:3000 (routes start with /v1); the web console is at /console/. */
  readonly apiUrl: string;
  /** serverless-offline itself, behind apiUrl's console server. */
  readonly offlineUrl: string;
  /** DynamoDB Local endpoint. */
  readonly endpoint: string;
  readonly tableName: string;
  readonly stage: string;
  /** serverless-esbuild's work folder of this stack alone (absolute): the bundles serverless-offline serves. */
  readonly buildFolder: string;
  /** serverless-offline's Lambda API (for `@aws-sdk/client-lambda` or `invoke()`). */
  readonly lambdaEndpoint: string;
  /** The DNS server's address, unless it is off. */
  readonly dns: { readonly host: string; readonly port: number } | undefined;
  readonly streamArn: string | undefined;
  readonly pids: { readonly dynamodb: number; readonly offline: number };
  /** The stream poller (stats, failure destination), when it runs. */
  readonly poller: StreamPoller | undefined;
  /** Settles when serverless-offline exits, whether stop() asked it to or not. */
  readonly offlineExited: Promise<void>;
  /** Invokes a function through serverless-offline (the same bundle and environment as its events). */
  invoke(fn: FunctionKey, event: unknown): Promise<unknown>;
  /** How many times serverless-offline reported a successful scheduled run of the reconciler. */
  scheduledRuns(): number;
  /** The last lines of serverless-offline's output (for failure messages). */
  logTail(): string;
  /** Stops the poller, serverless-offline (its whole process group) and DynamoDB Local; waits for them to exit. */
  stop(): Promise<void>;
}

/** The service name of serverless.yml; function and table names start with it. */
export function serviceName(): string {
  const text = readFileSync(join(repoRoot, 'serverless.yml'), 'utf8');
  const name = /^service:\s*([\w-]+)/m.exec(text)?.[1];
  if (name === undefined) throw new Error('serverless.yml has no `service:` line');
  return name;
}

function oslsBin(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('osls/package.json')), 'bin', 'serverless.js');
}

/** Starts the whole local stack and resolves once the HTTP API answers. */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  assertJava();
  const stage = options.stage ?? 'local';
  const service = serviceName();
  const tableName = `${service}-${stage}`;
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const offlinePort = await freePort();
  const offlineUrl = `http://127.0.0.1:${offlinePort}`;
  // The front server binds its port now, before the minute offline may take to build: a port only looked up here and
  // bound later can be taken meanwhile by another process (CI saw EADDRINUSE on it).
  const front: ConsoleServer = await startConsoleServer({
    upstream: new URL(offlineUrl),
    port: options.port ?? 0,
  }).catch((error: NodeJS.ErrnoException) => {
    throw new Error(
      error.code === 'EADDRINUSE'
        ? `port ${options.port} is in use (is another local stack running?): choose another with --port`
        : error.message,
    );
  });
  const port = front.port;
  const lambdaPort = options.lambdaPort ?? (await freePort());
  // A busy port would not make offline fail fast: the readiness probe would get its answer from the other server.
  await assertPortFree(lambdaPort, '--lambda-port').catch(async (error: unknown) => {
    await front.close();
    throw error;
  });
  const tail: string[] = [];
  let scheduled = 0;
  const cleanups: (() => void)[] = [];
  const onExit = () => cleanups.forEach((c) => c());
  process.once('exit', onExit);

  // serverless-esbuild's work folder for this run only, beside (not inside) the .esbuild/package that
  // `npm run package` deletes when done: neither packaging nor a second stack touches the bundles this one serves.
  const workFolder = join('.esbuild', `offline-${stage}-${port}`);
  cleanups.push(() => rmSync(join(repoRoot, workFolder), { recursive: true, force: true }));

  let dynamo: DynamoDbLocal | undefined;
  let offline: ChildProcess | undefined;
  let offlineExit: Promise<void> | undefined;
  let poller: StreamPoller | undefined;
  let stopping: Promise<void> | undefined;
  let zoneService: ZoneService | undefined;
  let dnsServer: LocalDns | undefined;
  const mirror = offlineLambda({
    endpoint: `http://127.0.0.1:${lambdaPort}`,
    functionName: `${service}-${stage}-mirror`,
  });

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await front.close();
      await poller?.stop().catch(() => undefined);
      mirror.destroy();
      if (offline && offlineExit) await stopProcessGroup(offline, offlineExit);
      await dynamo?.stop();
      await dnsServer?.close();
      await zoneService?.close();
      rmSync(join(repoRoot, workFolder), { recursive: true, force: true });
      process.removeListener('exit', onExit);
    })();
    return stopping;
  };

  try {
    const dynamoPort = options.dynamoPort ?? (await freePort());
    const endpoint = `http://127.0.0.1:${dynamoPort}`;
    options.functionsEndpoint?.onDynamo(endpoint);
    const zones = await startZones(options);
    zoneService = zones.service;
    dnsServer = zones.dns;

    // DynamoDB Local (a JVM) and serverless-offline (osls, then esbuild) take seconds each: start both at once.
    // Handlers only reach the endpoint on a request, and the stack is ready when both are.
    const database = (async () => {
      dynamo = await startDynamoDbLocal({
        port: dynamoPort,
        dataDir: options.dataDir,
        ...(options.dynamoJvmOptions ? { jvmOptions: options.dynamoJvmOptions } : {}),
      });
      const dynamoPid = dynamo.pid;
      cleanups.push(() => killQuietly(dynamoPid));
      const client = createDynamoClient({ endpoint });
      try {
        const existed = await client.send(new DescribeTableCommand({ TableName: tableName })).then(
          () => true,
          () => false,
        );
        await createTable(client, tableName);
        return existed;
      } finally {
        client.destroy();
      }
    })();

    const child = spawn(
      process.execPath,
      [
        oslsBin(),
        'offline',
        'start',
        '--stage',
        stage,
        // The one way LOCAL_STACK=true reaches the functions (serverless.yml never reads it from the shell).
        ...Object.entries({ ...options.params, localStack: 'true' }).flatMap(([name, value]) => [
          '--param',
          `${name}=${value}`,
        ]),
        '--host',
        '127.0.0.1',
        '--httpPort',
        String(offlinePort),
        '--lambdaPort',
        String(lambdaPort),
        // serverless-offline answers any origin's CORS request by default, with credentials: a page of any site could
        // read the developer's pools and history. Only the console's own origin is named (its page needs no CORS).
        '--corsAllowOrigin',
        `http://127.0.0.1:${port}`,
        '--corsDisallowCredentials',
        ...(options.inProcess ? ['--useInProcess'] : []),
      ],
      {
        cwd: repoRoot,
        // Its own process group, so stop() (and Ctrl-C through us) ends esbuild and every worker with it.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          ...SDK_NODE_WARNING_OFF,
          ...options.env,
          DYNAMODB_ENDPOINT: options.functionsEndpoint?.endpoint ?? endpoint,
          LOCAL_DNS_ENDPOINT: zones.service.endpoint,
          LOCAL_DNS_TOKEN: zones.token,
          ESBUILD_WORK_FOLDER: workFolder,
        },
      },
    );
    offline = child;
    offlineExit = new Promise((r) => child.once('exit', () => r()));
    const offlinePid = child.pid ?? -1;
    cleanups.push(() => killQuietly(-offlinePid));
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 200) tail.shift();
      if (line.includes('Successfully invoked scheduled function') && line.includes('[reconciler]')) scheduled += 1;
      // offline's route table gives each route a second line, the Lambda invoke URL on the HTTP port, where nothing
      // answers it (the Lambda API is on --lambda-port, which the banner prints): leave those out.
      if (/\/2015-03-31\/functions\/[^/\s]+\/invocations/.test(line)) return;
      // offline's "Server ready" names its own, internal port; the stack's banner names the one to call.
      if (/Server ready:/.test(line)) return;
      log(`[offline] ${line}`);
    };
    forEachLine(child.stdout, onLine);
    forEachLine(child.stderr, onLine);

    // Settle both before going on, so a failure of one never leaves the other starting after stop().
    const [table, server] = await Promise.allSettled([
      database,
      waitForHttp(`${offlineUrl}/v1/health`, child, options.readyTimeoutMs ?? 120_000, () => tail.join('\n')),
    ]);
    if (table.status === 'rejected') throw table.reason;
    if (server.status === 'rejected') throw server.reason;
    const existed = table.value;
    if (dynamo === undefined) throw new Error('DynamoDB Local did not start');

    if (options.streamPoller ?? true) {
      poller = await startStreamPoller({
        endpoint: dynamo.endpoint,
        tableName,
        handler: (event) => mirror.invoke(event),
        functionName: `${service}-${stage}-mirror`,
        // A fresh table: deliver everything since it was created. A persisted one: skip the earlier runs' history.
        startingPosition: existed ? 'LATEST' : 'TRIM_HORIZON',
        onError: (error) =>
          log(`[stream-poller] ${(error as Error).name ?? 'Error'}: ${(error as Error).message ?? String(error)}`),
        onFailure: (failure) => {
          const { records: _records, ...summary } = failure;
          log(`[stream-poller] failure destination: ${JSON.stringify(summary)}`);
        },
      });
    }

    const apiUrl = front.origin;
    const functions = {
      api: `${service}-${stage}-api`,
      mirror: `${service}-${stage}-mirror`,
      reconciler: `${service}-${stage}-reconciler`,
      claimResource: `${service}-${stage}-claimResource`,
    };
    const invokers = new Map<FunctionKey, ReturnType<typeof offlineLambda>>();
    cleanups.push(() => invokers.forEach((i) => i.destroy()));
    const db = dynamo;
    return {
      apiUrl,
      offlineUrl,
      endpoint: db.endpoint,
      tableName,
      stage,
      buildFolder: join(repoRoot, workFolder),
      lambdaEndpoint: `http://127.0.0.1:${lambdaPort}`,
      dns: zones.dns ? { host: zones.dns.host, port: zones.dns.port } : undefined,
      streamArn: poller?.streamArn,
      pids: { dynamodb: db.pid, offline: offlinePid },
      poller,
      offlineExited: offlineExit,
      invoke(fn, event) {
        let invoker = invokers.get(fn);
        if (invoker === undefined) {
          invoker = offlineLambda({ endpoint: `http://127.0.0.1:${lambdaPort}`, functionName: functions[fn] });
          invokers.set(fn, invoker);
        }
        return invoker.invoke(event);
      },
      scheduledRuns: () => scheduled,
      logTail: () => tail.join('\n'),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The local zones (persisted beside DynamoDB Local's data when it persists), the service the stream function writes
 * them through, with a token of this run, and the DNS server answering from them.
 */
async function startZones(
  options: LocalStackOptions,
): Promise<{ service: ZoneService; dns: LocalDns | undefined; token: string }> {
  const zones = new MemoryZones();
  const token = randomBytes(16).toString('hex');
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const file = options.dataDir ? join(options.dataDir, 'dns-zones.json') : undefined;
  const service = await startZoneService({ zones, token, ...(file ? { file } : {}) });
  if (options.dnsPort === 'off') return { service, dns: undefined, token };
  try {
    const dns = await startLocalDns({ zones, port: options.dnsPort ?? 0 });
    return { service, dns, token };
  } catch (error) {
    await service.close();
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'EADDRINUSE' || code === 'EACCES'
        ? `DNS port ${options.dnsPort} is ${code === 'EADDRINUSE' ? 'in use' : 'not allowed'} (is another local stack running?): choose another with --dns-port, or --dns-port 0 for none`
        : (error as Error).message,
    );
  }
}

async function assertPortFree(port: number, option: string): Promise<void> {
  await new Promise<void>((resolveFree, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'EADDRINUSE'
            ? `port ${port} is in use (is another local stack running?): choose another with ${option}`
            : error.message,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree()));
  });
}

function forEachLine(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return;
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') onLine(line.trimEnd());
  });
}

async function waitForHttp(url: string, child: ChildProcess, timeoutMs: number, logTail: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `serverless-offline exited (${child.exitCode ?? child.signalCode}) before it answered:\n${logTail()}`,
      );
    }
    try {
      // Any HTTP answer means the server is up; whether health is 200 is the caller's assertion.
      await fetch(url, { signal: AbortSignal.timeout(2000) });
      return;
    } catch {
      if (Date.now() > deadline)
        throw new Error(`serverless-offline did not answer ${url} within ${timeoutMs} ms:\n${logTail()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** SIGTERM to the group, SIGKILL after 5 s; then SIGKILL whatever of the group is left (esbuild's service). */
async function stopProcessGroup(child: ChildProcess, exited: Promise<void>): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  if (child.exitCode === null && child.signalCode === null) {
    killQuietly(-pid, 'SIGTERM');
    const timer = setTimeout(() => killQuietly(-pid, 'SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  killQuietly(-pid, 'SIGKILL');
}

function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** `npm start`'s DNS port: unprivileged, beside 53 in spirit (5353 is mDNS's, often taken). */
export const DEFAULT_DNS_PORT = 5300;

/** Where the CLI writes its addresses for `npm run invoke` and other tools. */
export const DEFAULT_STATE_FILE = join(repoRoot, '.data', 'local-stack.json');

/** What the CLI writes to the state file. */
export interface LocalStackState {
  apiUrl: string;
  endpoint: string;
  tableName: string;
  stage: string;
  lambdaEndpoint: string;
  /** The DNS server's port on 127.0.0.1, unless it is off. */
  dnsPort?: number;
  pids: { dynamodb: number; offline: number; stack: number };
}

/** The stack's flags, as npm names a flag it took for itself: `npm start --port 4003` sets npm_config_port. */
const NPM_TAKEN_FLAGS = ['port', 'lambda-port', 'dynamodb-port', 'dns-port', 'data', 'stage', 'state-file'] as const;

/**
 * The sentence for a stack flag given to npm instead of the stack (`npm start --port 4003`, without `--`): npm keeps
 * such a flag as its own config (npm_config_port=true) and hands the script only the value, as an argument, so the
 * stack would start on its default port. `argv`: the script's arguments, where those values end up, in order.
 */
export function flagGivenToNpm(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
): string | undefined {
  const variable = (flag: string) => `npm_config_${flag.replaceAll('-', '_')}`;
  const taken = NPM_TAKEN_FLAGS.filter((flag) => env[variable(flag)] !== undefined);
  if (taken.length === 0) return undefined;
  const values = argv.filter((arg) => !arg.startsWith('-'));
  const given = taken
    .map((flag) => {
      const value = env[variable(flag)];
      return `--${flag} ${value === 'true' ? (values.shift() ?? 'VALUE') : value}`;
    })
    .join(' ');
  return `npm took ${taken.map((f) => `--${f}`).join(' ')} for itself (${variable(taken[0]!)}), not for the stack: pass the stack's flags after --, as in: npm start -- ${given}`;
}

async function main(argv: string[]): Promise<void> {
  const misplaced = flagGivenToNpm(process.env, argv);
  if (misplaced !== undefined) {
    console.error(misplaced);
    process.exit(2);
  }
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      'lambda-port': { type: 'string' },
      'dynamodb-port': { type: 'string' },
      'dns-port': { type: 'string' },
      data: { type: 'string' },
      stage: { type: 'string' },
      'state-file': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(
      'npm start -- [--port 3000] [--lambda-port N] [--dynamodb-port N] [--dns-port 5300 (0: no DNS server)] [--data DIR] [--stage local] [--state-file FILE]',
    );
    return;
  }
  // Handlers first: a signal during start-up (Java and serverless-offline starting) must not orphan them.
  let signals = 0;
  let early: string | undefined;
  let shutdown = (signal: string) => {
    early ??= signal;
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => shutdown(signal));
  try {
    assertJava();
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
  Object.assign(process.env, SDK_NODE_WARNING_OFF);
  const int = (text: string | undefined) => (text === undefined || text === '' ? undefined : Number.parseInt(text, 10));
  const started = Date.now();
  const dnsPort = int(values['dns-port']) ?? DEFAULT_DNS_PORT;
  if (!Number.isInteger(dnsPort) || dnsPort < 0 || dnsPort > 65_535) {
    console.error('--dns-port must be a port number from 1 to 65535, or 0 for no DNS server');
    process.exit(2);
  }
  const stack = await startLocalStack({
    port: int(values.port) ?? int(process.env.PORT) ?? 3000,
    lambdaPort: int(values['lambda-port']),
    dynamoPort: int(values['dynamodb-port']),
    dnsPort: dnsPort === 0 ? 'off' : dnsPort,
    dataDir: values.data,
    stage: values.stage,
  });
  const stateFile = resolve(values['state-file'] ?? DEFAULT_STATE_FILE);
  const state: LocalStackState = {
    apiUrl: stack.apiUrl,
    endpoint: stack.endpoint,
    tableName: stack.tableName,
    stage: stack.stage,
    lambdaEndpoint: stack.lambdaEndpoint,
    ...(stack.dns ? { dnsPort: stack.dns.port } : {}),
    pids: { ...stack.pids, stack: process.pid },
  };
  // A signal that arrived while starting is acted on now that there is a stack to stop.
  shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    console.log(`\n${signal}: stopping the local stack...`);
    void stack.stop().then(() => process.exit(0));
  };
  if (early !== undefined) shutdown(early);
  mkdirSync(dirname(stateFile), { recursive: true });
  writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`);
  const schedule = /Scheduling \[reconciler\] cron: \[([^\]]*)\]/.exec(stack.logTail())?.[1];
  console.log(
    [
      '',
      `Local stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      `  HTTP API        ${stack.apiUrl}/v1/health   (no IAM auth locally)`,
      `  Web console     ${stack.apiUrl}/console/`,
      `  Lambda API      ${stack.lambdaEndpoint}   (functions ${serviceName()}-${stack.stage}-{api,mirror,reconciler})`,
      `  DynamoDB Local  ${stack.endpoint}   (pid ${stack.pids.dynamodb}, ${values.data ? `data in ${resolve(values.data)}` : 'in memory'})`,
      `  Table           ${stack.tableName}`,
      `  DNS             ${stack.dns ? `${stack.dns.host}:${stack.dns.port} UDP and TCP, the zones of pools with dns (dig @${stack.dns.host} -p ${stack.dns.port} NAME)` : 'off (--dns-port 0)'}`,
      `  Stream poller   ${stack.streamArn} -> ${serviceName()}-${stack.stage}-mirror`,
      `  Schedule        reconciler ${schedule === undefined ? 'NOT scheduled by serverless-offline' : `cron [${schedule}] fired by serverless-offline`}`,
      `  State file      ${stateFile}   (read by npm run invoke)`,
      '',
      "  In another shell (the README's tours and ipam read these):",
      `    export PORT=${new URL(stack.apiUrl).port} IPAM_ENDPOINT=${stack.apiUrl}`,
      `  e.g. curl ${stack.apiUrl}/v1/health ; npm run invoke -- reconciler events/schedule.json`,
      ...(Number(process.versions.node.split('.')[0]) < 22
        ? [
            `  Node ${process.versions.node}: AWS SDK releases after early January 2027 need Node >= 22 (the Lambda runtime is nodejs22.x).`,
          ]
        : []),
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );

  // The state file describes a running stack only: remove it on the way out (if it is still ours).
  process.once('exit', () => {
    try {
      if ((JSON.parse(readFileSync(stateFile, 'utf8')) as LocalStackState).pids.stack === process.pid)
        rmSync(stateFile);
    } catch {
      // Gone or replaced.
    }
  });

  // If serverless-offline dies on its own, take everything down rather than leave half a stack.
  void stack.offlineExited.then(() => {
    if (signals > 0) return;
    console.error('serverless-offline exited: stopping the local stack.');
    void stack.stop().then(() => process.exit(1));
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
