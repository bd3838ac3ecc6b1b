/**
 * The network configuration a runtime hands the plugin on stdin, read and validated once per call: the top level
 * (cniVersion, name, prevResult, cni.dev/valid-attachments) and the `ipam` object, whose unknown fields are refused
 * with code 7 so a typo never silently changes what a pod gets.
 *
 * The `ipam` object takes this plugin's own fields and whereabouts' (so a migration is a change of `type` plus
 * `endpoint`):
 *
 *   field                          meaning here
 *   endpoint                       the service's base URL; https is signed with SigV4 (credentials: the standard chain)
 *   region                         the region to sign for (default: the execute-api host's, else AWS_REGION)
 *   pool                           the pool to claim from (default: network_name, else the network's name)
 *   ipFamilyPolicy                 SingleStack | PreferDualStack | RequireDualStack (default: from the ranges)
 *   timeoutMs                      per request to the service (default 10000)
 *   reuseDelaySeconds              the reuse delay of a pool this config creates (default 0): sticky pod addresses
 *   leaseSeconds                   claims expire this long after ADD unless the node's RENEW moves them on (default:
 *                                  none, claims held until DEL): a crashed node's addresses come back on their own
 *   gateway                        an address, or one per family: returned with the family's address, never handed out
 *   routes, dns                    returned as given
 *   logFile, logLevel              a file the plugin appends lines to (none by default); error, warn, info, debug
 *   stateDir                       where the node remembers a checked pool (default /run/ipam-cni; see commands.ts)
 *   range (+range_start/range_end) whereabouts: one range, a CIDR; host bits in it are an implicit range_start
 *   exclude                        whereabouts: CIDRs or addresses never handed out
 *   ipRanges                       whereabouts: [{range, range_start, range_end, exclude}], one entry per family
 *   network_name                   whereabouts: names the pool when `pool` is absent
 *   log_file, log_level            whereabouts' spellings of logFile, logLevel
 *   kubernetes, datastore, etcd_*, whereabouts' own storage and reconciler settings: accepted and ignored (the
 *   configuration_path, leader_*,   service stores and reconciles), so an unchanged whereabouts config still parses
 *   reconciler_cron_expression,
 *   sleep_for_race, enable_overlapping_ranges
 *
 * Ranges given here are ensured on the service: the pool gets the ranges and an `exclude` list made of `exclude`,
 * the addresses outside [range_start, range_end] and the gateways, so every node with the same config asks for the
 * same pool and a node with another config gets a code-7 error instead of a changed pool.
 */
import { familyBits, formatAddress, IpFamily, parseAddress, type IpAddress } from '../shared/core/ip/address.ts';
import { IpamError } from '../shared/core/errors.ts';
import { CniCode, CniError } from './errors.ts';
import { checkVersion, type CniVersion, type Dns, type Route } from './versions.ts';

export type Family = IpFamily;
export const IpFamilyPolicy = {
  SingleStack: 'SingleStack',
  PreferDualStack: 'PreferDualStack',
  RequireDualStack: 'RequireDualStack',
} as const;
export type IpFamilyPolicy = (typeof IpFamilyPolicy)[keyof typeof IpFamilyPolicy];
export const LogLevel = { error: 0, warn: 1, info: 2, debug: 3 } as const;
export type LogLevel = keyof typeof LogLevel;

export const DEFAULT_TIMEOUT_MS = 10_000;
/** tmpfs on systemd hosts: a reboot forgets which pools were checked, so each boot checks them again. */
export const DEFAULT_STATE_DIR = '/run/ipam-cni';

/** A range of the config: the canonical CIDR the pool holds, and the exclusions its range_start/range_end imply. */
export interface RangeConfig {
  readonly cidr: string;
  readonly family: Family;
  readonly prefix: number;
}

export interface IpamConfig {
  readonly endpoint: URL;
  /** Set for https endpoints: the region requests are signed for. */
  readonly region?: string;
  readonly pool: string;
  readonly ipFamilyPolicy: IpFamilyPolicy;
  /** Families asked for, in order; empty when the config names no ranges and leaves the choice to the service. */
  readonly ipFamilies: readonly Family[];
  readonly timeoutMs: number;
  readonly gateways: Readonly<Partial<Record<Family, string>>>;
  readonly routes: readonly Route[];
  readonly dns?: Dns;
  readonly logFile?: string;
  readonly logLevel: LogLevel;
  /** The folder of the pool check cache (commands.ts). */
  readonly stateDir: string;
  /** The ranges to ensure; empty when the pool is managed elsewhere. */
  readonly ranges: readonly RangeConfig[];
  /** The pool's exclusions (canonical CIDRs, sorted) when the config names ranges. */
  readonly exclude: readonly string[];
  /** The pool's reuse delay when the config names ranges (0: none). */
  readonly reuseDelaySeconds: number;
  /** The claims' lease (ttlSeconds) when set: the node renews them (RENEW), a dead node's expire. */
  readonly leaseSeconds?: number;
  /** The node's name on its claims (label cni.ipam/node); default: the host name. */
  readonly nodeName?: string;
  /** The cluster's id on its claims (label cni.ipam/cluster): GC of one cluster never touches another's. */
  readonly clusterId?: string;
}

export interface Attachment {
  readonly containerID: string;
  readonly ifname: string;
}

export interface NetworkConfig {
  readonly cniVersion: CniVersion;
  readonly name: string;
  readonly ipam: IpamConfig;
  readonly prevResult?: unknown;
  /** GC's `cni.dev/valid-attachments`. */
  readonly validAttachments?: readonly Attachment[];
  /**
   * Addresses the runtime asks for (the `ips` capability: `runtimeConfig.ips`, as Podman's `--ip` and Multus'
   * `ips` send them), canonical, without prefix; one per family.
   */
  readonly staticAddresses?: readonly string[];
}

/** Names CNI accepts for networks and container IDs (libcni's utils). */
export const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** Pool names: DNS-1123 labels (shared/core/names.ts). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** whereabouts settings about its own storage and reconciler: meaningless here, accepted so old configs parse. */
const IGNORED_WHEREABOUTS_FIELDS = new Set([
  'kubernetes',
  'datastore',
  'etcd_host',
  'etcd_username',
  'etcd_password',
  'etcd_key_file',
  'etcd_cert_file',
  'etcd_ca_cert_file',
  'configuration_path',
  'leader_lease_duration',
  'leader_renew_deadline',
  'leader_retry_period',
  'reconciler_cron_expression',
  'sleep_for_race',
  'enable_overlapping_ranges',
]);

const IPAM_FIELDS = new Set([
  'type',
  'endpoint',
  'region',
  'pool',
  'ipFamilyPolicy',
  'timeoutMs',
  'reuseDelaySeconds',
  'leaseSeconds',
  'gateway',
  'routes',
  'dns',
  'logFile',
  'logLevel',
  'stateDir',
  'log_file',
  'log_level',
  'range',
  'range_start',
  'range_end',
  'exclude',
  'ipRanges',
  'network_name',
  'nodeName',
  'clusterId',
]);

const RANGE_FIELDS = new Set(['range', 'range_start', 'range_end', 'exclude']);

function invalid(details: string): CniError {
  return new CniError(CniCode.InvalidConfig, 'invalid IPAM configuration', details);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(obj: Record<string, unknown>, key: string, where: string): string | undefined {
  const value = obj[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw invalid(`${where}.${key} must be a non-empty string`);
  return value;
}

function stringList(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw invalid(`${where} must be a list of strings`);
  return value as string[];
}

/** Parses an address, turning the core's InvalidArgumentError into a code-7 error naming the field. */
function address(text: unknown, where: string): IpAddress {
  if (typeof text !== 'string') throw invalid(`${where} must be an IP address`);
  try {
    return parseAddress(text, where);
  } catch (error) {
    if (error instanceof IpamError) throw invalid(error.message);
    throw error;
  }
}

function mask(family: Family, prefix: number): bigint {
  const bits = BigInt(familyBits(family));
  const all = (1n << bits) - 1n;
  return ((all >> (bits - BigInt(prefix))) << (bits - BigInt(prefix))) & all;
}

interface Block {
  readonly family: Family;
  readonly base: bigint;
  readonly prefix: number;
}

function formatBlock(block: Block): string {
  return `${formatAddress({ family: block.family, value: block.base })}/${block.prefix}`;
}

/** A CIDR, host bits allowed (whereabouts reads them with Go's ParseCIDR): the block and the address as written. */
function cidrWithHost(text: unknown, where: string): { block: Block; host: IpAddress } {
  if (typeof text !== 'string' || !text.includes('/')) throw invalid(`${where} must be a CIDR such as 10.1.0.0/24`);
  const slash = text.indexOf('/');
  const host = address(text.slice(0, slash), where);
  const prefixText = text.slice(slash + 1);
  const bits = familyBits(host.family);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits)
    throw invalid(`${where} ${JSON.stringify(text)} has an invalid prefix length (0-${bits})`);
  const prefix = Number(prefixText);
  return { block: { family: host.family, base: host.value & mask(host.family, prefix), prefix }, host };
}

/** An exclusion: a CIDR (host bits dropped) or a single address, as a canonical CIDR. */
function exclusion(text: unknown, where: string): string {
  if (typeof text === 'string' && !text.includes('/')) {
    const a = address(text, where);
    return formatBlock({ family: a.family, base: a.value, prefix: familyBits(a.family) });
  }
  return formatBlock(cidrWithHost(text, where).block);
}

/** The fewest CIDR blocks covering [first, last] exactly. */
export function coverInterval(family: Family, first: bigint, last: bigint): string[] {
  const bits = familyBits(family);
  const out: string[] = [];
  let at = first;
  while (at <= last) {
    // The largest aligned block starting at `at` that does not pass `last`.
    let size = 0;
    while (size < bits && (at & ((1n << BigInt(size + 1)) - 1n)) === 0n && at + (1n << BigInt(size + 1)) - 1n <= last)
      size++;
    out.push(formatBlock({ family, base: at, prefix: bits - size }));
    at += 1n << BigInt(size);
  }
  return out;
}

interface ParsedRange {
  readonly range: RangeConfig;
  readonly block: Block;
  readonly exclude: readonly string[];
}

/** One whereabouts range entry: its CIDR, and what range_start/range_end leave out of it as exclusions. */
function parseRange(entry: Record<string, unknown>, where: string): ParsedRange {
  const { block, host } = cidrWithHost(entry.range, `${where}.range`);
  const last = block.base + (1n << BigInt(familyBits(block.family) - block.prefix)) - 1n;
  const inBlock = (a: IpAddress, field: string): bigint => {
    if (a.family !== block.family || a.value < block.base || a.value > last)
      throw invalid(`${where}.${field} ${formatAddress(a)} is not inside ${formatBlock(block)}`);
    return a.value;
  };
  const startText = entry.range_start;
  const endText = entry.range_end;
  const start =
    startText !== undefined
      ? inBlock(address(startText, `${where}.range_start`), 'range_start')
      : host.value !== block.base
        ? host.value
        : undefined;
  const end = endText !== undefined ? inBlock(address(endText, `${where}.range_end`), 'range_end') : undefined;
  if (start !== undefined && end !== undefined && start > end)
    throw invalid(`${where}.range_start is after ${where}.range_end`);
  const exclude: string[] = [];
  if (start !== undefined && start > block.base) exclude.push(...coverInterval(block.family, block.base, start - 1n));
  if (end !== undefined && end < last) exclude.push(...coverInterval(block.family, end + 1n, last));
  if (entry.exclude !== undefined)
    exclude.push(
      ...stringList(entry.exclude, `${where}.exclude`).map((e, i) => exclusion(e, `${where}.exclude[${i}]`)),
    );
  return { range: { cidr: formatBlock(block), family: block.family, prefix: block.prefix }, block, exclude };
}

function parseRoutes(value: unknown): Route[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalid('ipam.routes must be a list of {dst, gw}');
  return value.map((r, i) => {
    const where = `ipam.routes[${i}]`;
    if (!isRecord(r)) throw invalid(`${where} must be an object with dst`);
    for (const key of Object.keys(r))
      if (!['dst', 'gw', 'mtu', 'advmss', 'priority', 'table', 'scope'].includes(key))
        throw invalid(`${where} has an unknown field ${JSON.stringify(key)}`);
    const dst = formatBlock(cidrWithHost(r.dst, `${where}.dst`).block);
    const gw = r.gw === undefined ? undefined : formatAddress(address(r.gw, `${where}.gw`));
    const numbers: Record<string, number> = {};
    for (const key of ['mtu', 'advmss', 'priority', 'table', 'scope']) {
      const n = r[key];
      if (n === undefined) continue;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
        throw invalid(`${where}.${key} must be a whole number`);
      numbers[key] = n;
    }
    return { dst, ...(gw !== undefined ? { gw } : {}), ...numbers };
  });
}

function parseDns(value: unknown): Dns | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) throw invalid('ipam.dns must be an object');
  for (const key of Object.keys(value))
    if (!['nameservers', 'domain', 'search', 'options'].includes(key))
      throw invalid(`ipam.dns has an unknown field ${JSON.stringify(key)}`);
  const domain = optionalString(value, 'domain', 'ipam.dns');
  return {
    ...(value.nameservers !== undefined
      ? {
          nameservers: stringList(value.nameservers, 'ipam.dns.nameservers').map((n, i) =>
            formatAddress(address(n, `ipam.dns.nameservers[${i}]`)),
          ),
        }
      : {}),
    ...(domain !== undefined ? { domain } : {}),
    ...(value.search !== undefined ? { search: stringList(value.search, 'ipam.dns.search') } : {}),
    ...(value.options !== undefined ? { options: stringList(value.options, 'ipam.dns.options') } : {}),
  };
}

function parseLogLevel(value: unknown): LogLevel {
  if (value === undefined) return 'info';
  // whereabouts' levels: debug, verbose, error, panic.
  const aliases: Record<string, LogLevel> = { verbose: 'info', panic: 'error' };
  if (typeof value === 'string' && (value in LogLevel || value in aliases))
    return aliases[value] ?? (value as LogLevel);
  throw invalid(`ipam.logLevel must be one of ${Object.keys(LogLevel).join(', ')}`);
}

/**
 * An execute-api hostname's region: the rule of cli/api/sigv4.ts's regionFromHost, repeated here because importing
 * that module would load the SigV4 signer on every call, http ones included (the plugin's start time is a goal).
 */
function regionFromHost(hostname: string): string | undefined {
  return /^[a-z0-9]+\.execute-api(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/i.exec(hostname)?.[1];
}

function parseEndpoint(
  value: unknown,
  regionField: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): { endpoint: URL; region?: string } {
  if (typeof value !== 'string' || value === '')
    throw invalid(
      'ipam.endpoint is required: the IPAM service URL, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com',
    );
  let endpoint: URL;
  try {
    endpoint = new URL(value);
  } catch {
    throw invalid(`ipam.endpoint ${JSON.stringify(value)} is not a URL`);
  }
  if (endpoint.protocol === 'http:') return { endpoint };
  if (endpoint.protocol !== 'https:')
    throw invalid(`ipam.endpoint must be an http or https URL, not ${endpoint.protocol}`);
  const region = regionField || regionFromHost(endpoint.hostname) || env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!region)
    throw invalid(
      `cannot tell which AWS region ${endpoint.origin} is in: set ipam.region (or AWS_REGION in the runtime's environment)`,
    );
  return { endpoint, region };
}

function parseGateways(value: unknown): Partial<Record<Family, string>> {
  if (value === undefined) return {};
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : undefined;
  if (!list) throw invalid('ipam.gateway must be an address or a list of one address per family');
  const out: Partial<Record<Family, string>> = {};
  list.forEach((g, i) => {
    const a = address(g, typeof value === 'string' ? 'ipam.gateway' : `ipam.gateway[${i}]`);
    if (out[a.family] !== undefined) throw invalid(`ipam.gateway lists two ${a.family} gateways`);
    out[a.family] = formatAddress(a);
  });
  return out;
}

/** Reads the `ipam` object. `network` is the network's name. */
export function parseIpamConfig(
  ipam: unknown,
  network: string,
  env: Readonly<Record<string, string | undefined>> = {},
): IpamConfig {
  if (!isRecord(ipam)) throw invalid('the network configuration has no ipam object');
  for (const key of Object.keys(ipam)) {
    if (!IPAM_FIELDS.has(key) && !IGNORED_WHEREABOUTS_FIELDS.has(key)) throw invalid(`unknown field ipam.${key}`);
  }
  if (ipam.range !== undefined && ipam.ipRanges !== undefined)
    throw invalid('give either ipam.range or ipam.ipRanges, not both');
  if (ipam.range === undefined && (ipam.range_start !== undefined || ipam.range_end !== undefined))
    throw invalid('ipam.range_start and ipam.range_end need ipam.range');

  const region = optionalString(ipam, 'region', 'ipam');
  const { endpoint, region: signingRegion } = parseEndpoint(ipam.endpoint, region, env);

  const poolName = optionalString(ipam, 'pool', 'ipam') ?? optionalString(ipam, 'network_name', 'ipam') ?? network;
  if (!DNS_LABEL.test(poolName) || poolName.length > 63) {
    throw invalid(
      `pool name ${JSON.stringify(poolName)} is not a DNS-1123 label (lower case letters, digits and '-', at most 63): set ipam.pool`,
    );
  }

  // Ranges: ipRanges entries, or the top-level range; the top-level exclude applies to all of them.
  const entries: Record<string, unknown>[] = [];
  if (ipam.range !== undefined)
    entries.push({ range: ipam.range, range_start: ipam.range_start, range_end: ipam.range_end });
  if (ipam.ipRanges !== undefined) {
    if (!Array.isArray(ipam.ipRanges) || ipam.ipRanges.length === 0)
      throw invalid('ipam.ipRanges must be a non-empty list of {range, range_start, range_end, exclude}');
    ipam.ipRanges.forEach((e, i) => {
      if (!isRecord(e)) throw invalid(`ipam.ipRanges[${i}] must be an object with range`);
      for (const key of Object.keys(e))
        if (!RANGE_FIELDS.has(key)) throw invalid(`unknown field ipam.ipRanges[${i}].${key}`);
      entries.push(e);
    });
  }
  const parsed = entries.map((e, i) => parseRange(e, ipam.range !== undefined ? 'ipam' : `ipam.ipRanges[${i}]`));
  const families: Family[] = [];
  for (const p of parsed) {
    if (families.includes(p.range.family))
      throw invalid(
        `two ranges of family ${p.range.family}: give one range per family (whereabouts' ipRanges is one entry per family)`,
      );
    families.push(p.range.family);
  }
  const gateways = parseGateways(ipam.gateway);
  const exclude = new Set(parsed.flatMap((p) => p.exclude));
  if (ipam.exclude !== undefined) {
    if (parsed.length === 0)
      throw invalid(
        'ipam.exclude needs ipam.range or ipam.ipRanges (a pool without ranges here is configured on the service)',
      );
    stringList(ipam.exclude, 'ipam.exclude').forEach((e, i) => exclude.add(exclusion(e, `ipam.exclude[${i}]`)));
  }
  // A gateway inside a range is never handed out to a pod.
  for (const p of parsed) {
    const gw = gateways[p.range.family];
    if (gw === undefined) continue;
    const value = address(gw, 'ipam.gateway').value;
    if ((value & mask(p.block.family, p.block.prefix)) === p.block.base)
      exclude.add(formatBlock({ family: p.block.family, base: value, prefix: familyBits(p.block.family) }));
  }

  let policy: IpFamilyPolicy = families.length === 2 ? IpFamilyPolicy.RequireDualStack : IpFamilyPolicy.SingleStack;
  if (ipam.ipFamilyPolicy !== undefined) {
    if (typeof ipam.ipFamilyPolicy !== 'string' || !(ipam.ipFamilyPolicy in IpFamilyPolicy))
      throw invalid(`ipam.ipFamilyPolicy must be one of ${Object.keys(IpFamilyPolicy).join(', ')}`);
    policy = ipam.ipFamilyPolicy as IpFamilyPolicy;
  }
  if (policy === IpFamilyPolicy.SingleStack && families.length > 1)
    throw invalid(
      'ipam.ipFamilyPolicy SingleStack with ranges of two families: use RequireDualStack or PreferDualStack',
    );
  if (policy === IpFamilyPolicy.RequireDualStack && families.length === 1)
    throw invalid('ipam.ipFamilyPolicy RequireDualStack needs a range of each family');

  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (ipam.timeoutMs !== undefined) {
    if (
      typeof ipam.timeoutMs !== 'number' ||
      !Number.isInteger(ipam.timeoutMs) ||
      ipam.timeoutMs < 100 ||
      ipam.timeoutMs > 300_000
    )
      throw invalid('ipam.timeoutMs must be a whole number of milliseconds from 100 to 300000');
    timeoutMs = ipam.timeoutMs;
  }
  let reuseDelaySeconds = 0;
  if (ipam.reuseDelaySeconds !== undefined) {
    if (parsed.length === 0)
      throw invalid(
        'ipam.reuseDelaySeconds needs ipam.range or ipam.ipRanges (a pool without ranges here is configured on the service)',
      );
    if (
      typeof ipam.reuseDelaySeconds !== 'number' ||
      !Number.isInteger(ipam.reuseDelaySeconds) ||
      ipam.reuseDelaySeconds < 0 ||
      ipam.reuseDelaySeconds > 604_800
    )
      throw invalid('ipam.reuseDelaySeconds must be a whole number of seconds from 0 to 604800');
    reuseDelaySeconds = ipam.reuseDelaySeconds;
  }
  const leaseSeconds = ipam.leaseSeconds;
  if (
    leaseSeconds !== undefined &&
    (typeof leaseSeconds !== 'number' ||
      !Number.isInteger(leaseSeconds) ||
      leaseSeconds < 1 ||
      leaseSeconds > 31_536_000)
  )
    throw invalid('ipam.leaseSeconds must be a whole number of seconds from 1 to 31536000');
  if (ipam.logFile !== undefined && ipam.log_file !== undefined)
    throw invalid('give either ipam.logFile or ipam.log_file, not both');
  if (ipam.logLevel !== undefined && ipam.log_level !== undefined)
    throw invalid('give either ipam.logLevel or ipam.log_level, not both');
  const logFile = optionalString(ipam, 'logFile', 'ipam') ?? optionalString(ipam, 'log_file', 'ipam');
  const dns = parseDns(ipam.dns);
  const nodeName = optionalString(ipam, 'nodeName', 'ipam');
  const clusterId = optionalString(ipam, 'clusterId', 'ipam');
  for (const [field, value] of [
    ['nodeName', nodeName],
    ['clusterId', clusterId],
  ] as const) {
    if (value !== undefined && (value === '' || value.length > 253))
      throw invalid(`ipam.${field} must be 1-253 characters`);
  }

  return {
    endpoint,
    ...(signingRegion !== undefined ? { region: signingRegion } : {}),
    pool: poolName,
    ipFamilyPolicy: policy,
    ipFamilies: families,
    timeoutMs,
    gateways,
    routes: parseRoutes(ipam.routes),
    ...(dns !== undefined ? { dns } : {}),
    ...(logFile !== undefined ? { logFile } : {}),
    logLevel: parseLogLevel(ipam.logLevel ?? ipam.log_level),
    stateDir: optionalString(ipam, 'stateDir', 'ipam') ?? DEFAULT_STATE_DIR,
    ranges: parsed.map((p) => p.range),
    exclude: [...exclude].sort(),
    reuseDelaySeconds,
    ...(leaseSeconds !== undefined ? { leaseSeconds } : {}),
    ...(nodeName !== undefined ? { nodeName } : {}),
    ...(clusterId !== undefined ? { clusterId } : {}),
  };
}

function parseAttachments(value: unknown): Attachment[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value))
    throw new CniError(
      CniCode.DecodeFailure,
      'invalid cni.dev/valid-attachments',
      'it must be a list of {containerID, ifname}',
    );
  return value.map((a, i) => {
    if (!isRecord(a) || typeof a.containerID !== 'string' || typeof a.ifname !== 'string') {
      throw new CniError(
        CniCode.DecodeFailure,
        'invalid cni.dev/valid-attachments',
        `entry ${i} must be {containerID, ifname} with string values`,
      );
    }
    return { containerID: a.containerID, ifname: a.ifname };
  });
}

/**
 * Reads stdin's network configuration.
 * @throws CniError 6 (not JSON, not an object), 1 (a version this plugin does not speak), 7 (invalid config).
 */
export function parseNetworkConfig(
  stdin: string,
  env: Readonly<Record<string, string | undefined>> = {},
): NetworkConfig {
  let doc: unknown;
  try {
    doc = JSON.parse(stdin);
  } catch (error) {
    throw new CniError(CniCode.DecodeFailure, 'failed to decode the network configuration', (error as Error).message);
  }
  if (!isRecord(doc))
    throw new CniError(CniCode.DecodeFailure, 'failed to decode the network configuration', 'it must be a JSON object');
  const cniVersion = checkVersion(doc.cniVersion);
  if (typeof doc.name !== 'string' || doc.name === '')
    throw new CniError(CniCode.InvalidConfig, 'missing network name', '');
  if (!CNI_NAME.test(doc.name))
    throw new CniError(CniCode.InvalidConfig, 'invalid characters found in network name', doc.name);
  const validAttachments = parseAttachments(doc['cni.dev/valid-attachments']);
  const staticAddresses = parseStaticAddresses(isRecord(doc.runtimeConfig) ? doc.runtimeConfig.ips : undefined);
  return {
    cniVersion,
    name: doc.name,
    ipam: parseIpamConfig(doc.ipam, doc.name, env),
    ...(doc.prevResult !== undefined ? { prevResult: doc.prevResult } : {}),
    ...(validAttachments !== undefined ? { validAttachments } : {}),
    ...(staticAddresses !== undefined ? { staticAddresses } : {}),
  };
}

/**
 * Static addresses with or without a prefix, at most one per family: `runtimeConfig.ips` (the `ips` capability), or
 * CNI_ARGS `IP=` (comma-separated), which Podman 4's CNI backend sends for `--ip`. @throws CniError 7
 */
export function parseStaticAddresses(value: unknown): string[] | undefined {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw invalid('runtimeConfig.ips must be a list of addresses');
  const addresses = (value as string[]).map((text) => {
    try {
      return parseAddress(text.includes('/') ? text.slice(0, text.indexOf('/')) : text);
    } catch {
      throw invalid(`static address ${JSON.stringify(text)} (runtimeConfig.ips or CNI_ARGS IP) is not an IP address`);
    }
  });
  if (new Set(addresses.map((a) => a.family)).size !== addresses.length)
    throw invalid('static addresses (runtimeConfig.ips or CNI_ARGS IP) hold one address per family');
  return addresses.map(formatAddress);
}
