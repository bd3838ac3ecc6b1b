import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createDynamoClient } from '../../shared/adapters/dynamodb/client.ts';
import { toLambdaRecord } from '../../aws-emulation/lambda-records.ts';
import { DEPLOYED_MAPPING, deliverBatch, type DeliveryRules } from '../../aws-emulation/stream-delivery.ts';

export type MirrorHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

/**
 * Reads a table's stream on DynamoDB Local from TRIM_HORIZON, shard by shard, keeping its place between calls, and
 * hands out real records shaped as Lambda delivers them. Tests call `drain()` after their writes: it reads until one
 * full round over every shard returns nothing, under a deadline (no sleeps).
 */
export class StreamReader {
  private readonly streams: DynamoDBStreamsClient;
  private readonly iterators = new Map<string, string | undefined>();
  private streamArn: string | undefined;

  constructor(
    private readonly endpoint: string,
    private readonly tableName: string,
  ) {
    this.streams = new DynamoDBStreamsClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  }

  /** Every record written since the last call, in shard order (records of one key stay in order). */
  async read(deadlineMs = 20_000): Promise<DynamoDBRecord[]> {
    const deadline = Date.now() + deadlineMs;
    const out: DynamoDBRecord[] = [];
    for (;;) {
      const round = await this.round();
      out.push(...round);
      if (round.length === 0) return out;
      if (Date.now() > deadline)
        throw new Error(`the stream of ${this.tableName} did not drain within ${deadlineMs} ms`);
    }
  }

  /**
   * Feeds everything new to a stream handler in batches of `batchSize`, as the event source mapping would, and
   * returns the records and what the handler answered. Failed records are retried from the lowest failed one, up to
   * `retries` times (the mapping's rule), and their final failures are returned.
   */
  async drain(
    handler: MirrorHandler,
    options: { batchSize?: number; retries?: number } = {},
  ): Promise<{ records: DynamoDBRecord[]; failed: string[] }> {
    const records = await this.read();
    return { records, failed: await deliverRecords(records, handler, options) };
  }

  private async round(): Promise<DynamoDBRecord[]> {
    await this.discover();
    const out: DynamoDBRecord[] = [];
    for (const [shardId, iterator] of this.iterators) {
      if (iterator === undefined) continue;
      const answer = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      this.iterators.set(shardId, answer.NextShardIterator);
      for (const record of answer.Records ?? []) out.push(toLambdaRecord(record, this.streamArn!, 'us-east-1'));
    }
    return out;
  }

  private async discover(): Promise<void> {
    if (!this.streamArn) {
      const dynamo = createDynamoClient({ endpoint: this.endpoint });
      const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: this.tableName }));
      dynamo.destroy();
      this.streamArn = Table?.LatestStreamArn;
      if (!this.streamArn) throw new Error(`table ${this.tableName} has no stream`);
    }
    const { StreamDescription } = await this.streams.send(new DescribeStreamCommand({ StreamArn: this.streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      if (!shard.ShardId || this.iterators.has(shard.ShardId)) continue;
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: this.streamArn,
          ShardId: shard.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      this.iterators.set(shard.ShardId, ShardIterator);
    }
  }

  close(): void {
    this.streams.destroy();
  }
}

/** A Lambda stream event of these records. */
export const streamEvent = (records: readonly DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: [...records] });

/**
 * Feeds records to a stream handler in batches, by the event source mapping's rules (aws-emulation/stream-delivery.ts):
 * a batch that reports failures is retried from its lowest failed record, up to `retries` times; the ids the handler
 * last reported for a batch given up on are returned. A handler that throws fails the test (no bisection here).
 */
export async function deliverRecords(
  records: readonly DynamoDBRecord[],
  handler: MirrorHandler,
  options: { batchSize?: number; retries?: number } = {},
): Promise<string[]> {
  const rules: DeliveryRules = {
    ...DEPLOYED_MAPPING,
    batchSize: options.batchSize ?? DEPLOYED_MAPPING.batchSize,
    maxRetries: options.retries ?? 3,
    bisectOnError: false,
  };
  const failed: string[] = [];
  let thrown: { error: unknown } | undefined;
  for (let i = 0; i < records.length && !thrown; i += rules.batchSize) {
    await deliverBatch(records.slice(i, i + rules.batchSize), rules, {
      invoke: (batch) =>
        handler({ Records: batch }).catch((error: unknown) => {
          thrown = { error };
          throw error;
        }),
      pause: async () => undefined,
      stopped: () => thrown !== undefined,
      onGiveUp: ({ outcome }) => failed.push(...(outcome.kind === 'partial' ? outcome.failedIds : [])),
    });
  }
  if (thrown) throw thrown.error;
  return failed;
}
