/**
 * `ipam-cni`: the CNI IPAM plugin's entry point (SPEC.md, "Execution Protocol"). The runtime (or a main plugin such
 * as bridge) runs it with CNI_COMMAND and the other CNI_* variables in the environment and the network
 * configuration on stdin; it answers a result (ADD, VERSION) or nothing (DEL, CHECK, STATUS, GC) on stdout and exits
 * 0, or prints the spec's error JSON on stdout and exits 1.
 *
 * The environment is checked as libcni's skel checks it: CNI_COMMAND always; CNI_CONTAINERID and CNI_IFNAME for ADD,
 * DEL and CHECK; CNI_NETNS for ADD and CHECK; CNI_PATH for every command but VERSION (code 4 naming what is missing).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { HttpClient, type HttpClientOptions, type HttpResponse, type RequestOptions } from '../cli/api/http-client.ts';
import { ProblemError } from '../cli/errors.ts';
import { checkAttachment, ownerOf, parseCniArgs } from './attachment.ts';
import { add, check, del, gc, renew, status, type CommandContext } from './commands.ts';
import { IpamApi } from '../cli/api/ipam-api.ts';
import { fileCache } from './node-cache.ts';
import { LogLevel, parseNetworkConfig, parseStaticAddresses, type IpamConfig, type NetworkConfig } from './config.ts';
import { CniCode, CniError, errorResult, toCniError } from './errors.ts';
import { nodeFetch } from './transport.ts';
import { commandAllowed, encodeResult, LATEST_VERSION, SUPPORTED_VERSIONS } from './versions.ts';

export type Env = Readonly<Record<string, string | undefined>>;

export interface Outcome {
  readonly exitCode: 0 | 1;
  /** What goes to stdout: a result, an error document, or nothing. */
  readonly stdout: string;
}

// RENEW is this plugin's own (the node's renewer, docs/cni.md); the rest are the spec's.
const COMMANDS = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION', 'RENEW'] as const;
type Command = (typeof COMMANDS)[number];

/** Which variables each command needs (skel's table). */
const REQUIRED: Record<Command, readonly string[]> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  STATUS: ['CNI_PATH'],
  GC: ['CNI_PATH'],
  VERSION: [],
  RENEW: [],
};

/** The cniVersion of an input that may not parse: for the error document's own cniVersion. */
function versionOf(stdin: string): string {
  try {
    const v = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v) ? v : LATEST_VERSION;
  } catch {
    return LATEST_VERSION;
  }
}

/** Lines for ipam.logFile, written once at exit (one append per call keeps concurrent plugins' lines whole). */
class Log {
  private readonly lines: string[] = [];
  private file: string | undefined;
  private level: number = LogLevel.info;

  constructor(
    private readonly command: string,
    private readonly who: string,
  ) {}

  configure(ipam: IpamConfig): void {
    this.file = ipam.logFile;
    this.level = LogLevel[ipam.logLevel];
  }

  write = (level: keyof typeof LogLevel, message: string): void => {
    this.lines.push(`${new Date().toISOString()} ${level} ${process.pid} ${this.command} ${this.who} ${message}`);
    if (LogLevel[level] > this.level) this.lines.pop();
  };

  flush(): void {
    if (!this.file || this.lines.length === 0) return;
    try {
      appendFileSync(this.file, `${this.lines.join('\n')}\n`);
    } catch (error) {
      process.stderr.write(`ipam-cni: cannot write ${this.file}: ${(error as Error).message}\n`);
    }
  }
}

/** Milliseconds since the process started (performance's origin), for the debug level's timing lines. */
function since(): string {
  return `+${Math.round(performance.now())} ms`;
}

/** The service client whose every request leaves a debug line: method, path, answer and time, since start. */
class TimedClient extends HttpClient {
  constructor(
    options: HttpClientOptions,
    private readonly log: Log['write'],
  ) {
    super(options);
  }

  override async request(method: string, path: string, options?: RequestOptions): Promise<HttpResponse> {
    const started = performance.now();
    let answer = 'failed';
    try {
      const response = await super.request(method, path, options);
      answer = String(response.status);
      return response;
    } catch (error) {
      if (error instanceof ProblemError) answer = String(error.status);
      throw error;
    } finally {
      this.log(
        'debug',
        `timing: ${method} ${path} ${answer} in ${Math.round(performance.now() - started)} ms (${since()})`,
      );
    }
  }
}

async function serviceClient(ipam: IpamConfig, log: Log['write']): Promise<HttpClient> {
  if (ipam.region === undefined)
    return new TimedClient({ endpoint: ipam.endpoint, timeoutMs: ipam.timeoutMs, fetch: nodeFetch }, log);
  // Loaded only for https endpoints: a plain http call to the local stack never pays for the credential chain.
  const { credentialChain, sigV4Signer } = await import('./signer.ts');
  const signer = sigV4Signer({ credentials: await credentialChain(undefined), region: ipam.region });
  log('debug', `timing: signer loaded (${since()})`);
  return new TimedClient({ endpoint: ipam.endpoint, timeoutMs: ipam.timeoutMs, signer, fetch: nodeFetch }, log);
}

/** Runs one CNI call. Never throws: every failure becomes the spec's error document. */
export async function run(env: Env, stdin: string, node: string = hostname()): Promise<Outcome> {
  const command = env.CNI_COMMAND ?? '';
  const log = new Log(command || '-', `${env.CNI_CONTAINERID ?? '-'}/${env.CNI_IFNAME ?? '-'}`);
  const version = versionOf(stdin);
  try {
    if (!(COMMANDS as readonly string[]).includes(command)) {
      throw new CniError(
        CniCode.InvalidEnvironment,
        command ? `unknown CNI_COMMAND: ${command}` : 'required env variables [CNI_COMMAND] missing',
        '',
      );
    }
    const cmd = command as Command;
    const missing = REQUIRED[cmd].filter(
      (name) => env[name] === undefined || (name !== 'CNI_CONTAINERID' && env[name] === ''),
    );
    if (missing.length > 0)
      throw new CniError(CniCode.InvalidEnvironment, `required env variables [${missing.join(',')}] missing`, '');

    if (cmd === 'VERSION') {
      return { exitCode: 0, stdout: JSON.stringify({ cniVersion: version, supportedVersions: SUPPORTED_VERSIONS }) };
    }
    const config: NetworkConfig = parseNetworkConfig(stdin, env);
    log.configure(config.ipam);
    log.write('debug', `timing: config parsed (${since()})`);
    if ((cmd === 'CHECK' || cmd === 'STATUS' || cmd === 'GC') && !commandAllowed(cmd, config.cniVersion)) {
      throw new CniError(
        CniCode.IncompatibleVersion,
        `config version does not allow ${cmd}`,
        `cniVersion ${config.cniVersion}`,
      );
    }
    const ctx: CommandContext = {
      api: new IpamApi(await serviceClient(config.ipam, log.write)),
      node,
      log: log.write,
      cache: fileCache(config.ipam.stateDir, (message) => log.write('warn', message), config.ipam.timeoutMs),
    };
    switch (cmd) {
      case 'ADD': {
        const attachment = checkAttachment(env.CNI_CONTAINERID, env.CNI_IFNAME);
        const args = parseCniArgs(env.CNI_ARGS);
        const owner = ownerOf(args, attachment);
        // The capability's runtimeConfig.ips first; else CNI_ARGS IP= (Podman 4's CNI backend sends --ip so).
        const ip = args.get('IP');
        const withStatic =
          config.staticAddresses === undefined && ip
            ? { ...config, staticAddresses: parseStaticAddresses(ip.split(',')) ?? [] }
            : config;
        const result = await add(ctx, withStatic, attachment, owner);
        return { exitCode: 0, stdout: JSON.stringify(encodeResult(result, config.cniVersion)) };
      }
      case 'DEL':
        await del(ctx, config, checkAttachment(env.CNI_CONTAINERID, env.CNI_IFNAME));
        return { exitCode: 0, stdout: '' };
      case 'CHECK':
        await check(ctx, config, checkAttachment(env.CNI_CONTAINERID, env.CNI_IFNAME));
        return { exitCode: 0, stdout: '' };
      case 'STATUS':
        await status(ctx, config);
        return { exitCode: 0, stdout: '' };
      case 'GC':
        await gc(ctx, config);
        return { exitCode: 0, stdout: '' };
      case 'RENEW': {
        const { renewed, requests } = await renew(ctx, config);
        return { exitCode: 0, stdout: JSON.stringify({ renewed: renewed.length, requests }) };
      }
    }
  } catch (error) {
    const failure = toCniError(error, command || 'CNI');
    log.write('error', failure.message);
    return { exitCode: 1, stdout: JSON.stringify(errorResult(failure, version)) };
  } finally {
    log.write('debug', `timing: done (${since()})`);
    log.flush();
  }
}

/** The executable: stdin and the environment in, stdout and the exit code out. */
export async function main(): Promise<void> {
  let stdin = '';
  try {
    // VERSION may come with no stdin at all; a closed or empty stdin reads as ''.
    stdin = readFileSync(0, 'utf8');
  } catch {
    stdin = '';
  }
  const outcome = await run(process.env, stdin);
  if (outcome.stdout) process.stdout.write(`${outcome.stdout}\n`);
  process.exitCode = outcome.exitCode;
}
