import { capacity, hostAt, lowerBandSize, slotFloor, type Cidr } from '../ip/cidr.ts';
import type { Random } from '../ports.ts';
import { intervalHolding, type Interval } from '../base/intervals.ts';

/** A Ready range as the picker sees it. */
export interface PickRange {
  readonly name: string;
  readonly cidr: Cidr;
  /** Offsets [0, window) may be picked; the whole capacity when absent (a legacy range's mirrored window otherwise). */
  readonly window?: bigint;
}

/** A recent view of taken addresses (a hint, not the truth). */
export interface TakenView {
  has(value: bigint): boolean;
}

/** What the picker knows: exclusions (sorted, disjoint) and a recent view of taken addresses. */
export interface PickContext {
  readonly excluded: readonly Interval[];
  readonly taken: TakenView;
  readonly random: Random;
  /** Random probes per band before its scan (TUNING.randomProbes in the allocator; none by default). */
  readonly probes?: number;
}

/** Usable offsets of the range for dynamic picks: [0, min(capacity, window)). */
export function pickableSize(range: PickRange): bigint {
  const size = capacity(range.cidr);
  return range.window !== undefined && range.window < size ? range.window : size;
}

/**
 * Where a dynamic pick's upper band starts: the range's lower band size (KEP-3070), or 0 when the pickable offsets
 * (`size`, pickableSize) do not reach past it, so the whole range is one band.
 */
export function upperBandStart(range: PickRange, size: bigint = pickableSize(range)): bigint {
  const lower = lowerBandSize(range.cidr);
  return lower < size ? lower : 0n;
}

/**
 * Picks a likely free address of one range: random probes in the upper band, then a scan from a random start with
 * wrap-around, then the same in the lower band (KEP-3070), skipping excluded and hinted-taken addresses. Undefined
 * when the hint shows the range full.
 *
 *   offset 0                 L                                  size-1
 *          [ lower band      ][ upper band: probes, then a scan ]
 */
export function pickInRange(
  range: PickRange,
  ctx: PickContext,
  skip: ReadonlySet<bigint> = new Set(),
): bigint | undefined {
  const size = pickableSize(range);
  if (size <= 0n) return undefined;
  const lower = upperBandStart(range, size);
  return (
    scanBand(range.cidr, { from: lower, to: size }, ctx, skip) ??
    (lower > 0n ? scanBand(range.cidr, { from: 0n, to: lower }, ctx, skip) : undefined)
  );
}

function isFree(value: bigint, ctx: PickContext, skip: ReadonlySet<bigint>): boolean {
  return !ctx.taken.has(value) && !skip.has(value);
}

/** Scans offsets [from, to) from a random start with wrap-around; jumps over excluded intervals in one step. */
function scanBand(
  cidr: Cidr,
  { from, to }: { readonly from: bigint; readonly to: bigint },
  ctx: PickContext,
  skip: ReadonlySet<bigint>,
): bigint | undefined {
  const width = to - from;
  if (width <= 0n) return undefined;
  for (let probe = 0; probe < (ctx.probes ?? 0); probe += 1) {
    const value = hostAt(cidr, from + ctx.random.below(width));
    if (!intervalHolding(ctx.excluded, value) && isFree(value, ctx, skip)) return value;
  }
  const start = from + ctx.random.below(width);
  let visited = 0n;
  let offset = start;
  while (visited < width) {
    const value = hostAt(cidr, offset);
    const excluded = intervalHolding(ctx.excluded, value);
    if (excluded) {
      // Jump to just past the exclusion (or to the band end), counting what we skipped.
      const lastOffsetInExclusion = slotFloor(cidr, excluded[1]);
      const bandLast = offset < start ? start - 1n : to - 1n;
      const jumpTo = lastOffsetInExclusion < bandLast ? lastOffsetInExclusion : bandLast;
      visited += jumpTo - offset + 1n;
      offset = jumpTo + 1n;
    } else {
      if (isFree(value, ctx, skip)) return value;
      visited += 1n;
      offset += 1n;
    }
    if (offset >= to) offset = from;
  }
  return undefined;
}

/** Uniform random pick over the range, ignoring any hint: the "blind" strategy the benchmark compares against. */
export function pickBlind(range: PickRange, ctx: Pick<PickContext, 'excluded' | 'random'>): bigint | undefined {
  const size = pickableSize(range);
  if (size <= 0n) return undefined;
  for (let i = 0; i < 64; i += 1) {
    const value = hostAt(range.cidr, ctx.random.below(size));
    if (!intervalHolding(ctx.excluded, value)) return value;
  }
  return undefined;
}

/** Chooses among ranges in proportion to their free capacity (weights given); undefined when every weight is zero. */
export function chooseWeighted<T>(items: readonly { item: T; weight: bigint }[], random: Random): T | undefined {
  const total = items.reduce((sum, { weight }) => sum + (weight > 0n ? weight : 0n), 0n);
  if (total === 0n) return undefined;
  let roll = random.below(total);
  for (const { item, weight } of items) {
    if (weight <= 0n) continue;
    if (roll < weight) return item;
    roll -= weight;
  }
  return undefined;
}

/**
 * The first `limit` addresses the view shows free (not excluded, not taken, not in `skip`) in the band a dynamic pick
 * of the range draws from now, in address order: its upper band, or its lower band once the view shows none free in
 * the upper one (KEP-3070, as pickInRange). Counting the lower band's free addresses while the upper band still
 * shows some would make a nearly used-up upper band look roomy: its few candidates, the ones a lagging view most
 * often shows free wrongly, would then go unchecked (docs/decisions/0002-near-full-picks.md). Fewer when the band has fewer; stops early, so on a
 * band with room it reads a few dozen positions.
 */
export function collectFree(
  range: PickRange,
  ctx: Pick<PickContext, 'excluded' | 'taken'>,
  limit: number,
  skip: ReadonlySet<bigint> = new Set(),
): bigint[] {
  const size = pickableSize(range);
  const lower = upperBandStart(range, size);
  const upper = collectIn(range, { from: lower, to: size }, ctx, { limit, skip });
  return upper.length > 0 ? upper : collectIn(range, { from: 0n, to: lower }, ctx, { limit, skip });
}

/** The first `limit` addresses the view shows free among offsets [from, to), in address order. */
function collectIn(
  range: PickRange,
  { from, to }: { readonly from: bigint; readonly to: bigint },
  ctx: Pick<PickContext, 'excluded' | 'taken'>,
  { limit, skip }: { readonly limit: number; readonly skip: ReadonlySet<bigint> },
): bigint[] {
  const out: bigint[] = [];
  let offset = from;
  while (offset < to && out.length < limit) {
    const value = hostAt(range.cidr, offset);
    const excluded = intervalHolding(ctx.excluded, value);
    if (excluded) {
      offset = slotFloor(range.cidr, excluded[1]) + 1n;
      continue;
    }
    if (!ctx.taken.has(value) && !skip.has(value)) out.push(value);
    offset += 1n;
  }
  return out;
}
