/**
 * What ipam-cni does once a call needs the service (every command but VERSION): the config, the log file, the
 * service client and the commands. cni/main.ts loads this module only then, so a VERSION call (and a call refused
 * for its environment) does not evaluate any of it.
 */
import { appendFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { HttpClient, type HttpClientOptions, type HttpResponse, type RequestOptions } from '../cli/api/http-client.ts';
import { ProblemError } from '../cli/errors.ts';
import { checkAttachment, ownerOf, parseCniArgs } from './attachment.ts';
import { add, check, del, gc, renew, status, type CommandContext } from './commands.ts';
import { IpamApi } from '../cli/api/ipam-api.ts';
import { fileCache } from './node-cache.ts';
import { LogLevel, parseNetworkConfig, parseStaticAddresses, type IpamConfig, type NetworkConfig } from './config.ts';
import { CniCode, CniError, errorResult, toCniError } from './errors.ts';
import type { Env, Outcome, ServiceCommand } from './main.ts';
import { nodeFetch } from './transport.ts';
import { commandAllowed, encodeResult } from './versions.ts';

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

/** One call of a command that needs the service; `version` is the cniVersion of its error document. Never throws. */
export async function runServiceCommand(options: {
  cmd: ServiceCommand;
  env: Env;
  stdin: string;
  node: string | undefined;
  version: string;
}): Promise<Outcome> {
  const { cmd, env, stdin, version } = options;
  const node = options.node ?? hostname();
  const log = new Log(cmd, `${env.CNI_CONTAINERID ?? '-'}/${env.CNI_IFNAME ?? '-'}`);
  try {
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
    const failure = toCniError(error, cmd);
    log.write('error', failure.message);
    return { exitCode: 1, stdout: JSON.stringify(errorResult(failure, version)) };
  } finally {
    log.write('debug', `timing: done (${since()})`);
    log.flush();
  }
}
