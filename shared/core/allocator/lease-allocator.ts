import { formatAddress, type IpFamily } from '../ip/address.ts';
import { AlreadyAllocatedError, NotReadyError, RangeFullError } from '../errors.ts';
import { leaseOfClaim, type Claim, type ClaimAddress, type PoolView } from '../model.ts';
import type { ClaimStore, Clock, Random, ReleaseOutcome } from '../ports.ts';
import type { AllocationResult, Allocator, ClaimDraft, FamilyRequest } from './allocator.ts';
import { chooseWeighted, pickableSize, pickBlind, pickInRange, type PickRange } from './candidates.ts';
import type { HintCache } from './hint.ts';
import type { Interval } from './intervals.ts';
import { excludedIntervals, hostIntervals, rangeForExplicit, rangesOf, type ParsedRange } from './pool-geometry.ts';
import { hostOffset } from '../ip/cidr.ts';

export const PickStrategy = {
  /** Upper band first, random start, steered by the container's hint of what is taken. */
  Hinted: 'hinted',
  /** Uniform random candidates with no hint: the benchmark's baseline. */
  Blind: 'blind',
} as const;
export type PickStrategy = (typeof PickStrategy)[keyof typeof PickStrategy];

export interface LeaseAllocatorDeps {
  readonly claims: Pick<ClaimStore, 'commitClaim' | 'releaseClaim'>;
  readonly hints: HintCache;
  readonly clock: Clock;
  readonly random: Random;
  readonly strategy?: PickStrategy;
  /** Transactions tried before giving up on a contended family (each collision refreshes the hint every second time). */
  readonly maxCommits?: number;
  /** Offsets a range's dynamic picks must stay under (a legacy range's mirrored window while dual-write is on). */
  readonly windowOf?: (range: ParsedRange) => bigint | undefined;
  /** How old a complete read of the taken addresses may be and still answer RangeFull without reading again. */
  readonly fullTrustMs?: number;
}

/** A full view read this recently answers RangeFull as it is (Kubernetes' allocator trusts its informer likewise). */
export const DEFAULT_FULL_TRUST_MS = 1_000;

interface Choice {
  readonly value: bigint;
  readonly range: ParsedRange;
  readonly explicit: boolean;
}

/**
 * The per-IP lease strategy: pick likely free addresses in advance, then take them with one conditional transaction
 * (claim absent, each lease absent or expired). A collision means "try another candidate"; any other error aborts.
 */
export class LeaseAllocator implements Allocator {
  private readonly strategy: PickStrategy;
  private readonly maxCommits: number;
  private readonly fullTrustMs: number;

  constructor(private readonly deps: LeaseAllocatorDeps) {
    this.strategy = deps.strategy ?? PickStrategy.Hinted;
    this.fullTrustMs = deps.fullTrustMs ?? DEFAULT_FULL_TRUST_MS;
    this.maxCommits = deps.maxCommits ?? (this.strategy === PickStrategy.Blind ? 4096 : 64);
  }

  release(claim: Claim, expectedVersion?: number): Promise<ReleaseOutcome> {
    return this.deps.claims.releaseClaim(claim, expectedVersion);
  }

  async allocate(view: PoolView, draft: ClaimDraft, requests: readonly FamilyRequest[]): Promise<AllocationResult> {
    const picks = new Map<IpFamily, Choice>();
    for (const request of requests) {
      if (request.explicit) picks.set(request.family, { value: request.explicit.value, range: rangeForExplicit(view, request.explicit), explicit: true });
    }
    const refreshedAt = new Map<IpFamily, number>();
    const collisions = new Map<IpFamily, number>();
    // Dynamic candidates in flight, released once their transaction settles.
    const reservations: (() => void)[] = [];
    for (let commit = 0; commit < this.maxCommits; commit += 1) {
      for (const request of requests) {
        if (!picks.has(request.family)) picks.set(request.family, await this.pickDynamic(view, request.family, refreshedAt, collisions, reservations));
      }
      const nowMs = this.deps.clock.nowMs();
      const claim = buildClaim(draft, requests, picks);
      const leases = claim.addresses.map((a) => leaseOfClaim(claim, a));
      let outcome;
      try {
        outcome = await this.deps.claims.commitClaim(claim, leases, nowMs);
      } finally {
        for (const settle of reservations.splice(0)) settle();
      }
      switch (outcome.kind) {
        case 'committed':
          for (const [family, pick] of picks) this.deps.hints.markTaken(view.pool.name, family, pick.value);
          return { kind: 'allocated', claim, collisions: [...collisions.values()].reduce((a, b) => a + b, 0) };
        case 'claimExists':
          return { kind: 'exists', claim: outcome.existing };
        case 'generatedNameExists':
          return { kind: 'generatedExists', claimName: outcome.claimName };
        case 'addressesTaken':
          for (const { address, holder } of outcome.taken) {
            // Read the family off the claim written, not off `picks`: both picks of a dual-stack claim may collide.
            const family = claim.addresses.find((a) => a.address === address)?.family;
            const pick = family === undefined ? undefined : picks.get(family);
            if (family === undefined || pick === undefined) continue;
            if (pick.explicit) throw new AlreadyAllocatedError(address, holder ? { claim: holder.claim, owner: { uid: holder.owner.uid } } : undefined);
            this.deps.hints.markTaken(view.pool.name, family, pick.value);
            collisions.set(family, (collisions.get(family) ?? 0) + 1);
            picks.delete(family);
          }
          break;
      }
    }
    throw new NotReadyError('The pool is heavily contended right now; retry the request shortly.');
  }

  private async pickDynamic(view: PoolView, family: IpFamily, refreshedAt: Map<IpFamily, number>, collisions: Map<IpFamily, number>, reservations: (() => void)[]): Promise<Choice> {
    const ranges = rangesOf(view, family).filter((r) => pickableSize(this.pickRange(r)) > 0n);
    if (ranges.length === 0) throw new RangeFullError(view.pool.name, family);
    const excluded = excludedIntervals(view, family);
    if (this.strategy === PickStrategy.Blind) {
      const range = chooseWeighted(ranges.map((r) => ({ item: r, weight: pickableSize(this.pickRange(r)) })), this.deps.random)!;
      const value = pickBlind(this.pickRange(range), { excluded, random: this.deps.random });
      if (value === undefined) throw new RangeFullError(view.pool.name, family);
      return { value, range, explicit: false };
    }
    const intervals = hostIntervals(ranges);
    // Refresh the hint after every second collision of this call: a stale view must not cost more than a couple of
    // probes. `refreshedAt` holds the collision count at this call's last read of the hint.
    const seen = collisions.get(family) ?? 0;
    const force = seen - (refreshedAt.get(family) ?? 0) >= 2;
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const hint = await this.deps.hints.get(view.pool.name, family, intervals, this.deps.clock.nowMs(), force || attempt > 0);
      if (force || attempt > 0) refreshedAt.set(family, seen);
      const pick = this.pickWithHint(ranges, excluded, hint.taken, this.deps.hints.inFlight(view.pool.name, family));
      if (pick) {
        // Reserved in the same synchronous step as the pick, so no other request of this container can take it too.
        reservations.push(this.deps.hints.reserve(view.pool.name, family, pick.value));
        return pick;
      }
      // The hint says full: trust that if it was read during this call or within fullTrustMs (a full range under a
      // retry storm then costs no listing reads); an older view is read again first.
      if (refreshedAt.has(family) || this.deps.clock.nowMs() - hint.fetchedAt < this.fullTrustMs) break;
    }
    throw new RangeFullError(view.pool.name, family);
  }

  private pickWithHint(ranges: readonly ParsedRange[], excluded: readonly Interval[], taken: ReadonlySet<bigint>, inFlight: ReadonlySet<bigint>): Choice | undefined {
    const ctx = { excluded, taken, random: this.deps.random };
    // Weighing by free capacity walks the hint once per range: only worth it when there is a choice.
    const candidates = ranges.length === 1 ? [{ item: ranges[0]!, weight: 1n }] : ranges.map((r) => ({ item: r, weight: freeByHint(this.pickRange(r), taken) }));
    const tried = new Set<ParsedRange>();
    while (tried.size < ranges.length) {
      const range = candidates.length === 1 ? candidates[0]!.item : chooseWeighted(candidates.filter((c) => !tried.has(c.item)), this.deps.random);
      if (!range) return undefined;
      tried.add(range);
      const value = pickInRange(this.pickRange(range), ctx, inFlight);
      if (value !== undefined) return { value, range, explicit: false };
      const candidate = candidates.find((c) => c.item === range);
      if (candidate) candidate.weight = 0n;
    }
    return undefined;
  }

  private pickRange(range: ParsedRange): PickRange {
    const window = this.deps.windowOf?.(range);
    return window === undefined ? { name: range.range.name, cidr: range.cidr } : { name: range.range.name, cidr: range.cidr, window };
  }
}

/** Free addresses of a range according to the hint (exclusions not subtracted: it only weighs the choice). */
function freeByHint(range: PickRange, taken: ReadonlySet<bigint>): bigint {
  const size = pickableSize(range);
  let used = 0n;
  for (const value of taken) {
    const offset = hostOffset(range.cidr, value);
    if (offset !== undefined && offset < size) used += 1n;
  }
  return size - used;
}

function buildClaim(draft: ClaimDraft, requests: readonly FamilyRequest[], picks: ReadonlyMap<IpFamily, Choice>): Claim {
  const addresses: ClaimAddress[] = requests.map((r) => {
    const pick = picks.get(r.family)!;
    return { address: formatAddress({ family: r.family, value: pick.value }), family: r.family, range: pick.range.range.name };
  });
  return { ...draft, addresses };
}

