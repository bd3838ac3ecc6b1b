import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createDynamoClient } from '../shared/adapters/dynamodb/client.ts';
import { lambdaContext } from './lambda-context.ts';
import { toLambdaRecord } from '../aws-emulation/lambda-records.ts';
import { DEPLOYED_MAPPING, deliverBatch, describeError, type DeliveryRules } from '../aws-emulation/stream-delivery.ts';

/**
 * A local stand-in for Lambda's DynamoDB event source mapping, for DynamoDB Local (which has streams but no
 * Lambda service). It reads every shard of a table's stream and hands batches to a stream handler as a real
 * `DynamoDBStreamEvent`; what happens to a batch (partial failures, retries from the lowest failed record,
 * bisection, give-up to the failure destination) is aws-emulation/stream-delivery.ts, the rules the simulator and
 * the tests run too, with the deployed mapping's settings as defaults.
 *
 * - Records of one shard are delivered in order, one batch at a time; a child shard is read only after its
 *   parent is drained. New shards are discovered by describing the stream again.
 */
export interface StreamPollerOptions {
  /** DynamoDB Local endpoint, e.g. http://127.0.0.1:8000. */
  endpoint: string;
  tableName: string;
  /** The stream function: the module's `handler` itself, or anything that invokes it (e.g. through a Lambda API). */
  handler: StreamHandler;
  /** Milliseconds between polls of an idle stream (Lambda polls a shard about 4 times a second). Default 250. */
  pollIntervalMs?: number;
  /** Records per GetRecords call and so per batch. Default: the deployed mapping's (100). */
  batchSize?: number;
  /** Retries of a failing batch before it goes to the failure destination. Default: the deployed mapping's (10). */
  maxRetries?: number;
  /** Milliseconds before a failed batch is retried. Default 100. */
  retryDelayMs?: number;
  /** Split a batch in two when the handler throws. Default true (as deployed). */
  bisectOnError?: boolean;
  /**
   * Where to start in the shards that exist when the poller starts (shards found later are always read from
   * their start). TRIM_HORIZON delivers everything since the table was created: right for a fresh table.
   * LATEST skips history: right for a persisted table reopened by a new run. Default TRIM_HORIZON.
   */
  startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** Region written into the records. Default us-east-1. */
  region?: string;
  /** Function name written into the Lambda context. Default `stream-handler`. */
  functionName?: string;
  /** Called for errors of the poller itself (reading the stream); the poller keeps going. Default: log a line. */
  onError?: (error: unknown) => void;
  /** The failure destination: called with every batch given up on. Default: log one JSON line on stderr. */
  onFailure?: (failure: FailedBatch) => void;
}

/** A stream handler as Lambda calls it; the answer is read as a `DynamoDBBatchResponse` (or nothing). */
export type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<unknown>;

/** What the failure destination receives: the records given up on and why (like the mapping's on-failure record). */
export interface FailedBatch {
  readonly streamArn: string;
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly batchSize: number;
  /** Invocations of this batch, the first one included. */
  readonly attempts: number;
  /** `Error` when the handler threw, `PartialFailure` when it reported failed items. */
  readonly condition: 'Error' | 'PartialFailure';
  readonly lastError: string | undefined;
  readonly records: readonly DynamoDBRecord[];
}

/** Counters for tests and the console; read them with a deadline, not after a sleep. */
export interface StreamPollerStats {
  /** Handler invocations, retries included. */
  readonly invocations: number;
  /** Records checkpointed after the handler accepted them. */
  readonly recordsDelivered: number;
  /** Records handed to the failure destination. */
  readonly recordsFailed: number;
  readonly shardsSeen: number;
  readonly shardsFinished: number;
}

export interface StreamPoller {
  readonly streamArn: string;
  stats(): StreamPollerStats;
  /** Batches given up on so far (the same ones `onFailure` received). */
  failures(): readonly FailedBatch[];
  /** Stops polling; resolves when the batch in flight (if any) is done, or after 5 s if the handler hangs. */
  stop(): Promise<void>;
}

interface ShardState {
  readonly shard: Shard;
  /** Where to start when there is no checkpoint. */
  initialType: ShardIteratorType;
  iterator: string | undefined;
  /** Last sequence number checkpointed (delivered or dead-lettered). */
  checkpoint: string | undefined;
  finished: boolean;
}

const SHARD_REFRESH_MS = 2000;
const STOP_GRACE_MS = 5000;

/** Starts polling the table's stream; throws if the table has no stream. */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const region = options.region ?? 'us-east-1';
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  const rules: DeliveryRules = {
    ...DEPLOYED_MAPPING,
    ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
    ...(options.bisectOnError !== undefined ? { bisectOnError: options.bisectOnError } : {}),
  };
  const retryDelayMs = options.retryDelayMs ?? 100;
  const functionName = options.functionName ?? 'stream-handler';
  const onError = options.onError ?? ((error: unknown) => console.error(`[stream-poller] ${describeError(error)}`));
  const onFailure =
    options.onFailure ??
    ((failure: FailedBatch) => {
      const { records: _records, ...summary } = failure;
      console.error(`[stream-poller] failure destination: ${JSON.stringify(summary)}`);
    });

  const dynamo = createDynamoClient({ endpoint: options.endpoint, region });
  const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: options.tableName }));
  dynamo.destroy();
  const streamArn = Table?.LatestStreamArn;
  if (!streamArn || Table?.StreamSpecification?.StreamEnabled === false) {
    throw new Error(`table ${options.tableName} has no stream: enable NEW_AND_OLD_IMAGES (infra/table.json)`);
  }

  const streams = new DynamoDBStreamsClient({
    endpoint: options.endpoint,
    region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 2,
  });
  const abort = new AbortController();
  const shards = new Map<string, ShardState>();
  const failed: FailedBatch[] = [];
  const counters = { invocations: 0, recordsDelivered: 0, recordsFailed: 0 };
  let firstDescribe = true;
  let lastRefresh = 0;
  let stopped = false;
  let stopping: Promise<void> | undefined;

  async function refreshShards(): Promise<void> {
    let exclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: exclusiveStartShardId }),
        { abortSignal: abort.signal },
      );
      for (const shard of StreamDescription?.Shards ?? []) {
        if (!shard.ShardId || shards.has(shard.ShardId)) continue;
        const initialType: ShardIteratorType = firstDescribe
          ? (options.startingPosition ?? 'TRIM_HORIZON')
          : 'TRIM_HORIZON';
        shards.set(shard.ShardId, { shard, initialType, iterator: undefined, checkpoint: undefined, finished: false });
      }
      exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
    firstDescribe = false;
    lastRefresh = Date.now();
  }

  /** A shard is read once its parent (if we know it) is drained, so a key's changes stay in order. */
  function readyShards(): ShardState[] {
    return [...shards.values()].filter((s) => {
      if (s.finished) return false;
      const parent = s.shard.ParentShardId === undefined ? undefined : shards.get(s.shard.ParentShardId);
      return parent === undefined || parent.finished;
    });
  }

  async function iteratorFor(state: ShardState): Promise<string | undefined> {
    const input =
      state.checkpoint === undefined
        ? { StreamArn: streamArn, ShardId: state.shard.ShardId, ShardIteratorType: state.initialType }
        : {
            StreamArn: streamArn,
            ShardId: state.shard.ShardId,
            ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const,
            SequenceNumber: state.checkpoint,
          };
    const { ShardIterator } = await streams.send(new GetShardIteratorCommand(input), { abortSignal: abort.signal });
    return ShardIterator;
  }

  /** Reads one batch from a shard and delivers it; returns the number of records read. */
  async function pollShard(state: ShardState): Promise<number> {
    state.iterator ??= await iteratorFor(state);
    if (state.iterator === undefined) {
      state.finished = true;
      return 0;
    }
    let answer;
    try {
      answer = await streams.send(new GetRecordsCommand({ ShardIterator: state.iterator, Limit: rules.batchSize }), {
        abortSignal: abort.signal,
      });
    } catch (error) {
      // Expired or trimmed iterators are re-acquired from the checkpoint; anything else is reported by the loop.
      state.iterator = undefined;
      if ((error as Error).name === 'TrimmedDataAccessException') {
        // The checkpoint fell off the 24-hour window: go on from the oldest record still there.
        state.checkpoint = undefined;
        state.initialType = 'TRIM_HORIZON';
      }
      if (
        (error as Error).name === 'ExpiredIteratorException' ||
        (error as Error).name === 'TrimmedDataAccessException'
      )
        return 0;
      throw error;
    }
    const records = (answer.Records ?? []).map((record) => toLambdaRecord(record, streamArn!, region));
    if (records.length > 0) {
      await deliver(state, records);
      if (stopped) return records.length;
      state.checkpoint = records.at(-1)?.dynamodb?.SequenceNumber ?? state.checkpoint;
    }
    state.iterator = answer.NextShardIterator;
    if (state.iterator === undefined) {
      // Closed and drained: its children (if any) may start; look for them now.
      state.finished = true;
      lastRefresh = 0;
    }
    return records.length;
  }

  async function deliver(state: ShardState, records: DynamoDBRecord[]): Promise<void> {
    await deliverBatch(records, rules, {
      invoke: (batch) => {
        counters.invocations += 1;
        return options.handler({ Records: batch }, lambdaContext(functionName, { region }));
      },
      pause: () => pause(retryDelayMs, abort.signal),
      stopped: () => stopped,
      onDelivered: (n) => (counters.recordsDelivered += n),
      onGiveUp: ({ records: batch, attempts, outcome }) => {
        const failure: FailedBatch = {
          streamArn: streamArn!,
          shardId: state.shard.ShardId ?? '',
          startSequenceNumber: batch[0]?.dynamodb?.SequenceNumber ?? '',
          endSequenceNumber: batch.at(-1)?.dynamodb?.SequenceNumber ?? '',
          batchSize: batch.length,
          attempts,
          condition: outcome.kind === 'error' ? 'Error' : 'PartialFailure',
          lastError: outcome.message,
          records: batch,
        };
        failed.push(failure);
        counters.recordsFailed += batch.length;
        try {
          onFailure(failure);
        } catch (error) {
          onError(error);
        }
      },
    });
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      let read = 0;
      try {
        if (Date.now() - lastRefresh >= SHARD_REFRESH_MS) await refreshShards();
        for (const state of readyShards()) {
          if (stopped) break;
          read += await pollShard(state);
        }
      } catch (error) {
        if (stopped) break;
        onError(error);
      }
      if (read === 0 && !stopped) await pause(pollIntervalMs, abort.signal);
    }
  }

  await refreshShards();
  const running = loop();

  return {
    streamArn,
    stats: () => ({
      ...counters,
      shardsSeen: shards.size,
      shardsFinished: [...shards.values()].filter((s) => s.finished).length,
    }),
    failures: () => [...failed],
    stop() {
      stopping ??= (async () => {
        stopped = true;
        abort.abort();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([running, new Promise<void>((r) => (timer = setTimeout(r, STOP_GRACE_MS)))]);
        clearTimeout(timer);
        streams.destroy();
      })();
      return stopping;
    },
  };
}

/** Waits `ms`, or less if the poller stops. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
