import type { LeaseChange } from '../base/lease-change.ts';
import type { LegacyMirror, RangeOutcome } from './legacy-mirror.ts';
import type { ChunkOutcome, SummaryMirror } from '../occupancy/summary-mirror.ts';
import type { HistoryRecorder, HistoryResult } from '../history/recorder.ts';
import type { HistoryWriter } from '../history/ports.ts';
import type { Crossing, ExhaustionWatch, Observation } from '../occupancy/exhaustion.ts';
import type { DnsProjection, DnsResult } from '../dns/projection.ts';

/**
 * How far (stream time) the newest mark a container put for a pool may trail a batch that wrote no chunk of the pool
 * before that batch puts its mark on the pool's mark item: the most completeUntil trails the last recorded change.
 */
export const MARK_ITEM_SLACK_MS = 10_000;

/** What the stream function did with a batch: both projections of the leases. */
export interface ProjectionResult {
  /** Ids of the changes to report as batch item failures: those of every chunk or bitmap whose write failed. */
  readonly failed: readonly string[];
  readonly ranges: readonly RangeOutcome[];
  readonly chunks: readonly ChunkOutcome[];
  /** The address history's writes (absent when the projections run without it). */
  readonly history?: HistoryResult;
  /** The exhaustion levels' checks of the batch's pools (absent when the projections run without them). */
  readonly exhaustion?: {
    readonly crossings: readonly Crossing[];
    readonly observed: readonly Observation[];
    readonly errors: readonly { pool: string; error: unknown }[];
  };
  /** The DNS records' upkeep (absent when the projections run without it). */
  readonly dns?: DnsResult;
}

/** The parts of the stream function's work: the two mirrors, and the history and exhaustion checks where wired. */
export interface ProjectionParts {
  readonly summary: Pick<SummaryMirror, 'apply'>;
  readonly legacy: Pick<LegacyMirror, 'apply'>;
  readonly history?: Pick<HistoryRecorder, 'apply'>;
  /** Where a pool's history mark goes when no summary chunk of the batch carries it. */
  readonly marks?: Pick<HistoryWriter, 'advanceMark'>;
  readonly exhaustion?: Pick<ExhaustionWatch, 'check'>;
  /** The pools' DNS records (core/dns), kept after the leases' own projections. */
  readonly dns?: Pick<DnsProjection, 'apply'>;
}

/**
 * The stream function's work: the occupancy summary, always, the legacy bitmaps behind their gates, and the address
 * history. They write different items, so they run side by side; a change fails when any of its writes failed, and the
 * redelivery it causes is harmless to all (the mirrors re-read the lease items; the history writes the same holding
 * item again).
 *
 * One coupling: the history's completeness mark rides on the summary chunks. A chunk of a pool is put only after the
 * history has recorded every change of that pool in the batch, and then carries the pool's mark (the batch's newest
 * record time), so the mark costs no write of its own and never runs ahead of the holdings: a failed holding leaves
 * the pool without a mark this batch (its redelivery brings one), a failed chunk write takes its mark with it. A pool
 * whose changes touched no chunk bit (e.g. a claim and its release in one batch, or a claim released before the
 * summary read its lease) has its mark put on the pool's mark item instead, one small write, but only where the mark
 * this container last put for the pool is more than MARK_ITEM_SLACK_MS of stream time older: under load the next
 * chunk write carries the mark anyway, so the item is written only in long stretches of such batches, and a pool that
 * falls idle after one has a completeUntil at most that much before its last change (still true: it only says less).
 */
export class LeaseProjections {
  /** Pool -> the newest mark this container put (on a chunk or the mark item) or saw on a chunk it read. */
  private readonly marked = new Map<string, number>();

  readonly summary: Pick<SummaryMirror, 'apply'>;
  readonly legacy: Pick<LegacyMirror, 'apply'>;
  readonly history?: Pick<HistoryRecorder, 'apply'>;
  private readonly marks?: Pick<HistoryWriter, 'advanceMark'>;
  readonly exhaustion?: Pick<ExhaustionWatch, 'check'>;
  readonly dns?: Pick<DnsProjection, 'apply'>;

  constructor(parts: ProjectionParts) {
    this.summary = parts.summary;
    this.legacy = parts.legacy;
    this.history = parts.history;
    this.marks = parts.marks;
    this.exhaustion = parts.exhaustion;
    this.dns = parts.dns;
  }

  async apply(changes: readonly LeaseChange[]): Promise<ProjectionResult> {
    const recorded = this.history?.apply(changes);
    const [summary, legacy, history] = await Promise.all([
      this.summary.apply(
        changes,
        recorded?.then((r) => r.marks),
      ),
      this.legacy.apply(changes),
      recorded,
    ]);
    if (history) await this.markUnchunked(history, summary.chunks);
    const exhaustion = await this.checkExhaustion(changes);
    // DNS last: it reads the leases and claims as they are, and a failed name fails only its own records.
    const dns = await this.dns?.apply(changes);
    return {
      failed: [...new Set([...summary.failed, ...legacy.failed, ...(history?.failed ?? []), ...(dns?.failed ?? [])])],
      ranges: legacy.ranges,
      chunks: summary.chunks,
      ...(history ? { history } : {}),
      ...(exhaustion ? { exhaustion } : {}),
      ...(dns ? { dns } : {}),
    };
  }

  /**
   * After the summary is written: each pool of the batch checked against its free-space thresholds. A failed check
   * fails no record (the leases and their projections are fine); the pool's next batch checks again.
   */
  private async checkExhaustion(changes: readonly LeaseChange[]): Promise<ProjectionResult['exhaustion']> {
    if (!this.exhaustion) return undefined;
    const crossings: Crossing[] = [];
    const observed: Observation[] = [];
    const errors: { pool: string; error: unknown }[] = [];
    await Promise.all(
      [...new Set(changes.map((c) => c.pool))].map(async (pool) => {
        try {
          const check = await this.exhaustion!.check(pool);
          crossings.push(...check.crossings);
          observed.push(...check.observed);
        } catch (error) {
          errors.push({ pool, error });
        }
      }),
    );
    return { crossings, observed, errors };
  }

  /** Puts the mark of each pool that got no chunk written on its mark item, where the slack says so. */
  private async markUnchunked(history: HistoryResult, chunks: readonly ChunkOutcome[]): Promise<void> {
    const chunked = new Set(chunks.filter((c) => c.outcome === 'written').map((c) => c.pool));
    for (const [pool, through] of history.marks) if (chunked.has(pool)) this.remember(pool, through);
    // A chunk read but left unchanged shows a mark put before (by any container): the slack counts from it too.
    for (const c of chunks)
      if (c.historyThrough !== undefined && c.outcome !== 'failed') this.remember(c.pool, c.historyThrough);
    const left = [...history.marks].filter(
      ([pool, through]) => !chunked.has(pool) && through - (this.marked.get(pool) ?? -Infinity) > MARK_ITEM_SLACK_MS,
    );
    await Promise.all(
      left.map(async ([pool, through]) => {
        try {
          await this.marks?.advanceMark(pool, through);
          this.remember(pool, through);
        } catch {
          // The mark only says how complete the history is: a later batch moves it.
        }
      }),
    );
  }

  private remember(pool: string, through: number): void {
    this.marked.set(pool, Math.max(through, this.marked.get(pool) ?? -Infinity));
  }
}
