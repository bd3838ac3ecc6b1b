import { formatAddress, parseAddress, type IpFamily } from '../ip/address.ts';
import { NotReadyError, RangeFullError } from '../errors.ts';
import { holdIdentityOf, holdOf, isExpired, leaseOfClaim, reuseDelayMs, sameHoldIdentity, type Claim, type ClaimAddress, type Hold, type HoldIdentity, type PoolView } from '../model.ts';
import type { ClaimStore, Clock, LeaseIndex, Random, ReleaseOutcome, Replacing } from '../ports.ts';
import { BandName, ownerIdentity, type LeaseExpiry, type OccupancyStore, type RangeSeals, type UsedUpSeals } from '../occupancy/ports.ts';
import { checkCommitDeadline, explicitTakenError, type AllocateOptions, type AllocationResult, type Allocator, type ClaimDraft, type FamilyRequest } from './allocator.ts';
import { chooseWeighted, collectFree, pickableSize, pickBlind, pickInRange, RANDOM_PROBES, upperBandStart, type PickRange } from './candidates.ts';
import { HintSource, type Hint, type HintCache } from './hint.ts';
import type { Interval } from './intervals.ts';
import { excludedIntervals, hostIntervals, rangeForExplicit, rangesOf, type ParsedRange } from './pool-geometry.ts';
import { cidrCovers, hostAt, hostOffset } from '../ip/cidr.ts';
import type { IpamEvent } from '../reconciler/ports.ts';
import { BandReading, bandValues, countersOf, NO_SEALS, partsOf, sealHolds, withSealsOf, type Band } from './used-up.ts';

export const PickStrategy = {
  /** Upper band first, random start, steered by the container's hint of what is taken. */
  Hinted: 'hinted',
  /** Uniform random candidates with no hint: the benchmark's baseline. */
  Blind: 'blind',
} as const;
export type PickStrategy = (typeof PickStrategy)[keyof typeof PickStrategy];

export interface LeaseAllocatorDeps {
  readonly claims: Pick<ClaimStore, 'commitClaim' | 'releaseClaim' | 'getClaim'>;
  readonly hints: HintCache;
  readonly clock: Clock;
  readonly random: Random;
  readonly strategy?: PickStrategy;
  /** Transactions tried before giving up on a contended family (each collision refreshes the hint every second time). */
  readonly maxCommits?: number;
  /** Offsets a range's dynamic picks must stay under (a legacy range's mirrored window while dual-write is on). */
  readonly windowOf?: (range: ParsedRange) => bigint | undefined;
  /** How old a summary copy may be and still steer picks near full without being read again (behindNearFull). */
  readonly fullTrustMs?: number;
  /** Random probes per band before the scan (default RANDOM_PROBES; 0 leaves only the scan, as tests script it). */
  readonly probes?: number;
  /**
   * Consistent reads of lease items (one BatchGetItem per 100 addresses): near full, the few addresses a summary shows
   * free are checked before a commit, and every "used up" decision is confirmed by reading the leases in bulk.
   */
  readonly leaseStates: Pick<OccupancyStore, 'leaseStates'>['leaseStates'];
  /** The addresses a pool with a reuse delay still holds for an owner identity: its dynamic claims get them back. */
  readonly heldFor?: LeaseIndex['heldFor'];
  /**
   * Seals on bands read used up, with the ranges' freed counters (used-up.ts): a band sealed since nothing was freed
   * is not read again. Without them (NO_SEALS) every "used up" decision reads its bands in bulk.
   */
  readonly seals?: UsedUpSeals;
}

/**
 * When a summary shows at most this many free addresses in a family's ranges, they are all read (one consistent
 * BatchGetItem) before committing: near full, a summary behind by the stream's lag would otherwise send every
 * caller into the same few just-taken addresses, one failed transaction each. Reading 32 lease keys costs up to
 * 16 read units, only in this state.
 */
export const VERIFY_LIMIT = 32;

/**
 * Candidates read at once after a collision, when more than VERIFY_LIMIT show free (see pickSampled). All of them are
 * taken with probability p^k when a share p of what the copy shows free was taken since it was read: at 90 % full the
 * bench's callers collide on about one first pick in eight, so 4 leaves a sample of nothing free well under one time
 * in a hundred (and that only costs another read); 8, the first figure, paid 4 more read units per collision.
 */
export const SAMPLE_SIZE = 4;

/**
 * Near full: when a summary copy shows more than VERIFY_LIMIT but at most this many free addresses in a family, and it
 * is older than the full trust (a second) or this call has collided on it, it is read again before picking. The last
 * seconds of a fill take more addresses than that (the bench's 32 callers take about 100 a second, the stream lags
 * about 2 s), so a pick from such a copy is likely one taken since: a failed transaction and a sample read, where
 * the summary costs one eventually consistent read (a /16's chunks are one read unit).
 */
export const NEAR_FULL_LIMIT = 4 * VERIFY_LIMIT;

/**
 * Collisions in one call after which it stops trusting the occupancy summary and reads the lease listing: the
 * summary is then far behind the leases (a stream outage, or no stream function at all), and every further pick
 * from it would collide again.
 */
export const SUMMARY_COLLISION_LIMIT = 6;

/**
 * Near full, when a view shows at most this many free addresses in the bands picks draw from (but more than
 * VERIFY_LIMIT), a pick is drawn uniformly among all of them rather than by random probes and a scan: near the end of
 * a band most probes miss, and a scan from a random start lands on the first free address after a run of taken ones,
 * so callers sharing a view would converge on the few addresses that follow the longest runs and collide there (the
 * HTTP fill's last tenth, issue 20). Collecting them reads the band's positions once per pick (a /20's upper band:
 * 3,838), only in this state.
 */
export const SPREAD_LIMIT = 512;

/** A summary copy younger than this is not read again near full before picking unless this call collided on it. */
export const DEFAULT_FULL_TRUST_MS = 1_000;

/**
 * The first wave of a bulk confirmation (confirmFree) reads this many lease keys (two BatchGetItem requests at once);
 * each next wave twice as many, up to CONFIRM_WAVE_MAX (16 requests at once). A band with a free address left is then
 * usually answered by the first wave; a band really used up is read whole in a few round trips.
 */
export const CONFIRM_WAVE = 200;
export const CONFIRM_WAVE_MAX = 1_600;

/**
 * The most addresses one "used up" decision reads (a /16's hosts). A view showing more than this used up cannot be
 * confirmed within a request: the answer is NotReady (retry), never a RangeFull resting on the summary alone.
 */
export const CONFIRM_LIMIT = 65_536;

/** What one allocate call has seen so far, per family. */
interface CallState {
  /** The collision count at this call's last forced read of the hint. */
  readonly refreshedAt: Map<IpFamily, number>;
  readonly collisions: Map<IpFamily, number>;
  /** When this call last collided. */
  readonly collidedAt: ReadonlyMap<IpFamily, number>;
  /** Ranges whose upper band this call read whole and found used up: the other picks of a batch do not read it again. */
  readonly upperUsedUp: Set<string>;
  /**
   * The freed counters this call read, by range: a later "used up" decision of the call reads only the seals again
   * (usedUpOrFree), as counters read at any moment of the call vouch for seals read after them.
   */
  readonly counters: Map<string, readonly number[]>;
  /** The claim's owner identity (ownerIdentity): a Released lease held for it is free for this call. */
  readonly owner: string;
}

interface Choice {
  readonly value: bigint;
  readonly range: ParsedRange;
  readonly explicit: boolean;
  /** An address held for this claim's owner identity after a release (a sticky address): tried once, then picked anew. */
  readonly sticky?: boolean;
}

/** shownFree's collections in one synchronous step, per range: the limit asked and what it found. */
type ShownMemo = Map<ParsedRange, { readonly limit: number; readonly values: bigint[] }>;

/**
 * pickVerified's answer when every address the copy showed free was read taken, all of them in upper bands of ranges
 * that have a lower band: whether those upper bands are used up is the question, not whether the family is.
 */
interface UpperFull {
  readonly upperFull: readonly ParsedRange[];
}

function isUpperFull(verdict: Choice | 'full' | UpperFull | undefined): verdict is UpperFull {
  return typeof verdict === 'object' && 'upperFull' in verdict;
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

  release(claim: Claim, expectedVersion?: number, hold?: Hold, event?: IpamEvent): Promise<ReleaseOutcome> {
    return this.deps.claims.releaseClaim(claim, expectedVersion, hold, event);
  }

  async allocate(view: PoolView, draft: ClaimDraft, requests: readonly FamilyRequest[], options: AllocateOptions = {}): Promise<AllocationResult> {
    // One slot per address the claim takes: a family's explicit address, or `count` dynamic picks of it.
    const slots = requests.flatMap((r) => (r.explicit ? [r] : Array.from({ length: r.count ?? 1 }, () => r)));
    const picks: (Choice | undefined)[] = slots.map((r) => (r.explicit ? { value: r.explicit.value, range: rangeForExplicit(view, r.explicit), explicit: true } : undefined));
    const pool = view.pool.name;
    const holdMs = reuseDelayMs(view.pool);
    const replacing = holdMs > 0 ? await this.replacedClaim(view, draft) : undefined;
    if (replacing?.kind === 'exists') return replacing;
    await this.pickSticky(view, holdIdentityOf(draft), slots, picks, replacing?.replacing);
    const refreshedAt = new Map<IpFamily, number>();
    const collisions = new Map<IpFamily, number>();
    // When this call last collided in each family: a hint read before that is known to be behind.
    const collidedAt = new Map<IpFamily, number>();
    const upperUsedUp = new Set<string>();
    const counters = new Map<string, readonly number[]>();
    const owner = ownerIdentity(holdIdentityOf(draft));
    // Addresses this call read free near full (pickVerified), per family: a batch reads them once, not once a pick.
    const verified = new Map(slots.map((s) => [s.family, new Set<bigint>()]));
    // Dynamic candidates in flight, unreserved once their transaction has an answer.
    const reservations: (() => void)[] = [];
    for (let commit = 0; commit < this.maxCommits; commit += 1) {
      let claim: Claim;
      let outcome;
      try {
        // A batch keeps the picks that did not collide: they stay in flight, so the re-picks skip them.
        picks.forEach((pick, i) => {
          if (pick && !pick.explicit) reservations.push(this.deps.hints.reserve(pool, slots[i]!.family, pick.value));
        });
        for (const [i, slot] of slots.entries()) {
          if (!picks[i]) picks[i] = await this.pickDynamic(view, slot.family, { refreshedAt, collisions, collidedAt, upperUsedUp, counters, owner }, reservations, chosenOf(slots, picks, slot.family), verified.get(slot.family)!);
        }
        claim = buildClaim(draft, requests, slots, picks as Choice[]);
        const leases = claim.addresses.map((a) => leaseOfClaim(claim, a, claim.createdAt, holdMs));
        // A preview (dryRun) answers the picks it would commit, and writes nothing.
        if (options.dryRun) return { kind: 'preview', claim };
        const sendAt = this.deps.clock.nowMs();
        checkCommitDeadline(sendAt, options);
        outcome = await this.deps.claims.commitClaim(claim, leases, sendAt, replacing?.replacing);
      } finally {
        for (const unreserve of reservations.splice(0)) unreserve();
      }
      const nowMs = this.deps.clock.nowMs();
      switch (outcome.kind) {
        case 'committed':
          picks.forEach((pick, i) => this.deps.hints.markTaken(pool, slots[i]!.family, pick!.value, nowMs));
          return { kind: 'allocated', claim, collisions: [...collisions.values()].reduce((a, b) => a + b, 0) };
        case 'claimExists':
          return { kind: 'exists', claim: outcome.existing };
        case 'generatedNameExists':
          return { kind: 'generatedExists', claimName: outcome.claimName };
        case 'addressesTaken':
          for (const { address, holder, inFlight } of outcome.taken) {
            // Find the slot by the address written: several picks of a batch, or both of a dual-stack claim, may collide.
            const i = picks.findIndex((pick, j) => pick !== undefined && formatAddress({ family: slots[j]!.family, value: pick.value }) === address);
            const pick = picks[i];
            if (pick === undefined) continue;
            const family = slots[i]!.family;
            // An explicit address another transaction was writing may still be free: the next round sends it again
            // (the commit's condition then tells taken from free).
            if (pick.explicit && inFlight) continue;
            if (pick.explicit) throw explicitTakenError(address, holder);
            this.deps.hints.markTaken(pool, family, pick.value, nowMs);
            // A lost race shows this call's reads are behind: the next picks read again (as a single claim always did).
            verified.get(family)!.clear();
            collisions.set(family, (collisions.get(family) ?? 0) + 1);
            collidedAt.set(family, nowMs);
            // Only the collided address is picked again; the rest of the batch stays as it was.
            picks[i] = undefined;
          }
          break;
      }
    }
    throw new NotReadyError('The pool is heavily contended right now; retry the request shortly.');
  }

  /**
   * Sticky addresses: in a pool with a reuse delay, the dynamic slots of each family first get the addresses the pool
   * still holds for this owner identity (HoldIdentity: kind, name and creator), if they lie in a Ready
   * range of the view. One read of the owner index, only in such pools. The index is eventually consistent: an
   * address released a moment ago may be missed, and the claim then gets another one (the held one stays held until
   * its delay is over). The commit's condition lets this owner take its own held addresses (writes/commit.ts).
   */
  private async pickSticky(view: PoolView, owner: HoldIdentity, slots: readonly FamilyRequest[], picks: (Choice | undefined)[], replacing?: Replacing): Promise<void> {
    if (!this.deps.heldFor || reuseDelayMs(view.pool) === 0 || picks.every((p) => p !== undefined)) return;
    // The expired claim this one replaces, when its owner identity is this one's: its addresses first (the commit
    // converts them in the same transaction), then those the owner index shows held.
    const previous = replacing && sameHoldIdentity(holdIdentityOf(replacing.claim), owner) ? replacing.claim.addresses : [];
    const held = [...previous, ...(await this.deps.heldFor(view.pool.name, owner, this.deps.clock.nowMs()))];
    const taken = new Set<string>();
    for (const [i, slot] of slots.entries()) {
      if (picks[i]) continue;
      for (const lease of held) {
        if (lease.family !== slot.family || taken.has(lease.address)) continue;
        const address = parseAddress(lease.address);
        let range: ParsedRange;
        try {
          range = rangeForExplicit(view, address);
        } catch {
          continue; // Its range is no longer Ready (or gone): not offered again.
        }
        taken.add(lease.address);
        picks[i] = { value: address.value, range, explicit: false, sticky: true };
        break;
      }
    }
  }

  /**
   * In a pool with a reuse delay, the claim of this name as it is now (one consistent read): held, it is the answer
   * (the commit would be refused); expired but with leases still held (a lease of such a pool outlives its claim by
   * the delay, until the reconciler releases it), it is replaced by this commit, which converts its leases (issue 20:
   * else they stay Allocated without their claim, and its owner's next claim gets other addresses).
   */
  private async replacedClaim(view: PoolView, draft: ClaimDraft): Promise<{ kind: 'exists'; claim: Claim } | { kind: 'replacing'; replacing: Replacing } | undefined> {
    const nowMs = this.deps.clock.nowMs();
    const current = await this.deps.claims.getClaim(view.pool.name, draft.name);
    if (!current) return undefined;
    if (!isExpired(current, nowMs)) return { kind: 'exists', claim: current };
    const hold = holdOf(view.pool, current, nowMs);
    return hold ? { kind: 'replacing', replacing: { claim: current, hold } } : undefined;
  }

  /**
   * One dynamic pick of a family. `chosen`: this claim's other picks of the family (a batch), never picked again: the
   * hinted picks skip them as in flight (they are reserved), the blind pick draws again. `verified`: addresses this
   * call has read free (pickVerified), not read again.
   */
  private async pickDynamic(view: PoolView, family: IpFamily, call: CallState, reservations: (() => void)[], chosen: ReadonlySet<bigint>, verified: Set<bigint>): Promise<Choice> {
    const { refreshedAt, collisions, collidedAt, upperUsedUp, counters, owner } = call;
    const ranges = rangesOf(view, family).filter((r) => pickableSize(this.pickRange(r)) > 0n);
    if (ranges.length === 0) throw new RangeFullError(view.pool.name, family);
    const excluded = excludedIntervals(view, family);
    if (this.strategy === PickStrategy.Blind) {
      for (let draw = 0; draw < this.maxCommits; draw += 1) {
        const range = chooseWeighted(ranges.map((r) => ({ item: r, weight: pickableSize(this.pickRange(r)) })), this.deps.random)!;
        const value = pickBlind(this.pickRange(range), { excluded, random: this.deps.random });
        if (value === undefined) throw new RangeFullError(view.pool.name, family);
        if (!chosen.has(value)) return { value, range, explicit: false };
      }
      throw new RangeFullError(view.pool.name, family);
    }
    const intervals = hostIntervals(ranges);
    const pool = view.pool.name;
    // Refresh the hint after every second collision of this call: a stale view must not cost more than a couple of
    // probes. `refreshedAt` holds the collision count at this call's last read of the hint.
    const seen = collisions.get(family) ?? 0;
    const force = seen - (refreshedAt.get(family) ?? 0) >= 2;
    // The summary while it keeps up; the listing where the pool has none yet or it is far behind.
    const source: HintSource = view.pool.summarySince !== undefined && this.deps.hints.summaries && seen < SUMMARY_COLLISION_LIMIT ? HintSource.Summary : HintSource.Listing;
    let fresh = force;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const nowMs = this.deps.clock.nowMs();
      const hint = await this.deps.hints.get(pool, family, intervals, nowMs, fresh, source);
      if (fresh) refreshedAt.set(family, seen);
      const inFlight = this.deps.hints.inFlight(pool, family);
      // What the copy shows free, collected once for this attempt's synchronous steps (behindNearFull, pickVerified).
      const shown: ShownMemo = new Map();
      if (hint.source === HintSource.Summary && this.spreadEstimate(ranges, hint) <= BigInt(2 * SPREAD_LIMIT)) this.shownFree(ranges, excluded, hint, inFlight, SPREAD_LIMIT + 1, shown);
      if (!fresh && hint.source === HintSource.Summary && this.behindNearFull(ranges, excluded, hint, inFlight, nowMs, (collidedAt.get(family) ?? -Infinity) >= hint.fetchedAt, shown)) {
        fresh = true;
        continue;
      }
      const checked = hint.source === HintSource.Summary ? await this.pickVerified(pool, family, ranges, excluded, hint, inFlight, verified, owner, seen > 0, shown) : this.pickWithHint(ranges, excluded, hint, inFlight);
      if (isUpperFull(checked)) {
        // Every address the copy showed free in these upper bands was read taken: whether they are used up is decided
        // for them alone (their seals, or their leases in bulk), and then the copy, which now shows them taken, picks
        // in the lower bands. Not by the whole family's decision below, which would read a lower band in bulk too.
        const upper = await this.usedUpOrFree(pool, family, checked.upperFull.map((r) => this.band(view, r, excluded, BandName.Upper)), owner, verified, chosen, counters);
        if (upper) {
          reservations.push(this.deps.hints.reserve(pool, family, upper.value));
          return upper;
        }
        for (const r of checked.upperFull) upperUsedUp.add(r.range.name);
        continue;
      }
      const hinted = checked === 'full' ? undefined : checked;
      if (hinted) {
        // A pick in a lower band says the hint shows that range's upper band used up: only a read of its leases may
        // decide that (KEP-3070 keeps the lower band for static addresses).
        let pick = hinted;
        if (this.inLowerBand(hinted) && !upperUsedUp.has(hinted.range.range.name)) {
          const upper = await this.usedUpOrFree(pool, family, [this.band(view, hinted.range, excluded, BandName.Upper)], owner, verified, chosen, counters);
          if (upper) pick = upper;
          else upperUsedUp.add(hinted.range.range.name);
        }
        // Reserved in the same synchronous step as the pick, so no other request of this container can take it too.
        reservations.push(this.deps.hints.reserve(pool, family, pick.value));
        return pick;
      }
      // The hint shows nothing free. A copy this call did not read, older than the full trust, is read again first
      // (one request, and it may show a release); otherwise the leases decide, below.
      if (fresh || checked === 'full' || nowMs - hint.fetchedAt < this.fullTrustMs) break;
      fresh = true;
    }
    // "Used up" is never the summary's word (issue 20): every address of the family's ranges is read consistently,
    // upper bands first, and RangeFull is the answer only when none is free at the moment it was read.
    const bands = [...ranges.map((r) => this.band(view, r, excluded, BandName.Upper)), ...ranges.map((r) => this.band(view, r, excluded, BandName.Lower))];
    const pick = await this.usedUpOrFree(pool, family, bands, owner, verified, chosen, counters);
    if (!pick) throw new RangeFullError(pool, family);
    reservations.push(this.deps.hints.reserve(pool, family, pick.value));
    return pick;
  }

  /**
   * Whether a pick lies in its range's lower band (offsets [0, L), KEP-3070), which dynamic picks take only once the
   * upper band is used up. A range too small for bands (or a window inside the lower band) has none.
   */
  private inLowerBand(pick: Choice): boolean {
    const { lower } = this.bandBounds(pick.range);
    const offset = hostOffset(pick.range.cidr, pick.value);
    return offset !== undefined && offset < lower;
  }

  private bandBounds(range: ParsedRange): { lower: bigint; size: bigint } {
    const size = pickableSize(this.pickRange(range));
    return { lower: upperBandStart(this.pickRange(range), size), size };
  }

  /**
   * One band of a range as confirmFree reads it: its offsets, minus the pool's exclusions; its counters are its
   * range's and those of every range of the pool (in any state) overlapping it, through which its addresses may be held.
   */
  private band(view: PoolView, range: ParsedRange, excluded: readonly Interval[], name: BandName): Band {
    const { lower, size } = this.bandBounds(range);
    const overlapping = rangesOf(view, range.cidr.family, false).filter((o) => o.range.name !== range.range.name && (cidrCovers(o.cidr, range.cidr) || cidrCovers(range.cidr, o.cidr)));
    const counters = [range.range.name, ...overlapping.map((o) => o.range.name)];
    return name === BandName.Upper ? { name, part: name, range, counters, from: lower, to: size, excluded } : { name, part: name, range, counters, from: 0n, to: lower, excluded };
  }

  /**
   * A free address of `bands`, or undefined when every band is used up as this call read it (issue 20): each address
   * read held at some moment inside this call, so an address free for the whole call is found (as by a scan). Read
   * through a read of the ranges' seals and freed counters (one consistent bulk read, or the seals alone when this
   * call read those counters already: readCounters) in which the seal of every part of every band holds (used-up.ts:
   * a band is cut into up to SEAL_PARTS parts, sealed one by one). A part without one is read in bulk (confirmFree)
   * after the counters were read; read used up, it is sealed at those counters (a plain write: writes/freed.ts says
   * why a seal at counters moved since misleads no reader). The part read next is a random
   * one among those the last read shows unsealed (of the first band that has any: upper bands first), and the seals
   * are read again after each part: callers deciding at once share the reading of a band instead of each reading all
   * of it. The answer is used up once every part was read used up in this call or holds in the last read.
   */
  private async usedUpOrFree(pool: string, family: IpFamily, bands: readonly Band[], owner: string, verified: Set<bigint>, chosen: ReadonlySet<bigint>, counters: Map<string, readonly number[]>): Promise<Choice | undefined> {
    const seals = this.deps.seals ?? NO_SEALS;
    // A band without addresses (a range too small for a lower band) is used up without a read.
    const bandParts = bands.filter((b) => b.to > b.from).map((b) => partsOf(b));
    const parts = bandParts.flat();
    if (parts.length === 0) return undefined;
    const ranges = [...new Set(parts.flatMap((p) => p.counters))];
    const budget = { read: 0 };
    const holds = (read: ReadonlyMap<string, RangeSeals>, part: Band) => sealHolds(read, part, owner, this.deps.clock.nowMs());
    let read = await this.readCounters(seals, pool, ranges, counters);
    // Parts read used up in bulk in this call: decided, whatever their seals say now (a seal write lost to another
    // caller's, or one that cannot hold, such as a part held for too many owners, changes nothing about that read).
    const done = new Set<Band>();
    for (;;) {
      // Every part was read used up in this call or holds in the last read: each of its addresses was held at a moment
      // inside this call, so none was free for the whole of it. That is the decision.
      const open = bandParts.map((band) => band.filter((part) => !done.has(part) && !holds(read, part))).find((band) => band.length > 0);
      if (!open) return undefined;
      const part = this.randomOf(open);
      done.add(part);
      const reading = new BandReading();
      const pick = await this.confirmFree(pool, family, part, reading, owner, verified, chosen, budget);
      if (pick) return pick;
      // Free only among this claim's own picks (a batch that cannot grow) is not used up: no seal. Nor is a part
      // holding a lease taken through a range the band's counters leave out (removed since, or newer than the view):
      // that lease's release would bump a counter no seal of the band records.
      if (!reading.open && !reading.foreign) await seals.seal(pool, part.range.range.name, part.part, reading.sealAt(countersOf(read, part), part));
      if (parts.length === 1 || !this.deps.seals) continue;
      // What others sealed meanwhile is not read again. The seals alone (one key a range, not the 100 of its
      // counters), checked against the counters read at the start of this call.
      read = withSealsOf(read, await seals.readSeals(pool, ranges, 'seals'));
    }
  }

  /**
   * The freed counters and seals of `ranges` for a decision: one bulk read, or, when this call has read all their
   * counters already (`counters`, filled here), the seals alone (one key a range instead of 100). The rule asks for
   * one read of the counters inside the request, not one per decision: counters read at any moment of the call vouch
   * for seals read after them (writes/freed.ts), so a request that falls to a lower band and later decides the whole
   * family reads a range's counters once.
   */
  private async readCounters(seals: UsedUpSeals, pool: string, ranges: readonly string[], counters: Map<string, readonly number[]>): Promise<ReadonlyMap<string, RangeSeals>> {
    if (this.deps.seals && ranges.every((range) => counters.has(range))) {
      return withSealsOf(new Map(ranges.map((range) => [range, { freed: counters.get(range)!, seals: {} }])), await seals.readSeals(pool, ranges, 'seals'));
    }
    const read = await seals.readSeals(pool, ranges);
    for (const [range, { freed }] of read) counters.set(range, freed);
    return read;
  }

  /**
   * Reads the leases of a band (or a part of one) from a random offset with wrap-around, in waves of CONFIRM_WAVE
   * doubling to CONFIRM_WAVE_MAX lease keys, each wave one consistent bulk read, until a wave finds an address free
   * for this owner: no lease item, one past its expiry, or a Released one held for this owner. It picks among the free
   * ones of that wave, never one of `chosen` (this claim's other picks), one not in flight in this container if it
   * can; undefined when every address was read taken or chosen. Each address is read during this call, so an
   * address free for the whole call is found. What it reads taken joins the hint (as a collision would) and
   * `reading` (for a seal), what it reads free joins `verified`.
   * @throws NotReadyError when the decision has read more than CONFIRM_LIMIT addresses (`budget`) and none was free
   */
  private async confirmFree(pool: string, family: IpFamily, band: Band, reading: BandReading, owner: string, verified: Set<bigint>, chosen: ReadonlySet<bigint>, budget: { read: number }): Promise<Choice | undefined> {
    let wave = CONFIRM_WAVE;
    const values = bandValues(band, band.from + (band.to > band.from ? this.deps.random.below(band.to - band.from) : 0n));
    for (;;) {
      const batch: bigint[] = [];
      while (batch.length < wave) {
        const next = values.next();
        if (next.done) break;
        batch.push(next.value);
      }
      if (batch.length === 0) return undefined;
      if ((budget.read += batch.length) > CONFIRM_LIMIT) throw new NotReadyError('The pool\'s view shows its ranges used up, and they are too large to confirm that in one request; retry shortly.');
      const unheld = await this.readFree(pool, family, batch.map((value) => ({ value, range: band.range, explicit: false })), new Set(), owner, (state) => reading.taken(state, band.counters));
      if (unheld.length > 0) reading.open = true;
      for (const f of unheld) verified.add(f.value);
      const free = unheld.filter((f) => !chosen.has(f.value));
      if (free.length > 0) {
        const inFlight = this.deps.hints.inFlight(pool, family);
        const idle = free.filter((f) => !inFlight.has(f.value));
        const among = idle.length > 0 ? idle : free;
        return among[Number(this.deps.random.below(BigInt(among.length)))];
      }
      wave = Math.min(2 * wave, CONFIRM_WAVE_MAX);
    }
  }

  /**
   * Whether a summary copy is likely behind near full (NEAR_FULL_LIMIT): it shows more free addresses than a verified
   * read takes, but few, and it is older than the full trust or this call collided after it was read.
   */
  private behindNearFull(ranges: readonly ParsedRange[], excluded: readonly Interval[], hint: Hint, inFlight: ReadonlySet<bigint>, nowMs: number, collided: boolean, memo?: ShownMemo): boolean {
    if (!collided && nowMs - hint.fetchedAt < this.fullTrustMs) return false;
    const shown = this.shownFree(ranges, excluded, hint, inFlight, NEAR_FULL_LIMIT + 1, memo).length;
    return shown > VERIFY_LIMIT && shown <= NEAR_FULL_LIMIT;
  }

  /**
   * Up to `limit` addresses the hint shows free in the bands dynamic picks of these ranges draw from now (collectFree:
   * a range's upper band while it shows any free, then its lower band), each once (overlapping ranges show the same
   * address twice), never one in flight in this container. With `memo`, a range's addresses are collected once for
   * every limit up to the largest asked (near full, a collection scans the band's taken addresses: a /20's upper band
   * is 3,838), so the memo lives only while the hint and what is in flight stay as they were (no await in between).
   */
  private shownFree(ranges: readonly ParsedRange[], excluded: readonly Interval[], hint: Hint, inFlight: ReadonlySet<bigint>, limit: number, memo?: ShownMemo): Choice[] {
    const shown: Choice[] = [];
    const seen = new Set<bigint>();
    const collect = (range: ParsedRange, n: number): bigint[] => {
      const had = memo?.get(range);
      // collectFree answers in address order: a list collected with a larger limit, or one shorter than its limit
      // (every address the range shows free), starts with the answer for a smaller one.
      if (had && (had.limit >= n || had.values.length < had.limit)) return had.values.slice(0, n);
      const values = collectFree(this.pickRange(range), { excluded, taken: hint }, n, inFlight);
      memo?.set(range, { limit: n, values });
      return values;
    };
    for (const range of ranges) {
      for (const value of collect(range, limit - shown.length)) {
        if (!seen.has(value)) shown.push({ value, range, explicit: false });
        seen.add(value);
      }
      if (shown.length >= limit) break;
    }
    return shown;
  }

  /**
   * Every address the hint shows free in the bands picks draw from, when that is at most SPREAD_LIMIT (undefined
   * otherwise): what a near-full pick is drawn from uniformly. The summary's counts rule out a range with room first,
   * so a sparse range pays no scan.
   */
  private spreadFree(ranges: readonly ParsedRange[], excluded: readonly Interval[], hint: Hint, inFlight: ReadonlySet<bigint>, memo?: ShownMemo): Choice[] | undefined {
    if (this.spreadEstimate(ranges, hint) > BigInt(2 * SPREAD_LIMIT)) return undefined;
    const shown = this.shownFree(ranges, excluded, hint, inFlight, SPREAD_LIMIT + 1, memo);
    return shown.length > SPREAD_LIMIT ? undefined : shown;
  }

  /** Free addresses the hint's source shows in the bands picks of these ranges draw from (bandFreeByHint): an estimate. */
  private spreadEstimate(ranges: readonly ParsedRange[], hint: Hint): bigint {
    return ranges.reduce((sum, range) => sum + bandFreeByHint(this.pickRange(range), hint), 0n);
  }

  /**
   * A pick from a summary: when it shows few free addresses, read them all first (VERIFY_LIMIT) and pick among those
   * really free (no lease item, or an expired one); the ones taken are remembered like collisions. With a few hundred
   * shown free (SPREAD_LIMIT), the pick (or after a collision, the sample read) is drawn uniformly among them. 'full' when it
   * read every address the summary shows free and none was (UpperFull when all of them lay in upper bands of ranges
   * with a lower band); undefined when the view shows none at all. Addresses in
   * `verified` were read free earlier in this call (the other picks of a batch) and are not read again; the ones read
   * free now are added to it.
   */
  private async pickVerified(pool: string, family: IpFamily, ranges: readonly ParsedRange[], excluded: readonly Interval[], hint: Hint, inFlight: ReadonlySet<bigint>, verified: Set<bigint>, owner: string, collided = false, memo?: ShownMemo): Promise<Choice | 'full' | UpperFull | undefined> {
    const few = this.shownFree(ranges, excluded, hint, inFlight, VERIFY_LIMIT + 1, memo);
    if (few.length > VERIFY_LIMIT) {
      const spread = this.spreadFree(ranges, excluded, hint, inFlight, memo);
      if (collided) return this.pickSampled(pool, family, ranges, excluded, hint, inFlight, verified, owner, spread);
      return spread ? this.randomOf(spread) : this.pickWithHint(ranges, excluded, hint, inFlight);
    }
    if (few.length === 0) return undefined;
    const free = await this.readFree(pool, family, few, verified, owner);
    if (free.length === 0) {
      // All in upper bands of ranges that have a lower band: those upper bands are in question, not the family.
      const upperFull = [...new Set(few.map((c) => c.range))];
      return few.every((c) => !this.inLowerBand(c)) && upperFull.every((r) => this.bandBounds(r).lower > 0n) ? { upperFull } : 'full';
    }
    // The same pick may have become in flight in this container while the read was out.
    const live = free.filter((f) => !this.deps.hints.inFlight(pool, family).has(f.value)).map((f) => ({ ...f, explicit: false }));
    if (live.length === 0) return undefined;
    // The upper bands first (KEP-3070): a lower-band address only when every one read free is in a lower band.
    const upper = live.filter((f) => !this.inLowerBand(f));
    return this.randomOf(upper.length > 0 ? upper : live);
  }

  /**
   * After a collision in this call, with more than VERIFY_LIMIT shown free: the summary has just been shown wrong, so
   * read SAMPLE_SIZE random candidates (one consistent batch) and pick among those really free, instead of paying a
   * failed transaction per stale address. Undefined when none of the sample is free (the caller reads again).
   */
  private async pickSampled(pool: string, family: IpFamily, ranges: readonly ParsedRange[], excluded: readonly Interval[], hint: Hint, inFlight: ReadonlySet<bigint>, verified: Set<bigint>, owner: string, spread?: readonly Choice[]): Promise<Choice | undefined> {
    const skip = new Set(inFlight);
    const sample: Choice[] = [];
    // Drawn uniformly from `spread` when the view shows few free (spreadFree), else by probes and scans.
    const rest = spread ? [...spread] : undefined;
    while (sample.length < SAMPLE_SIZE) {
      const pick = rest ? rest.splice(Number(this.deps.random.below(BigInt(Math.max(1, rest.length)))), 1)[0] : this.pickWithHint(ranges, excluded, hint, skip);
      if (!pick) break;
      sample.push(pick);
      skip.add(pick.value);
    }
    const free = (await this.readFree(pool, family, sample, verified, owner)).filter((c) => !this.deps.hints.inFlight(pool, family).has(c.value));
    return free.length ? this.randomOf(free) : undefined;
  }

  private randomOf<T>(items: readonly T[]): T {
    return items[Number(this.deps.random.below(BigInt(items.length)))]!;
  }

  /**
   * The candidates really free for this owner identity: read free earlier in this call (`verified`), or read now (one
   * consistent batch) with no lease item, an expired one, or a Released one held for this owner (its commit may take
   * it back). The ones read free join `verified`; the taken ones are remembered like collisions and told to `onTaken`.
   */
  private async readFree<T extends { readonly value: bigint }>(pool: string, family: IpFamily, candidates: readonly T[], verified: Set<bigint>, owner: string, onTaken?: (state: LeaseExpiry) => void): Promise<T[]> {
    const unread = candidates.filter((c) => !verified.has(c.value)).map((c) => formatAddress({ family, value: c.value }));
    const states = unread.length ? await this.deps.leaseStates(pool, unread) : new Map<string, LeaseExpiry>();
    const nowMs = this.deps.clock.nowMs();
    return candidates.filter((c) => {
      if (verified.has(c.value)) return true;
      const state = states.get(formatAddress({ family, value: c.value }));
      const taken = state !== undefined && (state.expiresAt === undefined || state.expiresAt > nowMs) && state.heldFor !== owner;
      if (taken) {
        this.deps.hints.markTaken(pool, family, c.value, nowMs);
        onTaken?.(state);
      } else {
        verified.add(c.value);
      }
      return !taken;
    });
  }

  private pickWithHint(ranges: readonly ParsedRange[], excluded: readonly Interval[], hint: Hint, inFlight: ReadonlySet<bigint>): Choice | undefined {
    const ctx = { excluded, taken: hint, random: this.deps.random, probes: this.deps.probes ?? RANDOM_PROBES };
    // Weighing by free capacity counts the hint once per range: only worth it when there is a choice.
    const candidates = ranges.length === 1 ? [{ item: ranges[0]!, weight: 1n }] : ranges.map((r) => ({ item: r, weight: freeByHint(this.pickRange(r), hint) }));
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

/**
 * Free addresses, by the hint's source, of the band a pick of the range draws from (its upper band while the source
 * shows any free there, else its lower band); exclusions not subtracted: an estimate, to rule out a band with room.
 */
function bandFreeByHint(range: PickRange, hint: Hint): bigint {
  const size = pickableSize(range);
  if (size <= 0n) return 0n;
  const lower = upperBandStart(range, size);
  const freeIn = (from: bigint, to: bigint): bigint => {
    if (to <= from) return 0n;
    const used = hint.count(hostAt(range.cidr, from), hostAt(range.cidr, to - 1n));
    return used < to - from ? to - from - used : 0n;
  };
  const upper = freeIn(lower, size);
  return upper > 0n ? upper : freeIn(0n, lower);
}

/** Free addresses of a range according to the hint's source (exclusions not subtracted: it only weighs the choice). */
function freeByHint(range: PickRange, hint: Hint): bigint {
  const size = pickableSize(range);
  if (size <= 0n) return 0n;
  const first = hostAt(range.cidr, 0n);
  const used = hint.count(first, hostAt(range.cidr, size - 1n));
  return used < size ? size - used : 0n;
}

/** The values this claim has picked so far in a family. */
function chosenOf(slots: readonly FamilyRequest[], picks: readonly (Choice | undefined)[], family: IpFamily): Set<bigint> {
  const chosen = new Set<bigint>();
  picks.forEach((pick, i) => {
    if (pick && slots[i]!.family === family) chosen.add(pick.value);
  });
  return chosen;
}

/** The claim with its addresses: the requests' families in order, each family's addresses in address order. */
function buildClaim(draft: ClaimDraft, requests: readonly FamilyRequest[], slots: readonly FamilyRequest[], picks: readonly Choice[]): Claim {
  const addresses: ClaimAddress[] = requests.flatMap((r) =>
    picks
      .filter((_, i) => slots[i]!.family === r.family)
      .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
      .map((pick) => ({ address: formatAddress({ family: r.family, value: pick.value }), family: r.family, range: pick.range.range.name, ...(pick.range.cidr.slot !== undefined ? { prefixLength: pick.range.cidr.slot } : {}) })),
  );
  return { ...draft, addresses };
}
