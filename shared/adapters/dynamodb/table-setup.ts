import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../../../infra/table.ts';

/**
 * Creates the table from infra/table.json (the same definition CloudFormation deploys), with its stream and TTL.
 * `stream: false` leaves the stream out: DynamoDB Local keeps every stream record of its lifetime and looks the
 * stream up on every write, so a long benchmark that needs no stream slows down more and more with one.
 */
export async function createTable(
  client: DynamoDBClient,
  tableName: string,
  options: { stream?: boolean } = {},
): Promise<void> {
  const def = tableDefinition;
  const input: CreateTableCommandInput = {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: def.AttributeDefinitions as CreateTableCommandInput['AttributeDefinitions'],
    KeySchema: def.KeySchema as CreateTableCommandInput['KeySchema'],
    GlobalSecondaryIndexes: def.GlobalSecondaryIndexes as CreateTableCommandInput['GlobalSecondaryIndexes'],
    ...(options.stream === false
      ? {}
      : { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } }),
  };
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if ((error as Error).name !== 'ResourceInUseException') throw error;
  }
  await waitForActive(client, tableName);
  await client
    .send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: def.TimeToLiveSpecification.AttributeName, Enabled: true },
      }),
    )
    .catch((error: Error) => {
      // Already enabled on a persisted table.
      if (!/already enabled|TimeToLive is already/i.test(error.message)) throw error;
    });
}

async function waitForActive(client: DynamoDBClient, tableName: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    if (Date.now() > deadline) throw new Error(`table ${tableName} is not ACTIVE after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
