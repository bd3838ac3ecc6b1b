/**
 * The server's response documents, typed by the schemas `npm run gen:api` generates from openapi.yaml into
 * openapi.gen.ts (as the CLI's are): a field the document does not declare, or one of the wrong type, fails typecheck.
 */
import type { components } from './openapi.gen.ts';
import type { Principal } from '../../core/access.ts';
import { countToJson } from '../../core/ip/cidr.ts';
import { DEFAULT_FREE_THRESHOLDS } from '../../core/occupancy/exhaustion.ts';
import {
  historyDaysOf,
  isReleased,
  LeaseState,
  prefixOf,
  type Claim,
  type Lease,
  type Owner,
  type Pool,
  type Range,
  type Utilization,
} from '../../core/model.ts';

/** A principal as JSON: its ARN, and an assumed role's session apart. */
export const principalDto = (p: Principal) => ({
  arn: p.arn,
  ...(p.session !== undefined ? { session: p.session } : {}),
});

/** An owner with its fields in one order, whatever order storage returned them in. */
const ownerDto = (o: Owner) => ({ kind: o.kind, name: o.name, uid: o.uid });
import { addressesOfBlocks, type PoolDetails } from '../../core/use-cases/pools.ts';
import type { IpFamily } from '../../core/ip/address.ts';
import type { RangeOccupancy } from '../../core/use-cases/occupancy.ts';
import type { ClaimRenewal } from '../../core/use-cases/claim-renewals.ts';

import type { DnsSettings } from '../../core/dns/settings.ts';

type Schemas = components['schemas'];

/** Counts as JSON: exact, decimal strings beyond 2^53. */
const countsDto = (u: Utilization): Schemas['AddressUtilization'] => ({
  size: countToJson(u.size),
  used: countToJson(u.used),
  releasing: countToJson(u.releasing),
  free: countToJson(u.free),
});

/** Utilization as JSON; a block pool's (`block` given) with its counts in addresses beside those in blocks. */
export function utilizationDto(
  u: Utilization,
  block?: { family: IpFamily; prefixLength: number },
): Schemas['Utilization'] {
  return { ...countsDto(u), ...(block ? { addresses: countsDto(addressesOfBlocks(u, block)) } : {}) };
}

/** A pool's DNS settings as the client gave them (the target under its kind's key). */
function dnsSettingsDto(dns: DnsSettings): Schemas['DnsSettings'] {
  const { kind, ...target } = dns.target;
  return {
    zone: dns.zone,
    ttlSeconds: dns.ttlSeconds,
    reverse: dns.reverse,
    ...(dns.reverseZones ? { reverseZones: dns.reverseZones } : {}),
    target: { [kind]: target },
  };
}

export function poolDto(pool: Pool): Schemas['Pool'] {
  return {
    name: pool.name,
    exclude: pool.exclude,
    reuseDelaySeconds: pool.reuseDelaySeconds ?? 0,
    historyDays: historyDaysOf(pool),
    freeThresholds: pool.freeThresholds ?? DEFAULT_FREE_THRESHOLDS,
    ...(pool.access
      ? { access: { administrators: pool.access.administrators, allocators: pool.access.allocators } }
      : {}),
    ...(pool.blockPrefixLength ? { blockPrefixLength: { ...pool.blockPrefixLength } } : {}),
    ...(pool.grow
      ? { grow: { pool: pool.grow.pool, belowFree: pool.grow.belowFree, maxBlocks: pool.grow.maxBlocks } }
      : {}),
    ...(pool.openToChildPools ? { openToChildPools: true } : {}),
    ...(pool.dns ? { dns: dnsSettingsDto(pool.dns) } : {}),
    createdAt: pool.createdAt,
  };
}

/** A family's block, when it has a block size (a block pool's). */
const blockOf = (family: IpFamily, prefixLength: number | undefined) =>
  prefixLength === undefined ? undefined : { family, prefixLength };

export function rangeDto(range: Range, u: Utilization): Schemas['Range'] {
  return {
    name: range.name,
    cidr: range.cidr,
    family: range.family,
    state: range.state,
    legacy: range.legacy,
    ...utilizationDto(u, blockOf(range.family, range.blockPrefixLength)),
    createdAt: range.createdAt,
    ...(range.deletionRequestedAt ? { deletionRequestedAt: range.deletionRequestedAt } : {}),
    ...(range.blockPrefixLength !== undefined ? { blockPrefixLength: range.blockPrefixLength } : {}),
    ...(range.source ? { source: { pool: range.source.pool, claim: range.source.claim } } : {}),
  };
}

export function poolDetailsDto(details: PoolDetails): Schemas['PoolDetails'] {
  const utilization: Record<string, Schemas['Utilization']> = {};
  for (const [family, u] of Object.entries(details.utilization) as [IpFamily, Utilization][])
    utilization[family] = utilizationDto(u, blockOf(family, details.pool.blockPrefixLength?.[family]));
  return {
    ...poolDto(details.pool),
    ranges: details.ranges.map((r) => rangeDto(r.range, r.utilization)),
    utilization,
    warnings: details.warnings,
  };
}

/** One claim's result in a batch renewal: the new expiry and version, or why it was not renewed. */
export function claimRenewalDto(renewal: ClaimRenewal): Schemas['ClaimRenewal'] {
  if (renewal.result !== 'Renewed') return { name: renewal.name, result: renewal.result, detail: renewal.detail };
  const { claim } = renewal;
  return {
    name: renewal.name,
    result: 'Renewed',
    ...(claim.expiresAt !== undefined ? { expiresAt: new Date(claim.expiresAt).toISOString() } : {}),
    version: claim.version,
  };
}

export function claimDto(claim: Claim): Schemas['Claim'] {
  return {
    name: claim.name,
    uid: claim.uid,
    owner: ownerDto(claim.spec.owner),
    ipFamilyPolicy: claim.spec.ipFamilyPolicy,
    // The claim's families in order, once each (a batch holds several addresses of one family).
    ipFamilies: [...new Set(claim.addresses.map((a) => a.family))],
    ...(claim.spec.count !== undefined ? { count: claim.spec.count } : {}),
    // Spelled field by field: a claim read back from the table (an idempotent repeat) has them in the codec's order.
    addresses: claim.addresses.map((a) => ({
      address: a.address,
      family: a.family,
      range: a.range,
      ...(a.prefixLength !== undefined ? { prefix: prefixOf(a) } : {}),
    })),
    ...(claim.spec.prefixes?.length ? { prefixes: claim.spec.prefixes } : {}),
    ...(claim.spec.generateName !== undefined ? { generateName: claim.spec.generateName } : {}),
    ...(claim.spec.ttlSeconds !== undefined ? { ttlSeconds: claim.spec.ttlSeconds } : {}),
    labels: claim.spec.labels ?? {},
    ...(claim.spec.hostname !== undefined ? { hostname: claim.spec.hostname } : {}),
    ...(claim.expiresAt !== undefined ? { expiresAt: new Date(claim.expiresAt).toISOString() } : {}),
    createdAt: claim.createdAt,
    ...(claim.createdBy ? { createdBy: principalDto(claim.createdBy) } : {}),
    // Present while it has any: a claim that had consumers is released with its last one.
    ...(claim.consumers?.length ? { consumers: claim.consumers.map(ownerDto) } : {}),
    // Present while it has any: the ranges of other pools made from its blocks (it is not released meanwhile).
    ...(claim.children?.length
      ? { children: claim.children.map((c) => ({ pool: c.pool, range: c.range, cidr: c.cidr })) }
      : {}),
    version: claim.version,
  };
}

/** A lease as JSON: Allocated (held by a claim), or Released (held for its previous owner until `reusableAt`). */
export function leaseDto(lease: Lease): Schemas['Lease'] {
  if (isReleased(lease)) {
    return {
      address: lease.address,
      family: lease.family,
      range: lease.range,
      state: LeaseState.Released,
      previousOwner: ownerDto(lease.owner),
      previousClaim: lease.claim,
      ...(lease.releasedAt ? { releasedAt: lease.releasedAt } : {}),
      ...(lease.releasedBy ? { releasedBy: principalDto(lease.releasedBy) } : {}),
      reusableAt: new Date(lease.expiresAt ?? 0).toISOString(),
      ...(lease.prefixLength !== undefined ? { prefix: prefixOf(lease) } : {}),
    };
  }
  return {
    address: lease.address,
    state: LeaseState.Allocated,
    family: lease.family,
    range: lease.range,
    claim: lease.claim,
    owner: ownerDto(lease.owner),
    createdAt: lease.createdAt,
    ...(lease.expiresAt !== undefined ? { expiresAt: new Date(lease.expiresAt).toISOString() } : {}),
    ...(lease.prefixLength !== undefined ? { prefix: prefixOf(lease) } : {}),
  };
}

/** A range's occupancy as JSON: each slice's bits in base64 (bit i, LSB first in byte i >> 3, is address first + i). */
export function occupancyDto(o: RangeOccupancy): Schemas['RangeOccupancy'] {
  return {
    pool: o.range.pool,
    range: o.range.name,
    cidr: o.range.cidr,
    family: o.range.family,
    ...(o.range.blockPrefixLength !== undefined ? { blockPrefixLength: o.range.blockPrefixLength } : {}),
    size: countToJson(o.size),
    used: countToJson(o.used),
    source: o.source,
    // Always the summary's CHUNK_SIZE, which the document pins (a const); the contract check holds answers to it.
    chunkSize: o.chunkSize as Schemas['RangeOccupancy']['chunkSize'],
    slices: o.slices.map((s) => ({
      first: s.first,
      count: s.count,
      used: s.used,
      bits: Buffer.from(s.bits).toString('base64'),
      asOf: s.asOf,
    })),
  };
}
