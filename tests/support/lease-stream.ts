import { marshall } from '@aws-sdk/util-dynamodb';
import type { _Record as SdkRecord } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { TxVerdict, WriteOp, WriteResult } from '../../shared/adapters/dynamodb/table.ts';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { toLambdaRecord } from '../../aws-emulation/lambda-records.ts';
import type { Clock } from '../../shared/core/ports.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { freshTable } from './dynamo.ts';
import { PassThroughTable } from './pass-through-table.ts';
import { FollowedTable } from './stream-follower.ts';
import { StreamReader, deliverRecords, type MirrorHandler } from './stream.ts';
import type { TestEngine } from './engines.ts';

/** A table's stream as a test reads it: everything new since the last read, and delivery to a handler. */
export interface LeaseStream {
  read(): Promise<DynamoDBRecord[]>;
  drain(
    handler: MirrorHandler,
    options?: { batchSize?: number; retries?: number },
  ): Promise<{ records: DynamoDBRecord[]; failed: string[] }>;
  close(): void;
}

/**
 * MemoryTable with a stream: every committed write leaves a record shaped as DynamoDB Streams gives it
 * (NEW_AND_OLD_IMAGES, one per item changed, in commit order), read back as Lambda delivers it. The record's time
 * is the wall clock's second, as DynamoDB's ApproximateCreationDateTime.
 */
export class StreamedMemoryTable extends PassThroughTable<MemoryTable> implements LeaseStream {
  private readonly records: SdkRecord[] = [];
  private readCount = 0;
  private sequence = 0;

  /** `clock`: the time stamped on records (a test's manual clock keeps them in the app's time). */
  constructor(
    inner: MemoryTable,
    private readonly clock: Clock = systemClock,
  ) {
    super(inner);
  }

  override async write(op: WriteOp): Promise<WriteResult> {
    const before = await this.snapshot([op]);
    const result = await this.inner.write(op);
    if (result.ok) await this.record(before);
    return result;
  }

  override async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const before = await this.snapshot(ops.filter((op) => op.kind !== 'check'));
    const verdicts = await this.inner.transact(ops);
    if (!verdicts) await this.record(before);
    return verdicts;
  }

  async read(): Promise<DynamoDBRecord[]> {
    const out = this.records.slice(this.readCount).map((r) => toLambdaRecord(r, 'arn:memory:stream', 'us-east-1'));
    this.readCount = this.records.length;
    return out;
  }

  async drain(
    handler: MirrorHandler,
    options: { batchSize?: number; retries?: number } = {},
  ): Promise<{ records: DynamoDBRecord[]; failed: string[] }> {
    const records = await this.read();
    return { records, failed: await deliverRecords(records, handler, options) };
  }

  close(): void {}

  private async snapshot(ops: readonly WriteOp[]): Promise<{ key: Key; old: Item | undefined }[]> {
    return Promise.all(
      ops.map(async (op) => {
        const key = op.kind === 'put' ? { PK: op.item.PK as string, SK: op.item.SK as string } : op.key;
        return { key, old: await this.inner.get(key) };
      }),
    );
  }

  private async record(before: readonly { key: Key; old: Item | undefined }[]): Promise<void> {
    const at = new Date(Math.floor(this.clock.nowMs() / 1000) * 1000);
    for (const { key, old } of before) {
      const now = await this.inner.get(key);
      if (!old && !now) continue;
      if (old && now && JSON.stringify(old) === JSON.stringify(now)) continue;
      const eventName = !old ? 'INSERT' : !now ? 'REMOVE' : 'MODIFY';
      this.sequence += 1;
      this.records.push({
        eventID: String(this.sequence),
        eventName,
        eventVersion: '1.1',
        dynamodb: {
          ApproximateCreationDateTime: at,
          Keys: marshall(key),
          ...(now ? { NewImage: marshall(now, { removeUndefinedValues: true }) } : {}),
          ...(old ? { OldImage: marshall(old, { removeUndefinedValues: true }) } : {}),
          SequenceNumber: String(this.sequence).padStart(21, '0'),
          StreamViewType: 'NEW_AND_OLD_IMAGES',
        },
      });
    }
  }
}

/** An engine whose tables have a stream the test reads: DynamoDB Local's own, or the memory one above. */
export interface StreamEngine {
  readonly engine: TestEngine;
  /** The same engine without the inline summary upkeep (FollowedTable): the stream function alone keeps the summary. */
  readonly unfollowed: TestEngine;
  /** The stream of the table `engine.fresh()` (or `unfollowed.fresh()`) made last. */
  stream(): LeaseStream;
}

export function memoryStreamEngine(clock?: Clock): StreamEngine {
  let last: StreamedMemoryTable | undefined;
  const engine = (followed: boolean): TestEngine => ({
    name: 'memory',
    fresh: async (prefix = 'memory') => {
      last = new StreamedMemoryTable(new MemoryTable({ name: prefix }), clock);
      return { table: followed ? new FollowedTable(last) : last, env: { TABLE_NAME: prefix, LOCAL_STACK: 'true' } };
    },
  });
  return { engine: engine(true), unfollowed: engine(false), stream: () => last! };
}

export function dynamoStreamEngine(): StreamEngine {
  let last: StreamReader | undefined;
  const engine = (followed: boolean): TestEngine => ({
    name: 'DynamoDB Local',
    fresh: async (prefix) => {
      const made = await freshTable(prefix, { stream: true });
      last = new StreamReader(made.endpoint, made.tableName);
      const table = new SdkTable(made.client, made.tableName);
      return {
        table: followed ? new FollowedTable(table) : table,
        env: { TABLE_NAME: made.tableName, DYNAMODB_ENDPOINT: made.endpoint, LOCAL_STACK: 'true' },
      };
    },
  });
  return { engine: engine(true), unfollowed: engine(false), stream: () => last! };
}
