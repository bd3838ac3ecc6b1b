import type { IpFamily } from '../../ip/address.ts';
import type { PoolView } from '../../model.ts';
import type { ClaimStore, Clock, LeaseIndex, Random } from '../../ports.ts';
import type { OccupancyStore } from '../../occupancy/ports.ts';
import type { UsedUpSeals } from '../../used-up/ports.ts';
import type { Hint, HintCache } from '../hint.ts';
import type { Interval } from '../../base/intervals.ts';
import type { ParsedRange } from '../../base/pool-geometry.ts';
import type { Units } from './units.ts';

/** The ports the lease allocator's stages use: one set per allocator (per container). */
export interface LeasePorts {
  readonly claims: Pick<ClaimStore, 'commitClaim' | 'releaseClaim' | 'getClaim'>;
  readonly hints: HintCache;
  readonly clock: Clock;
  readonly random: Random;
  /**
   * Consistent reads of lease items (one BatchGetItem per 100 addresses): near full, the few addresses a summary shows
   * free are checked before a commit, and every "used up" decision is confirmed by reading the leases in bulk.
   */
  readonly leaseStates: Pick<OccupancyStore, 'leaseStates'>['leaseStates'];
  /** The addresses a pool with a reuse delay still holds for an owner identity: its dynamic claims get them back. */
  readonly heldFor?: LeaseIndex['heldFor'];
  /**
   * Seals on bands read used up, with the ranges' freed counters (used-up/rule.ts): a band sealed since nothing was freed
   * is not read again. Without them (NO_SEALS) every "used up" decision reads its bands in bulk.
   */
  readonly seals?: UsedUpSeals;
}

/** The knobs one allocator runs with: TUNING's, or the overrides its deps give. */
export interface Knobs {
  readonly maxCommits: number;
  readonly fullTrustMs: number;
  readonly probes: number;
}

/** What every stage of one allocator shares: its ports, its knobs and the units it allocates (units.ts). */
export interface AllocatorEnv {
  readonly ports: LeasePorts;
  readonly knobs: Knobs;
  readonly units: Units;
}

/** A candidate for one slot of the claim: a position of a range. */
export interface Choice {
  readonly value: bigint;
  readonly range: ParsedRange;
  readonly explicit: boolean;
  /** An address held for this claim's owner identity after a release (a sticky address): tried once, then picked anew. */
  readonly sticky?: boolean;
}

/**
 * What a pick from a view answers:
 * - picked: a candidate (read free when the view was near full);
 * - none: the view shows nothing free to pick (or all it showed is in flight in this container);
 * - full: every address the view showed free was read taken;
 * - upperFull: the same, all of them in upper bands of ranges that have a lower band: whether those upper bands are
 *   used up is the question, not whether the family is.
 */
export type PickResult =
  | { readonly kind: 'picked'; readonly choice: Choice }
  | { readonly kind: 'none' }
  | { readonly kind: 'full' }
  | { readonly kind: 'upperFull'; readonly ranges: readonly ParsedRange[] };

export const picked = (choice: Choice | undefined): PickResult =>
  choice ? { kind: 'picked', choice } : { kind: 'none' };

/** What one allocate call has seen so far: created by the commit rounds, read and written by every stage. */
export interface CallContext {
  readonly env: AllocatorEnv;
  readonly view: PoolView;
  readonly pool: string;
  /** The claim's owner identity (ownerIdentity): a Released lease held for it is free for this call. */
  readonly owner: string;
  /** The collision count at this call's last forced read of the hint, per family. */
  readonly refreshedAt: Map<IpFamily, number>;
  readonly collisions: Map<IpFamily, number>;
  /** When this call last collided, per family: a hint read before that is known to be behind. */
  readonly collidedAt: Map<IpFamily, number>;
  /** Ranges whose upper band this call read whole and found used up: the other picks of a batch do not read it again. */
  readonly upperUsedUp: Set<string>;
  /**
   * The freed counters this call read, by range: a later "used up" decision of the call reads only the seals again
   * (readCounters), as counters read at any moment of the call vouch for seals read after them.
   */
  readonly counters: Map<string, readonly number[]>;
  /** Addresses this call read free, per family: a batch reads them once, not once a pick; cleared on a collision. */
  readonly verified: Map<IpFamily, Set<bigint>>;
  /** Dynamic candidates in flight, unreserved once their transaction has an answer. */
  readonly reservations: (() => void)[];
  /** A preview (dryRun): its decisions read as any call's do, and write nothing (no seal). */
  readonly dryRun?: boolean;
}

/** One dynamic pick of a family inside a call. */
export interface FamilyPick {
  readonly call: CallContext;
  readonly family: IpFamily;
  /** This claim's other picks of the family (a batch): never picked again. */
  readonly chosen: ReadonlySet<bigint>;
  /** Addresses this call has read free in the family (CallContext.verified). */
  readonly verified: Set<bigint>;
}

/** shownFree's collections in one synchronous step, per range: the limit asked and what it found. */
export type ShownMemo = Map<ParsedRange, { readonly limit: number; readonly values: bigint[] }>;

/**
 * One hint read of a pick and what goes with it: the ranges picks draw from, the pool's exclusions, the hint, what is
 * in flight in this container, and what the copy shows free collected once for its synchronous steps (`memo`).
 */
export interface ViewScope {
  readonly pick: FamilyPick;
  readonly ranges: readonly ParsedRange[];
  readonly excluded: readonly Interval[];
  readonly hint: Hint;
  readonly inFlight: ReadonlySet<bigint>;
  readonly memo?: ShownMemo;
}

/** A uniformly random element of a non-empty list (one draw of the allocator's Random). */
export function randomOf<T>(env: AllocatorEnv, items: readonly T[]): T {
  return items[Number(env.ports.random.below(BigInt(items.length)))]!;
}
