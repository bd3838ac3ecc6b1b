// Over 300 lines: the legacy RangeAllocation strategy, one algorithm from read to conditional write.
import { formatAddress, type IpFamily } from '../ip/address.ts';
import { isHostOf } from '../ip/cidr.ts';
import { MismatchedNetworkError, NotInRangeError, NotReadyError, RangeFullError } from '../errors.ts';
import {
  isExpired,
  leaseOfClaim,
  reuseDelayMs,
  type Claim,
  type Hold,
  type ClaimAddress,
  type PoolView,
} from '../model.ts';
import type { ClaimStore, Clock, CommitOutcome, LeaseIndex, PoolStore, Random, ReleaseOutcome } from '../ports.ts';
import { releaseClearingBits } from '../bitmap/bitmap-release.ts';
import { addressOfBit, bitOf, legacyWindow, type Bitmap } from '../bitmap/bitmap.ts';
import { bitmapOf, bitmapOfDocument, legacyRangeOf, windowInterval } from '../bitmap/legacy.ts';
import type { BitmapExpectation, BitmapStore, BitmapWrite } from '../bitmap/ports.ts';
import {
  checkCommitDeadline,
  explicitTakenError,
  type AllocateOptions,
  type AllocationResult,
  type Allocator,
  type ClaimDraft,
  type FamilyRequest,
} from './allocator.ts';
import { upperBandStart } from './candidates.ts';
import type { Interval } from '../base/intervals.ts';
import { excludedIntervals, rangeForExplicit, type ParsedRange } from '../base/pool-geometry.ts';
import type { IpamEvent } from '../events.ts';

export interface BitmapAllocatorDeps {
  readonly claims: Pick<ClaimStore, 'getClaim' | 'releaseClaim'>;
  readonly leases: Pick<LeaseIndex, 'getLease' | 'takenAddresses'>;
  readonly pools: Pick<PoolStore, 'getPoolView'>;
  readonly bitmaps: Pick<BitmapStore, 'getBitmap' | 'commitClaim' | 'releaseClaim' | 'leaseHolders'>;
  readonly clock: Clock;
  readonly random: Random;
  /** Transactions tried before giving up (each lost race re-reads what it lost on). Default 32. */
  readonly maxCommits?: number;
  /**
   * Waits after the `lost`-th lost bitmap race before reading again (jittered backoff, given by the composition root):
   * every legacy allocation of a family writes the same item, so N racers otherwise spend N transactions per winner.
   */
  readonly pause?: (lost: number) => Promise<void>;
}

/** A bitmap as read, with the precondition its next write carries. */
interface Snapshot {
  readonly bitmap: Bitmap;
  readonly expected: BitmapExpectation;
}

/** One family's legacy range and the bit chosen in it. */
interface Choice {
  readonly range: ParsedRange;
  readonly bit: number;
  readonly explicit: boolean;
}

/**
 * The legacy strategy (MultiCIDRServiceAllocator=false): the bitmap of each family's legacy range is the allocator,
 * as Kubernetes' `ipallocator/bitmap.go`. Only legacy ranges serve; a pick is a zero bit (random start, wrap-around,
 * upper band first as KEP-3070), and ONE transaction writes
 *
 *   claim item      absent OR expired            (idempotent retries find it)
 *   [generated]     absent OR expired
 *   lease item(s)   absent OR expired            (the same judge as the lease allocator: mixed fleets stay safe)
 *   bitmap item(s)  version = read  |  absent    (the bit and the lease never disagree)
 *
 * A lost bitmap race re-reads the bitmap and picks again; a lease found taken (a lease-mode allocation the mirror has
 * not reached yet) skips that bit for the rest of the call. A missing bitmap is built from the range's own leases and
 * created by the same transaction. Explicit addresses need a clear bit AND a free lease. A batch (`count` > 1) takes
 * that many zero bits of the family's bitmap in the same one write, or answers RangeFull with nothing written.
 */
export class BitmapAllocator implements Allocator {
  private readonly maxCommits: number;

  constructor(private readonly deps: BitmapAllocatorDeps) {
    this.maxCommits = deps.maxCommits ?? 32;
  }

  /**
   * @throws MismatchedNetworkError when a family has no Ready legacy range; NotInRangeError for an explicit address
   *   outside its family's legacy bitmap window; AlreadyAllocatedError when its bit is set; RangeFullError when a
   *   bitmap has no zero bit left; NotReadyError when it keeps losing races.
   */
  release(claim: Claim, expectedVersion?: number, hold?: Hold, event?: IpamEvent): Promise<ReleaseOutcome> {
    return releaseClearingBits(this.deps, claim, { expectedVersion, hold, event });
  }

  async allocate(
    view: PoolView,
    draft: ClaimDraft,
    requests: readonly FamilyRequest[],
    options: AllocateOptions = {},
  ): Promise<AllocationResult> {
    const ranges = new Map(requests.map((r) => [r.family, this.legacyRange(view, r.family)]));
    const explicit = new Map<IpFamily, Choice>();
    for (const request of requests) {
      if (request.explicit)
        explicit.set(request.family, {
          range: ranges.get(request.family)!,
          bit: explicitBit(view, ranges.get(request.family)!, request),
          explicit: true,
        });
    }
    const snapshots = new Map<IpFamily, Snapshot>();
    const skip = new Map<IpFamily, Set<number>>(requests.map((r) => [r.family, new Set<number>()]));
    let lost = 0;
    for (let commit = 0; commit < this.maxCommits; commit += 1) {
      await Promise.all(
        requests
          .filter((r) => !snapshots.has(r.family))
          .map(async (r) => snapshots.set(r.family, await this.read(view.pool.name, ranges.get(r.family)!))),
      );
      const round = this.pickRound(view, draft, { requests, ranges, explicit, snapshots, skip });
      if ('result' in round) return round.result;
      const { picks } = round;
      const claim = buildClaim(draft, requests, picks);
      await options.beforeCommit?.();
      if (options.dryRun) return { kind: 'preview', claim };
      const leases = claim.addresses.map((a) => leaseOfClaim(claim, a, claim.createdAt, reuseDelayMs(view.pool)));
      const writes = requests.map((r) => bitmapWrite(view.pool.name, picks.get(r.family)!, snapshots.get(r.family)!));
      const sendAt = this.deps.clock.nowMs();
      checkCommitDeadline(sendAt, options);
      const outcome = await this.deps.bitmaps.commitClaim(claim, leases, writes, sendAt);
      switch (outcome.kind) {
        case 'committed':
          return { kind: 'allocated', claim };
        case 'claimExists':
          return { kind: 'exists', claim: outcome.existing };
        case 'generatedNameExists':
          return { kind: 'generatedExists', claimName: outcome.claimName };
        case 'addressesTaken':
          skipTaken({ claim, picks, taken: outcome.taken, skip });
          // The bitmaps may have moved on too (the transaction reports one reason per item): read them again.
          snapshots.clear();
          break;
        case 'bitmapsChanged':
          for (const request of requests) {
            if (outcome.ranges.includes(ranges.get(request.family)!.range.name)) snapshots.delete(request.family);
          }
          lost += 1;
          await this.deps.pause?.(lost);
          break;
      }
    }
    throw new NotReadyError('The legacy bitmap is heavily contended right now; retry the request shortly.');
  }

  /**
   * Each family's picks, in bit order: its explicit address, or `count` zero bits (a batch sets them all in one
   * write); or the answer when an explicit address's bit is set.
   */
  private pickRound(
    view: PoolView,
    draft: ClaimDraft,
    round: {
      readonly requests: readonly FamilyRequest[];
      readonly ranges: ReadonlyMap<IpFamily, ParsedRange>;
      readonly explicit: ReadonlyMap<IpFamily, Choice>;
      readonly snapshots: ReadonlyMap<IpFamily, Snapshot>;
      readonly skip: ReadonlyMap<IpFamily, Set<number>>;
    },
  ): { picks: Map<IpFamily, Choice[]> } | { result: Promise<AllocationResult> } {
    const picks = new Map<IpFamily, Choice[]>();
    for (const request of round.requests) {
      const snapshot = round.snapshots.get(request.family)!;
      const fixed = round.explicit.get(request.family);
      if (fixed) {
        if (snapshot.bitmap.has(fixed.bit)) return { result: this.explicitHeld(view, draft, fixed) };
        picks.set(request.family, [fixed]);
        continue;
      }
      const range = round.ranges.get(request.family)!;
      const excluded = excludedIntervals(view, request.family);
      const chosen: Choice[] = [];
      const skipped = new Set(round.skip.get(request.family)!);
      for (let n = 0; n < (request.count ?? 1); n += 1) {
        const bit = pickBit({ bitmap: snapshot.bitmap, range, excluded, skip: skipped, random: this.deps.random });
        if (bit === undefined) throw new RangeFullError(view.pool.name, request.family);
        skipped.add(bit);
        chosen.push({ range, bit, explicit: false });
      }
      picks.set(
        request.family,
        chosen.sort((a, b) => a.bit - b.bit),
      );
    }
    return { picks };
  }

  /** The Ready legacy range of a family. @throws MismatchedNetworkError when there is none. */
  private legacyRange(view: PoolView, family: IpFamily): ParsedRange {
    const range = legacyRangeOf(view, family);
    if (!range) {
      throw new MismatchedNetworkError(
        `Pool ${JSON.stringify(view.pool.name)} has no Ready legacy ${family} range; only legacy ranges serve while the MultiCIDRServiceAllocator feature gate is off.`,
      );
    }
    return range;
  }

  /** The bitmap of a range, or one built from the range's own leases when the item is missing or names another CIDR. */
  private async read(pool: string, range: ParsedRange): Promise<Snapshot> {
    const doc = await this.deps.bitmaps.getBitmap(pool, range.range.name);
    const bitmap = doc ? bitmapOfDocument(doc, range) : undefined;
    if (doc && bitmap) return { bitmap, expected: { version: doc.version } };
    // Every lease item counts, expired ones too (nowMs 0): their bits stay set until the lease is deleted.
    const window = windowInterval(range.cidr);
    const taken = window ? await this.deps.leases.takenAddresses(pool, range.range.family, [window], 0) : [];
    return { bitmap: bitmapOf(range.cidr, taken), expected: doc ? { version: doc.version } : 'absent' };
  }

  /** An explicit address whose bit is set: the same claim asked again (idempotent), or someone else holds it. */
  private async explicitHeld(view: PoolView, draft: ClaimDraft, pick: Choice): Promise<AllocationResult> {
    const existing = await this.deps.claims.getClaim(view.pool.name, draft.name);
    if (existing && !isExpired(existing, this.deps.clock.nowMs())) return { kind: 'exists', claim: existing };
    const address = formatAddress({ family: pick.range.cidr.family, value: addressOfBit(pick.range.cidr, pick.bit) });
    const holder = await this.deps.leases.getLease(view.pool.name, address);
    throw explicitTakenError(address, holder);
  }
}

/**
 * The bit of an explicit address in its family's legacy range.
 * @throws NotInRangeError when the address is not a host of the legacy range, or lies beyond its bitmap window.
 */
function explicitBit(view: PoolView, range: ParsedRange, request: FamilyRequest): number {
  const address = request.explicit!;
  const bit = bitOf(range.cidr, address.value);
  if (bit !== undefined) return bit;
  const text = formatAddress(address);
  if (isHostOf(range.cidr, address)) {
    throw new NotInRangeError(
      text,
      `Address ${text} lies beyond the ${legacyWindow(range.cidr)}-address bitmap window of legacy range ${JSON.stringify(range.range.name)}.`,
    );
  }
  // Reserved addresses and addresses of no Ready range get the lease allocator's explanation.
  rangeForExplicit(view, address);
  throw new NotInRangeError(
    text,
    `Address ${text} is not in legacy range ${JSON.stringify(range.range.name)}; only legacy ranges serve while the MultiCIDRServiceAllocator feature gate is off.`,
  );
}

/**
 * A zero bit for a dynamic pick, or undefined when none is left: the upper band first from a random start with
 * wrap-around, then the lower band (KEP-3070), never an excluded address or one this call found leased.
 *
 *   bit 0              L                                  window-1
 *       [ lower band   ][ upper band: random start, wrap  ]
 */
export function pickBit(input: {
  readonly bitmap: Bitmap;
  readonly range: ParsedRange;
  /** Addresses never handed out (the pool's exclusions). */
  readonly excluded: readonly Interval[];
  /** Bits this call found leased. */
  readonly skip: ReadonlySet<number>;
  readonly random: Random;
}): number | undefined {
  const { bitmap, range, excluded, skip, random } = input;
  const size = bitmap.size;
  if (size === 0) return undefined;
  const mask = bitmap.clone();
  for (const bit of skip) mask.set(bit);
  // Excluded addresses inside the window [network+1, network+size] are taken out of the mask.
  const first = range.cidr.base + 1n;
  const last = range.cidr.base + BigInt(size);
  for (const [from, to] of excluded) {
    const lo = from > first ? from : first;
    const hi = to < last ? to : last;
    for (let value = lo; value <= hi; value += 1n) mask.set(Number(value - first));
  }
  const lower = Number(upperBandStart({ name: range.range.name, cidr: range.cidr }, BigInt(size)));
  const start = lower + Number(random.below(BigInt(size - lower)));
  const found = mask.firstClear(start);
  if (found === undefined) return undefined;
  if (found >= lower) return found;
  // Wrapped into the lower band: [start, size) is full; [lower, start) may not be.
  const upper = mask.firstClear(lower);
  if (upper !== undefined && upper >= lower) return upper;
  return mask.firstClear(Number(random.below(BigInt(lower))));
}

function bitmapWrite(pool: string, picks: readonly Choice[], snapshot: Snapshot): BitmapWrite {
  const next = snapshot.bitmap.clone();
  for (const pick of picks) next.set(pick.bit);
  const version = snapshot.expected === 'absent' ? 1 : snapshot.expected.version + 1;
  const range = picks[0]!.range;
  return {
    pool,
    rangeName: range.range.name,
    allocation: { range: range.range.cidr, data: next.encode(), version },
    expected: snapshot.expected,
  };
}

function buildClaim(
  draft: ClaimDraft,
  requests: readonly FamilyRequest[],
  picks: ReadonlyMap<IpFamily, readonly Choice[]>,
): Claim {
  const addresses: ClaimAddress[] = requests.flatMap((r) =>
    picks.get(r.family)!.map((pick) => ({
      address: formatAddress({ family: r.family, value: addressOfBit(pick.range.cidr, pick.bit) }),
      family: r.family,
      range: pick.range.range.name,
    })),
  );
  return { ...draft, addresses };
}

/**
 * After a commit that found addresses taken: a dynamic pick leased but not yet mirrored into the bitmap is skipped
 * next round (the mirror will set its bit), an explicit one in flight is sent again, an explicit one held is refused.
 * @throws AlreadyAllocatedError for an explicit address another claim holds
 */
function skipTaken(args: {
  readonly claim: Claim;
  readonly picks: ReadonlyMap<IpFamily, readonly Choice[]>;
  readonly taken: Extract<CommitOutcome, { kind: 'addressesTaken' }>['taken'];
  readonly skip: ReadonlyMap<IpFamily, Set<number>>;
}): void {
  for (const { address, holder, inFlight } of args.taken) {
    const family = args.claim.addresses.find((a) => a.address === address)?.family;
    if (family === undefined) continue;
    const pick = args.picks
      .get(family)!
      .find((p) => formatAddress({ family, value: addressOfBit(p.range.cidr, p.bit) }) === address);
    if (pick === undefined) continue;
    // Another transaction was writing it: it may still be free, so the next round sends it again.
    if (pick.explicit && inFlight) continue;
    if (pick.explicit) throw explicitTakenError(address, holder);
    // Leased but not yet mirrored into the bitmap: the mirror will set the bit; this call just avoids it.
    args.skip.get(family)!.add(pick.bit);
  }
}
