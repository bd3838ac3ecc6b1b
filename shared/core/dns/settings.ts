/** A pool's DNS settings: the zone its claims' names go in, and the server that holds it. Fixed at creation. */
import { InvalidArgumentError } from '../errors.ts';
import { checkDnsLabel } from '../names.ts';
import type { DnsSettings, DnsTargetSpec, LocalTarget, Rfc2136Target, Route53Target } from '../model.ts';

export type { DnsSettings, DnsTargetSpec, LocalTarget, Rfc2136Target, Route53Target };

/** Where the TSIG secret of an RFC 2136 target comes from: never the secret itself (it stays out of the table). */
export const SECRET_SOURCES = ['env:', 'file:'] as const;

export const DEFAULT_DNS_TTL_SECONDS = 60;
export const MAX_DNS_TTL_SECONDS = 86_400;

/** Longest absolute name: 253 characters plus the root's dot. */
const MAX_NAME = 254;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An absolute zone name, lower-cased, with its trailing dot. @throws InvalidArgumentError */
export function checkZoneName(value: unknown, field: string): string {
  const sentence = `${field} must be a DNS zone name of labels of letters, digits or '-' (e.g. "pods.example.internal.").`;
  if (typeof value !== 'string') throw new InvalidArgumentError(sentence, field);
  const zone = (value.endsWith('.') ? value : `${value}.`).toLowerCase();
  if (zone.length > MAX_NAME || zone === '.') throw new InvalidArgumentError(sentence, field);
  for (const label of zone.slice(0, -1).split('.')) {
    try {
      checkDnsLabel(label, field);
    } catch {
      throw new InvalidArgumentError(sentence, field);
    }
  }
  return zone;
}

/**
 * A pool's target. `local` (the local stack's embedded server) is the default there and refused elsewhere: a deployed
 * stack has no server of its own, and a pool that silently published nowhere would look like a broken DNS.
 */
function checkTarget(value: unknown, localDns: boolean): DnsTargetSpec {
  const field = 'dns.target';
  const sentence = `${field} must be {"route53": {"hostedZoneId": "Z..."}} or {"rfc2136": {"server": "10.0.0.53", "port": 53, "keyName": "ipam", "secretFrom": "env:IPAM_TSIG_SECRET"}}${localDns ? ' or {"local": {}}' : ''}.`;
  if (value === undefined && localDns) return { kind: 'local' };
  if (!isObject(value) || Object.keys(value).length !== 1) throw new InvalidArgumentError(sentence, field);
  if (isObject(value.route53)) return checkRoute53(value.route53);
  if (isObject(value.rfc2136)) return checkRfc2136(value.rfc2136);
  if (isObject(value.local)) return checkLocal(value.local, localDns);
  throw new InvalidArgumentError(sentence, field);
}

function checkLocal(v: Record<string, unknown>, localDns: boolean): LocalTarget {
  const field = 'dns.target.local';
  if (!localDns)
    throw new InvalidArgumentError(
      `${field} is the local stack's embedded DNS server (npm start): this stack has none; name a route53 or rfc2136 target.`,
      field,
    );
  if (Object.keys(v).length > 0) throw new InvalidArgumentError(`${field} takes no settings: {"local": {}}.`, field);
  return { kind: 'local' };
}

function checkRoute53(v: Record<string, unknown>): Route53Target {
  const id = v.hostedZoneId;
  if (typeof id !== 'string' || !/^[A-Z0-9]{1,32}$/.test(id))
    throw new InvalidArgumentError(
      'dns.target.route53.hostedZoneId must be a hosted zone id (upper-case letters and digits).',
      'dns.target.route53.hostedZoneId',
    );
  const reverse = v.reverseZoneIds;
  if (reverse === undefined) return { kind: 'route53', hostedZoneId: id };
  const field = 'dns.target.route53.reverseZoneIds';
  if (!isObject(reverse))
    throw new InvalidArgumentError(`${field} must map reverse zone names to hosted zone ids.`, field);
  const ids: Record<string, string> = {};
  for (const [zone, zid] of Object.entries(reverse)) {
    if (typeof zid !== 'string' || !/^[A-Z0-9]{1,32}$/.test(zid))
      throw new InvalidArgumentError(`${field} must map reverse zone names to hosted zone ids.`, field);
    ids[checkReverseZone(zone, field)] = zid;
  }
  return { kind: 'route53', hostedZoneId: id, reverseZoneIds: ids };
}

function checkRfc2136(v: Record<string, unknown>): Rfc2136Target {
  const at = (name: string) => `dns.target.rfc2136.${name}`;
  if (typeof v.server !== 'string' || !/^[A-Za-z0-9.:-]{1,253}$/.test(v.server))
    throw new InvalidArgumentError(`${at('server')} must be the server's address or host name.`, at('server'));
  const port = v.port ?? 53;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535)
    throw new InvalidArgumentError(`${at('port')} must be a port number from 1 to 65535.`, at('port'));
  const keyName = checkZoneName(v.keyName, at('keyName'));
  const algorithm = v.keyAlgorithm ?? 'hmac-sha256';
  if (algorithm !== 'hmac-sha256')
    throw new InvalidArgumentError(`${at('keyAlgorithm')} must be hmac-sha256.`, at('keyAlgorithm'));
  const from = v.secretFrom;
  if (
    typeof from !== 'string' ||
    !SECRET_SOURCES.some((s) => from.startsWith(s) && from.length > s.length) ||
    from.length > 512
  )
    throw new InvalidArgumentError(
      `${at('secretFrom')} must name where the TSIG secret is read, one of ${SECRET_SOURCES.map((s) => `${s}...`).join(', ')}; the secret itself is never stored.`,
      at('secretFrom'),
    );
  if ('secret' in v)
    throw new InvalidArgumentError(
      `${at('secret')} is not taken: name where the secret is read with secretFrom, so it stays out of the table.`,
      at('secret'),
    );
  return { kind: 'rfc2136', server: v.server, port, keyName, keyAlgorithm: 'hmac-sha256', secretFrom: from };
}

function checkReverseZone(value: unknown, field: string): string {
  const zone = checkZoneName(value, field);
  if (!zone.endsWith('.in-addr.arpa.') && !zone.endsWith('.ip6.arpa.'))
    throw new InvalidArgumentError(`${field} must name zones under in-addr.arpa. or ip6.arpa.`, field);
  return zone;
}

/**
 * Checks a pool's `dns`. A block pool takes none: its claims hold blocks handed to other pools or nodes, not hosts
 * with a name. `localDns`: on the local stack, whose embedded server is the default target. @throws InvalidArgumentError
 */
export function checkDnsSettings(
  value: unknown,
  opts: { readonly blockPool: boolean; readonly localDns?: boolean },
): DnsSettings {
  const field = 'dns';
  if (!isObject(value))
    throw new InvalidArgumentError(`${field} must be an object with zone, ttlSeconds, reverse and target.`, field);
  if (opts.blockPool)
    throw new InvalidArgumentError(
      'A block pool publishes no DNS names (its claims are blocks, not hosts): leave out dns, or set it on the pools made from its blocks.',
      field,
    );
  const zone = checkZoneName(value.zone, 'dns.zone');
  const ttl = value.ttlSeconds ?? DEFAULT_DNS_TTL_SECONDS;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 0 || ttl > MAX_DNS_TTL_SECONDS)
    throw new InvalidArgumentError(
      `dns.ttlSeconds must be a whole number of seconds from 0 to ${MAX_DNS_TTL_SECONDS}.`,
      'dns.ttlSeconds',
    );
  const reverse = value.reverse ?? false;
  if (typeof reverse !== 'boolean') throw new InvalidArgumentError('dns.reverse must be true or false.', 'dns.reverse');
  const zones = value.reverseZones;
  if (zones !== undefined && (!Array.isArray(zones) || zones.length === 0 || zones.length > 16))
    throw new InvalidArgumentError('dns.reverseZones must list 1 to 16 reverse zones.', 'dns.reverseZones');
  const target = checkTarget(value.target, opts.localDns === true);
  return {
    zone,
    ttlSeconds: ttl,
    reverse,
    ...(zones ? { reverseZones: [...new Set(zones.map((z) => checkReverseZone(z, 'dns.reverseZones')))] } : {}),
    target,
  };
}

/** Checks a claim's `hostname`: one DNS label, published instead of the claim's name. @throws InvalidArgumentError */
export function checkHostname(value: unknown): string {
  return checkDnsLabel(value, 'hostname');
}
