import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { ConfigError } from '../errors.ts';

/** What a signer sees of a request; it returns the headers to send (the request's own plus the signature's). */
export interface OutgoingRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export type RequestSigner = (request: OutgoingRequest) => Promise<Record<string, string>>;

type SignerInit = ConstructorParameters<typeof SignatureV4>[0];
/** Static credentials or a provider, as the AWS SDK takes them (the credential chain is a provider). */
export type Credentials = SignerInit['credentials'];

export interface SigV4Options {
  readonly credentials: Credentials;
  readonly region: string;
  /** `execute-api` for API Gateway; the published test vectors use `service`. */
  readonly service?: string;
  /** The signing time; the clock in production, a fixed date in tests. */
  readonly now?: () => Date;
}

/**
 * Signs requests with the AWS SDK's own SigV4 implementation (`@smithy/signature-v4`, the one inside every SDK
 * client), so the canonical request, the double-encoded path and the session-token header are AWS's, not ours.
 *
 * `applyChecksum: false`: API Gateway does not read `x-amz-content-sha256` (the payload hash is inside the signature
 * either way), and leaving it out keeps the signed headers those of the published test vectors (`host;x-amz-date`).
 */
export function sigV4Signer(options: SigV4Options): RequestSigner {
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: options.service ?? 'execute-api',
    sha256: Sha256,
    applyChecksum: false,
  });
  return async (request) => {
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of request.url.searchParams) {
      const seen = query[key];
      query[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
    }
    const signed = await signer.sign(
      {
        method: request.method,
        protocol: request.url.protocol,
        hostname: request.url.hostname,
        ...(request.url.port ? { port: Number(request.url.port) } : {}),
        // The path as it goes on the wire (percent-encoded); the signer encodes it once more, as SigV4 wants for
        // every service but S3 (an owner uid's '/' is %2F on the wire and %252F in the canonical request).
        path: request.url.pathname,
        query,
        // Host is signed, as every SigV4 request must; fetch sends the same value.
        headers: { ...request.headers, host: request.url.host },
        ...(request.body !== undefined ? { body: request.body } : {}),
      },
      options.now ? { signingDate: options.now() } : {},
    );
    const headers: Record<string, string> = {};
    // fetch sets Host itself and refuses to be given one.
    for (const [key, value] of Object.entries(signed.headers)) if (key.toLowerCase() !== 'host') headers[key] = value;
    return headers;
  };
}

/** `abc123.execute-api.eu-west-1.amazonaws.com` (and `.amazonaws.com.cn`) -> its region; undefined for other hosts. */
export function regionFromHost(hostname: string): string | undefined {
  return /^[a-z0-9]+\.execute-api(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/i.exec(hostname)?.[1];
}

/**
 * The region to sign for: `--region`, else the execute-api hostname's (the only region whose signature that
 * endpoint accepts, even when the shell's AWS_REGION points elsewhere), else AWS_REGION / AWS_DEFAULT_REGION (a
 * custom domain name says nothing).
 * @throws ConfigError when none of them gives one.
 */
export function resolveRegion(
  endpoint: URL,
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string {
  const region = flag || regionFromHost(endpoint.hostname) || env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!region) {
    throw new ConfigError(`cannot tell which AWS region ${endpoint.origin} is in: pass --region or set AWS_REGION.`);
  }
  return region;
}

/**
 * The standard credential chain (environment, SSO, shared config and credentials files with `--profile` or
 * AWS_PROFILE, process, web identity, container and instance roles), loaded only when a request is signed: plain
 * http calls to the local stack never import it.
 */
export async function credentialChain(profile: string | undefined): Promise<Credentials> {
  const { fromNodeProviderChain } = await import('@aws-sdk/credential-providers');
  const provider = fromNodeProviderChain(profile ? { profile } : {});
  return async () => {
    try {
      return await provider();
    } catch (error) {
      throw new ConfigError(
        `no AWS credentials to sign the request with${profile ? ` (profile ${profile})` : ''}: ${(error as Error).message}`,
      );
    }
  };
}
