import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import {
  startStreamPoller,
  type StreamHandler,
  type StreamPoller,
  type StreamPollerOptions,
} from '../../scripts/stream-poller.ts';
import { freshTable } from '../support/dynamo.ts';

const pollers: StreamPoller[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});

async function put(client: DynamoDBClient, tableName: string, id: string): Promise<void> {
  await client.send(
    new PutItemCommand({ TableName: tableName, Item: { PK: { S: `ITEM#${id}` }, SK: { S: 'ITEM' }, n: { N: '1' } } }),
  );
}

/** Writes items 1..count, in order. */
async function putMany(client: DynamoDBClient, tableName: string, count: number): Promise<void> {
  for (let i = 1; i <= count; i += 1) await put(client, tableName, String(i));
}

const idOf = (record: DynamoDBRecord): string => (record.dynamodb?.Keys?.PK?.S ?? '').replace('ITEM#', '');
const seqOf = (record: DynamoDBRecord): string => record.dynamodb?.SequenceNumber ?? '';

/** A handler that records every batch it is given and answers with `answer`. */
function recordingHandler(answer: (records: DynamoDBRecord[], call: number) => unknown): {
  handler: StreamHandler;
  batches: DynamoDBRecord[][];
} {
  const batches: DynamoDBRecord[][] = [];
  const handler: StreamHandler = async (event: DynamoDBStreamEvent) => {
    batches.push(event.Records);
    return answer(event.Records, batches.length);
  };
  return { handler, batches };
}

async function start(options: StreamPollerOptions): Promise<StreamPoller> {
  const poller = await startStreamPoller({
    pollIntervalMs: 50,
    retryDelayMs: 0,
    onFailure: () => undefined,
    ...options,
  });
  pollers.push(poller);
  return poller;
}

describe('Function: startStreamPoller (DynamoDB Local)', () => {
  it('delivers every write as a Lambda DynamoDBStreamEvent, in write order', async () => {
    // Prepare
    const { client, tableName, endpoint } = await freshTable('ipam-poller', { stream: true });
    const { handler, batches } = recordingHandler(() => ({ batchItemFailures: [] }));
    const poller = await start({ endpoint, tableName, handler });
    // Act
    await put(client, tableName, 'a');
    await put(client, tableName, 'b');
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { PK: { S: 'ITEM#a' }, SK: { S: 'ITEM' } },
        UpdateExpression: 'SET n = :two',
        ExpressionAttributeValues: { ':two': { N: '2' } },
      }),
    );
    await client.send(new DeleteItemCommand({ TableName: tableName, Key: { PK: { S: 'ITEM#b' }, SK: { S: 'ITEM' } } }));
    // Assess
    await vi.waitFor(() => expect(poller.stats().recordsDelivered).toBe(4), { timeout: 10_000, interval: 50 });
    const records = batches.flat();
    expect(records.map((r) => `${r.eventName} ${idOf(r)}`)).toEqual(['INSERT a', 'INSERT b', 'MODIFY a', 'REMOVE b']);
    const sequence = records.map((r) => BigInt(seqOf(r)));
    expect([...sequence].sort((x, y) => (x < y ? -1 : 1))).toEqual(sequence);
    const [insert, , modify, remove] = records;
    expect(insert).toMatchObject({
      eventSource: 'aws:dynamodb',
      eventSourceARN: poller.streamArn,
      awsRegion: 'us-east-1',
      dynamodb: { StreamViewType: 'NEW_AND_OLD_IMAGES', NewImage: { PK: { S: 'ITEM#a' }, n: { N: '1' } } },
    });
    expect(typeof insert?.dynamodb?.ApproximateCreationDateTime).toBe('number');
    expect(modify?.dynamodb).toMatchObject({ OldImage: { n: { N: '1' } }, NewImage: { n: { N: '2' } } });
    expect(remove?.dynamodb?.OldImage?.PK).toEqual({ S: 'ITEM#b' });
    expect(remove?.dynamodb?.NewImage).toBeUndefined();
    expect(poller.failures()).toEqual([]);
  });

  it('re-delivers from the lowest reported sequence number and never re-delivers what came before it', async () => {
    // Prepare: item 3 fails the first time it is seen; item 4 too, reported first, to check "lowest" wins.
    const { client, tableName, endpoint } = await freshTable('ipam-poller', { stream: true });
    await putMany(client, tableName, 5);
    let failedOnce = false;
    const { handler, batches } = recordingHandler((records) => {
      const three = records.find((r) => idOf(r) === '3');
      const four = records.find((r) => idOf(r) === '4');
      if (failedOnce || three === undefined) return { batchItemFailures: [] };
      failedOnce = true;
      return {
        batchItemFailures: [four, three].filter((r) => r !== undefined).map((r) => ({ itemIdentifier: seqOf(r) })),
      };
    });
    // Act
    const poller = await start({ endpoint, tableName, handler });
    // Assess
    await vi.waitFor(() => expect(poller.stats().recordsDelivered).toBe(5), { timeout: 10_000, interval: 50 });
    const retried = batches.findIndex((batch) => batch.some((r) => idOf(r) === '3')) + 1;
    expect(batches[retried]?.map(idOf)[0]).toBe('3');
    const seen = batches.flat().map(idOf);
    expect(seen.filter((id) => id === '1')).toHaveLength(1);
    expect(seen.filter((id) => id === '2')).toHaveLength(1);
    expect(seen.filter((id) => id === '3')).toHaveLength(2);
    expect(poller.failures()).toEqual([]);
  });

  it('fails the whole batch when an itemIdentifier is not in it', async () => {
    // Prepare
    const { client, tableName, endpoint } = await freshTable('ipam-poller', { stream: true });
    await putMany(client, tableName, 3);
    const { handler, batches } = recordingHandler((_records, call) =>
      call === 1 ? { batchItemFailures: [{ itemIdentifier: 'not-a-sequence-number' }] } : { batchItemFailures: [] },
    );
    // Act
    const poller = await start({ endpoint, tableName, handler });
    // Assess
    await vi.waitFor(() => expect(poller.stats().recordsDelivered).toBe(3), { timeout: 10_000, interval: 50 });
    expect(batches[1]?.map(seqOf)).toEqual(batches[0]?.map(seqOf));
  });

  it('hands a batch that keeps failing to the failure destination after maxRetries, then goes on', async () => {
    // Prepare: item 2 always fails.
    const { client, tableName, endpoint } = await freshTable('ipam-poller', { stream: true });
    await putMany(client, tableName, 3);
    const destination: unknown[] = [];
    const { handler } = recordingHandler((records) => ({
      batchItemFailures: records.filter((r) => idOf(r) === '2').map((r) => ({ itemIdentifier: seqOf(r) })),
    }));
    // Act
    const poller = await start({ endpoint, tableName, handler, maxRetries: 2, onFailure: (f) => destination.push(f) });
    await vi.waitFor(() => expect(poller.failures()).toHaveLength(1), { timeout: 10_000, interval: 50 });
    await put(client, tableName, 'after');
    // Assess
    const [failure] = poller.failures();
    expect(failure).toMatchObject({ condition: 'PartialFailure', attempts: 3, streamArn: poller.streamArn });
    expect(failure?.records.map(idOf)[0]).toBe('2');
    expect(failure?.startSequenceNumber).toBe(seqOf(failure!.records[0]!));
    expect(destination).toEqual([failure]);
    await vi.waitFor(() => expect(poller.stats().recordsDelivered + poller.stats().recordsFailed).toBe(4), {
      timeout: 10_000,
      interval: 50,
    });
    expect(poller.stats().recordsFailed).toBe(failure?.records.length);
  });

  it('bisects a batch whose handler throws until the poison record is alone', async () => {
    // Prepare: the handler throws whenever item 3 is in the batch.
    const { client, tableName, endpoint } = await freshTable('ipam-poller', { stream: true });
    await putMany(client, tableName, 4);
    const accepted: string[] = [];
    const handler: StreamHandler = async (event) => {
      if (event.Records.some((r) => idOf(r) === '3')) throw new Error('poison');
      accepted.push(...event.Records.map(idOf));
      return { batchItemFailures: [] };
    };
    // Act
    const poller = await start({ endpoint, tableName, handler, maxRetries: 1 });
    // Assess
    await vi.waitFor(() => expect(poller.failures()).toHaveLength(1), { timeout: 10_000, interval: 50 });
    await vi.waitFor(() => expect(poller.stats().recordsDelivered).toBe(3), { timeout: 10_000, interval: 50 });
    const [failure] = poller.failures();
    expect(failure?.records.map(idOf)).toEqual(['3']);
    expect(failure).toMatchObject({ condition: 'Error', attempts: 2, lastError: 'Error: poison' });
    expect(accepted).toEqual(['1', '2', '4']);
  });

  it('stops: no handler call starts after stop() resolves', async () => {
    // Prepare
    const { client, tableName, endpoint } = await freshTable('ipam-poller', { stream: true });
    const { handler, batches } = recordingHandler(() => undefined);
    const poller = await start({ endpoint, tableName, handler });
    await put(client, tableName, 'before');
    await vi.waitFor(() => expect(batches.flat().map(idOf)).toEqual(['before']), { timeout: 10_000, interval: 50 });
    // Act
    await poller.stop();
    await put(client, tableName, 'after');
    // Assess: a second poller from the start of the stream sees both, the stopped one saw only the first.
    const { handler: witness, batches: witnessed } = recordingHandler(() => undefined);
    await start({ endpoint, tableName, handler: witness });
    await vi.waitFor(() => expect(witnessed.flat().map(idOf)).toEqual(['before', 'after']), {
      timeout: 10_000,
      interval: 50,
    });
    expect(batches.flat().map(idOf)).toEqual(['before']);
  });
});
