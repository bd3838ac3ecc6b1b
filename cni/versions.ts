/**
 * The CNI versions this plugin speaks and the IPAM result in each of them (SPEC.md, "Result Types"; the 0.3.x/0.4.0
 * result differs from 1.x only by `ips[].version`, which 1.0.0 dropped).
 */
import { CniCode, CniError } from './errors.ts';

export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];
export const LATEST_VERSION: CniVersion = '1.1.0';

/** A version of the spec as [major, minor, patch]; undefined when the text is not one. */
function parseVersion(text: string): [number, number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** a < b: -1, a = b: 0, a > b: 1. */
export function compareVersions(a: string, b: string): number {
  const pa = parseVersion(a) ?? [0, 0, 0];
  const pb = parseVersion(b) ?? [0, 0, 0];
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] ?? 0) < (pb[i] ?? 0) ? -1 : 1;
  return 0;
}

/**
 * The input's `cniVersion`, checked: a version this plugin speaks.
 * @throws CniError 7 when absent or not a string, 1 when it is a version this plugin does not speak (0.1.0, 0.2.0).
 */
export function checkVersion(value: unknown): CniVersion {
  if (typeof value !== 'string' || value === '')
    throw new CniError(
      CniCode.InvalidConfig,
      'missing cniVersion',
      'the network configuration must say which CNI version it uses (cniVersion)',
    );
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(value)) {
    throw new CniError(
      CniCode.IncompatibleVersion,
      'incompatible CNI versions',
      `config is "${value}", plugin supports ${JSON.stringify(SUPPORTED_VERSIONS)}`,
    );
  }
  return value as CniVersion;
}

/** CHECK exists from 0.4.0, STATUS and GC from 1.1.0. */
export function commandAllowed(command: 'CHECK' | 'STATUS' | 'GC', version: CniVersion): boolean {
  return compareVersions(version, command === 'CHECK' ? '0.4.0' : '1.1.0') >= 0;
}

export type IpVersion = '4' | '6';

/** One address of the result, version-neutral. */
export interface ResultIp {
  /** address/prefix of the range it came from. */
  readonly address: string;
  readonly version: IpVersion;
  readonly gateway?: string;
}

export interface Route {
  readonly dst: string;
  readonly gw?: string;
  readonly mtu?: number;
  readonly advmss?: number;
  readonly priority?: number;
  readonly table?: number;
  readonly scope?: number;
}

export interface Dns {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

export interface IpamResult {
  readonly ips: readonly ResultIp[];
  readonly routes: readonly Route[];
  readonly dns?: Dns;
}

/** Route fields that 1.1.0 added; older results carry only dst and gw. */
function routeIn(route: Route, version: CniVersion): Route {
  if (compareVersions(version, '1.1.0') >= 0) return route;
  return { dst: route.dst, ...(route.gw !== undefined ? { gw: route.gw } : {}) };
}

/** The IPAM result as `version` writes it: `ips[].version` below 1.0.0, no `interfaces` (a delegated plugin's). */
export function encodeResult(result: IpamResult, version: CniVersion): Record<string, unknown> {
  const withIpVersion = compareVersions(version, '1.0.0') < 0;
  return {
    cniVersion: version,
    ips: result.ips.map((ip) => ({
      ...(withIpVersion ? { version: ip.version } : {}),
      address: ip.address,
      ...(ip.gateway !== undefined ? { gateway: ip.gateway } : {}),
    })),
    ...(result.routes.length > 0 ? { routes: result.routes.map((r) => routeIn(r, version)) } : {}),
    ...(result.dns !== undefined ? { dns: result.dns } : {}),
  };
}

/**
 * The addresses a `prevResult` lists (address/prefix), in any supported version: CHECK compares them with the claim.
 * @throws CniError 6 when prevResult is not a result.
 */
export function prevResultAddresses(prevResult: unknown): string[] {
  if (typeof prevResult !== 'object' || prevResult === null || Array.isArray(prevResult)) {
    throw new CniError(CniCode.DecodeFailure, 'invalid prevResult', 'prevResult must be an object with an ips list');
  }
  const ips = (prevResult as { ips?: unknown }).ips ?? [];
  if (!Array.isArray(ips))
    throw new CniError(CniCode.DecodeFailure, 'invalid prevResult', 'prevResult.ips must be a list');
  return ips.map((ip, i) => {
    const address = (ip as { address?: unknown } | null)?.address;
    if (typeof address !== 'string')
      throw new CniError(CniCode.DecodeFailure, 'invalid prevResult', `prevResult.ips[${i}].address must be a string`);
    return address;
  });
}
