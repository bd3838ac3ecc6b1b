import { hostAt } from '../../ip/cidr.ts';
import {
  chooseWeighted,
  collectFree,
  pickableSize,
  pickInRange,
  upperBandStart,
  type PickRange,
} from '../candidates.ts';
import type { Hint } from '../hint.ts';
import type { ParsedRange } from '../../base/pool-geometry.ts';
import { TUNING } from '../tuning.ts';
import { picked, randomOf, type Choice, type PickResult, type ViewScope } from './context.ts';
import { readFree } from './read-leases.ts';
import { bandBounds, inLowerBand } from './units.ts';

/**
 * Stage "pick from a summary": when it shows few free addresses, read them all first (TUNING.verifyLimit) and pick
 * among those really free (no lease item, or an expired one); the ones taken are remembered like collisions. With a few
 * hundred shown free (TUNING.spreadLimit), the pick (or after a collision, the sample read) is drawn uniformly among
 * them. Answers full when it read every address the summary shows free and none was (upperFull when all of them lay
 * in upper bands of ranges with a lower band), none when the view shows none at all. Addresses in `verified` were read
 * free earlier in this call (the other picks of a batch) and are not read again; the ones read free now are added.
 */
export async function pickVerified(scope: ViewScope, collided: boolean): Promise<PickResult> {
  const { pick } = scope;
  const { call, family } = pick;
  const { ports, units } = call.env;
  const few = shownFree(scope, TUNING.verifyLimit + 1);
  if (few.length > TUNING.verifyLimit) {
    const spread = spreadFree(scope);
    if (collided) return picked(await pickSampled(scope, spread));
    return picked(spread ? randomOf(call.env, spread) : pickWithHint(scope, scope.inFlight));
  }
  if (few.length === 0) return { kind: 'none' };
  const free = await readFree(pick, few);
  if (free.length === 0) {
    // All in upper bands of ranges that have a lower band: those upper bands are in question, not the family.
    const ranges = [...new Set(few.map((c) => c.range))];
    return few.every((c) => !inLowerBand(units, c)) && ranges.every((r) => bandBounds(units, r).lower > 0n)
      ? { kind: 'upperFull', ranges }
      : { kind: 'full' };
  }
  // The same pick may have become in flight in this container while the read was out.
  const live = free
    .filter((f) => !ports.hints.inFlight(call.pool, family).has(f.value))
    .map((f) => ({ ...f, explicit: false }));
  if (live.length === 0) return { kind: 'none' };
  // The upper bands first (KEP-3070): a lower-band address only when every one read free is in a lower band.
  const upper = live.filter((f) => !inLowerBand(units, f));
  return picked(randomOf(call.env, upper.length > 0 ? upper : live));
}

/**
 * After a collision in this call, with more than TUNING.verifyLimit shown free: the summary has just been shown wrong,
 * so read TUNING.sampleSize random candidates (one consistent batch) and pick among those really free, instead of
 * paying a failed transaction per stale address. Undefined when none of the sample is free (the caller reads again).
 */
async function pickSampled(scope: ViewScope, spread?: readonly Choice[]): Promise<Choice | undefined> {
  const { pick } = scope;
  const { call, family } = pick;
  const { ports } = call.env;
  const skip = new Set(scope.inFlight);
  const sample: Choice[] = [];
  // Drawn uniformly from `spread` when the view shows few free (spreadFree), else by probes and scans.
  const rest = spread ? [...spread] : undefined;
  while (sample.length < TUNING.sampleSize) {
    const next = rest
      ? rest.splice(Number(ports.random.below(BigInt(Math.max(1, rest.length)))), 1)[0]
      : pickWithHint(scope, skip);
    if (!next) break;
    sample.push(next);
    skip.add(next.value);
  }
  const free = (await readFree(pick, sample)).filter((c) => !ports.hints.inFlight(call.pool, family).has(c.value));
  return free.length ? randomOf(call.env, free) : undefined;
}

/**
 * Stage "pick with the hint" (no read): probes then a scan in one range, chosen weighted by the free capacity the hint
 * shows when there is more than one, never a value of `skip`. Undefined when the hint shows every range full.
 */
export function pickWithHint(scope: ViewScope, skip: ReadonlySet<bigint>): Choice | undefined {
  const { ranges, excluded, hint } = scope;
  const { ports, units, knobs } = scope.pick.call.env;
  const ctx = { excluded, taken: hint, random: ports.random, probes: knobs.probes };
  // Weighing by free capacity counts the hint once per range: only worth it when there is a choice.
  const candidates =
    ranges.length === 1
      ? [{ item: ranges[0]!, weight: 1n }]
      : ranges.map((r) => ({ item: r, weight: freeByHint(units.pickRange(r), hint) }));
  const tried = new Set<ParsedRange>();
  while (tried.size < ranges.length) {
    const range =
      candidates.length === 1
        ? candidates[0]!.item
        : chooseWeighted(
            candidates.filter((c) => !tried.has(c.item)),
            ports.random,
          );
    if (!range) return undefined;
    tried.add(range);
    const value = pickInRange(units.pickRange(range), ctx, skip);
    if (value !== undefined) return { value, range, explicit: false };
    const candidate = candidates.find((c) => c.item === range);
    if (candidate) candidate.weight = 0n;
  }
  return undefined;
}

/**
 * Whether a summary copy is likely behind near full (TUNING.nearFullLimit): it shows more free addresses than a
 * verified read takes, but few, and it is older than the full trust or this call collided after it was read.
 */
export function behindNearFull(scope: ViewScope, at: { readonly nowMs: number; readonly collided: boolean }): boolean {
  if (!at.collided && at.nowMs - scope.hint.fetchedAt < scope.pick.call.env.knobs.fullTrustMs) return false;
  const shown = shownFree(scope, TUNING.nearFullLimit + 1).length;
  return shown > TUNING.verifyLimit && shown <= TUNING.nearFullLimit;
}

/**
 * Up to `limit` addresses the hint shows free in the bands dynamic picks of these ranges draw from now (collectFree:
 * a range's upper band while it shows any free, then its lower band), each once (overlapping ranges show the same
 * address twice), never one in flight in this container. With a memo, a range's addresses are collected once for
 * every limit up to the largest asked (near full, a collection scans the band's taken addresses), so the memo lives
 * only while the hint and what is in flight stay as they were (no await in between).
 */
export function shownFree(scope: ViewScope, limit: number): Choice[] {
  const { ranges, excluded, hint, inFlight, memo } = scope;
  const { units } = scope.pick.call.env;
  const shown: Choice[] = [];
  const seen = new Set<bigint>();
  const collect = (range: ParsedRange, n: number): bigint[] => {
    const had = memo?.get(range);
    // collectFree answers in address order: a list collected with a larger limit, or one shorter than its limit
    // (every address the range shows free), starts with the answer for a smaller one.
    if (had && (had.limit >= n || had.values.length < had.limit)) return had.values.slice(0, n);
    const values = collectFree(units.pickRange(range), { excluded, taken: hint }, n, inFlight);
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
 * Every address the hint shows free in the bands picks draw from, when that is at most TUNING.spreadLimit (undefined
 * otherwise): what a near-full pick is drawn from uniformly. The summary's counts rule out a range with room first,
 * so a sparse range pays no scan.
 */
function spreadFree(scope: ViewScope): Choice[] | undefined {
  if (spreadEstimate(scope) > BigInt(2 * TUNING.spreadLimit)) return undefined;
  const shown = shownFree(scope, TUNING.spreadLimit + 1);
  return shown.length > TUNING.spreadLimit ? undefined : shown;
}

/** Free addresses the hint's source shows in the bands picks of these ranges draw from (bandFreeByHint): an estimate. */
export function spreadEstimate(scope: ViewScope): bigint {
  const { units } = scope.pick.call.env;
  return scope.ranges.reduce((sum, range) => sum + bandFreeByHint(units.pickRange(range), scope.hint), 0n);
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
