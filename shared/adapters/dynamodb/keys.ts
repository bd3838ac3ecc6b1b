import { createHash } from 'node:crypto';
import { addressSortKey, familyBits, type IpFamily } from '../../core/ip/address.ts';
import { CHUNK_BITS } from '../../core/occupancy/chunk.ts';

/**
 * Index partitions of a pool's event listing. Fixed: every writer and reader must agree on it. A pool's events are
 * written at its release rate in a pool with `access` (one per release), up to ~15 KB each with labels.
 */
export const EVENT_SHARDS = 8;

/**
 * Every key of the single table, spelled in one place. Each lease and each claim has its own partition key, so a
 * pool's allocation rate is never capped by one partition; listings go through sharded index keys.
 *
 *   item        PK                                  SK           GSI1 (listing)                 GSI2 (owner)            GSI3 (expiry)
 *   pool        POOL#<pool>                         #POOL        POOLS / <pool>   (none while Terminating)
 *   range       POOL#<pool>                         RANGE#<name>
 *   legacy lock POOL#<pool>                         LEGACY#<family>
 *   range gen   RGEN#<pool>#<copy>                  RGEN
 *   claim       CLAIM#<pool>#<name>                 CLAIM        CLAIMS#<pool>#<s> / <name>     OWNER#<pool>#<uid> / <name>   EXP#<hour>#<s> / <expiresAt>#<pool>#<name>
 *   generated   GEN#<pool>#<ownerUid>#<generateName> GEN
 *   consumer    CONSUMER#<pool>#<uid>               CLAIM#<claim>
 *   lease       LEASE#<pool>#<address>              LEASE        ADDR#<pool>#<family>#<s> / <hex address>                               EXP#<hour>#<s> / <expiresAt>#<pool>#<address>
 *   (Released)  LEASE#<pool>#<address>              LEASE        as a lease                     HELD#<pool>#<owner hash> / <hex address>   as a lease, at its reusableAt
 *   bitmap      BITMAP#<pool>#<range>               BITMAP
 *   chunk       OCC#<pool>#<family>                 C#<hex chunk index>
 *   event       EVENT#<pool>#<claim uid | -id>      <ISO time>#<id>  EVENTS#<pool>#<s> / <ISO time>#<id>
 *   checkpoint  RECONCILER                          CHECKPOINT#<name>
 *   strikes     STRIKES#<pool>#<range>              STRIKES
 *   report      REPORT#<pool>#<what>                REPORT
 *   usage       USAGE#<pool>                        RANGE#<range>
 *   freed       FREED#<pool>#<range>#<shard>        FREED
 *   seals       SEALS#<pool>#<range>                SEALS
 *   owner gone  GONE#<pool>                         <ISO time>#<hash of the owner uid>
 *   pool gone   POOLSGONE                           <ISO time>#<pool>
 *   terminating POOLSGONE                           TERMINATING#<pool>
 *   holding     HIST#<pool>#<address>               <from>#<claim uid | hold>                     HOWNER#<pool>#<owner uid> / <from>#<address>
 *   hist. mark  HISTMARKS                           <pool>
 *   settings    TABLE                               SETTINGS
 *   warning     WARN#<pool>                         <family>
 *
 * A pool's range generation is kept in RANGE_GENERATION_COPIES equal copies, each its own partition, written together
 * in every transaction that changes the pool's ranges; an allocation's post-commit check reads one copy, so no
 * per-allocation read lands on the pool's partition (see createClaim).
 *
 * The expiry index (GSI3, keys only) holds claims and leases with a TTL; the table key of an entry (CLAIM#... or
 * LEASE#...) tells which. Events live 24 h (TTL attribute `ttl`); checkpoints, strikes, reports (one marker per
 * reported finding, so it is reported once a day) and usage (each range's last lease count, and the count in progress)
 * are the reconciler's. An owner-gone tombstone is written by DELETE /v1/pools/{pool}/owners/{uid} and kept a day (TTL
 * attribute `ttl`); the reconciler reads the last minutes of a pool's tombstones by time (owners.ts). A holding is an
 * ended holding of an address, written by the stream function and kept the pool's historyDays (TTL attribute `ttl`);
 * its sort key is the lease's own version (creation time and claim uid), so a redelivered change rewrites it. A
 * history mark says how far a pool's history is complete where no summary chunk says so (the chunks the stream function
 * writes carry it as `historyThrough`; shared/core/mirror/projections.ts), the oldest change it failed to record
 * (`pendingSince`, the HistoryLag), and how far the reconciler's gap check has read the pool's release events (`gapCheckedThrough`, shared/core/reconciler/history.ts). The settings item
 * holds what must not change for the table's life (LEASE_INDEX_SHARDS), written by the first function to use the table
 * (table-settings.ts).
 */
export const Entity = {
  Pool: 'pool',
  Range: 'range',
  /** The one legacy range a pool may have per family: its name, so concurrent legacy creates meet on one item. */
  // The stored value keeps its first spelling: it is data in every table.
  LegacyLock: 'legacySlot',
  /** One copy of a pool's range generation (RANGE_GENERATION_COPIES of them, always equal). */
  RangeGeneration: 'rangeGeneration',
  Claim: 'claim',
  Generated: 'generated',
  Lease: 'lease',
  Bitmap: 'bitmap',
  /** A chunk of a pool family's occupancy summary (shared/core/occupancy/chunk.ts). */
  Chunk: 'chunk',
  Event: 'event',
  /** The DNS status of one name of a claim incarnation (shared/core/dns/status.ts). */
  DnsStatus: 'dnsStatus',
  Checkpoint: 'checkpoint',
  Strikes: 'strikes',
  Report: 'report',
  Usage: 'usage',
  /** An owner reported gone (DELETE .../owners/{uid}): the reconciler looks for its claims again for a while. */
  OwnerGone: 'ownerGone',
  /** The last report of an owner uid as gone, by uid: a claim for it reads this one item (OwnerGone refusal). */
  OwnerMark: 'ownerMark',
  /** A pool deleted: the reconciler releases claims its (eventually consistent) claims listing did not show then. */
  PoolGone: 'poolGone',
  /** A pool's deletion not finished (the pool is Terminating): the reconciler finishes it. No TTL. */
  PoolTerminating: 'poolTerminating',
  /** An ended holding of an address (the address history). */
  Holding: 'holding',
  /** How far a pool's address history is complete. */
  HistoryMark: 'historyMark',
  /** The table's fixed settings, recorded on first use (table-settings.ts). */
  TableSettings: 'tableSettings',
  /**
   * A claim's consumer, indexed by the consumer's uid (writes/consumers.ts): an owner release finds the claims a uid
   * consumes with one strongly consistent query of the table.
   */
  Consumer: 'consumer',
  /** One shard of a range's freed counter (writes/freed.ts). */
  Freed: 'freed',
  /** The used-up seals of a range's bands (writes/freed.ts). */
  Seals: 'seals',
  /** A pool family's exhaustion level, kept by the stream function (core/occupancy/exhaustion.ts). */
  Exhaustion: 'exhaustion',
} as const;
export type Entity = (typeof Entity)[keyof typeof Entity];

/** Schema version written on every item, so a later migration can tell old items from new ones. */
export const SCHEMA_VERSION = 1;

export interface Key {
  PK: string;
  SK: string;
}

/** FNV-1a, 32 bits: a stable shard for a string. */
export function shardOf(text: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

export const keys = {
  pool: (pool: string): Key => ({ PK: `POOL#${pool}`, SK: '#POOL' }),
  poolPartition: (pool: string): string => `POOL#${pool}`,
  /** In the pool's partition, so a pool view's one query reads it (and skips it: it is not a range). */
  legacyLock: (pool: string, family: IpFamily): Key => ({ PK: `POOL#${pool}`, SK: `LEGACY#${family}` }),
  poolsListing: (): string => 'POOLS',
  range: (pool: string, name: string): Key => ({ PK: `POOL#${pool}`, SK: `RANGE#${name}` }),
  rangeGeneration: (pool: string, copy: number): Key => ({ PK: `RGEN#${pool}#${copy}`, SK: 'RGEN' }),
  claim: (pool: string, name: string): Key => ({ PK: `CLAIM#${pool}#${name}`, SK: 'CLAIM' }),
  claimsListing: (pool: string, shard: number): string => `CLAIMS#${pool}#${shard}`,
  owner: (pool: string, uid: string): string => `OWNER#${pool}#${uid}`,
  /**
   * The owner-index partition of the addresses a pool holds for a previous owner identity (kind and name, not uid:
   * a recreated workload has a new uid). Hashed: kind and name may be 253 characters each, more than a key allows.
   */
  held: (pool: string, kind: string, name: string): string =>
    `HELD#${pool}#${createHash('sha256')
      .update(JSON.stringify([kind, name]))
      .digest('hex')
      .slice(0, 32)}`,
  generated: (pool: string, ownerUid: string, generateName: string): Key => ({
    PK: `GEN#${pool}#${ownerUid}#${generateName}`,
    SK: 'GEN',
  }),
  /** A uid's consumer index items in a pool: one per claim it consumes (at most one partition per uid). */
  consumerIndex: (pool: string, uid: string): string => `CONSUMER#${pool}#${uid}`,
  consumer: (pool: string, uid: string, claim: string): Key => ({
    PK: `CONSUMER#${pool}#${uid}`,
    SK: `CLAIM#${claim}`,
  }),
  lease: (pool: string, address: string): Key => ({ PK: `LEASE#${pool}#${address}`, SK: 'LEASE' }),
  leasesListing: (pool: string, family: IpFamily, shard: number): string => `ADDR#${pool}#${family}#${shard}`,
  bitmap: (pool: string, range: string): Key => ({ PK: `BITMAP#${pool}#${range}`, SK: 'BITMAP' }),
  /** A pool family's summary chunks share a partition, so a range's chunks are one query; its size bounds it (see below). */
  occupancy: (pool: string, family: IpFamily): string => `OCC#${pool}#${family}`,
  chunk: (pool: string, family: IpFamily, index: bigint): Key => ({
    PK: `OCC#${pool}#${family}`,
    SK: chunkSortKey(family, index),
  }),
  /**
   * An event is kept under the claim it is about (a release repair's reason is read by that claim's uid, however
   * many events the pool writes), or under its own id; the pool's listing reads EVENT_SHARDS index partitions.
   */
  eventsOfClaim: (pool: string, claimUid: string): string => `EVENT#${pool}#${claimUid}`,
  event: (pool: string, isoTime: string, id: string, claimUid?: string): Key => ({
    PK: `EVENT#${pool}#${claimUid ? claimUid : `-${id}`}`,
    SK: `${isoTime}#${id}`,
  }),
  eventsListing: (pool: string, shard: number): string => `EVENTS#${pool}#${shard}`,
  /**
   * A claim incarnation's DNS name status, in its events partition (sort keys `DNS#<name>`, after every event's ISO
   * time): the claim's events and names are read by the same uid, and the mirror already writes that partition.
   */
  dnsStatus: (pool: string, claimUid: string, name: string): Key => ({
    PK: `EVENT#${pool}#${claimUid}`,
    SK: `DNS#${name}`,
  }),
  /** The listing shard of an event: its id's hash, so writes of one pool spread over EVENT_SHARDS partitions. */
  eventShard: (id: string): number => createHash('sha256').update(id).digest()[0]! % EVENT_SHARDS,
  checkpoint: (name: string): Key => ({ PK: 'RECONCILER', SK: `CHECKPOINT#${name}` }),
  strikes: (pool: string, range: string): Key => ({ PK: `STRIKES#${pool}#${range}`, SK: 'STRIKES' }),
  report: (pool: string, what: string): Key => ({ PK: `REPORT#${pool}#${what}`, SK: 'REPORT' }),
  usagePartition: (pool: string): string => `USAGE#${pool}`,
  usage: (pool: string, range: string): Key => ({ PK: `USAGE#${pool}`, SK: `RANGE#${range}` }),
  /** Each shard its own partition: releases of one range spread over FREED_SHARDS items. */
  freed: (pool: string, range: string, shard: number): Key => ({ PK: `FREED#${pool}#${range}#${shard}`, SK: 'FREED' }),
  seals: (pool: string, range: string): Key => ({ PK: `SEALS#${pool}#${range}`, SK: 'SEALS' }),
  /** A pool's owner-gone tombstones, in time order; the uid is an attribute (a 253-character uid would not fit a sort key). */
  ownersGone: (pool: string): string => `GONE#${pool}`,
  ownerGone: (pool: string, isoTime: string, uidHash: string): Key => ({
    PK: `GONE#${pool}`,
    SK: `${isoTime}#${uidHash}`,
  }),
  /** One partition an owner: the uid's hash (a 253-character uid would make a long key), the uid an attribute. */
  ownerMark: (pool: string, uidHash: string): Key => ({ PK: `GONEUID#${pool}#${uidHash}`, SK: 'MARK' }),
  history: (pool: string, address: string): string => `HIST#${pool}#${address}`,
  holding: (pool: string, address: string, id: string): Key => ({ PK: `HIST#${pool}#${address}`, SK: id }),
  historyOwner: (pool: string, ownerUid: string): string => `HOWNER#${pool}#${ownerUid}`,
  historyMarks: (): string => 'HISTMARKS',
  historyMark: (pool: string): Key => ({ PK: 'HISTMARKS', SK: pool }),
  poolsGone: (): string => 'POOLSGONE',
  poolGone: (pool: string, isoTime: string): Key => ({ PK: 'POOLSGONE', SK: `${isoTime}#${pool}` }),
  /** A deletion not finished yet, beside the tombstones (a letter sorts after every ISO time: every read of them gets it). */
  poolTerminating: (pool: string): Key => ({ PK: 'POOLSGONE', SK: `TERMINATING#${pool}` }),
  tableSettings: (): Key => ({ PK: 'TABLE', SK: 'SETTINGS' }),
  /** A pool's exhaustion levels (one item a family, one partition a pool: GET pool reads them in one query). */
  warnings: (pool: string): string => `WARN#${pool}`,
  warning: (pool: string, family: IpFamily): Key => ({ PK: `WARN#${pool}`, SK: family }),
  /** Expiry buckets are hours; a bucket's sort key orders its claims by expiry, so a query reads only expired ones. */
  expiryBucket: (expiresAt: number, shard: number): string => `EXP#${Math.floor(expiresAt / 3_600_000)}#${shard}`,
  expirySort: (expiresAt: number, pool: string, name: string): string =>
    `${String(expiresAt).padStart(15, '0')}#${pool}#${name}`,
} as const;

/** The pool and address of a lease's partition key (`keys.lease`'s inverse); undefined for any other key. */
export function leaseOfKey(pk: string | undefined): { pool: string; address: string } | undefined {
  if (!pk?.startsWith('LEASE#')) return undefined;
  const rest = pk.slice('LEASE#'.length);
  const split = rest.lastIndexOf('#');
  return split > 0 ? { pool: rest.slice(0, split), address: rest.slice(split + 1) } : undefined;
}

/** A lease's GSI1 sort key: the address in fixed-width hex, so key order is address order. */
export function leaseSortKey(family: IpFamily, value: bigint): string {
  return addressSortKey({ family, value });
}

/**
 * A chunk's sort key: its index in fixed-width hex, so key order is address order. One partition holds a pool
 * family's chunks: 1,024 chunks (a /8 of IPv4, all used) are about 2 MB, within a partition's 10 GB and read only
 * in the slices a range asks for.
 */
export function chunkSortKey(family: IpFamily, index: bigint): string {
  return `C#${index.toString(16).padStart(Math.ceil((familyBits(family) - CHUNK_BITS) / 4), '0')}`;
}

/**
 * Copies of a pool's range generation. Every allocation reads one copy consistently (1 read unit), so one pool
 * allocating 10,000/s puts ~625 read units/s on each, about a fifth of a partition's 3,000; a range change writes all
 * of them in its transaction (16 items, twice the units: rare operations).
 */
export const RANGE_GENERATION_COPIES = 16;

/** Shards of the expiry index. */
export const EXPIRY_SHARDS = 4;

/** Seconds DynamoDB's own TTL waits after a lease expires before it may delete the item (the reconciler acts first). */
export const TTL_SLACK_SECONDS = 24 * 3600;
