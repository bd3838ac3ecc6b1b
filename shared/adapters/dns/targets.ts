import { readFile } from 'node:fs/promises';
import { Route53Client } from '@aws-sdk/client-route-53';
import { environmentSecret } from '../../config.ts';
import type { DnsTarget, DnsTargets } from '../../core/dns/ports.ts';
import type { DnsTargetSpec, Rfc2136Target as Rfc2136Spec } from '../../core/dns/settings.ts';
import { LocalZoneTarget, type LocalZoneEndpoint } from './local-zone-target.ts';
import { Rfc2136Target } from './rfc2136-target.ts';
import { realTime, RequestPace, Route53Target } from './route53-target.ts';
import type { TsigKey } from './tsig.ts';

export interface DnsTargetsOptions {
  /** The local stack's zones (config.localDns), read when a `local` target is first used; absent: none here. */
  readonly local?: () => LocalZoneEndpoint | undefined;
}

/**
 * The DNS targets of the deployed functions, one adapter per target spec, made on first use and kept for the
 * container's life (a TSIG secret is read once per container, and again after a failed read). The Route 53 targets
 * share one client and one request pace: Route 53's request rate is the account's.
 */
export function dnsTargets(options: DnsTargetsOptions = {}): DnsTargets {
  const made = new Map<string, DnsTarget>();
  let route53: { client: Route53Client; pace: RequestPace } | undefined;
  return (spec: DnsTargetSpec) => {
    const key = JSON.stringify(spec);
    let target = made.get(key);
    if (!target) {
      if (spec.kind === 'route53') {
        // The SDK's own retries off: the target retries throttling itself, paced and in order.
        route53 ??= { client: new Route53Client({ maxAttempts: 1 }), pace: new RequestPace(realTime) };
        target = new Route53Target({
          client: route53.client,
          pace: route53.pace,
          hostedZoneId: spec.hostedZoneId,
          ...(spec.reverseZoneIds ? { reverseZoneIds: spec.reverseZoneIds } : {}),
        });
      } else target = makeTarget(spec, options);
      made.set(key, target);
    }
    return target;
  };
}

function makeTarget(spec: Exclude<DnsTargetSpec, { kind: 'route53' }>, options: DnsTargetsOptions): DnsTarget {
  if (spec.kind === 'local') {
    const at = options.local?.();
    // Only the local stack takes the target (dns/settings.ts), and only its stream function has the endpoint.
    if (!at)
      throw new Error('The local DNS target is served by the local stack only (npm start): no LOCAL_DNS_ENDPOINT here');
    return new LocalZoneTarget(at);
  }
  return rfc2136Target(spec);
}

function rfc2136Target(spec: Rfc2136Spec): DnsTarget {
  let key: Promise<TsigKey> | undefined;
  const read = () =>
    (key ??= readSecret(spec).then(
      (secret) => ({ name: spec.keyName, secret }),
      (error: unknown) => {
        key = undefined;
        throw error;
      },
    ));
  return new Rfc2136Target({ server: spec.server, port: spec.port, key: read });
}

/**
 * The TSIG secret's bytes from where the pool's secretFrom says: env:NAME or file:/path. No SSM client here: it would
 * push every function's bundle past its size budget; a deployment fills the variable from SSM instead.
 */
async function readSecret(spec: Rfc2136Spec): Promise<Buffer> {
  const from = spec.secretFrom;
  const [scheme] = from.split(':', 1);
  const rest = from.slice(scheme!.length + 1);
  let text: string | undefined;
  if (scheme === 'env') text = environmentSecret(rest);
  else if (scheme === 'file') text = await readFile(rest, 'utf8');
  else throw new Error(`TSIG secrets from ${scheme}: are not read by this build (use env: or file:)`);
  const secret = text?.trim();
  if (!secret) throw new Error(`No TSIG secret at ${from}`);
  return Buffer.from(secret, 'base64');
}
