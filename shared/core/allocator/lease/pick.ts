import { RangeFullError } from '../../errors.ts';
import { BandName } from '../../used-up/ports.ts';
import { chooseWeighted, pickableSize, pickBlind } from '../candidates.ts';
import { HintSource } from '../hint.ts';
import type { Interval } from '../../base/intervals.ts';
import { excludedIntervals, rangesOf, type ParsedRange } from '../../base/pool-geometry.ts';
import { TUNING } from '../tuning.ts';
import { picked, type Choice, type FamilyPick, type PickResult, type ViewScope } from './context.ts';
import { behindNearFull, pickVerified, pickWithHint, shownFree, spreadEstimate } from './pick-from-view.ts';
import { bandOf, inLowerBand } from './units.ts';
import { decideUsedUp } from './used-up-decision.ts';

/** Where a family's dynamic picks draw from: its Ready ranges with room for picks, minus the pool's exclusions. */
export interface PickSpace {
  readonly ranges: readonly ParsedRange[];
  readonly excluded: readonly Interval[];
}

/** A way to pick one dynamic candidate of a family: the stage the commit rounds call for each open slot. */
export type Picker = (pick: FamilyPick, space: PickSpace) => Promise<Choice>;

/**
 * Stage "pick": one dynamic candidate of a family, never one of `chosen` (this claim's other picks of the family). The
 * hinted picker skips them as in flight (they are reserved), the blind one draws again.
 * @throws RangeFullError when the family has no free address
 */
export function pickDynamic(pick: FamilyPick, picker: Picker): Promise<Choice> {
  const { view } = pick.call;
  const { units } = pick.call.env;
  const ranges = rangesOf(view, pick.family).filter((r) => pickableSize(units.pickRange(r)) > 0n);
  if (ranges.length === 0) throw new RangeFullError(view.pool.name, pick.family);
  return picker(pick, { ranges, excluded: excludedIntervals(view, pick.family) });
}

/** Uniform random candidates with no hint (the benchmark's baseline): the conditional write alone judges them. */
export const pickBlindly: Picker = async (pick, { ranges, excluded }) => {
  const { ports, units, knobs } = pick.call.env;
  for (let draw = 0; draw < knobs.maxCommits; draw += 1) {
    const range = chooseWeighted(
      ranges.map((r) => ({ item: r, weight: pickableSize(units.pickRange(r)) })),
      ports.random,
    )!;
    const value = pickBlind(units.pickRange(range), { excluded, random: ports.random });
    if (value === undefined) throw new RangeFullError(pick.call.pool, pick.family);
    if (!pick.chosen.has(value)) return { value, range, explicit: false };
  }
  throw new RangeFullError(pick.call.pool, pick.family);
};

/** The summary while it keeps up; the listing where the pool has none yet or it is far behind. */
function hintSourceOf(pick: FamilyPick, seen: number): HintSource {
  const { call } = pick;
  return call.view.pool.summarySince !== undefined &&
    call.env.ports.hints.summaries &&
    seen < TUNING.summaryCollisionLimit
    ? HintSource.Summary
    : HintSource.Listing;
}

/** Reserves a choice in this container's hint, to be let go when the call ends. */
function reserveFor(pick: FamilyPick, choice: Choice): Choice {
  pick.call.reservations.push(pick.call.env.ports.hints.reserve(pick.call.pool, pick.family, choice.value));
  return choice;
}

/**
 * Upper bands first, from a random start, steered by the container's hint of what is taken. Up to
 * TUNING.hintReadsPerPick reads of the hint: a copy likely behind near full, or one showing nothing free that this
 * call did not read and that is older than the full trust, is read again. When the hint shows nothing free, the leases
 * decide "used up" (decideUsedUp), never the summary.
 */
export const pickWithHints: Picker = async (pick, space) => {
  const { call, family } = pick;
  const { ports, units, knobs } = call.env;
  const { ranges, excluded } = space;
  const { pool } = call;
  const intervals = units.intervals(ranges);
  // Refresh the hint after every TUNING.refreshEveryCollisions collisions of this call: a stale view must not cost
  // more than a couple of probes. `refreshedAt` holds the collision count at this call's last read of the hint.
  const seen = call.collisions.get(family) ?? 0;
  const force = seen - (call.refreshedAt.get(family) ?? 0) >= TUNING.refreshEveryCollisions;
  const source = hintSourceOf(pick, seen);
  // Reserved in the same synchronous step as the pick, so no other request of this container can take it too.
  const reserve = (choice: Choice): Choice => reserveFor(pick, choice);
  let fresh = force;
  for (let attempt = 0; attempt < TUNING.hintReadsPerPick; attempt += 1) {
    const nowMs = ports.clock.nowMs();
    const hint = await ports.hints.get({ pool, family, intervals, nowMs, force: fresh, source });
    if (fresh) call.refreshedAt.set(family, seen);
    const inFlight = ports.hints.inFlight(pool, family);
    // What the copy shows free, collected once for this attempt's synchronous steps (behindNearFull, pickVerified).
    const scope: ViewScope = { pick, ranges, excluded, hint, inFlight, memo: new Map() };
    if (hint.source === HintSource.Summary && spreadEstimate(scope) <= BigInt(2 * TUNING.spreadLimit))
      shownFree(scope, TUNING.spreadLimit + 1);
    if (
      !fresh &&
      hint.source === HintSource.Summary &&
      behindNearFull(scope, { nowMs, collided: (call.collidedAt.get(family) ?? -Infinity) >= hint.fetchedAt })
    ) {
      fresh = true;
      continue;
    }
    const result: PickResult =
      hint.source === HintSource.Summary ? await pickVerified(scope, seen > 0) : picked(pickWithHint(scope, inFlight));
    switch (result.kind) {
      case 'upperFull': {
        // Every address the copy showed free in these upper bands was read taken: whether they are used up is decided
        // for them alone (their seals, or their leases in bulk), and then the copy, which now shows them taken, picks
        // in the lower bands. Not by the whole family's decision below, which would read a lower band in bulk too.
        const upper = await decideUsedUp(
          pick,
          result.ranges.map((r) => bandOf(units, { view: call.view, excluded }, r, BandName.Upper)),
        );
        if (upper.kind === 'free') return reserve(upper.choice);
        for (const r of result.ranges) call.upperUsedUp.add(r.range.name);
        continue;
      }
      case 'picked': {
        // A pick in a lower band says the hint shows that range's upper band used up: only a read of its leases may
        // decide that (KEP-3070 keeps the lower band for static addresses).
        const { choice } = result;
        if (!inLowerBand(units, choice) || call.upperUsedUp.has(choice.range.range.name)) return reserve(choice);
        const upper = await decideUsedUp(pick, [
          bandOf(units, { view: call.view, excluded }, choice.range, BandName.Upper),
        ]);
        if (upper.kind === 'free') return reserve(upper.choice);
        call.upperUsedUp.add(choice.range.range.name);
        return reserve(choice);
      }
      case 'full':
      case 'none':
        break;
    }
    // The hint shows nothing free. A copy this call did not read, older than the full trust, is read again first
    // (one request, and it may show a release); otherwise the leases decide, below.
    if (fresh || result.kind === 'full' || nowMs - hint.fetchedAt < knobs.fullTrustMs) break;
    fresh = true;
  }
  // "Used up" is never the summary's word: every address of the family's ranges is read consistently, upper bands
  // first, and RangeFull is the answer only when none is free at the moment it was read.
  const where = { view: call.view, excluded };
  const bands = [
    ...ranges.map((r) => bandOf(units, where, r, BandName.Upper)),
    ...ranges.map((r) => bandOf(units, where, r, BandName.Lower)),
  ];
  const decided = await decideUsedUp(pick, bands);
  if (decided.kind === 'usedUp') throw new RangeFullError(pool, family);
  return reserve(decided.choice);
};
