// Over 300 lines: every item kind's encoding and decoding side by side, so an attribute's name and type are written in one place.
import { randomUUID } from 'node:crypto';
import type { IpFamily } from '../../core/ip/address.ts';
import type { EndReason } from '../../core/history/holding.ts';
import { addressSortKey, parseAddress } from '../../core/ip/address.ts';
import type { Principal } from '../../core/access.ts';
import type { Labels } from '../../core/labels.ts';
import {
  LeaseState,
  PoolState,
  type ChildRange,
  type Claim,
  type Consumer,
  type Lease,
  type Pool,
  type Range,
  type RangeSource,
  type RangeState,
} from '../../core/model.ts';
import type { BitmapWrite } from '../../core/bitmap/ports.ts';
import type { RangeAllocation } from '../../core/bitmap/range-allocation.ts';
import { EVENT_RETENTION_MS, type IpamEvent } from '../../core/use-cases/reconcile-ports.ts';
import { Entity, EXPIRY_SHARDS, keys, SCHEMA_VERSION, shardOf, TTL_SLACK_SECONDS } from './keys.ts';

/** A plain item (before marshalling). */
export type Item = Record<string, unknown>;

const ttlOf = (expiresAt: number | undefined) =>
  expiresAt === undefined ? {} : { ttl: Math.ceil(expiresAt / 1000) + TTL_SLACK_SECONDS };

export function poolToItem(pool: Pool): Item {
  return {
    ...keys.pool(pool.name),
    entity: Entity.Pool,
    schema: SCHEMA_VERSION,
    GSI1PK: keys.poolsListing(),
    GSI1SK: pool.name,
    name: pool.name,
    exclude: [...pool.exclude],
    createdAt: pool.createdAt,
    ...(pool.summarySince ? { summarySince: pool.summarySince } : {}),
    ...(pool.reuseDelaySeconds ? { reuseDelaySeconds: pool.reuseDelaySeconds } : {}),
    ...(pool.historyDays !== undefined ? { historyDays: pool.historyDays } : {}),
    ...(pool.access ? { access: pool.access } : {}),
    ...(pool.freeThresholds ? { freeThresholds: [...pool.freeThresholds] } : {}),
    ...(pool.blockPrefixLength ? { blockPrefixLength: { ...pool.blockPrefixLength } } : {}),
    ...(pool.grow ? { grow: { ...pool.grow } } : {}),
    ...(pool.openToChildPools ? { openToChildPools: true } : {}),
    ...(pool.dns ? { dns: pool.dns } : {}),
    ...(pool.state ? { state: pool.state, deletionRequestedAt: pool.deletionRequestedAt } : {}),
  };
}

export function itemToPool(item: Item): Pool {
  return {
    name: item.name as string,
    exclude: (item.exclude as string[] | undefined) ?? [],
    createdAt: item.createdAt as string,
    ...(typeof item.summarySince === 'string' ? { summarySince: item.summarySince } : {}),
    ...(typeof item.reuseDelaySeconds === 'number' && item.reuseDelaySeconds > 0
      ? { reuseDelaySeconds: item.reuseDelaySeconds }
      : {}),
    ...(typeof item.historyDays === 'number' ? { historyDays: item.historyDays } : {}),
    ...(item.access !== undefined ? { access: item.access as Pool['access'] } : {}),
    ...(Array.isArray(item.freeThresholds) ? { freeThresholds: (item.freeThresholds as unknown[]).map(Number) } : {}),
    ...(item.state === PoolState.Terminating
      ? { state: PoolState.Terminating, deletionRequestedAt: item.deletionRequestedAt as string }
      : {}),
    ...(item.dns !== undefined ? { dns: item.dns as Pool['dns'] } : {}),
    ...(item.blockPrefixLength !== undefined ? { blockPrefixLength: blockLengthsOf(item.blockPrefixLength) } : {}),
    ...(item.openToChildPools === true ? { openToChildPools: true as const } : {}),
    ...(item.grow !== undefined
      ? {
          grow: {
            pool: (item.grow as Pool['grow'])!.pool,
            belowFree: Number((item.grow as Pool['grow'])!.belowFree),
            maxBlocks: Number((item.grow as Pool['grow'])!.maxBlocks),
          },
        }
      : {}),
  };
}

/** A block pool's lengths, family by family (storage may return a map's attributes in any order, as numbers it decoded). */
function blockLengthsOf(value: unknown): Pool['blockPrefixLength'] {
  const map = value as Record<string, unknown>;
  return {
    ...(map.IPv4 !== undefined ? { IPv4: Number(map.IPv4) } : {}),
    ...(map.IPv6 !== undefined ? { IPv6: Number(map.IPv6) } : {}),
  };
}

export function rangeToItem(range: Range): Item {
  return {
    ...keys.range(range.pool, range.name),
    entity: Entity.Range,
    schema: SCHEMA_VERSION,
    pool: range.pool,
    name: range.name,
    cidr: range.cidr,
    family: range.family,
    state: range.state,
    legacy: range.legacy,
    createdAt: range.createdAt,
    ...(range.deletionRequestedAt ? { deletionRequestedAt: range.deletionRequestedAt } : {}),
    ...(range.blockPrefixLength !== undefined ? { blockPrefixLength: range.blockPrefixLength } : {}),
    ...(range.source ? { source: { pool: range.source.pool, claim: range.source.claim } } : {}),
  };
}

/** The legacy lock a legacy range holds: one per (pool, family), naming the range (and its incarnation). */
export function legacyLockToItem(range: Range): Item {
  return {
    ...keys.legacyLock(range.pool, range.family),
    entity: Entity.LegacyLock,
    schema: SCHEMA_VERSION,
    pool: range.pool,
    family: range.family,
    range: range.name,
    createdAt: range.createdAt,
  };
}

export function itemToRange(item: Item): Range {
  const range: Range = {
    pool: item.pool as string,
    name: item.name as string,
    cidr: item.cidr as string,
    family: item.family as IpFamily,
    state: item.state as RangeState,
    legacy: Boolean(item.legacy),
    createdAt: item.createdAt as string,
    ...(item.blockPrefixLength !== undefined ? { blockPrefixLength: Number(item.blockPrefixLength) } : {}),
    ...(item.source !== undefined
      ? { source: { pool: (item.source as RangeSource).pool, claim: (item.source as RangeSource).claim } }
      : {}),
  };
  return item.deletionRequestedAt ? { ...range, deletionRequestedAt: item.deletionRequestedAt as string } : range;
}

/** Index attributes of a claim's (by name) or a lease's (by address) expiry: only items with a TTL are in the index. */
export function expiryIndex(pool: string, name: string, expiresAt: number): Item {
  return {
    GSI3PK: keys.expiryBucket(expiresAt, shardOf(`${pool}/${name}`, EXPIRY_SHARDS)),
    GSI3SK: keys.expirySort(expiresAt, pool, name),
  };
}

export function claimToItem(claim: Claim, shards: number): Item {
  return {
    ...keys.claim(claim.pool, claim.name),
    entity: Entity.Claim,
    schema: SCHEMA_VERSION,
    GSI1PK: keys.claimsListing(claim.pool, shardOf(claim.name, shards)),
    GSI1SK: claim.name,
    GSI2PK: keys.owner(claim.pool, claim.spec.owner.uid),
    GSI2SK: claim.name,
    pool: claim.pool,
    name: claim.name,
    uid: claim.uid,
    spec: claim.spec,
    addresses: claim.addresses,
    createdAt: claim.createdAt,
    version: claim.version,
    ...(claim.createdBy ? { createdBy: claim.createdBy } : {}),
    ...(claim.consumers?.length ? { consumers: claim.consumers } : {}),
    ...(claim.children?.length ? { children: claim.children } : {}),
    ...(claim.dnsLabel ? { dnsLabel: claim.dnsLabel } : {}),
    ...(claim.expiresAt !== undefined
      ? { expiresAt: claim.expiresAt, ...expiryIndex(claim.pool, claim.name, claim.expiresAt) }
      : {}),
    ...ttlOf(claim.expiresAt),
  };
}

export function itemToClaim(item: Item): Claim {
  const claim: Claim = {
    pool: item.pool as string,
    name: item.name as string,
    uid: item.uid as string,
    spec: item.spec as Claim['spec'],
    addresses: item.addresses as Claim['addresses'],
    createdAt: item.createdAt as string,
    version: item.version as number,
    ...(item.createdBy !== undefined ? { createdBy: item.createdBy as Claim['createdBy'] } : {}),
    ...(item.pinned === true ? { pinned: true as const } : {}),
    ...(typeof item.dnsLabel === 'string' ? { dnsLabel: item.dnsLabel } : {}),
    // Field by field: storage may return a map's attributes in any order.
    ...(Array.isArray(item.consumers) && item.consumers.length > 0
      ? { consumers: (item.consumers as Consumer[]).map((c) => ({ kind: c.kind, name: c.name, uid: c.uid })) }
      : {}),
    ...(Array.isArray(item.children) && item.children.length > 0
      ? { children: (item.children as ChildRange[]).map((c) => ({ pool: c.pool, range: c.range, cidr: c.cidr })) }
      : {}),
  };
  return item.expiresAt === undefined ? claim : { ...claim, expiresAt: item.expiresAt as number };
}

export function generatedToItem(claim: Claim): Item {
  return {
    ...keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName!),
    entity: Entity.Generated,
    schema: SCHEMA_VERSION,
    pool: claim.pool,
    claim: claim.name,
    claimUid: claim.uid,
    ...(claim.expiresAt !== undefined ? { expiresAt: claim.expiresAt } : {}),
    ...ttlOf(claim.expiresAt),
  };
}

export function leaseToItem(lease: Lease, shards: number): Item {
  const address = parseAddress(lease.address);
  return {
    ...keys.lease(lease.pool, lease.address),
    entity: Entity.Lease,
    schema: SCHEMA_VERSION,
    GSI1PK: keys.leasesListing(lease.pool, lease.family, shardOf(lease.address, shards)),
    GSI1SK: addressSortKey(address),
    pool: lease.pool,
    address: lease.address,
    family: lease.family,
    range: lease.range,
    claim: lease.claim,
    claimUid: lease.claimUid,
    ownerUid: lease.owner.uid,
    ownerKind: lease.owner.kind,
    ownerName: lease.owner.name,
    createdAt: lease.createdAt,
    ...(lease.labels ? { labels: lease.labels } : {}),
    ...(lease.createdBy ? { createdBy: lease.createdBy } : {}),
    ...(lease.prefixLength !== undefined ? { prefixLength: lease.prefixLength } : {}),
    ...(lease.dnsLabel ? { dnsLabel: lease.dnsLabel } : {}),
    // Leases with a TTL are in the expiry index too, so the reconciler finds expired orphans without a scan.
    ...(lease.expiresAt !== undefined
      ? { expiresAt: lease.expiresAt, ...expiryIndex(lease.pool, lease.address, lease.expiresAt) }
      : {}),
    ...ttlOf(lease.expiresAt),
    // A Released lease is found by its previous owner identity, so that owner's next claim gets the address back.
    ...(lease.state === LeaseState.Released
      ? {
          state: LeaseState.Released,
          releasedAt: lease.releasedAt,
          ...(lease.releasedBy ? { releasedBy: lease.releasedBy } : {}),
          ...(lease.endReason ? { endReason: lease.endReason } : {}),
          GSI2PK: keys.held(lease.pool, lease.owner.kind, lease.owner.name),
          GSI2SK: addressSortKey(address),
        }
      : {}),
  };
}

export function itemToLease(item: Item): Lease {
  const lease: Lease = {
    pool: item.pool as string,
    address: item.address as string,
    family: item.family as IpFamily,
    range: item.range as string,
    claim: item.claim as string,
    claimUid: item.claimUid as string,
    owner: {
      uid: item.ownerUid as string,
      kind: (item.ownerKind as string) ?? '',
      name: (item.ownerName as string) ?? '',
    },
    createdAt: item.createdAt as string,
    ...(item.expiresAt !== undefined ? { expiresAt: item.expiresAt as number } : {}),
    ...(item.state === LeaseState.Released
      ? {
          state: LeaseState.Released,
          releasedAt: item.releasedAt as string,
          ...(typeof item.endReason === 'string' ? { endReason: item.endReason as EndReason } : {}),
        }
      : {}),
    ...(item.releasedBy !== undefined ? { releasedBy: item.releasedBy as Lease['releasedBy'] } : {}),
    ...(item.labels !== undefined ? { labels: item.labels as Labels } : {}),
    ...(item.createdBy !== undefined ? { createdBy: item.createdBy as Principal } : {}),
    ...(item.prefixLength !== undefined ? { prefixLength: Number(item.prefixLength) } : {}),
    ...(typeof item.dnsLabel === 'string' ? { dnsLabel: item.dnsLabel } : {}),
  };
  return lease;
}

/** A bitmap item: the RangeAllocation document under the range's key, with `data` as a DynamoDB Binary. */
export function bitmapToItem(write: Pick<BitmapWrite, 'pool' | 'rangeName' | 'allocation'>): Item {
  return {
    ...keys.bitmap(write.pool, write.rangeName),
    entity: Entity.Bitmap,
    schema: SCHEMA_VERSION,
    pool: write.pool,
    name: write.rangeName,
    range: write.allocation.range,
    data: write.allocation.data,
    version: write.allocation.version,
  };
}

export function itemToBitmap(item: Item): RangeAllocation {
  const data = item.data instanceof Uint8Array ? item.data : new Uint8Array(0);
  return { range: item.range as string, data, version: item.version as number };
}

/** A fresh event id: an event put under it is written exactly once (its condition: absent). */
export function newEventId(): string {
  return randomUUID().replace(/-/g, '').slice(0, 16);
}

/** The event's item: kept 24 hours by DynamoDB's TTL (and filtered by time when listed, since TTL deletion is lazy). */
export function eventToItem(event: IpamEvent, id: string): Item {
  return {
    ...keys.event(event.pool, event.time, id, event.claimUid),
    GSI1PK: keys.eventsListing(event.pool, keys.eventShard(id)),
    GSI1SK: `${event.time}#${id}`,
    entity: Entity.Event,
    schema: SCHEMA_VERSION,
    pool: event.pool,
    time: event.time,
    reason: event.reason,
    object: event.object,
    message: event.message,
    ...(event.claimUid !== undefined ? { claimUid: event.claimUid } : {}),
    ...(event.addresses?.length ? { addresses: [...event.addresses] } : {}),
    ...(event.principal ? { principal: event.principal } : {}),
    ...(event.anonymous ? { anonymous: true } : {}),
    ...(event.labels ? { labels: event.labels } : {}),
    ttl: Math.ceil((Date.parse(event.time) + EVENT_RETENTION_MS) / 1000),
  };
}

export function itemToEvent(item: Item): IpamEvent {
  const event: IpamEvent = {
    pool: item.pool as string,
    time: item.time as string,
    reason: item.reason as IpamEvent['reason'],
    object: item.object as string,
    message: item.message as string,
    ...(typeof item.principal === 'string' ? { principal: item.principal } : {}),
    ...(item.anonymous === true ? { anonymous: true } : {}),
  };
  return item.labels === undefined ? event : { ...event, labels: item.labels as Labels };
}

export { ttlOf };
