import type { Command } from 'commander';
import { HttpClient } from './api/http-client.ts';
import { IpamApi } from './api/ipam-api.ts';
import type { RequestSigner } from './api/sigv4.ts';
import { ExitCode } from './errors.ts';
import type { CliIo } from './io.ts';

/** The local stack's address (`npm start`). */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:3000';

/** The root command's options, as every subcommand sees them through optsWithGlobals(). */
export interface GlobalOptions {
  readonly endpoint?: string;
  readonly profile?: string;
  readonly region?: string;
  readonly verbose?: boolean;
  /** The principal to act as on the local stack (the x-ipam-principal header). */
  readonly as?: string;
}

/** Fails the command line: `error: <message>`, the command's help, exit 2. */
export function usageError(cmd: Command, message: string): never {
  cmd.error(`error: ${message}`, { exitCode: ExitCode.Usage, code: 'ipam.usage' });
}

/**
 * `-p/--pool`, else IPAM_POOL. Read here rather than by commander's env support, which reads process.env: every
 * input of a command comes through CliIo.
 */
export function poolOf(cmd: Command, io: CliIo): string {
  const pool = cmd.opts<{ pool?: string }>().pool ?? io.env.IPAM_POOL;
  if (!pool) usageError(cmd, "required option '-p, --pool <pool>' not specified (or set IPAM_POOL)");
  return pool;
}

/**
 * `--endpoint`, else IPAM_ENDPOINT, else the local stack (on $PORT when set, as `npm start` is); only http and https
 * URLs. The API's own `/v1` at the end is taken off (`http://127.0.0.1:3000/v1`, the README's `$API`, means the same
 * endpoint): every route already starts with it, and a deployed stage's URL never ends with it.
 */
export function endpointOf(cmd: Command, io: CliIo): URL {
  const local = io.env.PORT && /^\d+$/.test(io.env.PORT) ? `http://127.0.0.1:${io.env.PORT}` : DEFAULT_ENDPOINT;
  const text = cmd.optsWithGlobals<GlobalOptions>().endpoint ?? (io.env.IPAM_ENDPOINT || local);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    usageError(cmd, `--endpoint ${JSON.stringify(text)} is not a URL (for example ${DEFAULT_ENDPOINT}).`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    usageError(cmd, `--endpoint must be an http or https URL, not ${url.protocol}`);
  url.pathname = url.pathname.replace(/\/v1\/*$/, '/');
  return url;
}

/**
 * The API client for a command. An https endpoint is a deployed stage behind IAM: every request is signed with SigV4
 * (service execute-api) from the standard credential chain. An http one is the local stack, which checks nothing,
 * so nothing is signed and no credentials are looked up.
 */
export async function apiFor(cmd: Command, io: CliIo): Promise<IpamApi> {
  const options = cmd.optsWithGlobals<GlobalOptions>();
  const endpoint = endpointOf(cmd, io);
  const trace = options.verbose ? (line: string) => io.stderr(`${line}\n`) : undefined;
  // The local stack has no IAM: it takes the caller from a header, which a deployed stage refuses (docs/local-stack.md).
  const principal = options.as ?? (io.env.IPAM_PRINCIPAL || undefined);
  if (principal !== undefined && endpoint.protocol === 'https:')
    usageError(
      cmd,
      '--as (or IPAM_PRINCIPAL) names a principal on the local stack only; a deployed stage takes the caller from your AWS credentials (--profile)',
    );
  const signer = endpoint.protocol === 'https:' ? await signerFor(cmd, io, endpoint, trace) : undefined;
  const headers = principal !== undefined ? { 'x-ipam-principal': principal } : undefined;
  return new IpamApi(
    new HttpClient({
      endpoint,
      fetch: io.fetch,
      ...(signer ? { signer } : {}),
      ...(trace ? { trace } : {}),
      ...(headers ? { headers } : {}),
    }),
  );
}

/**
 * The SigV4 signer for `endpoint` (service execute-api): the region from --region, the hostname or the environment,
 * credentials from the standard chain (--profile).
 */
export async function signerFor(
  cmd: Command,
  io: CliIo,
  endpoint: URL,
  trace?: (line: string) => void,
): Promise<RequestSigner> {
  const options = cmd.optsWithGlobals<GlobalOptions>();
  // Loaded only here: the signer and the credential chain cost a few hundred milliseconds of start-up that calls
  // to the local stack do not need.
  const { credentialChain, resolveRegion, sigV4Signer } = await import('./api/sigv4.ts');
  const region = resolveRegion(endpoint, options.region, io.env);
  trace?.(`* signing for execute-api in ${region}${options.profile ? ` with profile ${options.profile}` : ''}`);
  return sigV4Signer({ credentials: await credentialChain(options.profile), region });
}
