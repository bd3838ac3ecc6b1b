import type { LeaseChange } from './lease-change.ts';
import type { LegacyMirror, RangeOutcome } from './legacy-mirror.ts';
import type { ChunkOutcome, SummaryMirror } from '../occupancy/summary-mirror.ts';

/** What the stream function did with a batch: both projections of the leases. */
export interface ProjectionResult {
  /** Ids of the changes to report as batch item failures: those of every chunk or bitmap whose write failed. */
  readonly failed: readonly string[];
  readonly ranges: readonly RangeOutcome[];
  readonly chunks: readonly ChunkOutcome[];
}

/**
 * The stream function's work: the occupancy summary, always, and the legacy bitmaps behind their gates. The two are
 * independent (different items), so they run side by side; a change fails when either of its writes failed, and
 * the redelivery it causes is harmless to both (each re-reads the lease items).
 */
export class LeaseProjections {
  constructor(
    readonly summary: SummaryMirror,
    readonly legacy: LegacyMirror,
  ) {}

  async apply(changes: readonly LeaseChange[]): Promise<ProjectionResult> {
    const [summary, legacy] = await Promise.all([this.summary.apply(changes), this.legacy.apply(changes)]);
    return { failed: [...new Set([...summary.failed, ...legacy.failed])], ranges: legacy.ranges, chunks: summary.chunks };
  }
}
