import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import type { RangeOutcome } from '../../core/mirror/legacy-mirror.ts';
import type { LeaseChange } from '../../core/base/lease-change.ts';
import type { ChunkOutcome } from '../../core/occupancy/summary-mirror.ts';
import type { ProjectionResult } from '../../core/mirror/projections.ts';
import { crossingMessage, type Crossing, type Observation } from '../../core/occupancy/exhaustion.ts';
import { leaseChangeOf } from '../dynamodb/stream-records.ts';

/** What the handler runs a batch through: the lease projections (or one of them, in tests). */
export interface StreamMirror {
  apply(changes: readonly LeaseChange[]): Promise<{
    readonly failed: readonly string[];
    readonly ranges?: readonly RangeOutcome[];
    readonly chunks?: readonly ChunkOutcome[];
    readonly exhaustion?: ProjectionResult['exhaustion'];
    readonly dns?: ProjectionResult['dns'];
  }>;
}

/** Logs one JSON line per bitmap or chunk that failed (the records go back to the stream; details stay here). */
export type MirrorLogger = (entry: Record<string, unknown>) => void;

const defaultLogger: MirrorLogger = (entry) => console.error(JSON.stringify(entry));

/** One log line per failed part of a batch, per exhaustion crossing, and per DNS name taken or failed. */
function logOutcomes(result: Awaited<ReturnType<StreamMirror['apply']>>, log: MirrorLogger): void {
  for (const chunk of result.chunks ?? []) {
    if (chunk.outcome !== 'failed') continue;
    const error = chunk.error as Error | undefined;
    log({
      level: 'error',
      message: 'summary chunk write failed',
      pool: chunk.pool,
      family: chunk.family,
      chunk: chunk.index.toString(),
      records: chunk.changes,
      error: error?.name,
      detail: error?.message,
    });
  }
  for (const range of result.ranges ?? []) {
    if (range.outcome !== 'failed') continue;
    const error = range.error as Error | undefined;
    log({
      level: 'error',
      message: 'bitmap mirror write failed',
      pool: range.pool,
      range: range.range,
      records: range.changes,
      error: error?.name,
      detail: error?.message,
    });
  }
  for (const c of result.exhaustion?.crossings ?? [])
    log({
      level: 'warn',
      message: crossingMessage(c),
      pool: c.pool,
      family: c.family,
      direction: c.direction,
      threshold: c.threshold,
      freePercent: c.freePercent,
    });
  for (const { pool, error } of result.exhaustion?.errors ?? [])
    log({
      level: 'error',
      message: 'exhaustion check failed',
      pool,
      error: (error as Error | undefined)?.name,
      detail: (error as Error | undefined)?.message,
    });
  for (const n of result.dns?.names ?? []) {
    if (n.outcome === 'taken')
      log({ level: 'warn', message: 'dns name taken', pool: n.pool, claim: n.claim, name: n.name, holder: n.holder });
    if (n.outcome === 'failed')
      log({
        level: 'error',
        message: 'dns update failed',
        pool: n.pool,
        name: n.name,
        error: (n.error as Error | undefined)?.name,
        detail: (n.error as Error | undefined)?.message,
      });
  }
}

/**
 * The stream function: lease records -> one conditional write per summary chunk and per legacy bitmap -> partial
 * batch response.
 *
 * It answers `ReportBatchItemFailures` itself rather than through Powertools' BatchProcessor, whose unit of work is
 * one record: here the unit is one bitmap, and a bitmap's failure fails exactly its own records. The event source
 * mapping then retries from the lowest failed sequence number; records of other bitmaps after it are replayed too,
 * which is harmless (a replay re-reads the lease items, see LegacyMirror and SummaryMirror).
 */
export function createMirrorHandler(
  mirror: () => StreamMirror,
  log: MirrorLogger = defaultLogger,
  metrics?: {
    publishMirror(failed: number): void;
    publishExhaustion?(observed: readonly Observation[], crossings: readonly Crossing[]): void;
  },
) {
  return async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const changes = event.Records.map(leaseChangeOf).filter((c): c is LeaseChange => c !== undefined);
    const result = await mirror().apply(changes);
    logOutcomes(result, log);
    if (result.exhaustion) metrics?.publishExhaustion?.(result.exhaustion.observed, result.exhaustion.crossings);
    metrics?.publishMirror(result.failed.length);
    return { batchItemFailures: result.failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
