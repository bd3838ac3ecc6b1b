import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { startStreamPoller, type StreamPoller } from '../../scripts/stream-poller.ts';

// Shard lineage and iterator expiry cannot be provoked on DynamoDB Local, so the streams API is mocked here;
// the delivery semantics themselves are tested against DynamoDB Local in tests/int/stream-poller.int.test.ts.

const streamArn = 'arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/1';
const dynamo = mockClient(DynamoDBClient);
const streams = mockClient(DynamoDBStreamsClient);
let poller: StreamPoller | undefined;

/** A stream record whose key and sequence number are `id`-derived. */
function record(id: string, sequence: number): _Record {
  return {
    eventID: id,
    eventName: 'INSERT',
    dynamodb: {
      Keys: { PK: { S: id }, SK: { S: 'X' } },
      NewImage: { PK: { S: id }, SK: { S: 'X' } },
      SequenceNumber: String(sequence).padStart(21, '0'),
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

function collect(): { delivered: string[]; handler: (event: DynamoDBStreamEvent) => Promise<undefined> } {
  const delivered: string[] = [];
  return {
    delivered,
    handler: async (event) => {
      delivered.push(...event.Records.map((r) => r.dynamodb?.Keys?.PK?.S ?? '?'));
      return undefined;
    },
  };
}

beforeEach(() => {
  dynamo.reset();
  streams.reset();
  dynamo
    .on(DescribeTableCommand)
    .resolves({ Table: { LatestStreamArn: streamArn, StreamSpecification: { StreamEnabled: true } } });
});

afterEach(async () => {
  await poller?.stop();
  poller = undefined;
});

// The mocks replace the clients' send for every instance: the next file in this worker (isolate: false) gets them back.
afterAll(() => {
  dynamo.restore();
  streams.restore();
});

describe('Function: startStreamPoller (mocked streams API)', () => {
  it('reads a child shard only after its parent is drained and closed', async () => {
    // Prepare: parent A yields a1, then a2, then closes; child B (listed from the start) yields b1.
    const a: Shard = { ShardId: 'A', SequenceNumberRange: { StartingSequenceNumber: '1', EndingSequenceNumber: '2' } };
    const b: Shard = { ShardId: 'B', ParentShardId: 'A', SequenceNumberRange: { StartingSequenceNumber: '3' } };
    streams.on(DescribeStreamCommand).resolves({ StreamDescription: { StreamArn: streamArn, Shards: [a, b] } });
    streams.on(GetShardIteratorCommand, { ShardId: 'A' }).resolves({ ShardIterator: 'a0' });
    streams.on(GetShardIteratorCommand, { ShardId: 'B' }).resolves({ ShardIterator: 'b0' });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'a0' })
      .resolves({ Records: [record('a1', 1)], NextShardIterator: 'a1' });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'a1' })
      .resolves({ Records: [record('a2', 2)], NextShardIterator: 'a2' });
    streams.on(GetRecordsCommand, { ShardIterator: 'a2' }).resolves({ Records: [] });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'b0' })
      .resolves({ Records: [record('b1', 3)], NextShardIterator: 'b1' });
    streams.on(GetRecordsCommand, { ShardIterator: 'b1' }).resolves({ Records: [], NextShardIterator: 'b1' });
    const { delivered, handler } = collect();
    // Act
    poller = await startStreamPoller({ endpoint: 'http://127.0.0.1:1', tableName: 't', handler, pollIntervalMs: 5 });
    // Assess
    await vi.waitFor(() => expect(delivered).toEqual(['a1', 'a2', 'b1']), { timeout: 5000, interval: 10 });
    expect(poller.stats()).toMatchObject({ shardsSeen: 2, shardsFinished: 1, recordsDelivered: 3 });
  });

  it('finds a shard that appears after start and reads it from its beginning', async () => {
    // Prepare: only A at first; A closes after a1, and then the stream lists its child B.
    const a: Shard = { ShardId: 'A', SequenceNumberRange: { StartingSequenceNumber: '1' } };
    const b: Shard = { ShardId: 'B', ParentShardId: 'A', SequenceNumberRange: { StartingSequenceNumber: '2' } };
    streams
      .on(DescribeStreamCommand)
      .resolvesOnce({ StreamDescription: { StreamArn: streamArn, Shards: [a] } })
      .resolves({ StreamDescription: { StreamArn: streamArn, Shards: [a, b] } });
    streams.on(GetShardIteratorCommand, { ShardId: 'A' }).resolves({ ShardIterator: 'a0' });
    streams.on(GetShardIteratorCommand, { ShardId: 'B' }).resolves({ ShardIterator: 'b0' });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'a0' })
      .resolves({ Records: [record('a1', 1)], NextShardIterator: 'a1' });
    streams.on(GetRecordsCommand, { ShardIterator: 'a1' }).resolves({ Records: [] });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'b0' })
      .resolves({ Records: [record('b1', 2)], NextShardIterator: 'b1' });
    streams.on(GetRecordsCommand, { ShardIterator: 'b1' }).resolves({ Records: [], NextShardIterator: 'b1' });
    const { delivered, handler } = collect();
    // Act: LATEST applies to the shards present at start only.
    poller = await startStreamPoller({
      endpoint: 'http://127.0.0.1:1',
      tableName: 't',
      handler,
      pollIntervalMs: 5,
      startingPosition: 'LATEST',
    });
    // Assess
    await vi.waitFor(() => expect(delivered).toEqual(['a1', 'b1']), { timeout: 5000, interval: 10 });
    const iteratorTypes = streams
      .commandCalls(GetShardIteratorCommand)
      .map((c) => `${c.args[0].input.ShardId}:${c.args[0].input.ShardIteratorType}`);
    expect(iteratorTypes).toEqual(['A:LATEST', 'B:TRIM_HORIZON']);
  });

  it('re-acquires an expired iterator after the last checkpoint, delivering nothing twice', async () => {
    // Prepare
    const a: Shard = { ShardId: 'A', SequenceNumberRange: { StartingSequenceNumber: '1' } };
    streams.on(DescribeStreamCommand).resolves({ StreamDescription: { StreamArn: streamArn, Shards: [a] } });
    streams
      .on(GetShardIteratorCommand, { ShardId: 'A', ShardIteratorType: 'TRIM_HORIZON' })
      .resolves({ ShardIterator: 'a0' });
    streams
      .on(GetShardIteratorCommand, {
        ShardId: 'A',
        ShardIteratorType: 'AFTER_SEQUENCE_NUMBER',
        SequenceNumber: record('a1', 1).dynamodb!.SequenceNumber,
      })
      .resolves({ ShardIterator: 'a1-again' });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'a0' })
      .resolves({ Records: [record('a1', 1)], NextShardIterator: 'a1' });
    streams
      .on(GetRecordsCommand, { ShardIterator: 'a1' })
      .rejects(new ExpiredIteratorException({ message: 'expired', $metadata: {} }));
    streams
      .on(GetRecordsCommand, { ShardIterator: 'a1-again' })
      .resolves({ Records: [record('a2', 2)], NextShardIterator: 'a2' });
    streams.on(GetRecordsCommand, { ShardIterator: 'a2' }).resolves({ Records: [], NextShardIterator: 'a2' });
    const { delivered, handler } = collect();
    const errors: unknown[] = [];
    // Act
    poller = await startStreamPoller({
      endpoint: 'http://127.0.0.1:1',
      tableName: 't',
      handler,
      pollIntervalMs: 5,
      onError: (e) => errors.push(e),
    });
    // Assess
    await vi.waitFor(() => expect(delivered).toEqual(['a1', 'a2']), { timeout: 5000, interval: 10 });
    expect(errors).toEqual([]);
  });

  it('refuses a table without a stream', async () => {
    // Prepare
    dynamo.on(DescribeTableCommand).resolves({ Table: { TableName: 't' } });
    // Act
    const started = startStreamPoller({
      endpoint: 'http://127.0.0.1:1',
      tableName: 't',
      handler: async () => undefined,
    });
    // Assess
    await expect(started).rejects.toThrow(/has no stream/);
  });
});
