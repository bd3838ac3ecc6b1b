// Over 300 lines: the domain's types and their small pure helpers, the one vocabulary every layer imports.
import type { PoolAccess, Principal } from './access.ts';
import type { IpFamily } from './ip/address.ts';
import type { Labels } from './labels.ts';

/** Why a holding ended. */
export const EndReason = {
  /** Its claim was released (DELETE .../claims/{claim}). */
  Released: 'released',
  /** Its claim's TTL passed (taken over, released by the reconciler, or deleted by DynamoDB's TTL). */
  Expired: 'expired',
  /** Its owner was reported gone (DELETE .../owners/{uid}) and the reconciler released the claim. */
  OwnerGone: 'ownerGone',
  /** The reconciler released a lease its claim no longer held (an orphan). */
  Repaired: 'repaired',
  /** The range was marked Terminating while the claim was being committed; the claim was released before its answer. */
  RangeTerminated: 'rangeTerminated',
  /** The pool was deleted while the claim was being committed; the reconciler released it. */
  PoolDeleted: 'poolDeleted',
  /** A reuse-delay hold ended: its delay passed, or its owner identity took the address back. */
  HoldEnded: 'holdEnded',
} as const;
export type EndReason = (typeof EndReason)[keyof typeof EndReason];

/** A pool's DNS settings (dns/settings.ts checks them): the zone its claims' names go in, and the server holding it. */
/** An RFC 2136 server (BIND, Knot, PowerDNS, Windows DNS) that takes TSIG-signed dynamic updates. */
export interface Rfc2136Target {
  readonly kind: 'rfc2136';
  /** The server's address (IPv4 or IPv6 literal, or a host name). */
  readonly server: string;
  readonly port: number;
  /** The TSIG key's name, as the server's `key` clause spells it. */
  readonly keyName: string;
  /** The TSIG algorithm; only HMAC-SHA256 (RFC 8945's mandatory one). */
  readonly keyAlgorithm: 'hmac-sha256';
  /** Where the function reads the key's base64 secret: `env:NAME` or `file:/path` (a deployment fills the variable from SSM). */
  readonly secretFrom: string;
}

/** A Route 53 hosted zone (private or public) by id; `reverseZoneIds` names the hosted zone of each reverse zone. */
export interface Route53Target {
  readonly kind: 'route53';
  readonly hostedZoneId: string;
  readonly reverseZoneIds?: Readonly<Record<string, string>>;
}

/**
 * The local stack's embedded DNS server (`npm start`, 127.0.0.1:5300): its zones live in the stack's process, so only
 * the local stack takes this target, and it is a pool's default there.
 */
export interface LocalTarget {
  readonly kind: 'local';
}

export type DnsTargetSpec = Rfc2136Target | Route53Target | LocalTarget;

export interface DnsSettings {
  /** The forward zone, absolute and lower-case (`pods.example.internal.`). */
  readonly zone: string;
  readonly ttlSeconds: number;
  /** Publish a PTR per address in the reverse zones (`reverseZones`, or the zone a range's CIDR falls in). */
  readonly reverse: boolean;
  /** The reverse zones the target holds, absolute, longest match first wins; absent: derived from each range. */
  readonly reverseZones?: readonly string[];
  readonly target: DnsTargetSpec;
}

/** Range lifecycle, as Kubernetes' ServiceCIDR: Ready serves allocations; Terminating serves none and waits for its leases to go. */
export const RangeState = { Ready: 'Ready', Terminating: 'Terminating' } as const;
export type RangeState = (typeof RangeState)[keyof typeof RangeState];

export const IpFamilyPolicy = {
  SingleStack: 'SingleStack',
  PreferDualStack: 'PreferDualStack',
  RequireDualStack: 'RequireDualStack',
} as const;
export type IpFamilyPolicy = (typeof IpFamilyPolicy)[keyof typeof IpFamilyPolicy];

/** A named set of ranges with pool-wide exclusions (never handed out dynamically). */
export interface Pool {
  readonly name: string;
  /** Canonical CIDRs; single addresses are stored as /32 or /128. */
  readonly exclude: readonly string[];
  readonly createdAt: string;
  /**
   * Since when the pool's occupancy summary reflects all its leases: its creation for pools created with the
   * summary, the end of the reconciler's first build for older ones; absent until then (reads use the listing).
   */
  readonly summarySince?: string;
  /**
   * Seconds a released address stays held for its previous owner identity (kind and name) before anyone else may
   * take it; absent or 0: free at once. Fixed at creation, like the rest of the pool.
   */
  readonly reuseDelaySeconds?: number;
  /**
   * Days the address history keeps a holding after it ended (DynamoDB's TTL removes it then); 0 keeps none. Absent:
   * DEFAULT_HISTORY_DAYS. Fixed at creation, like the rest of the pool.
   */
  readonly historyDays?: number;
  /** Who may do what inside the pool (shared/core/access.ts); absent: every caller IAM lets in. Fixed at creation. */
  readonly access?: PoolAccess;
  /**
   * Terminating once its DELETE was accepted: gone for every request (404), its name not free (409 PoolTerminating)
   * until the finalizer has purged what the pool left and removed the pool item last (PoolStore.finalizePool).
   */
  readonly state?: PoolState;
  /** When the deletion was accepted (Terminating only). */
  readonly deletionRequestedAt?: string;
  /**
   * Percentages of free space below which the stream function warns, per family, highest first (and always when
   * full): occupancy/exhaustion.ts. Absent: DEFAULT_FREE_THRESHOLDS. Fixed at creation.
   */
  readonly freeThresholds?: readonly number[];
  /**
   * A block pool: per family, the prefix length of the aligned blocks its claims take instead of addresses
   * (Calico's block size, AWS IPAM's allocation netmask). A pool hands out addresses or blocks, never both, so no
   * address lease and block overlap in it. Absent: an address pool. Fixed at creation.
   */
  readonly blockPrefixLength?: Readonly<Partial<Record<IpFamily, number>>>;
  /** Grow on demand (use-cases/grow.ts): the parent block pool this pool takes more blocks from. Fixed at creation. */
  readonly grow?: GrowRule;
  /**
   * A pool without `access` whose blocks other pools may use (nested ranges, growth): its explicit consent, since
   * those writes arrive on the child's routes where IAM never sees this pool (access.ts requireChildPoolConsent).
   */
  readonly openToChildPools?: true;
  /** The DNS zone its claims' names are published in (core/dns); absent: none. Fixed at creation. */
  readonly dns?: DnsSettings;
}

/** A pool's growth rule: one more block of `pool` when a family's free positions fall below `belowFree`, at most `maxBlocks`. */
export interface GrowRule {
  readonly pool: string;
  readonly belowFree: number;
  readonly maxBlocks: number;
}

/** Whether a pool hands out blocks (a block pool) rather than addresses. */
export function isBlockPool(pool: Pick<Pool, 'blockPrefixLength'>): boolean {
  return pool.blockPrefixLength !== undefined;
}

/** A pool's warning thresholds, percent free, highest first (occupancy/exhaustion.ts). */
export const DEFAULT_FREE_THRESHOLDS: readonly number[] = [20, 5];

export function freeThresholdsOf(pool: Pick<Pool, 'freeThresholds'>): readonly number[] {
  return pool.freeThresholds ?? DEFAULT_FREE_THRESHOLDS;
}

/** A pool's lifecycle, as a Kubernetes Namespace's: absent state is Active. */
export const PoolState = { Terminating: 'Terminating' } as const;
export type PoolState = (typeof PoolState)[keyof typeof PoolState];

/** How long the address history keeps a holding when the pool does not say. */
export const DEFAULT_HISTORY_DAYS = 90;

/** Longest history a pool may keep: ten years. */
export const MAX_HISTORY_DAYS = 3650;

/** A pool's history retention in days. */
export function historyDaysOf(pool: Pick<Pool, 'historyDays'>): number {
  return pool.historyDays ?? DEFAULT_HISTORY_DAYS;
}

/** A CIDR of a pool. Immutable once created, except for its state. */
export interface Range {
  readonly pool: string;
  readonly name: string;
  readonly cidr: string;
  readonly family: IpFamily;
  readonly state: RangeState;
  /** The pool's legacy (bitmap-mirrored) range of its family. */
  readonly legacy: boolean;
  readonly createdAt: string;
  /** When deletion was asked for (Terminating only). */
  readonly deletionRequestedAt?: string;
  /** A block pool's block prefix length for the range's family, copied from the pool: the range is counted in blocks. */
  readonly blockPrefixLength?: number;
  /** The block claim of another pool this range was made from (a nested pool); the claim cannot be released meanwhile. */
  readonly source?: RangeSource;
}

/** Where a nested pool's range comes from: a block claim of its parent pool. */
export interface RangeSource {
  readonly pool: string;
  readonly claim: string;
}

/** A range made from a claim's block, as the parent claim lists it (the marker its release is conditioned on). */
export interface ChildRange {
  readonly pool: string;
  readonly range: string;
  /** The block the range is (one of the claim's). */
  readonly cidr: string;
}

/** A pool with its ranges, as one consistent read. */
export interface PoolView {
  readonly pool: Pool;
  readonly ranges: readonly Range[];
  /**
   * The pool's range generation when the view was read (PoolStore.rangeGeneration): every change of the ranges the
   * view misses has changed it since. Absent when the pool has none (no range change since generations exist): such a
   * view is never taken as current.
   */
  readonly generation?: string;
}

export interface Owner {
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface ClaimAddress {
  readonly address: string;
  readonly family: IpFamily;
  /** The range the address was taken through. */
  readonly range: string;
  /** In a block pool: the block's prefix length (`address` is its network address); absent for an address. */
  readonly prefixLength?: number;
}

/** What the client asked for; two requests with equal specs are the same request (idempotency). */
export interface ClaimSpec {
  readonly owner: Owner;
  readonly ipFamilyPolicy: IpFamilyPolicy;
  readonly ipFamilies: readonly IpFamily[];
  readonly addresses: readonly string[];
  readonly ttlSeconds?: number;
  readonly generateName?: string;
  /** Addresses per family (a batch claim); absent means 1, so claims made before batches compare equal. */
  readonly count?: number;
  /** Key/value labels (labels.ts); absent means none, so claims made before labels compare equal. */
  readonly labels?: Labels;
  /** Explicit blocks of a block-pool claim, canonical CIDRs (one per family); absent means none. */
  readonly prefixes?: readonly string[];
  /** The DNS label the claim's addresses are published under in a pool with `dns`; absent: the claim's name. */
  readonly hostname?: string;
}

/** The owner-facing unit: the addresses of one owner's request, written in one transaction with their leases. */
export interface Claim {
  readonly pool: string;
  readonly name: string;
  /** Unique per incarnation: a claim deleted and made again under the same name is another claim. */
  readonly uid: string;
  readonly spec: ClaimSpec;
  readonly addresses: readonly ClaimAddress[];
  readonly createdAt: string;
  /** Epoch milliseconds; absent when the claim has no TTL. */
  readonly expiresAt?: number;
  readonly version: number;
  /** The principal whose request created the claim; absent for claims made before it was recorded, or unsigned. */
  readonly createdBy?: Principal;
  /**
   * An identical request was answered this claim while its creator might still take it back (use-cases/claims.ts,
   * answerExisting): a release conditioned on the claim as read no longer applies to a read made before. Not shown
   * to clients (it changes neither the document nor its version).
   */
  readonly pinned?: true;
  /**
   * The workloads using the claim's addresses (the DRA claim's `reservedFor`), in the order they joined; absent for a
   * claim that never had one. A claim that has any is released when the last one leaves (use-cases/consumers.ts).
   */
  readonly consumers?: readonly Consumer[];
  /**
   * The ranges of other pools made from this claim's blocks (nested pools): while any lives the claim is not released
   * (ClaimHasChildrenError), and it has no expiry (a child range's creation confirms the hold). Absent: none.
   */
  readonly children?: readonly ChildRange[];
  /** In a pool with `dns`: the label its addresses are published under (spec.hostname, or the name); set at creation. */
  readonly dnsLabel?: string;
}

/** A claim's blocks as CIDRs (`address/prefixLength`); an address claim's addresses as they are. */
export function prefixOf(a: Pick<ClaimAddress, 'address' | 'prefixLength'>): string {
  return a.prefixLength === undefined ? a.address : `${a.address}/${a.prefixLength}`;
}

/** A workload that uses a claim's addresses (a pod, a Service, a keepalived peer), known by its uid. */
export interface Consumer {
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/**
 * Most consumers a claim may list (the DRA claim's `reservedFor` limit). With each field at most
 * CONSUMER_FIELD_BYTES, 256 of them keep the claim item well under DynamoDB's 400 KB (tests/cases/consumers.cases.ts).
 */
export const MAX_CONSUMERS = 256;

/** Most UTF-8 bytes of a consumer's kind, name or uid: 253 ASCII characters, a Kubernetes name's limit. */
export const CONSUMER_FIELD_BYTES = 253;

/**
 * A lease item's state: Allocated while a claim holds it; Released once its claim let go of it in a pool with a reuse
 * delay, when the item stays to hold the address for its previous owner until `expiresAt` (then it is free with no
 * further write: every allocation already treats an expired lease as free).
 */
export const LeaseState = { Allocated: 'Allocated', Released: 'Released' } as const;
export type LeaseState = (typeof LeaseState)[keyof typeof LeaseState];

/** One held address: the item is the lease (a Kubernetes IPAddress object). */
export interface Lease {
  readonly pool: string;
  readonly address: string;
  readonly family: IpFamily;
  readonly range: string;
  readonly claim: string;
  readonly claimUid: string;
  readonly owner: Owner;
  readonly createdAt: string;
  /**
   * When the lease stops holding the address: a TTL claim's expiry plus the pool's reuse delay; for a Released
   * lease, when the address becomes reusable. Absent: held until released.
   */
  readonly expiresAt?: number;
  /** Absent on items written before states existed: Allocated. */
  readonly state?: LeaseState;
  /** When a Released lease was released (its `claim` and `owner` are the previous ones; `claimUid` is empty). */
  readonly releasedAt?: string;
  /** Why a Released lease's claim let go of it (the address history reads it off the change); absent: a client's release. */
  readonly endReason?: EndReason;
  /** Who released a Released lease: the caller of the release, absent when the reconciler released it on its own. */
  readonly releasedBy?: Principal;
  /**
   * The claim's labels and creator, copied onto the lease when it is written (same item, same transaction), because
   * the address history is made from lease images alone: a deleted claim cannot be read back. Absent: none.
   */
  readonly labels?: Labels;
  readonly createdBy?: Principal;
  /** In a block pool: the held block's prefix length (`address` is its network address). */
  readonly prefixLength?: number;
  /**
   * In a pool with `dns`: the claim's DNS label (its hostname, or its name), copied like its labels, so a released
   * lease's image names the records to remove though the claim is gone, and the stream function's DNS upkeep reads
   * nothing for the leases of pools without dns. Absent: a pool without dns.
   */
  readonly dnsLabel?: string;
}

/** Size, used, releasing (held for a previous owner) and free addresses; `used + releasing + free = size`. Exact, so BigInt. */
export interface Utilization {
  readonly size: bigint;
  readonly used: bigint;
  readonly releasing: bigint;
  readonly free: bigint;
}

/** Longest reuse delay a pool may have: a week. */
export const MAX_REUSE_DELAY_SECONDS = 7 * 24 * 3600;

/** A pool's reuse delay in milliseconds (0 without one). */
export function reuseDelayMs(pool: Pool): number {
  return (pool.reuseDelaySeconds ?? 0) * 1000;
}

/** True for a lease item that holds a released address for its previous owner. */
export function isReleased(lease: Lease): boolean {
  return lease.state === LeaseState.Released;
}

/**
 * When a claim's released addresses become reusable: the reuse delay counted from the release, or from the claim's
 * expiry for an expired claim. Undefined when nothing is held (no delay, or the delay has already passed).
 */
export function reusableAtAfter(pool: Pool, claim: Pick<Claim, 'expiresAt'>, nowMs: number): number | undefined {
  const delay = reuseDelayMs(pool);
  if (delay === 0) return undefined;
  const from = claim.expiresAt !== undefined && claim.expiresAt <= nowMs ? claim.expiresAt : nowMs;
  return from + delay > nowMs ? from + delay : undefined;
}

/**
 * Whom a released address is held for in a pool with a reuse delay: the owner's kind and name (a recreated workload
 * has a new uid) and the principal that created the claim (absent for an unsigned request). Another allocator naming
 * the same owner is not that identity: the delay exists so that nobody else takes the address meanwhile.
 */
export interface HoldIdentity {
  readonly kind: string;
  readonly name: string;
  readonly creatorArn?: string;
}

/** The identity a claim's released addresses are held for, and that takes held addresses back. */
export function holdIdentityOf(claim: Pick<Claim, 'spec' | 'createdBy'>): HoldIdentity {
  return {
    kind: claim.spec.owner.kind,
    name: claim.spec.owner.name,
    ...(claim.createdBy ? { creatorArn: claim.createdBy.arn } : {}),
  };
}

/** The identity a Released lease is held for (its previous claim's owner and creator, copied onto the lease). */
export function leaseHoldIdentity(lease: Pick<Lease, 'owner' | 'createdBy'>): HoldIdentity {
  return {
    kind: lease.owner.kind,
    name: lease.owner.name,
    ...(lease.createdBy ? { creatorArn: lease.createdBy.arn } : {}),
  };
}

/** Whether two hold identities are the same. */
export function sameHoldIdentity(a: HoldIdentity, b: HoldIdentity): boolean {
  return a.kind === b.kind && a.name === b.name && a.creatorArn === b.creatorArn;
}

/**
 * Whether a claimant may take back what is held for `held`: the same identity, or the same owner when the hold
 * recorded no creator (a Released lease written before creators were recorded).
 */
export function mayTakeBack(held: HoldIdentity, claimant: HoldIdentity): boolean {
  return (
    held.kind === claimant.kind &&
    held.name === claimant.name &&
    (held.creatorArn === undefined || held.creatorArn === claimant.creatorArn)
  );
}

/** What a release holds back for the previous owner: when the addresses become reusable, and when they were released. */
export interface Hold {
  readonly reusableAt: number;
  readonly releasedAt: string;
  /** The caller of the release, recorded on the Released leases. */
  readonly releasedBy?: Principal;
}

/** The hold of a release at `nowMs` in `pool`, or undefined when the addresses are free at once. */
export function holdOf(pool: Pool, claim: Pick<Claim, 'expiresAt'>, nowMs: number): Hold | undefined {
  const reusableAt = reusableAtAfter(pool, claim, nowMs);
  return reusableAt === undefined ? undefined : { reusableAt, releasedAt: new Date(nowMs).toISOString() };
}

/** True when a claim or lease with this expiry is no longer held at `nowMs`. */
export function isExpired(item: { readonly expiresAt?: number }, nowMs: number): boolean {
  return item.expiresAt !== undefined && item.expiresAt <= nowMs;
}

/**
 * The lease a claim holds for one of its addresses; `createdAt` defaults to the claim's. Its expiry is the claim's
 * plus `holdMs` (the pool's reuse delay): an expired claim's addresses stay held for their owner until then, even
 * before the reconciler releases the claim.
 */
export function leaseOfClaim(
  claim: Claim,
  address: ClaimAddress,
  createdAt: string = claim.createdAt,
  holdMs = 0,
): Lease {
  const lease: Lease = {
    pool: claim.pool,
    address: address.address,
    family: address.family,
    range: address.range,
    claim: claim.name,
    claimUid: claim.uid,
    owner: claim.spec.owner,
    createdAt,
    ...(claim.spec.labels && Object.keys(claim.spec.labels).length > 0 ? { labels: claim.spec.labels } : {}),
    ...(claim.createdBy ? { createdBy: claim.createdBy } : {}),
    ...(address.prefixLength !== undefined ? { prefixLength: address.prefixLength } : {}),
    ...(claim.dnsLabel ? { dnsLabel: claim.dnsLabel } : {}),
  };
  return claim.expiresAt === undefined ? lease : { ...lease, expiresAt: claim.expiresAt + holdMs };
}

/** The Released lease that holds `lease`'s address for its owner after a release with `hold`. */
export function releasedLease(lease: Lease, hold: Hold, endReason?: EndReason): Lease {
  return {
    ...lease,
    claimUid: '',
    expiresAt: hold.reusableAt,
    state: LeaseState.Released,
    releasedAt: hold.releasedAt,
    ...(hold.releasedBy ? { releasedBy: hold.releasedBy } : {}),
    ...(endReason ? { endReason } : {}),
  };
}
