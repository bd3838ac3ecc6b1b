import type { LeaseChange } from './lease-change.ts';
import type { LegacyMirror, RangeOutcome } from './legacy-mirror.ts';
import type { ChunkOutcome, SummaryMirror } from '../occupancy/summary-mirror.ts';
import type { HistoryRecorder, HistoryResult } from '../history/recorder.ts';

/** What the stream function did with a batch: both projections of the leases. */
export interface ProjectionResult {
  /** Ids of the changes to report as batch item failures: those of every chunk or bitmap whose write failed. */
  readonly failed: readonly string[];
  readonly ranges: readonly RangeOutcome[];
  readonly chunks: readonly ChunkOutcome[];
  /** The address history's writes (absent when the projections run without it). */
  readonly history?: HistoryResult;
}

/**
 * The stream function's work: the occupancy summary, always, the legacy bitmaps behind their gates, and the address
 * history. The three are independent (different items), so they run side by side; a change fails when any of its
 * writes failed, and the redelivery it causes is harmless to all (the mirrors re-read the lease items; the history
 * writes the same holding item again).
 */
export class LeaseProjections {
  constructor(
    readonly summary: SummaryMirror,
    readonly legacy: LegacyMirror,
    readonly history?: HistoryRecorder,
  ) {}

  async apply(changes: readonly LeaseChange[]): Promise<ProjectionResult> {
    const [summary, legacy, history] = await Promise.all([this.summary.apply(changes), this.legacy.apply(changes), this.history?.apply(changes)]);
    return {
      failed: [...new Set([...summary.failed, ...legacy.failed, ...(history?.failed ?? [])])],
      ranges: legacy.ranges,
      chunks: summary.chunks,
      ...(history ? { history } : {}),
    };
  }
}
