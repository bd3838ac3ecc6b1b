/** Closed intervals of addresses [from, to], the currency of overlap-aware counting. */
export type Interval = readonly [bigint, bigint];

/** Merges overlapping or touching intervals into a sorted, disjoint list. */
export function mergeIntervals(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [from, to] of sorted) {
    const last = out[out.length - 1];
    if (last && from <= last[1] + 1n) {
      if (to > last[1]) last[1] = to;
    } else {
      out.push([from, to]);
    }
  }
  return out;
}

/** Total number of addresses in disjoint intervals. */
export function intervalsSize(intervals: readonly Interval[]): bigint {
  return intervals.reduce((sum, [from, to]) => sum + (to - from + 1n), 0n);
}

/** The parts of `base` not covered by any of `cut` (both disjoint and sorted after merging). */
export function subtractIntervals(base: readonly Interval[], cut: readonly Interval[]): Interval[] {
  const cuts = mergeIntervals(cut);
  const out: Interval[] = [];
  for (const [from, to] of mergeIntervals(base)) {
    let start = from;
    for (const [cFrom, cTo] of cuts) {
      if (cTo < start || cFrom > to) continue;
      if (cFrom > start) out.push([start, cFrom - 1n]);
      start = cTo + 1n;
      if (start > to) break;
    }
    if (start <= to) out.push([start, to]);
  }
  return out;
}

/** Finds the interval holding `value` in a sorted disjoint list (binary search), if any. */
export function intervalHolding(intervals: readonly Interval[], value: bigint): Interval | undefined {
  let lo = 0;
  let hi = intervals.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const interval = intervals[mid]!;
    if (value < interval[0]) hi = mid - 1;
    else if (value > interval[1]) lo = mid + 1;
    else return interval;
  }
  return undefined;
}
