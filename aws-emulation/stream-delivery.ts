import type { DynamoDBRecord } from 'aws-lambda';

/**
 * Lambda's DynamoDB event source mapping, as far as the stream function meets it: how a batch's answer is read
 * (ReportBatchItemFailures), what is retried (from the lowest failed record to the end of the batch; a batch whose
 * invocation failed is bisected), how often, and what is given up on (the on-failure destination). Written once here
 * and used by the local stack's poller (scripts/stream-poller.ts), the tests' delivery (tests/support/stream.ts) and
 * the simulator (sim/world.ts), so the simulator checks the rules the local stack runs.
 *
 * Hand-rolled: no library emulates the event source mapping (serverless-offline-dynamodb-streams ignores
 * batchItemFailures, see /work/shared/toolchain.md). Not deployed: AWS runs the real thing; this folder holds only
 * what stands in for AWS locally.
 *
 *   batch [r1 r2 r3 r4 r5]   handler answers batchItemFailures = [r4, r3]
 *             ^^^^^ checkpointed (r1, r2 are done)
 *   retry [r3 r4 r5]         from the LOWEST failed sequence number, to the end of the batch
 *   ...                      at most `maxRetries` retries, then [r3 r4 r5] go to the failure destination
 *
 * - An unknown, empty or missing `itemIdentifier` fails the whole batch (as Lambda does).
 * - A handler that throws fails the whole batch; with `bisectOnError` the batch is split in two halves that are
 *   retried separately (each with its own retry budget), so one poison record ends up alone.
 * - `undefined`, `null` or `{ batchItemFailures: [] }` is success.
 */
export interface DeliveryRules {
  /** Records per batch at most (the mapping's BatchSize). */
  readonly batchSize: number;
  /** Retries of a failing batch before it goes to the failure destination (MaximumRetryAttempts). */
  readonly maxRetries: number;
  /** Split a batch in two when the invocation fails (BisectBatchOnFunctionError). */
  readonly bisectOnError: boolean;
  /** How long the mapping gathers records before invoking with fewer than a full batch (MaximumBatchingWindowInSeconds). */
  readonly batchWindowMs: number;
}

/** The stream function's mapping as serverless.yml deploys it (tests/unit/template.test.ts pins the two together). */
export const DEPLOYED_MAPPING: DeliveryRules = {
  batchSize: 1000,
  maxRetries: 10,
  bisectOnError: true,
  batchWindowMs: 1000,
};

/** What one invocation came to, read as the mapping reads it. */
export type BatchOutcome =
  | { readonly kind: 'ok' }
  | { readonly kind: 'error'; readonly message: string }
  | {
      readonly kind: 'partial';
      readonly firstFailed: number;
      readonly failedIds: readonly string[];
      readonly message: string;
    };

/** A batch given up on, for the failure destination. */
export interface GivenUp {
  readonly records: readonly DynamoDBRecord[];
  /** Invocations of this batch, the first one included. */
  readonly attempts: number;
  readonly outcome: Exclude<BatchOutcome, { kind: 'ok' }>;
}

/** What the caller supplies: the invocation, the wait before a retry, and where counts and give-ups go. */
export interface DeliveryHooks {
  /** Invokes the function with a batch; a throw counts as a failed invocation. */
  readonly invoke: (records: DynamoDBRecord[]) => Promise<unknown>;
  /** The wait before retrying a batch (real time in the local stack, virtual in the simulator, none in tests). */
  readonly pause: () => Promise<void>;
  /** Stop between attempts (the poller is stopping, the simulation ended). */
  readonly stopped?: () => boolean;
  readonly onDelivered?: (records: number) => void;
  readonly onGiveUp?: (given: GivenUp) => void;
}

/** An invocation's or a poll's error as one line: `name: message`. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Reads a handler's answer the way the event source mapping does (ReportBatchItemFailures). */
export function readBatchResponse(answer: unknown, records: readonly DynamoDBRecord[]): BatchOutcome {
  if (answer === undefined || answer === null) return { kind: 'ok' };
  const failures = (answer as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { kind: 'ok' };
  if (!Array.isArray(failures))
    return {
      kind: 'partial',
      firstFailed: 0,
      failedIds: [],
      message: 'batchItemFailures is not an array: whole batch failed',
    };
  if (failures.length === 0) return { kind: 'ok' };
  let firstFailed = records.length;
  const failedIds: string[] = [];
  for (const failure of failures as { itemIdentifier?: unknown }[]) {
    const index = records.findIndex((r) => r.dynamodb?.SequenceNumber === failure?.itemIdentifier);
    if (typeof failure?.itemIdentifier !== 'string' || failure.itemIdentifier === '' || index < 0) {
      return {
        kind: 'partial',
        firstFailed: 0,
        failedIds: [],
        message: `unknown itemIdentifier ${JSON.stringify(failure?.itemIdentifier)}: whole batch failed`,
      };
    }
    failedIds.push(failure.itemIdentifier);
    firstFailed = Math.min(firstFailed, index);
  }
  return { kind: 'partial', firstFailed, failedIds, message: `${failures.length} item(s) reported failed` };
}

/**
 * Delivers one batch read from a shard, retrying, bisecting and giving up as the mapping does; resolves when every
 * record of it was either accepted or handed to `onGiveUp` (or when `stopped` says so). Returns the invocations made.
 */
export async function deliverBatch(
  records: readonly DynamoDBRecord[],
  rules: DeliveryRules,
  hooks: DeliveryHooks,
): Promise<number> {
  const stopped = hooks.stopped ?? (() => false);
  let invocations = 0;
  const queue: DynamoDBRecord[][] = [[...records]];
  while (queue.length > 0 && !stopped()) {
    let batch = queue.shift()!;
    for (let attempt = 1; !stopped(); attempt += 1) {
      invocations += 1;
      let outcome: BatchOutcome;
      try {
        outcome = readBatchResponse(await hooks.invoke(batch), batch);
      } catch (error) {
        outcome = { kind: 'error', message: describeError(error) };
      }
      if (outcome.kind === 'ok') {
        hooks.onDelivered?.(batch.length);
        break;
      }
      if (outcome.kind === 'error' && rules.bisectOnError && batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        queue.unshift(batch.slice(0, half), batch.slice(half));
        break;
      }
      if (outcome.kind === 'partial') {
        hooks.onDelivered?.(outcome.firstFailed);
        batch = batch.slice(outcome.firstFailed);
      }
      if (attempt > rules.maxRetries) {
        hooks.onGiveUp?.({ records: batch, attempts: attempt, outcome });
        break;
      }
      await hooks.pause();
    }
  }
  return invocations;
}

/**
 * Whether the mapping invokes now with the records waiting in a shard: a full batch, or the oldest has waited the
 * batching window.
 */
export function batchDue(waiting: number, oldestWaitedMs: number, rules: DeliveryRules): boolean {
  return waiting >= rules.batchSize || (waiting > 0 && oldestWaitedMs >= rules.batchWindowMs);
}
