/**
 * The promises the service makes, checked against the table's items (MemoryTable's current state) and against the
 * answers clients got. Each check is a pure function of what it is given, so tests/unit/sim-invariants.test.ts can
 * show each one catching a deliberately broken store.
 *
 * "Live" is judged with the run's clock-skew bound: containers' clocks disagree by up to `skewMs`, and a lease's
 * "absent or expired" condition is judged by the writer's clock, so a claim within `skewMs` of its expiry may already
 * have lost its address to a container whose clock runs ahead. That is what a TTL means with skewed clocks: expiry
 * +- the skew. A claim counts as live here while `expiresAt > now + skewMs`.
 */
import { itemToClaim, itemToLease, itemToRange } from '../shared/adapters/dynamodb/codec.ts';
import type { Item } from '../shared/adapters/dynamodb/codec.ts';
import { Entity } from '../shared/adapters/dynamodb/keys.ts';
import { parsedAddress, parsedCidr } from './parsed.ts';
import { slotted } from '../shared/core/ip/cidr.ts';
import { isHostOf } from '../shared/core/ip/cidr.ts';
import { RangeState, type Claim, type Lease, type Range } from '../shared/core/model.ts';

export const Invariant = {
  NoDoubleHold: 'no-address-held-twice',
  ClaimLeases: 'live-claim-leases-exist-and-name-it',
  Utilization: 'utilization-equals-live-leases',
  Bitmaps: 'bitmaps-equal-leases',
  Summary: 'occupancy-summary-equals-leases',
  ReleasedInTime: 'expired-and-owner-gone-claims-released-in-time',
  LeaseInRange: 'no-live-lease-outside-ready-or-terminating-range',
  RetrySameAddresses: 'retried-claim-returns-committed-addresses',
  No5xx: 'no-5xx-but-not-ready',
  DeletedPoolEmpty: 'no-claim-or-lease-of-a-deleted-pool',
  // Over the client ledger (ledger.ts): what clients were told.
  HeldClaimStaysHeld: 'answered-claim-held-until-released-or-expired',
  NoAddressToldTwice: 'no-address-told-to-two-holders-at-once',
  ReleasedAddressFree: 'released-or-expired-address-free-in-time',
  NoClaimInDeletedRange: 'no-201-in-a-range-deleted-before-the-request',
  ProjectionLagBounded: 'mirror-and-summary-lag-bounded-under-load',
  RangeFullExact: 'range-full-only-when-the-family-is-full',
  // Shared claims.
  ConsumedClaimHeld: 'claim-with-consumers-not-released',
  ConsumersLeftReleased: 'claim-whose-consumers-left-released-in-time',
  // The pool tree: nested pools and growth (tree.ts).
  PoolTree: 'no-overlap-in-the-pool-tree',
  GrowthBounded: 'growth-bounded-by-max-blocks',
} as const;
export type Invariant = (typeof Invariant)[keyof typeof Invariant];

export interface Violation {
  readonly invariant: Invariant;
  readonly detail: string;
  /** Names (claims, addresses, ranges) the trace is filtered on. */
  readonly subjects: readonly string[];
}

/** The table's items by kind. */
export interface Snapshot {
  readonly claims: readonly Claim[];
  readonly leases: readonly Lease[];
  readonly ranges: readonly Range[];
  readonly bitmaps: readonly Item[];
}

export function snapshotOf(items: readonly Item[]): Snapshot {
  const claims: Claim[] = [];
  const leases: Lease[] = [];
  const ranges: Range[] = [];
  const bitmaps: Item[] = [];
  for (const item of items) {
    if (item.entity === Entity.Claim) claims.push(itemToClaim(item));
    else if (item.entity === Entity.Lease) leases.push(itemToLease(item));
    else if (item.entity === Entity.Range) ranges.push(itemToRange(item));
    else if (item.entity === Entity.Bitmap) bitmaps.push(item);
  }
  return { claims, leases, ranges, bitmaps };
}

const live = (x: { readonly expiresAt?: number }, nowMs: number, skewMs: number): boolean =>
  x.expiresAt === undefined || x.expiresAt > nowMs + skewMs;

/** No address is listed by two live claims. */
export function checkNoDoubleHold(s: Snapshot, nowMs: number, skewMs: number): Violation[] {
  const holders = new Map<string, string[]>();
  for (const c of s.claims) {
    if (!live(c, nowMs, skewMs)) continue;
    for (const a of c.addresses) {
      const id = `${c.pool}/${a.address}`;
      holders.set(id, [...(holders.get(id) ?? []), c.name]);
    }
  }
  return [...holders.entries()]
    .filter(([, names]) => names.length > 1)
    .map(([address, names]) => ({
      invariant: Invariant.NoDoubleHold,
      detail: `${address} is held by live claims ${names.join(', ')}`,
      subjects: [address.split('/')[1]!, ...names],
    }));
}

/**
 * Every live claim's addresses have a lease item naming that claim incarnation. Claims with an address of a deleted
 * pool are left to checkDeletedPools, as in checkLeaseInRange: the pool's finalizer removes every lease of the pool
 * (Released and orphaned ones too), and a claim its claims listing did not show goes by the reconciler's row 17.
 */
export function checkClaimLeases(
  s: Snapshot,
  nowMs: number,
  skewMs: number,
  deleted: readonly DeletedPool[] = [],
): Violation[] {
  const leases = new Map(s.leases.map((l) => [`${l.pool}/${l.address}`, l]));
  const out: Violation[] = [];
  for (const c of s.claims) {
    if (!live(c, nowMs, skewMs)) continue;
    if (c.addresses.some((a) => ofDeleted(deleted, c.pool, a.address))) continue;
    for (const a of c.addresses) {
      const lease = leases.get(`${c.pool}/${a.address}`);
      if (!lease)
        out.push({
          invariant: Invariant.ClaimLeases,
          detail: `live claim ${c.name} lists ${a.address}, which has no lease`,
          subjects: [c.name, a.address],
        });
      else if (lease.claimUid !== c.uid || lease.claim !== c.name)
        out.push({
          invariant: Invariant.ClaimLeases,
          detail: `live claim ${c.name} lists ${a.address}, whose lease names ${lease.claim} (${lease.claimUid})`,
          subjects: [c.name, a.address, lease.claim],
        });
    }
  }
  return out;
}

/** A pool deleted (DELETE answered) at `atMs`, and the CIDR of a range it had then (each pool incarnation has its own). */
export interface DeletedPool {
  readonly pool: string;
  readonly cidr: string;
  readonly atMs: number;
}

const ofDeleted = (deleted: readonly DeletedPool[], pool: string, address: string): DeletedPool | undefined =>
  deleted.find((d) => d.pool === pool && isHostOf(parsedCidr(d.cidr), parsedAddress(address)));

/**
 * Every live lease lies, as a host address, in a Ready or Terminating range of its pool. Leases in a range of a
 * deleted pool are left to checkDeletedPools (a claim committed in flight after the delete releases itself).
 */
export function checkLeaseInRange(
  s: Snapshot,
  nowMs: number,
  skewMs: number,
  deleted: readonly DeletedPool[] = [],
): Violation[] {
  const out: Violation[] = [];
  for (const l of s.leases) {
    if (!live(l, nowMs, skewMs)) continue;
    if (ofDeleted(deleted, l.pool, l.address)) continue;
    const address = parsedAddress(l.address);
    // A block pool's range holds its blocks' network addresses (Cidr.slot), not its hosts.
    const inside = s.ranges.some(
      (r) =>
        r.pool === l.pool &&
        (r.state === RangeState.Ready || r.state === RangeState.Terminating) &&
        isHostOf(slotted(parsedCidr(r.cidr), r.blockPrefixLength), address),
    );
    if (!inside)
      out.push({
        invariant: Invariant.LeaseInRange,
        detail: `lease ${l.address} of claim ${l.claim} lies in no Ready or Terminating range`,
        subjects: [l.address, l.claim],
      });
  }
  return out;
}

/**
 * Claims past their expiry by more than `allowanceMs` (the reconciler's period plus its grace plus one run) are
 * gone, and so are claims of owners released more than `allowanceMs` ago that existed when the release began.
 */
export function checkReleasedInTime(
  s: Snapshot,
  nowMs: number,
  allowanceMs: number,
  ownersGone: readonly {
    readonly pool: string;
    readonly uid: string;
    readonly askedAtMs: number;
    readonly claimUids: ReadonlySet<string>;
  }[],
): Violation[] {
  const out: Violation[] = [];
  for (const c of s.claims) {
    if (c.expiresAt !== undefined && c.expiresAt + allowanceMs < nowMs) {
      out.push({
        invariant: Invariant.ReleasedInTime,
        detail: `claim ${c.name} expired ${Math.round(nowMs - c.expiresAt)} ms ago and is still in the table`,
        subjects: [c.name],
      });
    }
  }
  for (const gone of ownersGone) {
    if (gone.askedAtMs + allowanceMs >= nowMs) continue;
    for (const c of s.claims) {
      if (c.pool === gone.pool && c.spec.owner.uid === gone.uid && gone.claimUids.has(c.uid)) {
        out.push({
          invariant: Invariant.ReleasedInTime,
          detail: `claim ${c.name} of owner ${gone.uid}, released ${Math.round(nowMs - gone.askedAtMs)} ms ago, is still in the table`,
          subjects: [c.name, gone.uid],
        });
      }
    }
  }
  return out;
}

/**
 * No lease item outlives its expiry by more than `allowanceMs` (the expired-claim grace plus one reconciler period
 * and a run: its claim goes with it, or, orphaned, it goes as its claim would have): an expired address is claimable
 * again within that bound. Held (Released) leases of a reuse delay are left to their own delay.
 */
export function checkExpiredLeasesGone(s: Snapshot, nowMs: number, allowanceMs: number): Violation[] {
  const out: Violation[] = [];
  for (const l of s.leases) {
    if (l.expiresAt === undefined || l.expiresAt + allowanceMs >= nowMs || l.state === 'Released') continue;
    out.push({
      invariant: Invariant.ReleasedAddressFree,
      detail: `lease ${l.address} of claim ${l.claim} expired ${Math.round(nowMs - l.expiresAt)} ms ago and is still in the table`,
      subjects: [l.address, l.claim],
    });
  }
  return out;
}

/**
 * No claim or lease item of a deleted pool (an address of a range it had when it was deleted) is left `allowanceMs`
 * after the delete was answered: the operator released its claims before, and a claim committed in flight after it
 * releases itself in its post-commit check (the pool's range generation is gone), within its request.
 */
export function checkDeletedPools(
  s: Snapshot,
  nowMs: number,
  allowanceMs: number,
  deleted: readonly DeletedPool[],
): Violation[] {
  if (deleted.length === 0) return [];
  const out: Violation[] = [];
  const late = (pool: string, address: string) => {
    const d = ofDeleted(deleted, pool, address);
    return d && d.atMs + allowanceMs < nowMs ? d : undefined;
  };
  for (const c of s.claims) {
    const a = c.addresses.find((x) => late(c.pool, x.address));
    if (a)
      out.push({
        invariant: Invariant.DeletedPoolEmpty,
        detail: `claim ${c.name} (${a.address}) of pool ${c.pool}, deleted ${Math.round(nowMs - late(c.pool, a.address)!.atMs)} ms ago, is still in the table`,
        subjects: [c.name, a.address, `DELETE pool ${c.pool}`],
      });
  }
  for (const l of s.leases) {
    const d = late(l.pool, l.address);
    if (d)
      out.push({
        invariant: Invariant.DeletedPoolEmpty,
        detail: `lease ${l.address} (claim ${l.claim}) of pool ${l.pool}, deleted ${Math.round(nowMs - d.atMs)} ms ago, is still in the table`,
        subjects: [l.address, l.claim, `DELETE pool ${l.pool}`],
      });
  }
  return out;
}

/** Reported utilization (per range) equals the live leases among the range's host addresses (a block range's blocks). */
export function checkUtilization(
  s: Snapshot,
  nowMs: number,
  reported: readonly { readonly pool: string; readonly range: string; readonly used: bigint }[],
): Violation[] {
  const out: Violation[] = [];
  for (const r of reported) {
    const range = s.ranges.find((x) => x.pool === r.pool && x.name === r.range);
    if (!range) continue;
    const cidr = slotted(parsedCidr(range.cidr), range.blockPrefixLength);
    const count = s.leases.filter(
      (l) =>
        l.pool === r.pool &&
        (l.expiresAt === undefined || l.expiresAt > nowMs) &&
        isHostOf(cidr, parsedAddress(l.address)),
    ).length;
    if (BigInt(count) !== r.used)
      out.push({
        invariant: Invariant.Utilization,
        detail: `range ${r.range} reports ${r.used} used, the table holds ${count} live leases in it`,
        subjects: [r.range],
      });
  }
  return out;
}

/** A projection of the leases (a bitmap, a summary) per range: the addresses with a lease item, and those it shows set. */
export type ProjectionCheck = readonly {
  readonly range: string;
  readonly leased: ReadonlySet<string>;
  readonly set: ReadonlySet<string>;
}[];

/** A projection's set bits are exactly the addresses with a lease item (expired ones count: the item still exists). */
function checkProjection(invariant: Invariant, what: string, expected: ProjectionCheck): Violation[] {
  const out: Violation[] = [];
  for (const e of expected) {
    const missing = [...e.leased].filter((a) => !e.set.has(a));
    const extra = [...e.set].filter((a) => !e.leased.has(a));
    if (missing.length)
      out.push({
        invariant,
        detail: `${what} of ${e.range} lacks the bits of leases ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''}`,
        subjects: [e.range, ...missing.slice(0, 5)],
      });
    if (extra.length)
      out.push({
        invariant,
        detail: `${what} of ${e.range} has bits without leases: ${extra.slice(0, 5).join(', ')}${extra.length > 5 ? ` and ${extra.length - 5} more` : ''}`,
        subjects: [e.range, ...extra.slice(0, 5)],
      });
  }
  return out;
}

/** Each legacy bitmap's set bits are exactly the addresses of its window with a lease item (expired ones count). */
export function checkBitmaps(expected: ProjectionCheck): Violation[] {
  return checkProjection(Invariant.Bitmaps, 'bitmap', expected);
}

/** Each range's occupancy summary bits are exactly its host addresses with a lease item, once the stream has drained. */
export function checkSummaries(expected: ProjectionCheck): Violation[] {
  return checkProjection(Invariant.Summary, 'occupancy summary', expected);
}

/** A claim as its answer tells it (the Claim document, read by sim/http.ts), in the pool the request named. */
export interface AnsweredClaim {
  readonly pool: string;
  readonly name: string;
  readonly uid: string;
  /** The owner's uid. */
  readonly owner: string;
  readonly addresses: readonly { readonly address: string }[];
  /** Epoch milliseconds (the document's expiresAt); absent without a TTL. */
  readonly expiresAt?: number;
}

/**
 * A successful claim answer names the first incarnation the request committed that is still held: a retry after a
 * lost answer whose first attempt committed gets that claim, with the same addresses (not a second one written
 * over it).
 */
export function checkRetryAnswer(
  answer: Pick<AnsweredClaim, 'name' | 'uid' | 'addresses'>,
  firstHeld: { readonly uid: string; readonly addresses: readonly string[] } | undefined,
): Violation[] {
  const lastCommitted = firstHeld;
  const addresses = answer.addresses.map((a) => a.address);
  if (!lastCommitted)
    return [
      {
        invariant: Invariant.RetrySameAddresses,
        detail: `claim ${answer.name} was answered (${addresses.join(', ')}) but never committed`,
        subjects: [answer.name],
      },
    ];
  if (lastCommitted.uid !== answer.uid || lastCommitted.addresses.join(',') !== addresses.join(',')) {
    return [
      {
        invariant: Invariant.RetrySameAddresses,
        detail: `claim ${answer.name} was answered with ${addresses.join(', ')} (${answer.uid}); the request first committed ${lastCommitted.addresses.join(', ')} (${lastCommitted.uid})`,
        subjects: [answer.name, ...addresses],
      },
    ];
  }
  return [];
}

/** No answer is a 5xx other than 503 NotReady. */
export function checkStatus(status: number, what: string, detail: string): Violation[] {
  return status >= 500 && status !== 503
    ? [{ invariant: Invariant.No5xx, detail: `${what} answered ${status}: ${detail}`, subjects: [what] }]
    : [];
}

/**
 * A shared claim as the simulation's consumer actor knows it from its answers: `present`, the consumers whose add was
 * answered and whose removal was not asked yet; `allLeftAtMs`, when the removal of the last of them was answered
 * (every removal answered: none was left unsure).
 */
export interface SharedClaim {
  readonly pool: string;
  readonly name: string;
  readonly claimUid: string;
  readonly present: ReadonlySet<string>;
  readonly allLeftAtMs?: number;
}

/**
 * A claim with consumers is not released: while any consumer's add was answered and its removal not asked, the claim
 * (that incarnation) is in the table and lists it. A claim whose consumers all left (each removal answered, or the
 * consumer's uid reported gone as an owner) is gone within `allowanceMs` (the reconciler's bound; the release is in
 * the last removal's own transaction, so it is gone at once unless a removal's answer was lost and retried).
 */
export function checkSharedClaims(
  s: Snapshot,
  nowMs: number,
  allowanceMs: number,
  shared: readonly SharedClaim[],
): Violation[] {
  const out: Violation[] = [];
  for (const t of shared) {
    const claim = s.claims.find((c) => c.pool === t.pool && c.uid === t.claimUid);
    if (t.present.size > 0) {
      const listed = new Set((claim?.consumers ?? []).map((c) => c.uid));
      const missing = [...t.present].filter((uid) => !listed.has(uid));
      if (!claim)
        out.push({
          invariant: Invariant.ConsumedClaimHeld,
          detail: `claim ${t.name} was released while ${[...t.present].join(', ')} still consumed it`,
          subjects: [t.name],
        });
      else if (missing.length)
        out.push({
          invariant: Invariant.ConsumedClaimHeld,
          detail: `claim ${t.name} does not list its consumers ${missing.join(', ')}`,
          subjects: [t.name],
        });
    }
    if (t.allLeftAtMs !== undefined && claim && t.allLeftAtMs + allowanceMs < nowMs) {
      out.push({
        invariant: Invariant.ConsumersLeftReleased,
        detail: `claim ${t.name}'s consumers all left ${Math.round(nowMs - t.allLeftAtMs)} ms ago and it is still in the table`,
        subjects: [t.name],
      });
    }
  }
  return out;
}
